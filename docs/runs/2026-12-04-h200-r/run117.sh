#!/bin/bash
# Run 117: the fused key switch again, with the harness's primes carrying their real
# Montgomery constant (until now qinv_neg = 0, so ks_sum's one reduction per 8 digits and the
# fused kernel's reduction per product gave different words). Words: acc-ref = acc-fused. Then
# how its time scales: KS_DIGITS = 2, 4, 6, 8 (rounds), KS_FROWS = 8 (128 blocks, one per SM).
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for b in f3 f; do
  echo "== bench_$b"
  ROWS=12,14,15,23,54-56 timeout 100 .gpu/exp/bench_$b 8 2 2>&1 | grep "burst\|hash" | tee $OUT/run117-$b.txt
done
for d in 2 4 6; do
  echo "== bench_f3 KS_DIGITS=$d"
  KS_DIGITS=$d ROWS=54 timeout 60 .gpu/exp/bench_f3 8 2 2>&1 | grep "burst" | tee -a $OUT/run117-f3.txt
done
for d in 2 8; do
  echo "== bench_f3 KS_FROWS=8 KS_DIGITS=$d"
  KS_FROWS=8 KS_DIGITS=$d ROWS=54 timeout 60 .gpu/exp/bench_f3 8 2 2>&1 | grep "burst" | tee -a $OUT/run117-f3.txt
done
