#!/bin/bash
# Run 189: 65af3f1 (chain graphs hold LaunchArgs) on the device for the first time: gpu_ops,
# gpu_encrypt, example_parity, then FHElium built and timed with gpu_oplat passes beside it.
# Carry [".gpu/bin/f", ".peer"], LIMIT=560.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
export FHELIUM_REQUIRE_GPU=1
header; cat $W/COMMIT
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r example_parity $W/example_parity --test-threads=1
peer_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat
finish
