#!/bin/bash
# Run 191: decision 0512 (binary64 butterflies in the *_gs / work-queue NTTs) in the engine.
# gpu_oplat of the kernels before it (.gpu/bin/f0, 5ca065f) and after (.gpu/bin/f, 34b431d)
# alternated twice; compute-sanitizer memcheck and racecheck on the tests that run the new
# paths (key switching, hoisting, the *_gs NTTs); then FHElium built and timed, with gpu_oplat
# passes of the new build beside its tables. Carry [".gpu/bin/f", ".gpu/bin/f0", ".peer"],
# LIMIT=560.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f0/COMMIT $W/COMMIT
rows='^(encrypt_message|rotate_with_key|coefficient_to_ntt|ntt_to_coefficient|decrypt_message|example14_stage|relinearize|rotate_many_with_keys/4|rotate_x4_one_by_one|encode_for_multiplication|rotation_key_on_device|multiply_plaintext) +[0-9]'
for i in 1 2; do
  for b in f0 f; do
    timeout 30 .gpu/bin/$b/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/ab-$b-$i.log 2>&1; echo "== $b $i rc=$?"
    grep -E "$rows" $OUT/logs/ab-$b-$i.log | tr -s ' ' | cut -d' ' -f1-2,7-8
  done
done
SAN=/usr/local/cuda/bin/compute-sanitizer
need 300 memcheck && r memcheck-ks $SAN --tool memcheck $W/gpu_ops --test-threads=1 rotate_with_key_matches multiply_and_relinearize hoisted_rotations plaintext_domain_transitions ntt_both_directions keys_made_on_the_device
need 300 racecheck && r racecheck-ks $SAN --tool racecheck $W/gpu_ops --test-threads=1 multiply_and_relinearize plaintext_domain_transitions
peer_oplat gpu_oplat gpu_oplat gpu_oplat
finish
