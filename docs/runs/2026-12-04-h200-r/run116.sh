#!/bin/bash
# Run 116: the fused key switch (kernels/bench/ks_fused.cuh, harness rows 54-56) against the
# engine's ModUp queue + ks_inner_gs (rows 12, 14, 15, 23). Three builds of ntt_bench:
# f = key words loaded into registers at the row phase's start (384 B of spills), f2 = the key
# lines prefetched to L2 there and loaded in the last round, f3 = f2 with the sums in dynamic
# shared memory (-DFUSED_SMEM_ACC). Same words: "acc-ref" = "acc-fused", chain hashes equal.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for b in f f2 f3; do
  echo "== bench_$b"
  ROWS=12,14,15,23,54-56 timeout 100 .gpu/exp/bench_$b 8 2 2>&1 | grep -v "^scan" | tee $OUT/run116-$b.txt
done
for b in f3 f; do
  echo "== bench_$b again"
  ROWS=23,54,56 timeout 60 .gpu/exp/bench_$b 8 2 2>&1 | grep "burst\|hash" | tee -a $OUT/run116-$b.txt
done
