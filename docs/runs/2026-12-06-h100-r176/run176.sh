#!/bin/bash
# Run 176: run 173's source page again with the densest warp sampling (interval 0: every 2^5
# cycles) for more samples per instruction, so the stall reasons can be split between the
# integer (wide prime) and binary64 code regions. Carry [".gpu/exp2"] (bench_cur), LIMIT=200.
set -u
. docs/runs/common.sh
header
NCU=$(ls /usr/local/cuda/bin/ncu 2>/dev/null || command -v ncu)
for k in ntt_inv_gp ntt_fwd_gp; do
  need 60 "$k" || break
  row=46; [ $k = ntt_inv_gp ] && row=48
  ROWS=$row timeout 120 $NCU --clock-control none -k regex:"^$k\$" -s 60 -c 1 --warp-sampling-interval 0 \
    --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
    .gpu/exp2/bench_cur 8 2 > $OUT/logs/src-$k.csv 2> $OUT/logs/src-$k.err
  echo "$k rc=$? lines $(wc -l < $OUT/logs/src-$k.csv)"; tail -2 $OUT/logs/src-$k.err
done
finish
