#!/bin/bash
# Run 68: the prototype ntt_fwd_q4 with one block per SM forced (Q4_PAD=90000 bytes of unused
# dynamic shared memory) against the default (two blocks fit per SM), and fwd / fwd-g1.
set -u
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
for pass in 1 2; do for pad in 0 90000; do
  Q4_PAD=$pad timeout 60 $X/bench_base 8 2 > $OUT/logs/pad$pad-$pass.txt 2>&1
  echo "pad=$pad/$pass rc=$? $(grep -E '^(fwd|fwd-g1|fwd-q4|fwd-q4-g) ' $OUT/logs/pad$pad-$pass.txt | tr -s ' ' | tr '\n' ' ')"
done; done
grep -E "^hash fwd" $OUT/logs/pad90000-1.txt
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
