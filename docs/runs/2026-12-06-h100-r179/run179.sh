#!/bin/bash
# Run 179: gpu_oplat of d96e4dc three times; each prints, after the table, the host
# time of the one-launch NTT ops and multiply_plaintext split at the engine's `ckks.kernel`
# span (a scoped subscriber noting its creation, every other callsite off): the engine's own
# work before the graph lookup and cuGraphLaunch, against the rest of submit_us.
# Prediction: 0.1-0.3 us before the span (three mutex + hash lookups, the arguments), 1.2-2.5
# after it (cuGraphLaunch). Carry [".gpu/bin/f"], LIMIT=150.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
header; cat $W/COMMIT
for i in 1 2 3; do
  need 25 "pass $i" || break
  timeout 40 $W/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/oplat-$i.log 2>&1; echo "pass $i rc=$?"
  grep -E '^(coefficient_to_ntt|ntt_to_coefficient|multiply_plaintext) +[0-9]|^host split' $OUT/logs/oplat-$i.log | tr -s ' '
done
finish
