#!/bin/bash
# Run 114: exchange_probe and cluster8_probe after the review (shared pieces in
# kernels/bench/probe_common.cuh): they run, check their words, and agree with runs 103 / 113.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
(timeout 120 .gpu/exp/exchange_probe; timeout 120 .gpu/exp/cluster8_probe) 2>&1 | tee $OUT/run114.txt
