#!/bin/bash
# Run 17 (sixth session): launch-submission variants, the shfl NTT kernels (c97c886) against
# the previous ones in the harness, gpu_ops/gpu_encrypt on c97c886, racecheck of the NTTs,
# FHElium built and timed in the same call with our oplat (new and old PTX) right after it.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
B=$R/.gpu/r17
r() { local name=$1; shift; timeout 150 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E '^test result|FAILED|panicked|refused' $OUT/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cd $R/.gpu/exp
(echo "== launch"; ./launch_bench
 for v in base shfl base shfl; do echo "== $v"; ./bench_$v; done
 echo "== launch"; ./launch_bench) > $OUT/exp17.txt 2>&1
cat $OUT/exp17.txt
cd $R
r gpu_ops $B/gpu_ops --test-threads=1
r gpu_encrypt $B/gpu_encrypt --test-threads=1
r racecheck compute-sanitizer --tool racecheck $B/gpu_ops --test-threads=1 ntt_both
grep -E "SUMMARY" $OUT/racecheck.log
echo "== peer"; timeout 300 bash .peer/build-and-time.sh .peer > $OUT/peer-run.log 2>&1; echo "peer rc=$?"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
r oplat_new $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/oplat_new.log
r oplat_old $B/gpu_oplat_old --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/oplat_old.log
r oplat_new2 $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/oplat_new2.log
rm -f $OUT/peer-build.log
cd $OUT && tar czf logs17.tgz *.log *.txt 2>/dev/null; ls $OUT
