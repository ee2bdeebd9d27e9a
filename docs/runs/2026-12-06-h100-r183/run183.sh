#!/bin/bash
# Run 183: run 181 again on 648fc5e (the leaner host path, run 182). gpu_oplat_probe
# = 648fc5e + probes.patch (this folder): trace spans named probe.* at the op's entry, after the
# result's allocation, before the paired launch, after the stream's barrier state, and around
# cuGraphLaunch, and probe.packed after the argument words are packed; the scoped subscriber notes each span's creation time from the call's start
# ("probes:" lines on stderr, medians, us; each probe adds ~0.02-0.03). Three passes.
# Carry [".gpu/bin/p"], LIMIT=100.
set -u
. docs/runs/common.sh
header
for i in 1 2 3; do
  need 20 "pass $i" || break
  timeout 40 .gpu/bin/p/gpu_oplat_probe2 --nocapture --test-threads=1 > $OUT/logs/probe-$i.log 2>&1; echo "pass $i rc=$?"
  grep -E "^coefficient_to_ntt +[0-9]|^probes:|^host split" $OUT/logs/probe-$i.log | tr -s ' '
done
finish
