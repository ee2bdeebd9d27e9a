#!/bin/bash
# Run 171: the same-call comparison again at HEAD (520912e's kernels, `.gpu/bin/f` of fa9a5e8),
# asked for nvidia-h200 (the machine): gpu_ops, then FHElium built and timed with a
# gpu_oplat pass beside each of three FHElium tables. Carry [".gpu/bin/f", ".peer"], LIMIT=420.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/f
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv,noheader; cat $W/COMMIT
r gpu_ops $W/gpu_ops --test-threads=1
peer_oplat gpu_oplat gpu_oplat gpu_oplat
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
