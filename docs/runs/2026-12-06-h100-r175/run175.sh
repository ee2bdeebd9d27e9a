#!/bin/bash
# Run 175: the paired kernels' limb barrier with the last arriver not polling (pair_sync: the
# lead thread's atomicAdd returns the old count; the group that completes the count fences
# (acquire) and goes on at once instead of polling L2 once more). Run 173 put the barrier's
# wait at 7-11% of the warp samples. Harness rows 46-49, three passes alternated: cur (HEAD)
# against lastgo (emulator: all checks passed). Prediction: -0.05 to -0.2 us per launch.
# Carry [".gpu/exp2"], LIMIT=40.
set -u
. docs/runs/common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
harness_passes "cur lastgo"
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
