#!/bin/bash
# Run 25: ModDown with one thread per coefficient over all rows (mdrows) against the current one.
set -u
cd .gpu/r25
for v in base mdrows base mdrows; do echo "== $v"; ./bench_$v | grep -E "ks-|hash"; done > $OUT/r25.txt 2>&1
cat $OUT/r25.txt
