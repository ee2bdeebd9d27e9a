#!/bin/bash
# Run 228 (forty-third session): the engine at facc799 (decision 0514, the relaxed wait, the
# batched re-polls; .gpu/bin/f): the GPU tests, gpu_oplat of the old (.gpu/bin/o = e36e59d's
# engine code) and new bundles alternated three times, FHElium (prebuilt) with the new
# gpu_oplat beside it three times; memcheck / racecheck of the 0514 tests.
# Carry [".gpu/bin/f", ".gpu/bin/o", ".gpu/peer", ".peer"], LIMIT=400.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f/COMMIT
gpu_tests .gpu/bin/f
AB_PASSES=3 ab_oplat '^(coefficient_to_ntt|ntt_to_coefficient) +[0-9]' o f
W=.gpu/bin/f
peer_oplat gpu_oplat gpu_oplat gpu_oplat
san=/usr/local/cuda/bin/compute-sanitizer
need 60 memcheck && r memcheck-xch $san --tool memcheck .gpu/bin/f/gpu_ops --test-threads=1 paired_ntts_
need 60 racecheck && r racecheck-xch $san --tool racecheck .gpu/bin/f/gpu_ops --test-threads=1 paired_ntts_stay
finish
