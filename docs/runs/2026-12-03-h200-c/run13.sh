#!/bin/bash
# Run 13 (fifth session): every GPU test on the code of 79e27a0 (reset-free limb counters,
# buffer recycling), the NTT harness, the driver floor, FHElium built and timed in the same
# call with our oplat right after it, sanitizers, a per-kernel timing of rotate.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
B=$R/.gpu/bin
r() { local name=$1; shift; timeout 150 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E '^test result|FAILED|panicked|refused' $OUT/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $B/gpu_ops --test-threads=1
r gpu_encrypt $B/gpu_encrypt --test-threads=1
r driver_floor $B/gpu_driver_floor --nocapture; grep -E "^[a-z].* [0-9.]+ +[0-9.]+$" $OUT/driver_floor.log
cd $R/.gpu/exp
(for v in old base old base; do echo "== $v 16 limbs"; ./bench_$v; done
 echo "== base 15 limbs"; ./bench_base 15 1
 for v in ksunroll ksunroll2 base; do echo "== $v"; ./bench_$v | grep ks-; done
 echo "== oldtimed"; ./bench_oldtimed | tail -3; echo "== timed"; ./bench_timed | tail -3) > $OUT/exp13.txt 2>&1
cat $OUT/exp13.txt
cd $R
echo "== peer"; timeout 300 bash .peer/build-and-time.sh .peer > $OUT/peer-run.log 2>&1; echo "peer rc=$?"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt; r gpu_oplat_after_peer $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/gpu_oplat_after_peer.log
unset FHELIUM_PEER_OPLAT
r cuda_tests bash -c "$B/gpu_smoke && $B/gpu_memory --test-threads=1 && $B/gpu_peer --test-threads=1"
r multi_test $B/multi_gpu_test --test-threads=1
r example_parity $B/example_parity --test-threads=1
(timeout 60 $B/automatic_residency --device cuda:0; echo "exit=$?") > $OUT/ex14.txt 2>&1; tail -1 $OUT/ex14.txt
(timeout 60 $B/explicit_residency --device cuda:0; echo "exit=$?") > $OUT/ex13.txt 2>&1; tail -1 $OUT/ex13.txt
(timeout 60 $B/basic_ckks --device cuda:0; echo "exit=$?") > $OUT/basic.txt 2>&1; tail -1 $OUT/basic.txt
r racecheck compute-sanitizer --tool racecheck $B/gpu_ops --test-threads=1 ntt_both freed_results
grep -E "SUMMARY" $OUT/racecheck.log
r memcheck compute-sanitizer --tool memcheck $B/gpu_ops --test-threads=1
grep -E "SUMMARY" $OUT/memcheck.log
(timeout 80 ncu --clock-control none --metrics gpu__time_duration.sum,launch__grid_size --csv --launch-count 60 $B/gpu_ops --test-threads=1 rotate_with_key_matches > $OUT/ncu_rotate.csv 2> $OUT/ncu_rotate.err; echo "ncu rc=$?")
rm -f $OUT/peer-build.log
