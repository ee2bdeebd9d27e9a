#!/bin/bash
# Run 174: the paired NTT kernels' start (run 173's source page: ~6-8% of the warp samples sit at
# the first instructions, waiting on primes[prime_off].q, then primes[pid].q, before any data
# load is issued). Harness rows 46-49, three passes alternated: cur (HEAD), nofirst (the
# chain's first-prime test as a constant: the harness's chain starts wide; one dependent load
# fewer), hoist (nofirst + each thread's first 8 input words loaded before the branch on q, so
# they fly with the q load), hoistonly (the hoist alone, the first-prime load kept; emulator:
# same words). Prediction: nofirst -0.1 to -0.2 us per launch, hoist -0.2 to -0.35, hoistonly
# -0.05 to -0.15. Carry [".gpu/exp2"], LIMIT=50.
set -u
. docs/runs/common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
harness_passes "cur nofirst hoist hoistonly"
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
