#!/bin/bash
# Run 154 (twenty-ninth session), timing only, wrong words on purpose in every variant but base:
# 1. kernels/bench/ntt_bench.cu rows 46-49 (the paired NTT kernels) from kernels/bench/variants.py's
#    base, fp64 and fp64w7 (binary64 butterflies in every warp but the last of each block, which
#    keeps the integer products: one warp in eight on the 60-bit limb, a pessimistic bound);
# 2. kernels/bench/warp_item_probe.cu: a forward NTT whose every block holds two items of every
#    prime, one warp per prime, no block barriers; every warp integer / warp 0 integer and the
#    rest binary64 / every warp binary64.
# Three passes alternated. Carry [".gpu/exp"].
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
mkdir -p $OUT/logs
for pass in 1 2 3; do
  for v in base fp64 fp64w7; do
    ROWS=46-49 timeout 60 .gpu/exp/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"; grep -E "^(fwd|inv)-gp" $OUT/logs/$v-$pass.txt
  done
  timeout 60 .gpu/exp/warp_item_probe > $OUT/logs/wi-$pass.txt 2>&1
  echo "== warp_item_probe pass $pass rc=$?"; grep -E "^pass|rror" $OUT/logs/wi-$pass.txt
done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
