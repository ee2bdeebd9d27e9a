#!/bin/bash
# Run 81: the review's host-only refactor (launch_gs / launch_gp through one launch_synced):
# gpu_ops, gpu_encrypt, example_parity on the H200 (.gpu/bin/q).
set -u
export FHELIUM_REQUIRE_GPU=1
Q=$(pwd)/.gpu/bin/q
for t in gpu_ops gpu_encrypt example_parity; do timeout 150 $Q/$t --test-threads=1 > $OUT/$t.log 2>&1; echo "$t rc=$?"; grep -E '^test result|FAILED|panicked' $OUT/$t.log | head -3; done
