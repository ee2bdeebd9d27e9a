#!/bin/bash
# Run 26: gpu_ops on the final engine code (key_switch's additions in one match).
set -u
export FHELIUM_REQUIRE_GPU=1
timeout 200 .gpu/r26/gpu_ops --test-threads=1 > $OUT/gpu_ops.log 2>&1; echo "gpu_ops rc=$?"
grep -E '^test |^test result' $OUT/gpu_ops.log
