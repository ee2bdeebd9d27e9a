#!/bin/bash
# Run 14: per-warp fence before the limb barrier (new, .gpu/new) against 79e27a0 (.gpu/bin):
# harness, correctness, FHElium in the same call, both oplat tables, racecheck.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
r() { local name=$1; shift; timeout 150 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E '^test result|FAILED|panicked' $OUT/$name.log | head -3; }
cd $R/.gpu/exp
(for v in old prev base prev base; do echo "== $v"; ./bench_$v | grep -E "^(fwd|inv|nop) "; done
 for v in prevtimed timed prevtimed timed; do echo "== $v"; ./bench_$v | tail -3; done) > $OUT/exp14.txt 2>&1
cat $OUT/exp14.txt
cd $R
r gpu_ops_new .gpu/new/gpu_ops --test-threads=1
r gpu_encrypt_new .gpu/new/gpu_encrypt --test-threads=1
echo "== peer"; timeout 300 bash .peer/build-and-time.sh .peer > $OUT/peer-run.log 2>&1; echo "peer rc=$?"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
r oplat_new .gpu/new/gpu_oplat --nocapture; grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/oplat_new.log | grep -v -E "/(2pass|cl512|clpre)"
r oplat_prev .gpu/bin/gpu_oplat --nocapture; grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/oplat_prev.log | grep -v -E "/(2pass|cl512|clpre)"
r oplat_new2 .gpu/new/gpu_oplat --nocapture; grep -E '^(coefficient_to_ntt|ntt_to_coefficient) +[0-9]' $OUT/oplat_new2.log
r racecheck_new compute-sanitizer --tool racecheck .gpu/new/gpu_ops --test-threads=1 ntt_both
grep SUMMARY $OUT/racecheck_new.log
cd $OUT && rm -f peer-build.log && tar czf logs.tgz *.log *.txt *.json 2>/dev/null; rm -f *.log *.txt *.json oplat_gpu.txt; ls $OUT
