#!/bin/bash
# Run 209 (thirty-ninth session): the matrix example's device step (rotate -> NTT ->
# multiply_plaintext -> add) as one Pipeline. Words first (the examples' lib tests, among them
# cuda_rotate_multiply_accumulate_equals_the_cpu_engines; the cuda:0 matrix test), then
# matrix_residency key-major with pinned keys, the previous build (e36e59d, separate calls)
# against the new one, alternated. Carry [".gpu/bin/j"], LIMIT=200.
# The change is docs/runs/next/matrix-pipeline.patch (written and built in the thirty-ninth
# session, reverted on main because no device time was left to check its words): land it
# only if examples_lib and matrix_test pass and the matrix words (max error) are unchanged.
# .gpu/bin/j = `git apply docs/runs/next/matrix-pipeline.patch`, then `cargo xtask gpu-bundle
# --out /work/tgt/bundle-j` (rc=1 "over 60 MiB" is expected) at the commit in COMMIT (79a7552),
# stripped: examples_lib (test-examples-lib-fhelium_examples), matrix_test
# (test-tests-test-matrix_residency), matrix_residency; matrix_residency_old = e36e59d's
# (/work/tgt/bundle-f/bin/matrix_residency).
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/j
header; cat $W/COMMIT
r examples_lib $W/examples_lib --test-threads=1
r matrix_test $W/matrix_test --test-threads=1
m() { local tag=$1 bin=$2; shift 2; (timeout 60 $W/$bin --device cuda:0 "$@"; echo "exit=$?") > $OUT/logs/matrix-$tag.txt 2>&1; echo "matrix $tag: $(grep -E '^(Time|Result)' $OUT/logs/matrix-$tag.txt | tr '\n' ' ') $(tail -1 $OUT/logs/matrix-$tag.txt)"; }
for i in 1 2 3; do
  need 40 "matrix round $i" || break
  m old$i matrix_residency_old --schedule key-major --keys-at pinned-host
  m new$i matrix_residency --schedule key-major --keys-at pinned-host
done
finish
