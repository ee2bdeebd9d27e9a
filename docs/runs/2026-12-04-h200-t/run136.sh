#!/bin/bash
# Run 136: a second same-call sample of this session's code (.gpu/bin/u, commit 43fdd3b:
# into_resident_ciphertext; NTT and key-switch code as in run 134): FHElium built and timed in the same call, then gpu_oplat twice with
# FHELIUM_BENCH_DEVICE=0 (as `cargo xtask bench --device cuda:0` runs it).
set -u
export FHELIUM_REQUIRE_GPU=1
T=.gpu/bin/u
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
cat $OUT/peer-oplat.txt 2>/dev/null | head -14
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt FHELIUM_BENCH_DEVICE=0
for n in u1 u2; do r oplat-$n $T/gpu_oplat --nocapture --test-threads=1; grep -E '^preset|^[a-z_0-9/]+ +[0-9]' $OUT/logs/oplat-$n.log | head -16 | tr -s ' ' | cut -d' ' -f1-2,5-8; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
