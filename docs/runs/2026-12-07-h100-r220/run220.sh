#!/bin/bash
# Run 220 (forty-third session): decision 0514 (the paired NTT kernels' fence-free tagged
# exchange through a per-stream scratch, gptag3's form) built into the engine.
# 1. Harness rows 46-49, three passes alternated (.gpu/exp5, all with today's ntt_bench.cu):
#    bench_old = 81e1a02's kernels (before 0514), bench_gptag3 = run 219's variant of them,
#    bench_xch = the working tree's kernels; hashes must be equal.
# 2. The GPU tests of the new bundle (.gpu/bin/f = 81e1a02 + decision 0514): gpu_ops (37,
#    two new), gpu_encrypt, example_parity.
# 3. gpu_oplat of the old (.gpu/bin/o = e36e59d's engine code) and new bundles alternated.
# 4. FHElium (prebuilt, .gpu/peer) with the new gpu_oplat beside it, twice.
# 5. memcheck and racecheck of the two new tests, time allowing.
# Carry [".gpu/exp5", ".gpu/bin/f", ".gpu/bin/o", ".gpu/peer", ".peer"], LIMIT=585.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f/COMMIT
HARNESS=.gpu/exp5 harness_passes "old gptag3 xch"
gpu_tests .gpu/bin/f
AB_PASSES=2 ab_oplat '^(coefficient_to_ntt|ntt_to_coefficient) +[0-9]' o f
W=.gpu/bin/f
peer_oplat gpu_oplat gpu_oplat
san=/usr/local/cuda/bin/compute-sanitizer
need 90 memcheck && r memcheck-xch $san --tool memcheck .gpu/bin/f/gpu_ops --test-threads=1 paired_ntts_
need 90 racecheck && r racecheck-xch $san --tool racecheck .gpu/bin/f/gpu_ops --test-threads=1 paired_ntts_exact_into
finish
