#!/bin/bash
# Run 223 (forty-third session): the paired limb barrier's wait without acquire (run 222: the
# acquire's CCTL.IVALL drops the SM's L1, the second phase's prefetched twiddles with it).
# Harness rows 46-49 (one counter region), three passes alternated: bench_old (81e1a02),
# bench_xch (decision 0514), bench_xchrlx (0514, relaxed wait), bench_xchrlxw (xchrlx with
# xchweak's weak accesses); hashes must be equal. Carry [".gpu/exp5"], LIMIT=120.
set -u
. docs/runs/common.sh
header
HARNESS=.gpu/exp5 harness_passes "old xch xchrlx xchrlxw"
CUOBJ=$(ls /usr/local/cuda/bin/cuobjdump 2>/dev/null || command -v cuobjdump)
echo "CCTL in xchrlx: $($CUOBJ -sass -fun ntt_fwd_gp .gpu/exp5/bench_xchrlx | grep -c CCTL) fwd, $($CUOBJ -sass -fun ntt_inv_gp .gpu/exp5/bench_xchrlx | grep -c CCTL) inv"
finish
