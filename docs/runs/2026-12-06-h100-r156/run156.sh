#!/bin/bash
# Run 156 (thirtieth session): the paired NTT kernels with binary64 butterflies for the primes
# below 2^41 and limb rows 0 and 1 transposed (decision 0511), on the device, in order of value,
# each step skipped when the call's limit would not hold it. Carry [".gpu/bin/f", ".gpu/exp", ".peer"]:
# .gpu/bin/f = stripped gpu_ops, gpu_encrypt, gpu_oplat, example_parity of this tree
# (`cargo xtask gpu-bundle`), gpu_oplat_old = d00e79c's (.gpu/bin/z); .gpu/exp = run155.sh's
# harness binaries (bench_new = this tree's kernels/ckks.cu).
# In order (device time was scarce): gpu_ops (bit-exactness); run155.sh (the harness rows: base /
# new / fp64 / mixg / mixg1, new's hashes = base's); FHElium built and timed, then gpu_oplat new
# / old alternated, each after an FHElium table; gpu_encrypt; memcheck and racecheck of the NTT
# tests; example_parity.
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-585}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
need() { [ "$(left)" -ge "$1" ] || { echo "skip $2 ($(left) s left)"; return 1; }; }
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/f
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 150 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $W/gpu_ops --test-threads=1
need 120 probes && { OUT=$OUT/probes bash -c 'mkdir -p $OUT; bash docs/runs/next/run155.sh'; mv $OUT/probes/logs.tgz $OUT/logs/probes.tgz 2>/dev/null; }
if need 180 peer; then
  echo "== peer"; t0=$(date +%s); timeout $(( $(left) - 100 )) bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
  export FHELIUM_BENCH_DEVICE=0 PYTHONPATH=/tmp/peer-fh:/tmp/peer-site
  for b in gpu_oplat gpu_oplat_old gpu_oplat gpu_oplat_old gpu_oplat; do
    need 90 "oplat $b" || break
    n=$b-$(date +%s)
    timeout 45 python3 .peer/fhelium_oplat.py > $OUT/logs/F-$n.txt 2>&1; echo "F-$n rc=$?: $(grep -E '^(coefficient_to_ntt|ntt_to_coefficient) ' $OUT/logs/F-$n.txt | tr -s ' ' | tr '\n' ' ')"
    FHELIUM_PEER_OPLAT=$OUT/logs/F-$n.txt timeout 30 $W/$b --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "$n rc=$?"; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | head -16 | tr -s ' ' | cut -d' ' -f1-2,5-8
  done
fi
need 60 gpu_encrypt && r gpu_encrypt $W/gpu_encrypt --test-threads=1
need 50 memcheck && r memcheck-ntt /usr/local/cuda/bin/compute-sanitizer --tool memcheck $W/gpu_ops --test-threads=1 ntt_both_directions paired_ntts_between
need 40 racecheck && r racecheck-ntt /usr/local/cuda/bin/compute-sanitizer --tool racecheck $W/gpu_ops --test-threads=1 ntt_both_directions_match_cpu
need 25 example_parity && r example_parity $W/example_parity --test-threads=1
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
