#!/bin/bash
# Run 238 (forty-fifth session): LooseN without the code growth. Run 237's source counters
# showed that runs 235-236's harness never ran LooseN (its wide primes lie ~2^35 below 2^60,
# outside near60) and that the third arithmetic made the binary64 path wait on instruction
# fetch (stall_no_inst 571 of its 1095 samples, 13 of 507 before). Here the harness's wide
# primes lie within 2^32 of 2^60 (ntt_bench's new WIDED=37) and bench_n2's paired kernels have
# two arithmetics, LooseF and LooseN (LooseN in Loose's place; exact only for such primes), against
# bench_old (e471616) and bench_nq (the accumulated product alone), rows 46-49, WIDE=7, order
# old n2 nq nq n2 old, three passes; then the source counters of old and n2's forward.
# Carry [".gpu/exp12"], LIMIT=200.
set -u
. docs/runs/common.sh
header
export WIDED=37 WIDE=7
for pass in 1 2 3; do
  i=0
  for v in old n2 nq nq n2 old; do
    i=$((i + 1))
    need 15 "$v $pass" || break
    f=$OUT/logs/$v-$pass-$i.txt
    ROWS=46-49 timeout 60 .gpu/exp12/bench_$v 8 2 > $f 2>&1
    echo "== $v pass $pass.$i rc=$? $(grep -E '^(fwd|inv)-gp' $f | awk '{printf "%s %s  ", $1, $3}')"
  done
done
for v in old n2 nq; do echo "$v: $(grep -h hash $OUT/logs/$v-1-*.txt | sort -u | tr -s ' ' | tr '\n' ' ')"; done
NCU=$(ls /usr/local/cuda/bin/ncu 2>/dev/null || command -v ncu)
for v in old n2; do
  for k in ntt_fwd_gp ntt_inv_gp; do
    need 30 "ncu $v $k" || break
    row=46; [ $k = ntt_inv_gp ] && row=48
    ROWS=$row timeout 90 $NCU --clock-control none -k regex:"^$k\$" -s 60 -c 1 \
      --section SourceCounters --section WarpStateStats -o $OUT/$v-$k .gpu/exp12/bench_$v 8 2 > $OUT/logs/ncu-$v-$k.txt 2>&1
    timeout 60 $NCU --import $OUT/$v-$k.ncu-rep --page source --csv --print-source sass > $OUT/$v-$k-sass.csv 2>&1
    echo "== ncu $v $k rc=$? $(wc -l < $OUT/$v-$k-sass.csv) lines"
    rm -f $OUT/$v-$k.ncu-rep
  done
done
finish
