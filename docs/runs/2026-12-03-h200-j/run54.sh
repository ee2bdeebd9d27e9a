#!/bin/bash
# Run 54 (eleventh session): encrypt_message and decrypt_message as chain graphs too, the *_gs
# NTT kernels with grid_dep_wait (.gpu/bin/d) against 45355e3 (.gpu/bin/c), FHElium built and
# timed in the same call; the GPU tests, examples and sanitizers on d.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
C=$R/.gpu/bin/c; D=$R/.gpu/bin/d
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r d_gpu_ops $D/gpu_ops --test-threads=1
r d_gpu_encrypt $D/gpu_encrypt --test-threads=1
r d_example_parity $D/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $D/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
r d_memcheck compute-sanitizer --tool memcheck $D/gpu_encrypt --test-threads=1 on_the_device_matches
grep -E "SUMMARY" $OUT/logs/d_memcheck.log
r d_racecheck compute-sanitizer --tool racecheck $D/gpu_encrypt --test-threads=1 decrypt_message_on_the_device
grep -E "SUMMARY" $OUT/logs/d_racecheck.log
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for k in c1:$C d1:$D c2:$C d2:$D; do n=${k%%:*}; r oplat-$n ${k#*:}/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]|^chain' $OUT/logs/oplat-$n.log | grep -v '/'; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
