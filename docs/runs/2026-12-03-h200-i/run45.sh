#!/bin/bash
# Run 45 (tenth session): the branch ks-fused-moddown (ks_switch_gs: ModDown fused into the
# inner product) merged on main, checked word for word (harness hashes, GPU tests, sanitizers)
# and timed against main's final code (8842825 + try_launch) with FHElium in the same call.
# .gpu/bin/m = main (6db09b0), .gpu/bin/f = main + ks-fused-moddown.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
M=$R/.gpu/bin/m; F=$R/.gpu/bin/f
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cd $F; echo "== harness (fused)"; ./bench_base 8 2 > $OUT/logs/h-fused.txt 2>&1; grep -E "^(fwd |inv |ks|hash|max)" $OUT/logs/h-fused.txt
cd $R
r f_gpu_ops $F/gpu_ops --test-threads=1
r f_gpu_encrypt $F/gpu_encrypt --test-threads=1
r f_example_parity $F/example_parity --test-threads=1
r m_gpu_ops $M/gpu_ops --test-threads=1
r m_gpu_smoke $M/gpu_smoke
(timeout 60 $F/automatic_residency --device cuda:0; echo "exit=$?") > $OUT/logs/ex14.txt 2>&1; tail -1 $OUT/logs/ex14.txt
(timeout 60 $F/basic_ckks --device cuda:0; echo "exit=$?") > $OUT/logs/basic.txt 2>&1; tail -1 $OUT/logs/basic.txt
echo "== peer"; t0=$(date +%s); timeout 300 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for k in m1:$M f1:$F m2:$M f2:$F; do n=${k%%:*}; r oplat-$n ${k#*:}/gpu_oplat --nocapture; grep -E '^(encrypt|rotate|coeff|multiply|ntt_to|rescale|decrypt|example14|relin)[a-z_0-9]* +[0-9]' $OUT/logs/oplat-$n.log; done
r f_memcheck compute-sanitizer --tool memcheck $F/gpu_ops --test-threads=1 rotate_with_key multiply_and_relinearize
grep -E "SUMMARY" $OUT/logs/f_memcheck.log
r f_racecheck compute-sanitizer --tool racecheck $F/gpu_ops --test-threads=1 rotate_with_key
grep -E "SUMMARY" $OUT/logs/f_racecheck.log
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
