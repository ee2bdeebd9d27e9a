#!/bin/bash
# Run 168: Nsight Compute on the paired NTT kernels in the harness (rows 46 / 48, one launch
# each after the warm-ups), base (HEAD's kernels) against allf64 (run 166's bound: the wide
# prime's groups in binary64, wrong words): issue slots, pipe use (fma = IMAD, fp64, alu),
# stalls, and the spread of SM-active cycles (max against average: how much the slowest SMs,
# the mixed blocks', trail the rest). Carry [".gpu/exp2"], LIMIT=240.
set -u
. docs/runs/common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
NCU=$(ls /usr/local/cuda/bin/ncu 2>/dev/null || command -v ncu)
echo "ncu: $NCU"
M="sm__cycles_active.max,sm__cycles_active.avg,sm__cycles_active.min"
M="$M,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__issue_active.max.pct_of_peak_sustained_active"
M="$M,sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fma.max.pct_of_peak_sustained_active"
M="$M,sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_fp64.max.pct_of_peak_sustained_active"
M="$M,sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_alu.max.pct_of_peak_sustained_active"
M="$M,sm__inst_executed_pipe_fmaheavy.avg.pct_of_peak_sustained_active,sm__inst_executed.max,sm__inst_executed.avg"
for v in base allf64; do
  for k in ntt_fwd_gp ntt_inv_gp; do
    need 40 "$v $k" || break
    row=46; [ $k = ntt_inv_gp ] && row=48
    echo "== $v $k (row $row)"
    ROWS=$row timeout 100 $NCU --clock-control none -k regex:"^$k\$" -s 60 -c 1 \
      --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis \
      --metrics "$M,regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" \
      .gpu/exp2/bench_$v 8 2 > $OUT/logs/ncu-$v-$k.txt 2>&1
    echo "rc=$?"; grep -E "Duration|Elapsed Cycles|sm__cycles_active|issue_active|pipe_|inst_executed\.|stalled_(barrier|long_scoreboard|short_scoreboard|wait|math_pipe|mio|lg|membar|branch|dispatch|no_inst|not_selected|selected)" $OUT/logs/ncu-$v-$k.txt | tr -s ' ' | head -40
  done
done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
