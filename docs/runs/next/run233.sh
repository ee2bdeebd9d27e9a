#!/bin/bash
# Run 233 (forty-third session): which blocks wait in the engine's prime layout. bench_gpmarks
# (variants.py's gpmarks on 873ee0b's kernels: each paired group notes %globaltimer at its
# start, at its limb barrier's arrival and exit, and at its end) with WIDE=7 (the engine's
# layout) and the default (wide prime first); per grid row and group the medians over 50 single
# launches of rows 46 / 48, and how often each ended last. Carry [".gpu/exp9"], LIMIT=100.
set -u
. docs/runs/common.sh
header
for lay in 7 0; do
  WIDE=$lay ROWS=46 timeout 60 .gpu/exp9/bench_gpmarks 8 2 > $OUT/logs/marks-w$lay.txt 2>&1
  echo "== WIDE=$lay rc=$?"; grep -E "^(fwd|inv)-gp|^gpmarks|^hash" $OUT/logs/marks-w$lay.txt
done
finish
