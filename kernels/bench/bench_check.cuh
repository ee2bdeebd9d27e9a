// The runtime-error check of the standalone harnesses of kernels/bench: prints the call site
// and the runtime's message, then returns 1 from the calling function (main).
#pragma once
#include <cstdio>

#define CK(x)                                                                     \
    do {                                                                          \
        cudaError_t e = (x);                                                      \
        if (e != cudaSuccess) {                                                   \
            printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));      \
            return 1;                                                             \
        }                                                                         \
    } while (0)
