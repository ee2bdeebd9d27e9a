#!/bin/bash
# Run 21 (seventh session): throughput scan of the cluster NTT kernels, ncu profiles of the
# NTT and key-switch kernels in the harness.
set -u
cd .gpu/r21
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
(./bench_base scan; ./bench_noarith scan) > $OUT/scan.txt 2>&1; cat $OUT/scan.txt
S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats --section InstructionStats --section MemoryWorkloadAnalysis"
for k in ntt_fwd_gs ntt_inv_gs ntt_fwd_cl ks_inner_cl; do
  s=60; [ $k = ntt_fwd_cl ] && s=10
  timeout 100 ncu --clock-control none $S -k regex:"^$k\$" -s $s -c 1 ./bench_base > $OUT/ncu_$k.txt 2>&1
  echo "ncu $k rc=$?"
done
cd $OUT && tar czf r21.tgz *.txt && ls
