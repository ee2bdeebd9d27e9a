#!/bin/bash
# Run 149, prepared in the twenty-fifth session: .gpu/bin/y, after run 148 passes.
# 1. gpu_ops; 2. FHElium built and timed in this call, then gpu_oplat twice (issue 7's
# table, the same-call ratios). Carry [".gpu/bin/y", ".peer"].
set -u
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/y
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cat $W/COMMIT
r gpu_ops $W/gpu_ops --test-threads=1
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
cat $OUT/peer-oplat.txt 2>/dev/null | head -14
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt FHELIUM_BENCH_DEVICE=0
for n in x1 x2; do timeout 60 $W/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "$n rc=$?"; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | head -16 | tr -s ' ' | cut -d' ' -f1-2,5-8; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
