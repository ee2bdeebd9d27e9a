#!/bin/bash
# Run 178: is run 177's submission gap between the two gpu_oplat builds (23cc3c7: 1.6-1.7 us,
# fa9a5e8: 2.5-3.0 us per one-launch op, encrypt's host work 13.6 against 18.7-19.6 us; the
# same Rust code, only the PTX differs) the binary or the host's time-varying state? The two
# builds alternated four times each with nothing between them, then the same with each
# process pinned to one CPU (taskset -c 5). Prediction: noise (no systematic gap; pinning
# narrows the spread). Carry [".gpu/bin/f"], LIMIT=200.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
header; cat $W/COMMIT; nproc; which perf strace ltrace taskset 2>/dev/null
row() { grep -E '^(encrypt_message|coefficient_to_ntt|ntt_to_coefficient|multiply_plaintext) +[0-9]' $1 | tr -s ' ' | cut -d' ' -f1,2,7,8 | tr '\n' ';'; echo; }
for i in 1 2 3 4; do
  for b in gpu_oplat gpu_oplat_old; do
    need 15 "$b $i" || break 2
    timeout 30 $W/$b --nocapture --test-threads=1 > $OUT/logs/$b-$i.log 2>&1; echo "$b $i rc=$? $(row $OUT/logs/$b-$i.log)"
  done
done
for i in 1 2 3 4; do
  for b in gpu_oplat gpu_oplat_old; do
    need 15 "$b pinned $i" || break 2
    timeout 30 taskset -c 5 $W/$b --nocapture --test-threads=1 > $OUT/logs/$b-p$i.log 2>&1; echo "$b pinned $i rc=$? $(row $OUT/logs/$b-p$i.log)"
  done
done
finish
