#!/bin/bash
# Run 185: more same-call samples of the final code (648fc5e) against FHElium, on whatever card
# comes (asked for nvidia-h200): FHElium built and timed, then six FHElium tables each with a
# gpu_oplat pass beside it (run 184 found the host slow throughout; a quick-state pass is what
# decides the NTT ratio). Carry [".gpu/bin/f", ".peer"], LIMIT=400.
set -u
. docs/runs/common.sh
W=.gpu/bin/f
header; cat $W/COMMIT
peer_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat
finish
