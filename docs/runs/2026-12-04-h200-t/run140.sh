#!/bin/bash
# Run 140: allocation guards inside the engine (alloc returns PoolWords) and waited_drops (decision
# 0500's second amendment), .gpu/bin/y: gpu_ops (with successful_operations_never_wait_in_a_drop),
# gpu_encrypt, example_parity, the examples crate's tests, fhelium-cuda's lib and gpu_memory,
# the three examples; memcheck of the new tests and of the encrypt tests (secret key drop);
# gpu_oplat twice without the peer (the hot path must not have moved).
set -u
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/y
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r example_parity $W/example_parity --test-threads=1
r examples_lib $W/examples_lib --test-threads=1
r cuda_lib $W/cuda_lib --test-threads=1
r gpu_memory $W/gpu_memory --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $W/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
CS=/usr/local/cuda/bin/compute-sanitizer
r memcheck-dropping $CS --tool memcheck $W/gpu_ops --test-threads=1 dropping_values
r memcheck-never-wait $CS --tool memcheck $W/gpu_ops --test-threads=1 successful_operations
r memcheck-encrypt $CS --tool memcheck $W/gpu_encrypt --test-threads=1
export FHELIUM_BENCH_DEVICE=0
for n in y1 y2; do r oplat-$n $W/gpu_oplat --nocapture --test-threads=1; grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/logs/oplat-$n.log | head -12 | tr -s ' ' | cut -d' ' -f1-2,7-8; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
