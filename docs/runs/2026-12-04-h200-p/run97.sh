#!/bin/bash
# Run 97: ntt_bench rows 56-61: the engine's paired inverse NTT (ntt_inv_gp) against
# ntt_inv_gpp (component 1's row rounds gated behind component 0's, GATE 1 / 3), launches and
# one-node graphs, words by hash (must equal inv's and inv-gp's); rows 46-55 again. Three passes.
set -u
for p in 1 2 3; do echo "== pass $p"; ROWS=1,35,46,47,51,55,56-61 .gpu/exp/bench_base 8 2 | grep -v "^max active\|^ntt_fwd_cl blocks\|^limbs\|^ModUp"; done
