#!/bin/bash
# Run 118: how much of the key switch's ModUp tail the inner product could fill. Harness rows
# 15 (three stream launches), 22 (the same with PDL), 23 (one graph with programmatic edges, the
# engine's way), variants of kernels/ckks.cu made for this run (not in variants.py):
# base; trig = ntt_fwd_gq calls griddepcontrol.launch_dependents at its start (ks_inner_gs's
# blocks may then be placed as ModUp blocks leave, and wait in grid_dep_wait); nowait =
# ks_inner_gs without grid_dep_wait (wrong words: a bound, not a kernel); trignowait = both.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for pass in 1 2; do
  for b in base trig trignowait nowait; do
    echo "== bench_$b pass $pass"
    ROWS=15,22,23 timeout 60 .gpu/exp/bench_$b 8 2 2>&1 | grep "burst\|hash" | tee -a $OUT/run118-$b.txt
  done
done
