#!/bin/bash
# Run 212 (forty-second session): the harness (.gpu/exp4, HEAD's kernels/ckks.cu through
# variants.py): bench_base; bench_tw8 (built with -DTW8: the binary64 primes' twiddles as
# 8-byte doubles, half the row rounds' twiddle bytes, no conversion); bench_ld1 / bench_ld1e
# (the paired kernels' group 1 loads its first phase only once group 0's loads have landed:
# after group 0's first round / right after its loads); bench_tw8ld1 / bench_tw8ld1e: both. Rows 46-49 (the paired kernels), three
# passes alternated, hashes (fwd-gp / inv-gp must equal base's: cd071554a1c6bacb /
# 988eee4302cce375). Carry [".gpu/exp4"], LIMIT=170.
set -u
. docs/runs/common.sh
header
HARNESS=.gpu/exp4 harness_passes "base tw8 ld1 ld1e tw8ld1 tw8ld1e"
finish
