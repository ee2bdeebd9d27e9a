#!/bin/bash
# Run 201: (1) carveout_probe (.gpu/exp4): what a change of the L1 / shared split between two
# dependent kernels costs, plain and cooperative; (2) the key switch's table reads before its
# waits (md_tables, ks_tables) through the engine: gpu_oplat of 6215629 (.gpu/bin/h: HEAD's
# SASS) against the working tree (.gpu/bin/f), and the working tree with every kernel's
# preferred carveout at 100 (FHELIUM_CARVEOUT=100 and 44, the experiment knob: max shared / the 100 KiB split), alternated three
# times; (3) gpu_ops, gpu_encrypt, example_parity; memcheck of the key-switch tests,
# racecheck of the rotation test. Carry [".gpu/bin/f", ".gpu/bin/h", ".gpu/exp4"], LIMIT=420.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/h/COMMIT $W/COMMIT
for c in 0 1; do COOP=$c timeout 60 .gpu/exp4/carveout_probe 2>&1 | tee $OUT/logs/carveout-$c.txt; done
ROWS='^(rotate_with_key|coefficient_to_ntt|ntt_to_coefficient|multiply_plaintext|rescale_to_next_level|relinearize|example14_stage|rotate_many_with_keys/4|rotate_x4_one_by_one|encrypt_message) +[0-9]'
for i in 1 2 3; do
  for b in h f f100 f44; do
    need 60 "oplat $b $i" || break 2
    bin=.gpu/bin/${b:0:1}/gpu_oplat
    if [ ${#b} -gt 1 ]; then export FHELIUM_CARVEOUT=${b:1}; else unset FHELIUM_CARVEOUT; fi
    timeout 40 $bin --nocapture --test-threads=1 > $OUT/logs/ab-$b-$i.log 2>&1; echo "== $b $i rc=$?"
    grep -E "$ROWS" $OUT/logs/ab-$b-$i.log | tr -s ' ' | cut -d' ' -f1-2,7-8
  done
done
unset FHELIUM_CARVEOUT
gpu_tests $W "rotate_with_key_matches multiply_and_relinearize hoisted_rotations"
finish
