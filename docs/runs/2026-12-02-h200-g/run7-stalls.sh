#!/bin/bash
# Run 7: GlobalSync default; stall reasons and hot spots of ntt_inv_gs / ntt_fwd_gs.
set -u
cd "$(dirname "$0")/.."
export FHELIUM_REQUIRE_GPU=1
B=.gpu/bin
r() { local name=$1; shift; timeout 200 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E '^test result|FAILED|panicked|refused' $OUT/$name.log | head -5; }
r gpu_ops $B/gpu_ops --test-threads=1 --nocapture
r gpu_encrypt $B/gpu_encrypt --test-threads=1
r gpu_oplat $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/gpu_oplat.log | head -24
for k in ntt_inv_gs ntt_fwd_gs; do
  timeout 100 ncu --clock-control none --cache-control none -k $k --launch-skip 0 --launch-count 1 --section WarpStateStats --section SourceCounters --section InstructionStats --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" $B/gpu_ops --test-threads=1 ntt_both > $OUT/ncu_$k.txt 2>&1
  echo "=== $k rc=$?"; grep -E "issue_stalled" $OUT/ncu_$k.txt | awk '$NF+0 > 0.05' | sort -k3 -g -r | head -12
done
ptxas -arch=sm_90 -O3 .gpu/ckks.ptx -o $OUT/ckks.cubin && cuobjdump -sass -fun ntt_inv_gs $OUT/ckks.cubin > $OUT/sass_inv_gs.txt; rm -f $OUT/ckks.cubin; wc -l $OUT/sass_inv_gs.txt
cd $OUT && tar czf logs.tgz *.txt *.log; rm -f *.log *.txt; ls $OUT
