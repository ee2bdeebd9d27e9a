#!/bin/bash
# Run 142 (prepared in the twenty-third session, 2026-12-05; NOT RUN: the device tool lent no
# machine in that session, nor in the twenty-second). Supersedes docs/runs/2026-12-04-h200-t/run142.sh.
# .gpu/bin/z holds the binaries of the commit in .gpu/bin/z/COMMIT: everything of the
# twenty-second session (spans, complex slots and plaintext operands encoded on the device)
# plus the twenty-third's: key caches with a byte capacity (decision 0530), counter-based key
# generation (0531) and keys made on the device (device_key_cache: ksk_sample, the errors'
# forward NTT, ksk_finish). New gpu_ops tests:
#   a_bounded_key_cache_holds_at_most_its_capacity_on_the_device,
#   keys_made_on_the_device_are_the_cpu_engines_keys.
# 1. gpu_ops (30 tests), gpu_encrypt (8), example_parity, the examples crate's tests,
#    fhelium-cuda's lib and gpu_memory, the three examples and a traced automatic_residency.
# (Sanitizers and the A/B of the hot path: run143.sh, same .gpu/bin/z.)
# Make .gpu/bin/z: CUDA_LIBRARY_PATH=$PWD/target/cuda-link cargo xtask gpu-bundle --out DIR,
# then strip -o .gpu/bin/z/NAME DIR/bin/BINARY for gpu_ops (test-ckks-test-gpu_ops),
# gpu_encrypt (test-ckks-test-gpu_encrypt), gpu_oplat (test-ckks-test-gpu_oplat),
# example_parity (test-tests-test-example_parity), examples_lib
# (test-examples-lib-fhelium_examples), cuda_lib (test-cuda-lib-fhelium_cuda), gpu_memory
# (test-cuda-test-gpu_memory), the three example binaries, and gpu_oplat_old from a bundle of
# bccfebd. Carry .gpu.
set -u
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/z
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cat $W/COMMIT
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r example_parity $W/example_parity --test-threads=1
r examples_lib $W/examples_lib --test-threads=1
r cuda_lib $W/cuda_lib --test-threads=1
r gpu_memory $W/gpu_memory --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $W/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
(timeout 60 $W/automatic_residency --device cuda:0 --trace $OUT/logs/trace.json; echo "traced exit=$?") > $OUT/logs/automatic_traced.txt 2>&1; tail -2 $OUT/logs/automatic_traced.txt
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
