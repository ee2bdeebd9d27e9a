#!/bin/bash
# Run 151 (twenty-eighth session, did not get a machine): compute-sanitizer memcheck and
# racecheck of the device encryption path whose allocation order changed in 50572ed (the key
# is drawn after both allocations and the upload). Run 150 passed these tests bit-exact on an
# H100; the sanitizers have not run on them yet.
# Carry [".gpu/bin/z"] (build: bash docs/runs/next/make-bundle-y.sh, then .gpu/bin/z as in
# docs/NOTES.md). About 1-3 minutes.
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/z
S=/usr/local/cuda/bin/compute-sanitizer
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
cat $W/COMMIT
for t in refused_device_encryptions encrypt_message_on_the_device_matches \
  encrypt_of_a_host_plaintext complex_messages_match; do
  timeout 150 $S --tool memcheck $W/gpu_encrypt --test-threads=1 $t > $OUT/mc-$t.log 2>&1
  echo "memcheck $t rc=$?"
  grep -E "^test result|ERROR SUMMARY" $OUT/mc-$t.log
done
timeout 200 $S --tool racecheck $W/gpu_encrypt --test-threads=1 refused_device_encryptions > $OUT/rc.log 2>&1
echo "racecheck rc=$?"
grep -E "^test result|RACECHECK SUMMARY|hazard" $OUT/rc.log | head -5
