#!/bin/bash
# Run 94: gpu_ops of the second review (fixture helpers for the NTT-and-rotation cases and the
# rotation key), .gpu/bin/h, on the H200.
set -u
export FHELIUM_REQUIRE_GPU=1
mkdir -p $OUT/logs
timeout 200 .gpu/bin/h/gpu_ops --test-threads=1 > $OUT/logs/gpu_ops.log 2>&1; echo "gpu_ops rc=$?"
grep -E '^test result|FAILED|panicked' $OUT/logs/gpu_ops.log | head -5
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
