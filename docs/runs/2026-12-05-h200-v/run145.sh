#!/bin/bash
# Run 145 (twenty-fourth session, 2026-12-05). .gpu/bin/v holds the binaries of the commit in
# .gpu/bin/v/COMMIT: the twenty-third session's code plus
#   - the 72-row signed NTT of device key generation on ntt_fwd_gq (the work-queue kernel)
#     instead of the cluster path (predicted: rotation_key_on_device 80 -> ~55 us);
#   - encode_for_multiplication lifting the int64 coefficients in the NTT's loads (no enc_lift
#     launch; predicted -2 to -4 us);
#   - the examples' CUDA backend with device-made keys (examples_lib: a new test);
#   - 3-component NTTs (24 limbs at level 0, more than one cooperative wave) now on ntt_fwd_gq
#     as well;
#   - the encode / decode FFT kernels (enc_rows_sample, enc_cols, dec_rows, dec_cols) issuing
#     all their global loads before the first wait (predicted -0.5 to -1.5 us per kernel).
# gpu_oplat_z: the binary of d2e3db9 (runs 142-144) for the A/B.
# 1. correctness: gpu_ops, gpu_encrypt, example_parity, examples_lib, cuda_lib, gpu_memory,
#    the three examples; 2. ncu kernel durations of key generation and encode;
# 3. A/B gpu_oplat_z vs gpu_oplat, passes alternated. Carry [".gpu/bin/v"].
set -u
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/v
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cat $W/COMMIT
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r example_parity $W/example_parity --test-threads=1
r examples_lib $W/examples_lib --test-threads=1
r cuda_lib $W/cuda_lib --test-threads=1
r gpu_memory $W/gpu_memory --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $W/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
CS=/usr/local/cuda/bin/compute-sanitizer
r memcheck-encdec $CS --tool memcheck $W/gpu_encrypt --test-threads=1 decrypt_message_on_the_device complex_messages plaintexts_encoded encrypt_message_on_the_device
r racecheck-encdec $CS --tool racecheck $W/gpu_encrypt --test-threads=1 decrypt_message_on_the_device complex_messages plaintexts_encoded
r memcheck-keys $CS --tool memcheck $W/gpu_ops --test-threads=1 keys_made_on_the_device
NCU=$(ls /usr/local/cuda/bin/ncu 2>/dev/null || command -v ncu)
(timeout 90 $NCU --clock-control none --metrics gpu__time_duration.sum,launch__grid_size --csv --launch-count 40 -k regex:"ksk_|ntt_fwd" $W/gpu_ops --test-threads=1 keys_made_on_the_device > $OUT/logs/ncu_keygen.csv 2> $OUT/logs/ncu_keygen.err; echo "ncu keygen rc=$?")
(timeout 90 $NCU --clock-control none --metrics gpu__time_duration.sum,launch__grid_size --csv --launch-count 40 -k regex:"enc_|ntt_fwd" $W/gpu_encrypt --test-threads=1 plaintexts_encoded > $OUT/logs/ncu_encode.csv 2> $OUT/logs/ncu_encode.err; echo "ncu encode rc=$?")
(timeout 90 $NCU --clock-control none --metrics gpu__time_duration.sum,launch__grid_size --csv --launch-count 30 -k regex:"dec_|enc_|ntt_" $W/gpu_encrypt --test-threads=1 decrypt_message_on_the_device > $OUT/logs/ncu_decrypt.csv 2> $OUT/logs/ncu_decrypt.err; echo "ncu decrypt rc=$?")
for f in keygen encode decrypt; do grep -E '"(ksk_|ntt_|enc_|dec_)' $OUT/logs/ncu_$f.csv | awk -F'","' '{print $5, $(NF-2), $NF}' | head -40; done
export FHELIUM_BENCH_DEVICE=0
for n in z1 v1 z2 v2; do
  b=$W/gpu_oplat; [ "${n#z}" != "$n" ] && b=$W/gpu_oplat_z
  timeout 60 $b --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "$n rc=$?"
  grep -E '^(rotate_with_key|coefficient_to_ntt|ntt_to_coefficient|relinearize|encrypt_message|decrypt_message|multiply_ct_ct|rotation_key_on_device|encode_for_multiplication|encrypt_complex_message|decrypt_complex_message) ' $OUT/logs/oplat-$n.log | tr -s ' ' | cut -d' ' -f1-4,7-8
done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
