#!/bin/bash
# Run 9: the final commit's ckks GPU tests, then FHElium and our oplat in the same call again.
set -u
cd "$(dirname "$0")/.."
export FHELIUM_REQUIRE_GPU=1
B=.gpu/bin
r() { local name=$1; shift; timeout 200 "$@" > $OUT/$name.log 2>&1; echo "$name rc=$?"; grep -E '^test result|FAILED|panicked|refused' $OUT/$name.log | head -5; }
r gpu_ops $B/gpu_ops --test-threads=1 --nocapture
r gpu_encrypt $B/gpu_encrypt --test-threads=1
echo "== peer (FHElium built and timed in this call)"; timeout 300 bash .peer/build-and-time.sh .peer > $OUT/peer-run.log 2>&1; echo peer=$?; tail -11 $OUT/peer-run.log
export FHELIUM_PEER_OPLAT=$OUT/peer-oplat.txt; r gpu_oplat_after_peer $B/gpu_oplat --nocapture
grep -E '^[a-z_0-9/]+ +[0-9]' $OUT/gpu_oplat_after_peer.log | head -24
rm -f $OUT/peer-build.log
cd $OUT && tar czf logs.tgz *.log *.txt *.json 2>/dev/null; rm -f *.log *.txt *.json; ls $OUT
