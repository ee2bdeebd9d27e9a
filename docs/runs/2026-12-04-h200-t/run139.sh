#!/bin/bash
# Run 139: set_recycling(false), a dropped engine and adopted buffers wait for the device too (decision
# 0500's second amendment), .gpu/bin/x: gpu_ops (with dropping_values_waits_for_work_on_every_stream),
# gpu_encrypt, example_parity, the examples crate's tests, fhelium-cuda's lib and gpu_memory,
# the three examples; memcheck of the new test and of the encrypt tests (secret key drop).
set -u
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/x
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
r memcheck-encrypt $CS --tool memcheck $W/gpu_encrypt --test-threads=1
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
