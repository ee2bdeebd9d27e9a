#!/bin/bash
# Run 59 (harness): ks_inner_gs's digit loop with the next digit's lines asked of L2 while the
# current one loads (kspf1: one ahead, kspf2: two ahead) and unrolled by 2 (ksunroll2), against
# base, alternated twice; words must equal base's (hash ks-inner-gs 30b9c28c2b84c50d, chains
# f58b5242f0e61ff8).
set -u
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
for pass in 1 2; do for v in base kspf1 kspf2 ksunroll2; do
  timeout 60 $X/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
  echo "$v/$pass rc=$? $(grep -E '^(ks-inner-gs|chain-pdl-g) ' $OUT/logs/$v-$pass.txt | tr -s ' ' | tr '\n' ' ') $(grep -E '^hash (ks-inner-gs|chain-pdl-g)' $OUT/logs/$v-$pass.txt | awk '{print $3}' | tr '\n' ' ')"
done; done
for v in base kspf1; do KS_ROWS=8 timeout 60 $X/bench_$v 8 2 > $OUT/logs/$v-rows8.txt 2>&1; echo "$v rows8: $(grep -E '^ks-inner-gs ' $OUT/logs/$v-rows8.txt | tr -s ' ')"; done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
