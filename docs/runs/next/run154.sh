#!/bin/bash
# Run 154 (twenty-ninth session): run 153 with fp64w7 (kernels/bench/variants.py: binary64
# butterflies in every warp but the last of each block, which keeps the integer products: one
# warp in eight on the 60-bit limb, a pessimistic bound of a kernel that spreads that limb over
# every SM) in place of noarith. Timing only, wrong words. Carry [".gpu/exp"].
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
mkdir -p $OUT/logs
for pass in 1 2 3; do
  for v in base fp64 fp64w7; do
    ROWS=46-49 timeout 60 .gpu/exp/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"; grep -E "^(fwd|inv)-gp" $OUT/logs/$v-$pass.txt
  done
done
grep -h "hash" $OUT/logs/*-1.txt | head -20
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
