#!/bin/bash
# Run 107: main's engine (.gpu/bin/m, 7ce307e: the component pipelines, no key-switch tail)
# against FHElium timed three times in the same call, each FHElium table followed at once by
# gpu_oplat with that table as its peer column (FHELIUM_PEER_OPLAT), so each ratio compares
# two adjacent measurements: F1 (build-and-time.sh), ours, F2, ours, F3, ours.
set -u
export FHELIUM_REQUIRE_GPU=1
M=.gpu/bin/m
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked' $OUT/logs/$name.log | head -3; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $M/gpu_ops --test-threads=1
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
cp $OUT/peer-oplat.txt $OUT/logs/peer1.txt
for i in 1 2 3; do
  if [ $i -gt 1 ]; then t0=$(date +%s); PYTHONPATH=/tmp/peer-fh:/tmp/peer-site timeout 150 python3 .peer/fhelium_oplat.py > $OUT/logs/peer$i.txt 2>&1; echo "peer$i rc=$? ($(( $(date +%s)-t0 )) s)"; fi
  echo "== FHElium $i"; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/peer$i.txt | tr -s ' ' | cut -d' ' -f1-2
  FHELIUM_PEER_OPLAT=$OUT/logs/peer$i.txt r oplat-$i $M/gpu_oplat --nocapture
  grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$i.log | head -10 | tr -s ' ' | cut -d' ' -f1-2,5-8
done
rm -f $OUT/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
