#!/bin/bash
# Run 157 (prepared in the thirtieth session, not run: the session's device time was spent).
# Run 156 found the binary64 paired kernels exact on the GPU and 0.6 / 0.4 us faster per launch in
# the harness, but no faster in the engine: the engine's chains end with the 60-bit base prime,
# whose rows the measured build did not transpose. Since d9961f3 the two rows around the wide
# prime are transposed (decision 0511). This run: correctness of that form on the GPU, then the
# engine against FHElium in the same call (issue 7's table), then the sanitizers.
# Carry [".gpu/bin/f", ".peer"]: `bash docs/runs/next/make-bundle-f.sh` (gpu_ops, gpu_encrypt,
# gpu_oplat, example_parity of the working tree; gpu_oplat_old = d00e79c's, if built).
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/f
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; cat $W/COMMIT
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r example_parity $W/example_parity --test-threads=1
if need 240 peer; then
  # build-and-time.sh builds FHElium (~2-3 min) and writes its first table to $OUT/peer-oplat.txt.
  echo "== peer"; t0=$(date +%s); timeout $(( $(left) - 120 )) bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
  export FHELIUM_BENCH_DEVICE=0 PYTHONPATH=/tmp/peer-fh:/tmp/peer-site
  for b in gpu_oplat gpu_oplat_old gpu_oplat gpu_oplat_old gpu_oplat; do
    [ -x $W/$b ] || continue
    need 100 "oplat $b" || break
    n=$b-$(date +%s)
    timeout 45 python3 .peer/fhelium_oplat.py > $OUT/logs/F-$n.txt 2>&1; echo "F-$n rc=$?: $(grep -E '^(coefficient_to_ntt|ntt_to_coefficient) ' $OUT/logs/F-$n.txt | tr -s ' ' | tr '\n' ' ')"
    FHELIUM_PEER_OPLAT=$OUT/logs/F-$n.txt timeout 30 $W/$b --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "$n rc=$?"; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | head -10 | tr -s ' ' | cut -d' ' -f1-2,5-8
  done
fi
need 60 memcheck && r memcheck-ntt /usr/local/cuda/bin/compute-sanitizer --tool memcheck $W/gpu_ops --test-threads=1 ntt_both_directions paired_ntts_between
need 40 racecheck && r racecheck-ntt /usr/local/cuda/bin/compute-sanitizer --tool racecheck $W/gpu_ops --test-threads=1 ntt_both_directions_match_cpu
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
