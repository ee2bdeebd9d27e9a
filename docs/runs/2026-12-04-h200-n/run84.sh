#!/bin/bash
# Run 84: .gpu/bin/q = run 83's p (Loose butterflies in every *_gs-family kernel) plus the
# cluster kernels' fix (the arrive after the distributed-shared-memory loads with release
# semantics instead of relaxed: run 83's Xid 13 "CTA Not Present"). Bit-exact against the CPU
# engine (gpu_ops covers all four NTT kernel paths, gpu_encrypt, example_parity, the examples),
# memcheck / racecheck of the NTT test, q against o (run 82's landed code) alternated three
# times, then gpu_oplat (whose /cl512 and /clpre rows run ~1800 cluster-path calls per process)
# eight times each for q and for p (the relaxed arrive), counting the kernel's Xid reports.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
O=$R/.gpu/bin/o; P=$R/.gpu/bin/p; Q=$R/.gpu/bin/q
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY' $OUT/logs/$name.log | head -5; }
xids() { dmesg 2>/dev/null | grep -c "Xid"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
echo "xid lines at start: $(xids)"
r gpu_ops $Q/gpu_ops --test-threads=1
r gpu_encrypt $Q/gpu_encrypt --test-threads=1
r example_parity $Q/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $Q/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
r memcheck compute-sanitizer --tool memcheck $Q/gpu_ops --test-threads=1 ntt_both_directions rotate_with_key
r racecheck compute-sanitizer --tool racecheck $Q/gpu_ops --test-threads=1 ntt_both_directions
echo "xid lines after tests: $(xids)"
for n in q1 o1 q2 o2 q3 o3; do B=$Q; case $n in o*) B=$O;; esac; r oplat-$n $B/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | grep -v '/' | tr -s ' ' | cut -d' ' -f1-2,7-8; done
for i in 1 2 3 4 5 6 7 8; do for v in q p; do B=$R/.gpu/bin/$v; timeout 60 $B/gpu_oplat --nocapture > $OUT/logs/stress-$v$i.log 2>&1; echo "stress $v$i rc=$? xid=$(xids) $(grep -E 'panicked at|sync:' $OUT/logs/stress-$v$i.log | head -1)"; done; done
dmesg 2>/dev/null | grep -i xid | tail -6
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
