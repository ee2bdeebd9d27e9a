#!/bin/bash
# Run 91: as run 90, with the test's gated pair of streams on different hardware queues (a
# spacer stream made between them: the driver maps streams to its 8 queues round-robin, and
# run 90's pair, made 32 apart, shared one, which serialised them); main's engine
# (.gpu/bin/o) five times and twice more under CUDA_DEVICE_MAX_CONNECTIONS=7, then the fixed
# engine (.gpu/bin/n) three times and gpu_ops in full.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
N=$R/.gpu/bin/n; O=$R/.gpu/bin/o
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 60 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|panicked|differ|mismatch|word' $OUT/logs/$name.log | head -3; }
for i in 1 2 3 4 5; do r old-streams-$i $O/gpu_ops --test-threads=1 streams_beyond_32; done
for i in 1 2; do CUDA_DEVICE_MAX_CONNECTIONS=7 r old-streams-c7-$i $O/gpu_ops --test-threads=1 streams_beyond_32; done
for i in 1 2 3; do r new-streams-$i $N/gpu_ops --test-threads=1 streams_beyond_32; done
r gpu_ops $N/gpu_ops --test-threads=1
dmesg 2>/dev/null | grep -i xid | tail -5
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
