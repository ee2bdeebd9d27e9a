#!/bin/bash
# Run 239 (prepared in the forty-fifth session, not yet run): (1) FHElium (prebuilt) beside
# decision 0515's engine, three tables, each with a gpu_oplat pass beside it: the same-call
# ratio run 238 could not take; (2) where the key switch's two-arithmetic kernels wait:
# Nsight Compute source counters of ntt_fwd_gq (harness row 14, ks-modup-gq) and ks_inner_gs
# (row 12, ks-inner-gs) in the engine's shape (WIDE=7,8, WIDED=37), one launch after 60 each,
# the per-instruction tables as CSV (split them at the EXIT lines and sum the stall_* columns:
# stall_no_inst is instruction fetch; run 237 is the reading).
# Before the call: `bash docs/runs/next/make-bundle-f.sh` (HEAD's engine into .gpu/bin/f), and
# the harness with HEAD's kernels:
#   python3 kernels/bench/variants.py /tmp/e13 && mkdir -p .gpu/exp13 &&
#   $NV/bin/nvcc -arch=sm_90 -O3 -I/tmp/e13/base -L$NV/lib kernels/bench/ntt_bench.cu -o .gpu/exp13/bench_base
# Carry [".gpu/bin/f", ".gpu/exp13", ".gpu/peer", ".peer"], LIMIT=300.
set -u
. docs/runs/common.sh
header
gpu_tests .gpu/bin/f
W=.gpu/bin/f peer_oplat gpu_oplat gpu_oplat gpu_oplat
NCU=$(ls /usr/local/cuda/bin/ncu 2>/dev/null || command -v ncu)
for k in ntt_fwd_gq:14 ks_inner_gs:12; do
  need 30 "ncu $k" || break
  WIDED=37 WIDE=7,8 ROWS=${k#*:} timeout 90 $NCU --clock-control none -k regex:"^${k%%:*}\$" -s 60 -c 1 \
    --section SourceCounters --section WarpStateStats -o $OUT/${k%%:*} .gpu/exp13/bench_base 8 2 > $OUT/logs/ncu-${k%%:*}.txt 2>&1
  timeout 60 $NCU --import $OUT/${k%%:*}.ncu-rep --page source --csv --print-source sass > $OUT/${k%%:*}-sass.csv 2>&1
  echo "== ncu ${k%%:*} rc=$? $(wc -l < $OUT/${k%%:*}-sass.csv) lines"
  rm -f $OUT/${k%%:*}.ncu-rep
done
finish
