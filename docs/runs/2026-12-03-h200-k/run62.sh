#!/bin/bash
# Run 62: a second same-call sample of the final code (b5b00e6 = the code of run 57, .gpu/bin/k)
# against FHElium built and timed in the same call, three passes of gpu_oplat.
set -u
export FHELIUM_REQUIRE_GPU=1
K=$(pwd)/.gpu/bin/k
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -5; }
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in k1 k2 k3; do r oplat-$n $K/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | grep -v '/'; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
