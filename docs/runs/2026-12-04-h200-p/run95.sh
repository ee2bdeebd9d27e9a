#!/bin/bash
# Run 95: kernels/bench/burst_probe.cu: do the NTT kernel's lock-step memory phases (16 KiB per
# block in, out + fence, in again) take longer with 128 blocks than with one?
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
/usr/local/cuda/bin/nvcc -arch=sm_90 -O3 -std=c++17 kernels/bench/burst_probe.cu -o /tmp/burst_probe || exit 1
/tmp/burst_probe; /tmp/burst_probe
