// One-node-graph single calls for the standalone probes of kernels/bench (submit_probe,
// launch_shape_probe, exchange_probe): `calls` launches of `exec` on the idle stream `st` after `warm`
// warm-ups, each between two events, returning the median event time and the median host
// time of cudaGraphLaunch (us). Errors return cudaError_t (check with CK).
#pragma once
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <vector>

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct SingleCalls {
    double event_us, host_us;
};

static cudaError_t time_single_calls(cudaGraphExec_t exec, cudaStream_t st, cudaEvent_t a,
                                     cudaEvent_t b, int warm, int calls, SingleCalls* out) {
    std::vector<double> host, ev;
    for (int i = 0; i < warm + calls; i++) {
        cudaError_t e = cudaStreamSynchronize(st);
        if (e == cudaSuccess) e = cudaEventRecord(a, st);
        const auto t0 = std::chrono::steady_clock::now();
        if (e == cudaSuccess) e = cudaGraphLaunch(exec, st);
        const auto t1 = std::chrono::steady_clock::now();
        if (e == cudaSuccess) e = cudaEventRecord(b, st);
        if (e == cudaSuccess) e = cudaEventSynchronize(b);
        float ms = 0;
        if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, a, b);
        if (e != cudaSuccess) return e;
        if (i >= warm) {
            host.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
            ev.push_back(ms * 1000.0);
        }
    }
    *out = SingleCalls{median(ev), median(host)};
    return cudaSuccess;
}

// time_single_calls, then `burst` launches back to back between two events: GPU time per
// launch (us) in *burst_us.
static cudaError_t time_single_and_burst(cudaGraphExec_t exec, cudaStream_t st, cudaEvent_t a,
                                         cudaEvent_t b, int warm, int calls, int burst,
                                         SingleCalls* out, double* burst_us) {
    cudaError_t e = time_single_calls(exec, st, a, b, warm, calls, out);
    if (e == cudaSuccess) e = cudaEventRecord(a, st);
    for (int it = 0; it < burst && e == cudaSuccess; it++) e = cudaGraphLaunch(exec, st);
    if (e == cudaSuccess) e = cudaEventRecord(b, st);
    if (e == cudaSuccess) e = cudaEventSynchronize(b);
    float ms = 0;
    if (e == cudaSuccess) e = cudaEventElapsedTime(&ms, a, b);
    *burst_us = ms * 1000.0 / burst;
    return e;
}
