#!/bin/bash
# Run 195: decision 0513: the paired NTT kernels told by a launch argument (`wide`) which limb
# rows' primes are wide, so no block loads a prime before its input. Harness .gpu/exp3/bench_gw
# (the working tree's kernels) with the argument (default) and without it (GPWIDE=0: each block
# loads its primes, as before), rows 46-49, three passes alternated, hashes; then gpu_oplat of
# 34b431d (.gpu/bin/f1) and the working tree (.gpu/bin/f) alternated twice; gpu_ops,
# gpu_encrypt, example_parity; memcheck and racecheck of the NTT tests.
# Carry [".gpu/bin/f", ".gpu/bin/f1", ".gpu/exp3"], LIMIT=300.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f1/COMMIT $W/COMMIT
for pass in 1 2 3; do
  for v in load arg; do
    g=1; [ $v = load ] && g=0
    GPWIDE=$g ROWS=46-49 timeout 60 .gpu/exp3/bench_gw 8 2 > $OUT/logs/$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"; grep -E "^(fwd|inv)-gp" $OUT/logs/$v-$pass.txt
  done
done
for v in load arg; do echo "$v: $(grep -h hash $OUT/logs/$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
rows='^(rotate_with_key|coefficient_to_ntt|ntt_to_coefficient|multiply_plaintext|example14_stage|relinearize|encrypt_message|decrypt_message) +[0-9]'
for i in 1 2; do
  for b in f1 f; do
    timeout 30 .gpu/bin/$b/gpu_oplat --nocapture --test-threads=1 > $OUT/logs/ab-$b-$i.log 2>&1; echo "== $b $i rc=$?"
    grep -E "$rows" $OUT/logs/ab-$b-$i.log | tr -s ' ' | cut -d' ' -f1-2,7-8
  done
done
r gpu_ops $W/gpu_ops --test-threads=1
r gpu_encrypt $W/gpu_encrypt --test-threads=1
r example_parity $W/example_parity --test-threads=1
SAN=/usr/local/cuda/bin/compute-sanitizer
need 60 memcheck && r memcheck-ntt $SAN --tool memcheck $W/gpu_ops --test-threads=1 ntt_both_directions paired_ntts_between
need 60 racecheck && r racecheck-ntt $SAN --tool racecheck $W/gpu_ops --test-threads=1 ntt_both_directions_match_cpu
finish
