#!/bin/bash
# Run 106: the key-switch tail as its own kernel (ntt_fwd_gqt; ntt_fwd_gq as before), first phases
# right after the P row's limbs plus one wave, second phases last; .gpu/bin/t2 from this tree:
# gpu_ops (incl. key_switch_tail_in_the_modup_queue_matches_cpu), gpu_encrypt, example_parity,
# the examples, memcheck + racecheck of the new test; harness rows 14/15 (ModUp queue, the
# three key-switch kernels) against 54/55 (the same with the tail); gpu_oplat with the tail
# (t) and without (o, FHELIUM_CKKS_KS_TAIL=0) alternated.
set -u
export FHELIUM_REQUIRE_GPU=1
T=.gpu/bin/t2
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -4; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $T/gpu_ops --test-threads=1
r gpu_encrypt $T/gpu_encrypt --test-threads=1
r example_parity $T/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $T/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
CS=/usr/local/cuda/bin/compute-sanitizer
r memcheck-tail $CS --tool memcheck $T/gpu_ops --test-threads=1 key_switch_tail
r racecheck-tail $CS --tool racecheck $T/gpu_ops --test-threads=1 key_switch_tail
for p in 1 2 3; do
  echo "== harness pass $p: main (b960b71) rows 14, 15"; ROWS=14,15 timeout 120 .gpu/exp/bench_m 8 2 2>&1 | grep -E "^ks-|^hash ks-(modup|chain)|rror"
  echo "== harness pass $p: this tree rows 14, 15, 54, 55"; ROWS=14,15,54,55 timeout 120 .gpu/exp/bench_t2 8 2 2>&1 | grep -E "^ks-|^hash ks-(modup|chain)|rror"
done
for n in t1 o1 t2 o2 t3; do
  case $n in o*) export FHELIUM_CKKS_KS_TAIL=0;; *) unset FHELIUM_CKKS_KS_TAIL;; esac
  r oplat-$n $T/gpu_oplat --nocapture
  grep -E '^(rotate_with_key|relinearize|example14_stage|coefficient_to_ntt|encrypt_message|decrypt_message) +[0-9]' $OUT/logs/oplat-$n.log | tr -s ' ' | cut -d' ' -f1-4,7-8
done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
