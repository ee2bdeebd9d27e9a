#!/bin/bash
# Run 159 (thirty-first session): harness probes of the binary64 paired kernels (decision 0511),
# timing, words by hash: kernels/bench/ntt_bench.cu rows 46-49 (ntt_fwd_gp / ntt_inv_gp,
# cooperative back to back and one-node graphs) from variants.py's base (this tree), nogatemix
# (the transposed rows' mixed blocks without the gate), nogate (no gate anywhere) and twd
# (twiddles used as doubles without conversion: wrong words, the bound of a double table),
# three passes alternated. Carry [".gpu/exp2"] (nvcc -arch=sm_90 -O3 -I/tmp/exp/<v>
# kernels/bench/ntt_bench.cu -o .gpu/exp2/bench_<v>; howto section 6).
set -u
. docs/runs/common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for pass in 1 2 3; do
  for v in base nogatemix nogate twd; do
    need 20 "$v $pass" || break 2
    ROWS=46-49 timeout 60 .gpu/exp2/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"; grep -E "^(fwd|inv)-gp" $OUT/logs/$v-$pass.txt
  done
done
for v in base nogatemix nogate twd; do echo "$v: $(grep -h hash $OUT/logs/$v-1.txt | tr -s ' ' | tr '\n' ' ')"; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
