// Standalone probe (experiments, not part of the build): is the host's submission time of a
// one-node graph launch a property of the process, of the stream, or of neither? Per stream
// (8 non-blocking streams, each with its own instantiated one-node graph of a no-work kernel,
// 128 x 256 threads like the paired NTT's grid), 200 single calls after 20 warm-ups, each
// between two events on the idle stream: median host time of cudaGraphLaunch and median event
// time; the streams twice, in order, so a per-stream property shows as the same figure in both
// passes. Run it as several processes (and with CUDA_DEVICE_MAX_CONNECTIONS set) to compare.
//
// nvcc -arch=sm_90 -O3 -std=c++17 kernels/bench/submit_probe.cu -o submit_probe
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "bench_check.cuh"
#include "bench_single.cuh"

__global__ void nop(unsigned long long* p) {
    if (p != nullptr && threadIdx.x == 0 && blockIdx.x == 0) p[0] = 1;
}

int main() {
    const int S = 8, WARM = 20, N = 200;
    const char* conn = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
    std::vector<cudaStream_t> st(S);
    std::vector<cudaGraphExec_t> ex(S);
    unsigned long long* dummy = nullptr;
    for (int s = 0; s < S; s++) {
        CK(cudaStreamCreateWithFlags(&st[s], cudaStreamNonBlocking));
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(st[s], cudaStreamCaptureModeThreadLocal));
        nop<<<128, 256, 0, st[s]>>>(dummy);
        CK(cudaStreamEndCapture(st[s], &g));
        CK(cudaGraphInstantiate(&ex[s], g, 0));
    }
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    printf("CUDA_DEVICE_MAX_CONNECTIONS=%s\n", conn ? conn : "(unset)");
    for (int pass = 0; pass < 2; pass++) {
        for (int s = 0; s < S; s++) {
            SingleCalls r;
            CK(time_single_calls(ex[s], st[s], a, b, WARM, N, &r));
            printf("pass %d stream %d host_us %.2f event_us %.2f\n", pass, s, r.host_us,
                   r.event_us);
        }
    }
    return 0;
}
