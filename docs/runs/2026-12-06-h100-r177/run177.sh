#!/bin/bash
# Run 177 (thirty-third session): gp_role's mixed rows tested as blockIdx.y < 2 (same roles,
# emulator clean; the committed PTX changes) checked by gpu_ops on a device; harness rows 46-49
# for cur (fa9a5e8's kernels), base (the tidy), and two bounds (wrong words on two limbs):
# nopart (the mixed blocks' binary64 partner leaves at once), nowide (their wide group leaves
# after opening the gate), with allf64 (run 166's bound) for reference; then FHElium built and
# timed, each of its tables beside gpu_oplat of the tidy (f) and of fa9a5e8 (gpu_oplat_old).
# Carry [".gpu/bin/f", ".gpu/exp2", ".peer"], LIMIT=560.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/f
header; cat $W/COMMIT
r gpu_ops $W/gpu_ops --test-threads=1
harness_passes "cur base nopart nowide allf64"
peer_oplat gpu_oplat gpu_oplat_old gpu_oplat gpu_oplat_old
finish
