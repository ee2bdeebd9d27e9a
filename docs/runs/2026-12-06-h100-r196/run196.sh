#!/bin/bash
# Run 196: the ModUp's balanced lift (and the pre-step's reduction by w = 1) in binary64 for the
# primes below 2^41 (LooseF::lift; decision 0512's follow-up). Harness .gpu/exp3/bench_base
# (c21d70b's kernels) against bench_lift (the working tree's), WIDE=7,8 (the engine's shape) and
# the default, rows ks-modup-gq, chain-g1, fwd (ntt_fwd_gs), three passes alternated, hashes;
# then gpu_oplat of 34b431d (.gpu/bin/f1, the same kernels as c21d70b) and the working tree
# (.gpu/bin/f) alternated twice; gpu_ops, gpu_encrypt, example_parity; memcheck of the tests
# that run the ModUp. Carry [".gpu/bin/f", ".gpu/bin/f1", ".gpu/exp3"], LIMIT=300.
# Prepared, not yet run (the device refused every start after run 195). To prepare: bundle
# HEAD (make-bundle-f.sh) and keep its gpu_oplat as .gpu/bin/f1/; build .gpu/exp3/bench_base
# from HEAD's kernels (variants.py /tmp/expb src=<HEAD's ckks.cu>); `git apply
# kernels/bench/experiments/f64-lift.patch`, `cargo xtask ptx`, build .gpu/exp3/bench_lift from
# the working tree (variants.py /tmp/exp) and bundle it into .gpu/bin/f.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f1/COMMIT $W/COMMIT
for wide in 7,8 0; do
  for pass in 1 2 3; do
    for v in base lift; do
      WIDE=$wide ROWS=0,8,14,19,23 timeout 60 .gpu/exp3/bench_$v 8 2 > $OUT/logs/w$wide-$v-$pass.txt 2>&1
      echo "== WIDE=$wide $v pass $pass rc=$?"
      grep -E "^(fwd|ks-modup-gq|ks-moddown|chain-g1|chain-pdl-g) " $OUT/logs/w$wide-$v-$pass.txt | cut -c1-40
    done
  done
  for v in base lift; do echo "WIDE=$wide $v: $(grep -h hash $OUT/logs/w$wide-$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
done
# mdearly (variants.py; HEAD's kernels): ModDown's independent loads before its wait and the
# inner product triggering its dependents at its start; rows 8 (ModDown alone), 19, 23 (the
# chain with programmatic edges, as the engine submits it).
for pass in 1 2 3; do
  for v in base mdearly; do
    WIDE=7,8 ROWS=8,19,23 timeout 60 .gpu/exp3/bench_$v 8 2 > $OUT/logs/md-$v-$pass.txt 2>&1
    echo "== mdearly test: $v pass $pass rc=$?"
    grep -E "^(ks-moddown|chain-g1|chain-pdl-g) " $OUT/logs/md-$v-$pass.txt | cut -c1-40
  done
done
for v in base mdearly; do echo "md $v: $(grep -h hash $OUT/logs/md-$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
ab_oplat '^(rotate_with_key|coefficient_to_ntt|example14_stage|relinearize|rotate_many_with_keys/4|rotate_x4_one_by_one|rotation_key_on_device|encrypt_message) +[0-9]' f1 f
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r example_parity $W/example_parity --test-threads=1
SAN=/usr/local/cuda/bin/compute-sanitizer
need 60 memcheck && r memcheck-ks $SAN --tool memcheck $W/gpu_ops --test-threads=1 rotate_with_key_matches multiply_and_relinearize hoisted_rotations plaintext_domain_transitions keys_made_on_the_device
finish
