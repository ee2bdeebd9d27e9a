#!/bin/bash
# Run 96: kernels/bench/ntt_bench.cu rows 46-55: the engine's paired forward NTT (ntt_fwd_gp)
# against ntt_fwd_gpp (each component by its own half of the block; component 1's column rounds
# gated behind component 0's at GATE 1-3, none at 0), launches and one-node graphs; words by
# hash (must equal fwd-gp's). Three passes.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for p in 1 2 3; do echo "== pass $p"; ROWS=0,21,46-55 .gpu/exp/bench_base 8 2 | grep -v "^max active\|^ntt_fwd_cl blocks\|^limbs\|^ModUp"; done
