#!/bin/bash
# Run 125: run 124's code with gpu_ops' mod_switch_to_level cases fixed (run 124 asked the CPU
# for level 7 of a chain whose last public level is 6): gpu_ops (all), memcheck of the
# mod_switch_to_level / multiply_by_integer test, gpu_encrypt, example_parity.
set -u
export FHELIUM_REQUIRE_GPU=1
H=.gpu/bin/h
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $H/gpu_ops --test-threads=1
CS=/usr/local/cuda/bin/compute-sanitizer
r memcheck-levels $CS --tool memcheck $H/gpu_ops --test-threads=1 mod_switch_to_level_and
r gpu_encrypt $H/gpu_encrypt --test-threads=1
r example_parity $H/example_parity --test-threads=1
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
