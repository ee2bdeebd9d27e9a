#!/bin/bash
# Run 208 (thirty-ninth session): the GPU tests at e36e59d (chains of up to 16 kernels), memcheck
# of the pipeline tests, then FHElium built and timed with gpu_oplat beside each of its tables
# (a same-call table for the landed code). Carry [".gpu/bin/f", ".peer"], LIMIT=560.
# .gpu/bin/f = `bash docs/runs/next/make-bundle-f.sh` at the commit in COMMIT.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f/COMMIT
gpu_tests .gpu/bin/f
r memcheck-pipe /usr/local/cuda/bin/compute-sanitizer --tool memcheck .gpu/bin/f/gpu_ops --test-threads=1 pipeline
W=.gpu/bin/f
peer_oplat gpu_oplat gpu_oplat gpu_oplat
finish
