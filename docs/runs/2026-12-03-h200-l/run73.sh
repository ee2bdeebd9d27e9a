#!/bin/bash
# Run 73 (harness): the forward NTT as two kernels (column phase; row phase hung on it by a
# programmatic edge, the grid completion in place of the limb barrier): stream launches with
# PDL (fwd-2k), one graph (fwd-2k-g), the same with the first kernel triggering its dependents
# at its start (fwd-2kt-g), against fwd / fwd-g1; words by hash. Also the split-limb prototypes
# after their row phase became one helper (hashes must stay fwd's).
set -u
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
for pass in 1 2; do
  timeout 60 $X/bench_base 8 2 > $OUT/logs/base-$pass.txt 2>&1
  echo "pass $pass rc=$? $(grep -E '^(fwd|fwd-g1|fwd-2k|fwd-2k-g|fwd-2kt-g|fwd-q4|fwd-h2) ' $OUT/logs/base-$pass.txt | tr -s ' ' | cut -d' ' -f1-5 | tr '\n' ' ')"
done
grep -E "^hash fwd" $OUT/logs/base-1.txt | tr -s ' ' | tr '\n' ' '
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
