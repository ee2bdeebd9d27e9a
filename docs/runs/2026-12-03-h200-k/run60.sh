#!/bin/bash
# Run 60 (harness): ks_inner_gp (kernels/bench/experiments/ks-inner-gp.patch: the Q rows' 128 blocks, the P row spread over
# them by an extra warp, one block per SM) against ks_inner_gs (144 blocks, 12 SMs with two);
# alone and in the key-switch chain (row 29 against row 23). Words: ks-inner-gp's accumulator
# hash must equal ks-inner-gs's (30b9c28c2b84c50d), chain-gp-g's the chains' (f58b5242f0e61ff8).
set -u
# The bench binaries of this run were built with kernels/bench/experiments/ks-inner-gp.patch applied.
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
for i in 1 2 3; do timeout 60 $X/bench_base 8 2 > $OUT/logs/bench$i.txt 2>&1; echo "rc=$?"; grep -E '^(ks-inner-gs|ks-inner-gp|chain-pdl-g|chain-gp-g|ks-modup-gq|ks-moddown) ' $OUT/logs/bench$i.txt; done
grep -E '^hash' $OUT/logs/bench1.txt
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
