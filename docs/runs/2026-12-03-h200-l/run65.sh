#!/bin/bash
# Run 65 (harness): is the current NTT kernel (ntt_fwd_gs / ntt_inv_gs) latency-bound per SM?
# The same kernel over 8, 16, 24 and 32 limbs (64-256 blocks: up to two blocks per SM). If 32
# limbs take much less than twice 16 limbs, an SM has idle issue capacity that a schedule with
# two limb slices per block in flight (one computing while the other's barrier resolves) can use.
set -u
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
for pass in 1 2; do for l in 4 8 12 16; do
  timeout 60 $X/bench_base $l 2 > $OUT/logs/l$l-$pass.txt 2>&1
  echo "limbs=$((2*l))/$pass rc=$? $(grep -E '^(fwd|inv|copy|nop) ' $OUT/logs/l$l-$pass.txt | tr -s ' ' | tr '\n' ' ')"
done; done
grep -E "max active|occup" $OUT/logs/l16-1.txt | head
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
