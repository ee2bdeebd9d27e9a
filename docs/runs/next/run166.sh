#!/bin/bash
# Run 166 (thirty-first session): harness rows 46-49 (as run 159), three passes alternated, from
# variants.py's base (this tree, 520912e's kernels) and allf64 (binary64 for the wide prime's
# groups too: wrong words on that prime), what the 60-bit prime's integer groups still cost
# after the rotation and the inverse's gate. Carry [".gpu/exp2"] (howto section 6).
set -u
. docs/runs/common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for pass in 1 2 3; do
  for v in base allf64; do
    need 20 "$v $pass" || break 2
    ROWS=46-49 timeout 60 .gpu/exp2/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"; grep -E "^(fwd|inv)-gp" $OUT/logs/$v-$pass.txt
  done
done
for v in base allf64; do echo "$v: $(grep -h hash $OUT/logs/$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
