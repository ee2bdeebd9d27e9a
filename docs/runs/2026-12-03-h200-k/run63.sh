#!/bin/bash
# Run 63 (harness): ks_inner_gx (the Q rows as ks_inner_gs's 128 blocks, the P row as 32 blocks
# of 8 lines with 4 working warps each: 160 blocks, so an SM holding two issues 3 warps per
# scheduler instead of 4) against ks_inner_gs, alone and in the key-switch chain (row 29
# against row 23), three times. Words: ks-inner-gx's accumulator hash must equal
# ks-inner-gs's (30b9c28c2b84c50d), chain-gx-g's the chains' (f58b5242f0e61ff8).
set -u
# The bench binary of this run was built with kernels/bench/experiments/ks-inner-gx.patch applied.
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
for i in 1 2 3; do timeout 60 $X/bench_base 8 2 > $OUT/logs/bench$i.txt 2>&1; echo "rc=$?"; grep -E '^(ks-inner-gs|ks-inner-gx|chain-pdl-g|chain-gx-g) ' $OUT/logs/bench$i.txt; done
grep -E '^hash' $OUT/logs/bench1.txt
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
