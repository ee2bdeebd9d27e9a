#!/bin/bash
# Run 219 (forty-second session): bench_gptag3 (gptag2 with the readers' tag checks batched:
# eight loads, one combined test, re-poll only on a miss; the emulator passes every check)
# against bench_base and bench_gptag2; rows 46-49, three passes alternated, hashes (must equal
# base's: cd071554a1c6bacb / 988eee4302cce375). Carry [".gpu/exp4"], LIMIT=60.
set -u
. docs/runs/common.sh
header
HARNESS=.gpu/exp4 harness_passes "base gptag2 gptag3"
finish
