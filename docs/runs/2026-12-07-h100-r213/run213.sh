#!/bin/bash
# Run 213 (forty-second session): run 212's tw8 again, mended. In run 212's build tw7a's
# fallback (the integer groups: the wide prime) called itself (variants.py rewrote its call of
# tw7 with the callers'), so the wide prime's rounds were undefined behaviour: wrong hashes and
# a timing that is not the variant's. Now (emulator: the paired kernels exact on the converted
# table) .gpu/exp4/bench_base and bench_tw8 (-DTW8), rows 46-49, three passes alternated,
# hashes (must equal base's: cd071554a1c6bacb / 988eee4302cce375). Carry [".gpu/exp4"], LIMIT=90.
set -u
. docs/runs/common.sh
header
HARNESS=.gpu/exp4 harness_passes "base tw8"
finish
