#!/bin/bash
# Run 210 (forty-first session): on the card that came (asked for nvidia-h200): every GPU test
# at HEAD's code (.gpu/bin/f = e36e59d's bundle; HEAD changes only examples/ and docs since),
# memcheck of the pipeline tests, then FHElium built and timed with a gpu_oplat pass beside
# each of its tables (a same-call table at HEAD). FHElium's build is packed into $OUT when it is
# small enough to carry next time. Carry [".gpu/bin/f", ".peer"], LIMIT=480.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f/COMMIT
gpu_tests .gpu/bin/f
r memcheck-pipe /usr/local/cuda/bin/compute-sanitizer --tool memcheck .gpu/bin/f/gpu_ops --test-threads=1 pipeline
W=.gpu/bin/f
peer_oplat gpu_oplat gpu_oplat gpu_oplat
du -sh /tmp/peer-fh /tmp/peer-site 2>/dev/null
tar czf $OUT/peer-build.tgz -C /tmp peer-fh peer-site 2>/dev/null; ls -la $OUT/peer-build.tgz
[ $(stat -c %s $OUT/peer-build.tgz 2>/dev/null || echo 0) -lt 50000000 ] || rm -f $OUT/peer-build.tgz
finish
