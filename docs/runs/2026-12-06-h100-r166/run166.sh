#!/bin/bash
# Run 166 (prepared in the thirty-first session, not run: its device time was spent): harness
# rows 46-49, three passes alternated, from variants.py's base (520912e's kernels), allf64
# (binary64 for the wide prime's groups too: wrong words on that prime: what the 60-bit prime's
# integer groups still cost after the rotation and the inverse's gate), the gate moved in the
# mixed blocks alone (mixA, mixB) or in the uniform blocks alone (uniA), the mixed blocks'
# groups' order swapped (swapmix), and gppf (each group asks L1 for its rows' twiddle lines at
# the start), invtr (the inverse's last words stored as 16-byte row pairs through the tile):
# same words but allf64's, checked in the emulator (howto section 6 shows how; a mutation of
# invtr's column fails it) and by the hashes here. Carry [".gpu/exp2"] (howto section 6:
# bench_<v> for the eight), LIMIT=60 is plenty (~15 s).
set -u
. docs/runs/common.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
harness_passes "base allf64 mixA mixB uniA swapmix gppf invtr"
tar czf $OUT/logs.tgz -C $OUT/logs . && rm -rf $OUT/logs
echo "total $(( $(date +%s) - T0 )) s"
