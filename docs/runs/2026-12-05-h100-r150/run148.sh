#!/bin/bash
# Run 148, prepared in the twenty-fifth and twenty-sixth sessions (2026-12-05), when no device
# was lent. Carry [".gpu/bin/y"] (53 MiB): the binaries of the commit in .gpu/bin/y/COMMIT, and
# matrix_residency_51b, the matrix example of 51b69ce (before decision 0302), for the A/B.
# Rebuild .gpu/bin/y if the code changed since (docs/NOTES.md has the recipe).
# New since run 147 (.gpu/bin/w = 26154f2):
#   - the matrix_residency example (key-major, column-hoisted, auto; --layers, --evict,
#     --keys-at); its cuda:0 test in tests/matrix_residency.rs (matrix_test) compares every
#     column with the CPU run bit for bit and checks every decision;
#   - decision 0302: results adopted in stream order (no host wait per operation, dropped
#     intermediates freed on the engine stream, no cuCtxSynchronize); new GPU tests
#     gpu_memory::stream_ordered_adoption_of_pool_memory_written_on_a_wrapped_stream and
#     gpu_ops::results_adopted_in_stream_order_never_wait_on_the_host;
#   - the examples' Engine::rotate_multiply_accumulate (cuda test in examples_lib);
#   - ResidencyController::prefetch / forecast / apply_next_use ("the run went as forecast"
#     must say yes on cuda:0 too).
# Predicted (perf.md, twenty-sixth session): matrix key-major, pageable keys, ~5 ms less wall
# than matrix_residency_51b; with --keys-at pinned-host ~8-12 ms less; the same words and
# decisions in every configuration.
set -u
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/y
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
m() { local tag=$1 bin=$2; shift 2; (timeout 120 $W/$bin --device cuda:0 "$@"; echo "exit=$?") > $OUT/logs/matrix-$tag.txt 2>&1; echo "matrix $tag [$bin $*]: $(grep -E '^(Time|Result|Rotation)' $OUT/logs/matrix-$tag.txt | tr '\n' ' ') $(tail -1 $OUT/logs/matrix-$tag.txt)"; }
# A/B/C alternated twice: before 0302 (pageable keys), after (pageable), after (pinned).
for i in 1 2; do
  m a$i matrix_residency_51b --schedule key-major
  m b$i matrix_residency --schedule key-major
  m c$i matrix_residency --schedule key-major --keys-at pinned-host
done
m hoisted matrix_residency --schedule column-hoisted
m hoisted-pinned matrix_residency --schedule column-hoisted --keys-at pinned-host
m noprefetch matrix_residency --no-prefetch
m b400 matrix_residency --budget-mib 400
m l3-lru matrix_residency --layers 3 --budget-mib 250 --evict lru --keys-at pinned-host
m l3-next matrix_residency --layers 3 --budget-mib 250 --evict next-use --keys-at pinned-host
CS=/usr/local/cuda/bin/compute-sanitizer
# (not gpu_ops' ordered-adoption test: its "work still running" checks need real-time launches)
r memcheck-ordered $CS --tool memcheck $W/gpu_memory --test-threads=1 stream_ordered_adoption
r memcheck-rma $CS --tool memcheck $W/examples_lib --test-threads=1 cuda_
r racecheck-rma $CS --tool racecheck $W/examples_lib --test-threads=1 cuda_rotate_multiply_accumulate
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
