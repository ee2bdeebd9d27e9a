#!/bin/bash
# Run 66 (harness): what the cooperative launch attribute costs a one-node graph. Rows 32-36:
# the forward NTT as a graph node by a plain launch (fwd-g1p) against the cooperative one
# (fwd-g1), the same for the inverse (inv-g1p / inv-g1), and the no-work and copy kernels as
# one-node graphs (nop-g1, copy-g1: what any one-launch op costs as a graph). Three passes.
set -u
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
for pass in 1 2 3; do
  timeout 60 $X/bench_base 8 2 > $OUT/logs/base-$pass.txt 2>&1
  echo "pass $pass rc=$?"
  grep -E '^(fwd|inv|nop|copy|fwd-plain|fwd-g1|fwd-g1p|nop-g1|copy-g1|inv-g1|inv-g1p) ' $OUT/logs/base-$pass.txt
done
grep -E "^hash (fwd|inv)" $OUT/logs/base-1.txt
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
