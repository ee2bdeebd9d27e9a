#!/bin/bash
# Run 77: the paired-block NTT kernels (ntt_fwd_gp / ntt_inv_gp, kernels/bench/experiments/
# ntt-gp-engine.patch applied, plus the engine's paired_ntt_launches counter checked by gpu_ops)
# in .gpu/bin/n against main (.gpu/bin/k): bit-exact against the CPU engine (gpu_ops,
# gpu_encrypt, example_parity, the examples), memcheck / racecheck of the NTT test, then both
# timed alternately with FHElium built and timed in the same call.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
K=$R/.gpu/bin/k; N=$R/.gpu/bin/n
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 150 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $N/gpu_ops --test-threads=1
r gpu_encrypt $N/gpu_encrypt --test-threads=1
r example_parity $N/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $N/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
r memcheck compute-sanitizer --tool memcheck $N/gpu_ops --test-threads=1 ntt_both_directions
r racecheck compute-sanitizer --tool racecheck $N/gpu_ops --test-threads=1 ntt_both_directions
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in n1 k1 n2 k2; do B=$N; case $n in k*) B=$K;; esac; r oplat-$n $B/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | grep -v '/' | tr -s ' ' | cut -d' ' -f1-6; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
