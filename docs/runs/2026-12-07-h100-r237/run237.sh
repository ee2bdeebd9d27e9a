#!/bin/bash
# Run 237 (forty-fifth session): where the wide groups' time goes, old (e471616) against new
# (LooseN, b0028b9): Nsight Compute's source counters (sampled warp stalls per SASS
# instruction) and warp-state statistics of ntt_fwd_gp (row 46, WIDE=7), one launch after 60,
# each binary; the per-instruction table exported as CSV. Carry [".gpu/exp10"], LIMIT=240.
set -u
. docs/runs/common.sh
header
NCU=$(ls /usr/local/cuda/bin/ncu 2>/dev/null || command -v ncu)
$NCU --version | tail -1
for v in old new; do
  need 40 "$v" || break
  WIDE=7 ROWS=46 timeout 90 $NCU --clock-control none -k regex:'^ntt_fwd_gp$' -s 60 -c 1 \
    --section SourceCounters --section WarpStateStats --section SchedulerStats \
    -o $OUT/$v-fwd .gpu/exp10/bench_$v 8 2 > $OUT/logs/ncu-$v.txt 2>&1
  echo "== $v rc=$?"; tail -3 $OUT/logs/ncu-$v.txt
  timeout 60 $NCU --import $OUT/$v-fwd.ncu-rep --page details > $OUT/$v-details.txt 2>&1; echo "details rc=$?"
  timeout 60 $NCU --import $OUT/$v-fwd.ncu-rep --page source --csv --print-source sass > $OUT/$v-sass.csv 2>&1; echo "source rc=$? $(wc -l < $OUT/$v-sass.csv) lines"
  grep -E "Warp Cycles Per Issued|Issued Warp|No Eligible|Active Warps|Stall" $OUT/$v-details.txt | head -20
done
finish
