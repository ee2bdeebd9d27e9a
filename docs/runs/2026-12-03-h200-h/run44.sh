#!/bin/bash
# Run 44 (ninth session): ntt_fwd_gq with sigma_g as the output permutation (the final key
# switch of this session); harness rows at Galois element 11 and at 5^-1 (rotation by 1); the
# GPU tests; sanitizers on the key switch; FHElium in the same call.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
B=$R/.gpu/bin
mkdir -p $OUT/logs
r() { local name=$1; shift; timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$?"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cd $B
for g in 11 19661; do echo "== ginv $g"; KS_GINV=$g ./bench_base 8 2 > $OUT/logs/h-base-$g.txt 2>&1; grep -E "^(fwd|inv|ks|modup|hash)" $OUT/logs/h-base-$g.txt; done
cd $R
r gpu_ops $B/gpu_ops --test-threads=1
r gpu_encrypt $B/gpu_encrypt --test-threads=1
r gpu_smoke $B/gpu_smoke
r example_parity $B/example_parity --test-threads=1
(timeout 60 $B/automatic_residency --device cuda:0; echo "exit=$?") > $OUT/logs/ex14.txt 2>&1; tail -1 $OUT/logs/ex14.txt
(timeout 60 $B/explicit_residency --device cuda:0; echo "exit=$?") > $OUT/logs/ex13.txt 2>&1; tail -1 $OUT/logs/ex13.txt
(timeout 60 $B/basic_ckks --device cuda:0; echo "exit=$?") > $OUT/logs/basic.txt 2>&1; tail -1 $OUT/logs/basic.txt
r racecheck compute-sanitizer --tool racecheck $B/gpu_ops --test-threads=1 rotate_with_key
grep -E "SUMMARY" $OUT/logs/racecheck.log
r memcheck compute-sanitizer --tool memcheck $B/gpu_ops --test-threads=1 rotate_with_key multiply_and_relinearize
grep -E "SUMMARY" $OUT/logs/memcheck.log
echo "== peer"; timeout 300 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$?"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
r oplat1 $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/logs/oplat1.log
r oplat2 $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/logs/oplat2.log
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
