#!/bin/bash
# Run 146 (twenty-fourth session). .gpu/bin/v = the commit in .gpu/bin/v/COMMIT (7faa86b):
# run 145's code plus chain graphs with branches: encrypt's FFT column pass (enc_cols) runs
# beside v's NTT, v-hat x pk and the inverse NTT; enc_add_err joins them (predicted: encrypt
# -3 to -4 us per call, enc_cols' time; every other op unchanged).
# gpu_oplat_145: run 145's binary (ede0c74); gpu_oplat_z: d2e3db9 (runs 142-144).
# 1. gpu_encrypt (chains on and off), gpu_ops, example_parity, examples_lib; memcheck and
#    racecheck of the encrypt tests (two kernels now run at once);
# 2. A/B 145 vs new, alternated three times. Carry [".gpu/bin/v"].
set -u
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/v
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
r memcheck-enc $CS --tool memcheck $W/gpu_encrypt --test-threads=1 encrypt_message_on_the_device complex_messages encrypt_of_a_host device_round_trip
r racecheck-enc $CS --tool racecheck $W/gpu_encrypt --test-threads=1 encrypt_message_on_the_device complex_messages
export FHELIUM_BENCH_DEVICE=0
for n in a1 b1 a2 b2 a3 b3; do
  b=$W/gpu_oplat; [ "${n#a}" != "$n" ] && b=$W/gpu_oplat_145
  timeout 60 $b --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "$n rc=$?"
  grep -E '^(encrypt_message|encrypt_complex_message|decrypt_message|coefficient_to_ntt|ntt_to_coefficient|rotate_with_key|rotation_key_on_device|encode_for_multiplication) ' $OUT/logs/oplat-$n.log | tr -s ' ' | cut -d' ' -f1-4,7-8
done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
