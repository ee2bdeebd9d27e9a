#!/bin/bash
# Run 148, prepared in the twenty-fifth session (2026-12-05), when no device was lent.
# .gpu/bin/x = the commit in .gpu/bin/x/COMMIT (rebuild it if the code changed since: see
# docs/NOTES.md for the recipe). New since run 147 (.gpu/bin/w = 26154f2):
#   - the matrix_residency example: key-major, column-hoisted and auto schedules; its cuda:0
#     test in tests/matrix_residency.rs (matrix_test) compares every column with the CPU run
#     bit for bit and checks every decision;
#   - the examples' Engine::rotate_multiply_accumulate (cuda test in examples_lib);
#   - ResidencyController::prefetch / forecast / apply_next_use (host logic; exercised by the
#     matrix runs on cuda:0: "the run went as forecast" must say yes; --layers 3 with lru
#     against next-use shows what 306 MiB less key traffic is worth over PCIe);
#   - 4a001b0 (twenty-fourth session, mechanical: coefficient_domain_to_ntt_domain through
#     ntt_fwd), never run on the H200 before.
# Predicted (perf.md, twenty-fifth session): matrix_residency key-major 25-45 ms wall on the
# H200, 90-160 K MAC/s. Carry [".gpu/bin/x"].
set -u
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/x
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cat $W/COMMIT
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r example_parity $W/example_parity --test-threads=1
r examples_lib $W/examples_lib --test-threads=1
r matrix_test $W/matrix_test --test-threads=1 --nocapture
r cuda_lib $W/cuda_lib --test-threads=1
r gpu_memory $W/gpu_memory --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $W/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
i=0
for args in "" "" "--schedule column-hoisted" "--schedule column-hoisted" "--no-prefetch" "--budget-mib 400" "--layers 3 --budget-mib 250 --evict lru" "--layers 3 --budget-mib 250 --evict next-use"; do
  i=$((i+1)); (timeout 120 $W/matrix_residency --device cuda:0 $args; echo "exit=$?") > $OUT/logs/matrix-$i.txt 2>&1
  echo "matrix $i [$args]: $(grep -E '^(Time|Result)' $OUT/logs/matrix-$i.txt | tr '\n' ' ') $(tail -1 $OUT/logs/matrix-$i.txt)"
done
CS=/usr/local/cuda/bin/compute-sanitizer
r memcheck-rma $CS --tool memcheck $W/examples_lib --test-threads=1 cuda_rotate_multiply_accumulate
r racecheck-rma $CS --tool racecheck $W/examples_lib --test-threads=1 cuda_rotate_multiply_accumulate
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
