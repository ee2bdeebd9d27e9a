#!/bin/bash
# Run 194: decision 0513 draft: the kernels choose their arithmetic from a module constant
# (c_wide, set by CudaEngine::new) instead of a global load of the prime's q. Harness
# .gpu/exp3/bench_base (34b431d's kernels) against bench_cw (the working tree's, CWIDE=1: the
# constant set as the engine sets it), rows fwd, inv, ks-inner-gs, ks-modup-gq, chain-g1 and
# the paired kernels, three passes alternated, hashes; then gpu_oplat of 34b431d
# (.gpu/bin/f1) and the working tree (.gpu/bin/f) alternated twice, gpu_ops, gpu_encrypt,
# example_parity. Carry [".gpu/bin/f", ".gpu/bin/f1", ".gpu/exp3"], LIMIT=300.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f1/COMMIT $W/COMMIT
for pass in 1 2 3; do
  for v in base cw; do
    CWIDE=1 ROWS=0,1,12,14,19,46-49 timeout 60 .gpu/exp3/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"
    grep -E "^(fwd|inv|ks-inner-gs|ks-modup-gq|chain-g1|fwd-gp|fwd-gp-g|inv-gp|inv-gp-g) " $OUT/logs/$v-$pass.txt | cut -c1-62
  done
done
for v in base cw; do echo "$v: $(grep -h hash $OUT/logs/$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
rows='^(encrypt_message|rotate_with_key|coefficient_to_ntt|ntt_to_coefficient|multiply_plaintext|example14_stage|relinearize|rotate_many_with_keys/4|rotation_key_on_device) +[0-9]'
for i in 1 2; do
  for b in f1 f; do
    timeout 30 .gpu/bin/$b/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/ab-$b-$i.log 2>&1; echo "== $b $i rc=$?"
    grep -E "$rows" $OUT/logs/ab-$b-$i.log | tr -s ' ' | cut -d' ' -f1-2,7-8
  done
done
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r example_parity $W/example_parity --test-threads=1
finish
