// Standalone probe (experiments, not part of the build; timing only, the words are not an NTT's):
// would a forward ciphertext NTT whose every SM holds the same share of every prime run faster,
// with the ~2^40 primes' butterflies in binary64 (twenty-ninth session, run 153: 1.4 us less
// when every limb could use doubles) and the 60-bit base prime's in integers (doubles cannot
// hold it)? The paired kernels give each prime its own 16 blocks, so the base prime's blocks
// would set the launch's time; here every block holds two items of every prime.
//
// Shape: 128 blocks x 8 warps, cooperative, one-node graphs (the engine's launch form). Warp w
// of block b works on prime w only:
//   column phase: half-warp h (16 lanes, 8 words each) runs the 128-point column 2 (b % 64) + h
//     of component b / 64 as the kernels' rounds do (radix 8, radix 8, radix 2), exchanging its
//     words through a warp-private tile of shared memory (__syncwarp, no block barrier), and
//     stores the column to the scratch limb;
//   exchange: per prime, lane 0 fences and counts the warp in (128 arrivals a launch) and waits
//     for the prime's 128 warps (reset-free counters, as the engine's);
//   row phase: half-warp h runs row b of component h (the two components' rows share their
//     twiddles) and stores it.
// Forms: `int` every warp by Loose (the kernels' integer butterflies), `mix` warp 0 by Loose
// (the base prime's share) and warps 1-7 by binary64 (LooseF below), `f64` every warp by
// binary64; `... grid`: the same with the exchange as one barrier of the launch (one poller per
// block, run 155). The engine's paired kernel in the same call: ntt_bench's row 47 (fwd-gp-g).
//
// nvcc -arch=sm_90 -O3 -std=c++17 kernels/bench/warp_item_probe.cu -o warp_item_probe
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "bench_check.cuh"
#include "bench_single.cuh"

#include "../ckks.cu"
#include "probe_common.cuh"

#define WI_PRIMES 8
#define WI_BLOCKS 128
#define WI_THREADS (32 * WI_PRIMES)
#define WI_COMP ((u64)WI_PRIMES * NN)

// The kernels' butterflies: Loose (integers) and LooseF (binary64, decision 0511; run 155 ran
// the timing-only copy of kernels/bench/loose_f64.cuh, whose ct_out left doubles for an out()
// conversion at the store). Both ct_out give the canonical words.
typedef Loose LooseI;

// Tile index with the row (i / 16, below 8) XORed into bits 1-3: round 2's lanes (16 m + c + 2 e)
// land in 16 distinct bank pairs instead of 2 (run 154 ran without it: 8-way conflicts).
__device__ __forceinline__ uint32_t sw(uint32_t i) { return i ^ ((i >> 3) & 14u); }

// A half-warp's 128-point transform from its round-1 words x (already through fwd8): into the
// tile, round 2 (strides 8, 4, 2) with twiddle base b2, round 3 (stride 1) by `last(k, x0, x1)`
// on the pairs 2k, 2k + 1 (k = l + 16 i).
template <class A, class Last>
__device__ __forceinline__ void wi_rounds23(u64* s, u64 (&x)[8], uint32_t l, const WP* tw,
                                            uint32_t b2, u64 q, Last last) {
#pragma unroll
    for (int e = 0; e < 8; e++) s[sw(l + 16 * e)] = x[e];
    __syncwarp();
    const uint32_t j0 = 16 * (l >> 1) + (l & 1);
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = s[sw(j0 + 2 * e)];
    fwd8<A, 5>(x, tw7(tw, b2), q);
    __syncwarp();
#pragma unroll
    for (int e = 0; e < 8; e++) s[sw(j0 + 2 * e)] = x[e];
    __syncwarp();
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint32_t k = l + 16 * i;
        last(k, s[sw(2 * k)], s[sw(2 * k + 1)]);
    }
}

// One warp's forward NTT work on prime p: columns, the prime's exchange, rows.
// GRID: the exchange as one barrier of the whole launch (every warp of the block meets at
// __syncthreads, thread 0 fences, counts the block on ctr[WI_PRIMES] and polls it: 128 pollers
// of one counter) instead of one counter per prime polled by every warp (128 pollers each).
template <class A, bool GRID = false>
__device__ __forceinline__ void wi_warp(const u64* __restrict__ in, u64* mid, u64* out,
                                        const WP* __restrict__ tw, u64 q, unsigned* ctr,
                                        u64* tile) {
    const uint32_t lane = threadIdx.x & 31, l = lane & 15, h = lane >> 4, b = blockIdx.x;
    const uint32_t p = threadIdx.x >> 5;
    unsigned* c = GRID ? &ctr[WI_PRIMES] : &ctr[p];
    unsigned target = 0;
    if (GRID ? threadIdx.x == 0 : lane == 0)
        target = (*(volatile unsigned*)c & ~(unsigned)(WI_BLOCKS - 1)) + WI_BLOCKS;
    u64* s = tile + h * SUB;
    u64 x[8];
    {
        const uint32_t g = b / 64, col = 2 * (b % 64) + h;
        const u64* limb = in + g * WI_COMP + (u64)p * NN;
        u64* m = mid + g * WI_COMP + (u64)p * NN;
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = A::in(limb[(l + 16 * e) * SUB + col]);
        fwd8<A, 7>(x, tw7(tw, 1), q);
        wi_rounds23<A>(s, x, l, tw, 8 + (l >> 1), q, [&](uint32_t k, u64 x0, u64 x1) {
            A::template ct<true>(x0, x1, ldwp(tw + 64 + k), q);
            m[(2 * k) * SUB + col] = x0;
            m[(2 * k + 1) * SUB + col] = x1;
        });
    }
    if constexpr (GRID) {
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            atomicAdd(c, 1u);
            while ((int)(ld_acquire(c) - target) < 0) {
            }
        }
        __syncthreads();
    } else {
        __syncwarp();
        if (lane == 0) {
            __threadfence();
            atomicAdd(c, 1u);
            while ((int)(ld_acquire(c) - target) < 0) {
            }
        }
        __syncwarp();
    }
    {
        const uint32_t r = b;
        const u64 off = h * WI_COMP + (u64)p * NN + (u64)r * SUB;
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = ldcg(mid + off + l + 16 * e);
        fwd8<A, 2>(x, tw7(tw, SUB + r), q);
        wi_rounds23<A>(s, x, l, tw, (SUB + r) * 8 + (l >> 1), q, [&](uint32_t k, u64 x0, u64 x1) {
            A::ct_out(x0, x1, ldwp(tw + (SUB + r) * 64 + k), q);
            st2(out + off + 2 * k, x0, x1);
        });
    }
}

// MODE 0: every warp integer; 1: warp 0 integer, the others binary64; 2: every warp binary64.
// GRID: wi_warp's exchange as one barrier of the launch.
template <int MODE, bool GRID = false>
__global__ void __launch_bounds__(WI_THREADS, 1)
    wi_fwd(const u64* __restrict__ in, u64* mid, u64* out, const WP* __restrict__ tw,
           const u64* __restrict__ qs, unsigned* ctr) {
    __shared__ __align__(16) u64 tiles[WI_PRIMES * 2 * SUB];
    const uint32_t p = threadIdx.x >> 5;
    const u64 q = qs[p];
    const WP* t = tw + (u64)p * NN;
    u64* tile = tiles + p * 2 * SUB;
    if (MODE == 0 || (MODE == 1 && p == 0)) {
        wi_warp<LooseI, GRID>(in, mid, out, t, q, ctr, tile);
    } else {
        wi_warp<LooseF, GRID>(in, mid, out, t, q, ctr, tile);
    }
}

int main() {
    const size_t words = 2 * WI_COMP;
    ProbeData pd;
    CK(make_probe_data(words, &pd));
    cudaStream_t st = pd.st;
    // Canonical inputs below 2^40 (every form reads the same words), a twiddle table of pairs
    // below 2^40, a 60-bit q0 and 40-bit q1..q7.
    std::vector<u64> hin(words);
    for (size_t i = 0; i < words; i++) hin[i] = (i * 0x9e3779b97f4a7c15ull) >> 24;
    CK(cudaMemcpy(pd.in, hin.data(), words * 8, cudaMemcpyHostToDevice));
    std::vector<WP> htw((size_t)WI_PRIMES * NN);
    for (size_t i = 0; i < htw.size(); i++)
        htw[i] = WP{(i * 0x2545f4914f6cdd1dull) >> 24, (i * 0x9e3779b97f4a7c15ull)};
    WP* tw = nullptr;
    CK(cudaMalloc(&tw, htw.size() * sizeof(WP)));
    CK(cudaMemcpy(tw, htw.data(), htw.size() * sizeof(WP), cudaMemcpyHostToDevice));
    std::vector<u64> hq(WI_PRIMES, 1099508121601ull);
    hq[0] = 1152921504606830593ull;
    u64* qs = nullptr;
    CK(cudaMalloc(&qs, WI_PRIMES * 8));
    CK(cudaMemcpy(qs, hq.data(), WI_PRIMES * 8, cudaMemcpyHostToDevice));
    u64 *in = pd.in, *mid = pd.mid, *out = pd.out;
    unsigned* ctr = pd.ctr;
    void* args[] = {&in, &mid, &out, &tw, &qs, &ctr};
    struct Form {
        const char* name;
        void* f;
    } forms[] = {{"wi int", (void*)wi_fwd<0>}, {"wi mix (q0 int)", (void*)wi_fwd<1>},
                 {"wi f64", (void*)wi_fwd<2>},         {"wi int grid", (void*)wi_fwd<0, true>},
                 {"wi mix grid", (void*)wi_fwd<1, true>}, {"wi f64 grid", (void*)wi_fwd<2, true>}};
    const int F = sizeof(forms) / sizeof(forms[0]);
    std::vector<cudaGraphExec_t> ex(F);
    std::vector<const char*> names;
    for (int i = 0; i < F; i++) {
        CK(launch_shape(forms[i].f, dim3(WI_BLOCKS), WI_THREADS, 0, true, 0, st, args));
        CK(cudaStreamSynchronize(st));
        CK(capture(st, [&] {
            return launch_shape(forms[i].f, dim3(WI_BLOCKS), WI_THREADS, 0, true, 0, st, args);
        }, &ex[i]));
        names.push_back(forms[i].name);
    }
    CK(time_passes(ex, names, st, 3));
    return 0;
}
