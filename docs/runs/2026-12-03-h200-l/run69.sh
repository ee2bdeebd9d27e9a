#!/bin/bash
# Run 69 (harness): what the *_gs kernels' twiddle loads cost. twsmall takes every twiddle of
# the rounds from the table's first 64 pairs (L1 hits; wrong words on purpose) against base;
# nosync / noarith for scale. Two passes.
set -u
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
for pass in 1 2; do for v in base twsmall nosync noarith; do
  timeout 60 $X/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
  echo "$v/$pass rc=$? $(grep -E '^(fwd|inv|fwd-g1|inv-g1|ks-inner-gs) ' $OUT/logs/$v-$pass.txt | tr -s ' ' | cut -d' ' -f1-5 | tr '\n' ' ')"
done; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
