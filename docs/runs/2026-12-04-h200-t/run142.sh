#!/bin/bash
# Run 142 (prepared in the twenty-second session, 2026-12-04 22:xx UTC; NOT RUN: the device
# tool lent no machine in that session either). .gpu/bin/z holds the binaries of the
# twenty-second session's last code: the twenty-first session's review commits (the key cache
# holds device keys only, rotate_by_step goes straight to the switch, PoolWords::len) and the
# tracing spans (ckks.<op>, ckks.kernel, ckks.chain; new gpu_ops test
# operations_and_their_kernel_launches_are_spanned).
# 1. gpu_ops (28 tests), gpu_encrypt, example_parity, the examples crate's tests, fhelium-cuda's
#    lib and gpu_memory, the three examples; memcheck of the key-cache and span tests.
# 2. A/B of the hot path: gpu_oplat of bccfebd (before the spans, gpu_oplat_old) against the
#    new one, passes alternated: the spans must cost nothing without a subscriber.
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
CS=/usr/local/cuda/bin/compute-sanitizer
r memcheck-cached $CS --tool memcheck $W/gpu_ops --test-threads=1 cached_key
r memcheck-spans $CS --tool memcheck $W/gpu_ops --test-threads=1 spanned
export FHELIUM_BENCH_DEVICE=0
for n in old1 new1 old2 new2; do
  b=$W/gpu_oplat; [ "${n#old}" != "$n" ] && b=$W/gpu_oplat_old
  timeout 60 $b --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "$n rc=$?"
  grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/logs/oplat-$n.log | head -10 | tr -s ' ' | cut -d' ' -f1-2,7-8
done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
