#!/bin/bash
# Run 76 (harness): ntt_fwd_d2, one block per prime and line set serving both components (half
# the row-phase twiddle lines per block), against fwd / fwd-g1; words by hash. Three passes.
set -u
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
for pass in 1 2 3; do
  timeout 60 $X/bench_base 8 2 > $OUT/logs/base-$pass.txt 2>&1
  echo "pass $pass rc=$? $(grep -E '^(fwd|fwd-g1|fwd-d2|fwd-d2-g) ' $OUT/logs/base-$pass.txt | tr -s ' ' | cut -d' ' -f1-5 | tr '\n' ' ')"
done
grep -E "^hash fwd" $OUT/logs/base-1.txt | tr -s ' ' | tr '\n' ' '
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
