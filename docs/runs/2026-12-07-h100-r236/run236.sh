#!/bin/bash
# Run 236 (forty-fifth session): after run 235 (LooseN in both paired kernels: no gain forward,
# maybe ~0.1 us inverse; the key switch slower), two narrower forms in the harness
# (.gpu/exp11): bench_nq (HEAD's kernels with only Shoup's product accumulated, x w + hi
# (2^64 - q)) and bench_ninv (nq plus LooseN in ntt_inv_gp only), against bench_old (HEAD's),
# rows 46-49 in the engine's layout (WIDE=7), order old nq ninv ninv nq old, three passes.
# Then gpu_ops of bundle .gpu/bin/f (main e471616 plus the new 50-bit chain test; kernels
# unchanged). Carry [".gpu/bin/f", ".gpu/exp11"], LIMIT=300.
set -u
. docs/runs/common.sh
header
r gpu_ops .gpu/bin/f/gpu_ops --test-threads=1
grep -E "50_bit" $OUT/logs/gpu_ops.log
for pass in 1 2 3; do
  i=0
  for v in old nq ninv ninv nq old; do
    i=$((i + 1))
    need 15 "$v $pass" || break
    f=$OUT/logs/$v-$pass-$i.txt
    WIDE=7 ROWS=46-49 timeout 60 .gpu/exp11/bench_$v 8 2 > $f 2>&1
    echo "== $v pass $pass.$i rc=$? $(grep -E '^(fwd|inv)-gp' $f | awk '{printf "%s %s  ", $1, $3}')"
  done
done
for v in old nq ninv; do echo "$v: $(grep -h hash $OUT/logs/$v-1-*.txt | sort -u | tr -s ' ' | tr '\n' ' ')"; done
finish
