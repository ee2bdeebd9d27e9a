// Launch attributes for the standalone harnesses of kernels/bench (ntt_bench's chain rows,
// graph_boundary_probe, carveout_probe): fills `at` with programmatic stream serialization (pdl) and the
// cooperative attribute (coop), in that order, and returns how many it wrote (at most 2).
#pragma once
#include <cuda_runtime.h>

static int launch_attrs(cudaLaunchAttribute* at, bool pdl, bool coop) {
    int n = 0;
    if (pdl) {
        at[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        at[n].val.programmaticStreamSerializationAllowed = 1;
        n++;
    }
    if (coop) {
        at[n].id = cudaLaunchAttributeCooperative;
        at[n].val.cooperative = 1;
        n++;
    }
    return n;
}
