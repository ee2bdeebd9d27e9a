#!/bin/bash
# Run 130: the GPU test binaries after tests/common's shared comparison (ciphertexts now also
# compare their basis): gpu_ops, gpu_encrypt (.gpu/bin/t).
set -u
export FHELIUM_REQUIRE_GPU=1
T=.gpu/bin/t
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked' $OUT/logs/$name.log | head -6; }
r gpu_ops $T/gpu_ops --test-threads=1 --nocapture
grep -c "bit-exact" $OUT/logs/gpu_ops.log
r gpu_encrypt $T/gpu_encrypt --test-threads=1 --nocapture
grep -c "bit-exact" $OUT/logs/gpu_encrypt.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
