#!/bin/bash
# Run 231 (forty-third session): the wide forward exchange words made canonical by one
# conditional subtraction (wcheap: x - (x >> 60) q as l + k (2^60 - q), then csub, for primes
# within 2^56 of 2^60) instead of four, against facc799's kernels (xchbatch), rows 46-49 on one
# counter region, WIDE=7 (the engine's layout) and the default, three passes alternated; hashes
# per layout must agree. Carry [".gpu/exp8"], LIMIT=100.
set -u
. docs/runs/common.sh
header
for pass in 1 2 3; do
  for lay in 7 0; do
    for v in xchbatch wcheap; do
      WIDE=$lay ROWS=46-49 timeout 60 .gpu/exp8/bench_$v 8 2 > $OUT/logs/$v-w$lay-$pass.txt 2>&1
      echo "== $v WIDE=$lay pass $pass rc=$? $(grep -E '^(fwd|inv)-gp' $OUT/logs/$v-w$lay-$pass.txt | awk '{printf "%s %s  ", $1, $3}')"
    done
  done
done
for lay in 7 0; do for v in xchbatch wcheap; do echo "$v WIDE=$lay: $(grep -h hash $OUT/logs/$v-w$lay-1.txt | tr -s ' ' | tr '\n' ' ')"; done; done
finish
