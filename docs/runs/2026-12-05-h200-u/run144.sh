#!/bin/bash
# Run 144 (prepared in the twenty-third session; NOT RUN: no machine lent). A same-call sample
# for issue 7's table: FHElium built and timed in this call, then gpu_oplat (.gpu/bin/z, the
# commit in .gpu/bin/z/COMMIT) three times with FHELIUM_BENCH_DEVICE=0 (as `cargo xtask bench
# --device cuda:0` runs it). Carry [".gpu", ".peer"] (~43 MiB with the tree).
set -u
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/z
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cat $W/COMMIT
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
cat $OUT/peer-oplat.txt 2>/dev/null | head -14
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt FHELIUM_BENCH_DEVICE=0
for n in z1 z2 z3; do r oplat-$n $W/gpu_oplat --nocapture --test-threads=1; grep -E '^preset|^[a-z_0-9/]+ +[0-9]' $OUT/logs/oplat-$n.log | head -24 | tr -s ' ' | cut -d' ' -f1-2,5-8; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
