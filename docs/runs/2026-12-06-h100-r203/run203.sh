#!/bin/bash
# Run 203: where the example-14 stage's ~6 us over its ops' own back-to-back times goes:
# gpu_oplat of bc7fd7a's engine with the stage_split rows (pairs of neighbouring ops in one
# call, the stage without its rotation), two passes; the second set of rows: rotate followed by small and large kernels, by an independent NTT, the NTT followed by rotate, relinearize by the NTT. Carry [".gpu/bin/s"], LIMIT=200.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/s/COMMIT
for i in 1 2; do
  timeout 60 .gpu/bin/s/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/split-$i.log 2>&1; echo "== $i rc=$?"
  grep -E '^(relinearize|rotate_with_key|coefficient_to_ntt|multiply_plaintext|ntt_to_coefficient|rescale_to_next_level|example14_stage|stage_split/[a-z_>]+) +[0-9]' $OUT/logs/split-$i.log | tr -s ' ' | cut -d' ' -f1-2,7-8
done
finish
