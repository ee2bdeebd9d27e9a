#!/bin/bash
# Run 92: the session's final code (.gpu/bin/f: barrier state per stream) verified and timed
# with FHElium built and timed in the same call: gpu_ops, gpu_encrypt, example_parity, the
# examples, then gpu_oplat three times, alternated with main before the session (.gpu/bin/q).
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
F=$R/.gpu/bin/f; Q=$R/.gpu/bin/q
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -4; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $F/gpu_ops --test-threads=1
r gpu_encrypt $F/gpu_encrypt --test-threads=1
r example_parity $F/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $F/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in f1 q1 f2 q2 f3; do B=$F; case $n in q*) B=$Q;; esac; r oplat-$n $B/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | tr -s ' ' | cut -d' ' -f1-2,5-8; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
