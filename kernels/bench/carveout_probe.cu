// Standalone probe (experiments, not part of the build): what does a change of the SMs'
// L1 / shared-memory split between two dependent kernels cost? A = a kernel with 32 KiB of
// static shared memory (128 blocks of 256 threads, 2 MiB through the tile, like the paired
// NTT's grid; cooperative when COOP=1), B = an elementwise kernel with none (1024 x 256, 2 MiB).
// Each sequence is captured into one graph (kernel to kernel on the GPU, no host in between):
// 50 x (A, B), 100 x A, 100 x B; median of 20 graph launches after 5 warm-ups, per kernel.
// The pairs' excess over the mean of the uniform sequences is what the alternation costs. The
// modes set cudaFuncAttributePreferredSharedMemoryCarveout: default (-1, the driver's choice
// per kernel), both kernels 100 (max shared), both 50, A 100 with B default.
//
// nvcc -arch=sm_90 -O3 -std=c++17 kernels/bench/carveout_probe.cu -o carveout_probe
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_check.cuh"
#include "bench_launch.cuh"
#include "bench_single.cuh"

typedef unsigned long long u64;

__global__ void __launch_bounds__(256) a_smem(const u64* __restrict__ in, u64* __restrict__ out) {
    __shared__ u64 s[4096];
    const unsigned t = threadIdx.x, b = blockIdx.x;
    const u64* src = in + (u64)b * 2048;
#pragma unroll
    for (int e = 0; e < 8; e++) s[t + 256 * e] = src[t + 256 * e] * 3 + 1;
    __syncthreads();
#pragma unroll
    for (int e = 0; e < 8; e++) s[2048 + t * 8 + e] = s[(t * 8 + e) % 2048] ^ (u64)e;
    __syncthreads();
    u64* dst = out + (u64)b * 2048;
#pragma unroll
    for (int e = 0; e < 8; e++) dst[t + 256 * e] = s[2048 + t + 256 * e];
}

__global__ void __launch_bounds__(256) b_plain(const u64* __restrict__ in, u64* __restrict__ out) {
    const u64 i = (u64)blockIdx.x * 256 + threadIdx.x;
    out[i] = in[i] * 5 + 7;
}

static cudaError_t launch_a(bool coop, cudaStream_t st, const u64* in, u64* out) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(128);
    cfg.blockDim = dim3(256);
    cfg.stream = st;
    cudaLaunchAttribute at[1];
    cfg.attrs = at;
    cfg.numAttrs = launch_attrs(at, false, coop);
    return cudaLaunchKernelEx(&cfg, a_smem, in, out);
}

static cudaError_t launch_b(cudaStream_t st, const u64* in, u64* out) {
    b_plain<<<1024, 256, 0, st>>>(in, out);
    return cudaGetLastError();
}

// kind 0: 50 x (A, B); 1: 100 x A; 2: 100 x B. Buffers alternate so each kernel reads what the
// one before it wrote.
static cudaError_t capture(int kind, bool coop, cudaStream_t st, u64* x, u64* y,
                           cudaGraphExec_t* ex) {
    cudaGraph_t g;
    cudaError_t e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    for (int i = 0; i < 100 && e == cudaSuccess; i++) {
        const u64* in = i % 2 ? y : x;
        u64* out = i % 2 ? x : y;
        const bool a = kind == 1 || (kind == 0 && i % 2 == 0);
        e = a ? launch_a(coop, st, in, out) : launch_b(st, in, out);
    }
    cudaError_t e2 = cudaStreamEndCapture(st, &g);
    if (e != cudaSuccess) return e;
    if (e2 != cudaSuccess) return e2;
    return cudaGraphInstantiate(ex, g, 0);
}

int main() {
    const bool coop = std::getenv("COOP") != nullptr && std::atoi(std::getenv("COOP")) != 0;
    u64 *x, *y;
    CK(cudaMalloc(&x, 2u << 20));
    CK(cudaMalloc(&y, 2u << 20));
    CK(cudaMemset(x, 1, 2u << 20));
    CK(cudaMemset(y, 2, 2u << 20));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    struct Mode {
        const char* name;
        int ca, cb;
    } modes[] = {{"default", -1, -1}, {"both100", 100, 100}, {"both50", 50, 50},
                 {"a100", 100, -1}, {"default", -1, -1}};
    printf("COOP=%d\n", coop ? 1 : 0);
    for (const Mode& m : modes) {
        CK(cudaFuncSetAttribute(a_smem, cudaFuncAttributePreferredSharedMemoryCarveout, m.ca));
        CK(cudaFuncSetAttribute(b_plain, cudaFuncAttributePreferredSharedMemoryCarveout, m.cb));
        double us[3];
        for (int kind = 0; kind < 3; kind++) {
            cudaGraphExec_t ex;
            CK(capture(kind, coop, st, x, y, &ex));
            SingleCalls r;
            CK(time_single_calls(ex, st, a, b, 5, 20, &r));
            us[kind] = r.event_us / 100.0;
            CK(cudaGraphExecDestroy(ex));
        }
        printf("%-8s per kernel: A,B alternated %.3f us, A only %.3f, B only %.3f; "
               "alternation costs %.3f us per kernel\n",
               m.name, us[0], us[1], us[2], us[0] - (us[1] + us[2]) / 2);
    }
    return 0;
}
