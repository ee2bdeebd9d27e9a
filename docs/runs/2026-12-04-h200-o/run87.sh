#!/bin/bash
# Run 87: three forms of the flag exchange in the paired NTT kernels (.gpu/bin/y; run 86's
# form `tight` was slower than the counter barrier): FHELIUM_CKKS_XCH = tight (every thread
# polls its words), backoff (the same with a growing sleep), hybrid (a fence-free counter for
# the wait, the words as flags for correctness). NTT tests under each form, then gpu_oplat
# per form alternated with main (.gpu/bin/q), FHElium built and timed in the same call.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
Y=$R/.gpu/bin/y; Q=$R/.gpu/bin/q
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for f in tight backoff hybrid; do FHELIUM_CKKS_XCH=$f r ntt-$f $Y/gpu_ops --test-threads=1 flag_exchange ntt_both; done
r gpu_ops $Y/gpu_ops --test-threads=1 --skip cluster_kernels_survive
r gpu_encrypt $Y/gpu_encrypt --test-threads=1
r example_parity $Y/example_parity --test-threads=1
r memcheck compute-sanitizer --tool memcheck $Y/gpu_ops --test-threads=1 ntt_both_directions flag_exchange
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in hybrid1 q1 tight1 backoff1 hybrid2 q2 backoff2 tight2; do B=$Y; case $n in q*) B=$Q;; esac; FHELIUM_CKKS_XCH=${n%[0-9]} r oplat-$n $B/gpu_oplat --nocapture; grep -E '^(coefficient_to_ntt|ntt_to_coefficient|example14|rotate_with)[a-z_0-9/]* +[0-9]' $OUT/logs/oplat-$n.log | grep -E -v '/(2pass|cl512|clpre|direct|pool|nopool)' | tr -s ' ' | cut -d' ' -f1-2,5-6,8-9; done
dmesg 2>/dev/null | grep -i xid | tail -5
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
