// Standalone probe (experiments, not part of the build): do the NTT kernel's lock-step memory
// phases queue behind each other in L2? Each block (256 threads, 8 words per thread = 16 KiB,
// the paired NTT kernel's tile) runs the kernel's memory skeleton with no arithmetic:
//   load its tile from global memory (ldcg), block barrier           -> "load"
//   store it to a second buffer, block barrier, thread 0's fence     -> "store+fence"
//   load a tile from that buffer again (ldcg), block barrier         -> "reload"
// per-block clock64 marks (cycles) for grids of 1 .. 128 blocks (one per SM). If the phases
// were bandwidth-bound bursts, a phase would take longer with 128 blocks than with one; if
// they are latency-bound, the same. Inputs warm in L2 (one untimed launch first), then the same
// after 256 MiB were written (inputs from HBM).
//
// nvcc -arch=sm_90 -O3 -std=c++17 kernels/bench/burst_probe.cu -o burst_probe
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "bench_check.cuh"

typedef unsigned long long u64;
#define WORDS 2048
#define THREADS 256

__device__ __forceinline__ u64 ldcg(const u64* p) {
    u64 v;
    asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(v) : "l"(p));
    return v;
}

// marks: 3 intervals per block; sink keeps the loads live.
__global__ void __launch_bounds__(THREADS, 1)
    skeleton(const u64* in, u64* mid, u64* marks, u64* sink) {
    const u64* src = in + (u64)blockIdx.x * WORDS;
    u64* dst = mid + (u64)blockIdx.x * WORDS;
    __syncthreads();
    const u64 t0 = clock64();
    u64 x[8];
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = ldcg(src + threadIdx.x + THREADS * e);
    u64 acc = 0;
#pragma unroll
    for (int e = 0; e < 8; e++) acc ^= x[e];
    if (acc == 0x123456789ull) sink[0] = acc;  // the loads must return before the barrier
    __syncthreads();
    const u64 t1 = clock64();
#pragma unroll
    for (int e = 0; e < 8; e++) dst[threadIdx.x + THREADS * e] = x[e] + e;
    __syncthreads();
    if (threadIdx.x == 0) __threadfence();
    __syncthreads();
    const u64 t2 = clock64();
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = ldcg(dst + threadIdx.x + THREADS * e);
    acc = 0;
#pragma unroll
    for (int e = 0; e < 8; e++) acc ^= x[e];
    if (acc == 0x123456789ull) sink[1] = acc;
    __syncthreads();
    const u64 t3 = clock64();
    if (threadIdx.x == 0) {
        marks[3 * blockIdx.x + 0] = t1 - t0;
        marks[3 * blockIdx.x + 1] = t2 - t1;
        marks[3 * blockIdx.x + 2] = t3 - t2;
    }
}

__global__ void scrub(u64* p, size_t n) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = i;
}

int main() {
    const int MAXB = 132;
    u64 *in, *mid, *marks, *sink, *big;
    const size_t big_words = (256u << 20) / 8;
    CK(cudaMalloc(&in, MAXB * WORDS * 8));
    CK(cudaMalloc(&mid, MAXB * WORDS * 8));
    CK(cudaMalloc(&marks, MAXB * 3 * 8));
    CK(cudaMalloc(&sink, 16));
    CK(cudaMalloc(&big, big_words * 8));
    CK(cudaMemset(in, 1, MAXB * WORDS * 8));
    std::vector<u64> h(MAXB * 3);
    const int grids[] = {1, 8, 16, 32, 64, 128, 132};
    printf("blocks where  load(med/max)  store+fence(med/max)  reload(med/max)   cycles\n");
    for (int where = 0; where < 2; where++) {
        for (int g : grids) {
            std::vector<u64> a, b, c;
            for (int rep = 0; rep < 20; rep++) {
                skeleton<<<g, THREADS>>>(in, mid, marks, sink);  // warm
                if (where == 1) scrub<<<264, 512>>>(big, big_words);
                skeleton<<<g, THREADS>>>(in, mid, marks, sink);
                CK(cudaDeviceSynchronize());
                CK(cudaMemcpy(h.data(), marks, g * 3 * 8, cudaMemcpyDeviceToHost));
                for (int i = 0; i < g; i++) {
                    a.push_back(h[3 * i]);
                    b.push_back(h[3 * i + 1]);
                    c.push_back(h[3 * i + 2]);
                }
            }
            auto med = [](std::vector<u64>& v) {
                std::sort(v.begin(), v.end());
                return v[v.size() / 2];
            };
            auto mx = [](std::vector<u64>& v) { return v.back(); };
            u64 am = med(a), bm = med(b), cm = med(c);
            printf("%6d %5s %6llu / %6llu %8llu / %6llu %10llu / %6llu\n", g,
                   where ? "hbm" : "l2", am, mx(a), bm, mx(b), cm, mx(c));
        }
    }
    return 0;
}
