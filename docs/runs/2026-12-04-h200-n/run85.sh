#!/bin/bash
# Run 85: gpu_ops with the new stress test (cluster_kernels_survive_many_back_to_back_launches:
# 20 000 cluster NTT launches and 3 000 cluster-path rotations per cluster kernel choice) on the
# final code (.gpu/bin/r: the release arrive), the whole suite once and the new test three more
# times; then the same test built against the relaxed arrive (.gpu/bin/u) four times, to see
# that it catches the fault. Xid lines of the kernel log counted after each.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
mkdir -p $OUT/logs
xids() { dmesg 2>/dev/null | grep -c "Xid"; }
T=cluster_kernels_survive_many_back_to_back_launches
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "xid lines at start: $(xids)"
t0=$(date +%s); timeout 200 $R/.gpu/bin/r/gpu_ops --test-threads=1 > $OUT/logs/gpu_ops-r.log 2>&1; echo "gpu_ops r rc=$? ($(( $(date +%s)-t0 )) s) xid=$(xids)"; grep -E "^test result|$T" $OUT/logs/gpu_ops-r.log
for i in 1 2 3; do t0=$(date +%s); timeout 100 $R/.gpu/bin/r/gpu_ops --test-threads=1 $T > $OUT/logs/stress-r$i.log 2>&1; echo "r$i rc=$? ($(( $(date +%s)-t0 )) s) xid=$(xids) $(grep -E 'panicked|LaunchFailed' $OUT/logs/stress-r$i.log | head -2 | tr '\n' ' ')"; done
for i in 1 2 3 4; do t0=$(date +%s); timeout 100 $R/.gpu/bin/u/gpu_ops --test-threads=1 $T > $OUT/logs/stress-u$i.log 2>&1; echo "u$i rc=$? ($(( $(date +%s)-t0 )) s) xid=$(xids) $(grep -E 'panicked at|LaunchFailed' $OUT/logs/stress-u$i.log | head -2 | tr '\n' ' ')"; done
dmesg 2>/dev/null | grep -i xid | tail -4
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
