#!/bin/bash
# Run 23: relinearize with d0, d1 added in ks_inner_cl (efa55c2): gpu_ops, memcheck of the
# relinearize test, our oplat (no peer); ks_inner_cl with 1, 4, 8 digits in the harness.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
B=$R/.gpu/r23
r() { local name=$1; shift; timeout 200 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E '^test result|FAILED|panicked|refused' $OUT/$name.log | head -5; }
r gpu_ops $B/gpu_ops --test-threads=1
r memcheck compute-sanitizer --tool memcheck $B/gpu_ops --test-threads=1 multiply_and_relinearize rotate_with_key
grep -E "SUMMARY" $OUT/memcheck.log
r oplat1 $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/oplat1.log
cd $B; for v in prev base prev base; do echo "== $v"; ./bench_$v | grep -E "ks-|fwd  |inv  "; done
for d in 1 4; do echo "== digits $d"; KS_DIGITS=$d ./bench_base | grep -E "ks-inner"; done
cd $OUT && tar czf logs23.tgz *.log 2>/dev/null; ls $OUT
