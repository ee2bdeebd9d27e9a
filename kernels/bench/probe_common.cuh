// Shared pieces of the standalone probes that compare launch shapes on the paired NTT's data
// (exchange_probe, cluster8_probe): the SM a block runs on, a store into another block's
// shared memory of the cluster, where a launch's blocks ran, graph capture, the words check
// and the timed passes. Include after ckks.cu (u64) and bench_single.cuh.
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

__device__ __forceinline__ unsigned smid() {
    unsigned r;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(r));
    return r;
}
// Arrive at the cluster barrier without ordering anything: "this block has started" (its
// shared memory may be written by the cluster's other blocks after their wait).
__device__ __forceinline__ void cluster_arrive_relaxed() {
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
}
// The 8 words of column `col` at rows hi + 16 e of the 128 x 128 limb at `limb`.
__device__ __forceinline__ void load_column(const u64* limb, uint32_t col, uint32_t hi,
                                            u64 (&x)[8]) {
#pragma unroll
    for (int e = 0; e < 8; e++) x[e] = limb[(hi + 16 * e) * 128 + col];
}
// Stores v at the word of block `rank`'s shared memory that `local` is in this block's.
__device__ __forceinline__ void st_remote(u64* local, unsigned rank, u64 v) {
    const unsigned a = (unsigned)__cvta_generic_to_shared(local);
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
    asm volatile("st.shared::cluster.u64 [%0], %1;" ::"r"(r), "l"(v) : "memory");
}

// The probes' stream and buffers: `words` input words (a fixed pattern, also in h), a scratch and an
// output of the same size, 64 counters (zero) and 256 words for the blocks' %smid.
struct ProbeData {
    cudaStream_t st = nullptr;  // a non-blocking stream for the probe's launches
    u64 *in = nullptr, *mid = nullptr, *out = nullptr;
    unsigned *ctr = nullptr, *where = nullptr;
    std::vector<u64> h, back;
};
static cudaError_t make_probe_data(size_t words, ProbeData* d) {
    d->h.resize(words);
    d->back.resize(words);
    for (size_t i = 0; i < words; i++) d->h[i] = i * 0x9e3779b97f4a7c15ull;
    cudaError_t e = cudaStreamCreateWithFlags(&d->st, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMalloc(&d->in, words * 8);
    if (e == cudaSuccess) e = cudaMalloc(&d->mid, words * 8);
    if (e == cudaSuccess) e = cudaMalloc(&d->out, words * 8);
    if (e == cudaSuccess) e = cudaMalloc(&d->ctr, 64 * 4);
    if (e == cudaSuccess) e = cudaMalloc(&d->where, 256 * 4);
    if (e == cudaSuccess) e = cudaMemset(d->ctr, 0, 64 * 4);
    if (e == cudaSuccess) e = cudaMemcpy(d->in, d->h.data(), words * 8, cudaMemcpyHostToDevice);
    return e;
}
// The launch attribute "clusters of x along x".
static cudaLaunchAttribute cluster_attr(unsigned x) {
    cudaLaunchAttribute a;
    a.id = cudaLaunchAttributeClusterDimension;
    a.val.clusterDim.x = x;
    a.val.clusterDim.y = 1;
    a.val.clusterDim.z = 1;
    return a;
}

// The configuration of one launch of f: cooperative, or in clusters of `cluster` along x, or
// (neither) plain; `attr` holds the attribute the configuration points to.
static cudaLaunchConfig_t shape_config(dim3 grid, unsigned threads, size_t smem, bool coop,
                                       unsigned cluster, cudaStream_t st,
                                       cudaLaunchAttribute* attr) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(threads, 1, 1);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = st;
    cfg.attrs = attr;
    cfg.numAttrs = 0;
    if (coop) {
        attr->id = cudaLaunchAttributeCooperative;
        attr->val.cooperative = 1;
        cfg.numAttrs = 1;
    } else if (cluster > 0) {
        *attr = cluster_attr(cluster);
        cfg.numAttrs = 1;
    }
    return cfg;
}
static cudaError_t launch_shape(void* f, dim3 grid, unsigned threads, size_t smem, bool coop,
                                unsigned cluster, cudaStream_t st, void** args) {
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = shape_config(grid, threads, smem, coop, cluster, st, &attr);
    return cudaLaunchKernelExC(&cfg, f, args);
}
// How many clusters of `cluster` blocks of f's shape the device holds at once.
static cudaError_t max_clusters(void* f, dim3 grid, unsigned threads, size_t smem,
                                unsigned cluster, int* n) {
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = shape_config(grid, threads, smem, false, cluster, 0, &attr);
    return cudaOccupancyMaxActiveClusters(n, f, &cfg);
}

// How many SMs the `blocks` blocks whose %smid a kernel wrote to `where` (device) used, and
// the most blocks one SM held.
struct Placement {
    int used = 0, most = 0;
};
static cudaError_t placement(const unsigned* where, int blocks, Placement* p) {
    std::vector<unsigned> w(blocks);
    cudaError_t e = cudaMemcpy(w.data(), where, blocks * 4, cudaMemcpyDeviceToHost);
    std::vector<int> per(256, 0);
    *p = Placement{};
    for (unsigned s : w)
        if (s < 256 && per[s]++ == 0) p->used++;
    for (int c : per) p->most = std::max(p->most, c);
    return e;
}

// Whether the `n` words at `dev` equal `want` (through the host buffer `back`).
static cudaError_t same_words(const u64* dev, const std::vector<u64>& want,
                              std::vector<u64>& back, bool* same) {
    cudaError_t e = cudaMemcpy(back.data(), dev, want.size() * 8, cudaMemcpyDeviceToHost);
    *same = e == cudaSuccess && std::memcmp(back.data(), want.data(), want.size() * 8) == 0;
    return e;
}

// One launch by `launch()` on `st` as an executable one-node graph.
template <class Launch>
static cudaError_t capture(cudaStream_t st, Launch launch, cudaGraphExec_t* ex) {
    cudaGraph_t g;
    cudaError_t e = cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal);
    if (e != cudaSuccess) return e;
    const cudaError_t el = launch();
    e = cudaStreamEndCapture(st, &g);
    if (el != cudaSuccess) return el;
    if (e != cudaSuccess) return e;
    return cudaGraphInstantiate(ex, g, 0);
}

// `passes` passes over the graphs, each timed as 200 single calls after 20 warm-ups and 200
// launches back to back, one line per graph.
static cudaError_t time_passes(const std::vector<cudaGraphExec_t>& ex,
                               const std::vector<const char*>& names, cudaStream_t st,
                               int passes) {
    cudaEvent_t a, b;
    cudaError_t e = cudaEventCreate(&a);
    if (e == cudaSuccess) e = cudaEventCreate(&b);
    for (int pass = 0; pass < passes && e == cudaSuccess; pass++)
        for (size_t i = 0; i < ex.size() && e == cudaSuccess; i++) {
            SingleCalls r;
            double burst = 0;
            e = time_single_and_burst(ex[i], st, a, b, 20, 200, 200, &r, &burst);
            if (e == cudaSuccess)
                printf("pass %d %-22s single %5.2f us  host %5.2f us  burst %5.2f us\n", pass,
                       names[i], r.event_us, r.host_us, burst);
        }
    return e;
}
