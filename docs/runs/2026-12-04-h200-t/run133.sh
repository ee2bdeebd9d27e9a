#!/bin/bash
# Run 133: the device key cache (GpuKeyCache: rotate_by_step, rotate_many_by_steps,
# relinearize with keys made on first use) and the lean scratch of a hoisted key switch,
# verified against the CPU engine: gpu_ops (all), gpu_encrypt, example_parity, the examples
# crate's tests, the three examples; memcheck of the new tests and of the hoisted test,
# racecheck of the hoisted test. .gpu/bin/t = this session's code.
set -u
export FHELIUM_REQUIRE_GPU=1
T=.gpu/bin/t
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $T/gpu_ops --test-threads=1
r gpu_encrypt $T/gpu_encrypt --test-threads=1
r example_parity $T/example_parity --test-threads=1
r examples_lib $T/examples_lib --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $T/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
CS=/usr/local/cuda/bin/compute-sanitizer
for t in cached_key hoisted_rotations; do r memcheck-$t $CS --tool memcheck $T/gpu_ops --test-threads=1 $t; done
r racecheck-hoisted $CS --tool racecheck $T/gpu_ops --test-threads=1 hoisted_rotations
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
