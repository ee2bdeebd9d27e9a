#!/bin/bash
# Run 241 (forty-sixth session): six more same-call tables of decision 0515's engine (bundle f,
# 7a503e8's engine code) beside FHElium (prebuilt: .gpu/peer/peer-build.tgz from run 239), the
# evidence for issue 7's target (the rule is written in docs/perf.md before the call). Then,
# time allowing, the key switch's kernels with ks_inner_gs's binary64 path placed first in its
# code (`ksswap`: gs_inv_ntt_q's branches swapped, which puts LooseF's 2054 instructions before
# Loose's in the SASS; run 239 found that path waiting on instruction fetch in 16.5% of its
# samples) against base: ntt_bench rows 12-15, the engine's primes, order base ksswap ksswap
# base, three passes. Build: base's ckks_v.cu (variants.py /tmp/e13) with gs_inv_ntt_q's
# `if (q < F64_Q) {LooseF} else {Loose}` written as `if (q >= F64_Q) {Loose} else {LooseF}`
# in /tmp/e13/ksswap/ckks_v.cu, then nvcc as for the others into .gpu/exp13/bench_ksswap.
# Carry [".gpu/bin/f", ".gpu/exp13", ".gpu/peer", ".peer"], LIMIT=220.
set -u
. docs/runs/common.sh
header
W=.gpu/bin/f peer_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat
ROWPAT="^ks-" WIDED=37 WIDE=7,8 HARNESS=.gpu/exp13 order_passes "base ksswap ksswap base" 12-15
finish
