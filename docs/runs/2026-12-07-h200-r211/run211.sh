#!/bin/bash
# Run 211 (forty-first session): first the harness (.gpu/exp3: bench_base = kernels/ckks.cu as
# it is; bench_f64tw = variants.py's f64tw built with -DF64TW: LooseF's twiddle products from a
# (double w, double w / q) table, the quotient formed from x beside x w), rows 46-49 (the
# paired kernels), three passes alternated, hashes (fwd-gp / inv-gp must equal base's). Then a
# same-call table on the card that comes, FHElium from the build run 210 packed
# (.gpu/peer/peer-build.tgz, unpacked instead of built), tables with a gpu_oplat pass
# (.gpu/bin/f = e36e59d's bundle = HEAD's engine code) beside each while time is left.
# Carry [".gpu/exp3", ".gpu/bin/f", ".gpu/peer", ".peer"], LIMIT=150.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f/COMMIT
for pass in 1 2 3; do
  for v in base f64tw; do
    ROWS=46-49 timeout 60 .gpu/exp3/bench_$v 8 2 > $OUT/logs/h-$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"; grep -E "^(fwd|inv)-gp" $OUT/logs/h-$v-$pass.txt
  done
done
for v in base f64tw; do echo "$v: $(grep -h '^hash' $OUT/logs/h-$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
W=.gpu/bin/f
peer_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat
finish
