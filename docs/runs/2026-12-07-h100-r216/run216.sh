#!/bin/bash
# Run 216 (forty-second session): bench_gptag (variants.py's gptag: the paired kernels' binary64
# groups exchange words under a 12-bit tag and meet without the fence; the emulator finds the
# paired kernels exact) against bench_base and bench_gpnofence (run 215's bound); rows 46-49,
# three passes alternated, hashes (gptag must equal base's: cd071554a1c6bacb / 988eee4302cce375).
# Carry [".gpu/exp4"], LIMIT=60.
set -u
. docs/runs/common.sh
header
HARNESS=.gpu/exp4 harness_passes "base gptag gpnofence"
finish
