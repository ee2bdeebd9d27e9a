#!/bin/bash
# Run 207: the pipeline's hoisted rotations and chain cuts (graphs::mark_cut). Carry
# [".gpu/bin/g"], LIMIT=200. .gpu/bin/g = gpu_ops and gpu_oplat at the commit in COMMIT
# (`cargo build --release -p fhelium-ckks --features cuda --test gpu_ops --test gpu_oplat`,
# stripped from target/release/deps), and graph_boundary_probe (`$NV/bin/nvcc -arch=sm_90 -O3
# -std=c++17 -L$NV/lib kernels/bench/graph_boundary_probe.cu -o .gpu/bin/g/graph_boundary_probe`):
# its one-node graph now on the chain's buffers (run 205's alternation touched 64 MiB).
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/g/COMMIT
r gpu_ops_pipe .gpu/bin/g/gpu_ops --test-threads=1 pipeline
need 60 memcheck && r memcheck-pipe /usr/local/cuda/bin/compute-sanitizer --tool memcheck .gpu/bin/g/gpu_ops --test-threads=1 pipeline
for i in 1 2; do
  need 30 oplat && { timeout 60 .gpu/bin/g/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/oplat-$i.log 2>&1; echo "== oplat $i rc=$?"
  grep -E '^(rotate_with_key|rotate_many_with_keys/4|rotate_x4_one_by_one|example14_stage|example14_stage_x2|stage_split/rot>mulpt)(/pipeline)? +[0-9]' $OUT/logs/oplat-$i.log | tr -s ' ' | cut -d' ' -f1-4,7-8; }
done
need 60 gpu_ops && r gpu_ops .gpu/bin/g/gpu_ops --test-threads=1
need 30 probe && { timeout 30 .gpu/bin/g/graph_boundary_probe > $OUT/logs/probe.txt 2>&1; echo "probe rc=$?"; tail -10 $OUT/logs/probe.txt; }
finish
