#!/bin/bash
# Run 215 (forty-second session): bounds of the paired kernels' limb barrier (variants.py,
# wrong words): bench_gpnosync (no inter-block part), bench_gpnofence (no fence), bench_gpnowait
# (no wait) against bench_base; rows 46-49, three passes alternated. Carry [".gpu/exp4"], LIMIT=60.
set -u
. docs/runs/common.sh
header
HARNESS=.gpu/exp4 harness_passes "base gpnosync gpnofence gpnowait"
finish
