#!/bin/bash
# Run 127: the session's final code (.gpu/bin/c: + encrypt_complex_message /
# decrypt_complex_message on the device engine): gpu_ops, gpu_encrypt, example_parity, the
# three examples; memcheck of the complex-message test; then FHElium built and timed in the
# same call and gpu_oplat three times.
set -u
export FHELIUM_REQUIRE_GPU=1
C=.gpu/bin/c
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -6; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $C/gpu_ops --test-threads=1
r gpu_encrypt $C/gpu_encrypt --test-threads=1
r example_parity $C/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $C/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
CS=/usr/local/cuda/bin/compute-sanitizer
r memcheck-complex $CS --tool memcheck $C/gpu_encrypt --test-threads=1 complex
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
cat $OUT/peer-oplat.txt 2>/dev/null | head -14
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in c1 c2 c3; do r oplat-$n $C/gpu_oplat --nocapture; grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/logs/oplat-$n.log | head -12 | tr -s ' ' | cut -d' ' -f1-2,5-8; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
