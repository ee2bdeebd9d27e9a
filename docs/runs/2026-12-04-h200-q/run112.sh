#!/bin/bash
# Run 112: the inverse paired kernel's results out through the tile as 16-byte row pairs
# (bench_tr, this tree) against main (bench_base); rows 46-49 alternated, four passes;
# words by hash (must equal main's).
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for p in base tr base tr base tr base tr; do echo "== bench_$p"; ROWS=46-49 timeout 120 .gpu/exp/bench_$p 8 2 2>&1 | grep -E "^(fwd|inv)-gp|^hash (fwd|inv)-gp|rror"; done | tee $OUT/run112.txt
