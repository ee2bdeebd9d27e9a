#!/bin/bash
# Run 204: is the ~2 us at a chain graph's boundary the programmatic edges? (1)
# graph_boundary_probe: a three-kernel chain graph (programmatic / full edges / cooperative
# middle node) alternated with a one-node graph; (2) gpu_oplat of 8543a04 with the
# experiment knob FHELIUM_CKKS_PDL=0 (chains with full edges) against the default, the
# stage_split rows, two passes each. Carry [".gpu/bin/s"], LIMIT=200.
# Build .gpu/bin/s (here, ~1 min): `git apply kernels/bench/experiments/pdl-knob.patch`;
# `cargo build --release -p fhelium-ckks --features cuda --test gpu_oplat`; strip the newest
# target/release/deps/gpu_oplat-* into .gpu/bin/s/gpu_oplat; `git checkout
# crates/ckks/src/cuda/graphs.rs`; nvcc -arch=sm_90 -O3 -std=c++17 -I kernels/bench
# kernels/bench/graph_boundary_probe.cu -o .gpu/bin/s/graph_boundary_probe; a COMMIT line.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/s/COMMIT
timeout 60 .gpu/bin/s/graph_boundary_probe 2>&1 | tee $OUT/logs/probe.txt
for i in 1 2; do
  for pdl in 1 0; do
    FHELIUM_CKKS_PDL=$pdl timeout 60 .gpu/bin/s/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/split-$pdl-$i.log 2>&1; echo "== pdl=$pdl $i rc=$?"
    grep -E '^(relinearize|rotate_with_key|coefficient_to_ntt|multiply_plaintext|ntt_to_coefficient|rescale_to_next_level|example14_stage|stage_split/[a-z_>]+) +[0-9]' $OUT/logs/split-$pdl-$i.log | tr -s ' ' | cut -d' ' -f1-2,7-8
  done
done
finish
