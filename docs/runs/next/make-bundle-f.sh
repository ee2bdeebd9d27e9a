#!/bin/bash
# Builds .gpu/bin/f for run157.sh (~2-6 min on 2 cores): the GPU bundle of the working tree
# (`cargo xtask gpu-bundle`; rc=1 "over 60 MiB" is expected, its binaries are fine), stripped:
# gpu_ops, gpu_encrypt, gpu_oplat, example_parity; plus d00e79c's gpu_oplat as gpu_oplat_old
# when .gpu/bin/z/gpu_oplat (a bundle of d00e79c, the kernels before decision 0511) exists.
# Usage, from the repository root: bash docs/runs/next/make-bundle-f.sh [BUNDLE_DIR]
set -eu
out=${1:-/work/tgt/bundle-f}
export CUDA_LIBRARY_PATH=${CUDA_LIBRARY_PATH:-$PWD/target/cuda-link}
cargo xtask gpu-bundle --out "$out" || test -d "$out/bin"
mkdir -p .gpu/bin/f
rm -f .gpu/bin/f/*
for pair in gpu_ops:test-ckks-test-gpu_ops gpu_encrypt:test-ckks-test-gpu_encrypt \
  gpu_oplat:test-ckks-test-gpu_oplat example_parity:test-tests-test-example_parity; do
  strip -o ".gpu/bin/f/${pair%%:*}" "$out/bin/${pair#*:}"
done
if [ -f .gpu/bin/z/gpu_oplat ]; then cp .gpu/bin/z/gpu_oplat .gpu/bin/f/gpu_oplat_old; fi
git rev-parse --short HEAD > .gpu/bin/f/COMMIT
du -sh .gpu/bin/f
