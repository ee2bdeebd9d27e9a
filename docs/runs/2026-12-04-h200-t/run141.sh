#!/bin/bash
# Run 141: A/B of the hot path, gpu_oplat of commit 43fdd3b (before the allocation guards,
# `gpu_oplat_old`) against the session's last code (.gpu/bin/y), passes alternated.
set -u
export FHELIUM_REQUIRE_GPU=1 FHELIUM_BENCH_DEVICE=0
W=.gpu/bin/y
mkdir -p $OUT/logs
for n in old1 new1 old2 new2; do
  b=$W/gpu_oplat; [ "${n#old}" != "$n" ] && b=$W/gpu_oplat_old
  timeout 60 $b --nocapture --test-threads=1 > $OUT/logs/oplat-$n.log 2>&1; echo "$n rc=$?"
  grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/logs/oplat-$n.log | head -10 | tr -s ' ' | cut -d' ' -f1-2,7-8
done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
