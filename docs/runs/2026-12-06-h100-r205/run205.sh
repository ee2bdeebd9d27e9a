#!/bin/bash
# Run 205 (run 204's questions plus the pipeline, decision 0513), carry [".gpu/bin/f"], LIMIT=540:
# (1) graph_boundary_probe: three- and two-kernel chain graphs (programmatic edges, full
# edges, a cooperative middle node) alternated with a one-node graph: is the ~2 us at a chain
# graph's boundary (runs 202-203) the programmatic edges, or multi-node graphs as such?
# (2) gpu_ops: the two pipeline tests, chains_with_full_edges, graph_launches_replay;
# (3) gpu_oplat with FHELIUM_CKKS_PDL=1 and 0, two passes each: stage_split rows, /full_edges
# and /pipeline rows; (4) gpu_ops, gpu_encrypt, example_parity whole; memcheck of the pipeline
# tests. Build .gpu/bin/f here (~4 min): `bash docs/runs/next/make-bundle-f.sh`, then
# `$NV/bin/nvcc -arch=sm_90 -O3 -std=c++17 -L$NV/lib kernels/bench/graph_boundary_probe.cu -o
# .gpu/bin/f/graph_boundary_probe` (NV = target/nvcc-venv/lib/python3.11/site-packages/nvidia/cu13).
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f/COMMIT
timeout 60 .gpu/bin/f/graph_boundary_probe > $OUT/logs/probe.txt 2>&1; echo "probe rc=$?"; cat $OUT/logs/probe.txt | tail -25
r gpu_ops_pipe .gpu/bin/f/gpu_ops --test-threads=1 pipeline chains_with_full_edges graph_launches_replay
for i in 1 2; do
  for pdl in 1 0; do
    FHELIUM_CKKS_PDL=$pdl timeout 60 .gpu/bin/f/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/split-$pdl-$i.log 2>&1; echo "== pdl=$pdl $i rc=$?"
    grep -E '^(relinearize|rotate_with_key|coefficient_to_ntt|multiply_plaintext|ntt_to_coefficient|rescale_to_next_level|example14_stage|stage_split/[a-z_>]+)(/pipeline)?(/full_edges)? +[0-9]' $OUT/logs/split-$pdl-$i.log | tr -s ' ' | cut -d' ' -f1-2,7-8
  done
done
need 150 tests && gpu_tests .gpu/bin/f
need 90 memcheck && r memcheck-pipe /usr/local/cuda/bin/compute-sanitizer --tool memcheck .gpu/bin/f/gpu_ops --test-threads=1 pipeline
finish
