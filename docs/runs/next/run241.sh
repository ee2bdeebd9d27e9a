#!/bin/bash
# Run 241 (forty-sixth session): six more same-call tables of decision 0515's engine (bundle f,
# 7a503e8's engine code) beside FHElium (prebuilt: .gpu/peer/peer-build.tgz from run 239), the
# evidence for issue 7's target (the rule is written in docs/perf.md before the call).
# Carry [".gpu/bin/f", ".gpu/peer", ".peer"], LIMIT=200.
set -u
. docs/runs/common.sh
header
W=.gpu/bin/f peer_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat
finish
