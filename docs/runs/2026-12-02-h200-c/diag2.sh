#!/bin/bash
# Diagnostic run 2: per-kernel durations with Nsight Compute (clocks left alone).
export FHELIUM_REQUIRE_GPU=1
cd "$(dirname "$0")"
M=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,smsp__inst_executed.sum
for k in ntt_fwd_cols ntt_fwd_rows ntt_inv_rows ntt_inv_cols ks_inner ks_moddown ew_mul rescale aut_coeff ew_tensor; do
  echo "=== $k" >> $OUT/ncu.txt
  timeout 120 ncu --clock-control none -k $k --launch-skip 40 --launch-count 3 --metrics $M ./bin/gpu_oplat --nocapture 2>&1 | grep -E "^\s+(gpu__|dram__|sm__|launch__|smsp__)|\([0-9]+, [0-9]+, [0-9]+\)x" >> $OUT/ncu.txt
done
cat $OUT/ncu.txt | head -150
