#!/bin/bash
# Run 153 (twenty-ninth session): how much of the paired NTT kernels' time binary64 butterflies
# could take, timing only. kernels/bench/ntt_bench.cu rows 46-49 (ntt_fwd_gp / ntt_inv_gp by a
# cooperative launch and as one-node graphs, the engine's form), built from three variants of
# kernels/ckks.cu (kernels/bench/variants.py): base (main), fp64 (Loose's butterflies in
# binary64 on every limb, wrong words), noarith (the products replaced by adds, wrong words:
# the bound of any cheaper product). Three passes alternated. Carry [".gpu/exp"].
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
mkdir -p $OUT/logs
for pass in 1 2 3; do
  for v in base fp64 noarith; do
    ROWS=46-49 timeout 60 .gpu/exp/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"; grep -E "^(fwd|inv)-gp" $OUT/logs/$v-$pass.txt
  done
done
grep -h "hash" $OUT/logs/*-1.txt | head -20
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
