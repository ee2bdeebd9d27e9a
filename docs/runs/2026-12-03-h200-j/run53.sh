#!/bin/bash
# Run 53 (eleventh session): the variant trig (ntt_fwd_gq and ks_inner_gs trigger their
# programmatic dependents at their start) against base, harness rows chain-*, alternated.
set -u
R=$(pwd); X=$R/.gpu/bin/x
mkdir -p $OUT/logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for k in base1 trig1 base2 trig2 base3 trig3; do v=${k%?}; echo "== harness $k"; (cd $X && ./bench_$v 8 2 > $OUT/logs/h-$k.txt 2>&1; echo "rc=$?"); grep -E "^(ks-modup-gq|ks-inner-gs|ks-chain-gq|chain)|^hash chain" $OUT/logs/h-$k.txt; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
