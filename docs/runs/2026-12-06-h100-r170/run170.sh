#!/bin/bash
# Run 170: what the cooperative launch costs the paired NTT kernels. Harness rows 46-49, three
# passes alternated: cur (HEAD's kernels, cooperative launches and cooperative graph nodes, as
# the engine) against plain (the same binary with GP_PLAIN=1: plain launches / plain kernel
# nodes; safe only here, with nothing else on the GPU). Prediction (run 103's no-work nodes:
# 3.87-3.94 us cooperative against 3.5-3.6 plain per single call): single -0.3 us, back to back
# -0.05. Carry [".gpu/exp2"] (bench_cur, bench_plain = a wrapper), LIMIT=40.
set -u
. docs/runs/common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
harness_passes "cur plain"
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
