#!/bin/bash
# Run 167: decision 0512's thread pairs in the harness. Rows 46-49, three passes alternated:
# base (HEAD's kernels, 520912e's paired NTTs), new (the pair-capable kernels at GS_THREADS:
# the 8-word path as before, launch bounds 384), new384 (the same binary with GP_THREADS=384:
# the wide prime's groups by thread pairs), allf64 (run 166's bound: the wide prime in binary64,
# wrong words). Carry [".gpu/exp2"] (bench_base, bench_new, bench_new384 (a wrapper),
# bench_allf64), LIMIT=60.
set -u
. docs/runs/common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
harness_passes "base new new384 allf64"
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
