#!/bin/bash
# Run 80: the binary64 quotient in the paired NTT kernels only (ntt_fwd_gp / ntt_inv_gp take
# fpq_lazy for the ~2^40 primes through a template parameter; every other kernel's SASS is
# unchanged) and their limbs in reverse order (the 60-bit limb's blocks start first), in
# .gpu/bin/p, against main (.gpu/bin/n, run 77's binary): bit-exact against the CPU engine
# (gpu_ops, gpu_encrypt, example_parity), memcheck / racecheck of the NTT test, then timed
# alternately with FHElium built and timed in the same call.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
N=$R/.gpu/bin/n; P=$R/.gpu/bin/p
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 150 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $P/gpu_ops --test-threads=1
r gpu_encrypt $P/gpu_encrypt --test-threads=1
r example_parity $P/example_parity --test-threads=1
r memcheck compute-sanitizer --tool memcheck $P/gpu_ops --test-threads=1 ntt_both_directions
r racecheck compute-sanitizer --tool racecheck $P/gpu_ops --test-threads=1 ntt_both_directions
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in p1 n1 p2 n2 p3 n3; do B=$P; case $n in n*) B=$N;; esac; r oplat-$n $B/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | grep -v '/' | grep -E '^(coeff|ntt_to|rotate|relin|example14)' | tr -s ' ' | cut -d' ' -f1-6,8-9; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
