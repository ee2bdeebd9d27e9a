#!/bin/bash
# Run 55 (eleventh session): the variant smem16 (the kernels without clusters declare the 16 KiB
# tile they use instead of 32 KiB) against base in the harness, alternated three times.
set -u
R=$(pwd); X=$R/.gpu/bin/x
mkdir -p $OUT/logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for k in base1 smem161 base2 smem162 base3 smem163; do v=${k%?}; echo "== harness $k"; (cd $X && ./bench_$v 8 2 > $OUT/logs/h-$k.txt 2>&1; echo "rc=$?"); grep -E "^(fwd |inv |fwd-g1|ks-modup-gq|ks-inner-gs|chain-pdl-g)|^hash (fwd |inv|ks-modup-gq|ks-inner-gs|chain-pdl-g)" $OUT/logs/h-$k.txt; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
