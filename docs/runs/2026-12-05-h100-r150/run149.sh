#!/bin/bash
# Run 149, prepared in the twenty-fifth session, extended in the twenty-seventh: .gpu/bin/y,
# after run 148 passes. Carry [".gpu/bin/y", ".peer"].
# 1. gpu_ops; 2. FHElium built and timed in this call, then gpu_oplat twice (issue 7's table,
# the same-call ratios); 3. measurement conditions: FHElium and ours alternated, each pass right
# after a fresh FHElium table, plain (p) and with both processes pinned to one core (t:
# `taskset -c 3`) and also run at real-time priority (r: `chrt -f 20 taskset -c 3`), to see
# whether the host's slow stretches (one-launch submissions 2.3-3.0 us against 1.5-1.7) come
# from migrations or preemption. Prediction (twenty-seventh session): pinning narrows our
# submit_us spread and FHElium's p90 alike; the ratio moves by less than 0.5x either way.
set -u
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/y
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
cat $W/COMMIT
r gpu_ops $W/gpu_ops --test-threads=1
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
cat $OUT/peer-oplat.txt 2>/dev/null | head -14
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt FHELIUM_BENCH_DEVICE=0
show() { grep -E '^(coefficient_to_ntt|ntt_to_coefficient|rotate_with_key|multiply_plaintext) ' "$1" | tr -s ' ' | cut -d' ' -f1-2,5-8; }
for n in y1 y2; do timeout 60 $W/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "$n rc=$?"; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | head -16 | tr -s ' ' | cut -d' ' -f1-2,5-8; done
echo "== conditions"
export PYTHONPATH=/tmp/peer-fh:/tmp/peer-site
pre() { case $1 in p) ;; t) echo taskset -c 3 ;; r) echo chrt -f 20 taskset -c 3 ;; esac; }
for i in 1 2; do
  for c in p t r; do
    P=$(pre $c)
    timeout 120 $P python3 .peer/fhelium_oplat.py > $OUT/logs/F-$c$i.txt 2>&1; echo "F-$c$i rc=$?: $(grep -E '^(coefficient_to_ntt|ntt_to_coefficient) ' $OUT/logs/F-$c$i.txt | tr -s ' ' | tr '\n' ' ')"
    FHELIUM_PEER_OPLAT=$OUT/logs/F-$c$i.txt timeout 60 $P $W/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/oplat-$c$i.log 2>&1; echo "ours-$c$i rc=$?"; show $OUT/logs/oplat-$c$i.log
  done
done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
