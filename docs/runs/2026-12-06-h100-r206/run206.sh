#!/bin/bash
# Run 206: gpu_ops at the test fix (the pipeline tests counted check()'s own drops in run 205),
# memcheck of the pipeline tests, then FHElium built and timed with gpu_oplat (a3a53ed: the
# /pipeline rows) beside each of its tables. Carry [".gpu/bin/f", ".peer"], LIMIT=560.
# .gpu/bin/f = run 205's bundle with gpu_ops rebuilt at the fix (`cargo build --release -p
# fhelium-ckks --features cuda --test gpu_ops`, stripped).
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f/COMMIT
r gpu_ops .gpu/bin/f/gpu_ops --test-threads=1
r memcheck-pipe /usr/local/cuda/bin/compute-sanitizer --tool memcheck .gpu/bin/f/gpu_ops --test-threads=1 pipeline
W=.gpu/bin/f
peer_oplat gpu_oplat gpu_oplat gpu_oplat
finish
