#!/bin/bash
# SUPERSEDED by docs/runs/2026-12-05-h200-u/run142.sh (same numbers, new binaries).
# Run 142 (prepared in the twenty-second session, 2026-12-04 ~22:55 UTC; NOT RUN: the device
# tool lent no machine in that session either). .gpu/bin/z holds the binaries of 5f9fe57,
# the twenty-second session's last code: the twenty-first session's review commits (the key cache
# holds device keys only, rotate_by_step goes straight to the switch, PoolWords::len) and the
# tracing spans (ckks.<op>, ckks.kernel, ckks.chain; new gpu_ops test
# operations_and_their_kernel_launches_are_spanned), complex slots encoded and decoded on the
# device (enc_rows_sample / dec_cols cplx flag; gpu_encrypt complex_messages_match_the_cpu_both_ways,
# extended) and encode_for_multiplication / encode_for_addition (enc_lift; new gpu_encrypt tests
# plaintexts_encoded_on_the_device_equal_the_cpu_prepared_ones and
# device_encoding_refuses_what_the_cpu_engine_refuses).
# 1. gpu_ops (28 tests), gpu_encrypt (8), example_parity, the examples crate's tests,
#    fhelium-cuda's lib and gpu_memory, the three examples; the sanitizers in run143.sh.
# (Sanitizers and the A/B of the hot path: run143.sh, same .gpu/bin/z.)
# Make .gpu/bin/z: CUDA_LIBRARY_PATH=$PWD/target/cuda-link cargo xtask gpu-bundle --out DIR,
# then strip -o .gpu/bin/z/NAME DIR/bin/BINARY for gpu_ops (test-ckks-test-gpu_ops),
# gpu_encrypt, gpu_oplat, example_parity (test-tests-test-example_parity), examples_lib
# (test-examples-lib-fhelium_examples), cuda_lib (test-cuda-lib-fhelium_cuda), gpu_memory
# (test-cuda-test-gpu_memory), the three example binaries, and gpu_oplat_old from a bundle of
# bccfebd. Carry .gpu.
set -u
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/z
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
(timeout 60 $W/automatic_residency --device cuda:0 --trace $OUT/logs/trace.json; echo "traced exit=$?") > $OUT/logs/automatic_traced.txt 2>&1; tail -2 $OUT/logs/automatic_traced.txt
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
