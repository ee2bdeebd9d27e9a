#!/bin/bash
# Run 222 (forty-third session): where decision 0514's exchange spends its time. Nsight
# Compute's source page (SASS with warp-state samples) of ntt_fwd_gp / ntt_inv_gp in the harness
# for bench_xch (0514) and bench_old (81e1a02), rows 46 / 48, one launch after the warm-ups;
# then the SASS of the paired kernels in bench_xch and bench_xchweak (cuobjdump): what the
# relaxed 64-bit loads and stores compile to against ld.cg and plain stores.
# Carry [".gpu/exp5"], LIMIT=240.
set -u
. docs/runs/common.sh
header
NCU=$(ls /usr/local/cuda/bin/ncu 2>/dev/null || command -v ncu)
CUOBJ=$(ls /usr/local/cuda/bin/cuobjdump 2>/dev/null || command -v cuobjdump)
for v in xch old; do
  for k in ntt_fwd_gp ntt_inv_gp; do
    need 50 "$v $k" || break
    row=46; [ $k = ntt_inv_gp ] && row=48
    ROWS=$row timeout 100 $NCU --clock-control none -k regex:"^$k\$" -s 60 -c 1 \
      --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
      .gpu/exp5/bench_$v 8 2 > $OUT/logs/src-$v-$k.csv 2> $OUT/logs/src-$v-$k.err
    echo "$v $k rc=$? lines $(wc -l < $OUT/logs/src-$v-$k.csv)"; tail -2 $OUT/logs/src-$v-$k.err
  done
done
for v in xch xchweak; do
  $CUOBJ -sass -fun ntt_fwd_gp .gpu/exp5/bench_$v > $OUT/logs/sass-$v-fwd.txt 2>&1
  $CUOBJ -sass -fun ntt_inv_gp .gpu/exp5/bench_$v > $OUT/logs/sass-$v-inv.txt 2>&1
  echo "$v sass rc=$? $(wc -l < $OUT/logs/sass-$v-fwd.txt) / $(wc -l < $OUT/logs/sass-$v-inv.txt) lines;" \
    "LDG: $(grep -c 'LDG' $OUT/logs/sass-$v-fwd.txt) STG: $(grep -c 'STG' $OUT/logs/sass-$v-fwd.txt)"
  grep -oE '(LDG|STG)[A-Z0-9.]*' $OUT/logs/sass-$v-fwd.txt | sort | uniq -c
done
finish
