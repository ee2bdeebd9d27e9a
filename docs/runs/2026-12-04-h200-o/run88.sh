#!/bin/bash
# Run 88: is the host's submission time (1.5 us in some gpu_oplat processes, 2.4-2.9 in
# others, uniform over the ops of a process) a property of the process or of the stream?
# kernels/bench/submit_probe.cu (8 streams x 2 passes per process), four processes with the
# default environment and two each with CUDA_DEVICE_MAX_CONNECTIONS=1 / 32; then main's
# gpu_oplat (.gpu/bin/q) alternated default / CUDA_DEVICE_MAX_CONNECTIONS=1, three each.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
Q=$R/.gpu/bin/q; E=$R/.gpu/exp
mkdir -p $OUT/logs
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for i in 1 2 3 4; do echo "== probe default $i"; $E/submit_probe | awk '/pass/{printf "%s/%s:%s/%s ", $2, $4, $6, $8} END{print ""}'; done
for c in 1 32; do for i in 1 2; do echo "== probe conn=$c $i"; CUDA_DEVICE_MAX_CONNECTIONS=$c $E/submit_probe | awk '/pass/{printf "%s/%s:%s/%s ", $2, $4, $6, $8} END{print ""}'; done; done
for n in d1 c1 d2 c2 d3 c3; do
  if [ ${n:0:1} = c ]; then export CUDA_DEVICE_MAX_CONNECTIONS=1; else unset CUDA_DEVICE_MAX_CONNECTIONS; fi
  timeout 120 $Q/gpu_oplat --nocapture > $OUT/logs/oplat-$n.log 2>&1; echo "== oplat $n rc=$?"
  grep -E '^(coefficient_to_ntt|ntt_to_coefficient|multiply_plaintext|rotate_with_key) +[0-9]' $OUT/logs/oplat-$n.log | tr -s ' ' | cut -d' ' -f1-2,7-8
done
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
