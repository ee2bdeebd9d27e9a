#!/bin/bash
# Run 157 (thirtieth session): run 156 showed the engine's NTT no faster because the engine's
# chains end with the 60-bit base prime (rows L-2, L-1 now transposed, commit in
# .gpu/bin/f/COMMIT). Short (the session's device time was nearly spent): gpu_ops, then
# gpu_oplat of this tree and of d00e79c alternated, no peer. Carry [".gpu/bin/f"].
set -u
export FHELIUM_REQUIRE_GPU=1 FHELIUM_BENCH_DEVICE=0
W=.gpu/bin/f
mkdir -p $OUT/logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; cat $W/COMMIT
timeout 60 $W/gpu_ops --test-threads=1 > $OUT/logs/gpu_ops.log 2>&1; echo "gpu_ops rc=$?"; grep -E '^test result|FAILED|panicked' $OUT/logs/gpu_ops.log | head -4
for b in gpu_oplat gpu_oplat_old gpu_oplat; do
  n=$b-$(date +%s)
  timeout 40 $W/$b --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "$n rc=$?"; grep -E '^(coefficient_to_ntt|ntt_to_coefficient|multiply_plaintext|rotate_with_key|example14_stage|relinearize) ' $OUT/logs/oplat-$n.log | tr -s ' '
done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
