#!/bin/bash
# Run 111: what the inverse paired kernel's column-strided final stores cost: bench_rowst has
# them replaced by 4 contiguous 16-byte stores per thread (wrong positions on purpose, same
# bytes), bench_base = main's kernels; rows 48-49 (inverse) and 46-47 (forward, unchanged),
# alternated, four passes.
set -u
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
for p in base rowst base rowst base rowst base rowst; do echo "== bench_$p"; ROWS=46-49 timeout 120 .gpu/exp/bench_$p 8 2 2>&1 | grep -E "^(fwd|inv)-gp|rror"; done | tee $OUT/run111.txt
# bench_rowst's ckks_v.cu: in ntt_inv_gp, after inv8_last, the loop
#   for (int e = 0; e < 8; e++) limb[(hi + 16 * e) * SUB + col] = x[e];
# replaced by
#   u64* pdst = limb + (u64)(lo >> 3) * zs + (u64)(8 * blockIdx.x + (lo & 7)) * SUB + hi * 8;
#   for (int e = 0; e < 8; e += 2) st2(pdst + e, x[e], x[e + 1]);
