#!/bin/bash
# Run 207 (prepared in the thirty-seventh session; the thirty-eighth got no device): the
# pipeline's hoisted rotations and chain cuts (graphs::mark_cut) on a GPU, then chains of up
# to 16 kernels against 8. Carry [".gpu/bin/g", ".gpu/bin/h", ".gpu/bin/i"], LIMIT=280.
# .gpu/bin/g = gpu_ops and gpu_oplat at the commit in COMMIT (`cargo build --release -p
# fhelium-ckks --features cuda --test gpu_ops --test gpu_oplat`, stripped from
# target/release/deps: the newest file of each name, not the .d), and graph_boundary_probe
# (`$NV/bin/nvcc -arch=sm_90 -O3 -std=c++17 -L$NV/lib kernels/bench/graph_boundary_probe.cu
# -o .gpu/bin/g/graph_boundary_probe`): its one-node graph now on the chain's buffers (run
# 205's alternation touched 64 MiB). .gpu/bin/h = the same two binaries with
# docs/runs/next/max-chain-16.patch applied, .gpu/bin/i with max-chain-16-len.patch (16, and
# chain shapes compared and hashed over their used nodes only). See max-chain-16.md.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/g/COMMIT .gpu/bin/h/COMMIT .gpu/bin/i/COMMIT
r gpu_ops_pipe .gpu/bin/g/gpu_ops --test-threads=1 pipeline
need 50 memcheck && r memcheck-pipe /usr/local/cuda/bin/compute-sanitizer --tool memcheck .gpu/bin/g/gpu_ops --test-threads=1 pipeline
need 100 ab && AB_PASSES=$(( $(left) >= 260 ? 2 : 1 )) ab_oplat '^(rotate_with_key|relinearize|rotate_many_with_keys/4|example14_stage|example14_stage_x2)(/pipeline)? +[0-9]' g h i
need 20 pipe_h && r gpu_ops_pipe_h .gpu/bin/h/gpu_ops --test-threads=1 pipeline
need 20 pipe_i && r gpu_ops_pipe_i .gpu/bin/i/gpu_ops --test-threads=1 pipeline
need 60 gpu_ops && r gpu_ops .gpu/bin/g/gpu_ops --test-threads=1
need 30 probe && { timeout 30 .gpu/bin/g/graph_boundary_probe > $OUT/logs/probe.txt 2>&1; echo "probe rc=$?"; tail -10 $OUT/logs/probe.txt; }
finish
