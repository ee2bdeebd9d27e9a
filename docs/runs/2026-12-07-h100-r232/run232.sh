#!/bin/bash
# Run 232 (forty-third session): why the engine's prime layout (WIDE=7, the 60-bit prime last)
# costs ~0.2 us per paired launch against the wide prime first (run 230). Nsight Compute on
# bench_xchbatch (facc799's kernels), rows 46 / 48, one launch after the warm-ups, each layout:
# duration, per-SM active cycles and instructions (avg / max), the busiest scheduler's issue
# share. Carry [".gpu/exp8"], LIMIT=150.
set -u
. docs/runs/common.sh
header
NCU=$(ls /usr/local/cuda/bin/ncu 2>/dev/null || command -v ncu)
M=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_active.min,sm__inst_executed.avg,sm__inst_executed.max,smsp__issue_active.max.pct_of_peak_sustained_active,lts__t_sectors.sum,dram__bytes.sum
for lay in 7 0; do
  for k in ntt_fwd_gp ntt_inv_gp; do
    need 25 "$lay $k" || break
    row=46; [ $k = ntt_inv_gp ] && row=48
    WIDE=$lay ROWS=$row timeout 60 $NCU --clock-control none -k regex:"^$k\$" -s 60 -c 3 --metrics $M \
      .gpu/exp8/bench_xchbatch 8 2 > $OUT/logs/ncu-w$lay-$k.txt 2>&1
    echo "== WIDE=$lay $k rc=$?"; grep -E "gpu__time_duration|sm__cycles_active|sm__inst_executed|issue_active|lts__t_sectors|dram__bytes" $OUT/logs/ncu-w$lay-$k.txt | tr -s ' ' | sed -n 1,27p
  done
done
finish
