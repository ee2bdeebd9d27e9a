#!/bin/bash
# Run 211 (forty-first session): a same-call table on the card that comes (asked for
# nvidia-h200: the card), FHElium from the build run 210 packed (.gpu/peer/
# peer-build.tgz, unpacked instead of built), six tables with a gpu_oplat pass (.gpu/bin/f =
# e36e59d's bundle = HEAD's engine code) beside each, so that a quick host state, if one comes,
# is sampled. Carry [".gpu/bin/f", ".gpu/peer", ".peer"], LIMIT=200.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
header; cat .gpu/bin/f/COMMIT
W=.gpu/bin/f
peer_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat
finish
