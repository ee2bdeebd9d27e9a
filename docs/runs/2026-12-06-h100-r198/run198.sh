#!/bin/bash
# Run 198: ModDown's addend before its wait, landed form (kernels/ckks.cu: ks_moddown's
# adds_early argument, ks_addend; ks_inner_gs / ks_inner_gh trigger their dependents at their
# start; the engine sets adds_early for KsAdd::Coeff only). Harness (WIDE=7,8): bench_base
# (ed79ecd's kernels), bench_new (the working tree), bench_mdearly (run 196's variant),
# bench_mdlate (the working tree with the inner product's trigger moved to its limb barrier),
# rows 8, 12, 23, three passes alternated, hashes. Engine: gpu_oplat of 34b431d (.gpu/bin/f1,
# ed79ecd's SASS) against the working tree (.gpu/bin/f) twice; gpu_ops (every kernel path,
# the two-pass fallback's early-off addend included), gpu_encrypt, example_parity; memcheck of
# the key-switch tests, racecheck of the rotation test.
# Carry [".gpu/bin/f", ".gpu/bin/f1", ".gpu/exp3"], LIMIT=540.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f1/COMMIT $W/COMMIT
for pass in 1 2 3; do
  for v in base new mdearly mdlate; do
    WIDE=7,8 ROWS=8,12,23 timeout 60 .gpu/exp3/bench_$v 8 2 > $OUT/logs/t-$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"
    grep -E "^(ks-moddown|ks-inner-gs|chain-pdl-g) " $OUT/logs/t-$v-$pass.txt | cut -c1-40
  done
done
for v in base new mdearly mdlate; do echo "$v: $(grep -h hash $OUT/logs/t-$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
ab_oplat '^(rotate_with_key|relinearize|example14_stage|rotate_many_with_keys/4|rotate_x4_one_by_one|coefficient_to_ntt) +[0-9]' f1 f
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r example_parity $W/example_parity --test-threads=1
SAN=/usr/local/cuda/bin/compute-sanitizer
need 60 memcheck && r memcheck-ks $SAN --tool memcheck $W/gpu_ops --test-threads=1 rotate_with_key_matches multiply_and_relinearize hoisted_rotations
need 150 racecheck && r racecheck-rot $SAN --tool racecheck $W/gpu_ops --test-threads=1 rotate_with_key_matches
finish
