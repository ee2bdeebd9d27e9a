#!/bin/bash
# Run 108: Nsight Compute on the engine's paired NTT kernels (component pipelines, main at
# 7ce307e) in the harness (bench_base, rows 46 / 48): speed of light, warp states, the stall
# split, memory workload, one launch each after the warm-ups; why the inverse takes ~0.3 us
# more GPU time than the forward.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
NCU=$(ls /usr/local/cuda/bin/ncu 2>/dev/null || command -v ncu)
echo "ncu: $NCU"
for k in ntt_fwd_gp ntt_inv_gp; do
  row=46; [ $k = ntt_inv_gp ] && row=48
  echo "== $k (row $row)"
  ROWS=$row timeout 200 $NCU --clock-control none -k regex:"^$k\$" -s 60 -c 1 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    --section MemoryWorkloadAnalysis --section SchedulerStats --section InstructionStats \
    --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
    .gpu/exp/bench_base 8 2 > $OUT/ncu-$k.txt 2>&1
  echo "rc=$?"; grep -E "Duration|Elapsed Cycles|SM Active Cycles|Issued Ipc Active|Executed Ipc|Registers|Achieved Occupancy|Memory Throughput|DRAM Throughput|L2 Hit|stalled_(barrier|long_scoreboard|short_scoreboard|wait|math|mio|lg|membar|branch|dispatch|no_inst|not_selected|selected|sleeping|drain|tex|misc|imc)" $OUT/ncu-$k.txt | head -40
done
