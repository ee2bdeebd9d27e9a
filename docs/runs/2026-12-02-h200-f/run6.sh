#!/bin/bash
# Run 6 (commit ca0b587): re-check after the review refactors (launch_raw; examples' operand helper).
set -u
cd "$(dirname "$0")/.."
export FHELIUM_REQUIRE_GPU=1
B=.gpu/bin
r() { local name=$1; shift; timeout 150 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E '^test result|FAILED|panicked' $OUT/$name.log | head -5; }
r gpu_ops $B/gpu_ops --test-threads=1 --nocapture
r gpu_encrypt $B/gpu_encrypt --test-threads=1 --nocapture
r gpu_oplat $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/gpu_oplat.log | head -16
(timeout 60 $B/automatic_residency --device cuda:0; echo "exit=$?") > $OUT/ex14.txt 2>&1; tail -2 $OUT/ex14.txt
(timeout 60 $B/explicit_residency --device cuda:0; echo "exit=$?") > $OUT/ex13.txt 2>&1; tail -2 $OUT/ex13.txt
(timeout 60 $B/basic_ckks --device cuda:0; echo "exit=$?") > $OUT/basic.txt 2>&1; tail -2 $OUT/basic.txt
(timeout 60 $B/multi_gpu --devices cuda:0 --batch 8; echo "exit=$?") > $OUT/multi.txt 2>&1; tail -2 $OUT/multi.txt
cd $OUT && tar czf logs.tgz *.log *.txt; rm -f *.log *.txt
