// Standalone probe (experiments, not part of the build): what does the boundary between a
// chain graph (three dependent kernels, as the key switch's) and a one-node graph cost on the
// GPU? Run 203 found any op next to rotate or relinearize ~2 us dearer than the two ops' own
// back-to-back times, and none between one-node graphs. Kernels: three grid-stride passes over
// 16 MiB (264 blocks of 256 threads, two per SM), the second and third starting with
// griddepcontrol.wait. Chains, each one graph captured from stream launches:
//   pdl:  K1 -> K2 -> K3, K2 and K3 with programmatic stream serialization (the engine's form)
//   full: the same with full edges
//   coop: pdl with K2 launched cooperatively (as ks_inner_gs)
//   pdl2 / full2: K1 -> K2 only, programmatic / full edge
// S: a one-node graph of K1. Bursts of 100 graph launches (the host ahead of the GPU: each
// kernel ~10 us), median of 7: chain alone, S alone, chain and S alternated; the alternation's
// excess over the mean of the two uniform bursts, per pair.
//
// nvcc -arch=sm_90 -O3 -std=c++17 kernels/bench/graph_boundary_probe.cu -o graph_boundary_probe
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "bench_check.cuh"
#include "bench_launch.cuh"

typedef unsigned long long u64;
constexpr u64 WORDS = 2u << 20;  // 16 MiB
constexpr int BLOCKS = 264, THREADS = 256;

__device__ __forceinline__ void dep_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

__global__ void k1(const u64* __restrict__ a, u64* __restrict__ b) {
    for (u64 i = (u64)blockIdx.x * THREADS + threadIdx.x; i < WORDS; i += (u64)BLOCKS * THREADS)
        b[i] = a[i] * 3 + 1;
}
__global__ void k2(const u64* __restrict__ a, u64* __restrict__ b) {
    dep_wait();
    for (u64 i = (u64)blockIdx.x * THREADS + threadIdx.x; i < WORDS; i += (u64)BLOCKS * THREADS)
        b[i] = a[i] ^ (a[i] >> 7);
}

enum Form { PDL, FULL, COOP, PDL2, FULL2 };

static cudaError_t launch(void (*k)(const u64*, u64*), bool pdl, bool coop, cudaStream_t st,
                          const u64* a, u64* b) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(BLOCKS);
    cfg.blockDim = dim3(THREADS);
    cfg.stream = st;
    cudaLaunchAttribute at[2];
    cfg.attrs = at;
    cfg.numAttrs = launch_attrs(at, pdl, coop);
    return cudaLaunchKernelEx(&cfg, k, a, b);
}

static cudaError_t capture_chain(Form f, cudaStream_t st, u64* x, u64* y, cudaGraphExec_t* ex) {
    cudaGraph_t g;
    cudaError_t e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    const bool pdl = f == PDL || f == COOP || f == PDL2;
    if (e == cudaSuccess) e = launch(k1, false, false, st, x, y);
    if (e == cudaSuccess) e = launch(k2, pdl, f == COOP, st, y, x);
    if (e == cudaSuccess && f != PDL2 && f != FULL2) e = launch(k2, pdl, false, st, x, y);
    cudaError_t e2 = cudaStreamEndCapture(st, &g);
    if (e != cudaSuccess) return e;
    if (e2 != cudaSuccess) return e2;
    return cudaGraphInstantiate(ex, g, 0);
}

static cudaError_t capture_single(cudaStream_t st, u64* x, u64* y, cudaGraphExec_t* ex) {
    cudaGraph_t g;
    cudaError_t e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    if (e == cudaSuccess) e = launch(k1, false, false, st, y, x);
    cudaError_t e2 = cudaStreamEndCapture(st, &g);
    if (e != cudaSuccess) return e;
    if (e2 != cudaSuccess) return e2;
    return cudaGraphInstantiate(ex, g, 0);
}

// Median over 7 bursts of the us per burst item; seq: the graphs launched in turn, 100 in all.
static cudaError_t burst(const std::vector<cudaGraphExec_t>& seq, cudaStream_t st, cudaEvent_t a,
                         cudaEvent_t b, double* out) {
    std::vector<double> v;
    for (int rep = 0; rep < 8; rep++) {
        cudaError_t e = cudaStreamSynchronize(st);
        if (e == cudaSuccess) e = cudaEventRecord(a, st);
        for (int i = 0; i < 100 && e == cudaSuccess; i++) e = cudaGraphLaunch(seq[i % seq.size()], st);
        if (e == cudaSuccess) e = cudaEventRecord(b, st);
        if (e == cudaSuccess) e = cudaEventSynchronize(b);
        float ms = 0;
        if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, a, b);
        if (e != cudaSuccess) return e;
        if (rep > 0) v.push_back(ms * 1000.0 / 100.0);
    }
    std::sort(v.begin(), v.end());
    *out = v[v.size() / 2];
    return cudaSuccess;
}

int main() {
    u64 *x, *y;
    for (u64** p : {&x, &y}) {
        CK(cudaMalloc(p, WORDS * 8));
        CK(cudaMemset(*p, 1, WORDS * 8));
    }
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    cudaGraphExec_t single;
    // The one-node graph works on the chain's own buffers: with buffers of its own the
    // alternated bursts touched 64 MiB, more than the 50 MB L2 holds, and run 205's excess
    // (16-18 us per pair) was that working set, not the boundary.
    CK(capture_single(st, x, y, &single));
    const char* names[] = {"pdl", "full", "coop", "pdl2", "full2"};
    for (int pass = 0; pass < 2; pass++) {
        for (int f = 0; f < 5; f++) {
            cudaGraphExec_t chain;
            CK(capture_chain((Form)f, st, x, y, &chain));
            double c, s, alt;
            CK(burst({chain}, st, a, b, &c));
            CK(burst({single}, st, a, b, &s));
            CK(burst({chain, single}, st, a, b, &alt));
            printf("pass %d %-5s chain %.2f us, single %.2f, alternated %.2f per item: "
                   "excess %.2f us per pair\n",
                   pass, names[f], c, s, alt, 2 * alt - (c + s));
            CK(cudaGraphExecDestroy(chain));
        }
    }
    return 0;
}
