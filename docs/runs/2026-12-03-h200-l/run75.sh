#!/bin/bash
# Run 75: ntt_fwd_gq without the per-word input-mode dispatch (it runs the ModUp only: plain
# rows, sigma_g as the output scatter; kernels/ckks.cu `if constexpr (V >= 3)`), base, and the
# same with the pre-step by the digit's bound for that kernel only (gqk), against main (old);
# harness alternated, hashes must agree. Then the engine with base (.gpu/bin/m) bit-exact
# against the CPU engine (gpu_ops, gpu_encrypt, example_parity) and gpu_oplat new / main / new.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd); X=$R/.gpu/bin/x; M=$R/.gpu/bin/m; K=$R/.gpu/bin/k
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -5; }
for pass in 1 2; do for v in old base gqk; do
  timeout 60 $X/bench_$v 8 2 > $OUT/logs/h-$v-$pass.txt 2>&1
  echo "$v/$pass rc=$? $(grep -E '^(ks-modup-gq|modup-gq-noaut|modup-gq-raw|ks-chain-gq|chain-pdl-g) ' $OUT/logs/h-$v-$pass.txt | tr -s ' ' | cut -d' ' -f1-3 | tr '\n' ' ')"
done; done
for v in old base gqk; do echo "$v: $(grep -E '^hash (ks-modup|ks-chain-gq|chain-pdl-g|fwd |inv )' $OUT/logs/h-$v-1.txt | tr -s ' ' | cut -d' ' -f2- | tr '\n' ' ')"; done
r gpu_ops $M/gpu_ops --test-threads=1
r gpu_encrypt $M/gpu_encrypt --test-threads=1
r example_parity $M/example_parity --test-threads=1
for n in m1 k1 m2; do B=$M; [ $n = k1 ] && B=$K; r oplat-$n $B/gpu_oplat --nocapture; grep -E '^(rotate_with_key|relinearize|example14_stage|coefficient_to_ntt|encrypt_message) ' $OUT/logs/oplat-$n.log | tr -s ' ' | cut -d' ' -f1-2,7-8 | tr '\n' ' '; echo; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
