#!/bin/bash
# Run 34 (eighth session): gs kernels with the L1 twiddle prefetch (1f51ca9). Harness A/B
# (bench_base = with the prefetch, bench_gsnopf = without), the GPU tests of the NTT paths,
# the examples, FHElium built and timed in the same call, our oplat twice. Logs tarred.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
B=$R/.gpu/bin
r() { local name=$1; shift; timeout 150 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E '^test result|FAILED|panicked|refused' $OUT/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
(cd $B && for i in 1 2; do for b in base gsnopf; do echo "== $b"; ./bench_$b 8 2 2>&1 | grep -E "^(fwd|inv) |hash (fwd|inv)"; done; done; ./bench_timed 8 2 2>&1 | grep -E "cycles|globaltimer") > $OUT/harness.txt 2>&1
cat $OUT/harness.txt
r gpu_ops $B/gpu_ops --test-threads=1
r gpu_encrypt $B/gpu_encrypt --test-threads=1
r gpu_smoke $B/gpu_smoke
r example_parity $B/example_parity --test-threads=1
(timeout 60 $B/automatic_residency --device cuda:0; echo "exit=$?") > $OUT/ex14.txt 2>&1; tail -1 $OUT/ex14.txt
(timeout 60 $B/explicit_residency --device cuda:0; echo "exit=$?") > $OUT/ex13.txt 2>&1; tail -1 $OUT/ex13.txt
(timeout 60 $B/basic_ckks --device cuda:0; echo "exit=$?") > $OUT/basic.txt 2>&1; tail -1 $OUT/basic.txt
echo "== peer"; timeout 300 bash .peer/build-and-time.sh .peer > $OUT/peer-run.log 2>&1; echo "peer rc=$?"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
r oplat1 $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/oplat1.log
r oplat2 $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/oplat2.log
rm -f $OUT/peer-build.log
cd $OUT && tar czf logs34.tgz * --exclude=logs34.tgz 2>/dev/null && find . -type f ! -name logs34.tgz -delete; ls $OUT
