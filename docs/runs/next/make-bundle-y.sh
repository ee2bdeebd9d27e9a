#!/bin/bash
# Builds the binaries run148.sh and run149.sh carry into .gpu/bin/y (about 53 MiB, under the
# device tool's 64 MiB carry): the GPU bundle of the working tree, stripped, plus the matrix
# example of 51b69ce (.gpu/bin/x/matrix_residency, before decision 0302) for the A/B.
# Usage, from the repository root: bash docs/runs/next/make-bundle-y.sh [BUNDLE_DIR]
set -eu
out=${1:-/work/tgt/bundle-y}
export CUDA_LIBRARY_PATH=${CUDA_LIBRARY_PATH:-$PWD/target/cuda-link}
# The bundle is over the carry limit as a whole, so xtask ends with rc=1; its binaries are fine.
cargo xtask gpu-bundle --out "$out" || test -d "$out/bin"
mkdir -p .gpu/bin/y
rm -f .gpu/bin/y/*
for pair in gpu_ops:test-ckks-test-gpu_ops gpu_encrypt:test-ckks-test-gpu_encrypt \
  gpu_oplat:test-ckks-test-gpu_oplat example_parity:test-tests-test-example_parity \
  matrix_test:test-tests-test-matrix_residency examples_lib:test-examples-lib-fhelium_examples \
  cuda_lib:test-cuda-lib-fhelium_cuda gpu_memory:test-cuda-test-gpu_memory \
  automatic_residency:automatic_residency basic_ckks:basic_ckks \
  explicit_residency:explicit_residency matrix_residency:matrix_residency; do
  strip -o ".gpu/bin/y/${pair%%:*}" "$out/bin/${pair#*:}"
done
if [ -f .gpu/bin/x/matrix_residency ]; then
  cp .gpu/bin/x/matrix_residency .gpu/bin/y/matrix_residency_51b
else
  echo "no .gpu/bin/x/matrix_residency: run148's A/B rows a1/a2 will fail; build 51b69ce's" >&2
fi
git rev-parse --short HEAD > .gpu/bin/y/COMMIT
du -sh .gpu/bin/y
