#!/bin/bash
# Run 229 (forty-third session): 7bfe447 (the paired launch through launch_synced, the same
# arguments) on the device: the three GPU test binaries of .gpu/bin/f, memcheck of the 0514
# tests, then gpu_oplat twice. Carry [".gpu/bin/f"], LIMIT=200.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f/COMMIT
gpu_tests .gpu/bin/f
san=/usr/local/cuda/bin/compute-sanitizer
need 40 memcheck && r memcheck-xch $san --tool memcheck .gpu/bin/f/gpu_ops --test-threads=1 paired_ntts_
W=.gpu/bin/f
oplat gpu_oplat
oplat gpu_oplat
finish
