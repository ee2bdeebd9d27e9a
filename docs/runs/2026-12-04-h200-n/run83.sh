#!/bin/bash
# Run 83: Loose butterflies in every *_gs-family kernel (ntt_fwd_gs, ntt_inv_gs, ntt_fwd_gq,
# ks_inner_gs; GsArith = Loose) besides the paired ones, in .gpu/bin/p, against run 82's
# landed code (Loose in the paired kernels only, .gpu/bin/o) and main before it (.gpu/bin/n):
# bit-exact against the CPU engine (gpu_ops, gpu_encrypt, example_parity, the three examples),
# memcheck of the NTT / rotate / relinearize tests, racecheck of the rotate test, then the three
# binaries timed alternately with FHElium built and timed in the same call.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
N=$R/.gpu/bin/n; O=$R/.gpu/bin/o; P=$R/.gpu/bin/p
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $P/gpu_ops --test-threads=1
r gpu_encrypt $P/gpu_encrypt --test-threads=1
r example_parity $P/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $P/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
r memcheck compute-sanitizer --tool memcheck $P/gpu_ops --test-threads=1 ntt_both_directions rotate_with_key multiply_and_relinearize
r racecheck compute-sanitizer --tool racecheck $P/gpu_ops --test-threads=1 rotate_with_key
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in p1 o1 n1 p2 o2 n2; do B=$P; case $n in o*) B=$O;; n*) B=$N;; esac; r oplat-$n $B/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | grep -v '/' | tr -s ' ' | cut -d' ' -f1-2,5-6,8; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
