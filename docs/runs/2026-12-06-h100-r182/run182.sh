#!/bin/bash
# Run 182: the engine's host path before cuGraphLaunch made lean (648fc5e: argument lists as
# hashed words, FxHash maps, no recording node unless recording) against 5e6a67f
# (gpu_oplat_old), alternated six times each; both print run 180's host split. First gpu_ops
# and gpu_encrypt of 648fc5e (the graph and chain paths changed). Prediction (run 181: ~0.13 us
# of engine work before the launch span, ~0.15 us of graph lookup after it): the split's first
# part 0.16 -> ~0.10 us and the submission 0.1-0.2 us less, the per-call NTT ops with it.
# Carry [".gpu/bin/f"], LIMIT=240.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/f
header; cat $W/COMMIT
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
for i in 1 2 3 4 5 6; do
  for b in gpu_oplat_old gpu_oplat; do
    need 15 "$b $i" || break 2
    timeout 40 $W/$b --nocapture --test-threads=1 > $OUT/logs/$b-$i.log 2>&1; echo "== $b $i rc=$?"
    grep -E "^(coefficient_to_ntt|ntt_to_coefficient|multiply_plaintext|rotate_with_key) +[0-9]|^host split (coef|ntt)" $OUT/logs/$b-$i.log | tr -s ' ' | cut -c1-200
  done
done
finish
