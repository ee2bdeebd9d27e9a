#!/bin/bash
# Run 135: the session's later code (.gpu/bin/u): into_resident_ciphertext (the memory layer
# adopts a device result, Memory::adopt_device_words), the examples' CUDA backend handing
# results over without copies, the key-cache error tests; gpu_ops, gpu_encrypt,
# example_parity, the examples crate's tests, fhelium-cuda's lib and gpu_memory tests, the
# three examples (basic_ckks and automatic_residency outputs kept), memcheck of the new tests.
set -u
export FHELIUM_REQUIRE_GPU=1
U=.gpu/bin/u
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $U/gpu_ops --test-threads=1
r gpu_encrypt $U/gpu_encrypt --test-threads=1
r example_parity $U/example_parity --test-threads=1
r examples_lib $U/examples_lib --test-threads=1
r cuda_lib $U/cuda_lib --test-threads=1
r gpu_memory $U/gpu_memory --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $U/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
CS=/usr/local/cuda/bin/compute-sanitizer
for t in results_become_resident cached_key rotations_by_zero; do r memcheck-$t $CS --tool memcheck $U/gpu_ops --test-threads=1 $t; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
