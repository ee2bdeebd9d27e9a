#!/bin/bash
# Run 113: kernels/bench/cluster8_probe.cu: a synthetic ciphertext NTT (same loads, shared-memory
# rounds, multiply-add work and stores in both) in the engine's shape (16 blocks of 256 threads
# per prime, cooperative, exchange through L2) against clusters of 8 blocks of 512 threads per
# prime (one block per SM, 64 SMs, exchange through distributed shared memory, plain launch).
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
timeout 120 .gpu/exp/cluster8_probe 2>&1 | tee $OUT/run113.txt
