#!/bin/bash
# Run 199: the inner product's trigger at its limb barrier (gs_inv_ntt's TRIG; run 198's
# harness variant `mdlate`, 48.88-48.94 us against 49.28-49.45 for the trigger at the start)
# through the engine: gpu_oplat of 67a6564 (.gpu/bin/f1: the trigger at the start) against the
# working tree (.gpu/bin/f) alternated three times; gpu_ops, gpu_encrypt, example_parity;
# memcheck of the key-switch tests, racecheck of the rotation test.
# Carry [".gpu/bin/f", ".gpu/bin/f1"], LIMIT=400.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f1/COMMIT $W/COMMIT
ROWS='^(rotate_with_key|relinearize|example14_stage|rotate_many_with_keys/4|rotate_x4_one_by_one) +[0-9]'
AB_PASSES=3 ab_oplat "$ROWS" f1 f
gpu_tests $W "rotate_with_key_matches multiply_and_relinearize hoisted_rotations"
finish
