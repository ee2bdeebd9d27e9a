#!/bin/bash
# Run 110: the probes after the review (exchange_probe on ckks.cu's primitives, both probes'
# timing loop in bench_single.cuh's time_single_and_burst): they run and agree with runs 103 / 100.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
(timeout 120 .gpu/exp/exchange_probe; timeout 120 .gpu/exp/launch_shape_probe) 2>&1 | tee $OUT/run110.txt
