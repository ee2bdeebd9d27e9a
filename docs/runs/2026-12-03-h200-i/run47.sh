#!/bin/bash
# Run 47 (tenth session): ntt_fwd_gq taking its next ticket while a column item runs
# (efab7d0, .gpu/bin/g) against main with the folded inverse scaling (.gpu/bin/n: e5eb5c5's
# kernels; n's harness has the rows modup-gq-noaut / modup-gq-raw too). Harness alternated,
# the GPU tests and sanitizers on g, gpu_oplat alternated (no peer: runs 45 and 46 have it).
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
N=$R/.gpu/bin/n; G=$R/.gpu/bin/g
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r g_gpu_ops $G/gpu_ops --test-threads=1
for k in n1:$N g1:$G n2:$N g2:$G; do n=${k%%:*}; echo "== harness $n"; (cd ${k#*:} && ./bench_base 8 2 > $OUT/logs/h-$n.txt 2>&1); grep -E "^(fwd |ks-modup|modup|ks-chain-gq |hash (ks-modup))" $OUT/logs/h-$n.txt; done
r g_gpu_encrypt $G/gpu_encrypt --test-threads=1
r g_example_parity $G/example_parity --test-threads=1
for ex in automatic_residency basic_ckks; do (timeout 60 $G/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
for k in n1:$N g1:$G n2:$N g2:$G; do n=${k%%:*}; r oplat-$n ${k#*:}/gpu_oplat --nocapture; grep -E '^(rotate|coeff|ntt_to|example14|relin)[a-z_0-9]* +[0-9]' $OUT/logs/oplat-$n.log; done
r g_memcheck compute-sanitizer --tool memcheck $G/gpu_ops --test-threads=1 rotate_with_key multiply_and_relinearize
grep -E "SUMMARY" $OUT/logs/g_memcheck.log
r g_racecheck compute-sanitizer --tool racecheck $G/gpu_ops --test-threads=1 rotate_with_key
grep -E "SUMMARY" $OUT/logs/g_racecheck.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
