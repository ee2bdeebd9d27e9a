#!/bin/bash
# Run 90: streams_beyond_32_never_share_barrier_state rewritten so that the gated streams'
# launches include ntt_fwd_gq (plain launch, queue state) and ks_inner_gs (cooperative,
# counters): against main's engine (.gpu/bin/o) five times (60 s limit each: a shared queue
# state may hang), then the fixed engine (.gpu/bin/n) three times and gpu_ops in full.
set -u
export FHELIUM_REQUIRE_GPU=1
R=$(pwd)
N=$R/.gpu/bin/n; O=$R/.gpu/bin/o
mkdir -p $OUT/logs
r() { local name=$1; shift; local t0=$(date +%s); timeout 60 "$@" > $OUT/logs/$name.log 2>&1; echo "$name rc=$? ($(( $(date +%s)-t0 )) s)"; grep -E '^test result|panicked|differ|mismatch|word' $OUT/logs/$name.log | head -3; }
for i in 1 2 3 4 5; do r old-streams-$i $O/gpu_ops --test-threads=1 streams_beyond_32; done
for i in 1 2 3; do r new-streams-$i $N/gpu_ops --test-threads=1 streams_beyond_32; done
r gpu_ops $N/gpu_ops --test-threads=1
dmesg 2>/dev/null | grep -i xid | tail -5
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
