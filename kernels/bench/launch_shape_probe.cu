// Standalone probe (experiments, not part of the build): does the shape of a one-node graph's
// kernel change what one call costs on an idle stream? A no-work kernel as a one-node graph,
// 200 single calls between two events after 20 warm-ups (median event time and median host
// time of cudaGraphLaunch), for: 1 block of 32 threads; 128 blocks of 256 threads; the same
// with 32 KiB of static shared memory (the paired NTT kernels' footprint); that, launched
// cooperatively; and 132 blocks. Shapes alternate in two passes.
//
// nvcc -arch=sm_90 -O3 -std=c++17 kernels/bench/launch_shape_probe.cu -o launch_shape_probe
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>

#include "bench_check.cuh"
#include "bench_single.cuh"

__global__ void nop(unsigned long long* p) {
    if (p != nullptr && threadIdx.x == 0 && blockIdx.x == 0) p[0] = 1;
}
__global__ void __launch_bounds__(256, 1) nop_smem(unsigned long long* p) {
    __shared__ unsigned long long s[4096];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    if (p != nullptr && threadIdx.x == 0) p[blockIdx.x] = s[255 - threadIdx.x];
}

int main() {
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    unsigned long long* sink = nullptr;
    CK(cudaMalloc(&sink, 256 * 8));
    struct Shape {
        const char* name;
        void* f;
        int blocks, threads;
        bool coop;
    };
    const Shape shapes[] = {
        {"1x32", (void*)nop, 1, 32, false},
        {"128x256", (void*)nop, 128, 256, false},
        {"128x256 32KiB", (void*)nop_smem, 128, 256, false},
        {"128x256 32KiB coop", (void*)nop_smem, 128, 256, true},
        {"132x256 32KiB", (void*)nop_smem, 132, 256, false},
    };
    const int S = sizeof(shapes) / sizeof(shapes[0]);
    std::vector<cudaGraphExec_t> ex(S);
    for (int i = 0; i < S; i++) {
        cudaGraph_t g;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        void* args[] = {&sink};
        if (shapes[i].coop)
            CK(cudaLaunchCooperativeKernel(shapes[i].f, shapes[i].blocks, shapes[i].threads, args,
                                           0, st));
        else
            CK(cudaLaunchKernel(shapes[i].f, shapes[i].blocks, shapes[i].threads, args, 0, st));
        CK(cudaStreamEndCapture(st, &g));
        CK(cudaGraphInstantiate(&ex[i], g, 0));
    }
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < S; i++) {
            SingleCalls r;
            double burst = 0;  // back to back: 200 launches between two events
            CK(time_single_and_burst(ex[i], st, a, b, 20, 200, 200, &r, &burst));
            printf("pass %d %-20s event %5.2f us  host %5.2f us  burst %5.2f us\n", pass,
                   shapes[i].name, r.event_us, r.host_us, burst);
        }
    }
    return 0;
}
