#!/bin/bash
# Run 128: the session's final code after the review (.gpu/bin/f: negate and
# multiply_by_integer through one elementwise launch helper, test helpers shared): gpu_ops,
# gpu_encrypt, example_parity, the three examples; memcheck of the levels and
# add/subtract/negate tests.
set -u
export FHELIUM_REQUIRE_GPU=1
F=.gpu/bin/f
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $F/gpu_ops --test-threads=1
r gpu_encrypt $F/gpu_encrypt --test-threads=1
r example_parity $F/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $F/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
CS=/usr/local/cuda/bin/compute-sanitizer
r memcheck-levels $CS --tool memcheck $F/gpu_ops --test-threads=1 mod_switch_to_level_and add_subtract_negate
r oplat-f1 $F/gpu_oplat --nocapture; grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/logs/oplat-f1.log | head -12 | tr -s ' ' | cut -d' ' -f1-2,7-8
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
