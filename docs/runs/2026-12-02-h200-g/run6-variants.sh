#!/bin/bash
# Run 6: one cooperative launch without clusters (gsync) against the rest.
set -u
cd "$(dirname "$0")/.."
export FHELIUM_REQUIRE_GPU=1
B=.gpu/bin
r() { local name=$1; shift; timeout 200 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E '^test result|FAILED|panicked|refused' $OUT/$name.log | head -5; }
r gpu_ops $B/gpu_ops --test-threads=1 --nocapture
r gpu_oplat $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/gpu_oplat.log | head -40
for k in ntt_fwd_gs ntt_inv_gs; do
  timeout 100 ncu --clock-control none --cache-control none -k $k --launch-skip 0 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats --section ComputeWorkloadAnalysis $B/gpu_ops --test-threads=1 ntt_both > $OUT/ncu_$k.txt 2>&1
  echo "=== $k rc=$?"; grep -E "\)x\(|Duration|Elapsed Cycles|SM Active Cycles|Registers Per|Issued Ipc Active|No Eligible|Achieved Active Warps" $OUT/ncu_$k.txt | head -9
  grep -E "cycles being stalled" $OUT/ncu_$k.txt | head -3
done
r memcheck compute-sanitizer --tool memcheck $B/gpu_ops --test-threads=1 ntt_both
grep -E "SUMMARY" $OUT/racecheck.log
cd $OUT && tar czf logs.tgz *.txt *.log; rm -f *.log *.txt; ls $OUT
