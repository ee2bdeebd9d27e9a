#!/bin/bash
# Run 46 (tenth session): the inverse NTT's final scaling folded into the last stage of the
# *_gs kernels (e5eb5c5, .gpu/bin/n) against main's 6db09b0 (.gpu/bin/m): harness hashes and
# times alternated, the GPU tests and sanitizers on n, gpu_oplat alternated with FHElium timed
# in the same call.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
M=$R/.gpu/bin/m; N=$R/.gpu/bin/n
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for k in m1:$M n1:$N m2:$M n2:$N; do n=${k%%:*}; echo "== harness $n"; (cd ${k#*:} && ./bench_base 8 2 > $OUT/logs/h-$n.txt 2>&1); grep -E "^(fwd |inv |ks-inner|ks-chain-gq |hash (inv|ks-inner|ks-moddown))" $OUT/logs/h-$n.txt; done
r n_gpu_ops $N/gpu_ops --test-threads=1
r n_gpu_encrypt $N/gpu_encrypt --test-threads=1
r n_gpu_smoke $N/gpu_smoke
r n_example_parity $N/example_parity --test-threads=1
for ex in automatic_residency explicit_residency basic_ckks; do (timeout 60 $N/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
r n_memcheck compute-sanitizer --tool memcheck $N/gpu_ops --test-threads=1 ntt_both rotate_with_key multiply_and_relinearize
grep -E "SUMMARY" $OUT/logs/n_memcheck.log
echo "== peer"; t0=$(date +%s); timeout 300 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for k in m1:$M n1:$N m2:$M n2:$N; do n=${k%%:*}; r oplat-$n ${k#*:}/gpu_oplat --nocapture; grep -E '^(encrypt|rotate|coeff|multiply|ntt_to|rescale|decrypt|example14|relin)[a-z_0-9]* +[0-9]' $OUT/logs/oplat-$n.log; done
r n_racecheck compute-sanitizer --tool racecheck $N/gpu_ops --test-threads=1 ntt_both rotate_with_key
grep -E "SUMMARY" $OUT/logs/n_racecheck.log
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
