#!/bin/bash
# Run 227 (forty-third session): xch_take's re-polls batched (xchbatch: every missing word of a
# thread loaded again together, the wait kept) and the weak accesses (xchweak) against db52da8's
# kernels (base). Harness (.gpu/exp6), rows 46-49 on one counter region, four passes
# alternated; hashes must equal base's. Carry [".gpu/exp6"], LIMIT=100.
set -u
. docs/runs/common.sh
header
for pass in 1 2 3 4; do
  for v in base xchbatch xchweak; do
    ROWS=46-49 timeout 60 .gpu/exp6/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"; grep -E " burst_us " $OUT/logs/$v-$pass.txt
  done
done
for v in base xchbatch xchweak; do echo "$v: $(grep -h hash $OUT/logs/$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
finish
