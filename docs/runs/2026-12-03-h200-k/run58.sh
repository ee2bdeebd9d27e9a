#!/bin/bash
# Run 58 (harness): the key inner product unfused from the inverse NTT. ks_ip (elementwise,
# every SM) then ntt_inv_gs over the 18 accumulator limbs, against ks_inner_gs (run 57: 19.8 us
# back to back, 15.2 with 8 rows); the chain of row 23 with both in place of ks_inner_gs (row
# 27). Words: ks-unf's accumulator hash must equal ks-inner-gs's, chain-unf-g's must equal the
# other chains' (f58b5242f0e61ff8).
set -u
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
for i in 1 2; do timeout 60 $X/bench_base 8 2 > $OUT/logs/bench$i.txt 2>&1; echo "rc=$?"; grep -E '^(ks-inner-gs|ks-ip|ks-inv18|ks-unf|chain-pdl-g|chain-unf-g|ks-moddown|ks-modup-gq) ' $OUT/logs/bench$i.txt; done
grep -E '^hash' $OUT/logs/bench1.txt
timeout 60 $X/bench_base 9 2 > $OUT/logs/bench-18.txt 2>&1; echo "18 limbs rc=$?"; grep -E '^(fwd|inv) ' $OUT/logs/bench-18.txt
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
