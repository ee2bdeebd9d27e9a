#!/bin/bash
# Run 101: a second same-call sample: FHElium built and timed, then gpu_oplat of the final
# engine (.gpu/bin/n, commit 2376107) three times.
set -u
export FHELIUM_REQUIRE_GPU=1
N=.gpu/bin/n
mkdir -p $OUT/logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
grep -E "^(coefficient|ntt_to|rotate)" $OUT/peer-oplat.txt
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in n1 n2 n3; do timeout 200 $N/gpu_oplat --nocapture > $OUT/logs/oplat-$n.log 2>&1; echo "oplat-$n rc=$?"; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | tr -s ' ' | cut -d' ' -f1-2,5-8; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
