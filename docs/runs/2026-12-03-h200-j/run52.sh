#!/bin/bash
# Run 52 (eleventh session): the key switch as one chain graph with programmatic edges
# (decision 0508; .gpu/bin/c) against main before it (04357df, .gpu/bin/h: gpu_oplat only),
# FHElium built and timed in the same call; the GPU tests, examples and sanitizers on c; the
# harness (.gpu/bin/x, kernels with grid_dep_wait).
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
H=$R/.gpu/bin/h; C=$R/.gpu/bin/c; X=$R/.gpu/bin/x
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r c_gpu_ops $C/gpu_ops --test-threads=1
r c_gpu_encrypt $C/gpu_encrypt --test-threads=1
r c_example_parity $C/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $C/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
grep -E "^(rotate|coeff|ntt_to|example14|relin)" $OUT/peer-oplat.txt
for k in h1:$H c1:$C h2:$H c2:$C; do n=${k%%:*}; r oplat-$n ${k#*:}/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]|^chain' $OUT/logs/oplat-$n.log | grep -v '/'; done
r c_memcheck compute-sanitizer --tool memcheck $C/gpu_ops --test-threads=1 graph_launches multiply_and_relinearize
grep -E "SUMMARY" $OUT/logs/c_memcheck.log
r c_racecheck compute-sanitizer --tool racecheck $C/gpu_ops --test-threads=1 graph_launches
grep -E "SUMMARY" $OUT/logs/c_racecheck.log
echo "== harness"; (cd $X && ./bench_base 8 2 > $OUT/logs/h-base.txt 2>&1); grep -E "^(fwd |inv |ks-chain-gq|chain)|^hash chain" $OUT/logs/h-base.txt
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
