#!/bin/bash
# Run 89: barrier state per stream (no rotating counter regions). The new gpu_ops test
# streams_beyond_32_never_share_barrier_state against main's engine (.gpu/bin/o: main + the new
# test; streams beyond 32 rotate through shared regions) five times, then the fixed engine
# (.gpu/bin/n): gpu_ops in full, gpu_encrypt, example_parity, the examples, memcheck +
# racecheck of the new tests, gpu_oplat alternated with main (.gpu/bin/q).
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
N=$R/.gpu/bin/n; O=$R/.gpu/bin/o; Q=$R/.gpu/bin/q
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused|ERROR SUMMARY|RACECHECK SUMMARY|differ|mismatch' $OUT/logs/$name.log | head -4; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for i in 1 2 3 4 5; do r old-streams-$i $O/gpu_ops --test-threads=1 streams_beyond_32; done
for i in 1 2 3; do r new-streams-$i $N/gpu_ops --test-threads=1 streams_beyond_32; done
r gpu_ops $N/gpu_ops --test-threads=1
r gpu_encrypt $N/gpu_encrypt --test-threads=1
r example_parity $N/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $N/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
r memcheck compute-sanitizer --tool memcheck $N/gpu_ops --test-threads=1 ntt_both_directions streams_beyond rotate_with_key
r racecheck compute-sanitizer --tool racecheck $N/gpu_ops --test-threads=1 ntt_both_directions
for n in n1 q1 n2 q2; do B=$N; case $n in q*) B=$Q;; esac; r oplat-$n $B/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]' $OUT/logs/oplat-$n.log | tr -s ' ' | cut -d' ' -f1-2,7-8; done
dmesg 2>/dev/null | grep -i xid | tail -5
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
