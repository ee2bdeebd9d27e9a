#!/bin/bash
# Run 61 (harness): where ks_inner_gp's time goes (run 60: 19.2 us alone against 15.2 for the
# Q rows without P): its P warp's rounds left out (gpnowork), its P barrier wait left out
# (gpnowait), both (gpnone); base again. Wrong P rows on purpose in the variants.
set -u
# The bench binaries of this run were built with kernels/bench/experiments/ks-inner-gp.patch applied.
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
for pass in 1 2; do for v in base gpnowork gpnowait gpnone; do
  timeout 60 $X/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
  echo "$v/$pass rc=$? $(grep -E '^(ks-inner-gs|ks-inner-gp|chain-gp-g) ' $OUT/logs/$v-$pass.txt | tr -s ' ' | tr '\n' ' ')"
done; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
