#!/bin/bash
# Run 155 (thirtieth session; prepared in the twenty-ninth): two probes of where the 60-bit base
# prime q0 could go if the ~2^40 primes' butterflies were binary64, timing only. Carry
# [".gpu/exp"] (build: docs/howto/time-and-profile-the-gpu-kernels.md section 6; the probe's
# line is in its header; mixg / mixg1 from `python3 kernels/bench/variants.py /tmp/exp`).
# 1. kernels/bench/ntt_bench.cu rows 46-49 (ntt_fwd_gp / ntt_inv_gp, cooperative and as one-node
#    graphs) from variants base (main at d00e79c's kernels), new (this tree's kernels/ckks.cu:
#    binary64 butterflies for the primes below 2^41, limb rows 0 and 1 transposed; its hashes
#    must equal base's), fp64 (binary64 on every limb), mixg (component group 0 of every block
#    integer, group 1 binary64), mixg1 (group 1 integer): three passes alternated.
# 2. kernels/bench/warp_item_probe.cu with its tile swizzled (run 154 ran it with 8-way bank
#    conflicts) and the new grid-barrier forms, two passes.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
mkdir -p $OUT/logs
for pass in 1 2 3; do
  for v in base new fp64 mixg mixg1; do
    ROWS=46-49 timeout 60 .gpu/exp/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"; grep -E "^(fwd|inv)-gp" $OUT/logs/$v-$pass.txt
  done
done
for pass in 1 2; do
  timeout 60 .gpu/exp/warp_item_probe > $OUT/logs/wi-$pass.txt 2>&1
  echo "== warp_item_probe pass $pass rc=$?"; grep -E "^pass|rror" $OUT/logs/wi-$pass.txt
done
grep -h "hash" $OUT/logs/base-1.txt $OUT/logs/new-1.txt | head -16
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
