#!/bin/bash
# Run 50 (eleventh session): verify main (04357df, .gpu/bin/h: the engine refactor never run on
# a GPU) with every single-GPU test binary and the examples; the harness (.gpu/bin/x) with the
# new row fwd-gq (the ciphertext NTT by the work queue, plain launch) and the variant twpre
# (second-phase twiddles loaded before the limb barrier), alternated; per-block phase marks;
# ncu source-level stalls of ntt_fwd_gs / ntt_inv_gs.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
H=$R/.gpu/bin/h; X=$R/.gpu/bin/x
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 200 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked|refused' $OUT/logs/$name.log | head -5; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for k in base1 twpre1 base2 twpre2; do v=${k%?}; echo "== harness $k"; (cd $X && ./bench_$v 8 2 > $OUT/logs/h-$k.txt 2>&1); grep -E "^(fwd|inv|nop|copy)|^hash (fwd|inv|fwd-gq)" $OUT/logs/h-$k.txt; done
echo "== timed"; (cd $X && ./bench_timed 8 2 > $OUT/logs/h-timed.txt 2>&1); grep -E "^(cycles|barrier|globaltimer)" $OUT/logs/h-timed.txt
for t in gpu_ops gpu_encrypt gpu_smoke gpu_memory gpu_peer example_parity; do r $t $H/$t --test-threads=1; done
for ex in automatic_residency basic_ckks explicit_residency; do (timeout 60 $H/$ex --device cuda:0; echo "$ex exit=$?") > $OUT/logs/$ex.txt 2>&1; tail -1 $OUT/logs/$ex.txt; done
echo "== ncu"; t0=$(date +%s)
for k in ntt_fwd_gs ntt_inv_gs; do
  (cd $X && timeout 150 ncu --clock-control none -k $k -s 20 -c 1 --set full --import-source yes -o $OUT/logs/ncu-$k ./bench_base 8 2 > $OUT/logs/ncu-$k.log 2>&1)
  ncu -i $OUT/logs/ncu-$k.ncu-rep --page source --csv --print-source sass > $OUT/logs/src-$k.csv 2>&1
  ncu -i $OUT/logs/ncu-$k.ncu-rep --page details > $OUT/logs/det-$k.txt 2>&1
  grep -E "Duration|Issue Slots Busy|Executed Ipc Active|highest-utilized|Warp Cycles Per Issued" $OUT/logs/det-$k.txt | head -8
done
echo "ncu $(( $(date +%s)-t0 )) s"
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
