// Prototype: one-launch NTT with 16 words per thread (radix-16 + radix-8 rounds in registers,
// one shared-memory exchange per phase), 128 threads per block, 8 blocks per limb, global
// exchange between the phases as ntt_fwd_gs. Include after ckks_v.cu.
#pragma once

#define R16_THREADS 128
#ifndef MARK
#define MARK(i)
#endif

// Row tile word (r, b): b's low 4 bits XOR s(r), s(r) = r with bit 3 ^= bit 0.
__device__ __forceinline__ uint32_t r16_rw(uint32_t r, uint32_t b) {
    return r * SUB + (b ^ (r ^ ((r & 1u) << 3)));
}
__device__ __forceinline__ uint32_t r16_cw(uint32_t c, uint32_t a) { return a * 16 + c; }

template <class Load, class Store2>
__device__ __forceinline__ void r16_fwd(u64* s, const WP* tw, u64 q, Load load, Store2 store2,
                                        u64* tdst, unsigned* ctr) {
    const uint32_t tid = threadIdx.x, k = blockIdx.x;
    unsigned target = 0;
    if (tid == 0) target = limb_target(ctr);
    MARK(0);
    {
        const uint32_t c = tid % 16, al = tid / 16, col = k * 16 + c;
        u64 x[16];
        WP t1[15], t2[2][7];
#pragma unroll
        for (int i = 0; i < 15; i++) t1[i] = ldwp(tw + 1 + i);
#pragma unroll
        for (int gi = 0; gi < 2; gi++) {
            const uint32_t ah = tid / 16 + 8 * gi;
            t2[gi][0] = ldwp(tw + 16 + ah);
            t2[gi][1] = ldwp(tw + 32 + ah * 2);
            t2[gi][2] = ldwp(tw + 32 + ah * 2 + 1);
#pragma unroll
            for (int i = 0; i < 4; i++) t2[gi][3 + i] = ldwp(tw + 64 + ah * 4 + i);
        }
#pragma unroll
        for (int e = 0; e < 16; e++) x[e] = load((al + 8 * e) * SUB + col);
#pragma unroll
        for (int st = 0; st < 4; st++) {
            const int h = 8 >> st;
#pragma unroll
            for (int e = 0; e < 16; e++)
                if ((e & h) == 0) ct_bfly(x[e], x[e + h], t1[(1 << st) - 1 + (e >> (4 - st))], q);
        }
#pragma unroll
        for (int e = 0; e < 16; e++) s[r16_cw(c, al + 8 * e)] = x[e];
        __syncthreads();
        const uint32_t g = tid / 16;
#pragma unroll
        for (int gi = 0; gi < 2; gi++) {
            const uint32_t ah = g + 8 * gi;
            u64 y[8];
#pragma unroll
            for (int e = 0; e < 8; e++) y[e] = s[r16_cw(c, ah * 8 + e)];
#pragma unroll
            for (int e = 0; e < 4; e++) ct_bfly(y[e], y[e + 4], t2[gi][0], q);
#pragma unroll
            for (int e = 0; e < 8; e++)
                if ((e & 2) == 0) ct_bfly(y[e], y[e + 2], t2[gi][1 + (e >> 2)], q);
#pragma unroll
            for (int e = 0; e < 8; e += 2) ct_bfly(y[e], y[e + 1], t2[gi][3 + (e >> 1)], q);
#pragma unroll
            for (int e = 0; e < 8; e++) tdst[(ah * 8 + e) * SUB + col] = y[e];
        }
    }
    {
        const uint32_t bl = tid % 8, r = tid / 8, row = k * 16 + r;
        const uint32_t r2 = tid % 16, g = tid / 16, row2 = k * 16 + r2;
        WP t1[15], t2[2][7];
#pragma unroll
        for (int i = 0; i < 15; i++) {
            const int st = i < 1 ? 0 : i < 3 ? 1 : i < 7 ? 2 : 3, o = i + 1 - (1 << st);
            t1[i] = ldwp(tw + (128u << st) + (row << st) + o);
        }
#pragma unroll
        for (int gi = 0; gi < 2; gi++) {
            const uint32_t bh = g + 8 * gi;
            t2[gi][0] = ldwp(tw + 2048 + row2 * 16 + bh);
            t2[gi][1] = ldwp(tw + 4096 + row2 * 32 + bh * 2);
            t2[gi][2] = ldwp(tw + 4096 + row2 * 32 + bh * 2 + 1);
#pragma unroll
            for (int i = 0; i < 4; i++) t2[gi][3 + i] = ldwp(tw + 8192 + row2 * 64 + bh * 4 + i);
        }
        MARK(1);
        limb_sync(ctr, target);
        MARK(2);
        u64 x[16];
#pragma unroll
        for (int e = 0; e < 16; e++) x[e] = ldcg(tdst + row * SUB + bl + 8 * e);
#pragma unroll
        for (int st = 0; st < 4; st++) {
            const int h = 8 >> st;
#pragma unroll
            for (int e = 0; e < 16; e++)
                if ((e & h) == 0) ct_bfly(x[e], x[e + h], t1[(1 << st) - 1 + (e >> (4 - st))], q);
        }
#pragma unroll
        for (int e = 0; e < 16; e++) s[r16_rw(r, bl + 8 * e)] = x[e];
        __syncthreads();
#pragma unroll
        for (int gi = 0; gi < 2; gi++) {
            const uint32_t bh = g + 8 * gi;
            u64 y[8];
#pragma unroll
            for (int e = 0; e < 8; e++) y[e] = s[r16_rw(r2, bh * 8 + e)];
#pragma unroll
            for (int e = 0; e < 4; e++) ct_bfly(y[e], y[e + 4], t2[gi][0], q);
#pragma unroll
            for (int e = 0; e < 8; e++)
                if ((e & 2) == 0) ct_bfly(y[e], y[e + 2], t2[gi][1 + (e >> 2)], q);
#pragma unroll
            for (int e = 0; e < 8; e += 2) {
                ct_bfly(y[e], y[e + 1], t2[gi][3 + (e >> 1)], q);
                u64 a = csub(y[e], 2 * q), b = csub(y[e + 1], 2 * q);
                store2(row2 * SUB + bh * 8 + e, csub(a, q), csub(b, q));
            }
        }
    }
    MARK(3);
}

template <class Load4, class Store>
__device__ __forceinline__ void r16_inv(u64* s, const WP* tw, u64 q, Load4 load4, Store store,
                                        u64* tdst, unsigned* ctr) {
    const uint32_t tid = threadIdx.x, k = blockIdx.x;
    unsigned target = 0;
    if (tid == 0) target = limb_target(ctr);
    {
        const uint32_t r2 = tid % 16, g = tid / 16, row2 = k * 16 + r2;
        const uint32_t bl = tid % 8, r = tid / 8, row = k * 16 + r;
        // t2[gi]: half-span 1 (4), 2 (2), 4 (1) of group gi; t1: half-spans 8h, h = 1, 2, 4, 8
        // (8, 4, 2, 1 twiddles of the row).
        WP t2[2][7], t1[15];
#pragma unroll
        for (int gi = 0; gi < 2; gi++) {
            const uint32_t bh = g + 8 * gi;
#pragma unroll
            for (int i = 0; i < 4; i++) t2[gi][i] = ldwp(tw + 8192 + row2 * 64 + bh * 4 + i);
            t2[gi][4] = ldwp(tw + 4096 + row2 * 32 + bh * 2);
            t2[gi][5] = ldwp(tw + 4096 + row2 * 32 + bh * 2 + 1);
            t2[gi][6] = ldwp(tw + 2048 + row2 * 16 + bh);
        }
#pragma unroll
        for (int i = 0; i < 15; i++) {
            const int st = i < 8 ? 0 : i < 12 ? 1 : i < 14 ? 2 : 3, o = i - (16 - (16 >> st));
            t1[i] = ldwp(tw + (1024u >> st) + (row << (3 - st)) + o);
        }
#pragma unroll
        for (int gi = 0; gi < 2; gi++) {
            const uint32_t bh = g + 8 * gi;
            u64 y[8], y4[4];
            load4(row2 * SUB + bh * 8, y4);
#pragma unroll
            for (int e = 0; e < 4; e++) y[e] = y4[e];
            load4(row2 * SUB + bh * 8 + 4, y4);
#pragma unroll
            for (int e = 0; e < 4; e++) y[e + 4] = y4[e];
#pragma unroll
            for (int e = 0; e < 8; e += 2) gs_bfly(y[e], y[e + 1], t2[gi][e >> 1], q);
#pragma unroll
            for (int e = 0; e < 8; e++)
                if ((e & 2) == 0) gs_bfly(y[e], y[e + 2], t2[gi][4 + (e >> 2)], q);
#pragma unroll
            for (int e = 0; e < 4; e++) gs_bfly(y[e], y[e + 4], t2[gi][6], q);
#pragma unroll
            for (int e = 0; e < 8; e++) s[r16_rw(r2, bh * 8 + e)] = y[e];
        }
        __syncthreads();
        u64 x[16];
#pragma unroll
        for (int e = 0; e < 16; e++) x[e] = s[r16_rw(r, bl + 8 * e)];
#pragma unroll
        for (int st = 0; st < 4; st++) {
            const int h = 1 << st;  // e-span; row half-span 8h
#pragma unroll
            for (int e = 0; e < 16; e++)
                if ((e & h) == 0) gs_bfly(x[e], x[e + h], t1[16 - (16 >> st) + (e >> (st + 1))], q);
        }
#pragma unroll
        for (int e = 0; e < 16; e++) tdst[row * SUB + bl + 8 * e] = x[e];
    }
    {
        const uint32_t c = tid % 16, g = tid / 16, col = k * 16 + c, al = tid / 16;
        WP t2[2][7], t1[15];
#pragma unroll
        for (int gi = 0; gi < 2; gi++) {
            const uint32_t ah = g + 8 * gi;
#pragma unroll
            for (int i = 0; i < 4; i++) t2[gi][i] = ldwp(tw + 64 + ah * 4 + i);
            t2[gi][4] = ldwp(tw + 32 + ah * 2);
            t2[gi][5] = ldwp(tw + 32 + ah * 2 + 1);
            t2[gi][6] = ldwp(tw + 16 + ah);
        }
#pragma unroll
        for (int i = 0; i < 15; i++) {
            const int st = i < 8 ? 0 : i < 12 ? 1 : i < 14 ? 2 : 3, o = i - (16 - (16 >> st));
            t1[i] = ldwp(tw + (8u >> st) + o);
        }
        limb_sync(ctr, target);
#pragma unroll
        for (int gi = 0; gi < 2; gi++) {
            const uint32_t ah = g + 8 * gi;
            u64 y[8];
#pragma unroll
            for (int e = 0; e < 8; e++) y[e] = ldcg(tdst + (ah * 8 + e) * SUB + col);
#pragma unroll
            for (int e = 0; e < 8; e += 2) gs_bfly(y[e], y[e + 1], t2[gi][e >> 1], q);
#pragma unroll
            for (int e = 0; e < 8; e++)
                if ((e & 2) == 0) gs_bfly(y[e], y[e + 2], t2[gi][4 + (e >> 2)], q);
#pragma unroll
            for (int e = 0; e < 4; e++) gs_bfly(y[e], y[e + 4], t2[gi][6], q);
#pragma unroll
            for (int e = 0; e < 8; e++) s[r16_cw(c, ah * 8 + e)] = y[e];
        }
        __syncthreads();
        u64 x[16];
#pragma unroll
        for (int e = 0; e < 16; e++) x[e] = s[r16_cw(c, al + 8 * e)];
#pragma unroll
        for (int st = 0; st < 4; st++) {
            const int h = 1 << st;
#pragma unroll
            for (int e = 0; e < 16; e++)
                if ((e & h) == 0) gs_bfly(x[e], x[e + h], t1[16 - (16 >> st) + (e >> (st + 1))], q);
        }
#pragma unroll
        for (int e = 0; e < 16; e++) store((al + 8 * e) * SUB + col, x[e]);
    }
}

extern "C" __global__ void __launch_bounds__(R16_THREADS, 1)
r16_fwd_gs(const u64* __restrict__ in, u64* __restrict__ out, const Prime* __restrict__ primes,
           const WP* __restrict__ twf, uint32_t prime_off, u64 ys, u64 zs, unsigned* sync_ctr) {
    __shared__ u64 s[2048];
    const uint32_t y = blockIdx.y, z = blockIdx.z, pid = prime_off + y;
    const u64 q = primes[pid].q;
    const u64* src = in + z * zs + y * ys;
    u64* dst = out + z * zs + y * ys;
    auto load = [&](uint32_t pos) -> u64 { return src[pos]; };
    auto store2 = [&](uint32_t pos, u64 a, u64 b) { st2(dst + pos, a, b); };
    r16_fwd(s, twf + (u64)pid * NN, q, load, store2, dst, sync_ctr + 2 * (z * gridDim.y + y));
}

extern "C" __global__ void __launch_bounds__(R16_THREADS, 1)
r16_inv_gs(const u64* __restrict__ in, u64* __restrict__ out, const Prime* __restrict__ primes,
           const WP* __restrict__ twi, const WP* __restrict__ post, uint32_t prime_off, u64 ys,
           u64 zs, unsigned* sync_ctr) {
    __shared__ u64 s[2048];
    const uint32_t y = blockIdx.y, z = blockIdx.z, pid = prime_off + y;
    const u64 q = primes[pid].q;
    const WP pw = post[pid];
    const u64* src = in + z * zs + y * ys;
    u64* dst = out + z * zs + y * ys;
    auto load4 = [&](uint32_t pos, u64 (&x)[4]) { ld4(src + pos, x); };
    auto store = [&](uint32_t pos, u64 x) { dst[pos] = shoup(x, pw.w, pw.wp, q); };
    r16_inv(s, twi + (u64)pid * NN, q, load4, store, dst, sync_ctr + 2 * (z * gridDim.y + y));
}

// ------------------------------------------------------------------------------------------
// r8: 8 words per thread, 256 threads; per phase a radix-8 round, a radix-8 round and a
// radix-2 round (two shared-memory exchanges).
#define R8_THREADS 256

// Row tile word (r, b): b's low 4 bits XOR f(r), f(r) = ((r & 7) << 1) | (r >> 3), so pairs
// (2i, 2i + 1) stay one aligned 16-byte unit (swapped when r >= 8).
__device__ __forceinline__ uint32_t r8_f(uint32_t r) { return ((r & 7u) << 1) | (r >> 3); }
__device__ __forceinline__ uint32_t r8_rw(uint32_t r, uint32_t b) { return r * SUB + (b ^ r8_f(r)); }

// The seven twiddles of a radix-8 round with base B: tw[B], tw[2B + i], tw[4B + i].
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
// Forward radix-8 round: e-spans 4, 2, 1.
__device__ __forceinline__ void fwd8(u64 (&x)[8], const Tw7& w, u64 q) {
#pragma unroll
    for (int e = 0; e < 4; e++) ct_bfly(x[e], x[e + 4], w.w0, q);
#pragma unroll
    for (int e = 0; e < 8; e++)
        if ((e & 2) == 0) ct_bfly(x[e], x[e + 2], w.w1[e >> 2], q);
#pragma unroll
    for (int e = 0; e < 8; e += 2) ct_bfly(x[e], x[e + 1], w.w2[e >> 1], q);
}
// Inverse radix-8 round: e-spans 1, 2, 4.
__device__ __forceinline__ void inv8(u64 (&x)[8], const Tw7& w, u64 q) {
#pragma unroll
    for (int e = 0; e < 8; e += 2) gs_bfly(x[e], x[e + 1], w.w2[e >> 1], q);
#pragma unroll
    for (int e = 0; e < 8; e++)
        if ((e & 2) == 0) gs_bfly(x[e], x[e + 2], w.w1[e >> 2], q);
#pragma unroll
    for (int e = 0; e < 4; e++) gs_bfly(x[e], x[e + 4], w.w0, q);
}

template <bool PRE, class Load, class Store2>
__device__ __forceinline__ void r8_fwd(u64* s, const WP* tw, u64 q, Load load, Store2 store2,
                                       u64* tdst, unsigned* ctr) {
    const uint32_t tid = threadIdx.x, k = blockIdx.x;
    const uint32_t lo = tid % 16, hi = tid / 16, ah = hi >> 1, b0 = hi & 1;
    unsigned target = 0;
    if (tid == 0) target = limb_target(ctr);
    MARK(0);
    // PRE: a phase's twiddles (rounds 1, 2, 3) in registers before the phase.
    Tw7 T1, T2;
    WP T3[4];
    auto pre_cols = [&] {
        T1 = tw7(tw, 1);
        T2 = tw7(tw, 8 + ah);
#pragma unroll
        for (int i = 0; i < 4; i++) T3[i] = ldwp(tw + 64 + hi + 16 * i);
    };
    auto pre_rows = [&] {
        T1 = tw7(tw, 128 + k * 16 + hi);
        T2 = tw7(tw, 1024 + (k * 16 + lo) * 8 + ah);
#pragma unroll
        for (int i = 0; i < 4; i++) T3[i] = ldwp(tw + 8192 + (k * 16 + hi) * 64 + lo + 16 * i);
    };
    if constexpr (PRE) pre_cols();
    {
        const uint32_t c = lo, col = k * 16 + c;
        u64 x[8];
        // Round 1: a bits 6..4 (a = hi + 16e).
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = load((hi + 16 * e) * SUB + col);
        fwd8(x, PRE ? T1 : tw7(tw, 1), q);
#pragma unroll
        for (int e = 0; e < 8; e++) s[r16_cw(c, hi + 16 * e)] = x[e];
        __syncthreads();
        // Round 2: a bits 3..1 (a = ah * 16 + 2e + b0).
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = s[r16_cw(c, ah * 16 + 2 * e + b0)];
        fwd8(x, PRE ? T2 : tw7(tw, 8 + ah), q);
#pragma unroll
        for (int e = 0; e < 8; e++) s[r16_cw(c, ah * 16 + 2 * e + b0)] = x[e];
        __syncthreads();
        // Round 3: a bit 0, pairs a = 2 (hi + 16 i).
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t a = 2 * (hi + 16 * i);
            u64 x0 = s[r16_cw(c, a)], x1 = s[r16_cw(c, a + 1)];
            ct_bfly(x0, x1, PRE ? T3[i] : ldwp(tw + 64 + a / 2), q);
            tdst[a * SUB + col] = x0;
            tdst[(a + 1) * SUB + col] = x1;
        }
    }
    if constexpr (PRE) pre_rows();
    MARK(1);
    limb_sync(ctr, target);
    MARK(2);
    {
        u64 x[8];
        // Round 1: b bits 6..4 (b = lo + 16e) of row hi.
        {
            const uint32_t r = hi, row = k * 16 + r;
#pragma unroll
            for (int e = 0; e < 8; e++) x[e] = ldcg(tdst + row * SUB + lo + 16 * e);
            fwd8(x, PRE ? T1 : tw7(tw, 128 + row), q);
#pragma unroll
            for (int e = 0; e < 8; e++) s[r8_rw(r, lo + 16 * e)] = x[e];
        }
        __syncthreads();
        // Round 2: b bits 3..1 of row lo (b = ah * 16 + 2e + b0).
        {
            const uint32_t r = lo, row = k * 16 + r;
#pragma unroll
            for (int e = 0; e < 8; e++) x[e] = s[r8_rw(r, ah * 16 + 2 * e + b0)];
            fwd8(x, PRE ? T2 : tw7(tw, 1024 + row * 8 + ah), q);
#pragma unroll
            for (int e = 0; e < 8; e++) s[r8_rw(r, ah * 16 + 2 * e + b0)] = x[e];
        }
        __syncthreads();
        // Round 3: b bit 0, pairs b = 2 (lo + 16 i) of row hi.
        {
            const uint32_t r = hi, row = k * 16 + r;
            const bool swap = r >= 8;
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const uint32_t b = 2 * (lo + 16 * i);
                u64 x0, x1;
                ld2sh(s + (r8_rw(r, b) & ~1u), x0, x1);
                if (swap) {
                    const u64 t = x0;
                    x0 = x1;
                    x1 = t;
                }
                ct_bfly(x0, x1, PRE ? T3[i] : ldwp(tw + 8192 + row * 64 + b / 2), q);
                x0 = csub(x0, 2 * q);
                x1 = csub(x1, 2 * q);
                store2(row * SUB + b, csub(x0, q), csub(x1, q));
            }
        }
    }
    MARK(3);
}

template <bool PRE, class Load2, class Store>
__device__ __forceinline__ void r8_inv(u64* s, const WP* tw, u64 q, Load2 load2, Store store,
                                       u64* tdst, unsigned* ctr) {
    const uint32_t tid = threadIdx.x, k = blockIdx.x;
    const uint32_t lo = tid % 16, hi = tid / 16, ah = hi >> 1, b0 = hi & 1;
    unsigned target = 0;
    if (tid == 0) target = limb_target(ctr);
    Tw7 T1, T2;
    WP T3[4];
    auto pre_rows = [&] {
#pragma unroll
        for (int i = 0; i < 4; i++) T3[i] = ldwp(tw + 8192 + (k * 16 + hi) * 64 + lo + 16 * i);
        T2 = tw7(tw, 1024 + (k * 16 + lo) * 8 + ah);
        T1 = tw7(tw, 128 + k * 16 + hi);
    };
    auto pre_cols = [&] {
#pragma unroll
        for (int i = 0; i < 4; i++) T3[i] = ldwp(tw + 64 + hi + 16 * i);
        T2 = tw7(tw, 8 + ah);
        T1 = tw7(tw, 1);
    };
    if constexpr (PRE) pre_rows();
    {
        u64 x[8];
        // Round 1: b bit 0 (half-span 1), pairs b = 2 (lo + 16 i) of row hi.
        {
            const uint32_t r = hi, row = k * 16 + r;
            const bool swap = r >= 8;
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const uint32_t b = 2 * (lo + 16 * i);
                u64 x0, x1;
                load2(row * SUB + b, x0, x1);
                gs_bfly(x0, x1, PRE ? T3[i] : ldwp(tw + 8192 + row * 64 + b / 2), q);
                if (swap) {
                    st2(s + (r8_rw(r, b) & ~1u), x1, x0);
                } else {
                    st2(s + (r8_rw(r, b) & ~1u), x0, x1);
                }
            }
        }
        __syncthreads();
        // Round 2: b bits 1..3 of row lo.
        {
            const uint32_t r = lo, row = k * 16 + r;
#pragma unroll
            for (int e = 0; e < 8; e++) x[e] = s[r8_rw(r, ah * 16 + 2 * e + b0)];
            inv8(x, PRE ? T2 : tw7(tw, 1024 + row * 8 + ah), q);
#pragma unroll
            for (int e = 0; e < 8; e++) s[r8_rw(r, ah * 16 + 2 * e + b0)] = x[e];
        }
        __syncthreads();
        // Round 3: b bits 4..6 of row hi (b = lo + 16e).
        {
            const uint32_t r = hi, row = k * 16 + r;
#pragma unroll
            for (int e = 0; e < 8; e++) x[e] = s[r8_rw(r, lo + 16 * e)];
            inv8(x, PRE ? T1 : tw7(tw, 128 + row), q);
#pragma unroll
            for (int e = 0; e < 8; e++) tdst[row * SUB + lo + 16 * e] = x[e];
        }
    }
    if constexpr (PRE) pre_cols();
    limb_sync(ctr, target);
    {
        const uint32_t c = lo, col = k * 16 + c;
        u64 x[8];
        // Round 1: a bit 0, pairs a = 2 (hi + 16 i).
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t a = 2 * (hi + 16 * i);
            u64 x0 = ldcg(tdst + a * SUB + col), x1 = ldcg(tdst + (a + 1) * SUB + col);
            gs_bfly(x0, x1, PRE ? T3[i] : ldwp(tw + 64 + a / 2), q);
            s[r16_cw(c, a)] = x0;
            s[r16_cw(c, a + 1)] = x1;
        }
        __syncthreads();
        // Round 2: a bits 1..3 (a = ah * 16 + 2e + b0).
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = s[r16_cw(c, ah * 16 + 2 * e + b0)];
        inv8(x, PRE ? T2 : tw7(tw, 8 + ah), q);
#pragma unroll
        for (int e = 0; e < 8; e++) s[r16_cw(c, ah * 16 + 2 * e + b0)] = x[e];
        __syncthreads();
        // Round 3: a bits 4..6 (a = hi + 16e).
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = s[r16_cw(c, hi + 16 * e)];
        inv8(x, PRE ? T1 : tw7(tw, 1), q);
#pragma unroll
        for (int e = 0; e < 8; e++) store((hi + 16 * e) * SUB + col, x[e]);
    }
}

template <bool PRE>
__device__ __forceinline__ void r8_fwd_k(const u64* __restrict__ in, u64* __restrict__ out, const Prime* __restrict__ primes,
          const WP* __restrict__ twf, uint32_t prime_off, u64 ys, u64 zs, unsigned* sync_ctr) {
    __shared__ __align__(16) u64 s[2048];
    const uint32_t y = blockIdx.y, z = blockIdx.z, pid = prime_off + y;
    const u64 q = primes[pid].q;
    const u64* src = in + z * zs + y * ys;
    u64* dst = out + z * zs + y * ys;
    auto load = [&](uint32_t pos) -> u64 { return src[pos]; };
    auto store2 = [&](uint32_t pos, u64 a, u64 b) { st2(dst + pos, a, b); };
    r8_fwd<PRE>(s, twf + (u64)pid * NN, q, load, store2, dst, sync_ctr + 2 * (z * gridDim.y + y));
}

template <bool PRE>
__device__ __forceinline__ void r8_inv_k(const u64* __restrict__ in, u64* __restrict__ out, const Prime* __restrict__ primes,
          const WP* __restrict__ twi, const WP* __restrict__ post, uint32_t prime_off, u64 ys,
          u64 zs, unsigned* sync_ctr) {
    __shared__ __align__(16) u64 s[2048];
    const uint32_t y = blockIdx.y, z = blockIdx.z, pid = prime_off + y;
    const u64 q = primes[pid].q;
    const WP pw = post[pid];
    const u64* src = in + z * zs + y * ys;
    u64* dst = out + z * zs + y * ys;
    auto load2 = [&](uint32_t pos, u64& a, u64& b) { ld2sh(src + pos, a, b); };
    auto store = [&](uint32_t pos, u64 x) { dst[pos] = shoup(x, pw.w, pw.wp, q); };
    r8_inv<PRE>(s, twi + (u64)pid * NN, q, load2, store, dst, sync_ctr + 2 * (z * gridDim.y + y));
}

#define R8_FWD_PARAMS const u64* __restrict__ in, u64* __restrict__ out, const Prime* __restrict__ primes, const WP* __restrict__ twf, uint32_t prime_off, u64 ys, u64 zs, unsigned* sync_ctr
#define R8_INV_PARAMS const u64* __restrict__ in, u64* __restrict__ out, const Prime* __restrict__ primes, const WP* __restrict__ twi, const WP* __restrict__ post, uint32_t prime_off, u64 ys, u64 zs, unsigned* sync_ctr
extern "C" __global__ void __launch_bounds__(R8_THREADS, 1) r8_fwd_gs(R8_FWD_PARAMS) { r8_fwd_k<false>(in, out, primes, twf, prime_off, ys, zs, sync_ctr); }
extern "C" __global__ void __launch_bounds__(R8_THREADS, 1) r8p_fwd_gs(R8_FWD_PARAMS) { r8_fwd_k<true>(in, out, primes, twf, prime_off, ys, zs, sync_ctr); }
extern "C" __global__ void __launch_bounds__(R8_THREADS, 1) r8_inv_gs(R8_INV_PARAMS) { r8_inv_k<false>(in, out, primes, twi, post, prime_off, ys, zs, sync_ctr); }
extern "C" __global__ void __launch_bounds__(R8_THREADS, 1) r8p_inv_gs(R8_INV_PARAMS) { r8_inv_k<true>(in, out, primes, twi, post, prime_off, ys, zs, sync_ctr); }
