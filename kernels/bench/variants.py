"""Writes variants of kernels/ckks.cu for kernels/bench/ntt_bench.cu into <out>/<name>/ckks_v.cu.

Timing experiments only: several variants compute wrong results on purpose (they leave a part
out to show what it costs); the bit-exact checks live in crates/ckks/tests/gpu_ops.rs.
"""
import pathlib
import sys

src = pathlib.Path(__file__).resolve().parent.parent.joinpath("ckks.cu").read_text()
out = pathlib.Path(sys.argv[1])

FENCE = "        __threadfence();\n        atomicAdd(&ctr[0], 1u);\n"
REL = ('        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(&ctr[0]) : "memory");\n')
SYNC_BODY = src[src.index("__device__ __forceinline__ void limb_sync(unsigned* ctr, unsigned target) {"):]
SYNC_BODY = SYNC_BODY[: SYNC_BODY.index("\n}\n") + 3]
SHOUP = "    return x * w - hi * q;  // in [0, 2q)"

variants = {
    "base": src,
    "rel": src.replace(FENCE, REL),
    "nofence": src.replace(FENCE, "        atomicAdd(&ctr[0], 1u);\n"),
    "nosync": src.replace(
        SYNC_BODY,
        "__device__ __forceinline__ void limb_sync(unsigned* ctr, unsigned target) { (void)ctr; (void)target; __syncthreads(); }\n",
    ),
    "noarith": src.replace(SHOUP, "    (void)hi; return x + w;"),
    "ksunroll2": src.replace(
        "#pragma unroll 1\n            for (uint32_t d = d0; d < d1; d++) {",
        "#pragma unroll 2\n            for (uint32_t d = d0; d < d1; d++) {",
    ),
    "ksunroll": src.replace(
        "#pragma unroll 1\n            for (uint32_t d = d0; d < d1; d++) {",
        "#pragma unroll 4\n            for (uint32_t d = d0; d < d1; d++) {",
    ),
}
MARKS = r"""
__device__ unsigned long long g_marks[4096 * 16];
#define MARK(i)                                                                              \
    if (threadIdx.x == 0) {                                                                  \
        unsigned long long t_, c_;                                                           \
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t_));                               \
        c_ = clock64();                                                                      \
        const uint32_t b_ = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;  \
        g_marks[b_ * 16 + 2 * (i)] = t_;                                                      \
        g_marks[b_ * 16 + 2 * (i) + 1] = c_;                                                  \
    }
"""
START = "    const uint32_t k = GS ? blockIdx.x : cl_rank();\n"
SYNC = "        limb_sync(ctr, target);  // every column of the limb is in tdst\n"
END = "        if constexpr (!GS) cl_wait();  // no block leaves while another may still read its tile\n"
timed = src.replace("typedef long long i64;\n", "typedef long long i64;\n" + MARKS, 1)
timed = timed.replace(START, START + "    if constexpr (GS) { MARK(0); }\n", 1)
timed = timed.replace(SYNC, "        MARK(1);\n" + SYNC + "        MARK(2);\n", 1)
timed = timed.replace(END, END + "        if constexpr (GS) { MARK(3); }\n", 1)
# The barrier split: after the fence (4), after the arrival (5), after the wait (6).
timed = timed.replace(
    "        __threadfence();\n        atomicAdd(&ctr[0], 1u);\n        while ((int)(ld_acquire(&ctr[0]) - target) < 0) {\n        }\n",
    "        __threadfence();\n        MARK(4);\n        atomicAdd(&ctr[0], 1u);\n        MARK(5);\n"
    "        while ((int)(ld_acquire(&ctr[0]) - target) < 0) {\n        }\n        MARK(6);\n",
)
assert "MARK(6)" in timed
timed = timed.replace("typedef long long i64;\n" + MARKS, "typedef long long i64;\n", 1)
timed = timed.replace("#include <stdint.h>\n", "#include <stdint.h>\n" + MARKS, 1)
variants["timed"] = timed

# ks_inner_cl: ask L2 for every digit's ext and key line of the thread's four words before the
# digit loop (prefetches hold no registers), so the loop's eight rounds of loads wait on L2
# rather than DRAM. kspf: ext and key lines; kspfk: key lines only.
KS_LOOP = "        u64 a[4] = {0, 0, 0, 0};\n"
PF_L2 = """        {
            const uint32_t t4 = (pos / 4) % 4, line = pos & ~15u;
            for (uint32_t d = t4; d < digits; d += 4) {
                asm volatile("prefetch.global.L2 [%0];" ::"l"(k0 + d * key_ds + line));
                EXT_PF
            }
        }
"""
variants["kspf"] = src.replace(KS_LOOP, KS_LOOP + PF_L2.replace("EXT_PF", 'asm volatile("prefetch.global.L2 [%0];" ::"l"(e0 + d * ext_ds + line));'))
variants["kspfk"] = src.replace(KS_LOOP, KS_LOOP + PF_L2.replace("EXT_PF", ""))
# mupf: the ModUp kernel (ntt_fwd_cl) takes the key and asks L2 for the two key rows of its
# (digit z, target row y) at its start (256 lines per block), so ks_inner_cl reads them from L2.
MU_OLD = "CL_KERNEL3 ntt_fwd_cl(NTT_FWD_PARAMS) { ntt_fwd_entry<0>(NTT_FWD_ARGS); }"
MU_NEW = """#define HAS_KEYPF 1
CL_KERNEL3 ntt_fwd_cl(NTT_FWD_PARAMS, const u64* __restrict__ kpf, u64 kpf_ds, u64 kpf_cs) {
    if (kpf != nullptr && threadIdx.x < 256) {
        const uint32_t L = cl_rank() * 256 + threadIdx.x;  // line of the cluster's 2048
        const u64* a = kpf + (u64)(prime_off + blockIdx.z) * kpf_ds + (L / 1024) * kpf_cs +
                       (u64)(prime_off + blockIdx.y) * NN + (L % 1024) * 16;
        asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
    }
    ntt_fwd_entry<0>(NTT_FWD_ARGS);
}"""
variants["mupf"] = src.replace(MU_OLD, MU_NEW)
variants["mupfks"] = variants["kspf"].replace(MU_OLD, MU_NEW)

# mdrows: ModDown with one thread per coefficient k over all L rows (grid (N / 256, 1, 2)): the
# P row is loaded once per k instead of once per (k, row), and the rows' loads are independent.
MD_START = "extern \"C\" __global__ void ks_moddown("
MD_BODY = src[src.index(MD_START):]
MD_BODY = MD_BODY[: MD_BODY.index("\n}\n") + 3]
MD_NEW = """#define MD_ROWS 1
extern "C" __global__ void ks_moddown(const u64* __restrict__ acc, const u64* __restrict__ add0,
                                      const u64* __restrict__ add1, u64* __restrict__ out,
                                      const Prime* __restrict__ primes, const WP* __restrict__ pinv,
                                      uint32_t prime_off, uint32_t L, uint32_t ginv) {
    const uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t c = blockIdx.z;
    const u64* ac = acc + (u64)c * (L + 1) * NN;
    const u64 raw_p = ac[(u64)L * NN + k];
#pragma unroll 4
    for (uint32_t i = 0; i < L; i++) {
        const uint32_t pid = prime_off + i;
        const Prime p = primes[pid];
        const WP w = pinv[pid];
        u64 xp = reduce64(raw_p, p);
        u64 v = shoup(submod(ac[(u64)i * NN + k], xp, p.q), w.w, w.wp, p.q);
        if (c == 0 && add0 != nullptr) {
            const u64* row = add0 + (u64)i * NN;
            u64 a = ginv != 0 ? aut_gather(row, k, ginv, p.q) : row[k];
            v = addmod(v, a, p.q);
        }
        if (c == 1 && add1 != nullptr) v = addmod(v, add1[(u64)i * NN + k], p.q);
        out[((u64)c * L + i) * NN + k] = v;
    }
}
"""
variants["mdrows"] = src.replace(MD_BODY, MD_NEW)

for name, text in variants.items():
    if name != "base" and text == src:
        sys.exit(f"variant {name}: pattern not found")
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "ckks_v.cu").write_text(text)
    print(name)
