#!/bin/bash
# Run 173: Nsight Compute's source page (SASS with per-instruction warp-state samples) of the
# paired NTT kernels in the harness (bench_cur = HEAD's kernels, rows 46 / 48, one launch after
# the warm-ups): which instructions the warps wait at, split by the code of the integer (wide
# prime) and binary64 groups. Carry [".gpu/exp2"], LIMIT=200.
set -u
. docs/runs/common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
NCU=$(ls /usr/local/cuda/bin/ncu 2>/dev/null || command -v ncu)
$NCU --version | tail -1
for k in ntt_inv_gp ntt_fwd_gp; do
  need 60 "$k" || break
  row=46; [ $k = ntt_inv_gp ] && row=48
  ROWS=$row timeout 120 $NCU --clock-control none -k regex:"^$k\$" -s 60 -c 1 \
    --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
    .gpu/exp2/bench_cur 8 2 > $OUT/logs/src-$k.csv 2> $OUT/logs/src-$k.err
  echo "$k rc=$? lines $(wc -l < $OUT/logs/src-$k.csv)"; head -c 600 $OUT/logs/src-$k.csv; echo; tail -3 $OUT/logs/src-$k.err
done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
