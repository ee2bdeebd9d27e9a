#!/bin/bash
# Run 226 (forty-third session): the paired kernels' gate and twiddle probes again on
# decision 0514's kernels (the limb barrier is cheaper now, and keeps the SM's L1: the gate's
# best place and gppf's prefetch may have moved). Harness (.gpu/exp6, db52da8's kernels and
# variants.py), rows 46-49 on one counter region, three passes alternated: base, nogate,
# nogatemix, mixA, mixB, uniA, swapmix, gppf; hashes must equal base's.
# Carry [".gpu/exp6"], LIMIT=150.
set -u
. docs/runs/common.sh
header
HARNESS=.gpu/exp6 harness_passes "base nogate nogatemix mixA mixB uniA swapmix gppf"
finish
