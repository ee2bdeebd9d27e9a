#!/bin/bash
# Run 172: on the warm machine of run 171 (FHElium already built there under /tmp/peer-fh),
# five more FHElium tables, each with a gpu_oplat pass beside it. Carry [".gpu/bin/f", ".peer"].
set -u
. docs/runs/common.sh
W=.gpu/bin/f
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader; cat $W/COMMIT
ls -d /tmp/peer-fh /tmp/peer-site || { echo "no FHElium build here"; exit 3; }
export FHELIUM_BENCH_DEVICE=0 PYTHONPATH=/tmp/peer-fh:/tmp/peer-site
for i in 1 2 3 4 5; do
  need 20 "pass $i" || break
  f=$OUT/logs/F-$i.txt
  timeout 45 python3 .peer/fhelium_oplat.py > $f 2>&1; echo "F rc=$?: $(grep -E '^(coefficient_to_ntt|ntt_to_coefficient) ' $f | tr -s ' ' | tr '\n' ' ')"
  oplat gpu_oplat $f
done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
