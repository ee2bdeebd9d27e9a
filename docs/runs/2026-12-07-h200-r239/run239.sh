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
#   for v in base gpmarks; do $NV/bin/nvcc -arch=sm_90 -O3 -I/tmp/e13/$v -L$NV/lib \
#     kernels/bench/ntt_bench.cu -o .gpu/exp13/bench_$v; done
# Carry [".gpu/bin/f", ".gpu/exp13", ".gpu/peer", ".peer"], LIMIT=300 (LIMIT=540 when
# .gpu/peer/peer-build.tgz is missing: FHElium is then built in the call, ~2-4 min).
set -u
. docs/runs/common.sh
header
gpu_tests .gpu/bin/f
W=.gpu/bin/f peer_oplat gpu_oplat gpu_oplat gpu_oplat
# (3) The harness's paired rows with the engine's primes and kernels (GPN=1: ntt_fwd_gpn /
# ntt_inv_gpn; GPN=0: *_gp) alternated 0 1 1 0, then the per-group timeline (gpmarks) of the
# *_gpn kernels: how much of the span the wide rows still take after decision 0515.
i=0
for g in 0 1 1 0; do
  i=$((i + 1)); need 20 "gpn $i" || break
  GPN=$g WIDED=37 WIDE=7,8 ROWS=46-49 timeout 60 .gpu/exp13/bench_base 8 2 > $OUT/logs/gpn-$i-$g.txt 2>&1
  echo "== GPN=$g ($i) rc=$?"; grep -E " burst_us |^hash" $OUT/logs/gpn-$i-$g.txt
done
for g in 1 0; do
  need 20 "gpmarks $g" || break
  GPN=$g WIDED=37 WIDE=7,8 ROWS=46,48 timeout 60 .gpu/exp13/bench_gpmarks 8 2 > $OUT/logs/gpmarks-$g.txt 2>&1
  echo "== gpmarks GPN=$g rc=$?"; grep -E "^(fwd|inv)-gp|^gpmarks|^hash" $OUT/logs/gpmarks-$g.txt
done
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
