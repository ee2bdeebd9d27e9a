#!/bin/bash
# Run 82: the paired NTT kernels with `Loose` butterflies (shoup_lazy3: the high product without
# its low partial product, t in [0, 3q); forward words growing to 14q with x reduced at every
# other stage; inverse words below 4q) in .gpu/bin/o, against main (.gpu/bin/n, run 77's
# binary): bit-exact against the CPU engine (gpu_ops, gpu_encrypt, example_parity, the three
# examples), memcheck / racecheck of the NTT test, then timed alternately with FHElium built and
# timed in the same call.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
N=$R/.gpu/bin/n; O=$R/.gpu/bin/o
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 150 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $O/gpu_ops --test-threads=1
r gpu_encrypt $O/gpu_encrypt --test-threads=1
r example_parity $O/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $O/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
r memcheck compute-sanitizer --tool memcheck $O/gpu_ops --test-threads=1 ntt_both_directions
r racecheck compute-sanitizer --tool racecheck $O/gpu_ops --test-threads=1 ntt_both_directions
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in o1 n1 o2 n2 o3 n3; do B=$O; case $n in n*) B=$N;; esac; r oplat-$n $B/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | grep -v '/' | grep -E '^(coeff|ntt_to|multiply_p|rotate|relin|example14)' | tr -s ' ' | cut -d' ' -f1-6,8-9; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
