#!/bin/bash
# Run 137: the session's last code after the review (.gpu/bin/v: one helper for device ->
# CPU ciphertext metadata, one cuda_location helper): gpu_ops, gpu_encrypt, example_parity,
# the examples crate's tests, fhelium-cuda's lib and gpu_memory tests, the three examples.
set -u
export FHELIUM_REQUIRE_GPU=1
V=.gpu/bin/v
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $V/gpu_ops --test-threads=1
r gpu_encrypt $V/gpu_encrypt --test-threads=1
r example_parity $V/example_parity --test-threads=1
r examples_lib $V/examples_lib --test-threads=1
r cuda_lib $V/cuda_lib --test-threads=1
r gpu_memory $V/gpu_memory --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $V/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
