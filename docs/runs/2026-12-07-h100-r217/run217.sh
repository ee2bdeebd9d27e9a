#!/bin/bash
# Run 217 (forty-second session): where the fence's cost sits: bench_gpnofencew (no fence in the
# integer (wide) groups' limb barrier only) and bench_gpnofencef (in the binary64 groups' only)
# against bench_base and bench_gpnofence (run 215); rows 46-49, three passes alternated.
# Carry [".gpu/exp4"], LIMIT=60.
set -u
. docs/runs/common.sh
header
HARNESS=.gpu/exp4 harness_passes "base gpnofencew gpnofencef gpnofence"
finish
