// Shared by the standalone harnesses of kernels/bench (include after ckks_v.cu): the
// runtime-error check (bench_check.cuh) and a no-work kernel with the NTT kernels' block and
// shared memory.
#pragma once
#include "bench_check.cuh"

// Same grid, block size (512) and static shared memory as the cluster NTT kernels, no work:
// launch cost. (The *_gs kernels run 256 threads with the same grid.)
extern "C" __global__ void __launch_bounds__(512, 1) nop_ct(u64* out) {
    __shared__ u64 sh[2 * CL_WORDS];
    sh[threadIdx.x] = threadIdx.x;
    __syncthreads();
    if (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) out[0] = sh[5];
}
