#!/bin/bash
# Run 234 (forty-fourth session, review mend): the GPU tests of bundle .gpu/bin/f at ed19de4
# (sync_entry through the map's entry API; the same barrier state and scratch per stream).
# Carry [".gpu/bin/f"], LIMIT=200.
set -u
. docs/runs/common.sh
header
gpu_tests .gpu/bin/f
finish
