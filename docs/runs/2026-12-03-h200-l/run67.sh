#!/bin/bash
# Run 67: (1) where a one-launch op's time goes, engine against harness: the harness (with the
# host time of each single launch, host_us) for the NTT and the no-work / copy kernels as
# one-node graphs, then gpu_oplat of main (.gpu/bin/k, b5b00e6's binaries: the engine has not
# changed since) with its submit_us column; (2) the prototype ntt_fwd_q4 (quarters by
# clusters of 2, no limb barrier; rows fwd-q4 / fwd-q4-g) against fwd / fwd-g1, its words
# checked by hash against fwd's. Two passes, alternated.
set -u
export FHELIUM_REQUIRE_GPU=1
X=$(pwd)/.gpu/bin/x; K=$(pwd)/.gpu/bin/k
mkdir -p $OUT/logs
for pass in 1 2; do
  timeout 60 $X/bench_base 8 2 > $OUT/logs/base-$pass.txt 2>&1
  echo "harness $pass rc=$?"
  grep -E '^(fwd|inv|nop|copy|fwd-g1|nop-g1|copy-g1|inv-g1|fwd-q4|fwd-q4-g) ' $OUT/logs/base-$pass.txt
  timeout 200 $K/gpu_oplat --nocapture > $OUT/logs/oplat-$pass.log 2>&1
  echo "oplat $pass rc=$?"
  grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$pass.log | grep -v '/'
done
grep -E "^hash (fwd|inv)|max active clusters of ntt_fwd_q4|error|Error" $OUT/logs/base-1.txt
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
