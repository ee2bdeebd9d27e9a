// Host emulator of kernels/encode.cu: runs the CUDA kernels on the CPU (one OS thread per
// CUDA thread of a block, __syncthreads = a std::barrier, blocks one after another so the
// __shared__ tiles can be function statics) and checks
//   * chacha20_block against the RFC 8439 section 2.3.2 test vector,
//   * the sampler (v, e0, e1) word for word against the CPU engine's
//     EncryptionSamples::from_key (rand_chacha) from a vectors file,
//   * encode (enc_rows_sample + enc_cols) of real and complex messages and decode (dec_rows +
//     dec_cols, with the centred reconstruction of the decryption phase) to real and complex
//     slots, bit for bit against the CPU engine's Encoder,
//   * the centred 128-bit reconstruction and its rounding to f64 against __int128 arithmetic,
//   * the modular kernels (enc_mul_pk, enc_add_err, enc_lift, dec_mul_s) against __int128
//     arithmetic,
//   * key generation (decision 0531): ksk_sample's uniform rows and digit errors word for word
//     against the CPU engine's switch_key_uniform_row / switch_key_error, e_uniform against
//     __int128, ksk_finish against __int128 with the CPU's NTT-domain automorphism map.
// The vectors file comes from the CPU engine: the test
// crates/ckks/tests/kernel_emulator.rs (`encode_vectors`) writes it, builds this file with
// -ffp-contract=off (no FMA contraction, decision 0521) and runs it (CI does too). By hand:
//
//   g++ -std=c++20 -O2 -ffp-contract=off -pthread kernels/emu/encode_emu.cpp -o /tmp/encode_emu
//   /tmp/encode_emu FILE   (FILE: the test's target/tmp/encode_vectors.bin)
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <vector>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
static thread_local dim3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static std::barrier<>* g_bar = nullptr;

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static
#define __restrict__
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++) {
        r = (r << 1) | (x & 1);
        x >>= 1;
    }
    return r;
}
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
// Round-to-nearest-even binary64 operations (the host's default rounding mode; the file is
// compiled with -ffp-contract=off so none of them fuse).
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __ddiv_rn(double a, double b) { return a / b; }
static inline double __ull2double_rn(unsigned long long x) { return (double)x; }
static inline double __longlong_as_double(long long x) {
    double d;
    std::memcpy(&d, &x, 8);
    return d;
}
static inline void __syncthreads() { g_bar->arrive_and_wait(); }

#include "../encode.cu"

static void launch(dim3 grid, unsigned threads, const std::function<void()>& kernel) {
    gridDim = grid;
    blockDim = dim3{threads, 1, 1};
    std::barrier<> bar((std::ptrdiff_t)threads);
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; t++) {
        ts.emplace_back([&, t] {
            g_bar = &bar;
            threadIdx = dim3{t, 0, 0};
            for (unsigned z = 0; z < grid.z; z++)
                for (unsigned y = 0; y < grid.y; y++)
                    for (unsigned x = 0; x < grid.x; x++) {
                        blockIdx = dim3{x, y, z};
                        kernel();
                        bar.arrive_and_wait();
                    }
        });
    }
    for (auto& t : ts) t.join();
}
static void launch_ew(dim3 grid, unsigned threads, const std::function<void()>& kernel) {
    gridDim = grid;
    blockDim = dim3{threads, 1, 1};
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++)
                for (unsigned t = 0; t < threads; t++) {
                    blockIdx = dim3{x, y, z};
                    threadIdx = dim3{t, 0, 0};
                    kernel();
                }
}

static int g_fail = 0;
static void check(bool ok, const char* what) {
    std::printf("%-64s %s\n", what, ok ? "ok" : "FAILED");
    if (!ok) g_fail++;
}

typedef unsigned __int128 u128;

static EncPrime make_prime(u64 q) {
    EncPrime p{};
    p.q = q;
    u64 inv = 1;
    for (int i = 0; i < 7; i++) inv *= 2 - q * inv;  // q^-1 mod 2^64 (Newton)
    p.qinv_neg = (u64)0 - inv;
    u64 r = (u64)(((u128)1 << 64) % q);
    p.r2 = (u64)((u128)r * r % q);
    p.red_wp = (u64)(((u128)1 << 64) / q);
    return p;
}

// ------------------------------------------------------------------ vectors file
struct Reader {
    std::vector<unsigned char> b;
    size_t at = 0;
    u64 u() {
        u64 x;
        std::memcpy(&x, &b[at], 8);
        at += 8;
        return x;
    }
    double f() {
        u64 x = u();
        double d;
        std::memcpy(&d, &x, 8);
        return d;
    }
};

int main(int argc, char** argv) {
    const u32 N = E_N, S = E_N / 2;
    // ---------------------------------------------------------------- RFC 8439 2.3.2
    {
        u64 key[4];
        for (int i = 0; i < 4; i++) {
            u32 lo = 0, hi = 0;
            for (int b = 0; b < 4; b++) {
                lo |= (u32)(8 * i + b) << (8 * b);
                hi |= (u32)(8 * i + 4 + b) << (8 * b);
            }
            key[i] = (u64)lo | ((u64)hi << 32);
        }
        u32 out[16];
        chacha20_block(key, (0x09000000ull << 32) | 1, 0x4a000000ull, out);
        const u32 want[16] = {0xe4e7f110, 0x15593bd1, 0x1fdd0f50, 0xc47120a3,
                              0xc7f4d1c7, 0x0368c033, 0x9aaa2204, 0x4e6cd4c3,
                              0x466482d2, 0x09aa9f07, 0x05d7c214, 0xa2028bd9,
                              0xd19c12b5, 0xb94e16de, 0xe883d0cb, 0x4e3c50a2};
        check(std::memcmp(out, want, sizeof want) == 0, "chacha20_block: RFC 8439 2.3.2 test vector");
    }
    // Two of the seed preset's primes (the trailing Q rows' size) and two larger ones.
    const u64 qa = 1099506515969ull, qb = 1152921504606846883ull;  // qb = 2^60 - 93 (prime)
    std::vector<EncPrime> primes = {make_prime(1099510054913ull), make_prime(1099515691009ull),
                                    make_prime(qa), make_prime(qb)};
    std::mt19937_64 rng(7);
    // ---------------------------------------------------------------- centred reconstruction
    {
        const EncPrime pb = primes[3];
        u64 ainv = 0;
        {  // qa^-1 mod qb by Fermat
            u128 base = qa % qb, acc = 1;
            u64 e = qb - 2;
            while (e) {
                if (e & 1) acc = acc * base % qb;
                base = base * base % qb;
                e >>= 1;
            }
            ainv = (u64)acc;
        }
        const u64 ainv_wp = (u64)(((u128)ainv << 64) / qb);
        const u128 d = (u128)qa * qb, h = d / 2;
        bool ok = true;
        int tested = 0;
        std::vector<__int128> xs = {0, 1, -1, (__int128)h, -(__int128)h, (__int128)h - 1,
                                    ((__int128)1 << 98) + 12345, -((__int128)1 << 97) - 777,
                                    ((__int128)1 << 53) + 1, ((__int128)1 << 54) + 2, ((__int128)1 << 54) + 6,
                                    ((__int128)1 << 80) + ((__int128)1 << 27), (__int128)h - ((__int128)1 << 40)};
        for (int i = 0; i < 200000; i++) {
            int bits = 1 + (int)(rng() % 106);
            u128 m = (((u128)rng() << 64) | rng()) & ((((u128)1) << bits) - 1);
            if (m > h) m %= h;
            xs.push_back((rng() & 1) ? -(__int128)m : (__int128)m);
        }
        for (__int128 x : xs) {
            u128 ux = x < 0 ? (u128)(x + (__int128)d) : (u128)x;
            u64 v0 = (u64)(ux % qa), w1 = (u64)(ux % qb);
            double got = centred(v0, w1, pb, qa, ainv, ainv_wp, (u64)(d >> 64), (u64)d,
                                 (u64)(h >> 64), (u64)h);
            double want = (double)x;
            if (std::memcmp(&got, &want, 8) != 0) {
                if (ok) std::printf("  centred mismatch at x = %.17g: got %.17g\n", want, got);
                ok = false;
            }
            tested++;
        }
        char msg[96];
        std::snprintf(msg, sizeof msg, "centred reconstruction + u128->f64 RNE (%d values)", tested);
        check(ok, msg);
    }
    // ---------------------------------------------------------------- modular kernels
    {
        const u32 L = 3, off = 1;  // prime ids 1, 2, 3; pk has 4 rows per component
        std::vector<u64> vhat((size_t)L * N), pk((size_t)2 * 4 * N), out((size_t)2 * L * N);
        for (u32 l = 0; l < L; l++)
            for (u32 k = 0; k < N; k++) vhat[(size_t)l * N + k] = rng() % primes[off + l].q;
        for (u32 c = 0; c < 2; c++)
            for (u32 r = 0; r < 4; r++)
                for (u32 k = 0; k < N; k++) pk[((size_t)c * 4 + r) * N + k] = rng() % primes[r].q;
        launch_ew({N / EW_THREADS, L, 2}, EW_THREADS, [&] {
            enc_mul_pk(vhat.data(), pk.data(), out.data(), primes.data(), off, 4);
        });
        bool ok = true;
        for (u32 c = 0; c < 2; c++)
            for (u32 l = 0; l < L; l++)
                for (u32 k = 0; k < N; k++) {
                    u64 q = primes[off + l].q;
                    u64 want = (u64)((u128)vhat[(size_t)l * N + k] * pk[((size_t)c * 4 + off + l) * N + k] % q);
                    ok &= out[((size_t)c * L + l) * N + k] == want;
                }
        check(ok, "enc_mul_pk = vhat * pk mod q (3 limbs, offset 1)");
        std::vector<i64> err((size_t)3 * N);
        for (auto& e : err) e = (i64)(rng() % 63) - 31;
        for (u32 k = 0; k < N; k += 97) err[2 * (size_t)N + k] = (i64)(rng() >> 1) * ((k & 1) ? -1 : 1);
        err[2 * (size_t)N + 1] = INT64_MIN + 1;
        std::vector<u64> before = out;
        launch_ew({N / EW_THREADS, L, 2}, EW_THREADS, [&] {
            enc_add_err(out.data(), err.data(), primes.data(), off);
        });
        ok = true;
        for (u32 c = 0; c < 2; c++)
            for (u32 l = 0; l < L; l++)
                for (u32 k = 0; k < N; k++) {
                    __int128 q = primes[off + l].q;
                    __int128 v = (__int128)before[((size_t)c * L + l) * N + k] + err[(size_t)c * N + k];
                    if (c == 0) v += err[2 * (size_t)N + k];
                    v %= q;
                    if (v < 0) v += q;
                    ok &= out[((size_t)c * L + l) * N + k] == (u64)v;
                }
        check(ok, "enc_add_err = c + lift(e_c) (+ lift(p) on c0)");
        {  // enc_lift: the RNS rows of p, extremes included
            std::vector<i64> pc(err.begin() + 2 * (ptrdiff_t)N, err.end());
            pc[3] = INT64_MIN;
            pc[5] = INT64_MAX;
            pc[7] = -1;
            std::vector<u64> rows((size_t)L * N, ~0ull);
            launch_ew({N / EW_THREADS, L, 1}, EW_THREADS, [&] {
                enc_lift(pc.data(), rows.data(), primes.data(), off);
            });
            ok = true;
            for (u32 l = 0; l < L; l++)
                for (u32 k = 0; k < N; k++) {
                    __int128 q = primes[off + l].q;
                    __int128 v = (__int128)pc[k] % q;
                    if (v < 0) v += q;
                    ok &= rows[(size_t)l * N + k] == (u64)v;
                }
            check(ok, "enc_lift = p mod q per row (3 limbs, offset 1, int64 extremes)");
        }
        std::vector<u64> tmp((size_t)2 * N), sk((size_t)4 * N);
        for (u32 r = 0; r < 4; r++)
            for (u32 k = 0; k < N; k++) sk[(size_t)r * N + k] = rng() % primes[r].q;
        for (u32 r = 0; r < 2; r++)
            for (u32 k = 0; k < N; k++) tmp[(size_t)r * N + k] = rng() % primes[2 + r].q;
        std::vector<u64> t0 = tmp;
        launch_ew({N / EW_THREADS, 2, 1}, EW_THREADS, [&] {
            dec_mul_s(tmp.data(), sk.data(), primes.data(), 2);
        });
        ok = true;
        for (u32 r = 0; r < 2; r++)
            for (u32 k = 0; k < N; k++)
                ok &= tmp[(size_t)r * N + k] ==
                      (u64)((u128)t0[(size_t)r * N + k] * sk[(size_t)(2 + r) * N + k] % primes[2 + r].q);
        check(ok, "dec_mul_s = phase row * s mod q");
    }
    // ---------------------------------------------------------------- vectors of the CPU engine
    const char* path = argc > 1 ? argv[1] : "/tmp/encode_vectors.bin";
    FILE* fp = std::fopen(path, "rb");
    if (!fp) {
        std::printf("no vectors file %s: sampler/encode/decode checks skipped (see the header)\n", path);
        std::printf(g_fail ? "FAILED (%d)\n" : "all passed\n", g_fail);
        return g_fail ? 1 : 3;
    }
    Reader rd;
    {
        unsigned char buf[1 << 16];
        size_t k;
        while ((k = std::fread(buf, 1, sizeof buf, fp)) > 0) rd.b.insert(rd.b.end(), buf, buf + k);
        std::fclose(fp);
    }
    if (rd.u() != N) {
        std::printf("vectors file is not for N = %u\n", N);
        return 2;
    }
    unsigned char keyb[32];
    std::memcpy(keyb, &rd.b[rd.at], 32);
    rd.at += 32;
    u64 key[4];
    for (int i = 0; i < 4; i++) {
        u32 lo, hi;
        std::memcpy(&lo, keyb + 8 * i, 4);
        std::memcpy(&hi, keyb + 8 * i + 4, 4);
        key[i] = (u64)lo | ((u64)hi << 32);
    }
    std::vector<u64> cdt(CDT_LEN);
    for (auto& c : cdt) c = rd.u();
    {  // binary-search CDT sampler == linear count (partition_point) at every edge
        std::vector<u64> us = {0, 1, ~0ull, ~0ull - 1};
        for (u64 c : cdt) {
            us.push_back(c);
            us.push_back(c - 1);
            us.push_back(c + 1);
        }
        for (int i = 0; i < 100000; i++) us.push_back(rng());
        bool ok = true;
        for (u64 u : us) {
            i64 k = 0;
            for (u64 c : cdt) k += c < u ? 1 : 0;
            ok &= gaussian_of(cdt.data(), u) == k - GAUSS_TAIL;
        }
        check(ok, "gaussian_of (binary search) == #{cdt < u} - 31 at every threshold");
    }
    std::vector<i64> want_s((size_t)3 * N);
    for (auto& x : want_s) x = (i64)rd.u();
    std::vector<u32> slot_of(N, 0xffffffffu);
    for (u32 s = 0; s < S; s++) {
        u64 e = rd.u();
        slot_of[(e - 1) / 2] = s;
        slot_of[(2 * N - e - 1) / 2] = s | CONJ_BIT;
    }
    bool perm = true;
    for (u32 i = 0; i < N; i++) perm &= slot_of[i] != 0xffffffffu;
    check(perm, "slot_of covers every index once (generator-3 exponents)");
    std::vector<C64> roots(N / 2), twist(N);
    for (auto& r : roots) r = C64{rd.f(), rd.f()};
    for (auto& t : twist) t = C64{rd.f(), rd.f()};
    // sampler alone, lifted v on 2 limbs
    {
        const u32 limbs = 2, off = 2;
        std::vector<u64> vrows((size_t)limbs * N, ~0ull);
        std::vector<i64> err((size_t)3 * N, 0x5a5a5a5a);
        launch({3 * N / 8 / SAMPLER_PER_BLOCK, 1, 1}, E_THREADS, [&] {
            enc_rows_sample(nullptr, 0, 0, slot_of.data(), roots.data(), nullptr, 0, key[0], key[1],
                            key[2], key[3], cdt.data(), primes.data(), off, limbs, vrows.data(),
                            err.data());
        });
        bool ok_v = true, ok_e = true;
        for (u32 k = 0; k < N; k++) {
            for (u32 l = 0; l < limbs; l++) {
                u64 q = primes[off + l].q;
                i64 v = want_s[k];
                ok_v &= vrows[(size_t)l * N + k] == (v < 0 ? q - 1 : (u64)v);
            }
            ok_e &= err[k] == want_s[N + k] && err[N + k] == want_s[2 * (size_t)N + k];
        }
        check(ok_v, "sampler v (lifted, 2 limbs) == CPU EncryptionSamples::from_key v");
        check(ok_e, "sampler e0, e1 == CPU EncryptionSamples::from_key e0, e1");
        check(err[2 * (size_t)N] == 0x5a5a5a5a, "sampler leaves p's words alone");
    }
    // encode: fused row pass + sampler, then the column pass
    const u64 rounds = rd.u();
    for (u64 round = 0; round < rounds; round++) {
        u64 len = rd.u();
        const u32 cplx = (u32)rd.u();
        std::vector<double> msg(cplx ? 2 * len : len);
        for (auto& m : msg) m = rd.f();
        double scale = rd.f();
        std::vector<i64> want_p(N);
        for (auto& p : want_p) p = (i64)rd.u();
        const u32 limbs = 1, off = 0;
        std::vector<u64> vrows((size_t)limbs * N);
        std::vector<i64> err((size_t)3 * N, 0x7777);
        std::vector<C64> fft(N, C64{NAN, NAN});
        const u32 fft_blocks = N / E_TILE_WORDS;
        launch({fft_blocks + 3 * N / 8 / SAMPLER_PER_BLOCK, 1, 1}, E_THREADS, [&] {
            enc_rows_sample(msg.data(), (u32)len, cplx, slot_of.data(), roots.data(), fft.data(),
                            fft_blocks, key[0], key[1], key[2], key[3], cdt.data(), primes.data(),
                            off, limbs, vrows.data(), err.data());
        });
        launch({E_SUB / E_TILE, 1, 1}, E_THREADS, [&] {
            enc_cols(fft.data(), roots.data(), twist.data(), 1.0 / N, scale, err.data() + 2 * (size_t)N);
        });
        bool ok = true;
        int bad = -1;
        for (u32 k = 0; k < N; k++)
            if (err[2 * (size_t)N + k] != want_p[k]) {
                ok = false;
                if (bad < 0) bad = (int)k;
            }
        if (bad >= 0)
            std::printf("  first mismatch at %d: got %lld want %lld\n", bad,
                        (long long)err[2 * (size_t)N + bad], (long long)want_p[bad]);
        bool ok_e = true;
        for (u32 k = 0; k < N; k++) ok_e &= err[k] == want_s[N + k];
        char m[96];
        std::snprintf(m, sizeof m, "encode of %llu %s slots == CPU Encoder::encode (bit-exact)",
                      (unsigned long long)len, cplx ? "complex" : "real");
        check(ok, m);
        check(ok_e, "  ... and the fused sampler blocks still match");
    }
    // decode through the decryption tail: coefficients as residues of the two trailing primes
    {
        std::vector<double> coeffs(N);
        for (auto& c : coeffs) c = rd.f();
        double dscale = rd.f();
        std::vector<double> want_c(2 * (size_t)S), want(S);  // (re, im) pairs; re parts
        for (auto& w : want_c) w = rd.f();
        for (u32 s = 0; s < S; s++) want[s] = want_c[2 * (size_t)s];
        const EncPrime pa = primes[2], pb = primes[3];
        u64 ainv = 0;
        {
            u128 base = pa.q % pb.q, acc = 1;
            u64 e = pb.q - 2;
            while (e) {
                if (e & 1) acc = acc * base % pb.q;
                base = base * base % pb.q;
                e >>= 1;
            }
            ainv = (u64)acc;
        }
        const u64 ainv_wp = (u64)(((u128)ainv << 64) / pb.q);
        const u128 d = (u128)pa.q * pb.q, h = d / 2;
        std::vector<u64> tmp((size_t)2 * N), c0((size_t)2 * N);
        bool integral = true;
        for (u32 k = 0; k < N; k++) {
            double c = coeffs[k];
            integral &= c == std::floor(c);
            __int128 x = (__int128)c;
            for (u32 r = 0; r < 2; r++) {
                __int128 q = primes[2 + r].q;
                __int128 res = x % q;
                if (res < 0) res += q;
                u64 split = rng() % (u64)q;  // tmp + c0 = residue
                c0[(size_t)r * N + k] = split;
                tmp[(size_t)r * N + k] = (u64)((res - (__int128)split + q) % q);
            }
        }
        check(integral, "decode vectors are integer-valued (a decryption phase)");
        std::vector<C64> fft(N, C64{NAN, NAN});
        launch({N / E_TILE_WORDS, 1, 1}, E_THREADS, [&] {
            dec_rows(tmp.data(), c0.data(), primes.data(), 2, ainv, ainv_wp, (u64)(d >> 64), (u64)d,
                     (u64)(h >> 64), (u64)h, twist.data(), roots.data(), fft.data());
        });
        // The column pass twice over the same row pass: real slots, then (re, im) pairs
        // (poisoned first, so an unwritten word fails).
        for (u32 cplx = 0; cplx < 2; cplx++) {
            const std::vector<double>& w = cplx ? want_c : want;
            std::vector<double> out(w.size(), NAN);
            launch({E_SUB / E_TILE, 1, 1}, E_THREADS, [&] {
                dec_cols(fft.data(), roots.data(), slot_of.data(), dscale, out.data(), cplx);
            });
            bool ok = std::memcmp(out.data(), w.data(), w.size() * 8) == 0;
            if (!ok)
                for (size_t i = 0; i < w.size(); i++)
                    if (std::memcmp(&out[i], &w[i], 8) != 0) {
                        std::printf("  first mismatch at word %zu: got %.17g want %.17g\n", i, out[i], w[i]);
                        break;
                    }
            check(ok, cplx ? "decode to complex slots == CPU Encoder::decode (bit-exact)"
                           : "decode (phase -> centred -> FFT -> slots) == CPU Encoder::decode (bit-exact)");
        }
    }
    // ---------------------------------------------------------------- key generation
    {
        u64 kkey[4];
        for (int i = 0; i < 4; i++) kkey[i] = rd.u();
        const u32 D = (u32)rd.u(), R = (u32)rd.u();
        std::vector<EncPrime> kp(R);
        for (auto& p : kp) p = make_prime(rd.u());
        std::vector<u64> want_a((size_t)D * R * N);
        for (auto& w : want_a) w = rd.u();
        std::vector<i64> want_e((size_t)D * N);
        for (auto& w : want_e) w = (i64)rd.u();
        const u64 g = rd.u();
        std::vector<u32> map(N);
        for (auto& m : map) m = (u32)rd.u();
        // Sampling: the key poisoned first, so an unwritten word fails.
        std::vector<u64> key((size_t)D * 2 * R * N, 0xF0F0F0F0F0F0F0F0ull);
        std::vector<i64> err((size_t)D * N, 0x7777);
        const u64 threads = (u64)D * R * (N / 4) + (u64)D * (N / 8);
        launch_ew({(u32)((threads + SAMPLE_THREADS - 1) / SAMPLE_THREADS), 1, 1}, SAMPLE_THREADS, [&] {
            ksk_sample(kkey[0], kkey[1], kkey[2], kkey[3], cdt.data(), kp.data(), D, R, key.data(),
                       err.data());
        });
        bool ok_a = true, ok_b_untouched = true;
        for (u32 d = 0; d < D; d++)
            for (u32 r = 0; r < R; r++)
                for (u32 k = 0; k < N; k++) {
                    ok_a &= key[((size_t)(2 * d + 1) * R + r) * N + k] == want_a[((size_t)d * R + r) * N + k];
                    ok_b_untouched &= key[((size_t)(2 * d) * R + r) * N + k] == 0xF0F0F0F0F0F0F0F0ull;
                }
        check(ok_a && ok_b_untouched, "ksk_sample: uniform a == CPU switch_key_uniform_row (3 x 4 rows)");
        check(err == want_e, "ksk_sample: digit errors == CPU switch_key_error");
        // e_uniform on edge and random words against __int128.
        {
            bool ok = true;
            const u64 edge[] = {0, 1, ~0ull, ~0ull - 1, 1ull << 63};
            for (const EncPrime& p : kp)
                for (int i = 0; i < 20000; i++) {
                    const u64 lo = i < 25 ? edge[i % 5] : rng(), hi = i < 25 ? edge[i / 5] : rng();
                    ok &= e_uniform(lo, hi, p) == (u64)((((u128)hi << 64) | lo) % p.q);
                }
            check(ok, "e_uniform == (hi 2^64 + lo) mod q (__int128)");
        }
        // Finishing: random canonical b and s, digits' masks (digit d holds row d), P mod q.
        std::vector<u64> s((size_t)R * N), pmq(R);
        for (u32 r = 0; r < R; r++) {
            pmq[r] = rng() % kp[r].q;
            for (u32 k = 0; k < N; k++) s[(size_t)r * N + k] = rng() % kp[r].q;
        }
        std::vector<u32> mask(D);
        for (u32 d = 0; d < D; d++) mask[d] = 1u << d;
        for (int relin = 0; relin < 2; relin++) {
            const u64 gg = relin ? 0 : g;
            std::vector<u64> k2 = key;
            for (u32 d = 0; d < D; d++)
                for (u32 r = 0; r < R; r++)
                    for (u32 k = 0; k < N; k++)
                        k2[((size_t)(2 * d) * R + r) * N + k] = rng() % kp[r].q;
            const std::vector<u64> before = k2;
            launch_ew({N / 256, R, D}, 256, [&] {
                ksk_finish(k2.data(), s.data(), kp.data(), pmq.data(), mask.data(), R, gg);
            });
            bool ok = true;
            for (u32 d = 0; d < D; d++)
                for (u32 r = 0; r < R; r++) {
                    const u128 q = kp[r].q;
                    for (u32 k = 0; k < N; k++) {
                        const size_t bi = ((size_t)(2 * d) * R + r) * N + k;
                        const u128 a = before[bi + (size_t)R * N], b = before[bi];
                        const u128 sk = s[(size_t)r * N + k];
                        u128 v = (b + q - (a * sk) % q) % q;
                        if ((mask[d] >> r) & 1u) {
                            const u128 x = relin ? sk * sk % q : (u128)s[(size_t)r * N + map[k]];
                            v = (v + (u128)pmq[r] * x % q) % q;
                        }
                        ok &= k2[bi] == (u64)v && k2[bi + (size_t)R * N] == before[bi + (size_t)R * N];
                    }
                }
            check(ok, relin ? "ksk_finish (relinearization) == b - a s + P s^2 on the digit's rows"
                            : "ksk_finish (rotation, g = 27) == b - a s + P sigma_g(s) on the digit's rows");
        }
    }
    std::printf(g_fail ? "FAILED (%d)\n" : "all passed\n", g_fail);
    return g_fail ? 1 : 0;
}
