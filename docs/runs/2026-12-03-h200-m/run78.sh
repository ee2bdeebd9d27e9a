#!/bin/bash
# Run 78 (harness; the variants and the FP_TW option were not kept, see kernels/bench/variants.py): the butterflies' Shoup quotient by binary64 arithmetic for the ~2^40 primes
# (variants fpq: per-butterfly branch on q, Shoup kept for the 60-bit primes; fpqall: the double
# path everywhere, wrong words on the 60-bit limb), against base; FP_TW=1 puts w/q (rounded
# down, as a double) in the table's wp field for primes below 2^50. Words by hash (fpq must
# match base for fwd / inv). Alternated, three passes.
set -u
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
ROWS='^(fwd|inv|fwd-g1|inv-g1|fwd-d2|fwd-d2-g) '
for pass in 1 2 3; do for v in base fpq fpqall; do
  E=""; [ $v != base ] && E="FP_TW=1"
  env $E timeout 60 $X/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
  echo "$v/$pass rc=$? $(grep -E "$ROWS" $OUT/logs/$v-$pass.txt | tr -s ' ' | cut -d' ' -f1-5 | tr '\n' ' ')"
done; done
for v in base fpq fpqall; do echo "$v: $(grep -E '^hash (fwd|inv)' $OUT/logs/$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
