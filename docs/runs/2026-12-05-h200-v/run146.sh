#!/bin/bash
# Run 146 (twenty-fourth session). .gpu/bin/w = the commit in .gpu/bin/w/COMMIT (2484d0d):
# run 145's code (ede0c74) plus
#   (a) chain graphs with branches (7faa86b): encrypt's FFT column pass (enc_cols) runs beside
#       v's NTT, v-hat x pk and the inverse NTT; enc_add_err joins them (predicted: encrypt
#       -3 to -4 us per call);
#   (b) one-component NTTs on the paired kernels with one group (128 threads) per block, 16
#       blocks per limb instead of 8 (dfc584a): encrypt's v NTT, decrypt's two tail rows both
#       ways (predicted: encrypt a further -1 to -3 us, decrypt -2 to -4 us; the ciphertext
#       NTT ops unchanged).
# gpu_oplat_145 (ede0c74), gpu_oplat_146 (7faa86b: (a) only), gpu_oplat (2484d0d: (a) + (b)).
# 1. correctness: gpu_encrypt (chains on and off, paired-launch counts), gpu_ops,
#    example_parity, examples_lib, the three examples; memcheck and racecheck of the encrypt
#    and decrypt tests (two kernels at once; the one-group paired kernels' shared memory);
# 2. A/B/C alternated twice. Carry [".gpu/bin/w"].
set -u
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/w
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cat $W/COMMIT
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r gpu_ops $W/gpu_ops --test-threads=1
r example_parity $W/example_parity --test-threads=1
r examples_lib $W/examples_lib --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $W/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
CS=/usr/local/cuda/bin/compute-sanitizer
r memcheck-encdec $CS --tool memcheck $W/gpu_encrypt --test-threads=1 encrypt_message_on_the_device decrypt_message_on_the_device complex_messages encrypt_of_a_host
r racecheck-encdec $CS --tool racecheck $W/gpu_encrypt --test-threads=1 encrypt_message_on_the_device decrypt_message_on_the_device
export FHELIUM_BENCH_DEVICE=0
for n in a1 b1 c1 a2 b2 c2; do
  case $n in a*) b=$W/gpu_oplat_145;; b*) b=$W/gpu_oplat_146;; *) b=$W/gpu_oplat;; esac
  timeout 60 $b --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "$n rc=$?"
  grep -E '^(encrypt_message|encrypt_complex_message|decrypt_message|decrypt_complex_message|coefficient_to_ntt|ntt_to_coefficient|rotate_with_key|encode_for_multiplication) ' $OUT/logs/oplat-$n.log | tr -s ' ' | cut -d' ' -f1-4,7-8
done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
