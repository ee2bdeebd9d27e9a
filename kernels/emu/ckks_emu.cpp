// Host emulator of kernels/ckks.cu: runs the CUDA kernels on the CPU (one OS thread per CUDA
// thread of a block, __syncthreads = a std::barrier, blocks one after another so __shared__
// arrays can be function statics) and checks them against plain reference code written from
// spec ckks.md sections 3.6, 3.8, 3.12 and 4.1. Launch arguments mirror
// crates/ckks/src/cuda/engine.rs. For machines without a GPU:
//
//   g++ -std=c++20 -O2 -ffp-contract=off -pthread kernels/emu/ckks_emu.cpp -o /tmp/ckks_emu && /tmp/ckks_emu
#include <barrier>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
typedef dim3 uint3;
static thread_local dim3 threadIdx, blockIdx;
static dim3 blockDim, gridDim;
static thread_local std::barrier<>* g_bar = nullptr;
// Thread-block clusters (ntt_fwd_cl, ntt_inv_cl, ks_inner_cl): the blocks of one cluster run
// at the same time, each with its own __syncthreads barrier, plus one barrier for the whole
// cluster; each block's shared array is one row of a static [CL][words] array, so
// map_shared_rank is pointer arithmetic between rows.
static thread_local std::barrier<>* g_cbar = nullptr;
static thread_local std::optional<std::barrier<>::arrival_token> g_ctok;

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
static inline void __syncthreads() { g_bar->arrive_and_wait(); }
// Binary64 intrinsics of the LooseF butterflies: round-to-nearest operations, never fused
// (the emulator is built with -ffp-contract=off), std::fma for the fused ones.
static inline double __longlong_as_double(long long x) {
    double d;
    std::memcpy(&d, &x, sizeof d);
    return d;
}
static inline long long __double_as_longlong(double x) {
    long long r;
    std::memcpy(&r, &x, sizeof r);
    return r;
}
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dsub_rn(double a, double b) { return a - b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __fma_rn(double a, double b, double c) { return std::fma(a, b, c); }

#define FHE_EMU 1
#define CL_BLOCKS 8  // must equal CL in ckks.cu (checked below)
static unsigned cl_rank() { return blockIdx.x % CL_BLOCKS; }
static thread_local std::barrier<>* g_hbar = nullptr;  // this thread's half-block barrier
static void hsync() { g_hbar->arrive_and_wait(); }
// The paired kernels' group barriers (named barriers 1, 2: the block's halves) and their gate
// (named barrier 3: group 0 arrives without waiting, group 1 waits for it), one per block.
static thread_local std::barrier<>* g_gate = nullptr;
static void gsync(unsigned) { hsync(); }
static void gate_open() { [[maybe_unused]] auto token = g_gate->arrive(); }
static void gate_wait() { g_gate->arrive_and_wait(); }
static void cl_sync() { g_cbar->arrive_and_wait(); }
static void cl_arrive() { g_ctok.emplace(g_cbar->arrive()); }
static void cl_wait() {
    g_cbar->wait(std::move(*g_ctok));
    g_ctok.reset();
}
static size_t g_cl_words = 0;
template <class T>
static const T* cl_map(const T* p, unsigned rank) {
    return p + ((long)rank - (long)cl_rank()) * (long)g_cl_words;
}
static void ld4(const unsigned long long* p, unsigned long long (&x)[4]) {
    for (int i = 0; i < 4; i++) x[i] = p[i];
}
static void ld2sh(const unsigned long long* p, unsigned long long& x0, unsigned long long& x1) {
    x0 = p[0];
    x1 = p[1];
}
static void st2(unsigned long long* p, unsigned long long x0, unsigned long long x1) {
    p[0] = x0;
    p[1] = x1;
}
#define CL_KERNEL extern "C" void
#define CL_KERNEL3 extern "C" void
#define CL_KERNEL1 extern "C" void
#define GS_KERNEL extern "C" void
#define GS_KERNEL2 extern "C" void
static unsigned long long ldcg(const unsigned long long* p) {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}
static unsigned ld_acquire(const unsigned* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static unsigned ld_relaxed(const unsigned* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static void arrive_release(unsigned* p) { __atomic_fetch_add(p, 1u, __ATOMIC_RELEASE); }
// The paired kernels' exchange words: relaxed 64-bit atomics, as on the device.
static unsigned long long ld_rlx64(const unsigned long long* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }
static void st_rlx64(unsigned long long* p, unsigned long long v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
static unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL); }
static void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
// One tile per concurrently running block (up to 2 CL: the paired *_gp kernels).
#define CL_SHARED(name)                                  \
    static u64 name##_all[2 * CL][2 * CL_WORDS];         \
    u64* name = name##_all[blockIdx.x % (2 * CL)];       \
    g_cl_words = 2 * CL_WORDS

#include "../ckks.cu"
static_assert(CL == CL_BLOCKS, "emulator cluster size");

// Launch: `threads` OS threads walk every block in order; a barrier ends each block so the
// static shared tile is never reused early.
static void launch(dim3 grid, unsigned threads, const std::function<void()>& kernel) {
    gridDim = grid;
    blockDim = dim3{threads, 1, 1};
    std::barrier<> bar((std::ptrdiff_t)threads);
    g_bar = &bar;
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
// Cluster launch: grid.x == CL (or 2 CL: the paired *_gp kernels, whose 2 CL blocks of a limb
// meet on counters); the grid.x blocks of each (y, z) run together, one OS thread per CUDA
// thread; groups one after another.
static void launch_cluster(dim3 grid, unsigned threads, const std::function<void()>& kernel) {
    if (grid.x != CL && grid.x != 2 * CL) {
        std::printf("launch_cluster: grid.x %u is neither CL nor 2 CL\n", grid.x);
        std::exit(2);
    }
    const unsigned nb = grid.x;
    gridDim = grid;
    blockDim = dim3{threads, 1, 1};
    std::vector<std::barrier<>*> bars;
    for (unsigned b = 0; b < nb; b++) bars.push_back(new std::barrier<>((std::ptrdiff_t)threads));
    // Named barriers 1 and 2 of each block: its halves (threads 0-255, 256-511 of the
    // cluster kernels; 0-127, 128-255 of the paired kernels), or a 128-thread block of the
    // paired kernels as group 0 alone (one barrier of all its threads).
    const unsigned half = threads == 128 ? threads : threads / 2;
    std::vector<std::barrier<>*> hbars;
    for (unsigned i = 0; i < 2 * nb; i++)
        hbars.push_back(new std::barrier<>((std::ptrdiff_t)half));
    std::vector<std::barrier<>*> gates;
    for (unsigned b = 0; b < nb; b++) gates.push_back(new std::barrier<>((std::ptrdiff_t)threads));
    std::barrier<> cbar((std::ptrdiff_t)(threads * nb));
    std::vector<std::thread> ts;
    for (unsigned b = 0; b < nb; b++)
        for (unsigned t = 0; t < threads; t++) {
            ts.emplace_back([&, b, t] {
                g_bar = bars[b];
                g_hbar = hbars[2 * b + t / half];
                g_gate = gates[b];
                g_cbar = &cbar;
                threadIdx = dim3{t, 0, 0};
                for (unsigned z = 0; z < grid.z; z++)
                    for (unsigned y = 0; y < grid.y; y++) {
                        blockIdx = dim3{b, y, z};
                        kernel();
                        cbar.arrive_and_wait();
                    }
            });
        }
    for (auto& t : ts) t.join();
    for (auto* p : bars) delete p;
    for (auto* p : hbars) delete p;
    for (auto* p : gates) delete p;
}
// Elementwise kernels have no barrier: run their threads in one OS thread.
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

// ------------------------------------------------------------------ host arithmetic
typedef unsigned __int128 u128;
static const int NP = 9;
static const u64 QS[NP] = {1099510054913ull,       1099515691009ull,      1099508121601ull,
                           1099515789313ull,       1099507695617ull,      1099516280833ull,
                           1099506515969ull,       1152921504606748673ull, 1152921504606683137ull};
static u64 mulm(u64 a, u64 b, u64 q) { return (u64)((u128)a * b % q); }
static u64 powm(u64 b, u64 e, u64 q) {
    u64 r = 1 % q;
    b %= q;
    while (e) {
        if (e & 1) r = mulm(r, b, q);
        b = mulm(b, b, q);
        e >>= 1;
    }
    return r;
}
static u64 invm(u64 a, u64 q) { return powm(a % q, q - 2, q); }
static u64 shoupc(u64 w, u64 q) { return (u64)(((u128)w << 64) / q); }
static u64 addm(u64 a, u64 b, u64 q) { return (a + b) % q; }
static u64 subm(u64 a, u64 b, u64 q) { return (a + q - b % q) % q; }
static unsigned br14(unsigned x) { return __brev(x) >> 18; }

struct Tables {
    std::vector<u64> primes, twf, twi, reduce, n_inv, mont_fix, ks_post, p_inv, q_inv, psi;
    std::vector<u64> padd;  // P mod q per prime id (ks_inner_cl's added rows)
};
static void pair(std::vector<u64>& v, u64 w, u64 q) {
    v.push_back(w);
    v.push_back(shoupc(w, q));
}
static Tables make_tables() {
    Tables t;
    const u64 N = NN;
    for (int id = 0; id < NP; id++) {
        u64 q = QS[id];
        u64 psi = 0;
        for (u64 c = 2;; c++) {
            psi = powm(c, (q - 1) / (2 * N), q);
            if (powm(psi, N, q) == q - 1) break;
        }
        t.psi.push_back(psi);
        u64 inv = 1;
        for (int i = 0; i < 7; i++) inv *= 2 - q * inv;
        t.primes.insert(t.primes.end(), {q, (u64)(0 - inv), shoupc(1, q), 0});
        u64 ipsi = invm(psi, q);
        std::vector<u64> tw(N), itw(N);
        u64 p = 1, pi = 1;
        for (unsigned k = 0; k < N; k++) {
            tw[br14(k)] = p;
            itw[br14(k)] = pi;
            p = mulm(p, psi, q);
            pi = mulm(pi, ipsi, q);
        }
        for (unsigned k = 0; k < N; k++) {
            pair(t.twf, tw[k], q);
            pair(t.twi, itw[k], q);
        }
        pair(t.reduce, 1, q);
        u64 ninv = invm(N, q);
        // Post pairs: (c, c * itw[1]) for the scaling constant c (struct Post).
        pair(t.n_inv, ninv, q);
        pair(t.n_inv, mulm(ninv, itw[1], q), q);
        u64 fix = (u64)(((u128)1 << 64) % q);
        pair(t.mont_fix, fix, q);
        pair(t.ks_post, mulm(ninv, fix, q), q);
        pair(t.ks_post, mulm(mulm(ninv, fix, q), itw[1], q), q);
        pair(t.p_inv, id < 8 ? invm(QS[8] % q, q) : 0, q);
        t.padd.push_back(QS[8] % q);
    }
    for (int d = 0; d < NP; d++)
        for (int i = 0; i < NP; i++) pair(t.q_inv, d == i ? 0 : invm(QS[d] % QS[i], QS[i]), QS[i]);
    return t;
}

// Reference NTTs: the spec 4.1 loops with exact % arithmetic.
static void ref_fwd(std::vector<u64>& a, u64 q, u64 psi) {
    std::vector<u64> tw(NN);
    u64 p = 1;
    for (unsigned k = 0; k < NN; k++) {
        tw[br14(k)] = p;
        p = mulm(p, psi, q);
    }
    for (unsigned m = 1, t = NN / 2; m < NN; m *= 2, t /= 2)
        for (unsigned i = 0; i < m; i++)
            for (unsigned j = 2 * i * t; j < 2 * i * t + t; j++) {
                u64 u = a[j], v = mulm(tw[m + i], a[j + t], q);
                a[j] = addm(u, v, q);
                a[j + t] = subm(u, v, q);
            }
}
static void ref_inv(std::vector<u64>& a, u64 q, u64 psi) {
    u64 ipsi = invm(psi, q);
    std::vector<u64> tw(NN);
    u64 p = 1;
    for (unsigned k = 0; k < NN; k++) {
        tw[br14(k)] = p;
        p = mulm(p, ipsi, q);
    }
    for (unsigned t = 1; t < NN; t *= 2) {
        unsigned m = NN / (2 * t);
        for (unsigned i = 0; i < m; i++)
            for (unsigned j = 2 * i * t; j < 2 * i * t + t; j++) {
                u64 u = a[j], v = a[j + t];
                a[j] = addm(u, v, q);
                a[j + t] = mulm(tw[m + i], subm(u, v, q), q);
            }
    }
    u64 ninv = invm(NN, q);
    for (auto& x : a) x = mulm(x, ninv, q);
}

static int failures = 0;
static void expect_eq(const char* what, const std::vector<u64>& got, const std::vector<u64>& want) {
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < want.size(); i++)
        if (got[i] != want[i] && bad++ == 0) first = i;
    if (got.size() != want.size() || bad) {
        failures++;
        std::printf("FAIL %s: %zu of %zu words differ, first at %zu (got %llu want %llu)\n", what,
                    bad, want.size(), first, (unsigned long long)got[first],
                    (unsigned long long)want[first]);
    } else {
        std::printf("ok   %s (%zu words)\n", what, want.size());
    }
}

static std::mt19937_64 rng(12345);
static std::vector<u64> random_rows(unsigned comps, unsigned limbs, unsigned off) {
    std::vector<u64> v((size_t)comps * limbs * NN);
    for (unsigned c = 0; c < comps; c++)
        for (unsigned l = 0; l < limbs; l++)
            for (unsigned k = 0; k < NN; k++) v[((size_t)c * limbs + l) * NN + k] = rng() % QS[off + l];
    return v;
}
static const u64* P(const std::vector<u64>& v) { return v.data(); }
static u64* M(std::vector<u64>& v) { return v.data(); }
#define PR(t) ((const Prime*)(t).primes.data())
#define WPP(v) ((const WP*)(v).data())
#define POSTP(v) ((const Post*)(v).data())

// The reference forward NTT (ref_fwd) of every row of C components x L limbs from prime id off.
static std::vector<u64> ref_fwd_rows(const Tables& T, const std::vector<u64>& a, unsigned C,
                                     unsigned L, unsigned off) {
    std::vector<u64> want = a;
    for (unsigned c = 0; c < C; c++)
        for (unsigned l = 0; l < L; l++) {
            std::vector<u64> row(want.begin() + ((size_t)c * L + l) * NN,
                                 want.begin() + ((size_t)c * L + l + 1) * NN);
            ref_fwd(row, QS[off + l], T.psi[off + l]);
            std::copy(row.begin(), row.end(), want.begin() + ((size_t)c * L + l) * NN);
        }
    return want;
}
static void fwd_ntt_emu(const Tables& T, const u64* in, u64* out, unsigned off, unsigned limbs,
                        unsigned comps) {
    u64 n = NN, cs = (u64)limbs * NN;
    launch(dim3{16, limbs, comps}, NTT_THREADS, [&] {
        ntt_fwd_cols(in, out, PR(T), WPP(T.twf), WPP(T.reduce), off, n, cs, n, cs, 0, 0, off, 0);
    });
    launch(dim3{16, limbs, comps}, NTT_THREADS,
           [&] { ntt_fwd_rows(out, out, PR(T), WPP(T.twf), off, n, cs, n, cs); });
}
static void inv_ntt_emu(const Tables& T, const u64* in, u64* out, const std::vector<u64>& post,
                        unsigned off, unsigned limbs, unsigned comps) {
    u64 n = NN, cs = (u64)limbs * NN;
    launch(dim3{16, limbs, comps}, NTT_THREADS,
           [&] { ntt_inv_rows(in, out, PR(T), WPP(T.twi), off, n, cs, n, cs); });
    launch(dim3{16, limbs, comps}, NTT_THREADS, [&] {
        ntt_inv_cols(out, out, PR(T), WPP(T.twi), POSTP(post), off, n, cs, n, cs);
    });
}

// The paired kernels' arithmetic (ckks.cu `Loose`) at the edges of its bounds, for every
// prime: shoup_lazy3 over the whole u64 range of x (result below 3q, congruent to x * w); each
// forward butterfly kind on words drawn just below its input bound (C stages: 14q, unmarked:
// 11q) giving words below 11q / 14q; ct_out canonical from below 11q; the inverse butterfly
// from below 4q to below 4q; the same for LooseN on the primes near 2^60 (decision 0515), and its
// fold. Congruences checked mod q with 128-bit products.
static void check_loose() {
    std::mt19937_64 r(777);
    size_t bad = 0, n = 0, n_near = 0;
    auto fail = [&](const std::string& what, u64 q, u64 a, u64 b) {
        if (bad++ < 5)
            std::printf("FAIL loose %s: q %llu inputs %llu %llu\n", what.c_str(),
                        (unsigned long long)q, (unsigned long long)a, (unsigned long long)b);
    };
    for (int id = 0; id < NP; id++) {
        const u64 q = QS[id];
        auto below = [&](u64 bound) {  // mostly within 2^20 of the bound, sometimes anywhere
            return (r() % 4 == 0) ? r() % bound : bound - 1 - r() % (1ull << 20);
        };
        for (int i = 0; i < 200000; i++, n++) {
            const u64 w = (i % 97 == 0) ? q - 1 : r() % q;
            const WP wp{w, shoupc(w, q)};
            const u64 x = (i % 5 == 0) ? ~0ull - r() % 1024 : r();
            const u64 t = shoup_lazy3(x, w, wp.wp, q);
            if (t >= 3 * q || t % q != mulm(x % q, w, q)) fail("shoup_lazy3", q, x, w);
            // Forward butterflies: (x, y) -> (x + w y, x - w y) mod q; ct_out; the exchange
            // words (decision 0514: canonical under the tag, from below xput_bound in the
            // forward); the inverse butterfly. Loose on every prime, LooseN (its own bounds
            // within Loose's) on the primes near 2^60.
            auto butterflies = [&](auto arith, const std::string& pre, u64 xput_bound) {
                using A = decltype(arith);
                for (int c = 0; c < 2; c++) {
                    const u64 bin = c ? 14 * q : 11 * q, bout = c ? 11 * q : 14 * q;
                    u64 a = below(bin), b = below(bin), a0 = a, b0 = b;
                    if (c) A::template ct<true>(a, b, wp, q); else A::template ct<false>(a, b, wp, q);
                    const u64 wy = mulm(b0 % q, w, q);
                    if (a >= bout || b >= bout || a % q != addm(a0 % q, wy, q) ||
                        b % q != subm(a0 % q, wy, q))
                        fail(pre + (c ? "ct<C>" : "ct<N>"), q, a0, b0);
                }
                {
                    u64 a = below(11 * q), b = below(11 * q), a0 = a, b0 = b;
                    A::ct_out(a, b, wp, q);
                    const u64 wy = mulm(b0 % q, w, q);
                    if (a != addm(a0 % q, wy, q) || b != subm(a0 % q, wy, q))
                        fail(pre + "ct_out", q, a0, b0);
                }
                {
                    const unsigned tg = 1 + (unsigned)(r() % 14);
                    const u64 f = below(xput_bound), v = below(4 * q);
                    const u64 tf = A::xput_fwd(f, q, tg), tv = A::xput_inv(v, q, tg);
                    if ((unsigned)(tf >> 60) != tg || A::xget(tf) != f % q)
                        fail(pre + "xput_fwd", q, f, tg);
                    if ((unsigned)(tv >> 60) != tg || A::xget(tv) != v % q)
                        fail(pre + "xput_inv", q, v, tg);
                }
                {
                    u64 a = below(4 * q), b = below(4 * q), a0 = a, b0 = b;
                    A::gs(a, b, wp, q);
                    if (a >= 4 * q || b >= 3 * q || a % q != addm(a0 % q, b0 % q, q) ||
                        b % q != mulm(subm(a0 % q, b0 % q, q), w, q))
                        fail(pre + "gs", q, a0, b0);
                }
            };
            butterflies(Loose{}, "", 11 * q);
            if (!near60(q)) continue;
            // LooseN's fold: congruent and below q + 16 d for any word; canon canonical.
            {
                const u64 x = (i % 3 == 0) ? ~0ull - r() % (1ull << 36) : r();
                const u64 f = LooseN::fold(x, q), d = (1ull << 60) - q;
                if (f >= q + 16 * d || f % q != x % q) fail("LooseN fold", q, x, 0);
                if (LooseN::canon(x, q) != x % q) fail("LooseN canon", q, x, 0);
            }
            butterflies(LooseN{}, "LooseN ", 16 * q);
            n_near++;
        }
    }
    if (bad) {
        failures++;
        std::printf("FAIL loose arithmetic: %zu of %zu trials\n", bad, n);
    } else {
        std::printf("ok   loose arithmetic (%zu trials x 4 butterflies + exchange words, 9 primes; "
                    "LooseN %zu trials on the primes near 2^60)\n", n, n_near);
        if (n_near == 0) {
            failures++;
            std::printf("FAIL LooseN: no prime of the chain is near 2^60\n");
        }
    }
}

// LooseF (binary64 butterflies of the paired NTT kernels, primes below F64_Q): every result
// against exact integer arithmetic, at the magnitudes the kernels' bounds allow (decision 0511):
// products of |x| <= 2^50 within 0.75 q, forward words up to 15 q, inverse sums up to 2^50,
// canonical outputs of ct_out / gs_last, mid() within 0.5 q + 1.
static void check_loosef() {
    std::mt19937_64 r(778);
    size_t bad = 0, n = 0;
    typedef __int128 i128;
    auto fail = [&](const char* what, u64 q, long long a, long long b) {
        if (bad++ < 5) std::printf("FAIL loosef %s: q %llu inputs %lld %lld\n", what,
                                   (unsigned long long)q, a, b);
    };
    auto md = [](i128 v, u64 q) { i128 m = v % (i128)q; return (u64)(m < 0 ? m + q : m); };
    auto dv = [](long long v) { return LooseF::b((double)v); };  // exact: |v| < 2^53
    auto iv = [](u64 bits) { return (long long)LooseF::d(bits); };
    int primes = 0;
    for (int id = 0; id < NP; id++) {
        const u64 q = QS[id];
        if (q >= F64_Q) continue;
        primes++;
        // Mostly near the bound (either sign), sometimes anywhere below it.
        auto near = [&](long long bound) {
            const long long m = (r() % 4 == 0) ? (long long)(r() % (u64)bound)
                                                : bound - 1 - (long long)(r() % (1ull << 20));
            return (r() & 1) ? -m : m;
        };
        for (int i = 0; i < 200000; i++, n++) {
            const u64 w = (i % 97 == 0) ? q - 1 : r() % q;
            const WP wp{w, shoupc(w, q)};
            const double qd = (double)q, qi = 1.0 / qd;
            {
                const long long x = near(1ll << 50);
                const double m = LooseF::mulmod((double)x, LooseF::num(w), qd, qi);
                const long long mi = (long long)m;
                if ((double)mi != m || (i128)4 * (mi < 0 ? -mi : mi) > (i128)3 * q ||
                    md(mi, q) != md((i128)x * w, q))
                    fail("mulmod", q, x, (long long)w);
            }
            {  // forward: inputs up to 15 q of either sign
                const long long a0 = near(15 * (long long)q), b0 = near(15 * (long long)q);
                u64 a = dv(a0), b = dv(b0);
                LooseF::ct<true>(a, b, wp, q);
                const u64 wy = md((i128)b0 * w, q);
                const long long ai = iv(a), bi = iv(b);
                if ((i128)4 * ((ai > a0 ? ai - a0 : a0 - ai)) > (i128)3 * q ||
                    md(ai, q) != addm(md(a0, q), wy, q) || md(bi, q) != subm(md(a0, q), wy, q))
                    fail("ct", q, a0, b0);
                u64 c = dv(a0), e = dv(b0);
                LooseF::ct_out(c, e, wp, q);
                if (c != addm(md(a0, q), wy, q) || e != subm(md(a0, q), wy, q))
                    fail("ct_out", q, a0, b0);
                // The exchange word (decision 0514) of a forward word: the tag in bits 60-63,
                // the same integer back.
                const unsigned tg = 1 + (unsigned)(r() % 14);
                const u64 t = LooseF::xput_fwd(dv(a0), q, tg);
                if ((unsigned)(t >> 60) != tg || iv(LooseF::xget(t)) != a0)
                    fail("xput_fwd", q, a0, tg);
            }
            {  // inverse: sums up to 2^49 each (x - y up to 2^50)
                const long long a0 = near(1ll << 49), b0 = near(1ll << 49);
                u64 a = dv(a0), b = dv(b0);
                LooseF::gs(a, b, wp, q);
                const long long ai = iv(a), bi = iv(b);
                if (ai != a0 + b0 || (i128)4 * (bi < 0 ? -bi : bi) > (i128)3 * q ||
                    md(bi, q) != md((i128)(a0 - b0) * w, q))
                    fail("gs", q, a0, b0);
                const Post c{WP{w, wp.wp}, WP{(w * 3 + 1) % q, shoupc((w * 3 + 1) % q, q)}};
                u64 x = dv(a0), y = dv(b0);
                LooseF::gs_last(x, y, c, q);
                if (x != md((i128)(a0 + b0) * c.s.w, q) || y != md((i128)(a0 - b0) * c.f.w, q))
                    fail("gs_last", q, a0, b0);
                const long long mi = iv(LooseF::mid(dv(a0 + b0), q));
                if (2 * (mi < 0 ? -mi : mi) > (long long)q + 2 || md(mi, q) != md(a0 + b0, q))
                    fail("mid", q, a0, b0);
                const unsigned tg = 1 + (unsigned)(r() % 14);
                const u64 t = LooseF::xput_inv(dv(a0 + b0), q, tg);
                if ((unsigned)(t >> 60) != tg || iv(LooseF::xget(t)) != mi)
                    fail("xput_inv", q, a0 + b0, tg);
            }
            {  // conversions of canonical (and below-4q) words
                const u64 x = r() % (4 * q);
                if (iv(LooseF::in(x)) != (long long)x) fail("in", q, (long long)x, 0);
            }
            if (i == 0) {  // the exchange's ends: +-0 and the largest forward words
                for (long long v : {0ll, 15 * (long long)q - 1, 1 - 15 * (long long)q}) {
                    const u64 t = LooseF::xput_fwd(dv(v), q, 14);
                    if ((unsigned)(t >> 60) != 14 || iv(LooseF::xget(t)) != v) fail("xput edge", q, v, 0);
                }
                const u64 nz = LooseF::xput_fwd(LooseF::b(-0.0), q, 3);
                if (nz != LooseF::xput_fwd(0, q, 3) || LooseF::xget(nz) != 0) fail("xput -0", q, 0, 0);
            }
        }
    }
    if (bad || primes == 0) {
        failures++;
        std::printf("FAIL binary64 arithmetic: %zu of %zu trials (%d primes)\n", bad, n, primes);
    } else {
        std::printf("ok   binary64 arithmetic (%zu trials x 8 checks, %d primes)\n", n, primes);
    }
}

int main() {
    Tables T = make_tables();
    check_loose();
    check_loosef();
    std::printf("tables built; psi[0] = %llu (spec 81696219706)\n", (unsigned long long)T.psi[0]);
    // 1a. The paired kernels over primes 6 (~2^40: binary64 butterflies), 7 and 8 (~2^60:
    // integer): limb rows 1 and 2 (the last two: row 0's prime is not wide) are transposed
    // (decision 0511), both groups integer; row 0 holds both binary64 components of prime 6.
    // Test 1 below runs primes 5, 6, 7: the engine's shape (the wide prime last), each block of
    // rows 1 and 2 an integer group (prime 7) beside a binary64 one (prime 6); test 1b runs
    // primes 7, 8 (a chain that starts wide: rows 0 and 1). Canonical inputs and words below 4q,
    // both directions. Passes 2 and 3 repeat passes 0 and 1 with ntt_fwd_gpn / ntt_inv_gpn (the
    // wide primes 7 and 8 are near 2^60: LooseN, decision 0515).
    for (int pass = 0; pass < 4; pass++) {
        const unsigned off = pass % 2 == 0 ? 6u : 7u;
        const bool gpn = pass >= 2;
        if (pass == 2) std::printf("--   the same by ntt_fwd_gpn / ntt_inv_gpn (LooseN):\n");
        auto fwd_gp = gpn ? ntt_fwd_gpn : ntt_fwd_gp;
        auto inv_gp = gpn ? ntt_inv_gpn : ntt_inv_gp;
        unsigned L = off == 6 ? 3 : 2, C = 2;
        u64 n = NN, cs = (u64)L * NN;
        auto a = random_rows(C, L, off);
        const std::vector<u64> want = ref_fwd_rows(T, a, C, L, off);
        std::vector<unsigned> pctr(2 * (GP_CTR2 + L), 0u);
        std::vector<u64> pxch(2 * (size_t)L * NN, 0ull);  // the counters' exchange scratch
        std::vector<u64> out(a.size(), ~0ull), back(a.size(), ~0ull);
        launch_cluster(dim3{2 * CL, L, 1}, GS_THREADS, [&] {
            fwd_gp(P(a), M(out), PR(T), WPP(T.twf), off, n, cs, pctr.data(), pxch.data());
        });
        expect_eq("forward NTT, transposed rows (paired blocks)", out,
                  want);
        launch_cluster(dim3{2 * CL, L, 1}, GS_THREADS, [&] {
            inv_gp(P(out), M(back), PR(T), WPP(T.twi), POSTP(T.n_inv), off, n, cs,
                       pctr.data(), pxch.data());
        });
        expect_eq("inverse NTT round trip, transposed rows (paired blocks)", back, a);
        std::vector<u64> a4(a.size()), f4(a.size());
        for (size_t i = 0; i < a.size(); i++) {
            const u64 q = QS[off + (i / NN) % L];
            a4[i] = a[i] + q * (rng() % 4);
            f4[i] = want[i] + q * (rng() % 4);
        }
        std::fill(out.begin(), out.end(), ~0ull);
        std::fill(back.begin(), back.end(), ~0ull);
        launch_cluster(dim3{2 * CL, L, 1}, GS_THREADS, [&] {
            fwd_gp(P(a4), M(out), PR(T), WPP(T.twf), off, n, cs, pctr.data(), pxch.data());
        });
        expect_eq("forward NTT of words below 4q, transposed rows (paired blocks)",
                  out, want);
        launch_cluster(dim3{2 * CL, L, 1}, GS_THREADS, [&] {
            inv_gp(P(f4), M(back), PR(T), WPP(T.twi), POSTP(T.n_inv), off, n, cs,
                       pctr.data(), pxch.data());
        });
        expect_eq("inverse NTT of words below 4q, transposed rows (paired blocks)",
                  back, a);
        for (size_t i = 0; i < pctr.size(); i++)
            // 4 launches, 2 CL groups per (prime, component) each, on odd words only.
            if (pctr[i] != (i % 2 == 1 && (i < 2 * L || i >= 2 * GP_CTR2) ? 8u * CL : 0u)) {
                std::printf("FAIL transposed paired counter %zu: %u after 4 launches\n", i,
                            pctr[i]);
                std::exit(1);
            }
    }
    // 1c. The paired kernels' exchange (decision 0514) across launches of one counter region:
    // 30 launches (more than twice GP_TAGS) of one limb row, both components, alternating
    // forward / inverse and, every two launches, a binary64 prime (6) / the wide prime (7) on the
    // same counters and scratch, whose counters wrap past 2^32 on the way; each into an output
    // holding words under every tag (as a recycled buffer may). After each launch: the words
    // against the reference, and every scratch word of both regions under the launch's tag.
    {
        std::vector<unsigned> xc(2 * (GP_CTR2 + 1), 0u);
        xc[1] = xc[2 * GP_CTR2 + 1] = 0u - 6u * GP_BLOCKS;
        std::vector<u64> xs(2 * (size_t)NN, 0ull);
        size_t bad_words = 0, bad_tags = 0;
        for (int k = 0; k < 30; k++) {
            const unsigned off = 6 + (unsigned)(k / 2) % 2;
            const bool fwd = k % 2 == 0;
            const u64 n = NN, cs = NN;
            const auto a = random_rows(2, 1, off);
            const auto f = ref_fwd_rows(T, a, 2, 1, off);
            const std::vector<u64>& in = fwd ? a : f;
            const std::vector<u64>& want = fwd ? f : a;
            std::vector<u64> out(a.size());
            for (size_t i = 0; i < out.size(); i++) out[i] = ((u64)(i % 16) << 60) | (rng() >> 4);
            launch_cluster(dim3{2 * CL, 1, 1}, GS_THREADS, [&] {
                if (fwd)
                    ntt_fwd_gp(P(in), M(out), PR(T), WPP(T.twf), off, n, cs, xc.data(), xs.data());
                else
                    ntt_inv_gp(P(in), M(out), PR(T), WPP(T.twi), POSTP(T.n_inv), off, n, cs,
                               xc.data(), xs.data());
            });
            for (size_t i = 0; i < out.size(); i++) bad_words += out[i] != want[i];
            for (unsigned c = 0; c < 2; c++) {
                const unsigned tg = gp_tag(xc[c == 0 ? 1 : 2 * GP_CTR2 + 1]);
                for (size_t i = 0; i < NN; i++) bad_tags += (unsigned)(xs[c * NN + i] >> 60) != tg;
            }
        }
        if (bad_words || bad_tags || xc[1] != 24u * GP_BLOCKS || xc[2 * GP_CTR2 + 1] != xc[1]) {
            failures++;
            std::printf("FAIL exchange across 30 launches: %zu words wrong, %zu scratch words "
                        "not under their launch's tag, counters %u %u\n",
                        bad_words, bad_tags, xc[1], xc[2 * GP_CTR2 + 1]);
        } else {
            std::printf("ok   exchange across 30 launches (tags wrap, counters wrap, binary64 and "
                        "wide primes on one region, recycled outputs)\n");
        }
    }
    // 1d. xch_take's second look: eight words under the previous tag that another thread
    // replaces one by one after the first check; the words come back untagged, for both kinds.
    {
        size_t bad = 0;
        for (int kind = 0; kind < 2; kind++) {
            const unsigned tg = 1 + (unsigned)kind * 13;  // 1 (after 14) and 14
            const unsigned old = tg == 1 ? GP_TAGS : tg - 1;
            const u64 q = QS[kind == 0 ? 7 : 6];
            std::vector<u64> mem(8);
            auto put = [&](u64 v, unsigned g) {
                return kind == 0 ? Loose::xput_fwd(v, q, g)
                                 : LooseF::xput_fwd(LooseF::b((double)v), q, g);
            };
            for (int e = 0; e < 8; e++) mem[e] = put(1000 + e, old);
            u64 x[8];
            for (int e = 0; e < 8; e++) x[e] = mem[e];
            std::thread wr([&] {
                for (int e = 7; e >= 0; e--) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(2));
                    st_rlx64(&mem[e], put(7 * (u64)e + 5, tg));
                }
            });
            auto at = [&](int e) { return (const u64*)&mem[e]; };
            if (kind == 0) xch_take<Loose>(x, at, tg); else xch_take<LooseF>(x, at, tg);
            wr.join();
            for (int e = 0; e < 8; e++) {
                const u64 got = kind == 0 ? x[e] : (u64)(long long)LooseF::d(x[e]);
                bad += got != 7 * (u64)e + 5;
            }
        }
        if (bad) {
            failures++;
            std::printf("FAIL xch_take after late words: %zu of 16 words wrong\n", bad);
        } else {
            std::printf("ok   xch_take waits for late words (integer and binary64)\n");
        }
    }
    // 1. forward / inverse NTT over 2 components x 3 limbs from prime id 5 (5, 6, 7).
    {
        unsigned off = 5, L = 3, C = 2;
        auto a = random_rows(C, L, off);
        std::vector<u64> out(a.size(), ~0ull), want = ref_fwd_rows(T, a, C, L, off);
        fwd_ntt_emu(T, P(a), M(out), off, L, C);
        expect_eq("forward NTT 2 x 3 limbs", out, want);
        std::vector<u64> back(a.size(), ~0ull);
        inv_ntt_emu(T, P(out), M(back), T.n_inv, off, L, C);
        expect_eq("inverse NTT round trip", back, a);
        // One-launch cluster kernels, same data.
        std::vector<u64> out_cl(a.size(), ~0ull), back_cl(a.size(), ~0ull);
        u64 n = NN, cs = (u64)L * NN;
        launch_cluster(dim3{CL, L, C}, CL_THREADS, [&] {
            ntt_fwd_cl(P(a), M(out_cl), PR(T), WPP(T.twf), WPP(T.reduce), off, n, cs, n, cs, 0, 0,
                       off, 0);
        });
        expect_eq("forward NTT 2 x 3 limbs (cluster, one launch)", out_cl, want);
        launch_cluster(dim3{CL, L, C}, CL_THREADS, [&] {
            ntt_inv_cl(P(out_cl), M(back_cl), PR(T), WPP(T.twi), POSTP(T.n_inv), off, n, cs, n, cs);
        });
        expect_eq("inverse NTT round trip (cluster, one launch)", back_cl, a);
        // Cluster kernels with the twiddles preloaded into registers.
        std::vector<u64> out_r(a.size(), ~0ull), back_r(a.size(), ~0ull);
        launch_cluster(dim3{CL, L, C}, CL_THREADS, [&] {
            ntt_fwd_clr(P(a), M(out_r), PR(T), WPP(T.twf), WPP(T.reduce), off, n, cs, n, cs, 0, 0,
                        off, 0);
        });
        expect_eq("forward NTT 2 x 3 limbs (cluster, preloaded twiddles)", out_r, want);
        launch_cluster(dim3{CL, L, C}, CL_THREADS, [&] {
            ntt_inv_clr(P(out_r), M(back_r), PR(T), WPP(T.twi), POSTP(T.n_inv), off, n, cs, n, cs);
        });
        expect_eq("inverse NTT round trip (cluster, preloaded twiddles)", back_r, a);
        // The same without clusters: global exchange and per-limb counters.
        // The counters only grow (by CL per launch); start the second limb's just below 2^32 so
        // its target wraps during the test.
        std::vector<unsigned> ctr(2 * L * C, 0u);
        ctr[2] = 0u - 2u * CL;
        const std::vector<unsigned> ctr0 = ctr;
        std::vector<u64> out_g(a.size(), ~0ull), back_g(a.size(), ~0ull);
        for (int rep = 0; rep < 2; rep++) {  // the same counters serve every launch
            launch_cluster(dim3{CL, L, C}, GS_THREADS, [&] {
                ntt_fwd_gs(P(a), M(out_g), PR(T), WPP(T.twf), WPP(T.reduce), off, n, cs, n, cs, 0,
                           0, off, 0, ctr.data());
            });
            expect_eq("forward NTT 2 x 3 limbs (global exchange)", out_g, want);
            launch_cluster(dim3{CL, L, C}, GS_THREADS, [&] {
                ntt_inv_gs(P(out_g), M(back_g), PR(T), WPP(T.twi), POSTP(T.n_inv), off, n, cs, n,
                           cs, ctr.data());
            });
            expect_eq("inverse NTT round trip (global exchange)", back_g, a);
        }
        for (size_t i = 0; i < ctr.size(); i++)
            if (ctr[i] != ctr0[i] + (i % 2 == 0 ? 4u * CL : 0u)) {  // 4 launches, CL blocks each
                std::printf("FAIL counter %zu: %u after 4 launches from %u\n", i, ctr[i], ctr0[i]);
                std::exit(1);
            }
        // Both components of each limb by paired blocks (ntt_fwd_gp / ntt_inv_gp, C == 2):
        // component 0 of limb y counts on word 2y + 1, component 1 on word 2 (y + GP_CTR2) + 1
        // (the engine's stream state holds 2 SYNC_SLOTS words), 2 CL blocks per launch; the
        // first limb's counters start just below 2^32 so their targets wrap.
        if (C == 2) {
            std::vector<unsigned> pctr(2 * (GP_CTR2 + L), 0u);
            std::vector<u64> pxch(2 * (size_t)L * NN, 0ull);
            pctr[1] = 0u - 2u * CL;
            pctr[2 * GP_CTR2 + 1] = 0u - 2u * CL;
            const std::vector<unsigned> pctr0 = pctr;
            auto fwd_gp = [&](const std::vector<u64>& in, std::vector<u64>& out) {
                launch_cluster(dim3{2 * CL, L, 1}, GS_THREADS, [&] {
                    ntt_fwd_gp(P(in), M(out), PR(T), WPP(T.twf), off, n, cs, pctr.data(), pxch.data());
                });
            };
            auto inv_gp = [&](const std::vector<u64>& in, std::vector<u64>& out) {
                launch_cluster(dim3{2 * CL, L, 1}, GS_THREADS, [&] {
                    ntt_inv_gp(P(in), M(out), PR(T), WPP(T.twi), POSTP(T.n_inv), off, n, cs,
                               pctr.data(), pxch.data());
                });
            };
            std::vector<u64> out_p(a.size(), ~0ull), back_p(a.size(), ~0ull);
            for (int rep = 0; rep < 2; rep++) {
                fwd_gp(a, out_p);
                expect_eq("forward NTT 2 x 3 limbs (paired blocks)", out_p, want);
                inv_gp(out_p, back_p);
                expect_eq("inverse NTT round trip (paired blocks)", back_p, a);
            }
            // Words below 4q (the paired kernels' input bound), both directions.
            std::vector<u64> a4(a.size()), f4(a.size()), o4(a.size(), ~0ull), b4(a.size(), ~0ull);
            for (size_t i = 0; i < a.size(); i++) {
                const u64 q = QS[off + (i / NN) % L];
                a4[i] = a[i] + q * (rng() % 4);
                f4[i] = want[i] + q * (rng() % 4);
            }
            fwd_gp(a4, o4);
            expect_eq("forward NTT of words below 4q (paired blocks)", o4, want);
            inv_gp(f4, b4);
            expect_eq("inverse NTT of words below 4q (paired blocks)", b4, a);
            for (size_t i = 0; i < pctr.size(); i++)
                // 6 launches, 2 CL blocks each, on the odd words of both components' limbs.
                if (pctr[i] != pctr0[i] + (i % 2 == 1 && (i < 2 * L || i >= 2 * GP_CTR2)
                                               ? 12u * CL
                                               : 0u)) {
                    std::printf("FAIL paired counter %zu: %u after 6 launches from %u\n", i,
                                pctr[i], pctr0[i]);
                    std::exit(1);
                }
            // One component (the engine's single polynomials: v in encryption, decryption's
            // rows): the same kernels with GS_THREADS / 2 threads, group 0 alone, 2 CL blocks
            // per limb; component 1's words must stay untouched, only component 0's counters
            // move.
            std::vector<unsigned> c1(2 * (GP_CTR2 + L), 0u);
            std::vector<u64> x1(2 * (size_t)L * NN, 0ull);
            std::vector<u64> o1(a.size(), ~0ull), b1(a.size(), ~0ull);
            const size_t one = (size_t)L * NN;
            std::vector<u64> want1(a.size(), ~0ull), a1(a.size(), ~0ull);
            std::copy(want.begin(), want.begin() + one, want1.begin());
            std::copy(a.begin(), a.begin() + one, a1.begin());
            for (int rep = 0; rep < 2; rep++) {
                launch_cluster(dim3{2 * CL, L, 1}, GS_THREADS / 2, [&] {
                    ntt_fwd_gp(P(a), M(o1), PR(T), WPP(T.twf), off, n, cs, c1.data(), x1.data());
                });
                expect_eq("forward NTT 1 x 3 limbs (paired kernel, one group)", o1, want1);
                launch_cluster(dim3{2 * CL, L, 1}, GS_THREADS / 2, [&] {
                    ntt_inv_gp(P(o1), M(b1), PR(T), WPP(T.twi), POSTP(T.n_inv), off, n, cs,
                               c1.data(), x1.data());
                });
                expect_eq("inverse NTT round trip 1 x 3 limbs (paired kernel, one group)", b1, a1);
            }
            for (size_t i = 0; i < c1.size(); i++)
                if (c1[i] != (i % 2 == 1 && i < 2 * L ? 8u * CL : 0u)) {  // 4 launches x 2 CL
                    std::printf("FAIL one-group counter %zu: %u after 4 launches\n", i, c1[i]);
                    std::exit(1);
                }
        }
        // Non-canonical inputs below 2^64 on the forward path (the pre-step reduces any word).
        std::vector<u64> big(a.size()), out_big(a.size(), ~0ull);
        for (size_t i = 0; i < a.size(); i++) big[i] = a[i] + QS[off + (i / NN) % L] * (rng() % 7);
        launch_cluster(dim3{CL, L, C}, CL_THREADS, [&] {
            ntt_fwd_cl(P(big), M(out_big), PR(T), WPP(T.twf), WPP(T.reduce), off, n, cs, n, cs, 0,
                       0, off, 0);
        });
        expect_eq("forward NTT of unreduced words (cluster)", out_big, want);
        // Canonical input without the pre-step (pre == nullptr), both kernel paths.
        std::vector<u64> out_raw(a.size(), ~0ull), out_raw2(a.size(), ~0ull);
        launch_cluster(dim3{CL, L, C}, CL_THREADS, [&] {
            ntt_fwd_cl(P(a), M(out_raw), PR(T), WPP(T.twf), nullptr, off, n, cs, n, cs, 0, 0, off,
                       0);
        });
        expect_eq("forward NTT, canonical input, no pre-step (cluster)", out_raw, want);
        launch(dim3{16, L, C}, NTT_THREADS, [&] {
            ntt_fwd_cols(P(a), M(out_raw2), PR(T), WPP(T.twf), nullptr, off, n, cs, n, cs, 0, 0,
                         off, 0);
        });
        launch(dim3{16, L, C}, NTT_THREADS,
               [&] { ntt_fwd_rows(M(out_raw2), M(out_raw2), PR(T), WPP(T.twf), off, n, cs, n, cs); });
        expect_eq("forward NTT, canonical input, no pre-step (two-pass)", out_raw2, want);
        // Signed int64 input (mode 1), one row read by every limb (in_ys = 0) and components
        // written a gap apart (out_zs = 2 limbs' worth): the errors of key generation
        // (decision 0531), on the cluster, global-exchange and two-pass kernels. The gap rows
        // must stay untouched.
        {
            std::vector<u64> e((size_t)C * NN);
            for (auto& x : e) x = (u64)((i64)(rng() % 63) - 31);
            e[0] = (u64)(i64)-31;
            e[1] = 31;
            // A few words far outside the small range, either sign (none a multiple of a
            // prime): the kernels reduce every signed word, however large.
            e[2] = (u64)(-(i64)(1ull << 62) - 12345);
            e[3] = (1ull << 62) + 777;
            e[4] = (u64)(-(i64)QS[off] - 5);
            e[5] = QS[off] + 5;
            e[6] = (u64)(INT64_MIN + 1);
            const u64 ozs = 2 * cs;
            std::vector<u64> want_s((size_t)C * ozs, ~0ull);
            for (unsigned c = 0; c < C; c++)
                for (unsigned l = 0; l < L; l++) {
                    const u64 q = QS[off + l];
                    std::vector<u64> row(NN);
                    for (unsigned k = 0; k < NN; k++) {
                        const i64 v = (i64)e[(size_t)c * NN + k];
                        row[k] = v < 0 ? q - (u64)(-v) % q : (u64)v % q;
                    }
                    ref_fwd(row, q, T.psi[off + l]);
                    std::copy(row.begin(), row.end(), want_s.begin() + (size_t)c * ozs + (size_t)l * NN);
                }
            std::vector<u64> s_cl((size_t)C * ozs, ~0ull), s_gs((size_t)C * ozs, ~0ull),
                s_2p((size_t)C * ozs, ~0ull);
            launch_cluster(dim3{CL, L, C}, CL_THREADS, [&] {
                ntt_fwd_cl(P(e), M(s_cl), PR(T), WPP(T.twf), WPP(T.reduce), off, 0, n, n, ozs, 1,
                           0, off, 0);
            });
            expect_eq("forward NTT of signed rows shared by every limb (cluster)", s_cl, want_s);
            std::vector<unsigned> sctr(2 * L * C, 0u);
            launch_cluster(dim3{CL, L, C}, GS_THREADS, [&] {
                ntt_fwd_gs(P(e), M(s_gs), PR(T), WPP(T.twf), WPP(T.reduce), off, 0, n, n, ozs, 1, 0,
                           off, 0, sctr.data());
            });
            expect_eq("forward NTT of signed rows shared by every limb (global exchange)", s_gs,
                      want_s);
            // As a queue of work items (ntt_fwd_gq: the engine's path when the limbs exceed
            // one cooperative wave, as a key's digits x rows do); its state must come back
            // zeroed.
            std::vector<u64> s_gq((size_t)C * ozs, ~0ull);
            std::vector<unsigned> sqs(2 + 2 * (size_t)L * C, 0u);
            launch_cluster(dim3{CL, 1, 1}, GS_THREADS, [&] {
                ntt_fwd_gq(P(e), M(s_gq), PR(T), WPP(T.twf), WPP(T.reduce), off, 0, n, n, ozs, 1,
                           0, off, 0, L, C, sqs.data());
            });
            expect_eq("forward NTT of signed rows shared by every limb (work queue)", s_gq, want_s);
            for (unsigned v : sqs)
                if (v != 0) {
                    std::printf("FAIL ntt_fwd_gq left its queue state nonzero (signed rows)\n");
                    std::exit(1);
                }
            launch(dim3{16, L, C}, NTT_THREADS, [&] {
                ntt_fwd_cols(P(e), M(s_2p), PR(T), WPP(T.twf), WPP(T.reduce), off, 0, n, n, ozs, 1,
                             0, off, 0);
            });
            launch(dim3{16, L, C}, NTT_THREADS,
                   [&] { ntt_fwd_rows(M(s_2p), M(s_2p), PR(T), WPP(T.twf), off, n, ozs, n, ozs); });
            expect_eq("forward NTT of signed rows shared by every limb (two-pass)", s_2p, want_s);
        }
    }
    // 2. key switch of a rotation at prime offset 6 (L = 2 Q rows + P), g = 3.
    for (int mode = 0; mode < 2; mode++) {
        unsigned off = 6, L = 2, rows = L + 1;
        u64 g = mode == 0 ? 3 : 1;  // mode 1: relinearization shape (no automorphism, add1)
        u64 ginv = 1;
        for (u64 x = 1; x < 2 * NN; x += 2)
            if (g * x % (2 * NN) == 1) ginv = x;
        auto ct = random_rows(2, L, off);
        // The largest residues of each digit (c1's limbs), which a ModUp into a smaller target
        // prime must reduce (q7 -> P here: q7 - 1 - k lies in [P, q7)).
        for (unsigned j = 0; j < L; j++)
            for (unsigned k = 0; k < 32; k++) ct[((size_t)L + j) * NN + k] = QS[off + j] - 1 - k;
        auto add1 = random_rows(1, L, off);
        // key [8][2][9][N], random canonical per row prime
        std::vector<u64> key((size_t)8 * 2 * 9 * NN);
        for (unsigned d = 0; d < 8; d++)
            for (unsigned c = 0; c < 2; c++)
                for (unsigned r = 0; r < 9; r++)
                    for (unsigned k = 0; k < NN; k++)
                        key[(((size_t)d * 2 + c) * 9 + r) * NN + k] = rng() % QS[r];
        // reference
        auto aut = [&](const u64* row, u64 q, std::vector<u64>& out) {
            for (unsigned i = 0; i < NN; i++) {
                u64 t = g * i % (2 * NN);
                if (t < NN)
                    out[t] = row[i];
                else
                    out[t - NN] = row[i] == 0 ? 0 : q - row[i];
            }
        };
        std::vector<std::vector<u64>> c1(L, std::vector<u64>(NN)), c0(L, std::vector<u64>(NN));
        for (unsigned j = 0; j < L; j++) {
            aut(&ct[(size_t)j * NN], QS[off + j], c0[j]);
            aut(&ct[((size_t)L + j) * NN], QS[off + j], c1[j]);
        }
        std::vector<std::vector<u64>> acc0(rows, std::vector<u64>(NN, 0)), acc1 = acc0;
        for (unsigned r = 0; r < rows; r++) {
            u64 qt = QS[off + r];
            for (unsigned j = 0; j < L; j++) {
                u64 qj = QS[off + j];
                std::vector<u64> d(NN);
                for (unsigned k = 0; k < NN; k++) {
                    u64 x = c1[j][k];
                    d[k] = x > (qj - 1) / 2 ? subm(x % qt, qj % qt, qt) : x % qt;
                }
                ref_fwd(d, qt, T.psi[off + r]);
                for (unsigned k = 0; k < NN; k++) {
                    size_t b0 = (((size_t)(off + j) * 2 + 0) * 9 + off + r) * NN + k;
                    size_t b1 = (((size_t)(off + j) * 2 + 1) * 9 + off + r) * NN + k;
                    acc0[r][k] = addm(acc0[r][k], mulm(d[k], key[b0], qt), qt);
                    acc1[r][k] = addm(acc1[r][k], mulm(d[k], key[b1], qt), qt);
                }
            }
            ref_inv(acc0[r], qt, T.psi[off + r]);
            ref_inv(acc1[r], qt, T.psi[off + r]);
        }
        std::vector<u64> want((size_t)2 * L * NN);
        for (unsigned c = 0; c < 2; c++)
            for (unsigned i = 0; i < L; i++) {
                u64 q = QS[off + i], pinv = invm(QS[8] % q, q);
                auto& acc = c == 0 ? acc0 : acc1;
                for (unsigned k = 0; k < NN; k++) {
                    u64 v = mulm(subm(acc[i][k], acc[L][k] % q, q), pinv, q);
                    if (c == 0) v = addm(v, mode == 0 ? c0[i][k] : ct[(size_t)i * NN + k], q);
                    if (c == 1 && mode == 1) v = addm(v, add1[(size_t)i * NN + k], q);
                    want[((size_t)c * L + i) * NN + k] = v;
                }
            }
        // emulated pipeline (as CudaEngine::key_switch)
        u64 n = NN;
        std::vector<u64> ext((size_t)L * rows * NN, ~0ull), acc((size_t)2 * rows * NN, ~0ull),
            out((size_t)2 * L * NN, ~0ull);
        const u64* src = P(ct) + (size_t)L * NN;
        unsigned gi = mode == 0 ? (unsigned)ginv : 0;
        launch(dim3{16, rows, L}, NTT_THREADS, [&] {
            ntt_fwd_cols(src, M(ext), PR(T), WPP(T.twf), WPP(T.reduce), off, 0, n, n, rows * n, 0,
                         gi, off, 1);
        });
        launch(dim3{16, rows, 1}, NTT_THREADS, [&] {
            ks_inner(P(ext), P(key), M(acc), PR(T), WPP(T.twf), WPP(T.twi), off, L, rows,
                     2 * 9 * n, 9 * n);
        });
        launch(dim3{16, rows, 2}, NTT_THREADS, [&] {
            ntt_inv_cols(P(acc), M(acc), PR(T), WPP(T.twi), POSTP(T.ks_post), off, n, rows * n, n,
                         rows * n);
        });
        launch_ew(dim3{NN / 256, L, 2}, 256, [&] {
            // The addend after the wait here (adds_early = 0), before it below: the same words.
            ks_moddown(P(acc), P(ct), mode == 1 ? P(add1) : nullptr, M(out), PR(T), WPP(T.p_inv),
                       off, L, gi, 0);
        });
        expect_eq(mode == 0 ? "rotate key switch (g = 3, L = 2)"
                            : "relinearize-shaped key switch (L = 2)",
                  out, want);
        // Cluster pipeline (as CudaEngine::key_switch with clusters): ModUp + whole forward
        // NTT per (target row, digit), inner product + whole inverse NTT per (row, component),
        // ModDown.
        std::vector<u64> ext2((size_t)L * rows * NN, ~0ull), acc2((size_t)2 * rows * NN, ~0ull),
            out2((size_t)2 * L * NN, ~0ull);
        launch_cluster(dim3{CL, rows, L}, CL_THREADS, [&] {
            ntt_fwd_cl(src, M(ext2), PR(T), WPP(T.twf), WPP(T.reduce), off, 0, n, n, rows * n, 0,
                       gi, off, 1);
        });
        // The same ModUp as a queue of work items (ntt_fwd_gq: the automorphism as the same
        // output permutation, CL blocks taking every item; twice, as the state must come back
        // zeroed).
        std::vector<unsigned> qs(2 + 2 * (size_t)rows * L, 0u);
        for (int rep = 0; rep < 2; rep++) {
            std::vector<u64> ext3(ext2.size(), ~0ull);
            launch_cluster(dim3{CL, 1, 1}, GS_THREADS, [&] {
                ntt_fwd_gq(src, M(ext3), PR(T), WPP(T.twf), WPP(T.reduce), off, 0, n, n, rows * n,
                           0, gi, off, 1, rows, L, qs.data());
            });
            expect_eq("ModUp as a work queue (global exchange)", ext3, ext2);
            for (unsigned v : qs)
                if (v != 0) {
                    std::printf("FAIL ntt_fwd_gq left its queue state nonzero\n");
                    std::exit(1);
                }
        }
        launch_cluster(dim3{CL, rows, 2}, CL_THREADS, [&] {
            ks_inner_cl(P(ext2), P(key), M(acc2), PR(T), WPP(T.twi), POSTP(T.ks_post), off, L, rows,
                        2 * 9 * n, 9 * n, nullptr, 0, nullptr);
        });
        launch_ew(dim3{NN / 256, L, 2}, 256, [&] {
            ks_moddown(P(acc2), P(ct), mode == 1 ? P(add1) : nullptr, M(out2), PR(T),
                       WPP(T.p_inv), off, L, gi, 1);
        });
        expect_eq(mode == 0 ? "rotate key switch (g = 3, L = 2, cluster kernels)"
                            : "relinearize-shaped key switch (L = 2, cluster kernels)",
                  out2, want);
        // The inner product and inverse NTT without clusters (ks_inner_gs: global exchange,
        // one counter pair per (row, component)): the same accumulators word for word.
        std::vector<unsigned> ks_ctr((size_t)2 * rows * 2, 0u);
        std::vector<u64> acc_g(acc2.size(), ~0ull);
        launch_cluster(dim3{CL, rows, 2}, GS_THREADS, [&] {
            ks_inner_gs(P(ext2), P(key), M(acc_g), PR(T), WPP(T.twi), POSTP(T.ks_post), off, L, rows,
                        2 * 9 * n, 9 * n, nullptr, 0, nullptr, ks_ctr.data());
        });
        expect_eq("key inner product + inverse NTT (global exchange)", acc_g, acc2);
        if (mode == 0) {
            // Hoisted (decision 0509): the ModUp without sigma_g, then sigma_g of the extended
            // digits as aut_ntt's slot permutation = the rotated ModUp; ks_inner_gh reading
            // the un-rotated digits through sigma_g = the accumulators of the single rotation.
            std::vector<u64> ext0(ext2.size(), ~0ull), exth(ext2.size(), ~0ull),
                acc_h(acc2.size(), ~0ull);
            launch_cluster(dim3{CL, rows, L}, CL_THREADS, [&] {
                ntt_fwd_cl(src, M(ext0), PR(T), WPP(T.twf), WPP(T.reduce), off, 0, n, n,
                           rows * n, 0, 0, off, 1);
            });
            launch_ew(dim3{NN / 256, rows, L}, 256, [&] { aut_ntt(P(ext0), M(exth), (uint32_t)g); });
            expect_eq("hoisted ModUp: aut_ntt of the unrotated digits", exth, ext2);
            launch_cluster(dim3{CL, rows, 2}, GS_THREADS, [&] {
                ks_inner_gh(P(ext0), P(key), M(acc_h), PR(T), WPP(T.twi), POSTP(T.ks_post), off,
                            L, rows, 2 * 9 * n, 9 * n, nullptr, 0, nullptr, (uint32_t)g,
                            ks_ctr.data());
            });
            expect_eq("hoisted inner product through sigma_g (ks_inner_gh)", acc_h, acc2);
        }
        if (mode == 1) {
            // Relinearize as CudaEngine runs it: the two added rows enter ks_inner_cl in NTT
            // form times P (no inverse NTT of them), ks_moddown adds nothing.
            std::vector<u64> addn((size_t)2 * L * NN);
            for (unsigned c = 0; c < 2; c++)
                for (unsigned i = 0; i < L; i++) {
                    const u64* row = c == 0 ? &ct[(size_t)i * NN] : &add1[(size_t)i * NN];
                    std::vector<u64> r(row, row + NN);
                    ref_fwd(r, QS[off + i], T.psi[off + i]);
                    std::copy(r.begin(), r.end(), addn.begin() + ((size_t)c * L + i) * NN);
                }
            std::vector<u64> acc3((size_t)2 * rows * NN, ~0ull), out3((size_t)2 * L * NN, ~0ull);
            launch_cluster(dim3{CL, rows, 2}, CL_THREADS, [&] {
                ks_inner_cl(P(ext2), P(key), M(acc3), PR(T), WPP(T.twi), POSTP(T.ks_post), off, L,
                            rows, 2 * 9 * n, 9 * n, P(addn), (u64)L * n, P(T.padd));
            });
            launch_ew(dim3{NN / 256, L, 2}, 256, [&] {
                ks_moddown(P(acc3), nullptr, nullptr, M(out3), PR(T), WPP(T.p_inv), off, L, 0, 0);
            });
            expect_eq("relinearize key switch, rows added times P before the inverse NTT", out3,
                      want);
            std::vector<u64> acc3g(acc3.size(), ~0ull);
            launch_cluster(dim3{CL, rows, 2}, GS_THREADS, [&] {
                ks_inner_gs(P(ext2), P(key), M(acc3g), PR(T), WPP(T.twi), POSTP(T.ks_post), off, L,
                            rows, 2 * 9 * n, 9 * n, P(addn), (u64)L * n, P(T.padd), ks_ctr.data());
            });
            expect_eq("relinearize inner product, rows added times P (global exchange)", acc3g,
                      acc3);
        }
    }
    // 3. rescale from prime id 5 (rows 5, 6, 7), nearest.
    {
        unsigned off = 5, L = 3, C = 2;
        auto a = random_rows(C, L, off);
        std::vector<u64> out((size_t)C * (L - 1) * NN, ~0ull), want(out.size());
        u64 qd = QS[off];
        for (unsigned c = 0; c < C; c++)
            for (unsigned i = 1; i < L; i++) {
                u64 q = QS[off + i], inv = invm(qd % q, q);
                for (unsigned k = 0; k < NN; k++) {
                    u64 cd = a[((size_t)c * L) * NN + k];
                    u64 v = mulm(subm(a[((size_t)c * L + i) * NN + k], cd % q, q), inv, q);
                    if (cd > qd / 2) v = addm(v, 1, q);
                    want[((size_t)c * (L - 1) + i - 1) * NN + k] = v;
                }
            }
        const WP* qinv_row = (const WP*)(T.q_inv.data() + (size_t)off * NP * 2);
        launch_ew(dim3{NN / 256, L - 1, C}, 256,
                  [&] { rescale(P(a), M(out), PR(T), qinv_row, off, L, 0); });
        expect_eq("rescale from prime 5, 3 rows", out, want);
    }
    // 4. ew_mul (plaintext broadcast) and ew_tensor.
    {
        unsigned off = 4, L = 4, C = 2;
        auto a = random_rows(C, L, off);
        auto b = random_rows(C, L, off);
        auto p = random_rows(1, L, off);
        std::vector<u64> out(a.size(), ~0ull), want(a.size());
        for (unsigned c = 0; c < C; c++)
            for (unsigned l = 0; l < L; l++)
                for (unsigned k = 0; k < NN; k++) {
                    size_t e = ((size_t)c * L + l) * NN + k;
                    want[e] = mulm(a[e], p[(size_t)l * NN + k], QS[off + l]);
                }
        launch_ew(dim3{NN / 256, L, C}, 256,
                  [&] { ew_mul(P(a), P(p), M(out), PR(T), WPP(T.mont_fix), off, 0); });
        expect_eq("ew_mul (plaintext broadcast)", out, want);
        std::vector<u64> t3((size_t)3 * L * NN, ~0ull), w3(t3.size());
        size_t cs = (size_t)L * NN;
        for (unsigned l = 0; l < L; l++)
            for (unsigned k = 0; k < NN; k++) {
                u64 q = QS[off + l];
                size_t e = (size_t)l * NN + k;
                w3[e] = mulm(a[e], b[e], q);
                w3[cs + e] = addm(mulm(a[e], b[cs + e], q), mulm(a[cs + e], b[e], q), q);
                w3[2 * cs + e] = mulm(a[cs + e], b[cs + e], q);
            }
        launch_ew(dim3{NN / 256, L, 1}, 256,
                  [&] { ew_tensor(P(a), P(b), M(t3), PR(T), WPP(T.mont_fix), off, L); });
        expect_eq("ew_tensor", t3, w3);
    }
    // 5. encryption shape: signed lift + forward NTT (mode 1, one row for every limb), then
    //    add_signed of per-component rows (s_zs = N) and of one shared row (s_zs = 0).
    {
        unsigned off = 5, L = 3;
        std::vector<u64> v(NN), e(2 * NN);
        for (auto& x : v) x = (u64)((i64)(rng() % 3) - 1);
        for (auto& x : e) x = (u64)((i64)(rng() % 41) - 20);
        std::vector<u64> out((size_t)L * NN, ~0ull), want((size_t)L * NN);
        for (unsigned l = 0; l < L; l++) {
            u64 q = QS[off + l];
            std::vector<u64> row(NN);
            for (unsigned k = 0; k < NN; k++) row[k] = (i64)v[k] < 0 ? q - 1 : v[k];
            ref_fwd(row, q, T.psi[off + l]);
            std::copy(row.begin(), row.end(), want.begin() + (size_t)l * NN);
        }
        u64 n = NN;
        launch(dim3{16, L, 1}, NTT_THREADS, [&] {
            ntt_fwd_cols(P(v), M(out), PR(T), WPP(T.twf), WPP(T.reduce), off, 0, 0, n, L * n, 1,
                         0, off, 0);
        });
        launch(dim3{16, L, 1}, NTT_THREADS,
               [&] { ntt_fwd_rows(M(out), M(out), PR(T), WPP(T.twf), off, n, L * n, n, L * n); });
        expect_eq("signed lift + forward NTT (mode 1)", out, want);
        std::vector<u64> out_cl((size_t)L * NN, ~0ull);
        launch_cluster(dim3{CL, L, 1}, CL_THREADS, [&] {
            ntt_fwd_cl(P(v), M(out_cl), PR(T), WPP(T.twf), WPP(T.reduce), off, 0, 0, n, L * n, 1,
                       0, off, 0);
        });
        expect_eq("signed lift + forward NTT (mode 1, cluster)", out_cl, want);
        auto a = random_rows(2, L, off);
        std::vector<u64> sum(a.size(), ~0ull), ws(a.size());
        for (unsigned c = 0; c < 2; c++)
            for (unsigned l = 0; l < L; l++)
                for (unsigned k = 0; k < NN; k++) {
                    u64 q = QS[off + l];
                    i64 x = (i64)e[(size_t)c * NN + k];
                    u64 r = x < 0 ? q - (u64)(-x) : (u64)x;
                    ws[((size_t)c * L + l) * NN + k] = addm(a[((size_t)c * L + l) * NN + k], r, q);
                }
        launch_ew(dim3{NN / 256, L, 2}, 256, [&] {
            add_signed(P(a), (const i64*)P(e), M(sum), PR(T), off, n);
        });
        expect_eq("add_signed per component", sum, ws);
    }
    // 6. ew_mul_int (multiply_by_integer) against k mod q for both signs and the extremes,
    //    and aut_ntt against the coefficient automorphism: NTT(sigma_g(a)) = aut_ntt(NTT(a), g).
    {
        unsigned off = 5, L = 3, C = 2;
        auto a = random_rows(C, L, off);
        const i64 ks[] = {0, 1, -1, 7, -123456789, (i64)1 << 62, INT64_MIN, INT64_MAX};
        for (i64 k : ks) {
            std::vector<u64> got(a.size(), ~0ull), want(a.size());
            for (unsigned c = 0; c < C; c++)
                for (unsigned l = 0; l < L; l++) {
                    u64 q = QS[off + l];
                    u64 kabs = k < 0 ? (u64)0 - (u64)k : (u64)k;
                    u64 km = kabs % q;
                    if (k < 0) km = (q - km) % q;
                    for (unsigned i = 0; i < NN; i++) {
                        size_t at = ((size_t)c * L + l) * NN + i;
                        want[at] = mulm(a[at], km, q);
                    }
                }
            u64 kabs = k < 0 ? (u64)0 - (u64)k : (u64)k;
            launch_ew(dim3{NN / 256, L, C}, 256, [&] {
                ew_mul_int(P(a), M(got), PR(T), kabs, k < 0 ? 1u : 0u, off);
            });
            char what[64];
            std::snprintf(what, sizeof what, "ew_mul_int k = %lld", (long long)k);
            expect_eq(what, got, want);
        }
        for (u64 g : {3ull, 25ull, 2ull * NN - 1}) {
            u64 ginv = 1;  // g^(N/2 - 1) mod 2N = g^-1
            for (u64 e = NN / 2 - 1, b = g; e; e >>= 1, b = b * b % (2 * NN))
                if (e & 1) ginv = ginv * b % (2 * NN);
            std::vector<u64> rot(a.size(), ~0ull), want(a.size(), ~0ull), fa(a.size(), ~0ull),
                got(a.size(), ~0ull);
            launch_ew(dim3{NN / 256, L, C}, 256, [&] { aut_coeff(P(a), M(rot), PR(T), off, (uint32_t)ginv); });
            fwd_ntt_emu(T, P(rot), M(want), off, L, C);
            fwd_ntt_emu(T, P(a), M(fa), off, L, C);
            launch_ew(dim3{NN / 256, L, C}, 256, [&] { aut_ntt(P(fa), M(got), (uint32_t)g); });
            char what[64];
            std::snprintf(what, sizeof what, "aut_ntt = NTT o aut_coeff, g = %llu", (unsigned long long)g);
            expect_eq(what, got, want);
        }
    }
    std::printf(failures ? "emulator: %d FAILURES\n" : "emulator: all checks passed\n", failures);
    return failures ? 1 : 0;
}
