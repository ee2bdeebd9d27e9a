// Standalone harness (experiments, not part of the build): how the way a kernel is submitted
// changes what CUDA events around one call measure on an idle stream, the way the engine's
// `oplat` table times an operation. Submits ntt_fwd_gs (the engine's forward NTT, cooperative)
// and a no-work kernel with the same grid by: the runtime API, the driver API with an argument
// array, the driver API with one packed argument buffer, cudaLaunchKernelExC with the cooperative
// attribute, and a one-node CUDA graph (with and without a parameter update per call).
// Prints the single-call event median / p10, the host time of the submission, and checks that
// every way of launching ntt_fwd_gs wrote the same words.
//
// nvcc -arch=sm_90 -O3 -I<variant dir> launch_bench.cu -L<dir with libcuda.so> -lcuda
#include "ckks_v.cu"
#include "bench_common.cuh"
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#define CU(x)                                                                          \
    do {                                                                               \
        CUresult r = (x);                                                              \
        if (r != CUDA_SUCCESS) {                                                       \
            const char* s = nullptr;                                                   \
            cuGetErrorString(r, &s);                                                   \
            printf("%s:%d %s\n", __FILE__, __LINE__, s ? s : "?");                     \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

int main() {
    const int limbs = 8, comps = 2, sets = 4;
    const size_t words = (size_t)comps * limbs * NN;
    std::mt19937_64 rng(7);
    std::vector<Prime> primes(9);
    for (int i = 0; i < 9; i++) {
        u64 q = ((1ull << 40) + 2 * 16384 * (u64)(i + 1) * 7919ull) | 1;
        primes[i].q = q;
        primes[i].qinv_neg = 0;
        primes[i].red_wp = (u64)(((unsigned __int128)1 << 64) / q);
        primes[i].pad = 0;
    }
    std::vector<WP> tw((size_t)9 * NN);
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < NN; j++) {
            u64 w = rng() % primes[i].q;
            tw[(size_t)i * NN + j] = WP{w, (u64)(((unsigned __int128)w << 64) / primes[i].q)};
        }
    std::vector<u64> h(words * sets);
    for (size_t i = 0; i < h.size(); i++) h[i] = rng() % primes[(i / NN) % limbs].q;
    u64 *in, *out;
    Prime* dp;
    WP* dtw;
    unsigned* ctr;
    CK(cudaMalloc(&in, words * sets * 8));
    CK(cudaMalloc(&out, words * sets * 8));
    CK(cudaMalloc(&dp, 9 * sizeof(Prime)));
    CK(cudaMalloc(&dtw, tw.size() * sizeof(WP)));
    CK(cudaMalloc(&ctr, 64 * 64 * 2 * 4));
    CK(cudaMemset(ctr, 0, 64 * 64 * 2 * 4));
    CK(cudaMemcpy(in, h.data(), words * sets * 8, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dp, primes.data(), 9 * sizeof(Prime), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dtw, tw.data(), tw.size() * sizeof(WP), cudaMemcpyHostToDevice));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CUfunction f_fwd, f_nop;
    CK(cudaGetFuncBySymbol(&f_fwd, (const void*)ntt_fwd_gs));
    CK(cudaGetFuncBySymbol(&f_nop, (const void*)nop_ct));
    const dim3 grid(8, limbs, comps);

    // Arguments of ntt_fwd_gs for set `set` (counter region rotates as in the engine).
    struct FwdArgs {
        const u64* src;
        u64* dst;
        const Prime* primes;
        const WP* tw;
        const WP* pre;
        uint32_t off;
        u64 ys, zs, oys, ozs;
        uint32_t mode, ginv, soff, sbz;
        unsigned* c;
    };
    int region = 0;
    auto fwd_args = [&](int set) {
        FwdArgs a{in + (size_t)set * words, out + (size_t)set * words, dp, dtw, nullptr, 0,
                  (u64)NN, (u64)limbs * NN, (u64)NN, (u64)limbs * NN, 0, 0, 0, 0,
                  ctr + (region++ % 64) * 64 * 2};
        return a;
    };
    auto ptrs = [](FwdArgs& a, void** p) {
        void* v[] = {&a.src, &a.dst, &a.primes, &a.tw, &a.pre, &a.off, &a.ys, &a.zs,
                     &a.oys, &a.ozs, &a.mode, &a.ginv, &a.soff, &a.sbz, &a.c};
        memcpy(p, v, sizeof(v));
    };
    // One packed parameter buffer in the kernel's layout (8-byte aligned slots as ptxas lays
    // out these parameters: pointers and u64 at 8, u32 at 4).
    auto pack = [](const FwdArgs& a, unsigned char* b) -> size_t {
        size_t o = 0;
        auto put = [&](const void* v, size_t n) {
            o = (o + n - 1) / n * n;
            memcpy(b + o, v, n);
            o += n;
        };
        put(&a.src, 8), put(&a.dst, 8), put(&a.primes, 8), put(&a.tw, 8), put(&a.pre, 8);
        put(&a.off, 4), put(&a.ys, 8), put(&a.zs, 8), put(&a.oys, 8), put(&a.ozs, 8);
        put(&a.mode, 4), put(&a.ginv, 4), put(&a.soff, 4), put(&a.sbz, 4), put(&a.c, 8);
        return o;
    };

    // A one-node graph of ntt_fwd_gs (cooperative attribute on the node) and one of nop_ct.
    cudaGraph_t g_fwd, g_nop;
    cudaGraphExec_t x_fwd, x_nop;
    cudaGraphNode_t n_fwd, n_nop;
    cudaKernelNodeParams kp_fwd = {}, kp_nop = {};
    FwdArgs ga = fwd_args(0);
    void* gp[15];
    ptrs(ga, gp);
    CK(cudaGraphCreate(&g_fwd, 0));
    kp_fwd.func = (void*)ntt_fwd_gs;
    kp_fwd.gridDim = grid;
    kp_fwd.blockDim = dim3(512);
    kp_fwd.kernelParams = gp;
    CK(cudaGraphAddKernelNode(&n_fwd, g_fwd, nullptr, 0, &kp_fwd));
    {
        cudaKernelNodeAttrValue v = {};
        v.cooperative = 1;
        cudaError_t e = cudaGraphKernelNodeSetAttribute(n_fwd, cudaLaunchAttributeCooperative, &v);
        printf("graph node cooperative attribute: %s\n", cudaGetErrorString(e));
    }
    CK(cudaGraphInstantiate(&x_fwd, g_fwd, 0));
    CK(cudaGraphUpload(x_fwd, st));
    u64* nop_out = out;
    void* np[] = {&nop_out};
    CK(cudaGraphCreate(&g_nop, 0));
    kp_nop.func = (void*)nop_ct;
    kp_nop.gridDim = grid;
    kp_nop.blockDim = dim3(512);
    kp_nop.kernelParams = np;
    CK(cudaGraphAddKernelNode(&n_nop, g_nop, nullptr, 0, &kp_nop));
    CK(cudaGraphInstantiate(&x_nop, g_nop, 0));
    CK(cudaGraphUpload(x_nop, st));

    struct Way {
        const char* name;
        std::function<int(int)> go;  // submits one call on `st` for set `set`; 0 on success
    };
    std::vector<Way> ways;
    ways.push_back({"nop rt", [&](int) {
                        void* a[] = {&nop_out};
                        CK(cudaLaunchKernel((void*)nop_ct, grid, dim3(512), a, 0, st));
                        return 0;
                    }});
    ways.push_back({"nop drv", [&](int) {
                        void* a[] = {&nop_out};
                        CU(cuLaunchKernel(f_nop, grid.x, grid.y, grid.z, 512, 1, 1, 0, st, a,
                                          nullptr));
                        return 0;
                    }});
    ways.push_back({"nop graph", [&](int) {
                        CK(cudaGraphLaunch(x_nop, st));
                        return 0;
                    }});
    ways.push_back({"fwd rt coop", [&](int set) {
                        FwdArgs a = fwd_args(set);
                        void* p[15];
                        ptrs(a, p);
                        CK(cudaLaunchCooperativeKernel((void*)ntt_fwd_gs, grid, dim3(512), p, 0,
                                                       st));
                        return 0;
                    }});
    ways.push_back({"fwd drv coop", [&](int set) {
                        FwdArgs a = fwd_args(set);
                        void* p[15];
                        ptrs(a, p);
                        CU(cuLaunchCooperativeKernel(f_fwd, grid.x, grid.y, grid.z, 512, 1, 1, 0,
                                                     st, p));
                        return 0;
                    }});
    ways.push_back({"fwd drv plain", [&](int set) {
                        FwdArgs a = fwd_args(set);
                        void* p[15];
                        ptrs(a, p);
                        CU(cuLaunchKernel(f_fwd, grid.x, grid.y, grid.z, 512, 1, 1, 0, st, p,
                                          nullptr));
                        return 0;
                    }});
    ways.push_back({"fwd drv packed", [&](int set) {
                        FwdArgs a = fwd_args(set);
                        unsigned char buf[256];
                        size_t n = pack(a, buf);
                        void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf,
                                         CU_LAUNCH_PARAM_BUFFER_SIZE, &n, CU_LAUNCH_PARAM_END};
                        CU(cuLaunchKernel(f_fwd, grid.x, grid.y, grid.z, 512, 1, 1, 0, st,
                                          nullptr, extra));
                        return 0;
                    }});
    ways.push_back({"fwd rt ex coop", [&](int set) {
                        FwdArgs a = fwd_args(set);
                        void* p[15];
                        ptrs(a, p);
                        cudaLaunchConfig_t cfg = {};
                        cfg.gridDim = grid;
                        cfg.blockDim = dim3(512);
                        cfg.stream = st;
                        cudaLaunchAttribute at[1] = {};
                        at[0].id = cudaLaunchAttributeCooperative;
                        at[0].val.cooperative = 1;
                        cfg.attrs = at;
                        cfg.numAttrs = 1;
                        CK(cudaLaunchKernelExC(&cfg, (const void*)ntt_fwd_gs, p));
                        return 0;
                    }});
    ways.push_back({"fwd graph same", [&](int) {
                        CK(cudaGraphLaunch(x_fwd, st));
                        return 0;
                    }});
    ways.push_back({"fwd graph upd", [&](int set) {
                        FwdArgs a = fwd_args(set);
                        void* p[15];
                        ptrs(a, p);
                        cudaKernelNodeParams k = kp_fwd;
                        k.kernelParams = p;
                        CK(cudaGraphExecKernelNodeSetParams(x_fwd, n_fwd, &k));
                        CK(cudaGraphLaunch(x_fwd, st));
                        return 0;
                    }});

    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    std::vector<u64> ref(words), got(words);
    for (size_t w = 0; w < ways.size(); w++) {
        const bool is_fwd = strncmp(ways[w].name, "fwd", 3) == 0;
        std::vector<float> ev;
        std::vector<double> host;
        for (int i = 0; i < 220; i++) {
            CK(cudaStreamSynchronize(st));
            CK(cudaEventRecord(e0, st));
            auto t0 = std::chrono::steady_clock::now();
            if (ways[w].go(i % sets)) return 1;
            auto t1 = std::chrono::steady_clock::now();
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            if (i >= 20) {
                ev.push_back(ms * 1000.f);
                host.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            }
        }
        std::sort(ev.begin(), ev.end());
        std::sort(host.begin(), host.end());
        // Burst: 400 back to back (GPU time per call once the host runs ahead).
        CK(cudaStreamSynchronize(st));
        CK(cudaEventRecord(e0, st));
        for (int i = 0; i < 400; i++)
            if (ways[w].go(i % sets)) return 1;
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float bms;
        CK(cudaEventElapsedTime(&bms, e0, e1));
        const char* check = "";
        if (is_fwd) {
            // Set 0's output: the graph without updates always writes set 0.
            CK(cudaMemset(out, 0, words * 8));
            if (ways[w].go(0)) return 1;
            CK(cudaStreamSynchronize(st));
            CK(cudaMemcpy(got.data(), out, words * 8, cudaMemcpyDeviceToHost));
            if (w == 3) ref = got;
            check = got == ref ? "  words ok" : "  WORDS DIFFER";
        }
        printf("%-16s event median %6.2f p10 %6.2f  host median %5.2f  burst %6.2f%s\n",
               ways[w].name, ev[100], ev[20], host[100], bms * 1000.f / 400, check);
    }
    return 0;
}
