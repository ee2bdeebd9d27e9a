#!/bin/bash
# Run 200: a same-call FHElium table with the thirty-fifth session's key switch: FHElium built
# and timed (.peer), then gpu_oplat of 6215629 (.gpu/bin/f: the same SASS as 9717b27) beside
# each FHElium table while time is left. Carry [".gpu/bin/f", ".peer"], LIMIT=280.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
export FHELIUM_REQUIRE_GPU=1
header; cat $W/COMMIT
peer_oplat gpu_oplat gpu_oplat gpu_oplat
finish
