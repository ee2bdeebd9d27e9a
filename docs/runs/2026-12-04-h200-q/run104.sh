#!/bin/bash
# Run 104: the engine's paired NTT kernels (component pipelines) by a cooperative launch (rows
# 46-49) against a plain launch in clusters of 16 (rows 50-53: one prime's 16 blocks
# co-scheduled by the hardware), harness kernels/bench/ntt_bench.cu (bench_q), three passes.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for p in 1 2 3; do echo "== pass $p"; ROWS=46-53 timeout 120 .gpu/exp/bench_q 8 2 2>&1 | grep -E "^(fwd|inv)-gp|^hash|clusters of 16|rror"; done | tee $OUT/run104.txt
