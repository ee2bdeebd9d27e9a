#!/bin/bash
# Run 165 (thirty-first session): the engine at 520912e (grid rows rotated, 6950f13; the
# inverse's gate opened after group 0's second first-phase round, runs 163-164) against
# gpu_oplat_old = de2676b (the session's start): correctness (gpu_ops, racecheck and memcheck of
# the NTT tests: the gate moved), gpu_oplat new / old alternated, then, if the limit holds it,
# FHElium built and timed with new / old / new after a table each. Carry [".gpu/bin/f", ".peer"]
# (`bash docs/runs/next/make-bundle-f.sh`, then de2676b's gpu_oplat copied in as gpu_oplat_old).
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/f
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader; cat $W/COMMIT
r gpu_ops $W/gpu_ops --test-threads=1
need 40 racecheck && r racecheck-ntt /usr/local/cuda/bin/compute-sanitizer --tool racecheck $W/gpu_ops --test-threads=1 ntt_both_directions_match_cpu
need 20 memcheck && r memcheck-ntt /usr/local/cuda/bin/compute-sanitizer --tool memcheck $W/gpu_ops --test-threads=1 ntt_both_directions paired_ntts_between
oplat() {  # oplat BIN [FHELIUM_TABLE]
  local n=$1-$(date +%s)
  FHELIUM_PEER_OPLAT=${2:-} timeout 30 $W/$1 --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "$n rc=$?"
  grep -E '^(coefficient_to_ntt|ntt_to_coefficient|multiply_plaintext|rotate_with_key) +[0-9]' $OUT/logs/oplat-$n.log | tr -s ' ' | cut -d' ' -f1-2,5-8
}
for b in gpu_oplat gpu_oplat_old gpu_oplat gpu_oplat_old; do need 15 "oplat $b" && oplat $b; done
if need 220 peer; then
  echo "== peer"; t0=$(date +%s); timeout $(( $(left) - 30 )) bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
  export FHELIUM_BENCH_DEVICE=0 PYTHONPATH=/tmp/peer-fh:/tmp/peer-site
  for b in gpu_oplat gpu_oplat_old gpu_oplat; do
    need 15 "peer oplat $b" || break
    f=$OUT/logs/F-$b-$(date +%s).txt
    timeout 45 python3 .peer/fhelium_oplat.py > $f 2>&1; echo "F rc=$?: $(grep -E '^(coefficient_to_ntt|ntt_to_coefficient) ' $f | tr -s ' ' | tr '\n' ' ')"
    oplat $b $f
  done
fi
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
