#!/bin/bash
# Run 192: the key switch's wide rows first (wide_first_shift: ntt_fwd_gq's limb order and
# ks_inner_gs's grid rows rotated so the 60-bit primes' limbs are dispatched first). Harness
# .gpu/exp3/bench_{f64ks,wf} (34b431d's kernels / the working tree's) with WIDE=7,8 (the
# engine's shape: base prime and P wide) and with the default (prime 0 wide), three passes
# alternated, hashes; then gpu_oplat of 34b431d (.gpu/bin/f1) and the working tree
# (.gpu/bin/f) alternated twice, gpu_ops, gpu_encrypt. Carry [".gpu/bin/f", ".gpu/bin/f1",
# ".gpu/exp3"], LIMIT=300.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f1/COMMIT $W/COMMIT
for wide in 7,8 0; do
  for pass in 1 2 3; do
    for v in f64ks wf; do
      WIDE=$wide ROWS=12,14,19 timeout 60 .gpu/exp3/bench_$v 8 2 > $OUT/logs/w$wide-$v-$pass.txt 2>&1
      echo "== WIDE=$wide $v pass $pass rc=$?"
      grep -E "^(ks-inner-gs|ks-modup-gq|chain-g1) " $OUT/logs/w$wide-$v-$pass.txt | cut -c1-40
    done
  done
  for v in f64ks wf; do echo "WIDE=$wide $v: $(grep -h hash $OUT/logs/w$wide-$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
done
rows='^(encrypt_message|rotate_with_key|coefficient_to_ntt|example14_stage|relinearize|rotate_many_with_keys/4|rotate_x4_one_by_one|rotation_key_on_device) +[0-9]'
for i in 1 2; do
  for b in f1 f; do
    timeout 30 .gpu/bin/$b/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/ab-$b-$i.log 2>&1; echo "== $b $i rc=$?"
    grep -E "$rows" $OUT/logs/ab-$b-$i.log | tr -s ' ' | cut -d' ' -f1-2,7-8
  done
done
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
finish
