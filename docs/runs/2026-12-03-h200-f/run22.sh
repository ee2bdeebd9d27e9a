#!/bin/bash
# Run 22: L2 prefetch variants for key switching's inner product (harness rows ks-*).
set -u
cd .gpu/r21
for v in base kspf kspfk mupf mupfks base kspf mupf mupfks; do echo "== $v"; ./bench_$v | grep -E "ks-|hash|fwd  "; done > $OUT/r22.txt 2>&1
cat $OUT/r22.txt
M=""
for r in barrier long_scoreboard short_scoreboard math_pipe_throttle wait mio_throttle lg_throttle not_selected selected dispatch_stall membar branch_resolving no_instruction drain imc_miss sleeping tex_throttle misc; do
  M="$M,smsp__average_warps_issue_stalled_${r}_per_issue_active.ratio"
done
M="${M#,},smsp__inst_executed_pipe_alu.sum,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_fmaheavy.sum,smsp__inst_executed_pipe_lsu.sum,smsp__inst_executed_pipe_uniform.sum,smsp__inst_executed.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__cycles_active.avg,sm__cycles_elapsed.avg"
for k in ntt_fwd_gs ntt_fwd_cl ks_inner_cl; do
  s=60; [ $k = ntt_fwd_cl ] && s=10
  timeout 100 ncu --clock-control none --metrics $M -k regex:"^$k\$" -s $s -c 1 ./bench_base > $OUT/stall_$k.txt 2>&1
  echo "ncu $k rc=$?"; grep -E "stalled|pipe|conflict|cycles" $OUT/stall_$k.txt | sed 's/smsp__average_warps_issue_stalled_//'
done
