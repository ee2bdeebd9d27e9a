// Elementwise modular addition over u64 RNS limbs.
//
// out[l][i] = (a[l][i] + b[l][i]) mod q[l] for limbs l in [0, limbs) and i in [0, n).
// Inputs must be reduced: a, b < q < 2^63, so the sum never overflows 64 bits.
// One thread per coefficient, a grid-stride loop over limbs * n.
#include <stdint.h>

extern "C" __global__ void modadd_u64(const uint64_t* __restrict__ a,
                                      const uint64_t* __restrict__ b,
                                      uint64_t* __restrict__ out,
                                      const uint64_t* __restrict__ moduli,
                                      uint32_t n,
                                      uint32_t limbs) {
    uint64_t total = (uint64_t)n * limbs;
    for (uint64_t idx = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; idx < total;
         idx += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t q = moduli[idx / n];
        uint64_t s = a[idx] + b[idx];
        out[idx] = s >= q ? s - q : s;
    }
}
