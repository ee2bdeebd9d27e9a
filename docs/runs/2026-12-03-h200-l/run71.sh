#!/bin/bash
# Run 71 (harness): the forward kernels' input in two steps (every word of a round fetched
# before any is prepared: InWords) with the ModUp's pre-step by the digit's bound (base),
# the same with the pre-step always the general product (prekind0), and main before both
# (old). Words must agree (hashes). Two passes, alternated.
set -u
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
for pass in 1 2; do for v in old base prekind0; do
  timeout 60 $X/bench_$v 8 2 > $OUT/logs/h-$v-$pass.txt 2>&1
  echo "$v/$pass rc=$? $(grep -E '^(ks-modup|ks-modup-gq|modup-noaut|modup-gq-noaut|ks-chain-gq|chain-pdl-g|fwd) ' $OUT/logs/h-$v-$pass.txt | tr -s ' ' | cut -d' ' -f1-3 | tr '\n' ' ')"
done; done
for v in old base prekind0; do echo "$v: $(grep -E '^hash (ks-modup|ks-chain-gq|chain-pdl-g|fwd |inv )' $OUT/logs/h-$v-1.txt | tr -s ' ' | cut -d' ' -f2- | tr '\n' ' ')"; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
