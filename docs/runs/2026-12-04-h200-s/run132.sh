#!/bin/bash
# Run 132: the GPU tests after the final review (shared key upload, gpu_encrypt's encrypt
# checks through one fixture method): gpu_ops, gpu_encrypt (.gpu/bin/v).
set -u
export FHELIUM_REQUIRE_GPU=1
V=.gpu/bin/v
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 240 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|FAILED|panicked' $OUT/logs/$name.log | head -6; }
r gpu_ops $V/gpu_ops --test-threads=1
r gpu_encrypt $V/gpu_encrypt --test-threads=1 --nocapture
grep -c "bit-exact" $OUT/logs/gpu_encrypt.log
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
