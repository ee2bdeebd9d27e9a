#!/bin/bash
# Run 233 (forty-fourth session): first, the GPU tests of bundle .gpu/bin/f (9de7b58: gpu_ops's
# tag test through Fixture::check_poisoned, not yet run on a GPU). Then the layout lead of run
# 230 without its order caveat: bench_base (current kernels) in the engine's layout (WIDE=7)
# and the default (wide prime first), alternated 0 7 7 0 0 7 (runs 230-232 always ran WIDE=7
# first in a pass); then bench_gpmarks (variants.py's gpmarks: each paired group notes
# %globaltimer at its start, limb barrier arrival and exit, and end) in the order 7 0 0 7: per
# grid row and group the medians over 50 single launches of rows 46 / 48, and how often each
# ended last. regk / regkmarks: the same with the counter and exchange regions indexed by grid
# row (variants.py's regk), so WIDE=7 uses the default layout's regions. Carry [".gpu/bin/f",
# ".gpu/exp9"], LIMIT=400. Then the engine with regions by grid row (bundle .gpu/bin/g, branch
# regk): gpu_ops, and gpu_oplat of f and g alternated three times (NTT rows). Carry
# [".gpu/bin/f", ".gpu/bin/g", ".gpu/exp9", ".gpu/peer", ".peer"], LIMIT=480. Last, time
# allowing, FHElium (prebuilt) with f's and g's gpu_oplat beside it in turn.
set -u
. docs/runs/common.sh
header
gpu_tests .gpu/bin/f
HARNESS=.gpu/exp9 layout_passes "base regk" "0 7 7 0"
i=0
for m in gpmarks regkmarks; do
  for lay in 7 0 0 7; do
    i=$((i + 1))
    need 20 "$m $i" || break
    WIDE=$lay ROWS=46,48 timeout 60 .gpu/exp9/bench_$m 8 2 > $OUT/logs/$m-$i-w$lay.txt 2>&1
    echo "== $m $i WIDE=$lay rc=$?"; grep -E "^(fwd|inv)-gp|^gpmarks|^hash" $OUT/logs/$m-$i-w$lay.txt
  done
done
need 60 "engine regk" && r gpu_ops-g .gpu/bin/g/gpu_ops --test-threads=1
need 60 "engine ab" && AB_PASSES=3 ab_oplat '^(coefficient_to_ntt|ntt_to_coefficient) +[0-9]' f g
mkdir -p /tmp/w && ln -sf $PWD/.gpu/bin/f/gpu_oplat /tmp/w/f_oplat && ln -sf $PWD/.gpu/bin/g/gpu_oplat /tmp/w/g_oplat
W=/tmp/w peer_oplat f_oplat g_oplat f_oplat g_oplat
finish
