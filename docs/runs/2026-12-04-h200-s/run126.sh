#!/bin/bash
# Run 126: hoisted rotations with the inner product reading the shared extended digits
# through sigma_g (ks_inner_gh; .gpu/bin/g) against the aut_ntt pass (run 124/125's code,
# .gpu/bin/h): gpu_ops on g (all), memcheck + racecheck of the hoisted test on g, then
# gpu_oplat alternated g, h, g, h, g (rows rotate_with_key, rotate_many_with_keys/4,
# rotate_with_key/x4).
set -u
export FHELIUM_REQUIRE_GPU=1
G=.gpu/bin/g; H=.gpu/bin/h
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $G/gpu_ops --test-threads=1
r gpu_encrypt $G/gpu_encrypt --test-threads=1
r example_parity $G/example_parity --test-threads=1
CS=/usr/local/cuda/bin/compute-sanitizer
r memcheck-hoisted $CS --tool memcheck $G/gpu_ops --test-threads=1 hoisted
r racecheck-hoisted $CS --tool racecheck $G/gpu_ops --test-threads=1 hoisted_rotations
for n in g1 h1 g2 h2 g3; do D=$G; case $n in h*) D=$H;; esac; r oplat-$n $D/gpu_oplat --nocapture; grep -E '^(rotate_with_key|rotate_many|relinearize|coefficient_to_ntt) ' $OUT/logs/oplat-$n.log | head -6 | tr -s ' ' | cut -d' ' -f1-4,7-8; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
