#!/bin/bash
# Run 74: ncu of the ModUp queue kernel ntt_fwd_gq, to find what the balanced lift costs it
# (modup-gq-noaut 26.1 us against modup-gq-raw 23.4): main's kernel (bench_old) with the lift
# (row 16, launch 1321 of the kernel) and raw (row 17, launch 1971), and the dropped
# InWords + pre-kind kernel (bench_pk) with the lift. Details page (stall reasons, issue
# slots) and the SASS source page with stall samples.
set -u
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
t0=$(date +%s)
for job in old:1320:lift old:1970:raw pk:1320:lift; do
  IFS=: read b skip tag <<< "$job"; n=$b-$tag
  (cd $X && timeout 120 ncu --clock-control none -k ntt_fwd_gq -s $skip -c 1 --set full --import-source yes -o $OUT/logs/ncu-$n ./bench_$b 8 2 > $OUT/logs/ncu-$n.log 2>&1)
  echo "$n rc=$? ($(( $(date +%s)-t0 )) s)"
  ncu -i $OUT/logs/ncu-$n.ncu-rep --page source --csv --print-source sass > $OUT/logs/src-$n.csv 2>&1
  ncu -i $OUT/logs/ncu-$n.ncu-rep --page details > $OUT/logs/det-$n.txt 2>&1
  grep -E "^ +(Duration|Issue Slots Busy|Executed Ipc Active|Registers Per Thread|Achieved Occupancy|Warp Cycles Per Issued Instruction|L2 Hit Rate|Memory Throughput|Executed Instructions) " $OUT/logs/det-$n.txt | head -12
  rm -f $OUT/logs/ncu-$n.ncu-rep
done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
