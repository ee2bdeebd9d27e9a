#!/bin/bash
# Run 86: the paired NTT kernels with the words as flags (ntt_fwd_gx / ntt_inv_gx, decision
# 0503 "Words as flags") in .gpu/bin/x against main (run 84's final kernels, .gpu/bin/q):
# bit-exact against the CPU engine (gpu_ops incl. the new per-stream test, gpu_encrypt,
# example_parity, the three examples), memcheck + racecheck of the NTT tests, then gpu_oplat
# once each (x also prints the counter-barrier kernels as /ctr rows in the same process).
# FHElium's same-call sample is run 87.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
X=$R/.gpu/bin/x; Q=$R/.gpu/bin/q
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops_new $X/gpu_ops --test-threads=1 flag_exchange ntt_both
r gpu_ops $X/gpu_ops --test-threads=1 --skip cluster_kernels_survive
r gpu_encrypt $X/gpu_encrypt --test-threads=1
r example_parity $X/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $X/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
r memcheck compute-sanitizer --tool memcheck $X/gpu_ops --test-threads=1 ntt_both_directions flag_exchange
r racecheck compute-sanitizer --tool racecheck $X/gpu_ops --test-threads=1 ntt_both_directions
for n in x1 q1; do B=$X; case $n in q*) B=$Q;; esac; r oplat-$n $B/gpu_oplat --nocapture; grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/logs/oplat-$n.log | grep -E -v '/(2pass|cl512|clpre|direct|pool|nopool)' | tr -s ' ' | cut -d' ' -f1-2,5-6,8-9; done
dmesg 2>/dev/null | grep -i xid | tail -5
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
