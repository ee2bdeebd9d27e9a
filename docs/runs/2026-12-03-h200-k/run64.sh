#!/bin/bash
# Run 64 (harness): what the current NTT kernel (ntt_fwd_gs / ntt_inv_gs, 16 limbs) would take
# without its modular products (noarith: Shoup products replaced by an add), without its limb
# barrier (nosync), and without both (both), against base; two passes. Wrong words on purpose
# in the variants: they bound what arithmetic or barrier work could still save. Then base's
# rows 28-31: the *_gs kernels by a plain launch in clusters of 8 (co-scheduled limbs, no
# cooperative launch) against rows 0, 1, 21, 12; their hashes must equal those rows'.
set -u
X=$(pwd)/.gpu/bin/x
mkdir -p $OUT/logs
for pass in 1 2; do for v in base noarith nosync both; do
  timeout 60 $X/bench_$v 8 2 > $OUT/logs/$v-$pass.txt 2>&1
  echo "$v/$pass rc=$? $(grep -E '^(fwd|inv|fwd-g1) ' $OUT/logs/$v-$pass.txt | tr -s ' ' | tr '\n' ' ')"
done; done
for pass in 1 2; do timeout 60 $X/bench_base 8 2 > $OUT/logs/cl8-$pass.txt 2>&1; echo "cl8/$pass rc=$?"; grep -E '^(fwd|inv|fwd-plain|fwd-g1|ks-inner-gs|fwd-cl8|inv-cl8|fwd-cl8-g|ks-inner-cl8) ' $OUT/logs/cl8-$pass.txt; done
grep -E "^hash (fwd|inv|ks-inner)|max active" $OUT/logs/cl8-1.txt
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
