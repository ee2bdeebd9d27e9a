#!/bin/bash
cd "$(dirname "$0")/.."
export FHELIUM_REQUIRE_GPU=1 NCCL_NVLS_ENABLE=0
.gpu/bin/membench > $OUT/membench.txt 2>&1; echo membench=$?; tail -12 $OUT/membench.txt
.gpu/bin/peerbench > $OUT/peerbench.txt 2>&1; echo peerbench=$?; tail -9 $OUT/peerbench.txt
