#!/bin/bash
# Run 70: the ModUp's pre-step by the digit's bound (pre_kind / pre_step in kernels/ckks.cu:
# no product for a digit below the target prime, one conditional subtraction below twice it,
# the reduction without the product by w = 1 otherwise; words unchanged). Harness old (main
# before it) against new, alternated, hashes must agree; the engine (.gpu/bin/l) bit-exact
# against the CPU engine (gpu_ops, gpu_encrypt, example_parity) and timed with FHElium built
# and timed in the same call (gpu_oplat, old = .gpu/bin/k, new = .gpu/bin/l, alternated).
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
K=$R/.gpu/bin/k; L=$R/.gpu/bin/l; X=$R/.gpu/bin/x
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for pass in 1 2; do for v in old base; do
  timeout 60 $X/bench_$v 8 2 > $OUT/logs/h-$v-$pass.txt 2>&1
  echo "$v/$pass rc=$? $(grep -E '^(ks-modup|ks-modup-gq|modup-noaut|modup-gq-noaut|ks-chain-gq|chain-pdl-g) ' $OUT/logs/h-$v-$pass.txt | tr -s ' ' | cut -d' ' -f1-5 | tr '\n' ' ')"
done; done
for v in old base; do echo "$v: $(grep -E '^hash (ks-modup|ks-chain-gq|chain-pdl-g|fwd |inv )' $OUT/logs/h-$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
r gpu_ops $L/gpu_ops --test-threads=1
r gpu_encrypt $L/gpu_encrypt --test-threads=1
r example_parity $L/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $L/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in l1 k1 l2; do B=$L; [ $n = k1 ] && B=$K; r oplat-$n $B/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | grep -v '/'; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
