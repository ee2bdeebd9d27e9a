// CKKS kernels for fhelium-ckks's CUDA engine (N = 16384, up to 9 RNS primes below 2^61).
//
// Layout: every polynomial is a row of N u64 words; a value is [component][limb][N], limb l
// holding prime id (prime_off + l). Outputs are canonical [0, q) unless a kernel says "lazy".
//
// Modular arithmetic:
//   * Shoup multiply by a known constant w < q with wp = floor(w * 2^64 / q): exact x*w mod q
//     for ANY 64-bit x, lazy result in [0, 2q) (Harvey). With w = 1, wp = floor(2^64 / q) it
//     reduces an arbitrary 64-bit word modulo q.
//   * Montgomery multiply with R = 2^64 for products of two variables: a*b*2^-64 mod q. The host
//     folds the 2^64 factor (and whatever residue form the CPU engine stores) into per-prime
//     Shoup constants applied where the data is touched anyway, so results equal the CPU's.
//
// NTT (spec ckks.md 4.1): negacyclic, forward Cooley-Tukey with bit-reversed output, inverse
// Gentleman-Sande; twiddle rows hold psi^br(k) (forward) and psi^-br(k) (inverse) as (w, wp)
// pairs, standard form. N = 128 x 128: the forward transform is a column pass (stages 0..6,
// pairs 128*2^k apart, one block per 8 columns of one limb) and a row pass (stages 7..13 on
// rows of 128 contiguous words); the inverse runs the row pass first, then the column pass.
// Each pass keeps its tile (1024 words) in shared memory through its 7 stages.
#include <stdint.h>

typedef unsigned long long u64;
typedef long long i64;

#define LOGN 14
#define NN (1u << LOGN)
#define SUB 128          // N = SUB * SUB
#define TILE_COLS 8      // columns per block in the column pass
#define TILE_ROWS 8      // rows per block in the row pass
#define TILE (SUB * 8)   // words per tile (both passes)
#define NTT_THREADS 512  // one butterfly per thread per stage (TILE / 2)

struct Prime {
    u64 q;
    u64 qinv_neg;    // -q^-1 mod 2^64
    u64 red_wp;      // floor(2^64 / q): Shoup constant of w = 1 (reduction)
    u64 pad;
};

// Shoup constant pair (w, wp)
struct WP {
    u64 w;
    u64 wp;
};

// The inverse NTT's final scaling by a per-prime constant c, as two Shoup pairs: s = c and
// f = c * w1 (w1: the last stage's one twiddle, the inverse table's entry 1), so the *_gs
// kernels fold the scaling into that stage (one product per output pair fewer).
struct Post {
    WP s;
    WP f;
};

// Programmatic dependent launch (PTX 7.8, sm_90): the kernels that the engine's chain graphs
// start as programmatic dependents of the kernel before them (ntt_fwd_gs, ntt_inv_gs,
// ntt_fwd_gq, ks_inner_gs, ks_moddown) call this before any access to global memory (one
// exception: ks_moddown's addend under adds_early, below): it returns once every
// prerequisite grid has completed and its writes are visible, so such a kernel's blocks may
// be launched while its predecessor drains. Without a programmatic edge it returns at once.
__device__ __forceinline__ void grid_dep_wait() {
#ifndef FHE_EMU
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
// The other half: a kernel that calls this lets its programmatic dependents be launched once
// every one of its blocks has called it (or exited) instead of once all have exited; they
// still wait in grid_dep_wait for its completion. The key switch's inner product calls it at
// its limb barrier (gs_inv_ntt's TRIG), so ks_moddown's blocks are launched beside its column
// phase and load their addend while it runs (decision 0508, "ModDown's addend before its
// wait"). No effect without a programmatic edge.
__device__ __forceinline__ void grid_dep_launch() {
#ifndef FHE_EMU
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ u64 shoup_lazy(u64 x, u64 w, u64 wp, u64 q) {
    u64 hi = __umul64hi(x, wp);
    return x * w - hi * q;  // in [0, 2q)
}

// x - q when x >= q, else x (x < 2^63 + q, q <= 2^63): the borrow shows as the sign bit.
__device__ __forceinline__ u64 csub(u64 x, u64 q) {
    const u64 d = x - q;
    return (long long)d < 0 ? x : d;
}

__device__ __forceinline__ u64 shoup(u64 x, u64 w, u64 wp, u64 q) {
    return csub(shoup_lazy(x, w, wp, q), q);
}

__device__ __forceinline__ u64 reduce64(u64 x, const Prime& p) {
    return csub(shoup_lazy(x, 1, p.red_wp, p.q), p.q);
}

// a*b*2^-64 mod q for a*b < q*2^64; canonical.
__device__ __forceinline__ u64 mont(u64 a, u64 b, const Prime& p) {
    u64 lo = a * b;
    u64 hi = __umul64hi(a, b);
    u64 m = lo * p.qinv_neg;
    u64 t = __umul64hi(m, p.q);
    u64 r = hi + t + (lo != 0 ? 1ull : 0ull);
    return csub(r, p.q);
}

// (hi, lo) += a * b (128-bit multiply-accumulate).
__device__ __forceinline__ void mac128(u64& lo, u64& hi, u64 a, u64 b) {
    const u64 plo = a * b;
    const u64 phi = __umul64hi(a, b);
    lo += plo;
    hi += phi + (lo < plo ? 1ull : 0ull);
}

// (hi * 2^64 + lo) * 2^-64 mod q for a 128-bit value below q * 2^64; canonical (mont's
// reduction on its own).
__device__ __forceinline__ u64 mont_reduce(u64 lo, u64 hi, const Prime& p) {
    const u64 m = lo * p.qinv_neg;
    const u64 t = __umul64hi(m, p.q);
    return csub(hi + t + (lo != 0 ? 1ull : 0ull), p.q);
}

__device__ __forceinline__ u64 addmod(u64 a, u64 b, u64 q) { return csub(a + b, q); }
__device__ __forceinline__ u64 submod(u64 a, u64 b, u64 q) { return a >= b ? a - b : a + q - b; }
__device__ __forceinline__ u64 negmod(u64 a, u64 q) { return a == 0 ? 0 : q - a; }

// Coefficient automorphism gather: destination p of sigma_g(a) with ginv = g^-1 mod 2N.
// Returns the canonical residue (source row `row`, prime q).
__device__ __forceinline__ u64 aut_gather(const u64* row, uint32_t p, uint32_t ginv, u64 q) {
    uint32_t i = (uint32_t)(((u64)ginv * p) & (2 * NN - 1));
    if (i < NN) return row[i];
    return negmod(row[i - NN], q);
}

// ------------------------------------------------------------------------------------------
// Forward butterflies on a shared tile.

// Column tile: s[a * TILE_COLS + c], a in [0,128) (high index bits), c the column.
__device__ __forceinline__ void fwd_col_stages(u64* s, const WP* tw, u64 q) {
    const u64 two_q = 2 * q;
    const uint32_t tid = threadIdx.x;
    const uint32_t c = tid % TILE_COLS;
    const uint32_t bpos = tid / TILE_COLS;  // 0..63
#pragma unroll
    for (int st = 0; st < 7; st++) {
        __syncthreads();
        uint32_t tl = 64u >> st;
        uint32_t i = bpos / tl;
        uint32_t jj = bpos % tl;
        uint32_t a = i * 2 * tl + jj;
        WP w = tw[(1u << st) + i];
        u64 x = s[a * TILE_COLS + c];
        u64 y = s[(a + tl) * TILE_COLS + c];
        x = x >= two_q ? x - two_q : x;
        u64 t = shoup_lazy(y, w.w, w.wp, q);
        s[a * TILE_COLS + c] = x + t;
        s[(a + tl) * TILE_COLS + c] = x - t + two_q;
    }
    __syncthreads();
}

// Row tile: s[r * SUB + b], global index j = (row0 + r) * SUB + b.
__device__ __forceinline__ void fwd_row_stages(u64* s, const WP* tw, u64 q, uint32_t row0) {
    const u64 two_q = 2 * q;
    const uint32_t tid = threadIdx.x;
    const uint32_t r = tid / 64;
    const uint32_t bpos = tid % 64;
#pragma unroll
    for (int st = 0; st < 7; st++) {
        __syncthreads();
        uint32_t t = 64u >> st;
        uint32_t il = bpos / t;
        uint32_t jj = bpos % t;
        uint32_t b = il * 2 * t + jj;
        uint32_t j = (row0 + r) * SUB + b;
        WP w = tw[(1u << (st + 7)) + j / (2 * t)];
        u64 x = s[r * SUB + b];
        u64 y = s[r * SUB + b + t];
        x = x >= two_q ? x - two_q : x;
        u64 tt = shoup_lazy(y, w.w, w.wp, q);
        s[r * SUB + b] = x + tt;
        s[r * SUB + b + t] = x - tt + two_q;
    }
    __syncthreads();
}

// Inverse (Gentleman-Sande) on a row tile: half-spans t = 1..64; inputs in [0, 2q), outputs
// in [0, 2q).
__device__ __forceinline__ void inv_row_stages(u64* s, const WP* itw, u64 q, uint32_t row0) {
    const u64 two_q = 2 * q;
    const uint32_t tid = threadIdx.x;
    const uint32_t r = tid / 64;
    const uint32_t bpos = tid % 64;
#pragma unroll
    for (int st = 0; st < 7; st++) {
        __syncthreads();
        uint32_t t = 1u << st;
        uint32_t il = bpos / t;
        uint32_t jj = bpos % t;
        uint32_t b = il * 2 * t + jj;
        uint32_t j = (row0 + r) * SUB + b;
        uint32_t m = NN / (2 * t);
        WP w = itw[m + j / (2 * t)];
        u64 x = s[r * SUB + b];
        u64 y = s[r * SUB + b + t];
        u64 u = x + y;
        u = u >= two_q ? u - two_q : u;
        u64 v = shoup_lazy(x + two_q - y, w.w, w.wp, q);
        s[r * SUB + b] = u;
        s[r * SUB + b + t] = v;
    }
    __syncthreads();
}

// Inverse on a column tile: half-spans t = 128 * (1..64).
__device__ __forceinline__ void inv_col_stages(u64* s, const WP* itw, u64 q) {
    const u64 two_q = 2 * q;
    const uint32_t tid = threadIdx.x;
    const uint32_t c = tid % TILE_COLS;
    const uint32_t bpos = tid / TILE_COLS;
#pragma unroll
    for (int st = 0; st < 7; st++) {
        __syncthreads();
        uint32_t tl = 1u << st;
        uint32_t i = bpos / tl;
        uint32_t jj = bpos % tl;
        uint32_t a = i * 2 * tl + jj;
        uint32_t m = SUB / (2 * tl);  // = N / (2 * t) with t = tl * SUB
        WP w = itw[m + i];
        u64 x = s[a * TILE_COLS + c];
        u64 y = s[(a + tl) * TILE_COLS + c];
        u64 u = x + y;
        u = u >= two_q ? u - two_q : u;
        u64 v = shoup_lazy(x + two_q - y, w.w, w.wp, q);
        s[a * TILE_COLS + c] = u;
        s[(a + tl) * TILE_COLS + c] = v;
    }
    __syncthreads();
}

// ------------------------------------------------------------------------------------------
// Forward NTT, column pass (stages 0..6). Grid: (SUB / TILE_COLS, limbs, components).
// Row (y, z) of the input is in + z * in_zs + y * in_ys; output out + z * out_zs + y * out_ys.
// Each loaded word x becomes x * pre[pid] mod q (Shoup; pre = (1, floor(2^64/q)) reduces);
// pre == nullptr: the input words are canonical residues of the row's own prime, taken as
// they are (plain rows only: mode 0, ginv 0, src_by_z 0).
// mode 0: plain rows. mode 1: input words are signed int64 (lifted to [0, q)).
// ginv != 0: the input row is first permuted by the coefficient automorphism sigma_g
// (ginv = g^-1 mod 2N); its sign is applied modulo the source prime src_pid(y, z) =
// src_off + (src_by_z ? z : y) (ModUp of a rotated digit reads prime j, writes prime r).
// src_by_z != 0 (ModUp): the digit is lifted balanced, d > (q_j - 1)/2 standing for d - q_j
// (the CPU engine's decision 0403), before reduction modulo the target prime.
// Output lazy in [0, 4q).
extern "C" __global__ void __launch_bounds__(NTT_THREADS)
ntt_fwd_cols(const u64* __restrict__ in, u64* __restrict__ out, const Prime* __restrict__ primes,
             const WP* __restrict__ twf, const WP* __restrict__ pre, uint32_t prime_off,
             u64 in_ys, u64 in_zs, u64 out_ys, u64 out_zs, uint32_t mode, uint32_t ginv,
             uint32_t src_off, uint32_t src_by_z) {
    __shared__ u64 s[TILE];
    const uint32_t y = blockIdx.y, z = blockIdx.z;
    const uint32_t pid = prime_off + y;
    const Prime p = primes[pid];
    const bool raw = pre == nullptr;  // canonical input: no pre-step
    const WP pw = raw ? WP{1, 0} : pre[pid];
    const u64* src = in + z * in_zs + y * in_ys;
    u64* dst = out + z * out_zs + y * out_ys;
    const uint32_t b0 = blockIdx.x * TILE_COLS;
    const u64 src_q = primes[src_off + (src_by_z ? z : y)].q;
    const u64 src_q_mod = reduce64(src_q, p);
    for (uint32_t idx = threadIdx.x; idx < TILE; idx += NTT_THREADS) {
        uint32_t a = idx / TILE_COLS, c = idx % TILE_COLS;
        uint32_t pos = a * SUB + b0 + c;
        u64 x;
        if (mode == 1) {
            i64 v = (i64)src[pos];
            u64 mag = v < 0 ? (u64)(-v) : (u64)v;
            u64 r = reduce64(mag, p);
            x = v < 0 ? negmod(r, p.q) : r;
        } else if (ginv != 0) {
            x = aut_gather(src, pos, ginv, src_q);
        } else {
            x = src[pos];
        }
        u64 r = raw ? x : shoup(x, pw.w, pw.wp, p.q);
        // Balanced ModUp: a digit residue above (q_j - 1) / 2 stands for x - q_j.
        if (src_by_z && x > src_q / 2) r = submod(r, src_q_mod, p.q);
        s[idx] = r;
    }
    fwd_col_stages(s, twf + (u64)pid * NN, p.q);
    for (uint32_t idx = threadIdx.x; idx < TILE; idx += NTT_THREADS) {
        uint32_t a = idx / TILE_COLS, c = idx % TILE_COLS;
        dst[a * SUB + b0 + c] = s[idx];
    }
}

// Forward NTT, row pass (stages 7..13), in place or out of place. Grid: (SUB / TILE_ROWS,
// limbs, components). Input lazy [0, 4q); output canonical.
extern "C" __global__ void __launch_bounds__(NTT_THREADS)
ntt_fwd_rows(const u64* __restrict__ in, u64* __restrict__ out, const Prime* __restrict__ primes,
             const WP* __restrict__ twf, uint32_t prime_off, u64 in_ys, u64 in_zs, u64 out_ys,
             u64 out_zs) {
    __shared__ u64 s[TILE];
    const uint32_t y = blockIdx.y, z = blockIdx.z;
    const uint32_t pid = prime_off + y;
    const u64 q = primes[pid].q;
    const u64* src = in + z * in_zs + y * in_ys + blockIdx.x * TILE;
    u64* dst = out + z * out_zs + y * out_ys + blockIdx.x * TILE;
    for (uint32_t idx = threadIdx.x; idx < TILE; idx += NTT_THREADS) s[idx] = src[idx];
    fwd_row_stages(s, twf + (u64)pid * NN, q, blockIdx.x * TILE_ROWS);
    for (uint32_t idx = threadIdx.x; idx < TILE; idx += NTT_THREADS) {
        u64 x = s[idx];
        x = csub(x, 2 * q);
        dst[idx] = csub(x, q);
    }
}

// Inverse NTT, row pass (half-spans 1..64). Input canonical (or lazy < 2q); output lazy
// [0, 2q). Grid: (SUB / TILE_ROWS, limbs, components).
extern "C" __global__ void __launch_bounds__(NTT_THREADS)
ntt_inv_rows(const u64* __restrict__ in, u64* __restrict__ out, const Prime* __restrict__ primes,
             const WP* __restrict__ twi, uint32_t prime_off, u64 in_ys, u64 in_zs, u64 out_ys,
             u64 out_zs) {
    __shared__ u64 s[TILE];
    const uint32_t y = blockIdx.y, z = blockIdx.z;
    const uint32_t pid = prime_off + y;
    const u64 q = primes[pid].q;
    const u64* src = in + z * in_zs + y * in_ys + blockIdx.x * TILE;
    u64* dst = out + z * out_zs + y * out_ys + blockIdx.x * TILE;
    for (uint32_t idx = threadIdx.x; idx < TILE; idx += NTT_THREADS) s[idx] = src[idx];
    inv_row_stages(s, twi + (u64)pid * NN, q, blockIdx.x * TILE_ROWS);
    for (uint32_t idx = threadIdx.x; idx < TILE; idx += NTT_THREADS) dst[idx] = s[idx];
}

// Inverse NTT, column pass (half-spans 128..8192), then x * post[pid] (N^-1 and the residue
// form change folded in by the host). Output canonical. Grid: (SUB / TILE_COLS, limbs, comps).
extern "C" __global__ void __launch_bounds__(NTT_THREADS)
ntt_inv_cols(const u64* __restrict__ in, u64* __restrict__ out, const Prime* __restrict__ primes,
             const WP* __restrict__ twi, const Post* __restrict__ post, uint32_t prime_off,
             u64 in_ys, u64 in_zs, u64 out_ys, u64 out_zs) {
    __shared__ u64 s[TILE];
    const uint32_t y = blockIdx.y, z = blockIdx.z;
    const uint32_t pid = prime_off + y;
    const u64 q = primes[pid].q;
    const WP pw = post[pid].s;
    const u64* src = in + z * in_zs + y * in_ys;
    u64* dst = out + z * out_zs + y * out_ys;
    const uint32_t b0 = blockIdx.x * TILE_COLS;
    for (uint32_t idx = threadIdx.x; idx < TILE; idx += NTT_THREADS) {
        uint32_t a = idx / TILE_COLS, c = idx % TILE_COLS;
        s[idx] = src[a * SUB + b0 + c];
    }
    inv_col_stages(s, twi + (u64)pid * NN, q);
    for (uint32_t idx = threadIdx.x; idx < TILE; idx += NTT_THREADS) {
        uint32_t a = idx / TILE_COLS, c = idx % TILE_COLS;
        dst[a * SUB + b0 + c] = shoup(s[idx], pw.w, pw.wp, q);
    }
}

// ------------------------------------------------------------------------------------------
// Key switching, fused middle: forward row pass of every extended digit, inner product with
// the key, inverse row pass of both accumulators. Grid: (SUB / TILE_ROWS, L + 1 target rows).
// ext: [digits][L + 1][N] after ntt_fwd_cols (lazy). key: digit d (prime id of the digit),
// component c, row pid at key + d * key_ds + c * key_cs + pid * N. acc: [2][L + 1][N], output
// lazy [0, 2q) in "NTT product" form (the host's post constant of ntt_inv_cols finishes it).
extern "C" __global__ void __launch_bounds__(NTT_THREADS)
ks_inner(const u64* __restrict__ ext, const u64* __restrict__ key, u64* __restrict__ acc,
         const Prime* __restrict__ primes, const WP* __restrict__ twf,
         const WP* __restrict__ twi, uint32_t prime_off, uint32_t digits, uint32_t rows,
         u64 key_ds, u64 key_cs) {
    __shared__ u64 s[TILE];
    const uint32_t y = blockIdx.y;
    const uint32_t pid = prime_off + y;
    const Prime p = primes[pid];
    const uint32_t row0 = blockIdx.x * TILE_ROWS;
    const u64 off = (u64)blockIdx.x * TILE;
    const uint32_t tid = threadIdx.x;
    u64 a0[2] = {0, 0}, a1[2] = {0, 0};
    for (uint32_t d = 0; d < digits; d++) {
        const u64* src = ext + ((u64)d * rows + y) * NN + off;
        __syncthreads();
        for (uint32_t idx = tid; idx < TILE; idx += NTT_THREADS) s[idx] = src[idx];
        fwd_row_stages(s, twf + (u64)pid * NN, p.q, row0);
        const u64* k0 = key + (u64)(prime_off + d) * key_ds + (u64)pid * NN + off;
        const u64* k1 = k0 + key_cs;
#pragma unroll
        for (int e = 0; e < 2; e++) {
            uint32_t idx = tid + e * NTT_THREADS;
            u64 x = s[idx];
            x = csub(csub(x, 2 * p.q), p.q);
            a0[e] = addmod(a0[e], mont(x, k0[idx], p), p.q);
            a1[e] = addmod(a1[e], mont(x, k1[idx], p), p.q);
        }
    }
    for (int comp = 0; comp < 2; comp++) {
        __syncthreads();
        s[tid] = comp == 0 ? a0[0] : a1[0];
        s[tid + NTT_THREADS] = comp == 0 ? a0[1] : a1[1];
        inv_row_stages(s, twi + (u64)pid * NN, p.q, row0);
        u64* dst = acc + ((u64)comp * rows + y) * NN + off;
        for (uint32_t idx = tid; idx < TILE; idx += NTT_THREADS) dst[idx] = s[idx];
    }
}

// ModDown's addend at (k, row i, component c) = (blockIdx.x * 256 + threadIdx.x, blockIdx.y,
// blockIdx.z): sigma_g(add0) (add0 when ginv == 0) for component 0, add1 for component 1, 0
// where the pointer is nullptr.
__device__ __forceinline__ u64 ks_addend(const u64* __restrict__ add0, const u64* __restrict__ add1,
                                         const Prime* __restrict__ primes, uint32_t prime_off,
                                         uint32_t ginv) {
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t i = blockIdx.y, c = blockIdx.z;
    if (c == 0 && add0 != nullptr) {
        const u64* row = add0 + (u64)i * NN;
        return ginv != 0 ? aut_gather(row, k, ginv, primes[prime_off + i].q) : row[k];
    }
    if (c == 1 && add1 != nullptr) return add1[(u64)i * NN + k];
    return 0;
}

// ModDown by P and the final add. acc: [2][L + 1][N] standard canonical (row L = P).
// out[c][i] = (acc[c][i] - (acc[c][L] mod q_i)) * P^-1 mod q_i + add_c[i] where add_0 is
// sigma_g(add0) when ginv != 0, add_1 is add1 (nullptr = nothing). Grid: (N / 256, L, 2).
// adds_early != 0: the addend is loaded before grid_dep_wait, while the inner product before
// this kernel still runs (it triggers its dependents at its limb barrier, grid_dep_launch); the
// engine sets it only for addends written before the operation's chain began (rotate's input:
// decision 0508, "ModDown's addend before its wait"), never for rows a kernel of the chain
// writes (the two-pass fallback's rows).
extern "C" __global__ void ks_moddown(const u64* __restrict__ acc, const u64* __restrict__ add0,
                                      const u64* __restrict__ add1, u64* __restrict__ out,
                                      const Prime* __restrict__ primes, const WP* __restrict__ pinv,
                                      uint32_t prime_off, uint32_t L, uint32_t ginv,
                                      uint32_t adds_early) {
    const u64 early_add = adds_early ? ks_addend(add0, add1, primes, prime_off, ginv) : 0;
    grid_dep_wait();
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t i = blockIdx.y, c = blockIdx.z;
    const uint32_t pid = prime_off + i;
    const Prime p = primes[pid];
    const WP w = pinv[pid];
    const u64* ac = acc + (u64)c * (L + 1) * NN;
    u64 xp = reduce64(ac[(u64)L * NN + k], p);
    u64 v = shoup(submod(ac[(u64)i * NN + k], xp, p.q), w.w, w.wp, p.q);
    const u64 a = adds_early ? early_add : ks_addend(add0, add1, primes, prime_off, ginv);
    out[((u64)c * L + i) * NN + k] = addmod(v, a, p.q);
}

// ------------------------------------------------------------------------------------------
// Elementwise kernels. Grid: (N / 256, limbs, components), 256 threads. Element (z, y, k) is
// at z * L * N + y * N + k in every operand unless a stride says otherwise.

extern "C" __global__ void ew_add(const u64* __restrict__ a, const u64* __restrict__ b,
                                  u64* __restrict__ out, const Prime* __restrict__ primes,
                                  uint32_t prime_off) {
    const u64 e = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * NN + blockIdx.x * blockDim.x + threadIdx.x;
    const u64 q = primes[prime_off + blockIdx.y].q;
    out[e] = addmod(a[e], b[e], q);
}

extern "C" __global__ void ew_sub(const u64* __restrict__ a, const u64* __restrict__ b,
                                  u64* __restrict__ out, const Prime* __restrict__ primes,
                                  uint32_t prime_off) {
    const u64 e = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * NN + blockIdx.x * blockDim.x + threadIdx.x;
    const u64 q = primes[prime_off + blockIdx.y].q;
    out[e] = submod(a[e], b[e], q);
}

extern "C" __global__ void ew_neg(const u64* __restrict__ a, u64* __restrict__ out,
                                  const Prime* __restrict__ primes, uint32_t prime_off) {
    const u64 e = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * NN + blockIdx.x * blockDim.x + threadIdx.x;
    const u64 q = primes[prime_off + blockIdx.y].q;
    out[e] = negmod(a[e], q);
}

// out = mont(a, b) * fix[pid] (Shoup), i.e. a * b * 2^-64 * fix: the host picks fix so the
// product has the CPU engine's residue form. b_zs: component stride of b (0 = broadcast a
// plaintext over the components).
extern "C" __global__ void ew_mul(const u64* __restrict__ a, const u64* __restrict__ b,
                                  u64* __restrict__ out, const Prime* __restrict__ primes,
                                  const WP* __restrict__ fix, uint32_t prime_off, u64 b_zs) {
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    const u64 e = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * NN + k;
    const u64 eb = blockIdx.z * b_zs + (u64)blockIdx.y * NN + k;
    const uint32_t pid = prime_off + blockIdx.y;
    const Prime p = primes[pid];
    const WP f = fix[pid];
    out[e] = shoup(mont(a[e], b[eb], p), f.w, f.wp, p.q);
}

// x * c[pid] for every element (Shoup), canonical.
extern "C" __global__ void ew_mul_const(const u64* __restrict__ a, u64* __restrict__ out,
                                        const Prime* __restrict__ primes,
                                        const WP* __restrict__ c, uint32_t prime_off) {
    const u64 e = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * NN + blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t pid = prime_off + blockIdx.y;
    const WP w = c[pid];
    out[e] = shoup(a[e], w.w, w.wp, primes[pid].q);
}

// x * k mod q for the signed integer k = (neg ? -1 : 1) k_abs (canonical): k_abs reduced and
// brought to Montgomery form (k 2^64 mod q, by 64 modular doublings: q < 2^60, so 2x < 2^64),
// then mont(x, k 2^64) = x k. Grid: (N / 256, limbs, comps).
extern "C" __global__ void ew_mul_int(const u64* __restrict__ a, u64* __restrict__ out,
                                      const Prime* __restrict__ primes, u64 k_abs, uint32_t neg,
                                      uint32_t prime_off) {
    const u64 e = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * NN + blockIdx.x * blockDim.x + threadIdx.x;
    const Prime p = primes[prime_off + blockIdx.y];
    u64 km = reduce64(k_abs, p);
    for (int i = 0; i < 64; i++) km = csub(km << 1, p.q);
    const u64 r = mont(a[e], km, p);
    out[e] = neg ? negmod(r, p.q) : r;
}

// Tensor product of two 2-component NTT-domain ciphertexts: d0 = a0 b0, d1 = a0 b1 + a1 b0,
// d2 = a1 b1, each product in the CPU's form (see ew_mul). Grid: (N / 256, limbs, 1).
extern "C" __global__ void ew_tensor(const u64* __restrict__ a, const u64* __restrict__ b,
                                     u64* __restrict__ out, const Prime* __restrict__ primes,
                                     const WP* __restrict__ fix, uint32_t prime_off, uint32_t L) {
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t y = blockIdx.y;
    const uint32_t pid = prime_off + y;
    const Prime p = primes[pid];
    const WP f = fix[pid];
    const u64 cs = (u64)L * NN;
    const u64 e = (u64)y * NN + k;
    u64 a0 = a[e], a1 = a[cs + e], b0 = b[e], b1 = b[cs + e];
    u64 d0 = mont(a0, b0, p);
    u64 d1 = addmod(mont(a0, b1, p), mont(a1, b0, p), p.q);
    u64 d2 = mont(a1, b1, p);
    out[e] = shoup(d0, f.w, f.wp, p.q);
    out[cs + e] = shoup(d1, f.w, f.wp, p.q);
    out[2 * cs + e] = shoup(d2, f.w, f.wp, p.q);
}

// Coefficient automorphism sigma_g (ginv = g^-1 mod 2N). Grid: (N / 256, limbs, comps).
extern "C" __global__ void aut_coeff(const u64* __restrict__ a, u64* __restrict__ out,
                                     const Prime* __restrict__ primes, uint32_t prime_off,
                                     uint32_t ginv) {
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    const u64 row = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * NN;
    const u64 q = primes[prime_off + blockIdx.y].q;
    out[row + k] = aut_gather(a + row, k, ginv, q);
}

__device__ __forceinline__ uint32_t brev14(uint32_t x) { return __brev(x) >> (32 - LOGN); }

// NTT-domain automorphism sigma_g: out[j] = in[aut_src(j, g)],
// aut_src(j, g) = br(((g (2 br(j) + 1)) mod 2N - 1) / 2). For even j, aut_src(j + 1, g) =
// aut_src(j, g) ^ 1 (br(j + 1) = br(j) + N/2 and g N = N mod 2N): a pair of words maps to a
// pair, swapped when aut_src(j, g) is odd (ks_inner_gh reads pairs through it).
__device__ __forceinline__ uint32_t aut_src(uint32_t j, uint32_t g) {
    const uint32_t e = (uint32_t)(((u64)g * (2 * brev14(j) + 1)) & (2 * NN - 1));
    return brev14((e - 1) / 2);
}
extern "C" __global__ void aut_ntt(const u64* __restrict__ a, u64* __restrict__ out,
                                   uint32_t g) {
    const uint32_t j = blockIdx.x * blockDim.x + threadIdx.x;
    const u64 row = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * NN;
    out[row + j] = a[row + aut_src(j, g)];
}

// Rescale by the leading prime (id prime_off) with nearest rounding (spec 3.12). in: [C][L][N]
// canonical coefficient form; out: [C][L - 1][N]. qinv[pid] = q_drop^-1 mod q_pid (Shoup).
// Grid: (N / 256, L - 1, C).
extern "C" __global__ void rescale(const u64* __restrict__ in, u64* __restrict__ out,
                                   const Prime* __restrict__ primes, const WP* __restrict__ qinv,
                                   uint32_t prime_off, uint32_t L, uint32_t floor_mode) {
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t i = blockIdx.y + 1, c = blockIdx.z;
    const uint32_t pid = prime_off + i;
    const Prime p = primes[pid];
    const u64 qd = primes[prime_off].q;
    const WP w = qinv[pid];
    const u64* base = in + (u64)c * L * NN;
    u64 cd = base[k];
    u64 cdr = reduce64(cd, p);
    u64 v = shoup(submod(base[(u64)i * NN + k], cdr, p.q), w.w, w.wp, p.q);
    if (!floor_mode && cd > qd / 2) v = addmod(v, 1, p.q);
    out[((u64)c * (L - 1) + (i - 1)) * NN + k] = v;
}

// Copy rows [drop, L) of each component: out [C][L - drop][N]. Grid: (N / 256, L - drop, C).
extern "C" __global__ void drop_rows(const u64* __restrict__ in, u64* __restrict__ out,
                                     uint32_t L, uint32_t drop) {
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t i = blockIdx.y, c = blockIdx.z;
    out[((u64)c * (L - drop) + i) * NN + k] = in[((u64)c * L + i + drop) * NN + k];
}

// out[z][y][k] = (a[z][y][k] + lift(s[z][k])) mod q, s signed int64 rows (one per component,
// shared by every limb; s_zs = 0 shares one row across components). Grid: (N / 256, L, C).
extern "C" __global__ void add_signed(const u64* __restrict__ a, const i64* __restrict__ s,
                                      u64* __restrict__ out, const Prime* __restrict__ primes,
                                      uint32_t prime_off, u64 s_zs) {
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    const u64 e = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * NN + k;
    const Prime p = primes[prime_off + blockIdx.y];
    i64 v = s[blockIdx.z * s_zs + k];
    u64 mag = v < 0 ? (u64)(-v) : (u64)v;
    u64 r = reduce64(mag, p);
    r = v < 0 ? negmod(r, p.q) : r;
    out[e] = addmod(a[e], r, p.q);
}

// ------------------------------------------------------------------------------------------
// One-launch NTT with Hopper thread-block clusters (sm_90). One cluster of CL blocks per limb
// NTT: block k of the cluster first holds columns [16k, 16k + 16) of the 128 x 128 view (all
// 128 high-index values of each), then rows [16k, 16k + 16); the transpose between the two
// phases reads the other blocks' shared memory (DSMEM). Each phase runs the 7 stages of its
// 16 lines of 128 words as radix-4 rounds (two stages per round between barriers, 4 words per
// thread held in registers) plus one radix-2 round; the first round of the first phase reads
// global memory and the last round of the second phase writes it, so no round trip through
// shared memory is spent on either. Twiddle index of a line stage with half-span h at line
// position a, line base B (B = 1 for a column, 128 + row for a row): B * (64 / h) + a / (2h),
// the same formula for forward (psi^br) and inverse (psi^-br) tables (spec 4.1 loops).
#define CL 8                        // blocks per cluster: one cluster per limb NTT (portable)
#define CL_LINES (SUB / CL)         // 16 lines (columns, then rows) per block
#define CL_WORDS (CL_LINES * SUB)   // 2048 words per block and phase
#define CL_THREADS (CL_WORDS / 4)   // 512: one radix-4 quad per thread per round

#ifndef FHE_EMU
// Cluster primitives in inline PTX (ISA 7.8, sm_90): rank in the cluster, the split cluster
// barrier (release on arrive, acquire on wait) and mapa, which turns the generic address of
// one of this block's __shared__ words into the generic address of the same word in block
// `rank`'s shared memory (distributed shared memory).
__device__ __forceinline__ uint32_t cl_rank() {
    uint32_t r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
// Arrive with release semantics: every earlier load and store of the thread (and, through the
// aligned barrier, of the block) is performed first. "Done reading the other blocks' tiles"
// needs it too: a relaxed arrive (the kernels until the fifteenth session) let ptxas issue the
// arrive right after the distributed-shared-memory loads, before their data returned, so a
// block waiting at its last cl_wait could exit while those loads were in flight and the SM
// faulted (Xid 13 "Graphics SM Cga Exception: CTA Not Present", run 83).
__device__ __forceinline__ void cl_arrive() {
    asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
__device__ __forceinline__ void cl_wait() {
    asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ void cl_sync() {
    cl_arrive();
    cl_wait();
}
__device__ __forceinline__ const u64* cl_map(const u64* p, uint32_t rank) {
    const u64* r;
    asm volatile("mapa.u64 %0, %1, %2;" : "=l"(r) : "l"(p), "r"(rank));
    return r;
}
#define CL_KERNEL extern "C" __global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(CL_THREADS)
// The forward kernel also runs the key switch's ModUp (576 blocks at level 0): kept at 3 blocks
// per SM (<= 42 registers; it needs 40 without spilling).
#define CL_KERNEL3 \
    extern "C" __global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(CL_THREADS, 3)
// The *_gs kernels (gs_fwd_ntt / gs_inv_ntt, GS_THREADS threads, defined below): launched
// cooperatively, so every block of the launch is resident.
#define GS_KERNEL extern "C" __global__ void __launch_bounds__(GS_THREADS, 1)
// ks_inner_gs and ntt_fwd_gq: two blocks per SM (at most 128 registers), so that a level-0 key
// switch's inner product (18 limbs, 144 blocks) is one cooperative wave, and the queue kernel
// keeps two blocks per SM.
#define GS_KERNEL2 extern "C" __global__ void __launch_bounds__(GS_THREADS, 2)
#define CL_KERNEL1 \
    extern "C" __global__ void __cluster_dims__(CL, 1, 1) __launch_bounds__(CL_THREADS, 1)
#define CL_SHARED(name) __shared__ __align__(16) u64 name[2 * CL_WORDS]
#endif

#ifndef FHE_EMU
// Four consecutive words at a 32-byte aligned address (two 16-byte loads), two at a 16-byte
// aligned one (one 16-byte store).
__device__ __forceinline__ void ld4(const u64* __restrict__ p, u64 (&x)[4]) {
    const ulonglong2 a = reinterpret_cast<const ulonglong2*>(p)[0];
    const ulonglong2 b = reinterpret_cast<const ulonglong2*>(p)[1];
    x[0] = a.x;
    x[1] = a.y;
    x[2] = b.x;
    x[3] = b.y;
}
__device__ __forceinline__ void st2(u64* p, u64 x0, u64 x1) {
    reinterpret_cast<ulonglong2*>(p)[0] = make_ulonglong2(x0, x1);
}
__device__ __forceinline__ void ld2sh(const u64* p, u64& x0, u64& x1) {
    const ulonglong2 v = reinterpret_cast<const ulonglong2*>(p)[0];
    x0 = v.x;
    x1 = v.y;
}
#endif

// Cooley-Tukey butterfly, Harvey lazy: x, y in [0, 4q) -> [0, 4q).
__device__ __forceinline__ void ct_bfly(u64& x, u64& y, WP w, u64 q) {
    const u64 two_q = 2 * q;
    u64 a = csub(x, two_q);
    u64 t = shoup_lazy(y, w.w, w.wp, q);
    x = a + t;
    y = a - t + two_q;
}

// Gentleman-Sande butterfly: x, y in [0, 2q) -> [0, 2q).
__device__ __forceinline__ void gs_bfly(u64& x, u64& y, WP w, u64 q) {
    const u64 two_q = 2 * q;
    const u64 u = csub(x + y, two_q);
    y = shoup_lazy(x + two_q - y, w.w, w.wp, q);
    x = u;
}

// Shoup's lazy product (shoup_hi3: its quotient, shoup_lazy3: the product) without the high
// product's low partial product xl * wpl (x = xh 2^32 + xl, wp = wph 2^32 + wpl): Q' = xh wph +
// floor((xh wpl + xl wph) / 2^32), the middle sum exact in 65 bits. x wp / 2^64 = xh wph + M / 2^32 + xl wpl / 2^64 with the last term below
// 1, so Q' is Shoup's quotient floor(x wp / 2^64) or one less, and x w - Q' q lies in [0, 3q)
// (Shoup's [0, 2q) plus at most q) for any x < 2^64; computed mod 2^64 it is exact, as 3q <
// 2^64. In PTX as 32-bit multiply-adds with carries (ptxas: 4 instructions where __umul64hi
// takes 7; the same expression in C compiles to a 64-bit comparison for the carry).
__device__ __forceinline__ u64 shoup_hi3(u64 x, u64 wp) {
#ifdef FHE_EMU
    const u64 xl = (uint32_t)x, xh = x >> 32, pl = (uint32_t)wp, ph = wp >> 32;
    const u64 m1 = xh * pl;
    const u64 m = m1 + xl * ph;
    const u64 hi = xh * ph + (m >> 32) + ((u64)(m < m1) << 32);
#else
    u64 hi;
    asm("{\n\t.reg .u32 xl, xh, pl, ph, t0, t1, t2, h0, h1;\n\t"
        "mov.b64 {xl, xh}, %1;\n\t"
        "mov.b64 {pl, ph}, %2;\n\t"
        "mul.lo.u32 t0, xh, pl;\n\t"
        "mul.hi.u32 t1, xh, pl;\n\t"
        "mad.lo.cc.u32 t0, xl, ph, t0;\n\t"
        "madc.hi.cc.u32 t1, xl, ph, t1;\n\t"
        "addc.u32 t2, 0, 0;\n\t"
        "mad.lo.cc.u32 h0, xh, ph, t1;\n\t"
        "madc.hi.u32 h1, xh, ph, t2;\n\t"
        "mov.b64 %0, {h0, h1};\n\t}"
        : "=l"(hi)
        : "l"(x), "l"(wp));
#endif
    return hi;
}
__device__ __forceinline__ u64 shoup_lazy3(u64 x, u64 w, u64 wp, u64 q) {
    return x * w - shoup_hi3(x, wp) * q;
}
// shoup_lazy3's word with the second product accumulated onto the first, x w + hi (2^64 - q)
// mod 2^64 (PTX mad.lo.u64: no negation): LooseN's product (decision 0515; in Loose it changed
// nothing measurable, run 236).
__device__ __forceinline__ u64 shoup_lazy3n(u64 x, u64 w, u64 wp, u64 q) {
#ifdef FHE_EMU
    return shoup_lazy3(x, w, wp, q);
#else
    u64 r;
    asm("{\n\t.reg .u64 t;\n\t"
        "mul.lo.u64 t, %1, %2;\n\t"
        "mad.lo.u64 %0, %3, %4, t;\n\t}"
        : "=l"(r)
        : "l"(x), "l"(w), "l"(shoup_hi3(x, wp)), "l"(0 - q));
    return r;
#endif
}

// The butterfly arithmetic of the rounds of the kernels without clusters (*_gs, *_gp,
// ntt_fwd_gq, ks_inner_gs), a template parameter of the round helpers below (default Loose).
// `ct<C>`: a forward (Cooley-Tukey) butterfly, C = whether this stage brings x down first;
// `gs`: an inverse (Gentleman-Sande) butterfly; `ct_out`: the forward NTT's last stage with
// canonical outputs; `gs_off(q)`: the multiple of q that keeps x - y + gs_off >= 0 for the
// inverse's words.
// The inverse NTT's last stage with the scaling c folded in (inv8_last), integer words below
// 2 off: (x + y) * c.s and (x + off - y) * c.f, canonical (Shoup's full products).
__device__ __forceinline__ void int_gs_last(u64& x, u64& y, const Post& c, u64 q, u64 off) {
    const u64 u = x + y, v = x + off - y;
    x = shoup(u, c.s.w, c.s.wp, q);
    y = shoup(v, c.f.w, c.f.wp, q);
}
// Harvey: ct_bfly / gs_bfly (the cluster and two-pass kernels' butterflies), words in [0, 4q) /
// [0, 2q), every stage reduces (C is ignored); the harness prototypes in kernels/bench were
// measured with it and name it.
struct Harvey {
    template <bool C>
    __device__ __forceinline__ static void ct(u64& x, u64& y, WP w, u64 q) {
        ct_bfly(x, y, w, q);
    }
    __device__ __forceinline__ static void gs(u64& x, u64& y, WP w, u64 q) { gs_bfly(x, y, w, q); }
    __device__ __forceinline__ static void ct_out(u64& x0, u64& x1, WP w, u64 q) {
        ct_bfly(x0, x1, w, q);
        x0 = csub(x0, 2 * q);
        x1 = csub(x1, 2 * q);
        x0 = csub(x0, q);
        x1 = csub(x1, q);
    }
    __device__ __forceinline__ static u64 gs_off(u64 q) { return 2 * q; }
    __device__ __forceinline__ static void gs_last(u64& x, u64& y, const Post& c, u64 q) {
        int_gs_last(x, y, c, q, gs_off(q));
    }
    __device__ __forceinline__ static u64 in(u64 x) { return x; }
    __device__ __forceinline__ static u64 mid(u64 x, u64) { return x; }
};
// Loose (every kernel without clusters; every prime below 2^60, which CudaEngine::new checks):
// products by
// shoup_lazy3 (t in [0, 3q)). Forward: x + t and x + 3q - t, x brought below 8q only at the
// stages marked C (csub by 8q), so the words grow by 3q per unmarked stage and stay below 14q
// < 2^64 under the kernels' marks: from inputs below 4q, a phase's stages N N C | N C N | C
// leave words below 11q (4 7 10 | 11 14 11 | 11, the bound after each stage in units of q), the
// second phase's N C N | C N C | N below 14q (14 11 14 | 11 14 11 | 14), then ct_out's four
// conditional subtractions (8q, 4q, 2q, q) make them canonical. Half the stages skip x's
// reduction and every product one partial product: ~13% fewer instructions per butterfly.
// Inverse: words below 4q, x + y reduced by 4q, the product of x + 4q - y (< 8q) below 3q.
struct Loose {
    template <bool C>
    __device__ __forceinline__ static void ct(u64& x, u64& y, WP w, u64 q) {
        const u64 a = C ? csub(x, 8 * q) : x;
        const u64 t = shoup_lazy3(y, w.w, w.wp, q);
        x = a + t;
        y = a + 3 * q - t;
    }
    __device__ __forceinline__ static void gs(u64& x, u64& y, WP w, u64 q) {
        const u64 four_q = 4 * q;
        const u64 u = csub(x + y, four_q);
        y = shoup_lazy3(x + four_q - y, w.w, w.wp, q);
        x = u;
    }
    __device__ __forceinline__ static void ct_out(u64& x0, u64& x1, WP w, u64 q) {
        ct<false>(x0, x1, w, q);
        x0 = csub(csub(csub(csub(x0, 8 * q), 4 * q), 2 * q), q);
        x1 = csub(csub(csub(csub(x1, 8 * q), 4 * q), 2 * q), q);
    }
    __device__ __forceinline__ static u64 gs_off(u64 q) { return 4 * q; }
    __device__ __forceinline__ static void gs_last(u64& x, u64& y, const Post& c, u64 q) {
        int_gs_last(x, y, c, q, gs_off(q));
    }
    // The paired kernels' word hooks (LooseF converts): a canonical input word as held in the
    // rounds, and the inverse's words at the exchange between its phases (below 4q already).
    __device__ __forceinline__ static u64 in(u64 x) { return x; }
    __device__ __forceinline__ static u64 mid(u64 x, u64) { return x; }
    // The paired kernels' exchange words (decision 0514): a word made canonical (below q <
    // 2^60: the forward's first-phase words are below 11q, the inverse's below 4q) under the
    // launch's tag tg in bits 60-63, and back.
    __device__ __forceinline__ static u64 xput_fwd(u64 x, u64 q, unsigned tg) {
        return csub(csub(csub(csub(x, 8 * q), 4 * q), 2 * q), q) | ((u64)tg << 60);
    }
    __device__ __forceinline__ static u64 xput_inv(u64 x, u64 q, unsigned tg) {
        return csub(csub(x, 2 * q), q) | ((u64)tg << 60);
    }
    __device__ __forceinline__ static u64 xget(u64 v) { return v & 0x0FFFFFFFFFFFFFFFull; }
};

// LooseN: Loose for the primes just below 2^60, q = 2^60 - d with d < 2^32 (near60: the 60-bit
// message primes, the base prime and the special primes, are the largest NTT primes below 2^60;
// decision 0515). A word x < 2^64 is x = k 2^60 + l (k < 16, l < 2^60) and x = l + k d mod q, so
// fold(x) = l + k d is congruent and below 2^60 + 15 d = q + 16 d < 2q, in three instructions
// (shift, mask, one 32 x 32 + 64 multiply-add) where a conditional subtraction takes five and a
// canonical word four of them. The forward's C stages fold x (below 2q instead of 8q: the words
// stay below Loose's bounds); the inverse's x + y (below 8q) is folded instead of reduced by
// 4q; the canonical words of ct_out and the exchange are fold then one csub; the products are
// shoup_lazy3n's. Same words as Loose: every result is canonical or has Loose's congruences
// below Loose's bounds. Only the *_gpn kernels take it (the engine launches them when every
// prime >= F64_Q of the launch is near60): a third arithmetic in one kernel makes its binary64
// path wait on instruction fetch (run 237).
__device__ __forceinline__ bool near60(u64 q) {
    return q < (1ull << 60) && q > (1ull << 60) - (1ull << 32);
}
struct LooseN : Loose {
    __device__ __forceinline__ static u64 fold(u64 x, u64 q) {
        const uint32_t d = (uint32_t)((1ull << 60) - q);
        return (x & 0x0FFFFFFFFFFFFFFFull) + (u64)(uint32_t)(x >> 60) * d;
    }
    // fold, then one conditional subtraction: canonical for any x < 2^64.
    __device__ __forceinline__ static u64 canon(u64 x, u64 q) { return csub(fold(x, q), q); }
    template <bool C>
    __device__ __forceinline__ static void ct(u64& x, u64& y, WP w, u64 q) {
        const u64 a = C ? fold(x, q) : x;
        const u64 t = shoup_lazy3n(y, w.w, w.wp, q);
        x = a + t;
        y = a + 3 * q - t;
    }
    __device__ __forceinline__ static void gs(u64& x, u64& y, WP w, u64 q) {
        const u64 u = fold(x + y, q);
        y = shoup_lazy3n(x + 4 * q - y, w.w, w.wp, q);
        x = u;
    }
    __device__ __forceinline__ static void ct_out(u64& x0, u64& x1, WP w, u64 q) {
        ct<false>(x0, x1, w, q);
        x0 = canon(x0, q);
        x1 = canon(x1, q);
    }
    // The exchange words: canonical (canon takes any word) under the tag, in both directions.
    __device__ __forceinline__ static u64 xput_fwd(u64 x, u64 q, unsigned tg) {
        return canon(x, q) | ((u64)tg << 60);
    }
    __device__ __forceinline__ static u64 xput_inv(u64 x, u64 q, unsigned tg) {
        return xput_fwd(x, q, tg);
    }
};

// LooseF: Loose's butterflies in binary64 arithmetic, for primes below F64_Q (2^41; the paired
// NTT kernels choose it per component group by the group's prime, decision 0511). The words
// are held as doubles with integer values of either sign (their bit patterns in the u64
// slots); x w mod q for |x| <= 2^50 and a twiddle w < q as
//   ph = fl(x w), pl = fma(x, w, -ph) = x w - ph exactly (|ph| < 2^91, so |pl| <= 2^38),
//   qf = round(ph / q) by the 1.5 2^52 shift (|ph / q| < 2^51),
//   r = fma(-qf, q, ph) + pl: ph - qf q is an integer below 2^42, so the fma is exact, and so
//   is the sum;
// qf is within 0.5 + |x| 2^-52 <= 0.75 of x w / q, so |r| <= 0.75 q. Forward (CT): x +- r from
// inputs below 4q (the paired kernels' bound) stay below 4q + 14 * 0.75 q < 15 q < 2^45 through
// both phases, no reduction; ct_out reduces to canonical. Inverse (GS): x + y at most doubles a
// stage (below 2^7 * 4q < 2^50 after the row phase); mid() reduces every word to |x| <= 0.5 q + 1
// at the exchange, the column phase's sums stay below 2^7 q, and gs_last's products (the
// scaling folded in) are reduced to canonical. Every step is exact, so the words equal the
// integer kernels' (and the CPU engine's) bit for bit.
#define F64_Q (1ull << 41)
struct LooseF {
    __device__ __forceinline__ static double d(u64 x) { return __longlong_as_double((long long)x); }
    __device__ __forceinline__ static u64 b(double x) { return (u64)__double_as_longlong(x); }
    // An integer below 2^52 as a double: its bits under 2^52's exponent, minus 2^52.
    __device__ __forceinline__ static double num(u64 x) {
        return __dsub_rn(d(x | 0x4330000000000000ull), 4503599627370496.0);
    }
    // round(v / q) for |v / q| < 2^51 (qi = 1 / q rounded), by the 1.5 2^52 shift.
    __device__ __forceinline__ static double quot(double v, double qi) {
        return __dsub_rn(__fma_rn(v, qi, 6755399441055744.0), 6755399441055744.0);
    }
    __device__ __forceinline__ static double mulmod(double x, double w, double qd, double qi) {
        const double ph = __dmul_rn(x, w);
        const double pl = __fma_rn(x, w, -ph);
        return __dadd_rn(__fma_rn(-quot(ph, qi), qd, ph), pl);
    }
    // |x| < 2^50, an integer: x mod q in [0, q), as the canonical u64 word.
    __device__ __forceinline__ static u64 canon(double x, double qd, double qi) {
        double r = __fma_rn(-quot(x, qi), qd, x);
        if (r < 0.0) r = __dadd_rn(r, qd);
        return b(__dadd_rn(r, 4503599627370496.0)) & 0xFFFFFFFFFFFFFull;
    }
    template <bool C>
    __device__ __forceinline__ static void ct(u64& x, u64& y, WP w, u64 q) {
        const double qd = (double)q, qi = 1.0 / qd;
        const double xd = d(x), r = mulmod(d(y), num(w.w), qd, qi);
        x = b(__dadd_rn(xd, r));
        y = b(__dsub_rn(xd, r));
    }
    __device__ __forceinline__ static void gs(u64& x, u64& y, WP w, u64 q) {
        const double qd = (double)q, qi = 1.0 / qd;
        const double xd = d(x), yd = d(y);
        y = b(mulmod(__dsub_rn(xd, yd), num(w.w), qd, qi));
        x = b(__dadd_rn(xd, yd));
    }
    // The forward's last stage: canonical u64 words out.
    __device__ __forceinline__ static void ct_out(u64& x0, u64& x1, WP w, u64 q) {
        ct<false>(x0, x1, w, q);
        const double qd = (double)q, qi = 1.0 / qd;
        x0 = canon(d(x0), qd, qi);
        x1 = canon(d(x1), qd, qi);
    }
    // The inverse's last stage, scaling folded in: canonical u64 words out.
    __device__ __forceinline__ static void gs_last(u64& x, u64& y, const Post& c, u64 q) {
        const double qd = (double)q, qi = 1.0 / qd;
        const double xd = d(x), yd = d(y);
        const double u = mulmod(__dadd_rn(xd, yd), num(c.s.w), qd, qi);
        const double v = mulmod(__dsub_rn(xd, yd), num(c.f.w), qd, qi);
        x = canon(u, qd, qi);
        y = canon(v, qd, qi);
    }
    __device__ __forceinline__ static u64 in(u64 x) { return b(num(x)); }
    // x - round(x / q) q: |result| <= 0.5 q + 1.
    __device__ __forceinline__ static u64 mid(u64 x, u64 q) {
        const double qd = (double)q, qi = 1.0 / qd, xd = d(x);
        return b(__fma_rn(-quot(xd, qi), qd, xd));
    }
    // The exchange words (as Loose's): a word d (an integer, |d| < 15q < 2^45 in the forward,
    // |d| <= 0.5q + 1 after the inverse's mid) as the 52-bit integer d + 2^51 (the low bits of
    // d + 1.5 2^52, exact) under tag tg in bits 60-63, and back (a zero comes back as +0.0,
    // which no result can tell from -0.0: canon and the butterflies treat them alike).
    __device__ __forceinline__ static u64 xput_fwd(u64 x, u64, unsigned tg) {
        return (b(__dadd_rn(d(x), 6755399441055744.0)) & 0xFFFFFFFFFFFFFull) | ((u64)tg << 60);
    }
    __device__ __forceinline__ static u64 xput_inv(u64 x, u64 q, unsigned tg) {
        return xput_fwd(mid(x, q), q, tg);
    }
    __device__ __forceinline__ static u64 xget(u64 v) {
        return b(__dsub_rn(d((v & 0xFFFFFFFFFFFFFull) | 0x4330000000000000ull), 6755399441055744.0));
    }
};

// A twiddle pair in one 16-byte load (the tables are 16-byte aligned pairs).
__device__ __forceinline__ WP ldwp(const WP* p) {
#ifdef FHE_EMU
    return *p;
#else
    const ulonglong2 v = __ldg(reinterpret_cast<const ulonglong2*>(p));
    return WP{v.x, v.y};
#endif
}

// Prefetch of a twiddle pair's line into L1 (no registers, no effect on results): the kernels
// ask for every twiddle of both phases at their start, so the rounds' loads hit L1 instead of
// waiting on L2 right after each barrier.
__device__ __forceinline__ void pf(const WP* p) {
#ifndef FHE_EMU
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
#else
    (void)p;
#endif
}
__device__ __forceinline__ void fwd_pf(const WP* tw, uint32_t B, uint32_t h, uint32_t j0) {
    pf(tw + B * (64 / h) + j0 / (2 * h));
    pf(tw + B * (128 / h) + j0 / h);
    pf(tw + B * (128 / h) + j0 / h + 1);
}
__device__ __forceinline__ void inv_pf(const WP* tw, uint32_t B, uint32_t h, uint32_t j0) {
    pf(tw + B * (64 / h) + j0 / (2 * h));
    pf(tw + B * (64 / h) + j0 / (2 * h) + 1);
    pf(tw + B * (32 / h) + j0 / (4 * h));
}

// The three twiddles of a radix-4 round.
struct Tw3 {
    WP a, b, c;
};
// Forward radix-4 round (line half-spans h, h/2) on the quad j0, j0 + h/2, j0 + h, j0 + 3h/2:
// twiddles (h: a; h/2: b for the first pair, c for the second).
__device__ __forceinline__ Tw3 fwd_tw3(const WP* tw, uint32_t B, uint32_t h, uint32_t j0) {
    const uint32_t i2 = B * (128 / h) + j0 / h;
    return Tw3{ldwp(tw + B * (64 / h) + j0 / (2 * h)), ldwp(tw + i2), ldwp(tw + i2 + 1)};
}
__device__ __forceinline__ void fwd_quad(u64 (&x)[4], Tw3 w, u64 q) {
    ct_bfly(x[0], x[2], w.a, q);
    ct_bfly(x[1], x[3], w.a, q);
    ct_bfly(x[0], x[1], w.b, q);
    ct_bfly(x[2], x[3], w.c, q);
}

// Inverse radix-4 round (half-spans h, 2h) on the quad j0, j0 + h, j0 + 2h, j0 + 3h: twiddles
// (h: a for the first pair, b for the second; 2h: c).
__device__ __forceinline__ Tw3 inv_tw3(const WP* tw, uint32_t B, uint32_t h, uint32_t j0) {
    const uint32_t i1 = B * (64 / h) + j0 / (2 * h);
    return Tw3{ldwp(tw + i1), ldwp(tw + i1 + 1), ldwp(tw + B * (32 / h) + j0 / (4 * h))};
}
__device__ __forceinline__ void inv_quad(u64 (&x)[4], Tw3 w, u64 q) {
    gs_bfly(x[0], x[1], w.a, q);
    gs_bfly(x[2], x[3], w.b, q);
    gs_bfly(x[0], x[2], w.c, q);
    gs_bfly(x[1], x[3], w.c, q);
}

// Quad start of quad q (0..31) of a line: forward rounds (h, h/2), inverse rounds (h, 2h).
__device__ __forceinline__ uint32_t fwd_j0(uint32_t q, uint32_t h) {
    return (q / (h / 2)) * (2 * h) + q % (h / 2);
}
__device__ __forceinline__ uint32_t inv_j0(uint32_t q, uint32_t h) {
    return (q / h) * (4 * h) + q % h;
}

// Shared-memory position of word j of line `line` in a tile. Column tile: j * 16 + line (the 16
// lines of a warp's half hit 16 different bank pairs). Row tile: line * 128 + rsw(j), where rsw
// XORs the low 4 bits of j with G[(j >> 4) & 3], G = {0, 6, 10, 12}: every access pattern of
// the row rounds (quads of stride 32, 8, 4 and 16 words, radix-2 pairs, the four consecutive
// words of the inverse's first round) then hits distinct bank pairs within each half-warp
// (16-byte groups for the paired accesses); G is even, so pairs (2i, 2i + 1) stay adjacent.
__device__ __forceinline__ uint32_t rsw(uint32_t j) {
    return j ^ ((0xCA60u >> (((j >> 4) & 3u) * 4u)) & 0xFu);
}
// Column tile: line XOR 8 * parity(j0 ^ j1 ^ j2): the two quads of a half-warp (whose j differ
// in bit 0, 1 or 2 in every round) then use the two halves of the 16 bank pairs.
template <bool ROW>
__device__ __forceinline__ uint32_t tix(uint32_t line, uint32_t j) {
    return ROW ? line * SUB + rsw(j)
               : j * CL_LINES + (line ^ (8u * ((j ^ (j >> 1) ^ (j >> 2)) & 1u)));
}

#ifndef FHE_EMU
// The two halves of a cluster block (threads 0-255: lines 0-7, threads 256-511: lines 8-15 of
// either phase) never share a word between cluster barriers, so each waits only for itself
// (named barriers 1 and 2): one half computes while the other waits, as two blocks would.
__device__ __forceinline__ void hsync() {
    if (threadIdx.x < 256u) {
        asm volatile("bar.sync 1, 256;" ::: "memory");
    } else {
        asm volatile("bar.sync 2, 256;" ::: "memory");
    }
}
#endif

#ifndef FHE_EMU
// A global word straight from L2 (another block of the launch wrote it during this launch).
__device__ __forceinline__ u64 ldcg(const u64* p) { return __ldcg(p); }
__device__ __forceinline__ unsigned ld_acquire(const unsigned* p) {
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
__device__ __forceinline__ unsigned ld_relaxed(const unsigned* p) {
    unsigned v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}
// A 64-bit word read / written as one relaxed atomic access at device scope (the paired
// kernels' tagged exchange words, which nothing else orders: decision 0514). No "memory"
// clobber: the compiler may move other memory accesses around them (the block barriers, which
// have one, order them where it matters); asm volatile keeps them in program order among
// themselves and makes every poll a new load.
__device__ __forceinline__ u64 ld_rlx64(const u64* p) {
    u64 v;
    asm volatile("ld.relaxed.gpu.global.u64 %0, [%1];" : "=l"(v) : "l"(p));
    return v;
}
__device__ __forceinline__ void st_rlx64(u64* p, u64 v) {
    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v));
}
// Adds 1 to *p, ordered after every earlier memory access of the thread (and, after a block
// barrier, of the block).
__device__ __forceinline__ void arrive_release(unsigned* p) {
    asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(p) : "memory");
}
#endif
// The blocks of one limb meet (the *_gs kernels, launched cooperatively so every block is
// resident), as cooperative groups' grid barrier does: after the block barrier, thread 0's
// fence releases every global write the block made before it (fences are cumulative), thread 0
// counts this block in ctr[0] and waits (acquire) until the count reaches `target`.
// The counter is never reset: each launch that uses it adds exactly CL, so it holds a multiple
// of CL between launches, and a block that has not arrived yet reads a value in
// [base, base + CL - 1] where base is that multiple (limb_target, at the block's start: at most
// CL - 1 others can have arrived). The wait compares modulo 2^32 (the counter may wrap). No
// round trip to L2 is spent on resetting, and the launch needs nothing from the host.
__device__ __forceinline__ unsigned limb_target(const unsigned* ctr) {
    return (ld_relaxed(ctr) & ~(unsigned)(CL - 1)) + CL;
}
__device__ __forceinline__ void limb_sync(unsigned* ctr, unsigned target) {
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(&ctr[0], 1u);
        while ((int)(ld_acquire(&ctr[0]) - target) < 0) {
        }
    }
    __syncthreads();
}

// Middle forward radix-4 rounds on a shared tile (ROW: row tile, else column tile).
template <bool ROW>
__device__ __forceinline__ void fwd_tile_round(u64* s, uint32_t line, uint32_t qd, uint32_t h,
                                               Tw3 w, u64 q) {
    const uint32_t j0 = fwd_j0(qd, h);
    u64 x[4];
#pragma unroll
    for (int e = 0; e < 4; e++) x[e] = s[tix<ROW>(line, j0 + e * (h / 2))];
    fwd_quad(x, w, q);
#pragma unroll
    for (int e = 0; e < 4; e++) s[tix<ROW>(line, j0 + e * (h / 2))] = x[e];
}

template <bool ROW>
__device__ __forceinline__ void inv_tile_round(u64* s, uint32_t line, uint32_t qd, uint32_t h,
                                               Tw3 w, u64 q) {
    const uint32_t j0 = inv_j0(qd, h);
    u64 x[4];
#pragma unroll
    for (int e = 0; e < 4; e++) x[e] = s[tix<ROW>(line, j0 + e * h)];
    inv_quad(x, w, q);
#pragma unroll
    for (int e = 0; e < 4; e++) s[tix<ROW>(line, j0 + e * h)] = x[e];
}

// Forward NTT of one limb by a cluster; `load(pos)` gives the (canonical or < 4q) input word at
// coefficient index pos, `store2(pos, x0, x1)` takes the canonical outputs at NTT indices pos
// and pos + 1 (pos even). PRE: every twiddle of a phase is loaded into registers before the
// phase (the column phase's with the data loads, the row phase's before the cluster barrier),
// so no round waits on a twiddle load (~44 more registers: one block per SM); otherwise each
// round loads its own (prefetched into L1 at the start).
template <bool PRE, class Load, class Store2>
__device__ __forceinline__ void cl_fwd_ntt(u64* s, const WP* tw, u64 q, Load load, Store2 store2) {
    const uint32_t tid = threadIdx.x;
    const uint32_t k = cl_rank();
    u64* A = s;              // column phase: A[tix<false>(c, a)], column k * 16 + c
    u64* Bt = s + CL_WORDS;  // row phase: Bt[tix<true>(r, b)], row k * 16 + r
    // Column phase: thread -> (column c, quad qc); row phase: thread -> (row r, quad qr).
    const uint32_t c = (tid / 256) * 8 + tid % 8, qc = (tid % 256) / 8;
    const uint32_t r = tid / 32, qr = tid % 32;
    const uint32_t row = k * CL_LINES + r, Bl = SUB + row;
    auto col_tw = [&](int round) -> Tw3 {
        const uint32_t h = 64u >> (2 * round);
        return fwd_tw3(tw, 1, h, fwd_j0(qc, h));
    };
    auto row_tw = [&](int round) -> Tw3 {
        const uint32_t h = 64u >> (2 * round);
        return fwd_tw3(tw, Bl, h, fwd_j0(qr, h));
    };
    Tw3 ctw[3] = {}, rtw[3] = {};
    WP ctw2[2] = {}, rtw2[2] = {};
    if constexpr (!PRE) {
        // Twiddles of every round of both phases (thread mappings as in the rounds below).
        fwd_pf(tw, 1, 64, qc);
        fwd_pf(tw, 1, 16, fwd_j0(qc, 16));
        fwd_pf(tw, 1, 4, fwd_j0(qc, 4));
        pf(tw + 64 + qc);
        pf(tw + 64 + qc + 32);
        fwd_pf(tw, Bl, 64, qr);
        fwd_pf(tw, Bl, 16, fwd_j0(qr, 16));
        fwd_pf(tw, Bl, 4, fwd_j0(qr, 4));
        pf(tw + Bl * 64 + qr);
        pf(tw + Bl * 64 + qr + 32);
    }
    {
        // Column phase, round 1 straight from global memory.
        const uint32_t col = k * CL_LINES + c;
        u64 x[4];
#pragma unroll
        for (int e = 0; e < 4; e++) x[e] = load((qc + e * 32) * SUB + col);
        if constexpr (PRE) {
#pragma unroll
            for (int i = 0; i < 3; i++) ctw[i] = col_tw(i);
#pragma unroll
            for (int e = 0; e < 2; e++) ctw2[e] = ldwp(tw + 64 + qc + 32 * e);
        }
        fwd_quad(x, PRE ? ctw[0] : col_tw(0), q);
#pragma unroll
        for (int e = 0; e < 4; e++) A[tix<false>(c, qc + e * 32)] = x[e];
        hsync();
        fwd_tile_round<false>(A, c, qc, 16, PRE ? ctw[1] : col_tw(1), q);
        hsync();
        fwd_tile_round<false>(A, c, qc, 4, PRE ? ctw[2] : col_tw(2), q);
        hsync();
        // Radix-2 half-span 1: pairs (2p, 2p + 1), p = qc and qc + 32.
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const uint32_t p = qc + e * 32;
            u64 x0 = A[tix<false>(c, 2 * p)], x1 = A[tix<false>(c, 2 * p + 1)];
            ct_bfly(x0, x1, PRE ? ctw2[e] : ldwp(tw + 64 + p), q);
            A[tix<false>(c, 2 * p)] = x0;
            A[tix<false>(c, 2 * p + 1)] = x1;
        }
    }
    if constexpr (PRE) {
#pragma unroll
        for (int i = 0; i < 3; i++) rtw[i] = row_tw(i);
#pragma unroll
        for (int e = 0; e < 2; e++) rtw2[e] = ldwp(tw + Bl * 64 + qr + 32 * e);
    }
    cl_sync();  // every column tile of the cluster is complete and visible
    {
        // Row phase, round 1 reading the cluster's column tiles.
        u64 x[4];
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const uint32_t b = qr + e * 32;
            x[e] = *cl_map(A + tix<false>(b % CL_LINES, row), b / CL_LINES);
        }
        fwd_quad(x, PRE ? rtw[0] : row_tw(0), q);
        cl_arrive();  // this block is done reading the others' tiles (release: loads performed)
#pragma unroll
        for (int e = 0; e < 4; e++) Bt[tix<true>(r, qr + e * 32)] = x[e];
        hsync();
        fwd_tile_round<true>(Bt, r, qr, 16, PRE ? rtw[1] : row_tw(1), q);
        hsync();
        fwd_tile_round<true>(Bt, r, qr, 4, PRE ? rtw[2] : row_tw(2), q);
        hsync();
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const uint32_t p = qr + e * 32;
            u64 x0, x1;
            ld2sh(Bt + tix<true>(r, 2 * p), x0, x1);
            ct_bfly(x0, x1, PRE ? rtw2[e] : ldwp(tw + Bl * 64 + p), q);
            x0 = csub(x0, 2 * q);
            x1 = csub(x1, 2 * q);
            store2(row * SUB + 2 * p, csub(x0, q), csub(x1, q));
        }
        cl_wait();  // no block leaves while another may still read its tile
    }
}

// Inverse NTT of one limb by a cluster; `load4(pos, x)` gives the input words (< 2q) at NTT
// indices pos .. pos + 3 (pos a multiple of 4), `store(pos, x)` takes the output (lazy < 2q,
// before any post-scaling) at coefficient index pos. PRE as for cl_fwd_ntt (the row phase's
// twiddles with the data loads, the column phase's before the cluster barrier).
template <bool PRE, class Load4, class Store>
__device__ __forceinline__ void cl_inv_ntt(u64* s, const WP* tw, u64 q, Load4 load4, Store store) {
    const uint32_t tid = threadIdx.x;
    const uint32_t k = cl_rank();
    u64* Bt = s;             // row phase: Bt[tix<true>(r, b)], row k * 16 + r
    u64* A = s + CL_WORDS;   // column phase: A[tix<false>(c, a)], column k * 16 + c
    const uint32_t c = (tid / 256) * 8 + tid % 8, qc = (tid % 256) / 8;
    const uint32_t r = tid / 32, qr = tid % 32;
    const uint32_t row = k * CL_LINES + r, Bl = SUB + row;
    // Rounds 0, 1, 2: half-spans 1, 4, 16 (quad starts 4q, inv_j0(q, 4), inv_j0(q, 16)).
    auto row_tw = [&](int round) -> Tw3 {
        const uint32_t h = 1u << (2 * round);
        return inv_tw3(tw, Bl, h, round == 0 ? 4 * qr : inv_j0(qr, h));
    };
    auto col_tw = [&](int round) -> Tw3 {
        const uint32_t h = 1u << (2 * round);
        return inv_tw3(tw, 1, h, round == 0 ? 4 * qc : inv_j0(qc, h));
    };
    Tw3 rtw[3] = {}, ctw[3] = {};
    WP rtw2 = WP{0, 0}, ctw2 = WP{0, 0};
    if constexpr (!PRE) {
        // Twiddles of every round of both phases (thread mappings as in the rounds below).
        inv_pf(tw, Bl, 1, 4 * qr);
        inv_pf(tw, Bl, 4, inv_j0(qr, 4));
        inv_pf(tw, Bl, 16, inv_j0(qr, 16));
        pf(tw + Bl);
        inv_pf(tw, 1, 1, 4 * qc);
        inv_pf(tw, 1, 4, inv_j0(qc, 4));
        inv_pf(tw, 1, 16, inv_j0(qc, 16));
        pf(tw + 1);
    }
    {
        u64 x[4];
        load4(row * SUB + 4 * qr, x);
        if constexpr (PRE) {
#pragma unroll
            for (int i = 0; i < 3; i++) rtw[i] = row_tw(i);
            rtw2 = ldwp(tw + Bl);
        }
        inv_quad(x, PRE ? rtw[0] : row_tw(0), q);
        st2(Bt + tix<true>(r, 4 * qr), x[0], x[1]);
        st2(Bt + tix<true>(r, 4 * qr + 2), x[2], x[3]);
        hsync();
        inv_tile_round<true>(Bt, r, qr, 4, PRE ? rtw[1] : row_tw(1), q);
        hsync();
        inv_tile_round<true>(Bt, r, qr, 16, PRE ? rtw[2] : row_tw(2), q);
        hsync();
        // Radix-2 half-span 64: pairs (p, p + 64), p = qr and qr + 32.
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const uint32_t p = qr + e * 32;
            u64 x0 = Bt[tix<true>(r, p)], x1 = Bt[tix<true>(r, p + 64)];
            gs_bfly(x0, x1, PRE ? rtw2 : ldwp(tw + Bl), q);
            Bt[tix<true>(r, p)] = x0;
            Bt[tix<true>(r, p + 64)] = x1;
        }
    }
    if constexpr (PRE) {
#pragma unroll
        for (int i = 0; i < 3; i++) ctw[i] = col_tw(i);
        ctw2 = ldwp(tw + 1);
    }
    cl_sync();
    {
        const uint32_t col = k * CL_LINES + c;
        u64 x[4];
        // Rows 4qc .. 4qc + 3 all live in block (4 qc) / 16.
        const uint32_t src = (4 * qc) / CL_LINES;
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const uint32_t a = 4 * qc + e;
            x[e] = *cl_map(Bt + tix<true>(a % CL_LINES, col), src);
        }
        inv_quad(x, PRE ? ctw[0] : col_tw(0), q);
        cl_arrive();  // this block is done reading the others' tiles (release: loads performed)
#pragma unroll
        for (int e = 0; e < 4; e++) A[tix<false>(c, 4 * qc + e)] = x[e];
        hsync();
        inv_tile_round<false>(A, c, qc, 4, PRE ? ctw[1] : col_tw(1), q);
        hsync();
        inv_tile_round<false>(A, c, qc, 16, PRE ? ctw[2] : col_tw(2), q);
        hsync();
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const uint32_t p = qc + e * 32;
            u64 x0 = A[tix<false>(c, p)], x1 = A[tix<false>(c, p + 64)];
            gs_bfly(x0, x1, PRE ? ctw2 : ldwp(tw + 1), q);
            store(p * SUB + col, x0);
            store((p + 64) * SUB + col, x1);
        }
        cl_wait();
    }
}

// ------------------------------------------------------------------------------------------
// One-launch NTT without clusters (the *_gs kernels): 8 blocks of GS_THREADS per limb, block k
// holding columns [16k, 16k + 16) of the 128 x 128 view, then rows [16k, 16k + 16); the column
// results go through the output limb in global memory (L2) and the blocks of a limb meet in
// limb_sync. Each thread holds 8 words: every phase is a radix-8 round (3 stages in registers),
// a second radix-8 round and a radix-2 round, with two shared-memory exchanges, so a phase
// issues ~37 instructions per butterfly (the cluster path's radix-4 rounds: ~48) and waits on
// two block barriers instead of four. Thread t: lo = t % 16, hi = t / 16, ah = hi / 2,
// b0 = hi % 2. Twiddle index of the stage with half-span h at line position a, line base B:
// B * (64 / h) + a / (2h) as for the cluster kernels, so a radix-8 round whose first stage has
// twiddle index B uses tw[B], tw[2B + i], tw[4B + i].
#define GS_THREADS 256

// Column tile word (column c, high index a); a half-warp (16 columns, one a) is conflict-free.
__device__ __forceinline__ uint32_t gs_cw(uint32_t c, uint32_t a) { return a * CL_LINES + c; }
// Row tile word (row r, low index b): b's low 4 bits XOR f(r), f(r) = ((r & 7) << 1) | (r >> 3),
// a bijection of 0..15: 16 rows at one b (round 2) and one row at 16 consecutive b (rounds 1
// and 3) hit distinct bank pairs, and pairs (2i, 2i + 1) stay one aligned 16-byte unit
// (swapped when f(r) is odd, i.e. r >= 8).
__device__ __forceinline__ uint32_t gs_rw(uint32_t r, uint32_t b) {
    return r * SUB + (b ^ (((r & 7u) << 1) | (r >> 3)));
}

// The seven twiddles of a radix-8 round with base B.
struct Tw7 {
    WP w0, w1[2], w2[4];
};
__device__ __forceinline__ Tw7 tw7(const WP* tw, uint32_t B) {
    Tw7 t;
    t.w0 = ldwp(tw + B);
#pragma unroll
    for (int i = 0; i < 2; i++) t.w1[i] = ldwp(tw + 2 * B + i);
#pragma unroll
    for (int i = 0; i < 4; i++) t.w2[i] = ldwp(tw + 4 * B + i);
    return t;
}
// Forward radix-8 round on x[e]: stages pairing e with e + 4, e + 2, e + 1, by A's butterflies;
// bit s of M marks stage s + 1 (A::ct<C>).
template <class A = Loose, unsigned M = 7>
__device__ __forceinline__ void fwd8(u64 (&x)[8], const Tw7& w, u64 q) {
#pragma unroll
    for (int e = 0; e < 4; e++) A::template ct<(M & 1) != 0>(x[e], x[e + 4], w.w0, q);
#pragma unroll
    for (int e = 0; e < 8; e++)
        if ((e & 2) == 0) A::template ct<(M & 2) != 0>(x[e], x[e + 2], w.w1[e >> 2], q);
#pragma unroll
    for (int e = 0; e < 8; e += 2) A::template ct<(M & 4) != 0>(x[e], x[e + 1], w.w2[e >> 1], q);
}
// The first two stages of an inverse radix-8 round: pairing e with e + 1, then e + 2.
template <class A = Loose>
__device__ __forceinline__ void inv8_first2(u64 (&x)[8], const Tw7& w, u64 q) {
#pragma unroll
    for (int e = 0; e < 8; e += 2) A::gs(x[e], x[e + 1], w.w2[e >> 1], q);
#pragma unroll
    for (int e = 0; e < 8; e++)
        if ((e & 2) == 0) A::gs(x[e], x[e + 2], w.w1[e >> 2], q);
}
// Inverse radix-8 round: stages pairing e with e + 1, e + 2, e + 4.
template <class A = Loose>
__device__ __forceinline__ void inv8(u64 (&x)[8], const Tw7& w, u64 q) {
    inv8_first2<A>(x, w, q);
#pragma unroll
    for (int e = 0; e < 4; e++) A::gs(x[e], x[e + 4], w.w0, q);
}
// The inverse NTT's last radix-8 round (twiddle base 1) with the final scaling folded into its
// last stage, canonical out: (x + y) * c and (x - y) * w1 * c as one Shoup product each (the
// sums are < 4q (Loose: < 8q), inside Shoup's input range), instead of the stage's product and
// two scalings.
template <class A = Loose>
__device__ __forceinline__ void inv8_last(u64 (&x)[8], const WP* tw, const Post& c, u64 q) {
    inv8_first2<A>(x, tw7(tw, 1), q);
#pragma unroll
    for (int e = 0; e < 4; e++) A::gs_last(x[e], x[e + 4], c, q);
}

// The middle round of a *_gs phase, in place on the tile: words 16 ah + 2e + b0 (e = 0..7) of
// line `line` (a row tile when ROW, else a column tile), a forward (FWD) or inverse radix-8
// round with twiddle base B, by A's butterflies (M: fwd8's stage marks).
template <bool FWD, bool ROW, class A = Loose, unsigned M = 7>
__device__ __forceinline__ void gs_mid_round(u64* s, uint32_t line, uint32_t ah, uint32_t b0,
                                             const WP* tw, uint32_t B, u64 q) {
    auto at = [&](int e) {
        const uint32_t j = ah * 16 + 2 * e + b0;
        return ROW ? gs_rw(line, j) : gs_cw(line, j);
    };
    u64 x[8];
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = s[at(e)];
    if constexpr (FWD) {
        fwd8<A, M>(x, tw7(tw, B), q);
    } else {
        inv8<A>(x, tw7(tw, B), q);
    }
#pragma unroll
    for (int e = 0; e < 8; e++) s[at(e)] = x[e];
}

// Forward NTT of one limb by its 8 blocks, in two phases: block k's columns [16k, 16k + 16)
// (gs_fwd_cols: load -> tdst) and, once every block of the limb has done its columns, its rows
// [16k, 16k + 16) (gs_fwd_rows: tdst -> store2). load and store2 as for cl_fwd_ntt; tdst: the
// output limb (the exchange). gs_fwd_cols_at: the column phase with tile line lo = the thread's
// column at word offset `col` from load's and tdst's base (gs_fwd_cols: k * 16 + lo). A: the
// butterflies (Loose: stages marked N N C | N C N | C, inputs below 4q, outputs below 11q).
template <class A = Loose, class Load>
__device__ __forceinline__ void gs_fwd_cols_at(u64* s, const WP* tw, u64 q, Load load, u64* tdst,
                                               uint32_t col) {
    const uint32_t tid = threadIdx.x;
    const uint32_t lo = tid % 16, hi = tid / 16, ah = hi >> 1, b0 = hi & 1;
    {
        u64 x[8];
        // Round 1: a bits 6..4 (a = hi + 16e), straight from global memory.
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = A::in(load((hi + 16 * e) * SUB + col));
        fwd8<A, 4>(x, tw7(tw, 1), q);
#pragma unroll
        for (int e = 0; e < 8; e++) s[gs_cw(lo, hi + 16 * e)] = x[e];
        __syncthreads();
        // Round 2: a bits 3..1 (a = 16 ah + 2e + b0).
        gs_mid_round<true, false, A, 2>(s, lo, ah, b0, tw, 8 + ah, q);
        __syncthreads();
        // Round 3: a bit 0, pairs a = 2 (hi + 16i), into the output limb.
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t a = 2 * (hi + 16 * i);
            u64 x0 = s[gs_cw(lo, a)], x1 = s[gs_cw(lo, a + 1)];
            A::template ct<true>(x0, x1, ldwp(tw + 64 + a / 2), q);
            tdst[a * SUB + col] = x0;
            tdst[(a + 1) * SUB + col] = x1;
        }
    }
}
template <class A = Loose, class Load>
__device__ __forceinline__ void gs_fwd_cols(u64* s, const WP* tw, u64 q, Load load, u64* tdst,
                                            uint32_t k) {
    gs_fwd_cols_at<A>(s, tw, q, load, tdst, k * CL_LINES + threadIdx.x % 16);
}
// The last round of gs_fwd_rows (b bit 0, pairs b = 2 (lo + 16i)) on tile row hi = limb row
// `row` of the row tile s: canonical words through store2(row * SUB + b, x0, x1) (A::ct_out).
template <class A = Loose, class Store2>
__device__ __forceinline__ void gs_fwd_rows_last(const u64* s, const WP* tw, u64 q, uint32_t row,
                                                 Store2 store2) {
    const uint32_t lo = threadIdx.x % 16, hi = threadIdx.x / 16;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint32_t b = 2 * (lo + 16 * i);
        u64 x0, x1;
        ld2sh(s + (gs_rw(hi, b) & ~1u), x0, x1);
        if (hi >= 8) {
            const u64 t = x0;
            x0 = x1;
            x1 = t;
        }
        A::ct_out(x0, x1, ldwp(tw + (SUB + row) * 64 + b / 2), q);
        store2(row * SUB + b, x0, x1);
    }
}
// READS (ntt_fwd_gq with sigma_g as an output permutation, whose stores land in rows other
// blocks of the limb read): count this block in *reads once its rows are loaded, and store only
// once all CL blocks of the limb have loaded theirs.
template <class Store2, bool READS = false, class A = Loose>
__device__ __forceinline__ void gs_fwd_rows(u64* s, const WP* tw, u64 q, Store2 store2,
                                            const u64* tdst, uint32_t k,
                                            unsigned* reads = nullptr) {
    const uint32_t tid = threadIdx.x;
    const uint32_t lo = tid % 16, hi = tid / 16, ah = hi >> 1, b0 = hi & 1;
    {
        u64 x[8];
        // Round 1: b bits 6..4 (b = lo + 16e) of row hi.
        {
            const uint32_t row = k * CL_LINES + hi;
#pragma unroll
            for (int e = 0; e < 8; e++) x[e] = ldcg(tdst + row * SUB + lo + 16 * e);
            fwd8<A, 2>(x, tw7(tw, SUB + row), q);
#pragma unroll
            for (int e = 0; e < 8; e++) s[gs_rw(hi, lo + 16 * e)] = x[e];
        }
        __syncthreads();
        if constexpr (READS) {
            if (tid == 0) arrive_release(reads);  // every load of tdst has returned
        }
        // Round 2: b bits 3..1 (b = 16 ah + 2e + b0) of row lo.
        gs_mid_round<true, true, A, 5>(s, lo, ah, b0, tw, (SUB + k * CL_LINES + lo) * 8 + ah, q);
        __syncthreads();
        if constexpr (READS) {
            if (tid == 0) {
                while (ld_acquire(reads) < CL) {
                }
            }
            __syncthreads();
        }
        // Round 3: b bit 0 of row hi; canonical out.
        gs_fwd_rows_last<A>(s, tw, q, k * CL_LINES + hi, store2);
    }
}
// Both phases by block k = blockIdx.x, the blocks of the limb meeting on ctr in between
// (cooperative launch).
template <class A = Loose, class Load, class Store2>
__device__ __forceinline__ void gs_fwd_ntt(u64* s, const WP* tw, u64 q, Load load, Store2 store2,
                                           u64* tdst, unsigned* ctr) {
    unsigned target = 0;  // the count limb_sync waits for (read before arriving)
    if (threadIdx.x == 0) target = limb_target(ctr);  // gs_fwd_ntt
    gs_fwd_cols<A>(s, tw, q, load, tdst, blockIdx.x);
    limb_sync(ctr, target);  // every column of the limb is in tdst
    gs_fwd_rows<Store2, false, A>(s, tw, q, store2, tdst, blockIdx.x);
}

// Inverse NTT of one limb by its 8 blocks, scaled by the constant c; `loadp(pos, x)` gives the
// input words (< 2q) at the NTT indices pos[i], pos[i] + 1 (pos[i] even) as x[2i], x[2i + 1],
// all four pairs in one call (so an input computed from many loads, ks_inner_gs's inner
// product, keeps them all in flight); `store(pos, x)` takes the canonical scaled word at
// coefficient index pos (the scaling is folded into the last stage: inv8_last).
// Lines: which limb lines a block's tile lines are (LimbLines: block k's 16 lines of one
// limb): row(l) the limb row of tile row l (its twiddles), roff(l) / col(l) the word offsets of
// tile row l / column l from the base that loadp, store and tdst address, target(ctr) the
// count the blocks meet at.
struct LimbLines {
    uint32_t k;
    __device__ __forceinline__ uint32_t row(uint32_t l) const { return k * CL_LINES + l; }
    __device__ __forceinline__ uint32_t roff(uint32_t l) const { return row(l) * SUB; }
    __device__ __forceinline__ uint32_t col(uint32_t l) const { return k * CL_LINES + l; }
    __device__ __forceinline__ unsigned target(const unsigned* ctr) const {
        return limb_target(ctr);
    }
};
// The inverse NTT's first row round (half-span 1) on the word pairs b = 2 (lo + 16i) of tile
// row hi, limb row `row`, input < 2q in x: A's butterflies, then into the row tile t (gs_rw's
// pairs, swapped in rows hi >= 8). Shared by gs_inv_ntt and ntt_inv_gp.
template <class A = Loose>
__device__ __forceinline__ void inv_rows_first(u64* t, u64 (&x)[8], const WP* tw, uint32_t row,
                                               uint32_t lo, uint32_t hi, u64 q) {
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const uint32_t b = 2 * (lo + 16 * i);
        A::gs(x[2 * i], x[2 * i + 1], ldwp(tw + (SUB + row) * 64 + b / 2), q);
        if (hi >= 8) {
            st2(t + (gs_rw(hi, b) & ~1u), x[2 * i + 1], x[2 * i]);
        } else {
            st2(t + (gs_rw(hi, b) & ~1u), x[2 * i], x[2 * i + 1]);
        }
    }
}
// TRIG: the block triggers the launch's programmatic dependents (grid_dep_launch) at the limb
// barrier, once its row phase is done (the key switch's inner product: decision 0508).
template <class LoadP, class Store, class Lines = LimbLines, class A = Loose, bool TRIG = false>
__device__ __forceinline__ void gs_inv_ntt(u64* s, const WP* tw, u64 q, LoadP loadp, Store store,
                                           u64* tdst, unsigned* ctr, const Post& c,
                                           Lines lines = LimbLines{blockIdx.x}) {
    const uint32_t tid = threadIdx.x;
    const uint32_t lo = tid % 16, hi = tid / 16, ah = hi >> 1, b0 = hi & 1;
    unsigned target = 0;
    if (tid == 0) target = lines.target(ctr);
    {
        u64 x[8];
        // Round 1: b bit 0 (half-span 1), pairs b = 2 (lo + 16i) of row hi.
        {
            const uint32_t row = lines.row(hi);
            uint32_t pos[4];
#pragma unroll
            for (int i = 0; i < 4; i++) pos[i] = lines.roff(hi) + 2 * (lo + 16 * i);
            loadp(pos, x);
#pragma unroll
            for (int e = 0; e < 8; e++) x[e] = A::in(x[e]);
            inv_rows_first<A>(s, x, tw, row, lo, hi, q);
        }
        __syncthreads();
        // Round 2: b bits 1..3 of row lo.
        gs_mid_round<false, true, A>(s, lo, ah, b0, tw, (SUB + lines.row(lo)) * 8 + ah, q);
        __syncthreads();
        // Round 3: b bits 4..6 (b = lo + 16e) of row hi, into the output limb.
        {
#pragma unroll
            for (int e = 0; e < 8; e++) x[e] = s[gs_rw(hi, lo + 16 * e)];
            inv8<A>(x, tw7(tw, SUB + lines.row(hi)), q);
#pragma unroll
            for (int e = 0; e < 8; e++) tdst[lines.roff(hi) + lo + 16 * e] = A::mid(x[e], q);
        }
    }
    if constexpr (TRIG) grid_dep_launch();
    limb_sync(ctr, target);  // every row of the limb is in tdst
    {
        const uint32_t col = lines.col(lo);
        u64 x[8];
        // Round 1: a bit 0, pairs a = 2 (hi + 16i).
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t a = 2 * (hi + 16 * i);
            u64 x0 = ldcg(tdst + a * SUB + col), x1 = ldcg(tdst + (a + 1) * SUB + col);
            A::gs(x0, x1, ldwp(tw + 64 + a / 2), q);
            s[gs_cw(lo, a)] = x0;
            s[gs_cw(lo, a + 1)] = x1;
        }
        __syncthreads();
        // Round 2: a bits 1..3 (a = 16 ah + 2e + b0).
        gs_mid_round<false, false, A>(s, lo, ah, b0, tw, 8 + ah, q);
        __syncthreads();
        // Round 3: a bits 4..6 (a = hi + 16e), scaled by c.
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = s[gs_cw(lo, hi + 16 * e)];
        inv8_last<A>(x, tw, c, q);
#pragma unroll
        for (int e = 0; e < 8; e++) store((hi + 16 * e) * SUB + col, x[e]);
    }
}

// gs_inv_ntt by the arithmetic of prime q: LooseF's binary64 butterflies below F64_Q (decision
// 0512), else Loose; TRIG as for gs_inv_ntt.
template <bool TRIG = false, class LoadP, class Store>
__device__ __forceinline__ void gs_inv_ntt_q(u64* s, const WP* tw, u64 q, LoadP loadp, Store store,
                                             u64* tdst, unsigned* ctr, const Post& c) {
    if (q < F64_Q) {
        gs_inv_ntt<LoadP, Store, LimbLines, LooseF, TRIG>(s, tw, q, loadp, store, tdst, ctr, c);
    } else {
        gs_inv_ntt<LoadP, Store, LimbLines, Loose, TRIG>(s, tw, q, loadp, store, tdst, ctr, c);
    }
}

// Forward NTT kernels with the arguments and input modes of ntt_fwd_cols (plain, signed lift,
// automorphism gather, balanced ModUp lift), one launch, output canonical, grid (CL, limbs,
// components), CL_THREADS threads: V = 0 ntt_fwd_cl (clusters of CL), V = 1 ntt_fwd_clr (the
// same with the twiddles preloaded), V = 2 ntt_fwd_gs (no clusters, global exchange, GS_THREADS);
// V = 3 / 4: the column / row phase of one ntt_fwd_gq work item. s: the block's tile; at: (block
// of the limb, limb row y, limb component z), blockIdx but for ntt_fwd_gq.
template <int V>
__device__ __forceinline__ void ntt_fwd_entry(
    u64* s, uint3 at, const u64* __restrict__ in, u64* __restrict__ out,
    const Prime* __restrict__ primes, const WP* __restrict__ twf, const WP* __restrict__ pre,
    uint32_t prime_off, u64 in_ys, u64 in_zs, u64 out_ys, u64 out_zs, uint32_t mode,
    uint32_t ginv, uint32_t src_off, uint32_t src_by_z, unsigned* sync_ctr = nullptr) {
    const uint32_t y = at.y, z = at.z;
    const uint32_t pid = prime_off + y;
    const Prime p = primes[pid];
    const bool raw = pre == nullptr;  // canonical plain input: no pre-step
    const WP pw = raw ? WP{1, 0} : pre[pid];
    const u64* src = in + z * in_zs + y * in_ys;
    u64* dst = out + z * out_zs + y * out_ys;
    const u64 src_q = primes[src_off + (src_by_z ? z : y)].q;
    const u64 src_q_mod = reduce64(src_q, p);
    // A ModUp through sigma_g on the cluster kernels and ntt_fwd_gq reads the digit as it is
    // and applies sigma_g to the NTT output instead (a permutation of slots, aut_ntt's): the
    // balanced lift commutes with sigma_g's negations (q odd), so the words are those of the
    // gather, and the loads stay coalesced. Output pairs (2t, 2t + 1) map to pairs, possibly
    // swapped. ntt_fwd_gs gathers (its output limb is the exchange, read until the end).
    const bool scatter = V != 2 && src_by_z != 0 && ginv != 0;
    auto load = [&](uint32_t pos) -> u64 {
        if (raw) return src[pos];
        u64 x;
        if (mode == 1) {
            i64 v = (i64)src[pos];
            u64 mag = v < 0 ? (u64)(-v) : (u64)v;
            u64 r = reduce64(mag, p);
            x = v < 0 ? negmod(r, p.q) : r;
        } else if (ginv != 0 && !scatter) {
            x = aut_gather(src, pos, ginv, src_q);
        } else {
            x = src[pos];
        }
        u64 r = shoup(x, pw.w, pw.wp, p.q);
        if (src_by_z && x > src_q / 2) r = submod(r, src_q_mod, p.q);
        return r;
    };
    auto store2 = [&](uint32_t pos, u64 x0, u64 x1) {
        if (scatter) {
            // Slot m of NTT(a) is slot br(((ginv (2 br(m) + 1)) mod 2N - 1) / 2) of
            // NTT(sigma_g(a)).
            const uint32_t e = (uint32_t)(((u64)ginv * (2 * brev14(pos) + 1)) & (2 * NN - 1));
            const uint32_t t = brev14((e - 1) / 2);
            if (t & 1u) {
                st2(dst + (t - 1), x1, x0);
            } else {
                st2(dst + t, x0, x1);
            }
        } else {
            st2(dst + pos, x0, x1);
        }
    };
    const WP* tw = twf + (u64)pid * NN;
    if constexpr (V < 2) {
        cl_fwd_ntt<V == 1>(s, tw, p.q, load, store2);
    } else {
        // The *_gs and work-queue forms: binary64 butterflies for primes below F64_Q (LooseF,
        // decision 0512), chosen per limb, so both phases of a limb use the same arithmetic
        // (the column phase's words in the output limb are LooseF's doubles).
        auto phases = [&](auto arith) {
            using A = decltype(arith);
            if constexpr (V == 2) {
                // ctr: the launch's counter pairs (y, z) = limb; tdst: the output limb itself.
                gs_fwd_ntt<A>(s, tw, p.q, load, store2, dst, sync_ctr + 2 * (z * gridDim.y + y));
            } else if constexpr (V == 3) {
                gs_fwd_cols<A>(s, tw, p.q, load, dst, at.x);
            } else if (scatter) {
                // sync_ctr: the limb's read count (the permuted stores land in other blocks'
                // rows).
                gs_fwd_rows<decltype(store2), true, A>(s, tw, p.q, store2, dst, at.x, sync_ctr);
            } else {
                gs_fwd_rows<decltype(store2), false, A>(s, tw, p.q, store2, dst, at.x);
            }
        };
        if (p.q < F64_Q) {
            phases(LooseF{});
        } else {
            phases(Loose{});
        }
    }
}

#define NTT_FWD_PARAMS                                                                       \
    const u64 *__restrict__ in, u64 *__restrict__ out, const Prime *__restrict__ primes,     \
        const WP *__restrict__ twf, const WP *__restrict__ pre, uint32_t prime_off, u64 in_ys, \
        u64 in_zs, u64 out_ys, u64 out_zs, uint32_t mode, uint32_t ginv, uint32_t src_off,   \
        uint32_t src_by_z
#define NTT_FWD_ARGS \
    in, out, primes, twf, pre, prime_off, in_ys, in_zs, out_ys, out_zs, mode, ginv, src_off, src_by_z

CL_KERNEL3 ntt_fwd_cl(NTT_FWD_PARAMS) {
    CL_SHARED(s);
    ntt_fwd_entry<0>(s, blockIdx, NTT_FWD_ARGS);
}
CL_KERNEL1 ntt_fwd_clr(NTT_FWD_PARAMS) {
    CL_SHARED(s);
    ntt_fwd_entry<1>(s, blockIdx, NTT_FWD_ARGS);
}
// Without clusters (gs_fwd_ntt): the blocks of a limb exchange the column results through the
// output limb in global memory (L2) and meet on counters in sync_ctr (two per limb); launched
// cooperatively. Grid (CL, limbs, components), GS_THREADS threads.
GS_KERNEL ntt_fwd_gs(NTT_FWD_PARAMS, unsigned* sync_ctr) {
    CL_SHARED(s);
    grid_dep_wait();
    ntt_fwd_entry<2>(s, blockIdx, NTT_FWD_ARGS, sync_ctr);
}

// The forward NTT of limbs_y x limbs_z limbs (limb (y, z) as ntt_fwd_gs's block (k, y, z)) as a
// queue of work items, for launches too large for one cooperative wave (key switching's ModUp:
// 72 limbs at level 0). Item i < CL * limbs is the column phase of block i % CL of limb i / CL,
// item CL * limbs + i its row phase. Blocks take items in ticket order (qs[0]) until none is
// left. A column phase waits for nothing and, when stored, counts itself in its limb's qs[2 +
// limb]; a row phase waits until that count is CL. Every column item has a smaller ticket than
// any row item, so the items a waiting block depends on were taken by blocks already running,
// which finish them without waiting: no block needs another to become resident, so any grid of
// at least CL blocks works (a plain launch; the engine uses one wave, 2 blocks per SM), and
// while the last column items run, blocks already do the first limbs' rows (the limb barrier
// of ntt_fwd_gs, hidden).
// With sigma_g (src_by_z and ginv set) the row items store through the slot permutation, into
// rows that the limb's other row items read: they count their loads in qs[2 + limbs + limb]
// and store once it is CL. Those items have consecutive tickets, so only the limb at the
// ticket frontier can be partly taken, and every other waiting limb has all its items running:
// no deadlock with at least CL blocks.
// While a block runs a column item, its thread 0 already takes the next ticket (the atomic's
// round trip to L2 hides behind the item): the ticket held is then either a column item (which
// waits for nothing) or a row item whose holder waits for nothing until it starts it, so the
// arguments above still hold. A row item takes its successor only when done (holding a row
// item of its own limb while waiting for that limb's loads would deadlock).
// The last block to leave (qs[1] counts them) zeroes qs for the next launch on its stream.
// qs: 2 + 2 * limbs_y * limbs_z words, zero at the launch. Grid (blocks >= CL, 1, 1),
// GS_THREADS threads.
GS_KERNEL2 ntt_fwd_gq(NTT_FWD_PARAMS, uint32_t limbs_y, uint32_t limbs_z, unsigned* qs) {
    CL_SHARED(s);
    grid_dep_wait();
    const uint32_t limbs = limbs_y * limbs_z, items = CL * limbs;
    unsigned next = ~0u;  // thread 0: the ticket taken ahead, if any
    for (;;) {
        // The ticket through the tile (word 0): read by all after the barrier, and the tile is
        // written again only after the second one.
        if (threadIdx.x == 0) s[0] = next != ~0u ? next : atomicAdd(&qs[0], 1u);
        __syncthreads();
        const uint32_t ticket = (uint32_t)s[0];
        __syncthreads();
        if (ticket >= 2 * items) break;
        const bool rows = ticket >= items;
        const uint32_t i = rows ? ticket - items : ticket, limb = i / CL;
        const uint3 at = {i % CL, limb % limbs_y, limb / limbs_y};
        unsigned* arrived = &qs[2 + limb];
        next = ~0u;
        if (!rows) {
            if (threadIdx.x == 0) next = atomicAdd(&qs[0], 1u);
            ntt_fwd_entry<3>(s, at, NTT_FWD_ARGS);
            __syncthreads();
            if (threadIdx.x == 0) {
                __threadfence();  // releases every store of the block (cumulative after the barrier)
                atomicAdd(arrived, 1u);
            }
        } else {
            if (threadIdx.x == 0) {
                while (ld_acquire(arrived) < CL) {
                }
            }
            __syncthreads();
            ntt_fwd_entry<4>(s, at, NTT_FWD_ARGS, &qs[2 + limbs + limb]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0 && atomicAdd(&qs[1], 1u) == gridDim.x - 1) {
        // Every block has left the loop: nobody reads qs again in this launch; the next launch
        // on the stream starts after this one ends, so it sees the zeros.
        for (uint32_t l = 0; l < 2 * limbs; l++) qs[2 + l] = 0;
        qs[0] = 0;
        qs[1] = 0;
    }
}

// Inverse NTT, then x * post[pid] (canonical), one launch, grid (CL, limbs, components),
// CL_THREADS threads: V = 0 ntt_inv_cl (clusters of CL), V = 1 ntt_inv_clr (twiddles
// preloaded), V = 2 ntt_inv_gs (no clusters, global exchange, GS_THREADS).
template <int V>
__device__ __forceinline__ void ntt_inv_entry(
    const u64* __restrict__ in, u64* __restrict__ out, const Prime* __restrict__ primes,
    const WP* __restrict__ twi, const Post* __restrict__ post, uint32_t prime_off, u64 in_ys,
    u64 in_zs, u64 out_ys, u64 out_zs, unsigned* sync_ctr = nullptr) {
    CL_SHARED(s);
    const uint32_t y = blockIdx.y, z = blockIdx.z;
    const uint32_t pid = prime_off + y;
    const u64 q = primes[pid].q;
    const u64* src = in + z * in_zs + y * in_ys;
    u64* dst = out + z * out_zs + y * out_ys;
    if constexpr (V < 2) {
        const WP pw = post[pid].s;
        auto load4 = [&](uint32_t pos, u64 (&x)[4]) { ld4(src + pos, x); };
        auto store = [&](uint32_t pos, u64 x) { dst[pos] = shoup(x, pw.w, pw.wp, q); };
        cl_inv_ntt<V == 1>(s, twi + (u64)pid * NN, q, load4, store);
    } else {
        auto loadp = [&](const uint32_t(&pos)[4], u64(&x)[8]) {
#pragma unroll
            for (int i = 0; i < 4; i++) ld2sh(src + pos[i], x[2 * i], x[2 * i + 1]);
        };
        auto store = [&](uint32_t pos, u64 x) { dst[pos] = x; };
        gs_inv_ntt_q(s, twi + (u64)pid * NN, q, loadp, store, dst,
                     sync_ctr + 2 * (z * gridDim.y + y), post[pid]);
    }
}

#define NTT_INV_PARAMS                                                                       \
    const u64 *__restrict__ in, u64 *__restrict__ out, const Prime *__restrict__ primes,     \
        const WP *__restrict__ twi, const Post *__restrict__ post, uint32_t prime_off, u64 in_ys, \
        u64 in_zs, u64 out_ys, u64 out_zs
#define NTT_INV_ARGS in, out, primes, twi, post, prime_off, in_ys, in_zs, out_ys, out_zs

CL_KERNEL ntt_inv_cl(NTT_INV_PARAMS) { ntt_inv_entry<0>(NTT_INV_ARGS); }
CL_KERNEL1 ntt_inv_clr(NTT_INV_PARAMS) { ntt_inv_entry<1>(NTT_INV_ARGS); }
// Without clusters (gs_inv_ntt), as ntt_fwd_gs (the row results go through the output limb);
// GS_THREADS threads.
GS_KERNEL ntt_inv_gs(NTT_INV_PARAMS, unsigned* sync_ctr) {
    grid_dep_wait();
    ntt_inv_entry<2>(NTT_INV_ARGS, sync_ctr);
}

// The NTT operations on a two-component value (a ciphertext) by paired blocks: 2 CL blocks per
// prime, block k holding lines 8k + [0, 8) of component 0 as its tile lines 0-7 and of
// component 1 as tile lines 8-15 (columns in the column phase, rows in the row phase), so a
// block's row-phase twiddles are those of 8 rows, each read for both components (half the
// twiddle lines of ntt_fwd_gs / ntt_inv_gs per block). Grid (2 CL, limbs, 1), GS_THREADS
// threads, cooperative. Launched with GS_THREADS / 2 threads, a block is group 0 alone: one
// component over 2 CL blocks per limb (twice the blocks of ntt_fwd_gs / ntt_inv_gs), no gate. Input canonical (the engine's values), output canonical; dense
// layout: limb y of component z at z * zs + y * ys. xch: the stream's exchange scratch, 2 N
// words per limb row (see GP_TAGS), zeroed before the stream's first launch.
// Each component is a pipeline of its own (decision 0503, "Components in turn"): threads
// 0-127 (group 0) work on component 0, threads 128-255 (group 1) on component 1, each group
// meeting only itself in between rounds (named barriers 1 and 2, gsync) and the same group of
// the prime's other blocks at its component's limb barrier (counter sync_ctr + 2y + 1 for
// component 0, sync_ctr + 2 (y + GP_CTR2) + 1 for component 1: odd words, which the *_gs
// kernels leave alone; each a multiple of 2 CL between launches). The groups exchange their
// first phase's words through the stream's exchange scratch xch, tagged, and their limb barrier
// has no fence (decision 0514: gp_xch, pair_sync below). Group 1 loads its first
// phase's words at once but starts its rounds only when group 0 has issued its first phase's
// stores (the forward) or finished its first phase's second round (the inverse; run 163) (the
// gate, named barrier 3: gate_open / gate_wait), so that component 0's limb
// barrier (its stores reaching L2, the counter, the wait) runs while component 1
// computes its first phase, and component 0's second phase while component 1 waits for its
// barrier: one component's latency hidden behind the other's arithmetic (run 96: 0.5 us less
// per forward NTT than both components' rounds side by side, run 97: 0.4-0.5 us per inverse).
// The first phase's tile is s[0, CL_WORDS), the second's s[CL_WORDS, 2 CL_WORDS): one group may
// be in its second phase while the other is still in its first.
#define GP_BLOCKS (2 * CL)
// Component 1's counter of prime y is word 2 (y + GP_CTR2) + 1 (the engine's stream state has
// 2 SYNC_SLOTS = 512 counter words and runs the paired kernels for at most GP_CTR2 limbs).
#define GP_CTR2 128
__device__ __forceinline__ unsigned pair_target(const unsigned* ctr) {
    return (ld_relaxed(ctr) & ~(unsigned)(GP_BLOCKS - 1)) + GP_BLOCKS;
}
// The exchange (decision 0514). A group's first phase writes its words not into the output but
// into the stream's exchange scratch, region (y, c) = xch + (2y + c) N for the counter of limb
// row y, component c (every launch that counts on that counter writes all N words of the
// region, and nothing else writes it; the engine zeroes the scratch with the counters), each
// word as one relaxed 64-bit store under the launch's tag gp_tag(target) in bits 60-63
// (A::xput_fwd / xput_inv). The second phase reads its words with relaxed loads and takes a
// word only under its launch's tag, loading it again until it is (xch_take). So the words need
// no fence before the counter: a reader never takes a word before its store has reached it,
// whatever the order the stores reach L2 in. A region's words hold tag 0 (zeroed) or the tag of
// the previous launch on its counter: targets advance by GP_BLOCKS per launch, so consecutive
// launches' tags (1 + target / GP_BLOCKS mod GP_TAGS) differ, also where the 32-bit counter
// wraps (2^28 = 2 mod 14). The output, which may be a recycled buffer holding any words, is
// only written, by the second phase. The barrier still orders the second phase's writes of
// the output after every group's first-phase reads of the input (in place, in == out): a
// group counts only after its first-phase loads have returned (their words are stored before
// the group's barrier).
#define GP_TAGS 14
__device__ __forceinline__ unsigned gp_tag(unsigned target) {
    return 1u + (target / GP_BLOCKS) % GP_TAGS;
}
// A thread's eight exchange words x, loaded from at(e), under tag tg: all eight loaded, then
// checked at once (run 219: quicker than a check per word); while any is not yet under tg,
// every such word is loaded again, all of them in flight together (run 227: -0.1 to -0.3 us per
// forward launch against re-polling one word at a time); then untagged by A.
template <class A, class At>
__device__ __forceinline__ void xch_take(u64 (&x)[8], At at, unsigned tg) {
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = ld_rlx64(at(e));
    bool ok = true;
#pragma unroll
    for (int e = 0; e < 8; e++) ok &= (unsigned)(x[e] >> 60) == tg;
    while (!ok) {
#pragma unroll
        for (int e = 0; e < 8; e++)
            if ((unsigned)(x[e] >> 60) != tg) x[e] = ld_rlx64(at(e));
        ok = true;
#pragma unroll
        for (int e = 0; e < 8; e++) ok &= (unsigned)(x[e] >> 60) == tg;
    }
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = A::xget(x[e]);
}
#ifndef FHE_EMU
// Group g's barrier (named barrier 1 + g, its 128 threads).
__device__ __forceinline__ void gsync(uint32_t g) {
    if (g == 0) {
        asm volatile("bar.sync 1, 128;" ::: "memory");
    } else {
        asm volatile("bar.sync 2, 128;" ::: "memory");
    }
}
// The gate: group 0 arrives without waiting, group 1 waits until all of group 0 has arrived.
__device__ __forceinline__ void gate_open() { asm volatile("bar.arrive 3, 256;" ::: "memory"); }
__device__ __forceinline__ void gate_wait() { asm volatile("bar.sync 3, 256;" ::: "memory"); }
#endif
// Tile lines of a paired block: tile line l = line 8k + l % 8 of the component that group
// l / 8 works on (gp_role), coff words after the limb's start.
struct PairLines {
    uint32_t k;
    u64 coff;  // the group's component: its offset from the limb (c * zs)
    __device__ __forceinline__ uint32_t row(uint32_t l) const { return 8 * k + (l & 7); }
    __device__ __forceinline__ uint32_t roff(uint32_t l) const {
        return (uint32_t)coff + row(l) * SUB;
    }
    __device__ __forceinline__ uint32_t col(uint32_t l) const {
        return (uint32_t)coff + 8 * k + (l & 7);
    }
    // The same line in the group's exchange region (no component offset).
    __device__ __forceinline__ uint32_t xrow(uint32_t l) const { return row(l) * SUB; }
    __device__ __forceinline__ uint32_t xcol(uint32_t l) const { return 8 * k + (l & 7); }
};
// The paired kernels' column tile word of (tile line c, index a): line c ^ 8 in the rows a
// where bit 0 of a ^ (a >> 1) is set, so that every column round's warp access (8 lines of one
// component x 4 values of a) spans all banks.
__device__ __forceinline__ uint32_t gp_cw(uint32_t c, uint32_t a) {
    return a * CL_LINES + (c ^ (((a ^ (a >> 1)) & 1u) << 3));
}
// Thread roles of a paired block: group g = component g; in a column round tile line
// 8g + t % 8 and index bits hi = t / 8 (0..15); in the rows' first and last rounds tile row
// tid / 16 (of component g) and lo = tid % 16; in the rows' middle round tile row
// 8g + t % 8 and (ah, b0) from t / 8.
struct PairThread {
    uint32_t tid, g, t;
    __device__ __forceinline__ PairThread() : tid(threadIdx.x), g(tid >> 7), t(tid & 127) {}
    __device__ __forceinline__ uint32_t cline() const { return 8 * g + (t & 7); }
    __device__ __forceinline__ uint32_t chi() const { return t >> 3; }
};
// Group g's limb barrier: its 2 CL groups (one per block of the prime) meet on ctr (as
// limb_sync, for 128 threads), without the fence and with a relaxed wait: the exchange words
// are tagged instead (decision 0514; the fence cost ~0.5 us per launch, run 217), and an
// acquire would end in CCTL.IVALL, dropping the SM's L1 and with it the row twiddles the
// block's other group (and the SM's other blocks) loaded for the second phase (run 222;
// ~0.05-0.1 us per launch, run 223).
__device__ __forceinline__ void pair_sync(const PairThread& th, unsigned* ctr, unsigned target) {
    gsync(th.g);
    if (th.t == 0) {
        atomicAdd(ctr, 1u);
        while ((int)(ld_relaxed(ctr) - target) < 0) {
        }
    }
    gsync(th.g);
}
__device__ __forceinline__ unsigned* pair_ctr(unsigned* sync_ctr, uint32_t y, uint32_t g) {
    return sync_ctr + (g == 0 ? 2 * y + 1 : 2 * (y + GP_CTR2) + 1);
}
// Middle radix-8 round of a paired column tile (gs_mid_round's words with gp_cw).
template <bool FWD, unsigned M = 7, class A = Loose>
__device__ __forceinline__ void gp_col_mid(u64* s, uint32_t line, uint32_t ah, uint32_t b0,
                                           const WP* tw, u64 q) {
    u64 x[8];
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = s[gp_cw(line, ah * 16 + 2 * e + b0)];
    if constexpr (FWD) {
        fwd8<A, M>(x, tw7(tw, 8 + ah), q);
    } else {
        inv8<A>(x, tw7(tw, 8 + ah), q);
    }
#pragma unroll
    for (int e = 0; e < 8; e++) s[gp_cw(line, ah * 16 + 2 * e + b0)] = x[e];
}
// Which prime (limb row y) and component c a paired block's group g works on. The two limb rows
// around the wide prime (q >= F64_Q: integer butterflies) are transposed: group 0 of a block in
// those rows takes the wide prime, group 1 its neighbour (binary64), each in component blockIdx.y
// (the grid rows are rotated below: these rows are grid rows 0 and 1). The wide prime's 32 groups
// then sit one per block beside a binary64 group instead of two per block in 16 blocks: a launch
// lasts as long as its slowest block (decision 0511). The engine's chains end with the 60-bit base
// prime (rows L - 2, L - 1); a chain that starts with a wide prime (ntt_bench's) transposes rows
// 0, 1. Each (y, c) keeps its 16 groups, all in one limb row of blocks. The grid's rows are
// rotated so that the transposed rows (the slowest blocks) are grid rows 0 and 1 whatever the
// chain: the hardware dispatches a grid's blocks in index order, and the blocks that finish last
// should start first (with the wide prime last, rows L - 2 and L - 1 were dispatched last;
// rotated, the engine's launches took ~0.1-0.2 us less back to back, runs 160 and 162).
struct GpRole {
    uint32_t y, c;
};
// Role r's exchange region (see GP_TAGS).
__device__ __forceinline__ u64* gp_xch(u64* xch, const GpRole& r) {
    return xch + (2 * (u64)r.y + r.c) * NN;
}
__device__ __forceinline__ GpRole gp_role(uint32_t g, const Prime* __restrict__ primes,
                                          uint32_t prime_off) {
    const uint32_t L = gridDim.y;
    if (L < 2 || blockDim.x != GS_THREADS) return GpRole{blockIdx.y, g};
    const bool first = primes[prime_off].q >= F64_Q;
    const uint32_t lo = first ? 0 : L - 2;
    const uint32_t y = (blockIdx.y + lo) % L;  // grid rows 0, 1 = limb rows lo, lo + 1
    if (blockIdx.y >= 2) return GpRole{y, g};
    const uint32_t wide = first ? 0 : L - 1, other = first ? 1 : L - 2;
    return GpRole{g == 0 ? wide : other, blockIdx.y};
}
// The paired kernels' start: the thread's group, the group's role, its prime id and modulus
// (the modulus chooses the group's butterflies: LooseF below F64_Q, else the kernel's W, Loose
// or LooseN).
struct GpGroup {
    PairThread th;
    GpRole r;
    uint32_t pid;
    u64 q;
    __device__ __forceinline__ GpGroup(const Prime* __restrict__ primes, uint32_t prime_off)
        : th(), r(gp_role(th.g, primes, prime_off)), pid(prime_off + r.y), q(primes[pid].q) {}
};
// The forward paired NTT of group G's lines (its role G.r), by A's butterflies.
template <class A>
__device__ __forceinline__ void gp_fwd(u64* s, const GpGroup& G, const u64* __restrict__ in,
                                       u64* __restrict__ out, const WP* __restrict__ tw, u64 ys,
                                       u64 zs, unsigned* sync_ctr, u64* xch) {
    const PairThread& th = G.th;
    const GpRole r = G.r;
    const u64 q = G.q;
    u64* sr = s + CL_WORDS;
    const PairLines lines{blockIdx.x, r.c * zs};
    unsigned* ctr = pair_ctr(sync_ctr, r.y, r.c);
    const unsigned target = pair_target(ctr), tg = gp_tag(target);
    const u64* base = in + r.y * ys;
    u64* limb = out + r.y * ys;
    u64* xl = gp_xch(xch, r);
    {
        // Column phase of the group's component (gs_fwd_cols_at's rounds): line lo, index
        // a = hi + 16e.
        const uint32_t lo = th.cline(), hi = th.chi(), col = lines.col(lo);
        u64 x[8];
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = A::in(base[(hi + 16 * e) * SUB + col]);
        if (th.g == 1) gate_wait();
        fwd8<A, 4>(x, tw7(tw, 1), q);
#pragma unroll
        for (int e = 0; e < 8; e++) s[gp_cw(lo, hi + 16 * e)] = x[e];
        gsync(th.g);
        gp_col_mid<true, 2, A>(s, lo, hi >> 1, hi & 1, tw, q);
        gsync(th.g);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t a = 2 * (hi + 16 * i);
            u64 x0 = s[gp_cw(lo, a)], x1 = s[gp_cw(lo, a + 1)];
            A::template ct<true>(x0, x1, ldwp(tw + 64 + a / 2), q);
            st_rlx64(xl + a * SUB + lines.xcol(lo), A::xput_fwd(x0, q, tg));
            st_rlx64(xl + (a + 1) * SUB + lines.xcol(lo), A::xput_fwd(x1, q, tg));
        }
        if (th.g == 0 && blockDim.x == GS_THREADS) gate_open();  // no group 1: no gate
    }
    pair_sync(th, ctr, target);  // every group has read its input (in place: see GP_TAGS)
    const uint32_t lo = th.tid % 16, hi = th.tid / 16;
    {
        // Row phase, round 1: b = lo + 16e of tile row hi, from the exchange.
        u64 x[8];
        const u64* xr = xl + lines.xrow(hi) + lo;
        xch_take<A>(x, [&](int e) { return xr + 16 * e; }, tg);
        fwd8<A, 2>(x, tw7(tw, SUB + lines.row(hi)), q);
#pragma unroll
        for (int e = 0; e < 8; e++) sr[gs_rw(hi, lo + 16 * e)] = x[e];
    }
    gsync(th.g);
    {
        const uint32_t line = th.cline(), u = th.chi();
        gs_mid_round<true, true, A, 5>(sr, line, u >> 1, u & 1, tw,
                                       (SUB + lines.row(line)) * 8 + (u >> 1), q);
    }
    gsync(th.g);
    u64* dst = limb + r.c * zs;
    gs_fwd_rows_last<A>(sr, tw, q, lines.row(hi),
                        [&](uint32_t pos, u64 x0, u64 x1) { st2(dst + pos, x0, x1); });
}
// The paired forward kernels (after their grid_dep_wait): the binary64 groups by LooseF, the
// others by W (Loose: ntt_fwd_gp; LooseN: ntt_fwd_gpn, for launches whose every prime >= F64_Q
// is near60).
#define GP_FWD_PARAMS                                                                        \
    const u64 *__restrict__ in, u64 *__restrict__ out, const Prime *__restrict__ primes,     \
        const WP *__restrict__ twf, uint32_t prime_off, u64 ys, u64 zs, unsigned *sync_ctr,  \
        u64 *xch
template <class W>
__device__ __forceinline__ void gp_fwd_entry(u64* s, GP_FWD_PARAMS) {
    const GpGroup G(primes, prime_off);
    const WP* tw = twf + (u64)G.pid * NN;
    if (G.q < F64_Q) {
        gp_fwd<LooseF>(s, G, in, out, tw, ys, zs, sync_ctr, xch);
    } else {
        gp_fwd<W>(s, G, in, out, tw, ys, zs, sync_ctr, xch);
    }
}
GS_KERNEL ntt_fwd_gp(GP_FWD_PARAMS) {
    CL_SHARED(s);
    grid_dep_wait();
    gp_fwd_entry<Loose>(s, in, out, primes, twf, prime_off, ys, zs, sync_ctr, xch);
}
GS_KERNEL ntt_fwd_gpn(GP_FWD_PARAMS) {
    CL_SHARED(s);
    grid_dep_wait();
    gp_fwd_entry<LooseN>(s, in, out, primes, twf, prime_off, ys, zs, sync_ctr, xch);
}
// The inverse of group G's lines (its role G.r) by paired blocks (as gp_fwd, rows first),
// scaled by c (inv8_last), by A's butterflies.
template <class A>
__device__ __forceinline__ void gp_inv(u64* s, const GpGroup& G, const u64* __restrict__ in,
                                       u64* __restrict__ out, const WP* __restrict__ tw,
                                       const Post& c, u64 ys, u64 zs, unsigned* sync_ctr,
                                       u64* xch) {
    const PairThread& th = G.th;
    const GpRole r = G.r;
    const u64 q = G.q;
    u64* sr = s + CL_WORDS;
    const PairLines lines{blockIdx.x, r.c * zs};
    unsigned* ctr = pair_ctr(sync_ctr, r.y, r.c);
    const unsigned target = pair_target(ctr), tg = gp_tag(target);
    const u64* src = in + r.y * ys;
    u64* limb = out + r.y * ys;
    u64* xl = gp_xch(xch, r);
    {
        // Row phase (gs_inv_ntt's rounds), round 1: pairs b = 2 (lo + 16i) of tile row hi.
        const uint32_t lo = th.tid % 16, hi = th.tid / 16, row = lines.row(hi);
        u64 x[8];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            ld2sh(src + lines.roff(hi) + 2 * (lo + 16 * i), x[2 * i], x[2 * i + 1]);
            x[2 * i] = A::in(x[2 * i]);
            x[2 * i + 1] = A::in(x[2 * i + 1]);
        }
        if (th.g == 1) gate_wait();
        inv_rows_first<A>(sr, x, tw, row, lo, hi, q);
        gsync(th.g);
        {
            const uint32_t line = th.cline(), u = th.chi();
            gs_mid_round<false, true, A>(sr, line, u >> 1, u & 1, tw,
                                         (SUB + lines.row(line)) * 8 + (u >> 1), q);
        }
        gsync(th.g);
        // The gate opens here, before the first phase's last round, not after its stores as in
        // gp_fwd: run 163 (harness) measured the inverse 0.3 us quicker per launch this way,
        // the forward 0.05-0.1 us slower (and 0.35 slower a round earlier).
        if (th.g == 0 && blockDim.x == GS_THREADS) gate_open();  // no group 1: no gate
        // Round 3: b = lo + 16e of row hi, into the exchange.
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = sr[gs_rw(hi, lo + 16 * e)];
        inv8<A>(x, tw7(tw, SUB + row), q);
        u64* xr = xl + lines.xrow(hi) + lo;
#pragma unroll
        for (int e = 0; e < 8; e++) st_rlx64(xr + 16 * e, A::xput_inv(x[e], q, tg));
    }
    pair_sync(th, ctr, target);  // every group has read its input (in place: see GP_TAGS)
    {
        // Column phase: line lo, pairs a = 2 (hi + 16i), then a = hi + 16e; x[2i + j] is the
        // exchange's row 2 (hi + 16i) + j.
        const uint32_t lo = th.cline(), hi = th.chi(), col = lines.col(lo);
        const u64* xc = xl + lines.xcol(lo);
        const auto at = [&](int e) { return xc + (2 * (hi + 16 * (e / 2)) + e % 2) * SUB; };
        u64 x[8];
        xch_take<A>(x, at, tg);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t a = 2 * (hi + 16 * i);
            u64 x0 = x[2 * i], x1 = x[2 * i + 1];
            A::gs(x0, x1, ldwp(tw + 64 + a / 2), q);
            s[gp_cw(lo, a)] = x0;
            s[gp_cw(lo, a + 1)] = x1;
        }
        gsync(th.g);
        gp_col_mid<false, 7, A>(s, lo, hi >> 1, hi & 1, tw, q);
        gsync(th.g);
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = s[gp_cw(lo, hi + 16 * e)];
        inv8_last<A>(x, tw, c, q);
#pragma unroll
        for (int e = 0; e < 8; e++) limb[(hi + 16 * e) * SUB + col] = x[e];
    }
}
// The paired inverse kernels, as the forward ones (ntt_inv_gp: Loose, ntt_inv_gpn: LooseN).
#define GP_INV_PARAMS                                                                        \
    const u64 *__restrict__ in, u64 *__restrict__ out, const Prime *__restrict__ primes,     \
        const WP *__restrict__ twi, const Post *__restrict__ post, uint32_t prime_off, u64 ys, \
        u64 zs, unsigned *sync_ctr, u64 *xch
template <class W>
__device__ __forceinline__ void gp_inv_entry(u64* s, GP_INV_PARAMS) {
    const GpGroup G(primes, prime_off);
    const WP* tw = twi + (u64)G.pid * NN;
    if (G.q < F64_Q) {
        gp_inv<LooseF>(s, G, in, out, tw, post[G.pid], ys, zs, sync_ctr, xch);
    } else {
        gp_inv<W>(s, G, in, out, tw, post[G.pid], ys, zs, sync_ctr, xch);
    }
}
GS_KERNEL ntt_inv_gp(GP_INV_PARAMS) {
    CL_SHARED(s);
    grid_dep_wait();
    gp_inv_entry<Loose>(s, in, out, primes, twi, post, prime_off, ys, zs, sync_ctr, xch);
}
GS_KERNEL ntt_inv_gpn(GP_INV_PARAMS) {
    CL_SHARED(s);
    grid_dep_wait();
    gp_inv_entry<LooseN>(s, in, out, primes, twi, post, prime_off, ys, zs, sync_ctr, xch);
}

// The key inner product of one target row at M word pairs (pos[i], pos[i] + 1):
// x = sum_d ext[d] * key[d] (+ P * add), canonical. e0 / k0: digit 0's ext and key rows (digit
// d at + d * ext_ds / + d * key_ds); add (nullptr = none): the row added times P, pm = P mod q
// as a Montgomery factor. Every pair of every digit is loaded before its products (2M 16-byte
// loads in flight per digit). The products (each < q^2, canonical operands) are summed exactly
// in 128 bits and reduced once per 8 digits: 8 q^2 < q * 2^64 for q < 2^61, which mont_reduce
// needs. The sum of the reductions is sum_d ext * key * 2^-64 mod q, as a Montgomery product
// per digit would give; mont(v, P mod q) = v * P * 2^-64 carries the same factor.
// epos[i] / bit i of eswap: where ext's pair i is read (pos[i] unless hoisted: the pair at
// epos[i], its words swapped when the bit is set; ks_inner_gh).
template <int M>
__device__ __forceinline__ void ks_sum(const u64* e0, const u64* k0, u64 ext_ds, u64 key_ds,
                                       uint32_t digits, const u64* add, u64 pm, const Prime& p,
                                       const uint32_t (&pos)[M], u64 (&x)[2 * M],
                                       const uint32_t (&epos)[M], uint32_t eswap) {
    u64 a[2 * M];
#pragma unroll
    for (int i = 0; i < 2 * M; i++) a[i] = 0;
    for (uint32_t d0 = 0; d0 < digits; d0 += 8) {
        const uint32_t d1 = digits - d0 < 8 ? digits : d0 + 8;
        u64 lo[2 * M], hi[2 * M];
#pragma unroll
        for (int i = 0; i < 2 * M; i++) lo[i] = hi[i] = 0;
#pragma unroll 1
        for (uint32_t d = d0; d < d1; d++) {
            u64 e[2 * M], k[2 * M];
#pragma unroll
            for (int i = 0; i < M; i++) {
                ld2sh(e0 + d * ext_ds + epos[i], e[2 * i], e[2 * i + 1]);
                ld2sh(k0 + d * key_ds + pos[i], k[2 * i], k[2 * i + 1]);
                if ((eswap >> i) & 1) {
                    const u64 t = e[2 * i];
                    e[2 * i] = e[2 * i + 1];
                    e[2 * i + 1] = t;
                }
            }
#pragma unroll
            for (int i = 0; i < 2 * M; i++) mac128(lo[i], hi[i], e[i], k[i]);
        }
#pragma unroll
        for (int i = 0; i < 2 * M; i++) a[i] = addmod(a[i], mont_reduce(lo[i], hi[i], p), p.q);
    }
    if (add != nullptr) {
        u64 v[2 * M];
#pragma unroll
        for (int i = 0; i < M; i++) ld2sh(add + pos[i], v[2 * i], v[2 * i + 1]);
#pragma unroll
        for (int i = 0; i < 2 * M; i++) a[i] = addmod(a[i], mont(v[i], pm, p), p.q);
    }
#pragma unroll
    for (int i = 0; i < 2 * M; i++) x[i] = a[i];
}

// Key switching after ntt_fwd_cl's ModUp: acc[c][y] = INTT(sum_d ext[d][y] * key[d][c][pid]
// + P * addn[c][y]) * ks_post, one limb per (target row y, component c). ext: [digits][rows]
// [N] canonical NTT form; key row of digit d (prime id prime_off + d), component c, prime pid at
// key + (prime_off + d) * key_ds + c * key_cs + pid * N. addn (nullptr = none): canonical NTT
// rows of basis Q, row y of component c at addn + c * addn_cs + y * N, added times P (padd[pid]
// = P mod q_pid) to the Q rows, so that ks_moddown's division by P returns them unscaled:
// (P * a + x - x_P) * P^-1 = a + (x - x_P) * P^-1 (relinearize's d0, d1 need no inverse NTT).
// acc: [2][rows][N] canonical standard form (ks_moddown's input). Grid: (CL, rows, 2).
// ks_inner_cl: one cluster per limb, CL_THREADS threads, four words per thread per digit;
// ks_inner_gs: the *_gs inverse NTT (cooperative launch, GS_THREADS threads, the row results
// through acc, sync_ctr as for ntt_inv_gs), eight words per thread per digit.
#define KS_INNER_PARAMS                                                                       \
    const u64 *__restrict__ ext, const u64 *__restrict__ key, u64 *__restrict__ acc,          \
        const Prime *__restrict__ primes, const WP *__restrict__ twi,                         \
        const Post *__restrict__ post, uint32_t prime_off, uint32_t digits, uint32_t rows,    \
        u64 key_ds, u64 key_cs, const u64 *__restrict__ addn, u64 addn_cs,                    \
        const u64 *__restrict__ padd
// HOIST (ks_inner_gh): ext holds the digits' ModUp without sigma_g, read through sigma_g (g).
template <bool GS, bool HOIST = false>
__device__ __forceinline__ void ks_inner_entry(KS_INNER_PARAMS, unsigned* sync_ctr = nullptr,
                                               uint32_t g = 0) {
    const uint32_t y = blockIdx.y, c = blockIdx.z;
    const uint32_t pid = prime_off + y;
    const Prime p = primes[pid];
    const u64* e0 = ext + (u64)y * NN;
    const u64* k0 = key + (u64)prime_off * key_ds + c * key_cs + (u64)pid * NN;
    const u64 ext_ds = (u64)rows * NN;
    const bool adds = addn != nullptr && y < digits;
    const u64* add = adds ? addn + c * addn_cs + (u64)y * NN : nullptr;
    const u64 pm = adds ? padd[pid] : 0;
    u64* dst = acc + ((u64)c * rows + y) * NN;
    CL_SHARED(s);
    if constexpr (GS) {
        auto loadp = [&](const uint32_t(&pos)[4], u64(&x)[8]) {
            if constexpr (HOIST) {
                uint32_t ep[4], sw = 0;
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    const uint32_t src = aut_src(pos[i], g);
                    ep[i] = src & ~1u;
                    sw |= (src & 1u) << i;
                }
                ks_sum<4>(e0, k0, ext_ds, key_ds, digits, add, pm, p, pos, x, ep, sw);
            } else {
                ks_sum<4>(e0, k0, ext_ds, key_ds, digits, add, pm, p, pos, x, pos, 0);
            }
        };
        auto store = [&](uint32_t pos, u64 x) { dst[pos] = x; };
        // The inner product itself stays in integers (its words are canonical when the NTT
        // takes them).
        gs_inv_ntt_q<true>(s, twi + (u64)pid * NN, p.q, loadp, store, dst,
                           sync_ctr + 2 * (c * rows + y), post[pid]);
    } else {
        const WP pw = post[pid].s;
        auto store = [&](uint32_t pos, u64 x) { dst[pos] = shoup(x, pw.w, pw.wp, p.q); };
        auto load4 = [&](uint32_t pos, u64 (&x)[4]) {
            const uint32_t pp[2] = {pos, pos + 2};
            ks_sum<2>(e0, k0, ext_ds, key_ds, digits, add, pm, p, pp, x, pp, 0);
        };
        cl_inv_ntt<false>(s, twi + (u64)pid * NN, p.q, load4, store);
    }
}
#define KS_INNER_ARGS                                                                         \
    ext, key, acc, primes, twi, post, prime_off, digits, rows, key_ds, key_cs, addn, addn_cs, padd
CL_KERNEL ks_inner_cl(KS_INNER_PARAMS) { ks_inner_entry<false>(KS_INNER_ARGS); }
GS_KERNEL2 ks_inner_gs(KS_INNER_PARAMS, unsigned* sync_ctr) {
    grid_dep_wait();
    ks_inner_entry<true>(KS_INNER_ARGS, sync_ctr);
}
// ks_inner_gs for a hoisted rotation (decision 0509): ext holds the ModUp of c1 without
// sigma_g, shared by every key of the call; each pair is read through sigma_g (aut_src) in
// place of a pass of aut_ntt over the extended digits.
GS_KERNEL2 ks_inner_gh(KS_INNER_PARAMS, uint32_t g, unsigned* sync_ctr) {
    grid_dep_wait();
    ks_inner_entry<true, true>(KS_INNER_ARGS, sync_ctr, g);
}
