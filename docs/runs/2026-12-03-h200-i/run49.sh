#!/bin/bash
# Run 49 (tenth session): the final kernels (206c368, .gpu/bin/g) timed with FHElium built and
# timed in the same call, two passes.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
G=$R/.gpu/bin/g
mkdir -p $OUT/logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== peer"; t0=$(date +%s); timeout 240 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in 1 2; do timeout 60 $G/gpu_oplat --nocapture > $OUT/logs/oplat-$n.log 2>&1; echo "oplat-$n rc=$?"; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
