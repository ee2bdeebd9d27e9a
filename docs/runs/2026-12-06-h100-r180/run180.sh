#!/bin/bash
# Run 180: run 179 again with 5e6a67f's gpu_oplat, whose host split also prints the clock's own
# cost (an empty call timed the same way) and, beside each split, the same calls timed without
# the subscriber before and after it (run 179's split summed to 3.3-3.6 us against a table
# submit of 1.7-2.8: the subscriber, or the host's state?). Prediction: the subscriber adds
# ~0.1 us, the rest was the host's state; the engine's work before its launch span 0.1-0.25 us
# once the clock's cost is off. Carry [".gpu/bin/f"], LIMIT=150.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
header; cat $W/COMMIT
for i in 1 2 3; do
  need 25 "pass $i" || break
  timeout 40 $W/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/oplat-$i.log 2>&1; echo "pass $i rc=$?"
  grep -E "^(coefficient_to_ntt|ntt_to_coefficient|multiply_plaintext) +[0-9]|^host split" $OUT/logs/oplat-$i.log | tr -s ' '
done
finish
