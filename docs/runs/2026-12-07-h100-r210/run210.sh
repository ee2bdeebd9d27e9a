#!/bin/bash
# Run 210 (forty-first session). First the harness (.gpu/exp3, built from this commit's
# kernels/bench/ntt_bench.cu: bench_base = kernels/ckks.cu as it is, bench_allf64 = variants.py's
# allf64): rows 37-38 (run 68's quarter split by clusters of 2, integer butterflies), 46-47 (the
# engine's paired forward), 54-55 (the quarter split with binary64 butterflies below 2^41,
# ntt_fwd_q4f, new), three passes alternated, hashes (fwd-q4, fwd-q4f and fwd-gp must agree);
# allf64's 46-47 as the paired kernel's bound. Then every GPU test at HEAD's code
# (.gpu/bin/f = e36e59d's bundle; HEAD changes only examples/, kernels/bench and docs since),
# memcheck of the pipeline tests, and FHElium built and timed with a gpu_oplat pass beside each
# of its tables (a same-call table). FHElium's build is packed into $OUT when small enough to
# carry next time. Carry [".gpu/exp3", ".gpu/bin/f", ".peer"], LIMIT=500.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f/COMMIT
for pass in 1 2 3; do
  for v in base allf64; do
    rows=37-38,46-47,54-55; [ $v = allf64 ] && rows=46-47
    ROWS=$rows timeout 60 .gpu/exp3/bench_$v 8 2 > $OUT/logs/h-$v-$pass.txt 2>&1
    echo "== $v pass $pass rc=$?"; grep -E "^fwd-(q4|gp)" $OUT/logs/h-$v-$pass.txt
  done
done
grep -h -E "^hash|max active clusters of ntt_fwd_q4" $OUT/logs/h-base-1.txt $OUT/logs/h-allf64-1.txt
gpu_tests .gpu/bin/f
r memcheck-pipe /usr/local/cuda/bin/compute-sanitizer --tool memcheck .gpu/bin/f/gpu_ops --test-threads=1 pipeline
W=.gpu/bin/f
peer_oplat gpu_oplat gpu_oplat gpu_oplat
du -sh /tmp/peer-fh /tmp/peer-site 2>/dev/null
tar czf $OUT/peer-build.tgz -C /tmp peer-fh peer-site 2>/dev/null; ls -la $OUT/peer-build.tgz
[ $(stat -c %s $OUT/peer-build.tgz 2>/dev/null || echo 0) -lt 50000000 ] || rm -f $OUT/peer-build.tgz
finish
