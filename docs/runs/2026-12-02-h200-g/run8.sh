#!/bin/bash
# Run 8 (final, 2026-12-03 night session): every GPU test, examples on cuda:0, sanitizers,
# FHElium built and timed in the same call, our oplat right after it.
set -u
cd "$(dirname "$0")/.."
export FHELIUM_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=.gpu/bin
r() { local name=$1; shift; timeout 150 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E '^test result|FAILED|panicked|refused' $OUT/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $B/gpu_ops --test-threads=1 --nocapture
r gpu_encrypt $B/gpu_encrypt --test-threads=1 --nocapture
r cuda_tests bash -c "$B/gpu_smoke && $B/gpu_memory --test-threads=1 && $B/gpu_peer --test-threads=1 --nocapture"
r multi_test $B/multi_gpu_test --test-threads=1 --nocapture
r example_parity $B/example_parity --test-threads=1
(timeout 60 $B/automatic_residency --device cuda:0; echo "exit=$?") > $OUT/ex14.txt 2>&1; tail -2 $OUT/ex14.txt
(timeout 60 $B/explicit_residency --device cuda:0; echo "exit=$?") > $OUT/ex13.txt 2>&1; tail -2 $OUT/ex13.txt
(timeout 60 $B/basic_ckks --device cuda:0; echo "exit=$?") > $OUT/basic.txt 2>&1; tail -2 $OUT/basic.txt
r racecheck compute-sanitizer --tool racecheck $B/gpu_ops --test-threads=1 ntt_both rotate_with_key multiply_and_relin
grep -E "SUMMARY" $OUT/racecheck.log
r memcheck compute-sanitizer --tool memcheck $B/gpu_ops --test-threads=1
grep -E "SUMMARY" $OUT/memcheck.log
r gpu_oplat_before $B/gpu_oplat --nocapture
echo "== peer (FHElium built and timed in this call)"; timeout 300 bash .peer/build-and-time.sh .peer > $OUT/peer-run.log 2>&1; echo peer=$?; tail -16 $OUT/peer-run.log
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt; r gpu_oplat_after_peer $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/gpu_oplat_after_peer.log | head -24
rm -f $OUT/peer-build.log
cd $OUT && tar czf logs.tgz *.log *.txt *.json 2>/dev/null; rm -f *.log *.txt *.json; ls $OUT
