// Standalone probe (experiments, not part of the build): what would the paired NTT's exchange
// between its two phases cost through distributed shared memory instead of global memory?
// The kernels move the words of a ciphertext at level 0 (2 components x 8 primes x 16384
// words) through the paired kernels' memory skeleton with no arithmetic: 16 blocks of 256
// threads per prime, block k loading lines 8k + [0, 8) of both components as columns (thread
// t of half g: line 8k + t % 8, rows t / 8 + 16 e), then handing every word to the block that
// owns its row (row a belongs to block a / 8) and storing rows. Two forms:
//   global: the column words stored to a scratch limb, a counter barrier among the prime's 16
//           blocks (fence, atomic, acquire poll), the rows loaded back (ldcg); cooperative
//           launch (the engine's form);
//   dsmem:  the column words stored straight into the owning block's row tile (mapa +
//           st.shared::cluster), one cluster barrier (arrive.release / wait.acquire); a plain
//           launch in clusters of 16 (the non-portable size: one prime per cluster), which
//           also guarantees co-scheduling, so no cooperative launch;
//   dsmem1: dsmem with 100 KiB of extra dynamic shared memory, so one block per SM;
//   nop16 / nopcoop: no-work kernels of the same shapes (launch cost).
// Prints per form: max active clusters (cluster forms), where the blocks ran (SMs used, most
// blocks on one SM), the median event time of 200 single calls as one-node graphs after 20
// warm-ups, the GPU time per call back to back (200), and whether out == in (poisoned out).
//
// nvcc -arch=sm_90 -O3 -std=c++17 kernels/bench/exchange_probe.cu -o exchange_probe
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
#define BLOCKS 16
#define THREADS 256
#define LIMB_STRIDE ((u64)NN)
#define COMP_STRIDE ((u64)PRIMES * NN)


// Column phase's loads (8 words per thread: line col of component g, rows hi + 16 e).
__device__ __forceinline__ void load_cols(const u64* in, uint32_t y, uint32_t k, u64 (&x)[8],
                                          uint32_t& g, uint32_t& col, uint32_t& hi) {
    const uint32_t tid = threadIdx.x, t = tid & 127;
    g = tid >> 7;
    col = 8 * k + (t & 7);
    hi = t >> 3;
    load_column(in + g * COMP_STRIDE + y * LIMB_STRIDE, col, hi, x);
}

__global__ void __launch_bounds__(THREADS, 2)
    xch_global(const u64* in, u64* mid, u64* out, unsigned* ctr, unsigned* where) {
    const uint32_t k = blockIdx.x, y = blockIdx.y;
    unsigned target = 0;
    unsigned* c = ctr + y;
    if (threadIdx.x == 0) {
        target = (*(volatile unsigned*)c & ~(unsigned)(BLOCKS - 1)) + BLOCKS;
        where[y * BLOCKS + k] = smid();
    }
    u64 x[8];
    uint32_t g, col, hi;
    load_cols(in, y, k, x, g, col, hi);
    u64* m = mid + g * COMP_STRIDE + y * LIMB_STRIDE;
#pragma unroll
    for (int e = 0; e < 8; e++) m[(hi + 16 * e) * 128 + col] = x[e];
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(c, 1u);
        while ((int)(ld_acquire(c) - target) < 0) {
        }
    }
    __syncthreads();
    // Row phase: tile row r = tid / 16 (component r / 8, row 8k + r % 8), words lo + 16 e.
    const uint32_t r = threadIdx.x / 16, lo = threadIdx.x % 16;
    const u64 off = (r >> 3) * COMP_STRIDE + y * LIMB_STRIDE + (u64)(8 * k + (r & 7)) * 128;
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = ldcg(mid + off + lo + 16 * e);
#pragma unroll
    for (int e = 0; e < 8; e++) out[off + lo + 16 * e] = x[e];
}

// Row tile of a block: 16 rows (component r / 8, row 8k + r % 8) x 128 words.
__global__ void __launch_bounds__(THREADS, 2)
    xch_dsmem(const u64* in, u64* mid, u64* out, unsigned* ctr, unsigned* where) {
    __shared__ u64 rows[16 * 128];
    const uint32_t k = cl_rank(), y = blockIdx.y;
    if (threadIdx.x == 0) where[y * BLOCKS + k] = smid();
    cluster_arrive_relaxed();  // this block has started (its shared memory may be written)
    u64 x[8];
    uint32_t g, col, hi;
    load_cols(in, y, k, x, g, col, hi);
    cl_wait();
    // Word (row a, line col) of component g goes to block a / 8, tile row 8 g + a % 8.
#pragma unroll
    for (int e = 0; e < 8; e++) {
        const uint32_t a = hi + 16 * e;
        st_remote(&rows[(8 * g + (a & 7)) * 128 + col], a >> 3, x[e]);
    }
    cl_arrive();
    cl_wait();
    const uint32_t r = threadIdx.x / 16, lo = threadIdx.x % 16;
    const u64 off = (r >> 3) * COMP_STRIDE + y * LIMB_STRIDE + (u64)(8 * k + (r & 7)) * 128;
#pragma unroll
    for (int e = 0; e < 8; e++) out[off + lo + 16 * e] = rows[r * 128 + lo + 16 * e];
    (void)mid;
    (void)ctr;
}

__global__ void nop_kernel(const u64*, u64*, u64* out, unsigned*, unsigned*) {
    if (out == nullptr) out[0] = 1;
}

struct Form {
    const char* name;
    void* f;
    bool coop;
    int cluster;      // 0: none
    size_t dyn_smem;  // extra dynamic shared memory
    bool moves;       // out == in expected
};

static cudaError_t launch(const Form& fm, cudaStream_t st, void** args) {
    return launch_shape(fm.f, dim3(BLOCKS, PRIMES, 1), THREADS, fm.dyn_smem, fm.coop, fm.cluster,
                        st, args);
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
    const Form forms[] = {
        {"global coop", (void*)xch_global, true, 0, 0, true},
        {"dsmem cluster16", (void*)xch_dsmem, false, 16, 0, true},
        {"dsmem1 cluster16", (void*)xch_dsmem, false, 16, 100 * 1024, true},
        {"nop coop", (void*)nop_kernel, true, 0, 0, false},
        {"nop cluster16", (void*)nop_kernel, false, 16, 0, false},
    };
    const int F = sizeof(forms) / sizeof(forms[0]);
    std::vector<cudaGraphExec_t> ex(F);
    void* args[] = {&in, &mid, &out, &ctr, &where};
    for (int i = 0; i < F; i++) {
        const Form& fm = forms[i];
        if (fm.cluster > 0) {
            CK(cudaFuncSetAttribute(fm.f, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
            if (fm.dyn_smem > 0)
                CK(cudaFuncSetAttribute(fm.f, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        (int)fm.dyn_smem));
            int n = -1;
            CK(max_clusters(fm.f, dim3(BLOCKS, PRIMES, 1), THREADS, fm.dyn_smem, fm.cluster, &n));
            printf("%-18s max active clusters of %d: %d\n", fm.name, fm.cluster, n);
        }
        // Placement and words: one launch, out poisoned first.
        CK(cudaMemset(out, 0xff, words * 8));
        CK(cudaMemset(where, 0xff, BLOCKS * PRIMES * 4));
        CK(launch(fm, st, args));
        CK(cudaStreamSynchronize(st));
        Placement pl;
        CK(placement(where, BLOCKS * PRIMES, &pl));
        bool same = true;
        if (fm.moves) CK(same_words(out, h, back, &same));
        printf("%-18s SMs used %d, most blocks on one SM %d, out %s\n", fm.name, pl.used,
               pl.most, fm.moves ? (same ? "== in" : "WRONG") : "(no words)");
        CK(capture(st, [&] { return launch(fm, st, args); }, &ex[i]));
    }
    std::vector<const char*> names;
    for (int i = 0; i < F; i++) names.push_back(forms[i].name);
    CK(time_passes(ex, names, st, 3));
    // Words after the timed launches too.
    for (int i = 0; i < 3; i++) {
        CK(cudaMemset(out, 0xff, words * 8));
        CK(cudaGraphLaunch(ex[i], st));
        CK(cudaStreamSynchronize(st));
        bool same = false;
        CK(same_words(out, h, back, &same));
        printf("%-18s after timing: out %s\n", forms[i].name, same ? "== in" : "WRONG");
    }
    return 0;
}
