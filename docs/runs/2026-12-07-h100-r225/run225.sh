#!/bin/bash
# Run 225 (forty-third session): the paired kernels out of place without the limb barrier's
# wait (the groups only count; readers poll their tagged words, re-polls batched; in place
# they still wait): bench_nw against bench_old (81e1a02) and bench_xchrlx (the kernels of
# run 224), rows 46-49 on one counter region, three passes alternated; hashes must be equal.
# Carry [".gpu/exp5"], LIMIT=120.
set -u
. docs/runs/common.sh
header
HARNESS=.gpu/exp5 harness_passes "old xchrlx nw"
finish
