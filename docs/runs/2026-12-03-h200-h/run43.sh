#!/bin/bash
# Run 43 (ninth session): the ModUp rows of the harness (cluster ks-modup with sigma_g as an
# output permutation, queue ks-modup-gq with sigma_g as a gather) at ginv 0 (no sigma), 19661
# (5^-1: rotation by 1) and 18085 (5^-7).
cd .gpu/bin
for g in 0 19661 18085; do echo "== ginv $g"; KS_GINV=$g ./bench_base 8 2 | grep -E "^(fwd |ks-modup|ks-chain|ks-inner|modup)"; done
