#!/bin/bash
# Run 240 (forty-sixth session): (1) five more same-call tables of decision 0515's engine
# (bundle f, 7a503e8's engine code) beside FHElium (prebuilt: .gpu/peer/peer-build.tgz, which
# run 239 packed): how often the NTT ops hold 10x across FHElium's host states; (2) what the wide
# prime's rows still cost the paired kernels the engine launches (ntt_bench GPN=1, the engine's
# primes WIDED=37 WIDE=7,8): allf64 (LooseF for every group, wrong words on the wide prime: the
# bound) and nogatemix (the transposed rows' binary64 group not gated) against base, order
# base allf64 nogatemix nogatemix allf64 base, three passes.
# Before the call: make-bundle-f.sh's bundle in .gpu/bin/f; variants.py /tmp/e13 and
#   for v in base allf64 nogatemix; do $NV/bin/nvcc -arch=sm_90 -O3 -I/tmp/e13/$v -L$NV/lib \
#     kernels/bench/ntt_bench.cu -o .gpu/exp13/bench_$v; done
# Carry [".gpu/bin/f", ".gpu/exp13", ".gpu/peer", ".peer"], LIMIT=240.
set -u
. docs/runs/common.sh
header
W=.gpu/bin/f peer_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat
GPN=1 WIDED=37 WIDE=7,8 HARNESS=.gpu/exp13 order_passes "base allf64 nogatemix nogatemix allf64 base"
finish
