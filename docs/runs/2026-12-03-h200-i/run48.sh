#!/bin/bash
# Run 48 (tenth session): the ModUp's one-subtraction lift (e71eaf0, .gpu/bin/l) against main
# with the gq ticket prefetch (206c368, .gpu/bin/g; its harness built from the same
# ntt_bench.cu, whose ModUp rows take the plain reduction as the engine does). Tests first.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
G=$R/.gpu/bin/g; L=$R/.gpu/bin/l
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r l_gpu_ops $L/gpu_ops --test-threads=1
r l_gpu_encrypt $L/gpu_encrypt --test-threads=1
r l_example_parity $L/example_parity --test-threads=1
for k in g1:$G l1:$L g2:$G l2:$L; do n=${k%%:*}; echo "== harness $n"; (cd ${k#*:} && ./bench_base 8 2 > $OUT/logs/h-$n.txt 2>&1); grep -E "^(ks-modup|modup|ks-chain-gq |hash (ks-modup))" $OUT/logs/h-$n.txt; done
for k in g1:$G l1:$L g2:$G l2:$L; do n=${k%%:*}; r oplat-$n ${k#*:}/gpu_oplat --nocapture; grep -E '^(rotate|coeff|ntt_to|example14|relin)[a-z_0-9]* +[0-9]' $OUT/logs/oplat-$n.log; done
for ex in automatic_residency basic_ckks; do (timeout 60 $L/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
r l_memcheck compute-sanitizer --tool memcheck $L/gpu_ops --test-threads=1 rotate_with_key multiply_and_relinearize
grep -E "SUMMARY" $OUT/logs/l_memcheck.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
