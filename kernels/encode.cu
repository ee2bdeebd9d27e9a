// Encode / decode and encryption sampling for fhelium-ckks's CUDA engine (N = 16384).
//
// * Counter-based ChaCha20 sampler (decision 0520): every coefficient's randomness is a pure
//   function of (32-byte encryption key, stream id, index). Stream 0 = ternary v, 1 = e0,
//   2 = e1; 64-bit word k of a stream = ChaCha20 block k / 8 (64-bit counter in state words
//   12-13, 64-bit stream id in words 14-15: rand_chacha's ChaCha20Rng layout), 32-bit words
//   2 (k % 8) (low half) and 2 (k % 8) + 1 (high half). One thread computes one block (eight
//   coefficients). v[k] = (u mod 3) - 1 for u < 2^64 - 1 (exactly uniform); u = 2^64 - 1 is
//   redrawn from stream 2^32 + k, words 0, 1, ... e = #{cdt[i] < u} - 31 (the CPU's CDT).
// * The canonical-embedding FFT of the CPU engine's `Encoder`, operation for operation: the
//   same length-N radix-2 decimation-in-time complex FFT after a bit-reversal permutation,
//   with the same twiddles (computed once on the host and uploaded), every f64 operation
//   written as __dmul_rn / __dadd_rn / __dsub_rn / __ddiv_rn so nvcc cannot contract them to
//   FMAs. N = 128 x 128: a row pass (stages of half-span 1..64 on rows of 128 contiguous
//   points) and a column pass (half-spans 128..8192 on columns of stride 128), each in
//   shared memory. Encode ends with the twist, x 1/N, x scale and round-half-away-from-zero
//   (f64::round); decode starts from the centred reconstruction of the decryption phase and
//   ends with the generator-3 slot gather and / scale.
// * Small modular kernels of public-key encryption and decryption (exact canonical residues:
//   Montgomery products corrected by R^2, so the result equals the CPU engine's a*b mod q).
// * Key-switching key generation (decision 0531): ksk_sample (uniform a and Gaussian errors
//   from the key's counter-based streams) and ksk_finish (b = NTT(e) - a s + P s_src on the
//   digit's rows); the engine runs the forward NTT of the errors between them.
//
// Tables: slot_of[i] (i < N) = the slot s whose exponent e_s has (e_s - 1) / 2 = i, or
// s | CONJ_BIT when (2N - e_s - 1) / 2 = i. roots[j] = e^(-2 pi i j / N) (j < N/2),
// twist[k] = e^(i pi k / N) (k < N), as (re, im) pairs.
#include <stdint.h>

typedef unsigned long long u64;
typedef long long i64;
typedef unsigned int u32;

#define E_LOGN 14
#define E_N (1u << E_LOGN)
#define E_SUB 128             // N = E_SUB * E_SUB
#define E_TILE 8              // rows (row pass) or columns (column pass) per block
#define E_THREADS 512         // one butterfly per thread per stage
#define E_TILE_WORDS (E_SUB * E_TILE)
#define SAMPLE_THREADS 512    // threads per block of the standalone sampler
#define SAMPLER_PER_BLOCK 128 // active threads per sampler block of enc_rows_sample: 48 blocks
                              // spread the keystream over 48 SMs (4 warps each) instead of 12
#define EW_THREADS 256
#define CONJ_BIT 0x80000000u
#define CDT_LEN 63
#define GAUSS_TAIL 31
#define STREAM_V_RETRY (1ull << 32)

struct EncPrime {
    u64 q;
    u64 qinv_neg;  // -q^-1 mod 2^64
    u64 r2;        // 2^128 mod q
    u64 red_wp;    // floor(2^64 / q)
};

struct C64 {
    double re;
    double im;
};

__device__ __forceinline__ u32 brev_n(u32 x) { return __brev(x) >> (32 - E_LOGN); }

// ------------------------------------------------------------------------------------------
// Modular helpers (q < 2^62).

__device__ __forceinline__ u64 e_csub(u64 x, u64 q) { return x >= q ? x - q : x; }
__device__ __forceinline__ u64 e_add(u64 a, u64 b, u64 q) { return e_csub(a + b, q); }
__device__ __forceinline__ u64 e_sub(u64 a, u64 b, u64 q) { return a >= b ? a - b : a + q - b; }

// x mod q for any 64-bit x (Shoup with w = 1).
__device__ __forceinline__ u64 e_reduce(u64 x, const EncPrime& p) {
    return e_csub(x - __umul64hi(x, p.red_wp) * p.q, p.q);
}

// a * b * 2^-64 mod q, canonical, for a, b < q.
__device__ __forceinline__ u64 e_mont(u64 a, u64 b, const EncPrime& p) {
    u64 lo = a * b;
    u64 hi = __umul64hi(a, b);
    u64 m = lo * p.qinv_neg;
    u64 t = __umul64hi(m, p.q);
    return e_csub(hi + t + (lo != 0 ? 1ull : 0ull), p.q);
}

// a * b mod q, canonical (a, b < q).
__device__ __forceinline__ u64 e_mulmod(u64 a, u64 b, const EncPrime& p) {
    return e_mont(e_mont(a, b, p), p.r2, p);
}

// A signed 64-bit integer modulo q, canonical.
__device__ __forceinline__ u64 e_lift(i64 v, const EncPrime& p) {
    u64 mag = v < 0 ? (u64)0 - (u64)v : (u64)v;
    u64 r = e_reduce(mag, p);
    return (v < 0 && r != 0) ? p.q - r : r;
}

// ------------------------------------------------------------------------------------------
// ChaCha20 (RFC 8439 block function; rand_chacha's 64-bit counter / 64-bit stream layout).

__device__ __forceinline__ u32 rotl32(u32 x, int n) { return (x << n) | (x >> (32 - n)); }

#define CHACHA_QR(a, b, c, d)      \
    a += b;                        \
    d ^= a;                        \
    d = rotl32(d, 16);             \
    c += d;                        \
    b ^= c;                        \
    b = rotl32(b, 12);             \
    a += b;                        \
    d ^= a;                        \
    d = rotl32(d, 8);              \
    c += d;                        \
    b ^= c;                        \
    b = rotl32(b, 7);

// key: eight little-endian 32-bit key words packed two per u64 (low word first).
__device__ __forceinline__ void chacha20_block(const u64 key[4], u64 counter, u64 stream,
                                               u32 out[16]) {
    u32 init[16];
    init[0] = 0x61707865u;
    init[1] = 0x3320646eu;
    init[2] = 0x79622d32u;
    init[3] = 0x6b206574u;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        init[4 + 2 * i] = (u32)key[i];
        init[5 + 2 * i] = (u32)(key[i] >> 32);
    }
    init[12] = (u32)counter;
    init[13] = (u32)(counter >> 32);
    init[14] = (u32)stream;
    init[15] = (u32)(stream >> 32);
    u32 x[16];
#pragma unroll
    for (int i = 0; i < 16; i++) x[i] = init[i];
#pragma unroll 1
    for (int r = 0; r < 10; r++) {
        CHACHA_QR(x[0], x[4], x[8], x[12]);
        CHACHA_QR(x[1], x[5], x[9], x[13]);
        CHACHA_QR(x[2], x[6], x[10], x[14]);
        CHACHA_QR(x[3], x[7], x[11], x[15]);
        CHACHA_QR(x[0], x[5], x[10], x[15]);
        CHACHA_QR(x[1], x[6], x[11], x[12]);
        CHACHA_QR(x[2], x[7], x[8], x[13]);
        CHACHA_QR(x[3], x[4], x[9], x[14]);
    }
#pragma unroll
    for (int i = 0; i < 16; i++) out[i] = x[i] + init[i];
}

// 64-bit word `index` of `stream`.
__device__ u64 chacha20_word(const u64 key[4], u64 stream, u64 index) {
    u32 b[16];
    chacha20_block(key, index / 8, stream, b);
    u32 w = (u32)(index % 8) * 2;
    return (u64)b[w] | ((u64)b[w + 1] << 32);
}

__device__ __forceinline__ i64 ternary_of(const u64 key[4], u64 index, u64 u) {
    u64 j = 0;
    while (u == ~0ull) {  // probability 2^-64 per coefficient
        u = chacha20_word(key, STREAM_V_RETRY + index, j);
        j++;
    }
    return (i64)(u % 3) - 1;
}

// #{i : cdt[i] < u} by a branchless binary search over the sorted 63 thresholds (a virtual
// 64th entry is +infinity): six loads instead of 63, same count as the CPU's partition_point.
__device__ __forceinline__ i64 gaussian_of(const u64* __restrict__ cdt, u64 u) {
    u32 pos = 0;
#pragma unroll
    for (u32 step = 32; step > 0; step >>= 1) {
        const u32 i = pos + step - 1;
        if (i < CDT_LEN && cdt[i] < u) pos += step;
    }
    return (i64)pos - GAUSS_TAIL;
}

// One sampler thread: ChaCha20 block `blk` of stream `st` (0 = v, 1 = e0, 2 = e1), eight
// coefficients. v is written lifted to `limbs` residue rows (prime ids prime_off..);
// e0, e1 as signed words to err[(st - 1) * N + k].
__device__ void sample_block(u32 t, const u64 key[4], const u64* __restrict__ cdt,
                             const EncPrime* __restrict__ primes, u32 prime_off, u32 limbs,
                             u64* __restrict__ vrows, i64* __restrict__ err) {
    const u32 per_stream = E_N / 8;
    if (t >= 3 * per_stream) return;
    const u32 st = t / per_stream, blk = t % per_stream;
    u32 b[16];
    chacha20_block(key, blk, st, b);
#pragma unroll
    for (u32 i = 0; i < 8; i++) {
        const u64 u = (u64)b[2 * i] | ((u64)b[2 * i + 1] << 32);
        const u32 k = blk * 8 + i;
        if (st == 0) {
            const i64 v = ternary_of(key, k, u);
            for (u32 l = 0; l < limbs; l++) {
                const u64 q = primes[prime_off + l].q;
                vrows[(u64)l * E_N + k] = v < 0 ? q - 1 : (u64)v;
            }
        } else {
            err[(u64)(st - 1) * E_N + k] = gaussian_of(cdt, u);
        }
    }
}

// Standalone sampler (tests and the plaintext-only `encrypt`). Grid: (3 * N / 8 /
// SAMPLE_THREADS), SAMPLE_THREADS threads.
extern "C" __global__ void __launch_bounds__(SAMPLE_THREADS)
enc_sample(u64 k0, u64 k1, u64 k2, u64 k3, const u64* __restrict__ cdt,
           const EncPrime* __restrict__ primes, u32 prime_off, u32 limbs,
           u64* __restrict__ vrows, i64* __restrict__ err) {
    const u64 key[4] = {k0, k1, k2, k3};
    sample_block(blockIdx.x * SAMPLE_THREADS + threadIdx.x, key, cdt, primes, prime_off, limbs,
                 vrows, err);
}

// ------------------------------------------------------------------------------------------
// FFT butterflies (the CPU's `Encoder::fft`): t = y * w; y = x - t; x = x + t, with
// w = roots[k * N / len] (conjugated for the inverse direction).

__device__ __forceinline__ void butterfly(C64& x, C64& y, C64 w, bool inverse) {
    const double wr = w.re;
    const double wi = inverse ? -w.im : w.im;
    const double tr = __dsub_rn(__dmul_rn(y.re, wr), __dmul_rn(y.im, wi));
    const double ti = __dadd_rn(__dmul_rn(y.re, wi), __dmul_rn(y.im, wr));
    y.re = __dsub_rn(x.re, tr);
    y.im = __dsub_rn(x.im, ti);
    x.re = __dadd_rn(x.re, tr);
    x.im = __dadd_rn(x.im, ti);
}

// The FFT kernels issue every global load a thread needs (data, twiddles, twist or slot
// tables) before waiting on any of them: one memory latency per kernel instead of one per
// dependent group (data, then the twiddles after the tile's barrier, then the tail's table).
// E_PER_THREAD points per thread in the load and store loops.
#define E_PER_THREAD (E_TILE_WORDS / E_THREADS)

// The seven twiddles of an FFT thread, one per stage (row_twiddles, col_twiddles).
struct FftTw {
    C64 w[7];
};
__device__ __forceinline__ FftTw row_twiddles(const C64* __restrict__ roots) {
    const u32 bpos = threadIdx.x % 64;
    FftTw t;
#pragma unroll
    for (u32 st = 0; st < 7; st++) {
        const u32 h = 1u << st;
        t.w[st] = roots[(bpos % h) * (E_N / (2 * h))];
    }
    return t;
}

// Row tile s[r * 128 + b] holds bit-reversed-order point j = (row0 + r) * 128 + b; stages of
// half-span h = 1..64 with the thread's twiddles `tw` (row_twiddles).
__device__ __forceinline__ void row_stages(C64* s, const FftTw& tw, bool inverse) {
    const u32 tid = threadIdx.x;
    const u32 r = tid / 64, bpos = tid % 64;
#pragma unroll
    for (u32 st = 0; st < 7; st++) {
        const u32 h = 1u << st;
        __syncthreads();
        const u32 jj = bpos % h;
        const u32 b = (bpos / h) * 2 * h + jj;
        C64 x = s[r * E_SUB + b];
        C64 y = s[r * E_SUB + b + h];
        butterfly(x, y, tw.w[st], inverse);
        s[r * E_SUB + b] = x;
        s[r * E_SUB + b + h] = y;
    }
    __syncthreads();
}

// The seven twiddles of a column-pass thread of the block holding columns c0 ...
__device__ __forceinline__ FftTw col_twiddles(const C64* __restrict__ roots, u32 c0) {
    const u32 c = threadIdx.x % E_TILE, bpos = threadIdx.x / E_TILE;
    FftTw t;
#pragma unroll
    for (u32 st = 0; st < 7; st++) {
        const u32 hp = 1u << st;
        const u32 k = (bpos % hp) * E_SUB + c0 + c;
        t.w[st] = roots[k * (E_N / (2 * E_SUB * hp))];
    }
    return t;
}

// Column tile s[a * 8 + c] holds point j = a * 128 + c0 + c; stages of half-span
// h = 128 * h', h' = 1..64, with the thread's twiddles `tw` (col_twiddles).
__device__ __forceinline__ void col_stages(C64* s, const FftTw& tw, bool inverse) {
    const u32 tid = threadIdx.x;
    const u32 c = tid % E_TILE, bpos = tid / E_TILE;
#pragma unroll
    for (u32 st = 0; st < 7; st++) {
        const u32 hp = 1u << st;
        __syncthreads();
        const u32 jj = bpos % hp;
        const u32 a = (bpos / hp) * 2 * hp + jj;
        C64 x = s[a * E_TILE + c];
        C64 y = s[(a + hp) * E_TILE + c];
        butterfly(x, y, tw.w[st], inverse);
        s[a * E_TILE + c] = x;
        s[(a + hp) * E_TILE + c] = y;
    }
    __syncthreads();
}

// Encode, row pass (blocks 0 .. N / 1024 - 1), fused with the sampler (blocks fft_blocks ..,
// SAMPLER_PER_BLOCK active threads each, 3 * N / 8 / SAMPLER_PER_BLOCK blocks).
// The row pass scatters the message (len <= N/2 slots, zero-padded) to the Hermitian vector
// v[(e_s - 1) / 2] = m_s, v[(2N - e_s - 1) / 2] = conj(m_s), reads it in bit-reversed order
// and runs the first seven stages; the result goes to fft (N points). cplx = 0: msg holds
// len real slots, m_s = (msg[s], 0.0) and conj(m_s) = (msg[s], -0.0); cplx = 1: msg holds len
// (re, im) pairs, conj(m_s) = (re, -im) (the CPU encoder's num-complex values either way).
// Grid: (fft_blocks + sampler blocks), E_THREADS threads.
extern "C" __global__ void __launch_bounds__(E_THREADS)
enc_rows_sample(const double* __restrict__ msg, u32 len, u32 cplx, const u32* __restrict__ slot_of,
                const C64* __restrict__ roots, C64* __restrict__ fft, u32 fft_blocks,
                u64 k0, u64 k1, u64 k2, u64 k3, const u64* __restrict__ cdt,
                const EncPrime* __restrict__ primes, u32 prime_off, u32 limbs,
                u64* __restrict__ vrows, i64* __restrict__ err) {
    if (blockIdx.x >= fft_blocks) {
        if (threadIdx.x >= SAMPLER_PER_BLOCK) return;
        const u64 key[4] = {k0, k1, k2, k3};
        sample_block((blockIdx.x - fft_blocks) * SAMPLER_PER_BLOCK + threadIdx.x, key, cdt,
                     primes, prime_off, limbs, vrows, err);
        return;
    }
    __shared__ C64 s[E_TILE_WORDS];
    const u32 row0 = blockIdx.x * E_TILE;
    const FftTw tw = row_twiddles(roots);
    u32 t[E_PER_THREAD];
#pragma unroll
    for (u32 e = 0; e < E_PER_THREAD; e++)
        t[e] = slot_of[brev_n(row0 * E_SUB + threadIdx.x + e * E_THREADS)];
#pragma unroll
    for (u32 e = 0; e < E_PER_THREAD; e++) {
        const u32 sl = t[e] & ~CONJ_BIT;
        C64 v;
        v.re = 0.0;
        v.im = 0.0;
        if (sl < len) {
            const double im = cplx ? msg[2 * sl + 1] : 0.0;
            v.re = cplx ? msg[2 * sl] : msg[sl];
            v.im = (t[e] & CONJ_BIT) ? -im : im;
        }
        s[threadIdx.x + e * E_THREADS] = v;
    }
    row_stages(s, tw, false);
#pragma unroll
    for (u32 e = 0; e < E_PER_THREAD; e++) {
        const u32 idx = threadIdx.x + e * E_THREADS;
        fft[row0 * E_SUB + idx] = s[idx];
    }
}

// Encode, column pass: the last seven stages, then a_k = Re(x_k * conj(twist_k)) * inv_n and
// p_k = round(a_k * scale) as int64 (the host checked |p_k| < 2^62 beforehand).
// Grid: (128 / 8), E_THREADS threads.
extern "C" __global__ void __launch_bounds__(E_THREADS)
enc_cols(const C64* __restrict__ fft, const C64* __restrict__ roots,
         const C64* __restrict__ twist, double inv_n, double scale, i64* __restrict__ p) {
    __shared__ C64 s[E_TILE_WORDS];
    const u32 c0 = blockIdx.x * E_TILE;
    // Point e of the thread: tile word idx = tid + e * E_THREADS, j = (idx / 8) * 128 + c0 +
    // idx % 8; its data, its twist factor and the twiddles, all loaded first.
    C64 x[E_PER_THREAD], z[E_PER_THREAD];
    u32 j[E_PER_THREAD];
#pragma unroll
    for (u32 e = 0; e < E_PER_THREAD; e++) {
        const u32 idx = threadIdx.x + e * E_THREADS;
        j[e] = (idx / E_TILE) * E_SUB + c0 + idx % E_TILE;
        x[e] = fft[j[e]];
        z[e] = twist[j[e]];
    }
    const FftTw tw = col_twiddles(roots, c0);
#pragma unroll
    for (u32 e = 0; e < E_PER_THREAD; e++) s[threadIdx.x + e * E_THREADS] = x[e];
    col_stages(s, tw, false);
#pragma unroll
    for (u32 e = 0; e < E_PER_THREAD; e++) {
        const C64 y = s[threadIdx.x + e * E_THREADS];
        const double re = __dsub_rn(__dmul_rn(y.re, z[e].re), __dmul_rn(y.im, -z[e].im));
        const double ak = __dmul_rn(re, inv_n);
        p[j[e]] = (i64)round(__dmul_rn(ak, scale));
    }
}

// out[z][y][k] = vhat[y][k] * pk[z][prime_off + y][k] mod q (z = 0, 1; pk has pk_rows rows
// per component). Grid: (N / 256, limbs, 2).
extern "C" __global__ void enc_mul_pk(const u64* __restrict__ vhat, const u64* __restrict__ pk,
                                      u64* __restrict__ out, const EncPrime* __restrict__ primes,
                                      u32 prime_off, u32 pk_rows) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 y = blockIdx.y, z = blockIdx.z;
    const EncPrime p = primes[prime_off + y];
    const u64 a = vhat[(u64)y * E_N + k];
    const u64 b = pk[((u64)z * pk_rows + prime_off + y) * E_N + k];
    out[((u64)z * gridDim.y + y) * E_N + k] = e_mulmod(a, b, p);
}

// out[z][y][k] += e_z[k] (+ p[k] for z = 0), signed words lifted mod q. err = [e0 | e1 | p].
// Grid: (N / 256, limbs, 2).
extern "C" __global__ void enc_add_err(u64* __restrict__ out, const i64* __restrict__ err,
                                       const EncPrime* __restrict__ primes, u32 prime_off) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 y = blockIdx.y, z = blockIdx.z;
    const EncPrime p = primes[prime_off + y];
    const u64 e = ((u64)z * gridDim.y + y) * E_N + k;
    u64 x = e_add(out[e], e_lift(err[(u64)z * E_N + k], p), p.q);
    if (z == 0) x = e_add(x, e_lift(err[2 * (u64)E_N + k], p), p.q);
    out[e] = x;
}

// rows[y][k] = p[k] lifted modulo primes[prime_off + y] (signed int64 to canonical): the RNS
// rows of an encoded plaintext (the CPU engine's rns_from_integer). Grid: (N / 256, rows, 1).
extern "C" __global__ void enc_lift(const i64* __restrict__ p, u64* __restrict__ rows,
                                    const EncPrime* __restrict__ primes, u32 prime_off) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 y = blockIdx.y;
    rows[(u64)y * E_N + k] = e_lift(p[k], primes[prime_off + y]);
}

// ------------------------------------------------------------------------------------------
// Key-switching key generation (decision 0531): the CPU engine's `gen_key_switch_key`, word for
// word. A key is [digits][2][rows][N] (component 0: b, component 1: a) over every QP row.

#define KEYGEN_STREAM_E (1ull << 32)

// (hi * 2^64 + lo) mod q (the CPU's uniform_from_words): hi * 2^64 = mont(hi mod q, 2^128).
__device__ __forceinline__ u64 e_uniform(u64 lo, u64 hi, const EncPrime& p) {
    return e_add(e_mont(e_reduce(hi, p), p.r2, p), e_reduce(lo, p), p.q);
}

// Sampling. Threads [0, digits * rows * N / 4): one ChaCha20 block of stream d * rows + r under
// the key's sampling key, four uniform residues of a (coefficient k from words 2k, 2k + 1) into
// component 1 of digit d, row r. The next digits * N / 8 threads: one block of stream
// KEYGEN_STREAM_E + d, eight Gaussian errors of digit d into err[d][k] (signed). Grid:
// ceil((digits * rows * N / 4 + digits * N / 8) / SAMPLE_THREADS), SAMPLE_THREADS threads.
extern "C" __global__ void __launch_bounds__(SAMPLE_THREADS)
ksk_sample(u64 k0, u64 k1, u64 k2, u64 k3, const u64* __restrict__ cdt,
           const EncPrime* __restrict__ primes, u32 digits, u32 rows, u64* __restrict__ out,
           i64* __restrict__ err) {
    const u64 key[4] = {k0, k1, k2, k3};
    const u64 t = (u64)blockIdx.x * SAMPLE_THREADS + threadIdx.x;
    const u64 a_threads = (u64)digits * rows * (E_N / 4);
    u32 b[16];
    if (t < a_threads) {
        const u64 stream = t / (E_N / 4);  // d * rows + r
        const u32 blk = (u32)(t % (E_N / 4));
        const u32 d = (u32)(stream / rows), r = (u32)(stream % rows);
        const EncPrime p = primes[r];
        chacha20_block(key, blk, stream, b);
        u64* dst = out + ((u64)(2 * d + 1) * rows + r) * E_N + (u64)blk * 4;
#pragma unroll
        for (u32 i = 0; i < 4; i++) {
            const u64 lo = (u64)b[4 * i] | ((u64)b[4 * i + 1] << 32);
            const u64 hi = (u64)b[4 * i + 2] | ((u64)b[4 * i + 3] << 32);
            dst[i] = e_uniform(lo, hi, p);
        }
        return;
    }
    const u64 te = t - a_threads;
    if (te >= (u64)digits * (E_N / 8)) return;
    const u32 d = (u32)(te / (E_N / 8)), blk = (u32)(te % (E_N / 8));
    chacha20_block(key, blk, KEYGEN_STREAM_E + d, b);
#pragma unroll
    for (u32 i = 0; i < 8; i++) {
        const u64 u = (u64)b[2 * i] | ((u64)b[2 * i + 1] << 32);
        err[(u64)d * E_N + (u64)blk * 8 + i] = gaussian_of(cdt, u);
    }
}

// The NTT-domain automorphism sigma_g: word j of sigma_g(x) is word aut_src(j, g) of x (the
// CPU's automorphism_ntt_index_map; ckks.cu's aut_src).
__device__ __forceinline__ u32 ksk_aut_src(u32 j, u64 g) {
    const u32 e = (u32)((g * (2 * (u64)brev_n(j) + 1)) & (2 * (u64)E_N - 1));
    return brev_n((e - 1) / 2);
}

// b of digit d, row r: b - a * s_r + [r in digit d] (P mod q_r) * s_src_r, where b on entry
// is the forward NTT of digit d's error (canonical) and s_src = sigma_g(s) (g != 0) or s^2
// (g == 0: relinearization). s: the secret key's QP rows (NTT domain). digit_mask[d] has bit
// r set when prime r belongs to digit d. Grid: (N / 256, rows, digits).
extern "C" __global__ void ksk_finish(u64* __restrict__ out, const u64* __restrict__ s,
                                      const EncPrime* __restrict__ primes,
                                      const u64* __restrict__ p_mod_q,
                                      const u32* __restrict__ digit_mask, u32 rows, u64 g) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 r = blockIdx.y, d = blockIdx.z;
    const EncPrime p = primes[r];
    u64* b = out + ((u64)(2 * d) * rows + r) * E_N;
    const u64* a = b + (u64)rows * E_N;
    const u64* sr = s + (u64)r * E_N;
    u64 v = e_sub(b[k], e_mulmod(a[k], sr[k], p), p.q);
    if ((digit_mask[d] >> r) & 1u) {
        const u64 x = g == 0 ? e_mulmod(sr[k], sr[k], p) : sr[ksk_aut_src(k, g)];
        v = e_add(v, e_mulmod(p_mod_q[r], x, p), p.q);
    }
    b[k] = v;
}

// ------------------------------------------------------------------------------------------
// Decryption.

// tmp[y][k] = tmp[y][k] * s[prime_off + y][k] mod q. Grid: (N / 256, rows, 1).
extern "C" __global__ void dec_mul_s(u64* __restrict__ tmp, const u64* __restrict__ sk,
                                     const EncPrime* __restrict__ primes, u32 prime_off) {
    const u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    const u32 y = blockIdx.y;
    const u64 e = (u64)y * E_N + k;
    tmp[e] = e_mulmod(tmp[e], sk[(u64)(prime_off + y) * E_N + k], primes[prime_off + y]);
}

// Round-to-nearest-even of a 128-bit magnitude (hi, lo) to binary64 (Rust's `i128 as f64`).
__device__ __forceinline__ double u128_to_f64(u64 hi, u64 lo) {
    if (hi == 0) return __ull2double_rn(lo);
    const int lz = __clzll((i64)hi);
    const u64 top = lz == 0 ? hi : (hi << lz) | (lo >> (64 - lz));
    const u64 rest = lo << lz;
    const double f = __ull2double_rn(top | (rest != 0 ? 1ull : 0ull));
    // x 2^(64 - lz): exact (a power of two, no overflow below 2^128).
    return __dmul_rn(f, __longlong_as_double((i64)((u64)(1023 + 64 - lz) << 52)));
}

// Centred value of the phase of coefficient i from its residues modulo the two trailing Q
// primes qa (row 0) and qb (row 1): v0 = x mod qa, v1 = (x_b - v0) * qa^-1 mod qb,
// x = v0 + v1 qa, minus D = qa qb when x > floor(D / 2) (the CPU engine's decrypt).
__device__ __forceinline__ double centred(u64 v0, u64 w1, const EncPrime& pb, u64 qa,
                                          u64 ainv, u64 ainv_wp, u64 d_hi, u64 d_lo,
                                          u64 h_hi, u64 h_lo) {
    const u64 qb = pb.q;
    const u64 diff = e_sub(w1, e_reduce(v0, pb), qb);
    u64 v1 = diff * ainv - __umul64hi(diff, ainv_wp) * qb;
    v1 = e_csub(v1, qb);
    u64 lo = v1 * qa;
    u64 hi = __umul64hi(v1, qa);
    const u64 lo2 = lo + v0;
    hi += lo2 < lo ? 1ull : 0ull;
    lo = lo2;
    const bool neg = hi > h_hi || (hi == h_hi && lo > h_lo);
    if (neg) {
        const u64 borrow = d_lo < lo ? 1ull : 0ull;
        lo = d_lo - lo;
        hi = d_hi - hi - borrow;
    }
    const double f = u128_to_f64(hi, lo);
    return neg ? -f : f;
}

// Decode, row pass, fused with the end of decryption: phase row r = tmp[r] + c0[r] mod q
// (r = 0, 1: primes prime_off, prime_off + 1), the centred coefficient a_i, b_i = twist_i * a_i
// (complex times real), read in bit-reversed order, first seven stages of the inverse FFT.
// Grid: (N / 1024), E_THREADS threads.
extern "C" __global__ void __launch_bounds__(E_THREADS)
dec_rows(const u64* __restrict__ tmp, const u64* __restrict__ c0,
         const EncPrime* __restrict__ primes, u32 prime_off, u64 ainv, u64 ainv_wp, u64 d_hi,
         u64 d_lo, u64 h_hi, u64 h_lo, const C64* __restrict__ twist,
         const C64* __restrict__ roots, C64* __restrict__ fft) {
    __shared__ C64 s[E_TILE_WORDS];
    const EncPrime pa = primes[prime_off];
    const EncPrime pb = primes[prime_off + 1];
    const u32 row0 = blockIdx.x * E_TILE;
    const FftTw tw = row_twiddles(roots);
#pragma unroll
    for (u32 e = 0; e < E_PER_THREAD; e++) {
        const u32 idx = threadIdx.x + e * E_THREADS;
        const u32 i = brev_n(row0 * E_SUB + idx);
        const u64 v0 = e_add(tmp[i], c0[i], pa.q);
        const u64 w1 = e_add(tmp[E_N + i], c0[E_N + i], pb.q);
        const double a = centred(v0, w1, pb, pa.q, ainv, ainv_wp, d_hi, d_lo, h_hi, h_lo);
        const C64 z = twist[i];
        C64 v;
        v.re = __dmul_rn(z.re, a);
        v.im = __dmul_rn(z.im, a);
        s[idx] = v;
    }
    row_stages(s, tw, true);
#pragma unroll
    for (u32 e = 0; e < E_PER_THREAD; e++) {
        const u32 idx = threadIdx.x + e * E_THREADS;
        fft[row0 * E_SUB + idx] = s[idx];
    }
}

// Decode, column pass: last seven stages of the inverse FFT, then slot s = slot_of[j]
// (non-conjugate points only) gets b_j / scale: cplx = 0: out[s] = Re(b_j) / scale (N/2
// words); cplx = 1: out[2s], out[2s + 1] = Re(b_j) / scale, Im(b_j) / scale (N words).
// Grid: (128 / 8), E_THREADS threads.
extern "C" __global__ void __launch_bounds__(E_THREADS)
dec_cols(const C64* __restrict__ fft, const C64* __restrict__ roots,
         const u32* __restrict__ slot_of, double scale, double* __restrict__ out, u32 cplx) {
    __shared__ C64 s[E_TILE_WORDS];
    const u32 c0 = blockIdx.x * E_TILE;
    // The thread's points (as enc_cols), their slots and the twiddles, all loaded first.
    C64 x[E_PER_THREAD];
    u32 t[E_PER_THREAD];
#pragma unroll
    for (u32 e = 0; e < E_PER_THREAD; e++) {
        const u32 idx = threadIdx.x + e * E_THREADS;
        const u32 j = (idx / E_TILE) * E_SUB + c0 + idx % E_TILE;
        x[e] = fft[j];
        t[e] = slot_of[j];
    }
    const FftTw tw = col_twiddles(roots, c0);
#pragma unroll
    for (u32 e = 0; e < E_PER_THREAD; e++) s[threadIdx.x + e * E_THREADS] = x[e];
    col_stages(s, tw, true);
#pragma unroll
    for (u32 e = 0; e < E_PER_THREAD; e++) {
        if (t[e] & CONJ_BIT) continue;
        const C64 y = s[threadIdx.x + e * E_THREADS];
        if (cplx) {
            out[2 * t[e]] = __ddiv_rn(y.re, scale);
            out[2 * t[e] + 1] = __ddiv_rn(y.im, scale);
        } else {
            out[t[e]] = __ddiv_rn(y.re, scale);
        }
    }
}
