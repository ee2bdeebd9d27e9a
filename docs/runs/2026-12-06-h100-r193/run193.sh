#!/bin/bash
# Run 193: what the paired NTT kernels' two dependent loads at their start cost (the chain's
# first prime, then the group's prime, both before any input load). Harness .gpu/exp3/bench_base
# (4dc688e's kernels = HEAD's paired kernels) against bench_nold (the same with the role and the
# arithmetic chosen without a load: `first = true`, `G.pid != prime_off`, right for the
# harness's chain only, whose first prime is its one wide prime), rows 46-49, three passes
# alternated, hashes. Carry [".gpu/exp3"], LIMIT=120.
set -u
. docs/runs/common.sh
header
for pass in 1 2 3; do
  for v in base nold; do
    ROWS=46-49 timeout 60 .gpu/exp3/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"; grep -E "^(fwd|inv)-gp" $OUT/logs/$v-$pass.txt
  done
done
for v in base nold; do echo "$v: $(grep -h hash $OUT/logs/$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
finish
