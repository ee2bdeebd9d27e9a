// Prototype harness: ntt_fwd_gs / ntt_inv_gs (ckks_v.cu) against the r16 kernels (r16.cuh) on
// a ciphertext of `limbs` x `comps` random canonical rows: word-for-word comparison, then the
// back-to-back time per launch and the median single-launch event time.
// nvcc -arch=sm_90 -O3 -I<variant dir> -Ikernels/bench r16_bench.cu
#include "ckks_v.cu"
#include "bench_common.cuh"
#include "r16.cuh"
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

int main(int argc, char** argv) {
    const int limbs = argc > 2 ? atoi(argv[1]) : 8, comps = argc > 2 ? atoi(argv[2]) : 2, sets = 4;
    const size_t words = (size_t)comps * limbs * NN;
    std::mt19937_64 rng(42);
    std::vector<Prime> primes(9);
    for (int i = 0; i < 9; i++) {
        u64 q = ((1ull << 40) + 2 * 16384 * (u64)(i + 1) * 7919ull) | 1;
        if (i == 0) q = (1ull << 60) - 2 * 16384 * 1234567ull + 1;
        primes[i] = Prime{q, 0, (u64)(((unsigned __int128)1 << 64) / q), 0};
    }
    std::vector<WP> tw((size_t)9 * NN), post(9);
    for (int i = 0; i < 9; i++) {
        for (int j = 0; j < NN; j++) {
            u64 w = rng() % primes[i].q;
            tw[(size_t)i * NN + j] = WP{w, (u64)(((unsigned __int128)w << 64) / primes[i].q)};
        }
        u64 w = rng() % primes[i].q;
        post[i] = WP{w, (u64)(((unsigned __int128)w << 64) / primes[i].q)};
    }
    std::vector<u64> h(words * sets);
    for (size_t i = 0; i < h.size(); i++) h[i] = rng() % primes[(i / NN) % limbs % 9].q;
    u64 *in, *out;
    Prime* dp;
    WP *dtw, *dpost;
    unsigned* ctr;
    CK(cudaMalloc(&in, words * sets * 8));
    CK(cudaMalloc(&out, words * sets * 8));
    CK(cudaMalloc(&dp, 9 * sizeof(Prime)));
    CK(cudaMalloc(&dtw, tw.size() * sizeof(WP)));
    CK(cudaMalloc(&dpost, 9 * sizeof(WP)));
    CK(cudaMalloc(&ctr, 64 * 64 * 2 * 4));
    CK(cudaMemset(ctr, 0, 64 * 64 * 2 * 4));
    CK(cudaMemcpy(in, h.data(), words * sets * 8, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dp, primes.data(), 9 * sizeof(Prime), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dtw, tw.data(), tw.size() * sizeof(WP), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dpost, post.data(), 9 * sizeof(WP), cudaMemcpyHostToDevice));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    dim3 grid(8, limbs, comps);
    int region = 0;
    auto launch = [&](int which, int set) -> cudaError_t {
        const u64* src = in + (size_t)set * words;
        u64* dst = out + (size_t)set * words;
        unsigned* c = ctr + (region++ % 64) * 64 * 2;
        const WP* nopre = nullptr;
        uint32_t off = 0, mode = 0, ginv = 0, soff = 0, sbz = 0;
        u64 ys = NN, zs = (u64)limbs * NN;
        if (which == 0) {
            void* args[] = {&src, &dst, &dp, &dtw, &nopre, &off, &ys, &zs, &ys, &zs,
                            &mode, &ginv, &soff, &sbz, &c};
            return cudaLaunchCooperativeKernel((void*)ntt_fwd_gs, grid, dim3(512), args, 0, st);
        } else if (which == 1) {
            void* args[] = {&src, &dst, &dp, &dtw, &dpost, &off, &ys, &zs, &ys, &zs, &c};
            return cudaLaunchCooperativeKernel((void*)ntt_inv_gs, grid, dim3(512), args, 0, st);
        } else if (which == 2) {
            void* args[] = {&src, &dst, &dp, &dtw, &off, &ys, &zs, &c};
            return cudaLaunchCooperativeKernel((void*)r16_fwd_gs, grid, dim3(R16_THREADS), args, 0, st);
        } else if (which == 3) {
            void* args[] = {&src, &dst, &dp, &dtw, &dpost, &off, &ys, &zs, &c};
            return cudaLaunchCooperativeKernel((void*)r16_inv_gs, grid, dim3(R16_THREADS), args, 0, st);
        } else if (which == 4) {
            void* args[] = {&src, &dst, &dp, &dtw, &off, &ys, &zs, &c};
            return cudaLaunchCooperativeKernel((void*)r8_fwd_gs, grid, dim3(R8_THREADS), args, 0, st);
        } else if (which == 5) {
            void* args[] = {&src, &dst, &dp, &dtw, &dpost, &off, &ys, &zs, &c};
            return cudaLaunchCooperativeKernel((void*)r8_inv_gs, grid, dim3(R8_THREADS), args, 0, st);
        } else if (which == 6) {
            void* args[] = {&src, &dst, &dp, &dtw, &off, &ys, &zs, &c};
            return cudaLaunchCooperativeKernel((void*)r8p_fwd_gs, grid, dim3(R8_THREADS), args, 0, st);
        } else {
            void* args[] = {&src, &dst, &dp, &dtw, &dpost, &off, &ys, &zs, &c};
            return cudaLaunchCooperativeKernel((void*)r8p_inv_gs, grid, dim3(R8_THREADS), args, 0, st);
        }
    };
    const char* names[] = {"fwd_gs", "inv_gs", "r16_fwd", "r16_inv", "r8_fwd", "r8_inv", "r8p_fwd", "r8p_inv"};
    {
        int bps = 0;
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, (void*)r16_fwd_gs, R16_THREADS, 0);
        printf("r16_fwd_gs blocks per SM %d; ", bps);
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&bps, (void*)r16_inv_gs, R16_THREADS, 0);
        printf("r16_inv_gs blocks per SM %d\n", bps);
    }
    // Word-for-word: r16 against the gs kernels on every set.
    for (int pair = 0; pair < 6; pair++) {
        const int other = pair + 2;
        const int base = pair % 2;
        size_t bad = 0;
        for (int set = 0; set < sets; set++) {
            std::vector<u64> a(words), b(words);
            CK(cudaMemset(out + (size_t)set * words, 0xAB, words * 8));
            CK(launch(base, set));
            CK(cudaStreamSynchronize(st));
            CK(cudaMemcpy(a.data(), out + (size_t)set * words, words * 8, cudaMemcpyDeviceToHost));
            CK(cudaMemset(out + (size_t)set * words, 0xCD, words * 8));
            CK(launch(other, set));
            CK(cudaStreamSynchronize(st));
            CK(cudaMemcpy(b.data(), out + (size_t)set * words, words * 8, cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < words; i++) bad += a[i] != b[i];
        }
        printf("compare %s vs %s: %zu of %zu words differ\n", names[base], names[other], bad,
               words * sets);
    }
    for (int which = 0; which < 8; which++) {
        for (int i = 0; i < 50; i++) CK(launch(which, i % sets));
        CK(cudaStreamSynchronize(st));
        const int burst = 400;
        CK(cudaEventRecord(e0, st));
        for (int i = 0; i < burst; i++) CK(launch(which, i % sets));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        std::vector<float> single;
        for (int i = 0; i < 200; i++) {
            CK(cudaStreamSynchronize(st));
            CK(cudaEventRecord(e0, st));
            CK(launch(which, i % sets));
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            float s;
            CK(cudaEventElapsedTime(&s, e0, e1));
            single.push_back(s * 1000.f);
        }
        std::sort(single.begin(), single.end());
        printf("%-8s limbs %d comps %d burst_us %7.2f  single_median_us %7.2f  p10 %7.2f\n",
               names[which], limbs, comps, ms * 1000.f / burst, single[100], single[20]);
    }
#ifdef HAS_MARKS
    // Per-block timeline of single forward launches (gs, then r16): phase 1, the limb barrier,
    // phase 2 in SM cycles (p10/p50/p90 over blocks and launches); first start -> last end ns.
    for (int which : {0, 2, 4, 6}) {
        const int nb = 8 * limbs * comps;
        std::vector<double> p1, bar, p2, total, skew;
        for (int it = 0; it < 50; it++) {
            CK(cudaStreamSynchronize(st));
            CK(launch(which, it % sets));
            CK(cudaStreamSynchronize(st));
            std::vector<unsigned long long> m(nb * 16);
            CK(cudaMemcpyFromSymbol(m.data(), g_marks, nb * 16 * 8));
            unsigned long long s0 = ~0ull, s1 = 0, e1 = 0;
            for (int b = 0; b < nb; b++) {
                const unsigned long long* r = &m[b * 16];
                p1.push_back((double)(r[3] - r[1]));
                bar.push_back((double)(r[5] - r[3]));
                p2.push_back((double)(r[7] - r[5]));
                s0 = std::min(s0, r[0]);
                s1 = std::max(s1, r[0]);
                e1 = std::max(e1, r[6]);
            }
            total.push_back((double)(e1 - s0));
            skew.push_back((double)(s1 - s0));
        }
        auto med = [](std::vector<double> v, double q) {
            std::sort(v.begin(), v.end());
            return v[(size_t)((v.size() - 1) * q)];
        };
        printf("%-8s cycles p10/p50/p90: phase1 %.0f/%.0f/%.0f  barrier %.0f/%.0f/%.0f  phase2 %.0f/%.0f/%.0f  start skew %.0f ns  first start -> last end %.0f ns\n",
               names[which], med(p1, .1), med(p1, .5), med(p1, .9), med(bar, .1), med(bar, .5),
               med(bar, .9), med(p2, .1), med(p2, .5), med(p2, .9), med(skew, .5), med(total, .5));
    }
#endif
    return 0;
}
