#!/bin/bash
# Final run 5 (commit 37f96e5): bit-exactness (cluster + two-pass), device encrypt/decrypt,
# oplat, multi-GPU layer on one GPU, examples on cuda:0.
set -u
cd "$(dirname "$0")/.."
export FHELIUM_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=.gpu/bin
r() { local name=$1; shift; timeout 150 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E '^test result|FAILED|panicked|refused' $OUT/$name.log | head -5; }
r gpu_ops $B/gpu_ops --test-threads=1 --nocapture
r gpu_encrypt $B/gpu_encrypt --test-threads=1 --nocapture
r gpu_oplat $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]|path|cluster' $OUT/gpu_oplat.log | head -24
r cuda_tests bash -c "$B/gpu_smoke && $B/gpu_memory --test-threads=1 && $B/gpu_peer --test-threads=1 --nocapture"
r peerbench $B/peerbench
tail -12 $OUT/peerbench.log
r multi_test $B/multi_gpu_test --test-threads=1 --nocapture
for a in "--devices cuda:0 --batch 8" "--devices all --batch 16 --peer staged"; do echo "== multi_gpu $a"; timeout 60 $B/multi_gpu $a 2>&1 | tail -8; done > $OUT/multi_gpu.txt; tail -18 $OUT/multi_gpu.txt
(timeout 60 $B/automatic_residency --device cuda:0; echo "exit=$?") > $OUT/ex14.txt 2>&1; tail -3 $OUT/ex14.txt
(timeout 60 $B/explicit_residency --device cuda:0; echo "exit=$?") > $OUT/ex13.txt 2>&1; tail -3 $OUT/ex13.txt
(timeout 60 $B/basic_ckks --device cuda:0; echo "exit=$?") > $OUT/basic.txt 2>&1; tail -3 $OUT/basic.txt
r racecheck compute-sanitizer --tool racecheck $B/gpu_ops --test-threads=1 ntt_both rotate_with_key multiply_and_relin
grep -E "SUMMARY" $OUT/racecheck.log
r memcheck compute-sanitizer --tool memcheck $B/gpu_ops --test-threads=1
grep -E "SUMMARY" $OUT/memcheck.log
r membench $B/membench
tail -8 $OUT/membench.log
echo "== peer (FHElium built and timed in this call)"; timeout 300 bash .peer/build-and-time.sh .peer > $OUT/peer-run.log 2>&1; echo peer=$?; tail -14 $OUT/peer-run.log
r gpu_oplat_after_peer $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/gpu_oplat_after_peer.log | head -16
rm -f $OUT/peer-build.log
cd $OUT && tar czf logs.tgz *.log *.txt *.json; rm -f *.log *.txt *.json; ls $OUT
