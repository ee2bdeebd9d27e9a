#!/bin/bash
# Run 131: the session's last code (.gpu/bin/z; gpu_oplat reads its device ordinal from
# FHELIUM_BENCH_DEVICE, as `cargo xtask bench --device cuda:N` sets it): gpu_ops, gpu_encrypt,
# example_parity, the examples crate's tests, the three examples; then FHElium built and timed
# in the same call and gpu_oplat twice with FHELIUM_BENCH_DEVICE=0.
set -u
export FHELIUM_REQUIRE_GPU=1
Z=.gpu/bin/z
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $Z/gpu_ops --test-threads=1
r gpu_encrypt $Z/gpu_encrypt --test-threads=1
r example_parity $Z/example_parity --test-threads=1
r examples_lib $Z/examples_lib --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $Z/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
cat $OUT/peer-oplat.txt 2>/dev/null | head -14
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt FHELIUM_BENCH_DEVICE=0
for n in z1 z2; do r oplat-$n $Z/gpu_oplat --nocapture --test-threads=1; grep -E '^preset|^[a-z_0-9/]+ +[0-9]' $OUT/logs/oplat-$n.log | head -13 | tr -s ' ' | cut -d' ' -f1-2,5-8; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
