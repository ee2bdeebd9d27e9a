#!/bin/bash
# Run 230 (forty-third session): does the harness keep decision 0514's gain in the engine's
# prime layout? bench_old (81e1a02) and bench_xchbatch (= facc799's kernels), rows 46-49 on one
# counter region, with WIDE=7 (the engine's top-level chain: the 60-bit base prime in the last
# row) and with the default (the wide prime in row 0), three passes alternated; hashes per
# layout must agree. Carry [".gpu/exp7"], LIMIT=100.
set -u
. docs/runs/common.sh
header
for pass in 1 2 3; do
  for lay in 7 0; do
    for v in old xchbatch; do
      WIDE=$lay ROWS=46-49 timeout 60 .gpu/exp7/bench_$v 8 2 > $OUT/logs/$v-w$lay-$pass.txt 2>&1
      echo "== $v WIDE=$lay pass $pass rc=$? $(grep -E '^(fwd|inv)-gp' $OUT/logs/$v-w$lay-$pass.txt | awk '{printf "%s %s  ", $1, $3}')"
    done
  done
done
for lay in 7 0; do for v in old xchbatch; do echo "$v WIDE=$lay: $(grep -h hash $OUT/logs/$v-w$lay-1.txt | tr -s ' ' | tr '\n' ' ')"; done; done
finish
