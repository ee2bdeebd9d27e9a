#!/bin/bash
# Run 238 (forty-fifth session): LooseN without the code growth. Run 237's source counters
# showed that runs 235-236's harness never ran LooseN (its wide primes lie ~2^35 below 2^60,
# outside near60) and that a third arithmetic made the binary64 path wait on instruction fetch.
# Harness (.gpu/exp12): the wide primes within 2^32 of 2^60 (ntt_bench's new WIDED=37);
# bench_n2's paired kernels have two arithmetics, LooseF and LooseN (LooseN in Loose's place;
# exact only for such primes), against bench_old (e471616) and bench_nq (the accumulated
# product alone), rows 46-49, WIDE=7, order old n2 nq nq n2 old, three passes. Engine: bundle
# .gpu/bin/f (the working tree: ntt_fwd_gpn / ntt_inv_gpn, chosen by the engine where every
# integer prime of the rows is near60, i.e. the preset's every NTT) -- its GPU tests, then
# gpu_oplat of .gpu/bin/p (ed19de4, main's engine) and f alternated three times; then the
# harness passes while time allows, then memcheck and racecheck of the paired-NTT tests (the
# engine part first: the session's device budget was nearly spent). Carry [".gpu/exp12",
# ".gpu/bin/f", ".gpu/bin/p"], LIMIT=190.
set -u
. docs/runs/common.sh
header
gpu_tests .gpu/bin/f
grep -E "50_bit|^test ntt_both" $OUT/logs/gpu_ops.log
need 60 "engine ab" && AB_PASSES=3 ab_oplat '^(coefficient_to_ntt|ntt_to_coefficient|multiply_plaintext|rotate_with_key|example14_stage) +[0-9]' p f
for pass in 1 2 3; do
  i=0
  for v in old n2 nq nq n2 old; do
    i=$((i + 1))
    need 75 "$v $pass" || break
    f=$OUT/logs/$v-$pass-$i.txt
    WIDED=37 WIDE=7 ROWS=46-49 timeout 60 .gpu/exp12/bench_$v 8 2 > $f 2>&1
    echo "== $v pass $pass.$i rc=$? $(grep -E '^(fwd|inv)-gp' $f | awk '{printf "%s %s  ", $1, $3}')"
  done
done
for v in old n2 nq; do echo "$v: $(grep -h hash $OUT/logs/$v-1-*.txt | sort -u | tr -s ' ' | tr '\n' ' ')"; done
san=/usr/local/cuda/bin/compute-sanitizer
need 40 memcheck && r memcheck-f $san --tool memcheck .gpu/bin/f/gpu_ops --test-threads=1 paired_ntts_
need 30 racecheck && r racecheck-f $san --tool racecheck .gpu/bin/f/gpu_ops --test-threads=1 paired_ntts_exact
finish
