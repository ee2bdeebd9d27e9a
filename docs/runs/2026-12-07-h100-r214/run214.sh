#!/bin/bash
# Run 214 (forty-second session): .gpu/exp4's bench_base, bench_fwx2 (variants.py's fwx2: the
# forward's exchange stores as 16-byte pairs along the block's own rows: wrong words, the same
# bytes; the bound of any store shape there) and bench_tw8 (-DTW8, run 213's, a second sample);
# rows 46-49, three passes alternated, hashes (base / tw8: cd071554a1c6bacb / 988eee4302cce375).
# Carry [".gpu/exp4"], LIMIT=60.
set -u
. docs/runs/common.sh
header
HARNESS=.gpu/exp4 harness_passes "base fwx2 tw8"
finish
