#!/bin/bash
# Run 184: the session's final code (648fc5e: the gp_role tidy, the leaner host path; later
# commits change only docs) checked and timed on whatever card comes (asked for nvidia-h200,
# the machine): gpu_ops, gpu_encrypt, example_parity, racecheck and memcheck of the NTT
# tests (the committed PTX changed with the tidy), then FHElium built and timed in the same
# call with a gpu_oplat pass beside each of four FHElium tables. Carry [".gpu/bin/f", ".peer"]
# (`bash docs/runs/next/make-bundle-f.sh`), LIMIT=560.
set -u
. docs/runs/common.sh
export FHELIUM_REQUIRE_GPU=1
W=.gpu/bin/f
header; cat $W/COMMIT
r gpu_ops $W/gpu_ops --test-threads=1
need 60 gpu_encrypt && r gpu_encrypt $W/gpu_encrypt --test-threads=1
need 60 example_parity && r example_parity $W/example_parity --test-threads=1
need 330 racecheck && r racecheck-ntt /usr/local/cuda/bin/compute-sanitizer --tool racecheck $W/gpu_ops --test-threads=1 ntt_both_directions_match_cpu
need 300 memcheck && r memcheck-ntt /usr/local/cuda/bin/compute-sanitizer --tool memcheck $W/gpu_ops --test-threads=1 ntt_both_directions paired_ntts_between
peer_oplat gpu_oplat gpu_oplat gpu_oplat gpu_oplat
finish
