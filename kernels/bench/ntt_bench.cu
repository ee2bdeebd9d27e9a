// Standalone timing harness for the one-launch NTT kernels of kernels/ckks.cu (experiments, not
// part of the build): includes a copy of ckks.cu (a variant made by variants.py), launches
// ntt_fwd_gs / ntt_inv_gs cooperatively on a 2-component, 8-limb ciphertext of random words and
// prints the back-to-back time per launch and the median single-launch event time. Built and run
// on the H200 with its nvcc: nvcc -arch=sm_90 -O3 -I<variant dir> ntt_bench.cu.
#include "ckks_v.cu"
#include "bench_common.cuh"
#include "bench_launch.cuh"

// Run 58's experiment (dropped: ks_ip + the 18-limb ntt_inv_gs took 23.0 us against
// ks_inner_gs's 19.9, words identical). The key inner product alone (ks_inner_gs's first step
// without its inverse NTT), for the 18-limb ntt_inv_gs after it:
// acc[c][y] = sum_d ext[d][y] * key[d][c][pid] (+ P * addn[c][y]), canonical NTT-domain words,
// the same words ks_sum gives ks_inner_gs (the digits summed exactly in 128 bits in groups of
// 8, one Montgomery reduction per group). An elementwise
// kernel over every SM: one pair of words per thread, every digit's ext and key pair of a
// group loaded before its products (16 loads of 16 bytes in flight per thread). Grid
// (N / (2 * KS_IP_THREADS), rows, 2), KS_IP_THREADS threads; arguments as ks_inner_gs's but
// the twiddles, the post-scaling and the counters.
#define KS_IP_THREADS 256
extern "C" __global__ void __launch_bounds__(KS_IP_THREADS)
    ks_ip(const u64* __restrict__ ext, const u64* __restrict__ key, u64* __restrict__ acc,
          const Prime* __restrict__ primes, uint32_t prime_off, uint32_t digits, uint32_t rows,
          u64 key_ds, u64 key_cs, const u64* __restrict__ addn, u64 addn_cs,
          const u64* __restrict__ padd) {
    grid_dep_wait();
    const uint32_t y = blockIdx.y, c = blockIdx.z;
    const uint32_t pid = prime_off + y;
    const Prime p = primes[pid];
    const uint32_t pos = 2 * (blockIdx.x * KS_IP_THREADS + threadIdx.x);
    const u64* e0 = ext + (u64)y * NN + pos;
    const u64* k0 = key + (u64)prime_off * key_ds + c * key_cs + (u64)pid * NN + pos;
    const u64 ext_ds = (u64)rows * NN;
    u64 a[2] = {0, 0};
    for (uint32_t d0 = 0; d0 < digits; d0 += 8) {
        const uint32_t nd = digits - d0 < 8 ? digits - d0 : 8;
        u64 e[16], k[16];
#pragma unroll
        for (uint32_t d = 0; d < 8; d++) {
            if (d < nd) {
                ld2sh(e0 + (d0 + d) * ext_ds, e[2 * d], e[2 * d + 1]);
                ld2sh(k0 + (d0 + d) * key_ds, k[2 * d], k[2 * d + 1]);
            }
        }
        u64 lo[2] = {0, 0}, hi[2] = {0, 0};
#pragma unroll
        for (uint32_t d = 0; d < 8; d++) {
            if (d < nd) {
                mac128(lo[0], hi[0], e[2 * d], k[2 * d]);
                mac128(lo[1], hi[1], e[2 * d + 1], k[2 * d + 1]);
            }
        }
#pragma unroll
        for (int i = 0; i < 2; i++) a[i] = addmod(a[i], mont_reduce(lo[i], hi[i], p), p.q);
    }
    if (addn != nullptr && y < digits) {
        const u64 pm = padd[pid];
        u64 v[2];
        ld2sh(addn + c * addn_cs + (u64)y * NN + pos, v[0], v[1]);
#pragma unroll
        for (int i = 0; i < 2; i++) a[i] = addmod(a[i], mont(v[i], pm, p), p.q);
    }
    st2(acc + ((u64)c * rows + y) * NN + pos, a[0], a[1]);
}
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>
#include <cstdlib>
#include <cstring>
#include <string>


// A plain copy with the same grid: the memory floor of one pass over the ciphertext.
// Rounds 2 and 3 of gs_fwd_rows for the harness's prototypes, on the row tile s after its
// round 1: tile line l is limb row trow(l) (its twiddles), written canonical to out(l) + row *
// SUB (out: the line's limb base).
template <class A = Harvey, class TRow, class Out>
__device__ __forceinline__ void fwd_rows_tail(u64* s, const WP* tw, u64 q, TRow trow, Out out) {
    const uint32_t tid = threadIdx.x;
    const uint32_t lo = tid % 16, hi = tid / 16, ah = hi >> 1, b0 = hi & 1;
    gs_mid_round<true, true, A>(s, lo, ah, b0, tw, (SUB + trow(lo)) * 8 + ah, q);
    __syncthreads();
    u64* dst = out(hi);
    gs_fwd_rows_last<A>(s, tw, q, trow(hi),
                     [&](uint32_t pos, u64 x0, u64 x1) { st2(dst + pos, x0, x1); });
}

// The row phase of the split-limb prototypes (ntt_fwd_q4, ntt_fwd_h2): rows row0 + [0, 16) of
// the limb, row hi's words read from the cluster's column tiles t1 (block r holding columns
// [W r, W r + W) of every local row, W words per row; this block's rows are local rows
// rl0 + [0, 16)) through distributed shared memory, then gs_fwd_rows' rounds 2 and 3 on s,
// canonical out to dst. Ends with the cluster barrier that keeps t1 until every block has
// read it. A: the butterflies (Harvey as measured in runs 68-72; LooseF for ntt_fwd_q4f).
template <uint32_t W, class A = Harvey>
__device__ __forceinline__ void split_fwd_rows(u64* s, const u64* t1, const WP* tw, u64 q,
                                               uint32_t row0, uint32_t rl0, u64* dst) {
    const uint32_t lo = threadIdx.x % 16, hi = threadIdx.x / 16;
    {
        // Round 1: b = lo + 16e of row hi; column b from rank b / W's t1.
        u64 x[8];
#pragma unroll
        for (int e = 0; e < 8; e++) {
            const uint32_t b = lo + 16 * e;
            x[e] = cl_map(t1, b / W)[(rl0 + hi) * W + b % W];
        }
        fwd8<A>(x, tw7(tw, SUB + row0 + hi), q);
#pragma unroll
        for (int e = 0; e < 8; e++) s[gs_rw(hi, lo + 16 * e)] = x[e];
    }
    __syncthreads();
    cl_arrive();  // done reading the cluster's t1 (release: the loads are performed)
    fwd_rows_tail<A>(s, tw, q, [&](uint32_t l) { return row0 + l; }, [&](uint32_t) { return dst; });
    cl_wait();  // the other blocks have read this block's t1
}

// The limb (blockIdx.y, blockIdx.z) of a split-limb prototype: its prime, twiddle row, input
// and output rows (row stride ys, component stride zs).
struct SplitLimb {
    u64 q;
    const WP* tw;
    const u64* src;
    u64* dst;
    __device__ SplitLimb(const u64* in, u64* out, const Prime* primes, const WP* twf,
                         uint32_t prime_off, u64 ys, u64 zs) {
        const uint32_t y = blockIdx.y, z = blockIdx.z, pid = prime_off + y;
        q = primes[pid].q;
        tw = twf + (u64)pid * NN;
        src = in + z * zs + y * ys;
        dst = out + z * zs + y * ys;
    }
};

// The split-limb kernels' parameters (those of ntt_fwd_gs's plain form) and their start: the
// column tile t1, the row tile s, the block's limb L.
#define SPLIT_PARAMS                                                                            \
    const u64 *__restrict__ in, u64 *__restrict__ out, const Prime *__restrict__ primes,        \
        const WP *__restrict__ twf, uint32_t prime_off, u64 ys, u64 zs
#define SPLIT_START                                                                             \
    __shared__ __align__(16) u64 t1[2048];                                                      \
    __shared__ __align__(16) u64 s[2048];                                                       \
    const SplitLimb L(in, out, primes, twf, prime_off, ys, zs)

// Run 68's prototype: the forward NTT of a limb by quarters, no limb barrier. After the
// first two stages (half-spans N/2, N/4) the four quarters of the limb are independent
// transforms; each quarter is computed by a cluster of 2 blocks (one TPC), which forms the
// quarter's first two stages itself from all four input quarters (3 products per word instead
// of 1: the work of stages 0-1 x 3, ~1.29x the limb's products), then exchanges through
// distributed shared memory only. Grid (8, limbs, comps): block x = 2 * quarter + rank;
// GS_THREADS threads; 64 clusters of 2 for a 16-limb ciphertext (one block per SM). Quarter t,
// view a * 128 + c: rows a in [32t, 32t + 32), block `rank` holds columns [64 rank, 64 rank +
// 64) in the column phase (t1: 32 x 64) and rows 32t + 16 rank + [0, 16) in the row phase.
// Raw canonical input, canonical output: the words of ntt_fwd_gs.
// The body of ntt_fwd_q4 by A's butterflies (Harvey: run 68's words and code path; LooseF:
// ntt_fwd_q4f, forty-first session). Stages 0-1 of the quarter as full butterflies of which
// the quarter's output is kept (d0, d1 pick the difference), which for Harvey is run 68's
// arithmetic.
template <class A>
__device__ __forceinline__ void q4_fwd(const SplitLimb& L, u64* t1, u64* s) {
    const u64 q = L.q;
    const WP* tw = L.tw;
    const u64* src = L.src;
    u64* dst = L.dst;
    const uint32_t qt = blockIdx.x >> 1, rank = blockIdx.x & 1;
    const uint32_t tid = threadIdx.x;
    {
        // Round 1: stages 0-2 of column cg at rows r0 + 16e (e = 0..7), only the two outputs in
        // quarter qt (e = 2qt, 2qt + 1 -> t1 rows r0, r0 + 16).
        const uint32_t c = tid % 64, cg = rank * 64 + c;
        const bool d0 = (qt >> 1) != 0, d1 = (qt & 1) != 0;
        const WP w0 = ldwp(tw + 1), w1 = ldwp(tw + 2 + (qt >> 1)), w2 = ldwp(tw + 4 + qt);
        u64 x[4][8];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t r0 = tid / 64 + 4 * i;
#pragma unroll
            for (int e = 0; e < 8; e++) x[i][e] = A::in(src[(r0 + 16 * e) * SUB + cg]);
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t r0 = tid / 64 + 4 * i;
            u64 v[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                u64 a = x[i][e], b = x[i][e + 4];
                A::template ct<true>(a, b, w0, q);
                v[e] = d0 ? b : a;
            }
            u64 u[2];
#pragma unroll
            for (int e = 0; e < 2; e++) {
                u64 a = v[e], b = v[e + 2];
                A::template ct<true>(a, b, w1, q);
                u[e] = d1 ? b : a;
            }
            A::template ct<true>(u[0], u[1], w2, q);
            t1[r0 * 64 + c] = u[0];
            t1[(r0 + 16) * 64 + c] = u[1];
        }
    }
    __syncthreads();
    {
        // Round 2: stages 3-5 (radix 8) of column c, rows 16g + b0 + 2e.
        const uint32_t c = tid % 64, g = (tid >> 6) & 1, b0 = tid >> 7;
        u64 x[8];
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = t1[(16 * g + b0 + 2 * e) * 64 + c];
        fwd8<A>(x, tw7(tw, 8 + 2 * qt + g), q);
#pragma unroll
        for (int e = 0; e < 8; e++) t1[(16 * g + b0 + 2 * e) * 64 + c] = x[e];
    }
    __syncthreads();
    {
        // Round 3: stage 6, pairs of rows (2p, 2p + 1).
        const uint32_t c = tid % 64;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t pr = tid / 64 + 4 * i;
            u64 x0 = t1[2 * pr * 64 + c], x1 = t1[(2 * pr + 1) * 64 + c];
            A::template ct<true>(x0, x1, ldwp(tw + 64 + 16 * qt + pr), q);
            t1[2 * pr * 64 + c] = x0;
            t1[(2 * pr + 1) * 64 + c] = x1;
        }
    }
    __syncthreads();
    cl_sync();  // both column halves of the quarter are in the two blocks' t1
    split_fwd_rows<64, A>(s, t1, tw, q, 32 * qt + 16 * rank, 16 * rank, dst);
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(GS_THREADS, 1)
    ntt_fwd_q4(SPLIT_PARAMS) {
    SPLIT_START;
    q4_fwd<Harvey>(L, t1, s);
}
// ntt_fwd_q4 with the engine's arithmetic choice (decision 0511): binary64 butterflies for
// the primes below F64_Q, the integer ones (Harvey, as run 68) for the wide prime; every
// block's limb is one prime, so the choice is per block. The same words as ntt_fwd_q4.
extern "C" __global__ void __cluster_dims__(2, 1, 1) __launch_bounds__(GS_THREADS, 1)
    ntt_fwd_q4f(SPLIT_PARAMS) {
    SPLIT_START;
    if (L.q < F64_Q) {
        q4_fwd<LooseF>(L, t1, s);
    } else {
        q4_fwd<Harvey>(L, t1, s);
    }
}

// Run 72's prototype: the forward NTT of a limb by halves. After stage 0 (half-span N/2) the
// two halves of the limb are independent transforms; each half is computed by a cluster of 4
// blocks, which forms the half's stage 0 itself from both input halves (one product per word
// of the half: stage 0's work twice, ~1.07x the limb's products, the input read twice), then
// exchanges through distributed shared memory only. Grid (8, limbs, comps): block x = 4 * half
// + rank; GS_THREADS threads; 32 clusters of 4 for a 16-limb ciphertext. Half hh, view a * 128
// + c: rows a in [64hh, 64hh + 64); block `rank` holds columns [32 rank, 32 rank + 32) in the
// column phase (t1: 64 x 32) and rows 64hh + 16 rank + [0, 16) in the row phase.
extern "C" __global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(GS_THREADS, 1)
    ntt_fwd_h2(SPLIT_PARAMS) {
    SPLIT_START;
    const u64 q = L.q, two_q = 2 * q;
    const WP* tw = L.tw;
    const u64* src = L.src;
    u64* dst = L.dst;
    const uint32_t hh = blockIdx.x >> 2, rank = blockIdx.x & 3;
    const uint32_t tid = threadIdx.x;
    {
        // Round 1: stage 0 (only the half's outputs) and stages 1-3 of column cg at half rows
        // r0 + 8e (e = 0..7).
        const uint32_t c = tid % 32, r0 = tid / 32, cg = rank * 32 + c;
        const WP w0 = ldwp(tw + 1);
        u64 lo8[8], hi8[8], x[8];
#pragma unroll
        for (int e = 0; e < 8; e++) {
            lo8[e] = src[(r0 + 8 * e) * SUB + cg];
            hi8[e] = src[(r0 + 8 * e + 64) * SUB + cg];
        }
#pragma unroll
        for (int e = 0; e < 8; e++) {
            const u64 a = csub(lo8[e], two_q), t = shoup_lazy(hi8[e], w0.w, w0.wp, q);
            x[e] = hh ? a - t + two_q : a + t;
        }
        fwd8<Harvey>(x, tw7(tw, 2 + hh), q);
#pragma unroll
        for (int e = 0; e < 8; e++) t1[(r0 + 8 * e) * 32 + c] = x[e];
    }
    __syncthreads();
    {
        // Round 2: stages 4-6 of column c, half rows 8g + e.
        const uint32_t c = tid % 32, g = tid / 32;
        u64 x[8];
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = t1[(8 * g + e) * 32 + c];
        fwd8<Harvey>(x, tw7(tw, 16 + 8 * hh + g), q);
#pragma unroll
        for (int e = 0; e < 8; e++) t1[(8 * g + e) * 32 + c] = x[e];
    }
    __syncthreads();
    cl_sync();  // the half's 128 columns are in the cluster's four t1
    split_fwd_rows<32>(s, t1, tw, q, 64 * hh + 16 * rank, 16 * rank, dst);
}

// Run 73's experiment: the forward NTT as two kernels in one graph, the column phase
// (ntt_fwd_entry<3>, ntt_fwd_gq's column work item, into the output limb) and the row phase
// (ntt_fwd_entry<4>) hung on it by a programmatic edge: the second grid's completion wait
// (griddepcontrol.wait) in place of the limb barrier. TRIG: the first kernel lets the second
// launch at its start (griddepcontrol.launch_dependents), so the second's blocks are resident
// and waiting when the first ends. Grid (8, limbs, comps), GS_THREADS threads, plain launches.
template <bool TRIG>
__device__ __forceinline__ void fwd_p1_body(u64* s, NTT_FWD_PARAMS) {
    grid_dep_wait();
    if constexpr (TRIG) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    ntt_fwd_entry<3>(s, blockIdx, NTT_FWD_ARGS);
}
extern "C" __global__ void __launch_bounds__(GS_THREADS, 1) ntt_fwd_p1(NTT_FWD_PARAMS) {
    CL_SHARED(s);
    fwd_p1_body<false>(s, NTT_FWD_ARGS);
}
extern "C" __global__ void __launch_bounds__(GS_THREADS, 1) ntt_fwd_p1t(NTT_FWD_PARAMS) {
    CL_SHARED(s);
    fwd_p1_body<true>(s, NTT_FWD_ARGS);
}
extern "C" __global__ void __launch_bounds__(GS_THREADS, 1) ntt_fwd_p2(NTT_FWD_PARAMS) {
    CL_SHARED(s);
    grid_dep_wait();
    ntt_fwd_entry<4>(s, blockIdx, NTT_FWD_ARGS);
}

// Run 76's experiment: ntt_fwd_gs with one block per prime and line set serving both
// components of a ciphertext (16 blocks per prime: block k holds lines 8k + [0, 8) of component
// 0 as its tile lines 0-7 and of component 1 as lines 8-15), so a block's row-phase twiddles
// are those of 8 rows, each read for two limbs: half the twiddle lines per block. The 16 blocks
// of a prime meet on their own counters (sync_ctr + 2 (40 + y), multiples of 16). Grid (16,
// limbs, 1), GS_THREADS threads, cooperative. Raw canonical input, the words of ntt_fwd_gs.
extern "C" __global__ void __launch_bounds__(GS_THREADS, 1)
    ntt_fwd_d2(const u64* __restrict__ in, u64* __restrict__ out,
               const Prime* __restrict__ primes, const WP* __restrict__ twf, uint32_t prime_off,
               u64 ys, u64 zs, unsigned* sync_ctr) {
    CL_SHARED(s);
    const uint32_t y = blockIdx.y, k = blockIdx.x, pid = prime_off + y;
    const u64 q = primes[pid].q;
    const WP* tw = twf + (u64)pid * NN;
    const uint32_t tid = threadIdx.x, lo = tid % 16, hi = tid / 16;
    unsigned* ctr = sync_ctr + 2 * (40 + y);
    unsigned target = 0;
    if (tid == 0) target = (ld_relaxed(ctr) & ~15u) + 16;
    // Column phase: tile line lo = column 8k + lo % 8 of component lo / 8 (word offset from
    // component 0's limb).
    const u64* base = in + y * ys;
    gs_fwd_cols_at<Harvey>(s, tw, q, [&](uint32_t pos) { return base[pos]; }, out + y * ys,
                           (uint32_t)((lo >> 3) * zs) + 8 * k + (lo & 7));
    limb_sync(ctr, target);  // every column of both components of the limb is in out
    {
        // Row phase: tile line hi = row 8k + hi % 8 of component hi / 8.
        const uint32_t row = 8 * k + (hi & 7);
        const u64* tsrc = out + (hi >> 3) * zs + y * ys;
        u64 x[8];
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = ldcg(tsrc + row * SUB + lo + 16 * e);
        fwd8<Harvey>(x, tw7(tw, SUB + row), q);
#pragma unroll
        for (int e = 0; e < 8; e++) s[gs_rw(hi, lo + 16 * e)] = x[e];
    }
    __syncthreads();
    fwd_rows_tail(
        s, tw, q, [&](uint32_t l) { return 8 * k + (l & 7); },
        [&](uint32_t l) { return out + (l >> 3) * zs + y * ys; });
}

extern "C" __global__ void __launch_bounds__(512) copy_ct(const u64* in, u64* out) {
    const uint32_t blk = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    const u64* s = in + (u64)blk * 2048;
    u64* d = out + (u64)blk * 2048;
    ulonglong2 a = reinterpret_cast<const ulonglong2*>(s)[threadIdx.x];
    ulonglong2 b = reinterpret_cast<const ulonglong2*>(s)[threadIdx.x + 512];
    reinterpret_cast<ulonglong2*>(d)[threadIdx.x] = a;
    reinterpret_cast<ulonglong2*>(d)[threadIdx.x + 512] = b;
}


// Throughput scan (`ntt_bench scan`): the cluster forward NTT (ntt_fwd_cl, up to 3 blocks per
// SM) and the preloaded one (ntt_fwd_clr, 1 block per SM) over n limbs of one prime each in
// turn, back to back: how the time per limb changes with the number of blocks an SM holds.
static int scan() {
    const int maxl = 144;
    std::mt19937_64 rng(7);
    std::vector<Prime> primes(9);
    for (int i = 0; i < 9; i++) {
        u64 q = ((1ull << 40) + 2 * 16384 * (u64)(i + 1) * 7919ull) | 1;
        primes[i] = Prime{q, 0, (u64)(((unsigned __int128)1 << 64) / q), 0};
    }
    std::vector<WP> tw((size_t)9 * NN);
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < NN; j++) {
            u64 w = rng() % primes[i].q;
            tw[(size_t)i * NN + j] = WP{w, (u64)(((unsigned __int128)w << 64) / primes[i].q)};
        }
    std::vector<u64> h((size_t)maxl * NN);
    for (size_t i = 0; i < h.size(); i++) h[i] = rng() % primes[(i / NN) % 8].q;
    u64 *in, *out;
    Prime* dp;
    WP* dtw;
    CK(cudaMalloc(&in, h.size() * 8));
    CK(cudaMalloc(&out, h.size() * 8));
    CK(cudaMalloc(&dp, 9 * sizeof(Prime)));
    CK(cudaMalloc(&dtw, tw.size() * sizeof(WP)));
    CK(cudaMemcpy(in, h.data(), h.size() * 8, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dp, primes.data(), 9 * sizeof(Prime), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dtw, tw.data(), tw.size() * sizeof(WP), cudaMemcpyHostToDevice));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    const int ns[] = {8, 16, 24, 32, 40, 48, 56, 64, 72, 96, 120, 144};
    for (int k = 0; k < 2; k++) {
        for (int n : ns) {
            const WP* nopre = nullptr;
            uint32_t off = 0, mode = 0, ginv = 0, soff = 0, sbz = 0;
            u64 ys = NN, zs = 8ull * NN;
            void* args[] = {&in, &out, &dp, &dtw, &nopre, &off, &ys, &zs, &ys, &zs,
                            &mode, &ginv, &soff, &sbz};
            void* f = k == 0 ? (void*)ntt_fwd_cl : (void*)ntt_fwd_clr;
            dim3 g(8, 8, n / 8);
            for (int i = 0; i < 20; i++) CK(cudaLaunchKernel(f, g, dim3(512), args, 0, st));
            const int burst = 200;
            CK(cudaEventRecord(e0, st));
            for (int i = 0; i < burst; i++) CK(cudaLaunchKernel(f, g, dim3(512), args, 0, st));
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            const double us = ms * 1000.0 / burst;
            printf("scan %-12s limbs %3d blocks %4d  burst_us %7.2f  us_per_limb %5.3f\n",
                   k == 0 ? "ntt_fwd_cl" : "ntt_fwd_clr", n, 8 * n, us, us / n);
        }
    }
    return 0;
}

static bool wide_prime(int i) {
    const char* w = getenv("WIDE");
    if (w == nullptr) return i == 0;
    for (const char* c = w; *c != 0;) {
        char* end = nullptr;
        const long v = strtol(c, &end, 10);
        if (end == c) break;
        if (v == i) return true;
        c = *end == ',' ? end + 1 : end;
    }
    return false;
}

int main(int argc, char** argv) {
    if (argc > 1 && std::string(argv[1]) == "scan") return scan();
    const int limbs = argc > 2 ? atoi(argv[1]) : 8, comps = argc > 2 ? atoi(argv[2]) : 2, sets = 4;
    const size_t words = (size_t)comps * limbs * NN;
    std::mt19937_64 rng(42);
    std::vector<Prime> primes(9);
    for (int i = 0; i < 9; i++) {
        u64 q = ((1ull << 40) + 2 * 16384 * (u64)(i + 1) * 7919ull) | 1;
        // WIDE=a,b: the ~2^60 primes' indices (default 0, the harness's first prime; WIDE=7,8
        // is the engine's shape at the top level: the base prime last, then P).
        // WIDED=k: the wide primes as 2^60 - 2 16384 (k + i) + 1 instead, within 2^32 of 2^60
        // like the engine's 60-bit message primes (the default's are ~2^35.3 below it).
        if (wide_prime(i)) {
            const char* wd = getenv("WIDED");
            const u64 k =
                wd != nullptr ? strtoull(wd, nullptr, 10) + (u64)i : 1234567ull + 1000 * (u64)i;
            q = (1ull << 60) - 2 * 16384 * k + 1;
        }
        primes[i].q = q;
        // -q^-1 mod 2^64 (Newton's iteration). Until run 116 this was 0, which made mont /
        // mont_reduce return a plain high word: the key-switch hashes of runs up to 116 are
        // of that (ks-chain-gq f58b5242f0e61ff8 then, 1002a355d585970b since run 117), and
        // kernels that reduce in another order than ks_sum could not match them.
        u64 inv = q;
        for (int it = 0; it < 6; it++) inv *= 2 - q * inv;
        primes[i].qinv_neg = 0 - inv;
        primes[i].red_wp = (u64)(((unsigned __int128)1 << 64) / q);
        primes[i].pad = 0;
    }
    std::vector<WP> tw((size_t)9 * NN), post(9), red(9);
    for (int i = 0; i < 9; i++) {
        for (int j = 0; j < NN; j++) {
            u64 w = rng() % primes[i].q;
            tw[(size_t)i * NN + j] = WP{w, (u64)(((unsigned __int128)w << 64) / primes[i].q)};
        }
        u64 w = rng() % primes[i].q;
        post[i] = WP{w, (u64)(((unsigned __int128)w << 64) / primes[i].q)};
    }
    // The plain reduction (w = 1) the engine's ModUp takes as its pre-step.
    for (int i = 0; i < 9; i++) red[i] = WP{1, (u64)(((unsigned __int128)1 << 64) / primes[i].q)};
    // The inverse kernels' scaling (struct Post): post[i] and post[i] times the last stage's
    // twiddle tw[1], so that the output words do not depend on whether the scaling is folded.
    std::vector<Post> postf(9);
    for (int i = 0; i < 9; i++) {
        const u64 q = primes[i].q;
        const u64 f = (u64)((unsigned __int128)post[i].w * tw[(size_t)i * NN + 1].w % q);
        postf[i] = Post{post[i], WP{f, (u64)(((unsigned __int128)f << 64) / q)}};
    }
#ifdef F64TW
    // variants.py's f64tw: the primes below F64_Q get their twiddles as (double w, double w / q)
    // bit patterns (LooseF::mulmod_tw); the scaling table (postf) keeps its integer words.
    for (int i = 0; i < 9; i++) {
        const u64 q = primes[i].q;
        if (q >= F64_Q) continue;
        for (int j = 0; j < NN; j++) {
            WP& t = tw[(size_t)i * NN + j];
            const double wd = (double)t.w, wq = wd / (double)q;
            memcpy(&t.w, &wd, 8);
            memcpy(&t.wp, &wq, 8);
        }
    }
#endif
#ifdef TW8
    // variants.py's tw8: the primes below F64_Q get their twiddles as 8-byte doubles, entry j at
    // the u64 slot j of the prime's region (the second half of the region is left as it was).
    for (int i = 0; i < 9; i++) {
        const u64 q = primes[i].q;
        if (q >= F64_Q) continue;
        std::vector<u64> ws(NN);
        for (int j = 0; j < NN; j++) {
            const double wd = (double)tw[(size_t)i * NN + j].w;
            memcpy(&ws[j], &wd, 8);
        }
        memcpy(&tw[(size_t)i * NN], ws.data(), (size_t)NN * 8);
    }
#endif
    std::vector<u64> h(words * sets);
    for (size_t i = 0; i < h.size(); i++) h[i] = rng() % primes[(i / NN) % limbs % 9].q;
    u64 *in, *out;
    Prime* dp;
    WP *dtw, *dpost, *dred;
    Post* dpostf;
    unsigned* ctr;
    CK(cudaMalloc(&in, words * sets * 8));
    CK(cudaMalloc(&out, words * sets * 8));
    CK(cudaMalloc(&dp, 9 * sizeof(Prime)));
    CK(cudaMalloc(&dtw, tw.size() * sizeof(WP)));
    CK(cudaMalloc(&dpost, 9 * sizeof(WP)));
    CK(cudaMalloc(&dred, 9 * sizeof(WP)));
    CK(cudaMalloc(&dpostf, 9 * sizeof(Post)));
    // 64 regions of 512 counter words, as the engine's per-stream state (2 SYNC_SLOTS): the
    // paired kernels' component 1 counts on word 2 (y + GP_CTR2) + 1.
    CK(cudaMalloc(&ctr, 64 * 512 * 4));
    CK(cudaMemset(ctr, 0, 64 * 512 * 4));
    // Each region's exchange scratch of the paired kernels (2 N words per limb row, zeroed with
    // the counters, as the engine's: decision 0514).
    u64* xch;
    const size_t xch_words = 2 * (size_t)limbs * NN;
    CK(cudaMalloc(&xch, 64 * xch_words * 8));
    CK(cudaMemset(xch, 0, 64 * xch_words * 8));
    CK(cudaMemcpy(in, h.data(), words * sets * 8, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dp, primes.data(), 9 * sizeof(Prime), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dtw, tw.data(), tw.size() * sizeof(WP), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dpost, post.data(), 9 * sizeof(WP), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dred, red.data(), 9 * sizeof(WP), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dpostf, postf.data(), 9 * sizeof(Post), cudaMemcpyHostToDevice));
    // Key-switching buffers (rows 9 = 8 Q limbs + P, 8 digits): extended digits, 4 keys (the
    // engine's benchmark cycles 4 keys so the 50 MB L2 does not hold them), accumulators.
    const size_t ks_key_words = (size_t)8 * 2 * 9 * NN;
    u64 *ks_ext, *ks_key, *ks_acc;
    CK(cudaMalloc(&ks_ext, (size_t)8 * 9 * NN * 8));
    CK(cudaMalloc(&ks_key, ks_key_words * 4 * 8));
    CK(cudaMalloc(&ks_acc, (size_t)2 * 9 * NN * 8));
    // The Galois element inverse of the ModUp rows (6, 14): KS_GINV, default 11 (0: no sigma).
    const uint32_t ks_ginv = getenv("KS_GINV") ? (uint32_t)atoi(getenv("KS_GINV")) : 11u;
    printf("ModUp rows: ginv %u\n", ks_ginv);
    unsigned* gq_state;  // ntt_fwd_gq's queue state (2 + 2 x 72 words), zero between launches
    CK(cudaMalloc(&gq_state, (2 + 2 * 72) * sizeof(unsigned)));
    CK(cudaMemset(gq_state, 0, (2 + 2 * 72) * sizeof(unsigned)));
    {
        std::vector<u64> kh(ks_key_words * 4);
        for (size_t i = 0; i < kh.size(); i++) kh[i] = rng() % primes[(i / NN) % 9].q;
        CK(cudaMemcpy(ks_key, kh.data(), kh.size() * 8, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(ks_ext, kh.data(), (size_t)8 * 9 * NN * 8, cudaMemcpyHostToDevice));
        CK(cudaMemcpy(ks_acc, kh.data(), (size_t)2 * 9 * NN * 8, cudaMemcpyHostToDevice));
    }
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    dim3 grid(8, limbs, comps);  // prime ids 0..limbs-1: at most 9 limbs have their own prime
    // The key inner product's arguments (ks_inner_cl / ks_inner_gs, rows 7 and 12): one of 4
    // keys, KS_DIGITS digits (default 8), 9 target rows, no added rows.
    struct KsArgs {
        const u64* key;
        uint32_t digits = 8, rows = 9;
        u64 kds = 2ull * 9 * NN, kcs = 9ull * NN;
        const u64* addn = nullptr;
        u64 addn_cs = 0;
        const u64* padd = nullptr;
    };
    int region = 0;
    // pdl_now: rows 22 / 23 launch the inner product and ModDown (12, 8) with programmatic
    // stream serialization (PDL); those kernels start with grid_dep_wait.
    bool pdl_now = false;
    // The attribute "clusters of 8 along x" (rows 28-31 and the occupancy queries below).
    cudaLaunchAttribute cl8;
    cl8.id = cudaLaunchAttributeClusterDimension;
    cl8.val.clusterDim.x = 8;
    cl8.val.clusterDim.y = 1;
    cl8.val.clusterDim.z = 1;
    // Clusters of 16 along x (rows 50-53; the non-portable size, allowed per kernel below).
    cudaLaunchAttribute cl16 = cl8;
    cl16.val.clusterDim.x = 16;
    CK(cudaFuncSetAttribute((void*)ntt_fwd_gp, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    CK(cudaFuncSetAttribute((void*)ntt_inv_gp, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    // One launch of f: cooperative when coop; in clusters of `cluster` (8 or 16) along x when
    // it is not 0 (a plain launch: a limb's blocks are co-scheduled by the hardware, which is
    // all the limb barrier needs; runs 64 / 104: same words, slower, the hardware packs two
    // blocks on some SMs);
    // with programmatic stream serialization while pdl_now.
    auto go = [&](void* f, dim3 g, dim3 b, void** args, bool coop,
                  unsigned cluster = 0) -> cudaError_t {
        if (!pdl_now && cluster == 0)
            return coop ? cudaLaunchCooperativeKernel(f, g, b, args, 0, st)
                        : cudaLaunchKernel(f, g, b, args, 0, st);
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = g;
        cfg.blockDim = b;
        cfg.stream = st;
        cudaLaunchAttribute at[3];
        int n = launch_attrs(at, pdl_now, coop);
        if (cluster != 0) at[n++] = cluster == 16 ? cl16 : cl8;
        cfg.attrs = at;
        cfg.numAttrs = n;
        return cudaLaunchKernelExC(&cfg, f, args);
    };
    // The split-limb prototypes (rows 37-40) with Q4_PAD / H2_PAD bytes of unused dynamic
    // shared memory per block: 90000 leaves room for one block per SM (they otherwise fit two).
    const int q4_pad = getenv("Q4_PAD") ? atoi(getenv("Q4_PAD")) : 0;
    const int h2_pad = getenv("H2_PAD") ? atoi(getenv("H2_PAD")) : 0;
    CK(cudaFuncSetAttribute((void*)ntt_fwd_q4, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            q4_pad));
    CK(cudaFuncSetAttribute((void*)ntt_fwd_h2, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            h2_pad));
    CK(cudaFuncSetAttribute((void*)ntt_fwd_q4f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                            q4_pad));
    auto padded = [&](void* f, int pad, void** args) -> cudaError_t {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid;
        cfg.blockDim = dim3(GS_THREADS);
        cfg.dynamicSmemBytes = pad;
        cfg.stream = st;
        return cudaLaunchKernelExC(&cfg, f, args);
    };
    auto launch = [&](int which, int set) -> cudaError_t {
        const u64* src = in + (size_t)set * words;
        u64* dst = out + (size_t)set * words;
        const unsigned reg = region++ % 64;
        unsigned* c = ctr + reg * 512;
        u64* xc = xch + reg * xch_words;
        const WP* nopre = nullptr;
        uint32_t off = 0, mode = 0, ginv = 0, soff = 0, sbz = 0;
        u64 ys = NN, zs = (u64)limbs * NN;
        if (which == 0) {
            void* args[] = {&src, &dst, &dp, &dtw, &nopre, &off, &ys, &zs, &ys, &zs,
                            &mode, &ginv, &soff, &sbz, &c};
            return cudaLaunchCooperativeKernel((void*)ntt_fwd_gs, grid, dim3(GS_THREADS), args, 0, st);
        } else if (which == 1) {
            void* args[] = {&src, &dst, &dp, &dtw, &dpostf, &off, &ys, &zs, &ys, &zs, &c};
            return cudaLaunchCooperativeKernel((void*)ntt_inv_gs, grid, dim3(GS_THREADS), args, 0, st);
        } else if (which == 2) {
            void* args[] = {&src, &dst};
            return cudaLaunchKernel((void*)copy_ct, grid, dim3(512), args, 0, st);
        } else if (which == 3) {
            void* args[] = {&dst};
            return cudaLaunchKernel((void*)nop_ct, grid, dim3(512), args, 0, st);
        } else if (which == 5) {
            // The cluster kernel with twiddles preloaded (clusters of 8, compiled in).
            void* args[] = {&src, &dst, &dp, &dtw, &nopre, &off, &ys, &zs, &ys, &zs,
                            &mode, &ginv, &soff, &sbz};
            return cudaLaunchKernel((void*)ntt_fwd_clr, grid, dim3(512), args, 0, st);
        } else if (which == 6) {
            // Key switching's ModUp as the engine launches it: ntt_fwd_cl, grid (CL, rows 9,
            // digits 8), balanced lift of digit z through an automorphism.
            const u64* c1 = src + (u64)limbs * NN;
            u64* ext = ks_ext;
            uint32_t g = ks_ginv, one = 1;
            u64 zero = 0, n = NN, rn = 9ull * NN;
            void* args[] = {&c1, &ext, &dp, &dtw, &dred, &off, &zero, &n, &n, &rn,
                            &mode, &g, &soff, &one};
            return cudaLaunchKernel((void*)ntt_fwd_cl, dim3(8, 9, 8), dim3(512), args, 0, st);
        } else if (which == 7) {
            // Key inner product + inverse NTT: ks_inner_cl, grid (CL, rows 9, 2), one of 4 keys.
            KsArgs a{ks_key + (u64)(set % 4) * ks_key_words};
            if (getenv("KS_DIGITS")) a.digits = atoi(getenv("KS_DIGITS"));
            void* args[] = {&ks_ext, &a.key, &ks_acc, &dp, &dtw, &dpostf, &off, &a.digits,
                            &a.rows, &a.kds, &a.kcs, &a.addn, &a.addn_cs, &a.padd};
            // KS_ROWS=r computes only the first r target rows (layout unchanged): with r <= 7
            // the 2r clusters fit one block per SM (at most 15 do), which shows what the 3
            // clusters that share SMs at r = 9 cost.
            const unsigned ry = getenv("KS_ROWS") ? atoi(getenv("KS_ROWS")) : 9;
            return cudaLaunchKernel((void*)ks_inner_cl, dim3(8, ry, 2), dim3(512), args, 0, st);
        } else if (which == 12) {
            // The same inner product + inverse NTT by ks_inner_gs: cooperative, grid (CL, 9, 2),
            // GS_THREADS threads, the limb exchange through ks_acc.
            KsArgs a{ks_key + (u64)(set % 4) * ks_key_words};
            void* args[] = {&ks_ext, &a.key, &ks_acc, &dp, &dtw, &dpostf, &off, &a.digits,
                            &a.rows, &a.kds, &a.kcs, &a.addn, &a.addn_cs, &a.padd, &c};
            // KS_ROWS=r as for row 7: with r = 8 the 128 blocks take one SM each (at r = 9, 12
            // SMs hold two of the 144), which shows what the shared SMs cost.
            const unsigned ry = getenv("KS_ROWS") ? atoi(getenv("KS_ROWS")) : 9;
            return go((void*)ks_inner_gs, dim3(8, ry, 2), dim3(GS_THREADS), args, true);
        } else if (which == 24) {
            // The inner product alone (ks_ip, every SM, no NTT): grid (N / 512, 9, 2), 256 threads.
            KsArgs a{ks_key + (u64)(set % 4) * ks_key_words};
            void* args[] = {&ks_ext, &a.key, &ks_acc, &dp, &off, &a.digits, &a.rows,
                            &a.kds, &a.kcs, &a.addn, &a.addn_cs, &a.padd};
            return go((void*)ks_ip, dim3(NN / (2 * KS_IP_THREADS), 9, 2), dim3(KS_IP_THREADS),
                      args, false);
        } else if (which == 25) {
            // The inverse NTT of the 18 accumulator limbs in place (ntt_inv_gs, 144 blocks,
            // two per SM on 12 SMs), scaled by the key switch's post table.
            u64 n = NN, rn = 9ull * NN;
            void* args[] = {&ks_acc, &ks_acc, &dp, &dtw, &dpostf, &off, &n, &rn, &n, &rn, &c};
            return go((void*)ntt_inv_gs, dim3(8, 9, 2), dim3(GS_THREADS), args, true);
        } else if (which == 28 || which == 29) {
            // ntt_fwd_gs / ntt_inv_gs as rows 0 / 1, by a plain launch in clusters of 8.
            if (which == 28) {
                void* args[] = {&src, &dst, &dp, &dtw, &nopre, &off, &ys, &zs, &ys, &zs,
                                &mode, &ginv, &soff, &sbz, &c};
                return go((void*)ntt_fwd_gs, grid, dim3(GS_THREADS), args, false, 8);
            }
            void* args[] = {&src, &dst, &dp, &dtw, &dpostf, &off, &ys, &zs, &ys, &zs, &c};
            return go((void*)ntt_inv_gs, grid, dim3(GS_THREADS), args, false, 8);
        } else if (which == 31) {
            // ks_inner_gs as row 12, by a plain launch in clusters of 8 (18 clusters).
            KsArgs a{ks_key + (u64)(set % 4) * ks_key_words};
            void* args[] = {&ks_ext, &a.key, &ks_acc, &dp, &dtw, &dpostf, &off, &a.digits,
                            &a.rows, &a.kds, &a.kcs, &a.addn, &a.addn_cs, &a.padd, &c};
            return go((void*)ks_inner_gs, dim3(8, 9, 2), dim3(GS_THREADS), args, false, 8);
        } else if (which == 14 || which == 16 || which == 17) {
            // The ModUp of row 6 as a work queue (ntt_fwd_gq, one wave of 2 blocks per SM, the
            // automorphism as an output permutation); the queue state comes back zeroed. 16:
            // without the automorphism (lift and pre-step kept), 17: a plain forward NTT of
            // the same 72 limbs (as rows 9 and 10 for the cluster ModUp).
            const u64* c1 = src + (u64)limbs * NN;
            u64* ext = ks_ext;
            uint32_t g = which == 14 ? ks_ginv : 0, one = which == 17 ? 0 : 1, ly = 9, lz = 8;
            const WP* pre = which == 17 ? nullptr : dred;
            u64 zero = 0, n = NN, rn = 9ull * NN;
            void* args[] = {&c1, &ext, &dp, &dtw, &pre, &off, &zero, &n, &n, &rn,
                            &mode, &g, &soff, &one, &ly, &lz, &gq_state};
            int bps = 0, sms = 0;
            cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, (void*)ntt_fwd_gq, GS_THREADS, 0);
            cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
            const int blocks = std::min(8 * 72, bps * sms);
            return cudaLaunchKernel((void*)ntt_fwd_gq, dim3(blocks), dim3(GS_THREADS), args, 0, st);
        } else if (which == 18) {
            // The ciphertext's forward NTT (as row 0) by the work queue ntt_fwd_gq with a plain
            // launch (deadlock-free at any grid of at least CL blocks): one item pair per block.
            uint32_t ly = limbs, lz = comps;
            void* args[] = {&src, &dst, &dp, &dtw, &nopre, &off, &ys, &zs, &ys, &zs,
                            &mode, &ginv, &soff, &sbz, &ly, &lz, &gq_state};
            return cudaLaunchKernel((void*)ntt_fwd_gq, dim3(8 * limbs * comps), dim3(GS_THREADS),
                                    args, 0, st);
        } else if (which == 8) {
            // ModDown + adds: ks_moddown, grid (N / 256, limbs, 2).
            uint32_t L = limbs, g = 11, early = 1;  // the addend is rotate's input
            const u64* a0 = src;
            const u64* a1 = nullptr;
            void* args[] = {&ks_acc, &a0, &a1, &dst, &dp, &dpost, &off, &L, &g, &early};
            return go((void*)ks_moddown, dim3(NN / 256, limbs, 2), dim3(256), args, false);
        } else if (which == 9 || which == 10) {
            // ModUp without the automorphism (9: lift and pre-step kept; 10: a plain forward
            // NTT of the same 72 limbs, no pre-step): what the gather and the lift cost.
            const u64* c1 = src + (u64)limbs * NN;
            u64* ext = ks_ext;
            uint32_t g = 0, one = which == 9 ? 1 : 0;
            const WP* pre = which == 9 ? dred : nullptr;
            u64 zero = 0, n = NN, rn = 9ull * NN;
            void* args[] = {&c1, &ext, &dp, &dtw, &pre, &off, &zero, &n, &n, &rn,
                            &mode, &g, &soff, &one};
            return cudaLaunchKernel((void*)ntt_fwd_cl, dim3(8, 9, 8), dim3(512), args, 0, st);
        } else if (which == 58) {
            // ntt_fwd_q4f (rows 54-55): run 68's quarters with binary64 butterflies.
            void* args[] = {&src, &dst, &dp, &dtw, &off, &ys, &zs};
            return padded((void*)ntt_fwd_q4f, q4_pad, args);
        } else if (which == 37 || which == 39) {
            void* args[] = {&src, &dst, &dp, &dtw, &off, &ys, &zs};
            return which == 37 ? padded((void*)ntt_fwd_q4, q4_pad, args)
                               : padded((void*)ntt_fwd_h2, h2_pad, args);
        } else if (which == 50) {
            // ntt_fwd_d2 (rows 44-45): grid (16, limbs), both components per block.
            if (comps != 2) return cudaErrorInvalidValue;
            void* args[] = {&src, &dst, &dp, &dtw, &off, &ys, &zs, &ctr};
            return cudaLaunchCooperativeKernel((void*)ntt_fwd_d2, dim3(16, limbs, 1),
                                               dim3(GS_THREADS), args, 0, st);
        } else if (which == 46 || which == 48) {
            // Rows 46 / 48: the engine's paired NTT kernels (ntt_fwd_gp / ntt_inv_gp), grid
            // (16, limbs), cooperative; 47 / 49: as one-node graphs. (Runs 96-97 timed the
            // component-pipelined form against the form before it as prototypes here: commit
            // 393f9b4.)
            // GP_PLAIN=1: a plain launch instead (no co-residency guarantee: safe here only
            // because nothing else runs; run 170 timed what the cooperative launch costs).
            if (comps != 2) return cudaErrorInvalidValue;
            static const bool coop = getenv("GP_PLAIN") == nullptr;
            // One counter region and exchange scratch, as one engine stream's (the scratch
            // stays in L2 between launches; cycling 64 regions' scratch, 128 MiB, did not:
            // run 220).
            c = ctr;
            xc = xch;
            // GPN=1: the LooseN forms the engine launches when every wide prime is near60
            // (decision 0515; with WIDED set, as the engine's primes are), where the source has
            // them.
            void* fk = (void*)ntt_fwd_gp;
            void* ik = (void*)ntt_inv_gp;
#ifdef GP_FWD_PARAMS
            static const bool gpn = getenv("GPN") != nullptr && atoi(getenv("GPN")) != 0;
            if (gpn) {
                fk = (void*)ntt_fwd_gpn;
                ik = (void*)ntt_inv_gpn;
            }
#endif
            if (which == 46) {
                void* args[] = {&src, &dst, &dp, &dtw, &off, &ys, &zs, &c, &xc};
                return go(fk, dim3(16, limbs, 1), dim3(GS_THREADS), args, coop);
            }
            void* args[] = {&src, &dst, &dp, &dtw, &dpostf, &off, &ys, &zs, &c, &xc};
            return go(ik, dim3(16, limbs, 1), dim3(GS_THREADS), args, coop);
        } else if (which == 54 || which == 55) {
            // Rows 50-53: the paired kernels by a plain launch in clusters of 16 along x (the
            // non-portable size: one prime's 16 blocks, which meet at the limb barrier, are
            // co-scheduled by the hardware, so no cooperative launch; run 103's probe: such a
            // launch costs ~0.35 us less per single call than a cooperative one).
            if (comps != 2) return cudaErrorInvalidValue;
            c = ctr;  // one region, as rows 46-49
            xc = xch;
            if (which == 54) {
                void* args[] = {&src, &dst, &dp, &dtw, &off, &ys, &zs, &c, &xc};
                return go((void*)ntt_fwd_gp, dim3(16, limbs, 1), dim3(GS_THREADS), args, false, 16);
            }
            void* args[] = {&src, &dst, &dp, &dtw, &dpostf, &off, &ys, &zs, &c, &xc};
            return go((void*)ntt_inv_gp, dim3(16, limbs, 1), dim3(GS_THREADS), args, false, 16);
        } else if (which == 42 || which == 43 || which == 44) {
            void* args[] = {&src, &dst, &dp, &dtw, &nopre, &off, &ys, &zs, &ys, &zs,
                            &mode, &ginv, &soff, &sbz};
            void* f = which == 42 ? (void*)ntt_fwd_p1 : which == 43 ? (void*)ntt_fwd_p1t
                                                                     : (void*)ntt_fwd_p2;
            return go(f, grid, dim3(GS_THREADS), args, false);
        } else if (which == 41) {
            // The inverse kernel by a plain launch (row 36's graph node).
            void* args[] = {&src, &dst, &dp, &dtw, &dpostf, &off, &ys, &zs, &ys, &zs, &c};
            return cudaLaunchKernel((void*)ntt_inv_gs, grid, dim3(GS_THREADS), args, 0, st);
        } else {
            // The forward kernel by a plain launch (every block fits at once on an idle GPU).
            void* args[] = {&src, &dst, &dp, &dtw, &nopre, &off, &ys, &zs, &ys, &zs,
                            &mode, &ginv, &soff, &sbz, &c};
            return cudaLaunchKernel((void*)ntt_fwd_gs, grid, dim3(GS_THREADS), args, 0, st);
        }
    };
    const char* names[] = {"fwd", "inv", "copy", "nop", "fwd-plain", "fwd-clr", "ks-modup",
                           "ks-inner", "ks-moddown", "modup-noaut", "modup-raw", "ks-chain",
                           "ks-inner-gs", "ks-chain-gs", "ks-modup-gq", "ks-chain-gq",
                           "modup-gq-noaut", "modup-gq-raw", "fwd-gq", "chain-g1",
                           "chain-g3", "fwd-g1", "chain-pdl", "chain-pdl-g", "ks-ip",
                           "ks-inv18", "ks-unf", "chain-unf-g", "fwd-cl8", "inv-cl8",
                           "fwd-cl8-g", "ks-inner-cl8", "fwd-g1p", "nop-g1", "copy-g1",
                           "inv-g1", "inv-g1p", "fwd-q4", "fwd-q4-g", "fwd-h2", "fwd-h2-g", "fwd-2k", "fwd-2k-g", "fwd-2kt-g", "fwd-d2", "fwd-d2-g", "fwd-gp", "fwd-gp-g", "inv-gp", "inv-gp-g",
                           "fwd-gp16", "fwd-gp16-g", "inv-gp16", "inv-gp16-g",
                           "fwd-q4f", "fwd-q4f-g"};
    // Rows 11, 13 and 15: the three key-switching kernels back to back on one key, as rotate
    // runs them (ModUp by clusters and the inner product by ks_inner_cl; the same with
    // ks_inner_gs; the ModUp as a queue and ks_inner_gs).
    // Rows 28-31: the *_gs kernels by a plain launch in clusters of 8 instead of a cooperative
    // launch (forward, inverse, the forward as a one-node graph, ks_inner_gs). (The dropped
    // kernels of kernels/bench/experiments/*.patch bring their own rows 28-29.)
    // Rows 24-27: the inner product unfused from the inverse NTT (ks_ip alone, the 18-limb
    // ntt_inv_gs alone, both, and row 23's chain with both in place of ks_inner_gs).
    // Rows 19-23: how launches are submitted. 19: the gq chain (row 15) as three one-node
    // graphs (the engine's way); 20: the same chain as one three-node graph; 21: the forward
    // NTT (row 0) as a one-node graph; 22: the chain by stream launches, the inner product and
    // ModDown with PDL; 23: row 22 captured into one graph (programmatic edges).
    // Rows 32-36: one-node graphs of the forward NTT by a plain launch (row 4), of the no-work
    // and copy kernels (rows 3, 2: what any one-launch op costs as a graph), and of the inverse
    // NTT cooperative (row 1) and plain.
    // Rows 37-38: run 68's ntt_fwd_q4 (quarters by clusters of 2), plain launch and one-node graph.
    // Rows 39-40: run 72's ntt_fwd_h2 (halves by clusters of 4), plain launch and one-node graph.
    // Rows 41-43: run 73's two-kernel forward NTT (stream launches with PDL; one graph with a
    // programmatic edge; the same with the first kernel triggering at its start).
    // Rows 44-45: run 76's ntt_fwd_d2 (both components per block), launch and one-node graph.
    // Rows 50-53: the paired kernels (rows 46-49) by a plain launch in clusters of 16, launch
    // and one-node graph, forward then inverse.
    // Rows 54-55: ntt_fwd_q4f (run 68's quarters, binary64 below F64_Q), launch and one-node
    // graph; its hash must equal fwd-q4's and fwd-gp's.
    std::vector<cudaGraphExec_t> graphs(124, nullptr);
    auto capture = [&](int slot, auto body) -> cudaError_t {
        if (graphs[slot]) return cudaGraphLaunch(graphs[slot], st);
        cudaGraph_t g;
        cudaError_t e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
        if (e != cudaSuccess) return e;
        cudaError_t eb = body();
        e = cudaStreamEndCapture(st, &g);
        if (eb != cudaSuccess) return eb;
        if (e != cudaSuccess) return e;
        e = cudaGraphInstantiate(&graphs[slot], g, 0);
        if (e != cudaSuccess) return e;
        return cudaGraphLaunch(graphs[slot], st);
    };
    auto chain = [&](int set) -> cudaError_t {
        cudaError_t e = launch(14, set);
        if (e == cudaSuccess) e = launch(12, set);
        if (e == cudaSuccess) e = launch(8, set);
        return e;
    };
    auto run = [&](int which, int set) -> cudaError_t {
        if (which == 19) {
            const int ks[3] = {14, 12, 8};
            for (int i = 0; i < 3; i++) {
                cudaError_t e = capture(set * 3 + i, [&] { return launch(ks[i], set); });
                if (e != cudaSuccess) return e;
            }
            return cudaSuccess;
        }
        if (which == 20) return capture(16 + set, [&] { return chain(set); });
        if (which == 26) {
            cudaError_t e = launch(24, set);
            if (e == cudaSuccess) e = launch(25, set);
            return e;
        }
        if (which == 30) return capture(48 + set, [&] { return launch(28, set); });
        if (which == 27) {
            // Row 23 with the inner product unfused: ModUp, ks_ip, the 18-limb inverse NTT,
            // ModDown, one graph with programmatic edges.
            return capture(40 + set, [&]() -> cudaError_t {
                cudaError_t e = launch(14, set);
                pdl_now = true;
                if (e == cudaSuccess) e = launch(24, set);
                if (e == cudaSuccess) e = launch(25, set);
                if (e == cudaSuccess) e = launch(8, set);
                pdl_now = false;
                return e;
            });
        }
        if (which == 21) return capture(24 + set, [&] { return launch(0, set); });
        if (which == 32) return capture(56 + set, [&] { return launch(4, set); });
        if (which == 33) return capture(60 + set, [&] { return launch(3, set); });
        if (which == 34) return capture(64 + set, [&] { return launch(2, set); });
        if (which == 35) return capture(68 + set, [&] { return launch(1, set); });
        if (which == 36) return capture(72 + set, [&] { return launch(41, set); });
        if (which == 38) return capture(76 + set, [&] { return launch(37, set); });
        if (which == 40) return capture(80 + set, [&] { return launch(39, set); });
        if (which == 44) return launch(50, set);
        if (which == 45) return capture(96 + set, [&] { return launch(50, set); });
        // Rows 47 and 49: one-node graphs of rows 46 and 48.
        if (which == 47) return capture(100 + set, [&] { return launch(46, set); });
        if (which == 49) return capture(104 + set, [&] { return launch(48, set); });
        if (which == 50) return launch(54, set);
        if (which == 51) return capture(108 + set, [&] { return launch(54, set); });
        if (which == 52) return launch(55, set);
        if (which == 53) return capture(112 + set, [&] { return launch(55, set); });
        if (which == 54) return launch(58, set);
        if (which == 55) return capture(116 + set, [&] { return launch(58, set); });
        if (which == 41 || which == 42 || which == 43) {
            // The two-kernel forward NTT: column phase, then the row phase with PDL.
            auto body = [&]() -> cudaError_t {
                cudaError_t e = launch(which == 43 ? 43 : 42, set);
                pdl_now = true;
                if (e == cudaSuccess) e = launch(44, set);
                pdl_now = false;
                return e;
            };
            if (which == 41) return body();
            return capture((which == 42 ? 88 : 92) + set, body);
        }
        if (which == 22 || which == 23) {
            auto body = [&]() -> cudaError_t {
                cudaError_t e = launch(14, set);
                pdl_now = true;
                if (e == cudaSuccess) e = launch(12, set);
                if (e == cudaSuccess) e = launch(8, set);
                pdl_now = false;
                return e;
            };
            if (which == 22) return body();
            return capture(32 + set, body);
        }
        if (which != 11 && which != 13 && which != 15) return launch(which, set);
        cudaError_t e = launch(which == 15 ? 14 : 6, set);
        if (e == cudaSuccess) e = launch(which == 11 ? 7 : 12, set);
        if (e == cudaSuccess) e = launch(8, set);
        return e;
    };
    {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = grid;
        cfg.blockDim = dim3(512);
        cfg.attrs = &cl8;
        cfg.numAttrs = 1;
        int n = -1;
        cudaError_t e = cudaOccupancyMaxActiveClusters(&n, (void*)ntt_fwd_clr, &cfg);
        printf("limbs %d comps %d: max active clusters of ntt_fwd_clr %d (%s)\n", limbs, comps, n,
               cudaGetErrorString(e));
        // Key switching's cluster kernels (ModUp: 72 clusters at level 0; inner: 18).
        cfg.gridDim = dim3(8, 9, 8);
        e = cudaOccupancyMaxActiveClusters(&n, (void*)ntt_fwd_cl, &cfg);
        printf("max active clusters of ntt_fwd_cl (ModUp, 72 clusters) %d (%s)\n", n,
               cudaGetErrorString(e));
        cfg.gridDim = dim3(8, 9, 2);
        e = cudaOccupancyMaxActiveClusters(&n, (void*)ks_inner_cl, &cfg);
        printf("max active clusters of ks_inner_cl (18 clusters) %d (%s)\n", n,
               cudaGetErrorString(e));
        // The *_gs kernels in clusters of 8 (rows 28-31): 16 limbs need 16 clusters at once.
        cfg.gridDim = grid;
        cfg.blockDim = dim3(GS_THREADS);
        e = cudaOccupancyMaxActiveClusters(&n, (void*)ntt_fwd_gs, &cfg);
        printf("max active clusters of ntt_fwd_gs in clusters of 8: %d (%s)\n", n,
               cudaGetErrorString(e));
        cfg.gridDim = dim3(8, 9, 2);
        e = cudaOccupancyMaxActiveClusters(&n, (void*)ks_inner_gs, &cfg);
        printf("max active clusters of ks_inner_gs in clusters of 8: %d (%s)\n", n,
               cudaGetErrorString(e));
        {
            cudaLaunchConfig_t c2 = {};
            cudaLaunchAttribute a2;
            a2.id = cudaLaunchAttributeClusterDimension;
            a2.val.clusterDim.x = 2;
            a2.val.clusterDim.y = 1;
            a2.val.clusterDim.z = 1;
            c2.gridDim = grid;
            c2.blockDim = dim3(GS_THREADS);
            c2.attrs = &a2;
            c2.numAttrs = 1;
            e = cudaOccupancyMaxActiveClusters(&n, (void*)ntt_fwd_q4, &c2);
            printf("max active clusters of ntt_fwd_q4 (clusters of 2): %d (%s)\n", n,
                   cudaGetErrorString(e));
            // ntt_fwd_h2 in clusters of 4, with H2_PAD bytes of dynamic shared memory.
            a2.val.clusterDim.x = 4;
            const int hpad = h2_pad;
            c2.dynamicSmemBytes = hpad;
            e = cudaOccupancyMaxActiveClusters(&n, (void*)ntt_fwd_h2, &c2);
            printf("max active clusters of ntt_fwd_h2 (clusters of 4, pad %d): %d (%s)\n", hpad,
                   n, cudaGetErrorString(e));
        }
        {
            // The paired kernels in clusters of 16 (rows 50-53): one cluster per prime.
            cudaLaunchConfig_t c3 = {};
            c3.gridDim = dim3(16, limbs, 1);
            c3.blockDim = dim3(GS_THREADS);
            c3.attrs = &cl16;
            c3.numAttrs = 1;
            e = cudaOccupancyMaxActiveClusters(&n, (void*)ntt_fwd_gp, &c3);
            printf("max active clusters of ntt_fwd_gp in clusters of 16: %d (%s)\n", n,
                   cudaGetErrorString(e));
        }
        cfg.blockDim = dim3(512);
        int bps = 0;
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, (void*)ntt_fwd_cl, 512, 0);
        printf("ntt_fwd_cl blocks per SM %d; ", bps);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, (void*)ks_inner_cl, 512, 0);
        printf("ks_inner_cl blocks per SM %d\n", bps);
    }
    // The rows that run at any limb count (the others assume the 8-limb key-switch set-up).
    auto any_limbs = [](int w) { return w < 6 || w == 18 || (w >= 28 && w <= 30) || w >= 32; };
    // ROWS=a,b-c: only those rows (default: all).
    const int nrows = (int)(sizeof(names) / sizeof(names[0]));
    std::vector<bool> want(nrows, getenv("ROWS") == nullptr);
    if (const char* r = getenv("ROWS")) {
        for (std::string tok; *r; r += (*r == ',')) {
            tok.clear();
            while (*r && *r != ',') tok += *r++;
            const size_t dash = tok.find('-');
            const int lo = atoi(tok.c_str()), hi = dash == std::string::npos ? lo : atoi(tok.c_str() + dash + 1);
            for (int w = lo; w <= hi && w < nrows; w++) want[w] = true;
        }
    }
    for (int which = 0; which < nrows; which++) {
        if (!want[which] || (limbs != 8 && !any_limbs(which))) continue;
        for (int i = 0; i < 50; i++) CK(run(which, i % sets));
        CK(cudaStreamSynchronize(st));
        const int burst = 400;
        CK(cudaEventRecord(e0, st));
        for (int i = 0; i < burst; i++) CK(run(which, i % sets));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        std::vector<float> single, host;
        for (int i = 0; i < 200; i++) {
            CK(cudaStreamSynchronize(st));
            CK(cudaEventRecord(e0, st));
            const auto h0 = std::chrono::steady_clock::now();
            CK(run(which, i % sets));
            host.push_back(
                std::chrono::duration<float, std::micro>(std::chrono::steady_clock::now() - h0)
                    .count());
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            float s;
            CK(cudaEventElapsedTime(&s, e0, e1));
            single.push_back(s * 1000.f);
        }
        std::sort(single.begin(), single.end());
        std::sort(host.begin(), host.end());
        // host_us: the host time of the single launch (the submission, median).
        printf("%-10s burst_us %7.2f  single_median_us %7.2f  p10 %7.2f  host_us %6.2f\n",
               names[which], ms * 1000.f / burst, single[100], single[20], host[100]);
    }
    // Hashes of what the forward, inverse and ModUp kernels wrote for set 0, to compare variants
    // that must agree word for word.
    {
        auto hash = [](const std::vector<u64>& v) {
            u64 h = 1469598103934665603ull;
            for (u64 x : v) h = (h ^ x) * 1099511628211ull;
            return h;
        };
        // ks-modup and ks-modup-gq (6, 14: ks_ext) must agree, and so must ks-inner and
        // ks-inner-gs (7, 12: ks_acc).
        // ks-unf (26: ks_ip + the 18-limb inverse NTT) must agree with them too.
        const int kinds[36] = {0, 18, 28, 30, 32, 37, 38, 54, 55, 39, 40, 41, 42, 43, 44, 45, 46, 47, 50, 51, 1, 29, 35, 36, 48, 49, 52, 53, 6, 14, 7, 12, 26, 31, 8, 4};
        // The chains' ModDown outputs (rows 15, 19, 20, 22, 23) must agree.
        for (int w : {15, 19, 20, 22, 23, 27}) {
            if (limbs != 8 || !want[w]) continue;
            CK(cudaMemset(out, 0, words * 8));
            CK(run(w, 0));
            CK(cudaStreamSynchronize(st));
            std::vector<u64> v(words);
            CK(cudaMemcpy(v.data(), out, words * 8, cudaMemcpyDeviceToHost));
            printf("hash %-11s %016llx\n", names[w], hash(v));
        }
        for (int w : kinds) {
            if (!want[w] || (limbs != 8 && !any_limbs(w))) continue;
            CK(cudaMemset(out, 0xff, words * 8));  // unwritten words change the hash
            CK(run(w, 0));
            CK(cudaStreamSynchronize(st));
            const bool acc = w == 7 || w == 12 || w == 26 || w == 31;
            const bool ext = w == 6 || w == 14;
            std::vector<u64> v(ext ? (size_t)8 * 9 * NN : acc ? (size_t)2 * 9 * NN : words);
            CK(cudaMemcpy(v.data(), ext ? ks_ext : acc ? ks_acc : out, v.size() * 8,
                          cudaMemcpyDeviceToHost));
            printf("hash %-8s %016llx\n", names[w], hash(v));
        }
    }
#ifdef HAS_GP_MARKS
    // Per-group timeline of the paired kernels (variants.py's gpmarks): 50 single launches of
    // rows 46 (forward) and 48 (inverse); per grid row and group, the medians of start, barrier
    // arrival, barrier exit and end in globaltimer ns after the launch's first start, and how
    // often that row / group ended last.
    if (comps == 2 && limbs <= 64) {
        const int nblk = 16 * limbs;
        for (int which : {46, 48}) {
            std::vector<std::vector<double>> t(limbs * 2 * 4);
            std::vector<int> last(limbs * 2, 0);
            std::vector<double> total;
            for (int it = 0; it < 50; it++) {
                CK(cudaStreamSynchronize(st));
                CK(run(which, it % sets));
                CK(cudaStreamSynchronize(st));
                std::vector<unsigned long long> m(nblk * 2 * 4);
                CK(cudaMemcpyFromSymbol(m.data(), g_gpmarks, m.size() * 8));
                unsigned long long s0 = ~0ull, e1 = 0;
                int lastg = 0;
                for (int i = 0; i < nblk * 2; i++) {
                    s0 = std::min(s0, m[i * 4]);
                    if (m[i * 4 + 3] > e1) {
                        e1 = m[i * 4 + 3];
                        lastg = (i / 32) * 2 + i % 2;  // (grid row, group)
                    }
                }
                last[lastg]++;
                total.push_back((double)(e1 - s0));
                for (int i = 0; i < nblk * 2; i++) {
                    const int rg = (i / 32) * 2 + i % 2;
                    for (int k = 0; k < 4; k++) t[rg * 4 + k].push_back((double)(m[i * 4 + k] - s0));
                }
            }
            auto med = [](std::vector<double> v) {
                std::sort(v.begin(), v.end());
                return v[v.size() / 2];
            };
            printf("gpmarks %s: first start -> last end median %.0f ns\n", names[which], med(total));
            for (int rg = 0; rg < limbs * 2; rg++)
                printf("gpmarks %s row %d g%d: start %5.0f  arrive %5.0f  leave %5.0f  end %5.0f  last %d/50\n",
                       names[which], rg / 2, rg % 2, med(t[rg * 4]), med(t[rg * 4 + 1]),
                       med(t[rg * 4 + 2]), med(t[rg * 4 + 3]), last[rg]);
        }
    }
#endif
#ifdef HAS_MARKS
    // Per-block timeline of single forward launches: phase 1 (start -> before the limb
    // barrier), the barrier, phase 2 (-> end), in SM cycles; start / end skew across blocks in
    // globaltimer ns.
    const int nb = 8 * limbs * comps;
    std::vector<double> p1, bar, p2, skew_s, skew_e, total, fence, arrive, spin;
    for (int it = 0; it < 50; it++) {
        CK(cudaStreamSynchronize(st));
        CK(launch(0, it % sets));
        CK(cudaStreamSynchronize(st));
        std::vector<unsigned long long> m(nb * 16);
        CK(cudaMemcpyFromSymbol(m.data(), g_marks, nb * 16 * 8));
        unsigned long long s0 = ~0ull, s1 = 0, e0_ = ~0ull, e1_ = 0;
        for (int b = 0; b < nb; b++) {
            const unsigned long long* r = &m[b * 16];
            fence.push_back((double)(r[9] - r[3]));
            arrive.push_back((double)(r[11] - r[9]));
            spin.push_back((double)(r[13] - r[11]));
            p1.push_back((double)(r[3] - r[1]));
            bar.push_back((double)(r[5] - r[3]));
            p2.push_back((double)(r[7] - r[5]));
            s0 = std::min(s0, r[0]);
            s1 = std::max(s1, r[0]);
            e0_ = std::min(e0_, r[6]);
            e1_ = std::max(e1_, r[6]);
        }
        skew_s.push_back((double)(s1 - s0));
        skew_e.push_back((double)(e1_ - e0_));
        total.push_back((double)(e1_ - s0));
    }
    auto med = [](std::vector<double> v, double p) {
        std::sort(v.begin(), v.end());
        return v[(size_t)((v.size() - 1) * p)];
    };
    printf("cycles p10/p50/p90: phase1 %.0f/%.0f/%.0f  barrier %.0f/%.0f/%.0f  phase2 %.0f/%.0f/%.0f\n",
           med(p1, .1), med(p1, .5), med(p1, .9), med(bar, .1), med(bar, .5), med(bar, .9),
           med(p2, .1), med(p2, .5), med(p2, .9));
    printf("barrier cycles p10/p50/p90: to fence done %.0f/%.0f/%.0f  arrive %.0f/%.0f/%.0f  spin %.0f/%.0f/%.0f\n",
           med(fence, .1), med(fence, .5), med(fence, .9), med(arrive, .1), med(arrive, .5),
           med(arrive, .9), med(spin, .1), med(spin, .5), med(spin, .9));
    printf("globaltimer ns median: start skew %.0f  end skew %.0f  first start -> last end %.0f\n",
           med(skew_s, .5), med(skew_e, .5), med(total, .5));
#endif
    return 0;
}
