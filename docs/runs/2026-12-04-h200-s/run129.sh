#!/bin/bash
# Run 129: the examples' Engine::rotate_many_with_keys on cuda:0 (.gpu/bin/e): the examples
# crate's unit tests (its new cuda test: hoisted results decrypt to the CPU engine's bit for
# bit), basic_ckks and the other examples on cuda:0, example_parity, gpu_ops.
set -u
export FHELIUM_REQUIRE_GPU=1
E=.gpu/bin/e
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r examples_lib $E/examples_lib --test-threads=1
grep -E "^test " $OUT/logs/examples_lib.log | head -20
for ex in basic_ckks automatic_residency explicit_residency; do (timeout 60 $E/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
cat $OUT/logs/basic_ckks.txt
r example_parity $E/example_parity --test-threads=1
r gpu_ops $E/gpu_ops --test-threads=1
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
