#!/bin/bash
# Run 204: is the ~2 us at a chain graph's boundary (runs 202-203) the programmatic edges?
# (1) graph_boundary_probe: three- and two-kernel chain graphs (programmatic edges, full edges,
# a cooperative middle node) alternated with a one-node graph; (2) gpu_oplat with
# FHELIUM_CKKS_PDL=0 (every chain with full edges: `set_programmatic_launch(false)`) against
# the default, the stage_split rows and the in-process /full_edges rows, two passes each;
# (3) gpu_ops's chains_with_full_edges_change_no_word and the graph test.
# (4) gpu_ops, gpu_encrypt and example_parity of the bundle, whole.
# Carry [".gpu/bin/f"], LIMIT=400. Build .gpu/bin/f here (~4 min): `bash
# docs/runs/next/make-bundle-f.sh`, then `$NV/bin/nvcc -arch=sm_90 -O3 -std=c++17 -L$NV/lib
# kernels/bench/graph_boundary_probe.cu -o .gpu/bin/f/graph_boundary_probe` (NV = the pinned
# nvcc's folder, target/nvcc-venv/lib/python3.11/site-packages/nvidia/cu13).
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f/COMMIT
timeout 60 .gpu/bin/f/graph_boundary_probe 2>&1 | tee $OUT/logs/probe.txt
for i in 1 2; do
  for pdl in 1 0; do
    FHELIUM_CKKS_PDL=$pdl timeout 60 .gpu/bin/f/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/split-$pdl-$i.log 2>&1; echo "== pdl=$pdl $i rc=$?"
    grep -E '^(relinearize|rotate_with_key|coefficient_to_ntt|multiply_plaintext|ntt_to_coefficient|rescale_to_next_level|example14_stage|stage_split/[a-z_>]+)(/full_edges)? +[0-9]' $OUT/logs/split-$pdl-$i.log | tr -s ' ' | cut -d' ' -f1-2,7-8
  done
done
r gpu_ops_edges .gpu/bin/f/gpu_ops --test-threads=1 chains_with_full_edges graph_launches_replay
need 120 tests && gpu_tests .gpu/bin/f
finish
