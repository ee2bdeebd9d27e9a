#!/bin/bash
# Run 56 (eleventh session): the final code (713d0cc, .gpu/bin/e: run 54's engine with the
# one-node and chain launches sharing node_params) verified, and timed against run 54's engine
# (66b8d37, .gpu/bin/d) with FHElium built and timed in the same call.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
D=$R/.gpu/bin/d; E=$R/.gpu/bin/e
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r e_gpu_ops $E/gpu_ops --test-threads=1
r e_gpu_encrypt $E/gpu_encrypt --test-threads=1
r e_example_parity $E/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $E/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for k in e1:$E d1:$D e2:$E; do n=${k%%:*}; r oplat-$n ${k#*:}/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]|^chain' $OUT/logs/oplat-$n.log | grep -v '/'; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
