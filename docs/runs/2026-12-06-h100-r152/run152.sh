#!/bin/bash
# Run 152 (twenty-ninth session): run151.sh's sanitizers (memcheck + racecheck of the device
# encryption path whose allocation order changed in 50572ed), then, time allowing, FHElium
# built and timed in the same call and gpu_oplat after each of two FHElium tables (issue 7's
# same-call sample; the last one on an H200 is run 147, on an H100 run 150). No engine or
# kernel code changed since run 150 (50572ed): the figures are a fresh sample, not a change.
# Carry [".gpu/bin/z", ".peer"]. About 4-7 minutes.
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-585}
left() { echo $(( LIMIT - ($(date +%s) - T0) )); }
need() { [ "$(left)" -ge "$1" ] || { echo "skip $2 ($(left) s left)"; return 1; }; }
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/z
S=/usr/local/cuda/bin/compute-sanitizer
mkdir -p $OUT/logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cat $W/COMMIT
for t in refused_device_encryptions encrypt_message_on_the_device_matches \
  encrypt_of_a_host_plaintext complex_messages_match; do
  timeout 150 $S --tool memcheck $W/gpu_encrypt --test-threads=1 $t > $OUT/logs/mc-$t.log 2>&1
  echo "memcheck $t rc=$?"
  grep -E "^test result|ERROR SUMMARY" $OUT/logs/mc-$t.log
done
timeout 200 $S --tool racecheck $W/gpu_encrypt --test-threads=1 refused_device_encryptions > $OUT/logs/rc.log 2>&1
echo "racecheck rc=$?"
grep -E "^test result|RACECHECK SUMMARY|hazard" $OUT/logs/rc.log | head -5
if need 240 peer; then
  echo "== peer"; t0=$(date +%s); timeout $(( $(left) - 40 )) bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
  cat $OUT/peer-oplat.txt 2>/dev/null | head -14
  export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt FHELIUM_BENCH_DEVICE=0
  timeout 40 $W/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/oplat-1.log 2>&1; echo "ours-1 rc=$?"; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-1.log | head -16 | tr -s ' ' | cut -d' ' -f1-2,5-8
  export PYTHONPATH=/tmp/peer-fh:/tmp/peer-site
  for i in 2 3; do
    need 50 "pass $i" || break
    timeout 45 python3 .peer/fhelium_oplat.py > $OUT/logs/F-$i.txt 2>&1; echo "F-$i rc=$?: $(grep -E '^(coefficient_to_ntt|ntt_to_coefficient) ' $OUT/logs/F-$i.txt | tr -s ' ' | tr '\n' ' ')"
    FHELIUM_PEER_OPLAT=$OUT/logs/F-$i.txt timeout 30 $W/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/oplat-$i.log 2>&1; echo "ours-$i rc=$?"; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$i.log | head -10 | tr -s ' ' | cut -d' ' -f1-2,5-8
  done
fi
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
