#!/bin/bash
# Run 155 (prepared in the twenty-ninth session, not run: no device time left): kernels/bench/
# warp_item_probe.cu with its tile swizzled (run 154 ran it with 8-way bank conflicts in round 2),
# against the engine's paired kernel (ntt_bench row 47, fwd-gp-g), two passes. Carry [".gpu/exp"]
# (build: docs/howto/time-and-profile-the-gpu-kernels.md section 6; the probe's line is in its header).
nvidia-smi --query-gpu=name --format=csv,noheader
for pass in 1 2; do
  ROWS=47 timeout 30 .gpu/exp/bench_base 8 2 | grep -E "^fwd-gp"
  timeout 30 .gpu/exp/warp_item_probe | grep -E "^pass|rror"
done
