#!/bin/bash
# Run 98: the engine with the component-pipelined paired NTT kernels (.gpu/bin/n) verified:
# gpu_ops (incl. the new paired_ntts_between_other_synced_kernels_stay_exact), gpu_encrypt,
# example_parity, the examples, memcheck and racecheck of the NTT tests; then the harness with
# main's kernels (bench_old) and the new ones (bench_new), rows 46-47 / 56-57, alternated.
set -u
export FHELIUM_REQUIRE_GPU=1
N=.gpu/bin/n
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -4; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $N/gpu_ops --test-threads=1
r gpu_encrypt $N/gpu_encrypt --test-threads=1
r example_parity $N/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $N/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
CS=/usr/local/cuda/bin/compute-sanitizer
r memcheck $CS --tool memcheck $N/gpu_ops --test-threads=1 ntt_both_directions
r racecheck $CS --tool racecheck $N/gpu_ops --test-threads=1 ntt_both_directions
for p in old new old new; do echo "== bench_$p"; ROWS=46,47,56,57 .gpu/exp/bench_$p 8 2 | grep -E "^(fwd|inv)-gp|^hash"; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
