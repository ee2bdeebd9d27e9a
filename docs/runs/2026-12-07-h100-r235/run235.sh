#!/bin/bash
# Run 235 (forty-fifth session): cheaper 60-bit butterflies (decision 0515's LooseN and the
# accumulated Shoup product; the engine bundle f also has LooseN in the key switch's NTTs,
# ntt_fwd_gq and ks_inner_gs / gh, the harness only in the paired kernels). Harness: .gpu/exp10/bench_old (HEAD's kernels, e471616) against
# bench_new (the working tree's), ntt_bench rows 46-49 in the engine's layout (WIDE=7), in the
# order old new new old, three passes; then the per-group timeline (variants.py's gpmarks of
# each, rows 46 and 48) in the order old new new old. Engine: the GPU tests of bundle
# .gpu/bin/f (the working tree), gpu_oplat of .gpu/bin/p (ed19de4, HEAD's engine) and f
# alternated three times, FHElium (prebuilt) beside f twice, memcheck and racecheck of the
# paired-NTT tests. Carry [".gpu/bin/f", ".gpu/bin/p", ".gpu/exp10", ".gpu/peer", ".peer"],
# LIMIT=420.
set -u
. docs/runs/common.sh
header
for pass in 1 2 3; do
  i=0
  for v in old new new old; do
    i=$((i + 1))
    need 15 "$v $pass" || break
    f=$OUT/logs/$v-$pass-$i.txt
    WIDE=7 ROWS=46-49 timeout 60 .gpu/exp10/bench_$v 8 2 > $f 2>&1
    echo "== $v pass $pass.$i rc=$? $(grep -E '^(fwd|inv)-gp' $f | awk '{printf "%s %s  ", $1, $3}')"
  done
done
for v in old new; do echo "$v: $(grep -h hash $OUT/logs/$v-1-*.txt | sort -u | tr -s ' ' | tr '\n' ' ')"; done
i=0
for m in oldmarks newmarks newmarks oldmarks; do
  i=$((i + 1))
  need 20 "$m $i" || break
  WIDE=7 ROWS=46,48 timeout 60 .gpu/exp10/bench_$m 8 2 > $OUT/logs/$m-$i.txt 2>&1
  echo "== $m $i rc=$?"; grep -E "^(fwd|inv)-gp|first start|row [01] g0|row 2 g[01]" $OUT/logs/$m-$i.txt
done
gpu_tests .gpu/bin/f
need 60 "engine ab" && AB_PASSES=3 ab_oplat '^(coefficient_to_ntt|ntt_to_coefficient|rotate_with_key|relinearize|example14_stage) +[0-9]' p f
W=.gpu/bin/f peer_oplat gpu_oplat gpu_oplat
san=/usr/local/cuda/bin/compute-sanitizer
need 60 memcheck && r memcheck-f $san --tool memcheck .gpu/bin/f/gpu_ops --test-threads=1 paired_ntts_
need 60 racecheck && r racecheck-f $san --tool racecheck .gpu/bin/f/gpu_ops --test-threads=1 paired_ntts_
finish
