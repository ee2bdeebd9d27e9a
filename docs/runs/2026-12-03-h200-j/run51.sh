#!/bin/bash
# Run 51 (eleventh session): how launches are submitted, in the harness (.gpu/bin/x): the gq key
# switch chain as three one-node graphs (the engine's way), as one three-node graph, by stream
# launches with PDL on the inner product and ModDown (variant pdl), and that captured into one
# graph; the forward NTT as a one-node graph; the variant acqrel (the limb barrier's fence as
# fence.acq_rel.gpu instead of fence.sc.gpu). Alternated twice.
set -u
R=$(pwd); X=$R/.gpu/bin/x
mkdir -p $OUT/logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for k in base1 pdl1 acqrel1 base2 pdl2 acqrel2; do v=${k%?}; echo "== harness $k"; if [ $v = pdl ]; then export PDL=1; else unset PDL; fi; (cd $X && ./bench_$v 8 2 > $OUT/logs/h-$k.txt 2>&1; echo "rc=$?"); grep -E "^(fwd |inv |fwd-g1|ks-chain-gq|chain|ks-inner-gs|ks-modup-gq|ks-moddown)|^hash (ks|chain|fwd)|error|invalid|not " $OUT/logs/h-$k.txt; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
