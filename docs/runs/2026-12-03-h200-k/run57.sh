#!/bin/bash
# Run 57 (twelfth session): the final code of the eleventh session (77da106 + notes, .gpu/bin/k:
# two host-only refactors of the launch path never run on the GPU) verified on the H200, timed
# with FHElium built and timed in the same call; harness: ks_inner_gs over 9 target rows
# (144 blocks, 12 SMs hold two) against 8 and 7 rows (one block per SM), to size what the
# shared SMs cost rotate.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
K=$R/.gpu/bin/k; X=$R/.gpu/bin/x
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
r gpu_ops $K/gpu_ops --test-threads=1
r gpu_encrypt $K/gpu_encrypt --test-threads=1
r gpu_smoke $K/gpu_smoke --test-threads=1
r gpu_memory $K/gpu_memory --test-threads=1
r gpu_peer $K/gpu_peer --test-threads=1
r example_parity $K/example_parity --test-threads=1
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $K/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
for rows in 9 8 7 9; do KS_ROWS=$rows timeout 60 $X/bench_base 8 2 > $OUT/logs/bench-rows$rows.txt 2>&1; echo "rows $rows: $(grep -E '^ks-inner' $OUT/logs/bench-rows$rows.txt | tr '\n' ' ')"; done
grep -E '^(fwd|inv|fwd-g1|chain-pdl-g) ' $OUT/logs/bench-rows9.txt
echo "== peer"; t0=$(date +%s); timeout 260 bash .peer/build-and-time.sh .peer > $OUT/logs/peer-run.log 2>&1; echo "peer rc=$? ($(( $(date +%s)-t0 )) s)"
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt
for n in k1 k2; do r oplat-$n $K/gpu_oplat --nocapture; grep -E '^[a-z_0-9]+ +[0-9]|^chain' $OUT/logs/oplat-$n.log | grep -v '/'; done
rm -f $OUT/logs/peer-build.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
