#!/bin/bash
# Run 99: FHElium built and timed in the same call, then gpu_oplat of the component-pipelined
# paired NTT kernels (.gpu/bin/n, commit 2376107) alternated with main before them (.gpu/bin/b,
# 770e467): n, b, n, b, n.
set -u
export FHELIUM_REQUIRE_GPU=1
N=.gpu/bin/n; B=.gpu/bin/b
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked' $OUT/logs/$name.log | head -3; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
cat $OUT/peer-oplat.txt 2>/dev/null | head -14
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in n1 b1 n2 b2 n3; do D=$N; case $n in b*) D=$B;; esac; r oplat-$n $D/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | tr -s ' ' | cut -d' ' -f1-2,5-8; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
