#!/bin/bash
# Run 93: gpu_ops of the reviewed code (eebb891: one fixture helper for the rotation key in
# four tests), .gpu/bin/g, on the H200.
set -u
export FHELIUM_REQUIRE_GPU=1
mkdir -p $OUT/logs
timeout 200 .gpu/bin/g/gpu_ops --test-threads=1 > $OUT/logs/gpu_ops.log 2>&1; echo "gpu_ops rc=$?"
grep -E '^test result|FAILED|panicked' $OUT/logs/gpu_ops.log | head -5
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
