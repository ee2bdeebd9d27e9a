#!/bin/bash
# Run 190: binary64 butterflies in the *_gs and work-queue NTT kernels (ModUp ntt_fwd_gq,
# ks_inner_gs's inverse NTT, ntt_fwd_gs / ntt_inv_gs) for primes below 2^41 (decision 0512
# draft). Harness .gpu/exp3/bench_{base,f64ks} (HEAD's kernels / the working tree's), rows
# fwd, inv, ks-inner-gs, ks-modup-gq, chain-g1 (the key switch as the engine launches it),
# ks-inv18 and the paired kernels (unchanged: the control), three passes alternated, hashes;
# then the engine bundle .gpu/bin/f of the working tree: gpu_ops, gpu_encrypt, example_parity,
# two gpu_oplat passes. Carry [".gpu/bin/f", ".gpu/exp3"], LIMIT=400.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
export FHELIUM_REQUIRE_GPU=1
header; cat $W/COMMIT
for pass in 1 2 3; do
  for v in base f64ks; do
    ROWS=0,1,12,14,19,25,46,48 timeout 60 .gpu/exp3/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"
    grep -E "^(fwd|inv|ks-inner-gs|ks-modup-gq|chain-g1|ks-inv18|fwd-gp|inv-gp) " $OUT/logs/$v-$pass.txt
  done
done
for v in base f64ks; do echo "$v: $(grep -h hash $OUT/logs/$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r example_parity $W/example_parity --test-threads=1
for i in 1 2; do
  need 30 oplat || break
  timeout 30 $W/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/oplat-$i.log 2>&1; echo "oplat $i rc=$?"
  grep -E '^(encrypt_message|rotate_with_key|coefficient_to_ntt|ntt_to_coefficient|decrypt_message|example14_stage|relinearize|rotate_many_with_keys/4|encode_for_multiplication|rotation_key_on_device) +[0-9]' $OUT/logs/oplat-$i.log | tr -s ' ' | cut -d' ' -f1-2,7-8
done
finish
