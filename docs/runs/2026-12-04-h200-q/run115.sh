#!/bin/bash
# Run 115: after the second review (ntt_bench's launch helper takes the cluster size, rows
# 50-53 through it; the probes' stream and column loads in probe_common.cuh; exchange_probe's
# dsmem forms one kernel): every probe and the harness rows that launch in clusters still run,
# check their words and read as before (runs 64 / 100 / 103-104 / 113).
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
(for p in exchange_probe cluster8_probe launch_shape_probe submit_probe; do echo "== $p"; timeout 120 .gpu/exp/$p; done
 echo "== ntt_bench rows 28-31, 46-53"; ROWS=28-31,46-53 timeout 200 .gpu/exp/bench_base 8 2 | grep -E "^(fwd|inv|ks)-|^hash|rror") 2>&1 | tee $OUT/run115.txt
