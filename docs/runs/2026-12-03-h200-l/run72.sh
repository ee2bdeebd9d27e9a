#!/bin/bash
# Run 72 (harness): the prototype ntt_fwd_h2 (halves by clusters of 4: stage 0 formed twice,
# the input read twice, no limb barrier) against fwd / fwd-g1 and q4, with two blocks per SM
# allowed (H2_PAD=0) and one forced (H2_PAD=90000); its words checked by hash against fwd's.
set -u
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
for pass in 1 2; do for pad in 0 90000; do
  H2_PAD=$pad timeout 60 $X/bench_base 8 2 > $OUT/logs/pad$pad-$pass.txt 2>&1
  echo "pad=$pad/$pass rc=$? $(grep -E '^(fwd|fwd-g1|fwd-q4|fwd-q4-g|fwd-h2|fwd-h2-g) ' $OUT/logs/pad$pad-$pass.txt | tr -s ' ' | cut -d' ' -f1-5 | tr '\n' ' ')"
done; done
grep -E "^hash fwd|max active clusters of ntt_fwd_(h2|q4)" $OUT/logs/pad90000-1.txt $OUT/logs/pad0-1.txt
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
