#!/bin/bash
# Run 120: the ModUp queue ntt_fwd_gq at three blocks per SM (variant gq3: __launch_bounds__
# (256, 3); ptxas: 80 registers, no spills, against 128 at two per SM) against base. Harness
# rows 14 (ModUp alone), 15 (three stream launches), 23 (the engine's chain graph); the
# harness sizes the queue's grid by the occupancy query, so gq3 runs 396 blocks. Words: hashes.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for pass in 1 2; do
  for b in base gq3; do
    echo "== bench_$b pass $pass"
    ROWS=14,15,23 timeout 60 .gpu/exp/bench_$b 8 2 2>&1 | grep "burst\|hash" | tee -a $OUT/run120-$b.txt
  done
done
