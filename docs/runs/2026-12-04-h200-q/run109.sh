#!/bin/bash
# Run 109: the paired NTT kernels with every twiddle of a phase loaded with its words (the
# second phase's while the limb barrier waits; run 108's ncu: 30% of issue slots busy, warps
# stalled on barriers, global loads and dependencies), harness bench_pre, against the same
# kernels loading each round's twiddles after its barrier (bench_old, 7ce307e); rows 46-49,
# alternated, four passes; words by hash.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for p in old pre old pre old pre old pre; do echo "== bench_$p"; ROWS=46-49 timeout 120 .gpu/exp/bench_$p 8 2 2>&1 | grep -E "^(fwd|inv)-gp|^hash (fwd|inv)-gp|rror"; done | tee $OUT/run109.txt
