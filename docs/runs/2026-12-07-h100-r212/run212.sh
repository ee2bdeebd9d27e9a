#!/bin/bash
# Run 212 (forty-second session). First the harness (.gpu/exp4: HEAD's kernels/ckks.cu through
# variants.py): bench_base; bench_tw8 (built with -DTW8: the binary64 primes' twiddles as 8-byte
# doubles: half the row rounds' twiddle bytes, no conversion); bench_ld1 / bench_ld1e (the paired
# kernels' group 1 loads its first phase only once group 0's loads have landed: after group 0's
# first round / right after its loads); bench_tw8ld1e (both). Rows 46-49 (the paired kernels),
# three passes alternated, hashes (fwd-gp / inv-gp must equal base's: cd071554a1c6bacb /
# 988eee4302cce375). Then the engine with ld1e (.gpu/bin/k = branch ld1e, 11012f7): gpu_ops, and
# gpu_oplat alternated with .gpu/bin/f (e36e59d = main's engine code) three times; racecheck of
# the NTT test on k if time is left. Carry [".gpu/exp4", ".gpu/bin/f", ".gpu/bin/k"], LIMIT=300.
set -u
. docs/runs/common.sh
header; cat .gpu/bin/k/COMMIT .gpu/bin/f/COMMIT
HARNESS=.gpu/exp4 harness_passes "base tw8 ld1 ld1e tw8ld1e"
export FHELIUM_REQUIRE_GPU=1
r gpu_ops .gpu/bin/k/gpu_ops --test-threads=1
AB_PASSES=3 ab_oplat "^(coefficient_to_ntt|ntt_to_coefficient|rotate_with_key|example14_stage) " f k
need 90 racecheck && r racecheck-ntt /usr/local/cuda/bin/compute-sanitizer --tool racecheck .gpu/bin/k/gpu_ops --test-threads=1 ntt_both
finish
