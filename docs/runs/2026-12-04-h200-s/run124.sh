#!/bin/bash
# Run 124: the CUDA engine's new operations (hoisted rotations rotate_many_with_keys,
# conjugate, plaintext domain transitions, mod_switch_to_level, multiply_by_integer with the
# ew_mul_int kernel) verified against the CPU engine: gpu_ops (all), gpu_encrypt,
# example_parity, the examples; memcheck + racecheck of the new gpu_ops tests; then FHElium
# built and timed in the same call and gpu_oplat twice (with the new rows
# rotate_many_with_keys/4 and rotate_with_key/x4). .gpu/bin/h = this session's code.
set -u
export FHELIUM_REQUIRE_GPU=1
H=.gpu/bin/h
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $H/gpu_ops --test-threads=1
r gpu_encrypt $H/gpu_encrypt --test-threads=1
r example_parity $H/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $H/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
CS=/usr/local/cuda/bin/compute-sanitizer
NEW="hoisted plaintext_domain mod_switch_to_level_and"
for t in $NEW; do r memcheck-$t $CS --tool memcheck $H/gpu_ops --test-threads=1 $t; done
r racecheck-hoisted $CS --tool racecheck $H/gpu_ops --test-threads=1 hoisted_rotations
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
cat $OUT/peer-oplat.txt 2>/dev/null | head -14
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in h1 h2; do r oplat-$n $H/gpu_oplat --nocapture; grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/logs/oplat-$n.log | head -14 | tr -s ' ' | cut -d' ' -f1-2,5-8; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
