#!/bin/bash
# Run 197: programmatic dependents launched early in the key switch. Harness (WIDE=7,8, the
# engine's shape): bench_base (ed79ecd's kernels), bench_mdtrig (ks_inner_gs / ks_inner_gh
# call griddepcontrol.launch_dependents at their start: the working tree), bench_qtrig (the
# same and ntt_fwd_gq too), bench_mdearly (run 196's: ks_moddown's addend loaded before its
# wait, the inner product's trigger), rows 14 (ModUp), 12 (ks_inner_gs), 8 (ModDown), 23 (the
# chain with programmatic edges, as the engine submits it), three passes alternated, hashes.
# Then gpu_oplat of ed79ecd (.gpu/bin/f1: 34b431d, the same SASS), the working tree (.gpu/bin/f)
# and qtrig (.gpu/bin/f2) alternated twice; gpu_ops, gpu_encrypt, example_parity on the
# working tree; memcheck and racecheck of the key-switch tests.
# Carry [".gpu/bin/f", ".gpu/bin/f1", ".gpu/bin/f2", ".gpu/exp3"], LIMIT=540.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f1/COMMIT $W/COMMIT .gpu/bin/f2/COMMIT
for pass in 1 2 3; do
  for v in base mdtrig qtrig mdearly; do
    WIDE=7,8 ROWS=8,12,14,23 timeout 60 .gpu/exp3/bench_$v 8 2 > $OUT/logs/t-$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"
    grep -E "^(ks-moddown|ks-inner-gs|ks-modup-gq|chain-pdl-g) " $OUT/logs/t-$v-$pass.txt | cut -c1-40
  done
done
for v in base mdtrig qtrig mdearly; do echo "$v: $(grep -h hash $OUT/logs/t-$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
ab_oplat '^(rotate_with_key|relinearize|example14_stage|rotate_many_with_keys/4|rotate_x4_one_by_one|coefficient_to_ntt) +[0-9]' f1 f f2
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r example_parity $W/example_parity --test-threads=1
SAN=/usr/local/cuda/bin/compute-sanitizer
KS="rotate_with_key_matches multiply_and_relinearize hoisted_rotations"
need 60 memcheck && r memcheck-ks $SAN --tool memcheck $W/gpu_ops --test-threads=1 $KS
need 60 racecheck && r racecheck-ks $SAN --tool racecheck $W/gpu_ops --test-threads=1 $KS
finish
