#!/bin/bash
# Run 119: the fused key switch's words, with the harness's primes carrying their Montgomery
# constant: ks-fused.patch's check (bench_f3dbg = the harness with the patch, -DFUSED_SMEM_ACC)
# compares its forward words with the ModUp's (ks_ext) per digit, its sums before the inverse
# with a CPU sum, and its accumulators with ks_inner_gs's. With KS_GINV=11 the engine's ModUp
# applies sigma_g as a permutation of NTT slots and the fused kernel gathers the input: the same
# map for a real NTT, different maps under the harness's random twiddles.
for g in 11 0; do echo "== KS_GINV=$g"; KS_GINV=$g ROWS=54 timeout 120 .gpu/exp/bench_f3dbg 8 2 2>&1 | grep "hash acc\|fused"; done
