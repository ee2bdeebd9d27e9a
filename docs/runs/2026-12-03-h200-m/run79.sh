#!/bin/bash
# Run 79: the butterflies' quotient in binary64 for the ~2^40 primes (mul_lazy / fpq_lazy,
# folded per block by by_width) in every NTT and key-switch kernel. Harness: old (main before,
# .gpu/bin/x/bench_old) against new, alternated, hashes must agree. Engine (.gpu/bin/o):
# bit-exact against the CPU engine (gpu_ops, gpu_encrypt, example_parity, the examples),
# memcheck / racecheck of the NTT, rotate and relinearize tests, then timed against run 77's
# binary (.gpu/bin/n: paired kernels, Shoup everywhere) with FHElium built and timed in the
# same call.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
N=$R/.gpu/bin/n; O=$R/.gpu/bin/o; X=$R/.gpu/bin/x
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 150 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
ROWS='^(fwd|inv|fwd-g1|inv-g1|fwd-d2-g|ks-modup-gq|ks-inner-gs|ks-chain-gq|chain-pdl-g) '
for pass in 1 2 3; do for v in old new; do
  timeout 60 $X/bench_$v 8 2 > $OUT/logs/h-$v-$pass.txt 2>&1
  echo "$v/$pass rc=$? $(grep -E "$ROWS" $OUT/logs/h-$v-$pass.txt | tr -s ' ' | cut -d' ' -f1-5 | tr '\n' ' ')"
done; done
for v in old new; do echo "$v: $(grep -E '^hash (fwd |inv |ks-modup |ks-inner|chains)' $OUT/logs/h-$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
r gpu_ops $O/gpu_ops --test-threads=1
r gpu_encrypt $O/gpu_encrypt --test-threads=1
r example_parity $O/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $O/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
r memcheck compute-sanitizer --tool memcheck $O/gpu_ops --test-threads=1 ntt_both_directions rotate_with_key multiply_and_relinearize
r racecheck compute-sanitizer --tool racecheck $O/gpu_ops --test-threads=1 ntt_both_directions rotate_with_key
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in o1 n1 o2 n2; do B=$O; case $n in n*) B=$N;; esac; r oplat-$n $B/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | grep -v '/' | tr -s ' ' | cut -d' ' -f1-6,8-9; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
