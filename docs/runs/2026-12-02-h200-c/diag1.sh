#!/bin/bash
# Diagnostic run 1: latency / submission / burst per op, then racecheck of the bit-exactness tests.
export FHELIUM_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0
cd "$(dirname "$0")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $OUT/smi.txt 2>&1
( time ./bin/gpu_oplat --nocapture ) > $OUT/oplat.txt 2>&1
tail -15 $OUT/oplat.txt
( time timeout 300 compute-sanitizer --tool racecheck --racecheck-report all ./bin/gpu_ops --test-threads=1 ) > $OUT/racecheck.txt 2>&1
tail -25 $OUT/racecheck.txt
