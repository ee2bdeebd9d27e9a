#!/bin/bash
# Run 221 (forty-third session): run 220's harness again with rows 46-49 on one counter region
# and exchange scratch (as one engine stream; run 220 cycled 64 regions, whose 128 MiB of
# scratch left the xch kernels' exchange cold in L2): bench_old (81e1a02's kernels), bench_gptag3
# (run 219's variant), bench_xch (decision 0514, relaxed atomics), bench_xchweak (0514 with
# gptag3's plain stores and ld.cg first loads); hashes must be equal. Then gpu_oplat of the old
# (.gpu/bin/o) and new (.gpu/bin/f) bundles alternated three times.
# Carry [".gpu/exp5", ".gpu/bin/f", ".gpu/bin/o"], LIMIT=240.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f/COMMIT
HARNESS=.gpu/exp5 harness_passes "old gptag3 xch xchweak"
AB_PASSES=3 ab_oplat '^(coefficient_to_ntt|ntt_to_coefficient) +[0-9]' o f
finish
