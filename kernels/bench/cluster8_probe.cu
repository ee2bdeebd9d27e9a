// Standalone probe (experiments, not part of the build): would a ciphertext NTT by clusters of
// 8 blocks of 512 threads, one cluster per prime (both components, 16 lines of each per
// block, one block per SM: 64 SMs), beat the engine's shape (16 blocks of 256 threads per
// prime, 128 SMs, cooperative, exchange through L2)? Both run the same synthetic NTT: per
// phase, 8 words per thread loaded, three "rounds" of R dependent 64-bit multiply-adds per
// word (m = 1, d = 0 from the arguments, so the words do not change) separated by two
// shared-memory exchanges (a transposition and its inverse, block barriers), then the exchange
// between the phases (engine: stores, fence, counter barrier, reloads from L2; clusters:
// stores into the owning block's row tile by distributed shared memory, one cluster barrier),
// the second phase the same, stores. Words are checked equal to the input (poisoned output).
// The real kernels issue ~120 instructions per word and phase; R = 24 multiply-adds (~5
// instructions each) approximates that.
//
// nvcc -arch=sm_90 -O3 -std=c++17 kernels/bench/cluster8_probe.cu -o cluster8_probe
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench_check.cuh"
#include "bench_single.cuh"

// The kernels' own primitives (u64, NN, ldcg, ld_acquire, cl_rank, cl_arrive / cl_wait).
#include "../ckks.cu"
#include "probe_common.cuh"

#define PRIMES 8
#define COMP_STRIDE ((u64)PRIMES * NN)


// R dependent multiply-adds per word (8 independent chains).
template <int R>
__device__ __forceinline__ void alu(u64 (&x)[8], u64 m, u64 d) {
#pragma unroll
    for (int i = 0; i < R; i++)
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = x[e] * m + d;
}
// One synthetic phase on the thread's 8 words: rounds of ALU work separated by two exchanges
// through the tile t (NT threads, 8 words each): word e of thread i goes to slot e * NT + i and
// comes back from slot ((e + 1) % 8) * NT + i, then the inverse.
template <int NT, int R>
__device__ __forceinline__ void phase(u64 (&x)[8], u64* t, u64 m, u64 d) {
    const uint32_t i = threadIdx.x;
    alu<R / 3>(x, m, d);
#pragma unroll
    for (int e = 0; e < 8; e++) t[e * NT + i] = x[e];
    __syncthreads();
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = t[((e + 1) % 8) * NT + i];
    __syncthreads();
    alu<R / 3>(x, m, d);
#pragma unroll
    for (int e = 0; e < 8; e++) t[((e + 1) % 8) * NT + i] = x[e];
    __syncthreads();
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = t[e * NT + i];
    __syncthreads();
    alu<R / 3>(x, m, d);
}

constexpr int R = 24;

// The engine's shape: grid (16, primes), 256 threads; block k holds lines 8k + [0, 8) of both
// components (column phase) and rows 8k + [0, 8) of both (row phase); cooperative launch.
__global__ void __launch_bounds__(256, 1)
    nt_global(const u64* in, u64* mid, u64* out, unsigned* ctr, unsigned* where, u64 m, u64 d) {
    __shared__ u64 tile[2048];
    const uint32_t k = blockIdx.x, y = blockIdx.y, tid = threadIdx.x, t = tid & 127, g = tid >> 7;
    unsigned target = 0;
    unsigned* c = ctr + y;
    if (tid == 0) {
        target = (*(volatile unsigned*)c & ~15u) + 16;
        where[y * 16 + k] = smid();
    }
    const uint32_t col = 8 * k + (t & 7), hi = t >> 3;
    const u64 base = g * COMP_STRIDE + (u64)y * NN;
    u64 x[8];
    load_column(in + base, col, hi, x);
    phase<256, R>(x, tile, m, d);
#pragma unroll
    for (int e = 0; e < 8; e++) mid[base + (hi + 16 * e) * 128 + col] = x[e];
    __syncthreads();
    if (tid == 0) {
        __threadfence();
        atomicAdd(c, 1u);
        while ((int)(ld_acquire(c) - target) < 0) {
        }
    }
    __syncthreads();
    const uint32_t r = tid / 16, lo = tid % 16;
    const u64 off = (r >> 3) * COMP_STRIDE + (u64)y * NN + (u64)(8 * k + (r & 7)) * 128;
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = ldcg(mid + off + lo + 16 * e);
    phase<256, R>(x, tile, m, d);
#pragma unroll
    for (int e = 0; e < 8; e++) out[off + lo + 16 * e] = x[e];
}

// Clusters of 8 along x, grid (8, primes), 512 threads: block k holds lines 16k + [0, 16) of
// both components, then rows 16k + [0, 16) of both (its row tile, written by the cluster).
__global__ void __launch_bounds__(512, 1)
    nt_cluster(const u64* in, u64* mid, u64* out, unsigned* ctr, unsigned* where, u64 m, u64 d) {
    // 64 KiB of tiles (more than static shared memory allows) in the dynamic shared memory,
    // whose size (with padding) keeps one block per SM.
    extern __shared__ __align__(16) u64 dyn[];
    u64* tile = dyn;
    u64* rows = dyn + 4096;
    const uint32_t k = cl_rank(), y = blockIdx.y, tid = threadIdx.x, t = tid & 255, g = tid >> 8;
    if (tid == 0) where[y * 8 + k] = smid();
    cluster_arrive_relaxed();  // started
    const uint32_t col = 16 * k + (t & 15), hi = t >> 4;
    u64 x[8];
    load_column(in + g * COMP_STRIDE + (u64)y * NN, col, hi, x);
    phase<512, R>(x, tile, m, d);
    cl_wait();
    // Word (row a, line col) of component g goes to block a / 16, tile row 16 g + a % 16.
#pragma unroll
    for (int e = 0; e < 8; e++) {
        const uint32_t a = hi + 16 * e;
        st_remote(&rows[(16 * g + (a & 15)) * 128 + col], a >> 4, x[e]);
    }
    cl_arrive();
    cl_wait();
    const uint32_t r = tid / 16, lo = tid % 16;
    const u64 off = (r >> 4) * COMP_STRIDE + (u64)y * NN + (u64)(16 * k + (r & 15)) * 128;
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = rows[r * 128 + lo + 16 * e];
    phase<512, R>(x, tile, m, d);
#pragma unroll
    for (int e = 0; e < 8; e++) out[off + lo + 16 * e] = x[e];
    (void)mid;
    (void)ctr;
}

struct Form {
    const char* name;
    void* f;
    dim3 grid;
    int threads, cluster;
    bool coop;
    size_t pad;  // dynamic shared memory (the cluster form's tiles, sized for one block per SM)
};

static cudaError_t launch(const Form& fm, cudaStream_t st, void** args) {
    return launch_shape(fm.f, fm.grid, fm.threads, fm.pad, fm.coop, fm.cluster, st, args);
}

int main() {
    const size_t words = 2 * COMP_STRIDE;
    ProbeData pd;
    CK(make_probe_data(words, &pd));
    cudaStream_t st = pd.st;
    u64 *in = pd.in, *mid = pd.mid, *out = pd.out;
    unsigned *ctr = pd.ctr, *where = pd.where;
    const std::vector<u64>& h = pd.h;
    std::vector<u64>& back = pd.back;
    u64 m = 1, d = 0;
    void* args[] = {&in, &mid, &out, &ctr, &where, &m, &d};
    const Form forms[] = {
        {"16x256 coop, L2", (void*)nt_global, dim3(16, PRIMES), 256, 0, true, 0},
        {"8x512 cluster8, DSMEM", (void*)nt_cluster, dim3(8, PRIMES), 512, 8, false, 164 * 1024},
    };
    const int F = 2;
    CK(cudaFuncSetAttribute((void*)nt_cluster, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            164 * 1024));
    std::vector<cudaGraphExec_t> ex(F);
    for (int i = 0; i < F; i++) {
        const Form& fm = forms[i];
        if (!fm.coop) {
            int n = -1;
            CK(max_clusters(fm.f, fm.grid, fm.threads, fm.pad, fm.cluster, &n));
            printf("%-22s max active clusters %d\n", fm.name, n);
        }
        CK(cudaMemset(out, 0xff, words * 8));
        CK(cudaMemset(where, 0xff, 256 * 4));
        CK(launch(fm, st, args));
        CK(cudaStreamSynchronize(st));
        Placement pl;
        bool same = false;
        CK(placement(where, (int)(fm.grid.x * fm.grid.y), &pl));
        CK(same_words(out, h, back, &same));
        printf("%-22s SMs used %d, most blocks on one SM %d, out %s\n", fm.name, pl.used,
               pl.most, same ? "== in" : "WRONG");
        CK(capture(st, [&] { return launch(fm, st, args); }, &ex[i]));
    }
    CK(time_passes(ex, {forms[0].name, forms[1].name}, st, 3));
    for (int i = 0; i < F; i++) {
        CK(cudaMemset(out, 0xff, words * 8));
        CK(cudaGraphLaunch(ex[i], st));
        CK(cudaStreamSynchronize(st));
        bool same = false;
        CK(same_words(out, h, back, &same));
        printf("%-22s after timing: out %s\n", forms[i].name, same ? "== in" : "WRONG");
    }
    return 0;
}
