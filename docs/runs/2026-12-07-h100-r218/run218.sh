#!/bin/bash
# Run 218 (forty-second session): bench_gptag2 (variants.py's gptag2: every group of the paired
# kernels fence-free with tagged exchange words: the binary64 groups as gptag, the wide groups'
# words canonical under a 4-bit tag; the emulator passes every check with it) against
# bench_base and bench_gpnofence (the bound); rows 46-49, three passes alternated, hashes
# (gptag2 must equal base's: cd071554a1c6bacb / 988eee4302cce375). Carry [".gpu/exp4"], LIMIT=60.
set -u
. docs/runs/common.sh
header
HARNESS=.gpu/exp4 harness_passes "base gptag2 gpnofence"
finish
