#!/bin/bash
# Run 103: kernels/bench/exchange_probe.cu: the paired NTT's exchange between its phases as
# global stores + counter barrier (cooperative, the engine's form) against distributed shared
# memory in clusters of 16 (plain launch), no arithmetic; placement, words, single/burst times.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
timeout 120 .gpu/exp/exchange_probe 2>&1 | tee $OUT/run103.txt
