#!/bin/bash
# Run 121: the paired NTT kernels without their griddepcontrol.wait (variant nodep, made for
# the run: ntt_fwd_gp / ntt_inv_gp start straight away; a standalone NTT op has no programmatic
# edge, so the wait returns at once, but the instruction could change how the launch is set
# up). Harness rows 46-49 (launch and one-node graph, forward and inverse), alternated with
# base three times. Words: hashes.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for pass in 1 2 3; do
  for b in base nodep; do
    echo "== bench_$b pass $pass"
    ROWS=46-49 timeout 60 .gpu/exp/bench_$b 8 2 2>&1 | grep "burst\|hash" | tee -a $OUT/run121-$b.txt
  done
done
