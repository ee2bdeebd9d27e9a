#!/bin/bash
# Run 233 (forty-third session): which blocks wait in the engine's prime layout. bench_gpmarks
# (variants.py's gpmarks on 873ee0b's kernels: each paired group notes %globaltimer at its
# start, at its limb barrier's arrival and exit, and at its end) with WIDE=7 (the engine's
# layout) and the default (wide prime first); per grid row and group the medians over 50 single
# launches of rows 46 / 48, and how often each ended last. Carry [".gpu/exp9"], LIMIT=150.
set -u
. docs/runs/common.sh
header
# Each layout twice, in the order 7 0 0 7: runs 230-232 always measured WIDE=7 first in a pass,
# so an order effect (the GPU's clocks after a process start) was not excluded there.
i=0
for lay in 7 0 0 7; do
  i=$((i + 1))
  WIDE=$lay ROWS=46,48 timeout 60 .gpu/exp9/bench_gpmarks 8 2 > $OUT/logs/marks-$i-w$lay.txt 2>&1
  echo "== $i WIDE=$lay rc=$?"; grep -E "^(fwd|inv)-gp|^gpmarks|^hash" $OUT/logs/marks-$i-w$lay.txt
done
finish
