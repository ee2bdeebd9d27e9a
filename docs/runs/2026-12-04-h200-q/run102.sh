#!/bin/bash
# Run 102: the component-pipelined paired NTT kernels landed again (emulator's counter array
# fixed; .gpu/bin/p = the pipelines branch built from this session's tree) verified: gpu_ops,
# gpu_encrypt, example_parity, the examples, memcheck + racecheck of the NTT tests; then FHElium
# built and timed in the same call and gpu_oplat alternated p, b, p, b, p (b = 770e467, main
# without the pipelines).
set -u
export FHELIUM_REQUIRE_GPU=1
P=.gpu/bin/p; B=.gpu/bin/b
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -4; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $P/gpu_ops --test-threads=1
r gpu_encrypt $P/gpu_encrypt --test-threads=1
r example_parity $P/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $P/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
CS=/usr/local/cuda/bin/compute-sanitizer
r memcheck $CS --tool memcheck $P/gpu_ops --test-threads=1 ntt_both_directions
r memcheck-paired $CS --tool memcheck $P/gpu_ops --test-threads=1 paired_ntts_between
r racecheck $CS --tool racecheck $P/gpu_ops --test-threads=1 ntt_both_directions
r racecheck-paired $CS --tool racecheck $P/gpu_ops --test-threads=1 paired_ntts_between
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
cat $OUT/peer-oplat.txt 2>/dev/null | head -14
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in p1 b1 p2 b2 p3; do D=$P; case $n in b*) D=$B;; esac; r oplat-$n $D/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | head -10 | tr -s ' ' | cut -d' ' -f1-2,5-8; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
