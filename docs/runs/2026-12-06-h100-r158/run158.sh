#!/bin/bash
# Run 158: the engine of the binary64 paired kernels (decision 0511, wide prime's rows
# transposed; run 157 measured it on an H100) on the machine, an H200: correctness,
# FHElium built and timed in the same call, then gpu_oplat new / old alternated with an FHElium
# table before each, new first and last. Carry [".gpu/bin/f", ".peer"]
# (`bash docs/runs/next/make-bundle-f.sh`).
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/f
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; cat $W/COMMIT
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r example_parity $W/example_parity --test-threads=1
if need 240 peer; then
  echo "== peer"; t0=$(date +%s); timeout $(( $(left) - 120 )) bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
  export FHELIUM_BENCH_DEVICE=0 PYTHONPATH=/tmp/peer-fh:/tmp/peer-site
  for b in gpu_oplat gpu_oplat_old gpu_oplat gpu_oplat gpu_oplat_old gpu_oplat gpu_oplat; do
    [ -x $W/$b ] || continue
    need 60 "oplat $b" || break
    n=$b-$(date +%s)
    timeout 45 python3 .peer/fhelium_oplat.py > $OUT/logs/F-$n.txt 2>&1; echo "F-$n rc=$?: $(grep -E '^(coefficient_to_ntt|ntt_to_coefficient) ' $OUT/logs/F-$n.txt | tr -s ' ' | tr '\n' ' ')"
    FHELIUM_PEER_OPLAT=$OUT/logs/F-$n.txt timeout 30 $W/$b --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "$n rc=$?"; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | head -10 | tr -s ' ' | cut -d' ' -f1-2,5-8
  done
fi
need 20 memcheck && r memcheck-ntt /usr/local/cuda/bin/compute-sanitizer --tool memcheck $W/gpu_ops --test-threads=1 ntt_both_directions paired_ntts_between
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
