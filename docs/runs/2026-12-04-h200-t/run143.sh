#!/bin/bash
# SUPERSEDED by docs/runs/2026-12-05-h200-u/run143.sh (same numbers, new binaries).
# Run 143 (prepared in the twenty-second session; NOT RUN: no machine lent). Same .gpu/bin/z
# as run 142 (see its header for how to make it). Carry .gpu.
# 1. memcheck of the key-cache, span, complex and encode tests; racecheck of the encode tests.
# 2. A/B of the hot path: gpu_oplat of bccfebd (before the spans and the encode changes,
#    gpu_oplat_old) against the new one, passes alternated: the spans must cost nothing without
#    a subscriber, and encrypt/decrypt_message must not move with the cplx flag.
set -u
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/z
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY' $OUT/logs/$name.log | head -6; }
CS=/usr/local/cuda/bin/compute-sanitizer
r memcheck-cached $CS --tool memcheck $W/gpu_ops --test-threads=1 cached_key
r memcheck-spans $CS --tool memcheck $W/gpu_ops --test-threads=1 spanned
r memcheck-encode $CS --tool memcheck $W/gpu_encrypt --test-threads=1 complex_messages plaintexts_encoded device_encoding
r racecheck-encode $CS --tool racecheck $W/gpu_encrypt --test-threads=1 complex_messages plaintexts_encoded
export FHELIUM_BENCH_DEVICE=0
for n in old1 new1 old2 new2; do
  b=$W/gpu_oplat; [ "${n#old}" != "$n" ] && b=$W/gpu_oplat_old
  timeout 60 $b --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "$n rc=$?"
  grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/logs/oplat-$n.log | head -10 | tr -s ' ' | cut -d' ' -f1-2,7-8
done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
