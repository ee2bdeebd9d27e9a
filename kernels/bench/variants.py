"""Writes variants of kernels/ckks.cu for kernels/bench/ntt_bench.cu into <out>/<name>/ckks_v.cu.

Timing experiments only: several variants compute wrong results on purpose (they leave a part
out to show what it costs); the bit-exact checks live in crates/ckks/tests/gpu_ops.rs.
"""
import pathlib
import sys

src = pathlib.Path(__file__).resolve().parent.parent.joinpath("ckks.cu").read_text()
if len(sys.argv) > 2 and sys.argv[2].startswith("src="):
    src = pathlib.Path(sys.argv[2][4:]).read_text()
out = pathlib.Path(sys.argv[1])

FENCE = "        __threadfence();\n        atomicAdd(&ctr[0], 1u);\n"
REL = ('        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(&ctr[0]) : "memory");\n')
SYNC_BODY = src[src.index("__device__ __forceinline__ void limb_sync(unsigned* ctr, unsigned target) {"):]
SYNC_BODY = SYNC_BODY[: SYNC_BODY.index("\n}\n") + 3]
SHOUP = "    return x * w - hi * q;  // in [0, 2q)"
SHOUP3 = "#endif\n    return x * w - hi * q;\n}"
KS_LOOP = "#pragma unroll 1\n        for (uint32_t d = d0; d < d1; d++) {\n"
KS_PF = """            if (d + {ahead} < digits) {{
#pragma unroll
                for (int i = 0; i < M; i++) {{
                    asm volatile("prefetch.global.L2 [%0];" ::"l"(k0 + (d + {ahead}) * key_ds + pos[i]));
                    asm volatile("prefetch.global.L2 [%0];" ::"l"(e0 + (d + {ahead}) * ext_ds + pos[i]));
                }}
            }}
"""

variants = {
    "base": src,
    "rel": src.replace(FENCE, REL),
    "nofence": src.replace(FENCE, "        atomicAdd(&ctr[0], 1u);\n"),
    # acqrel: the limb barrier's fence as fence.acq_rel.gpu (MEMBAR.ALL.GPU) instead of
    # __threadfence()'s fence.sc.gpu (MEMBAR.SC.GPU); still a release pattern with the atomic.
    "acqrel": src.replace(
        FENCE,
        '        asm volatile("fence.acq_rel.gpu;" ::: "memory");\n        atomicAdd(&ctr[0], 1u);\n',
    ),
    "nosync": src.replace(
        SYNC_BODY,
        "__device__ __forceinline__ void limb_sync(unsigned* ctr, unsigned target) { (void)ctr; (void)target; __syncthreads(); }\n",
    ),
    # noarith: both products (Shoup's, the cluster and two-pass kernels'; shoup_lazy3, the
    # Loose butterflies') replaced by an add.
    "noarith": src.replace(SHOUP, "    (void)hi; return x + w;").replace(
        SHOUP3, "#endif\n    (void)hi;\n    return x + w;\n}"
    ),
    "ksunroll2": src.replace(
        "#pragma unroll 1\n        for (uint32_t d = d0; d < d1; d++) {",
        "#pragma unroll 2\n        for (uint32_t d = d0; d < d1; d++) {",
    ),
    # kspf1 / kspf2: the inner product's digit loop asks L2 for the lines of digit d + 1 (d + 2)
    # while it loads digit d (prefetch.global.L2: no registers), so each digit's loads wait on L2
    # instead of DRAM.
    "kspf1": src.replace(KS_LOOP, KS_LOOP + KS_PF.format(ahead=1)),
    "kspf2": src.replace(KS_LOOP, KS_LOOP + KS_PF.format(ahead=2)),
    # twsmall (run 69, wrong words): every twiddle of the *_gs rounds taken from the table's
    # first 64 pairs (L1 hits), so the rows' twiddle lines (2x the block's data in the second
    # phase) cost no L2 traffic: what the twiddle loads cost.
    "twsmall": src.replace(
        "__device__ __forceinline__ Tw7 tw7(const WP* tw, uint32_t B) {\n    Tw7 t;",
        "__device__ __forceinline__ Tw7 tw7(const WP* tw, uint32_t B) {\n    Tw7 t;\n    B &= 15u;",
    ).replace("ldwp(tw + (SUB + row) * 64 + b / 2)", "ldwp(tw + b / 2)"),
    "ksunroll": src.replace(
        "#pragma unroll 1\n        for (uint32_t d = d0; d < d1; d++) {",
        "#pragma unroll 4\n        for (uint32_t d = d0; d < d1; d++) {",
    ),
}

# fpq / fpqall (run 78, not kept as variants): the butterflies' quotient by binary64 arithmetic
# for the ~2^40 primes, from a table holding w / q (rounded down) as a double in the wp field
# (the harness's FP_TW option then), with a per-butterfly branch on q (fpq: 9.8 us forward back
# to back against 8.2, words identical) and without it (fpqall, every limb by doubles, wrong
# words on the 60-bit limb: 7.8). Built out as kernels/bench/experiments/fpq-quotient.patch
# (the double derived from Shoup's wp, the branch folded per block by by_width) and dropped
# after run 79: the 60-bit limb keeps Shoup's products and bounds the NTT, and the doubled
# kernels made the key-switch chain 8 us slower.

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
# gs_fwd_ntt (ntt_fwd_gs): start, around the limb barrier, end.
START = "    if (threadIdx.x == 0) target = limb_target(ctr);  // gs_fwd_ntt\n"
SYNC = "    limb_sync(ctr, target);  // every column of the limb is in tdst\n"
END = "        gs_fwd_rows_last<A>(s, tw, q, k * CL_LINES + hi, store2);\n    }\n}\n"
timed = src.replace("typedef long long i64;\n", "typedef long long i64;\n" + MARKS, 1)
assert START in timed and SYNC in timed and END in timed
timed = timed.replace(START, START + "    MARK(0);\n", 1)
timed = timed.replace(SYNC, "    MARK(1);\n" + SYNC + "    MARK(2);\n", 1)
timed = timed.replace(END, END[:-2] + "    MARK(3);\n}\n", 1)
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

# kspf / kspfk (ks_inner_cl asking L2 for every digit's ext and key lines, or key lines only,
# before the digit loop) were measured slower (run 22) and removed when the inner product
# became the shared helper ks_sum; their text is in commit 403e1d6.
# warp (every warp fences and counts itself at the limb barrier) was measured slower (run 40:
# forward burst 10.4 us against 8.2) and removed; its text is in commit 8842825.
# gpnowork / gpnowait / gpnone (run 61: ks_inner_gp's P warp without its rounds, without its
# barrier wait, without both) patch that kernel and live in kernels/bench/experiments/ks-inner-gp.patch.
# gsnopf (the *_gs kernels without an L1 prefetch of every twiddle line a block reads) was the
# control of a prefetch measured slower (run 34) and removed with it; see commit a0a58ea.
# mupf / mupfks (the ModUp asking L2 for the key rows, alone and with kspf) and mdrows (ModDown
# with one thread per coefficient over all rows) were measured slower and removed; their text
# and the harness arguments they need are in commit 94e08e4 (docs/perf.md, 07:30 summary).

# twpre (the *_gs kernels loading their second phase's twiddles into registers before the limb
# barrier) was measured no faster (run 50: forward 8.14-8.23 us against 8.20) and removed; its
# text is in commit 9db1e1e.

# pdl (griddepcontrol.wait in ks_inner_gs and ks_moddown for the harness's PDL rows, run 51)
# became the kernels' own grid_dep_wait; see commit 9db1e1e.

# trig (ntt_fwd_gq and ks_inner_gs triggering their programmatic dependents at their start) was
# measured slower (run 53: chain-pdl-g +0.3-0.5 us) and not kept: it added
# `griddepcontrol.launch_dependents` right after grid_dep_wait() in those two kernels.

# smem16 (the kernels without clusters declaring the 16 KiB tile they use instead of 32 KiB,
# more L1) was measured no faster (run 55: forward 8.24-8.31 us back to back against
# 8.20-8.33, fwd-g1 single 10.1-10.2 against 9.9-10.0) and not kept.


# fp64 (twenty-ninth session, timing only, wrong words on every limb): an upper bound for
# butterflies in binary64 arithmetic. The words of the kernels without clusters are held as
# doubles (their bit patterns in the u64 slots), each product x w mod q as
# ph = x w, pl = fma(x, w, -ph) (exact), qf = round(ph / q) (by the 1.5 * 2^52 shift),
# r = fma(-qf, q, ph) + pl (exact, |r| <= 0.75 q for |x| <= 2^50), and no reduction anywhere
# else: the forward's words grow by < 0.75 q a stage (< 2^45 after 14), the inverse's sums double a stage
# (a real inverse reduces them between the phases; not here). What this leaves out of a real
# kernel: the conversions at load and store, a table of doubles (this reads the double's bits
# from the Shoup pair's w field, so the twiddle traffic is unchanged), and the 60-bit limb,
# which doubles cannot hold (it would keep Loose's integer products). Measured (runs 153, 154):
# 1.4-1.5 us less per forward call, ~1 us less per inverse call, on the H200 and the H100.
# The binary64 probes below patch the paired kernels as they were before decision 0511 (commit
# d00e79c's kernels/ckks.cu: integer butterflies only, ntt_fwd_gp's body not a template); on a
# later source they are skipped (`src=<file>` as a second argument runs them on such a copy:
# `git show d00e79c:kernels/ckks.cu > /tmp/ckks-d00e79c.cu`).
if "        fwd8<Loose, 4>(x, tw7(tw, 1), q);\n" in src and "GS_KERNEL ntt_fwd_gp(" in src:
    LOOSE_BODY = src[src.index("struct Loose {\n"):]
    LOOSE_BODY = LOOSE_BODY[: LOOSE_BODY.index("\n};\n") + 4]
    # The struct of kernels/bench/loose_f64.cuh (LooseF) renamed Loose.
    FP64_HDR = pathlib.Path(__file__).resolve().parent.joinpath("loose_f64.cuh").read_text()
    FP64_LOOSE = FP64_HDR[FP64_HDR.index("struct LooseF {"):].replace("struct LooseF {", "struct Loose {", 1)
    variants["fp64"] = src.replace(LOOSE_BODY, FP64_LOOSE)

    # fp64w7 (twenty-ninth session, timing only, wrong words): fp64's butterflies in every warp but
    # the last of each block (threadIdx.x / 32 == 7), which keeps Loose's integer products: the
    # share of a 60-bit limb spread over every SM as one warp in eight (a kernel that gives each
    # block two items of every prime would have that mix). A pessimistic bound: in the paired kernels
    # warp 7 is in component group 1, whose barriers make warps 4-6 wait for it. The dispatch is a
    # warp-uniform branch per butterfly, and that is what run 154 measured: 12.0 us back to back
    # against 7.9 (base) and 6.5 (fp64), both bodies behind a branch in every butterfly.
    W7 = FP64_HDR[FP64_HDR.index("struct LooseF {"):] + LOOSE_BODY.replace("struct Loose {", "struct LooseI {") + r"""struct Loose {
        __device__ __forceinline__ static bool w7() { return (threadIdx.x >> 5) == 7; }
        template <bool C>
        __device__ __forceinline__ static void ct(u64& x, u64& y, WP w, u64 q) {
            if (w7()) LooseI::ct<C>(x, y, w, q); else LooseF::ct<C>(x, y, w, q);
        }
        __device__ __forceinline__ static void gs(u64& x, u64& y, WP w, u64 q) {
            if (w7()) LooseI::gs(x, y, w, q); else LooseF::gs(x, y, w, q);
        }
        __device__ __forceinline__ static void ct_out(u64& x0, u64& x1, WP w, u64 q) {
            if (w7()) LooseI::ct_out(x0, x1, w, q); else LooseF::ct_out(x0, x1, w, q);
        }
        __device__ __forceinline__ static u64 gs_off(u64 q) { return 4 * q; }
    };
    """
    variants["fp64w7"] = src.replace(LOOSE_BODY, W7)

    # mixg / mixg1 (thirtieth session, timing only, wrong words): the paired kernels with one
    # component group of every block on Loose's integer butterflies and the other on binary64
    # (mixg: group 0 = warps 0-3 integer; mixg1: group 1). The arithmetic is chosen once per group
    # (the kernel body a template on it, instantiated twice), not per butterfly. Every block then
    # runs what the slowest blocks of a realizable layout would run: the 60-bit limb's 32 component
    # groups (8 lines each) one per block in 32 blocks, each beside a binary64 group of another
    # prime, and the other 96 blocks two binary64 groups (32 + 32 + 192 = 7 x 32 groups of the
    # ~2^40 primes). If mixg is close to fp64, that layout keeps most of binary64's gain.
    def body_template(text, kernel, body, repl):
        head = "GS_KERNEL " + kernel + "("
        i = text.index(head)
        j = text.index("\n}\n", i) + 3
        k = text[i:j]
        params = k[len(head):k.index(") {")]
        inner = k[k.index(") {") + 3 : -3]
        shared = "    CL_SHARED(s);\n"
        assert inner.startswith("\n" + shared)
        inner = "\n" + inner[len(shared) + 1:]
        for a, b in repl:
            assert a in inner, (kernel, a)
            inner = inner.replace(a, b)
        names = [q.split()[-1].lstrip("*") for q in params.replace("\n", " ").split(",")]
        args = ", ".join(names)
        out = ("template <class A>\n__device__ __forceinline__ void " + body + "(u64* s, " + params
               + ") {" + inner + "\n}\n" + head + params + ") {\n" + shared
               + "    if (MIX_INT) {\n        " + body + "<Loose>(s, " + args + ");\n    } else {\n        "
               + body + "<LooseF>(s, " + args + ");\n    }\n}\n")
        return text[:i] + out + text[j:]

    MIX_HDR = FP64_HDR[FP64_HDR.index("struct LooseF {"):]
    GP_MID = "template <bool FWD, unsigned M = 7>\n__device__ __forceinline__ void gp_col_mid("
    mix = src.replace(LOOSE_BODY, LOOSE_BODY + MIX_HDR)
    assert GP_MID in mix
    mix = mix.replace(GP_MID, "template <bool FWD, unsigned M = 7, class A = Loose>\n__device__ __forceinline__ void gp_col_mid(")
    mix = mix.replace("        fwd8<Loose, M>(x, tw7(tw, 8 + ah), q);\n    } else {\n        inv8<Loose>(x, tw7(tw, 8 + ah), q);",
                      "        fwd8<A, M>(x, tw7(tw, 8 + ah), q);\n    } else {\n        inv8<A>(x, tw7(tw, 8 + ah), q);")
    mix = body_template(mix, "ntt_fwd_gp", "gp_fwd_body", [
        ("fwd8<Loose, 4>", "fwd8<A, 4>"), ("gp_col_mid<true, 2>", "gp_col_mid<true, 2, A>"),
        ("Loose::ct<true>", "A::template ct<true>"), ("fwd8<Loose, 2>", "fwd8<A, 2>"),
        ("gs_mid_round<true, true, Loose, 5>", "gs_mid_round<true, true, A, 5>"),
        ("gs_fwd_rows_last(sr", "gs_fwd_rows_last<A>(sr")])
    mix = body_template(mix, "ntt_inv_gp", "gp_inv_body", [
        ("inv_rows_first(sr", "inv_rows_first<A>(sr"), ("gs_mid_round<false, true, Loose>", "gs_mid_round<false, true, A>"),
        ("inv8<Loose>", "inv8<A>"), ("Loose::gs(", "A::gs("), ("gp_col_mid<false>", "gp_col_mid<false, 7, A>"),
        ("inv8_last<Loose>", "inv8_last<A>")])
    variants["mixg"] = mix.replace("#define GP_CTR2 128\n", "#define GP_CTR2 128\n#define MIX_INT (threadIdx.x < 128)\n")
    variants["mixg1"] = mix.replace("#define GP_CTR2 128\n", "#define GP_CTR2 128\n#define MIX_INT (threadIdx.x >= 128)\n")

else:
    print("fp64 fp64w7 mixg mixg1: skipped (they patch the kernels before decision 0511)")

# Probes of the paired kernels after decision 0511 (thirty-first session, timing only):
# - nogatemix: the blocks of the two transposed limb rows (an integer group of the wide prime
#   beside a binary64 group of its neighbour) skip the gate, so their binary64 group starts its
#   rounds at once instead of after the integer group's first phase; the other blocks keep it.
#   Same words (the gate orders nothing the results depend on).
# - nogate: no block waits at the gate (same words).
# - twd (wrong words): LooseF takes the twiddles' words as doubles without converting them
#   (num), what a table of doubles would save in arithmetic (the loads stay 16 bytes).
GATE_W = "        if (th.g == 1) gate_wait();\n"
GATE_O = "        if (th.g == 0 && blockDim.x == GS_THREADS) gate_open();  // no group 1: no gate\n"
if GATE_W in src and "struct GpGroup {" in src:
    MIXED = """// (variant nogatemix) Whether this block is one of the transposed rows' mixed blocks: its two
// groups work on different primes.
__device__ __forceinline__ bool gp_mixed(const Prime* __restrict__ primes, uint32_t prime_off) {
    return blockDim.x == GS_THREADS &&
           gp_role(0, primes, prime_off).y != gp_role(1, primes, prime_off).y;
}
"""
    assert src.count(GATE_W) == 2 and src.count(GATE_O) == 2
    v = src.replace("// The paired kernels' start:", MIXED + "// The paired kernels' start:", 1)
    v = v.replace("    uint32_t pid;\n    u64 q;\n", "    uint32_t pid;\n    u64 q;\n    bool mixed;\n", 1)
    v = v.replace("pid(prime_off + r.y), q(primes[pid].q) {}",
                  "pid(prime_off + r.y), q(primes[pid].q), mixed(gp_mixed(primes, prime_off)) {}", 1)
    v = v.replace(GATE_W, "        if (th.g == 1 && !G.mixed) gate_wait();\n")
    v = v.replace(GATE_O, "        if (th.g == 0 && blockDim.x == GS_THREADS && !G.mixed) gate_open();\n")
    variants["nogatemix"] = v
    variants["nogate"] = src.replace(GATE_W, "").replace(GATE_O, "")
    LF = src[src.index("struct LooseF {"):]
    LF = LF[: LF.index("\n};\n") + 4]
    variants["twd"] = src.replace(LF, LF.replace("num(w.w)", "d(w.w)").replace("num(c.s.w)", "d(c.s.w)").replace("num(c.f.w)", "d(c.f.w)"))
    assert variants["twd"] != src
    # invst2 (wrong words, the same bytes): ntt_inv_gp's last stores as the forward's, 16-byte pairs
    # along 8 rows (2 rows of 256 bytes per warp store) instead of 8-byte words down 8 columns (4
    # rows of 64 bytes): what the inverse's column stores cost at the kernel's end.
    # invnomid (wrong words): no reduction of the inverse's words at the exchange (LooseF::mid).
    INV_ST = "        for (int e = 0; e < 8; e++) limb[(hi + 16 * e) * SUB + col] = x[e];\n"
    assert src.count(INV_ST) == 1
    variants["invst2"] = src.replace(INV_ST, """        {
            u64* d = limb + lines.coff + (8 * blockIdx.x + th.t / 16) * SUB + 2 * (th.t % 16);
#pragma unroll
            for (int i = 0; i < 4; i++) st2(d + 32 * i, x[2 * i], x[2 * i + 1]);
        }
""")
    # invtr (same words): invst2 made right: the inverse's last words go back to the tile, the
    # group meets, and each thread stores 4 pairs of adjacent columns along rows t / 4 + 32i
    # (16-byte stores, 8 rows of 64 bytes per warp store) instead of 8 words down its column.
    variants["invtr"] = src.replace(INV_ST, """        for (int e = 0; e < 8; e++) s[gp_cw(lo, hi + 16 * e)] = x[e];
        gsync(th.g);
        {
            const uint32_t p = th.t % 4, c0 = 8 * th.g + 2 * p;
            const u64 cb = lines.col(0);
#pragma unroll
            for (int i = 0; i < 4; i++) {
                const uint32_t a = th.t / 4 + 32 * i;
                u64 x0, x1;
                ld2sh(s + gp_cw(c0, a), x0, x1);
                st2(limb + a * SUB + cb + 2 * p, x0, x1);
            }
        }
""")
    INV_MID = "limb[lines.roff(hi) + lo + 16 * e] = A::mid(x[e], q);"
    if src.count(INV_MID) == 1:
        variants["invnomid"] = src.replace(INV_MID, "limb[lines.roff(hi) + lo + 16 * e] = x[e];")
    else:
        print("invnomid: skipped (the exchange's mid is in xput_inv since decision 0514)")
    # allf64 (wrong words on the wide prime): LooseF for every group of the paired kernels, the
    # bound of what the wide prime's integer groups still cost in the current layout.
    WIDE = "    if (G.q < F64_Q) {\n"
    assert src.count(WIDE) == 2
    variants["allf64"] = src.replace(WIDE, "    if (true) {\n")
    # Gate positions by block kind (same words), from the current source (forward: gate at its
    # first phase's stores; inverse: after its second round), the mixed blocks (the transposed
    # rows: the wide prime's integer group beside a binary64 group) moved alone:
    # - mixA: forward mixed blocks open after round 2; inverse mixed blocks at the stores;
    # - mixB: forward and inverse mixed blocks open after round 1;
    # - swapmix: in the mixed blocks the binary64 group goes first (group 0) and the wide
    #   prime's integer group waits at the gate (run 156's mixg1, with today's gates).
    # The first phases' round ends where a gate can go (forward rounds 1, 2; inverse round 1, stores).
    F1 = "        for (int e = 0; e < 8; e++) s[gp_cw(lo, hi + 16 * e)] = x[e];\n        gsync(th.g);\n"
    F2 = "        gp_col_mid<true, 2, A>(s, lo, hi >> 1, hi & 1, tw, q);\n        gsync(th.g);\n"
    I1 = "        inv_rows_first<A>(sr, x, tw, row, lo, hi, q);\n        gsync(th.g);\n"
    # The inverse's first-phase stores: into the output before decision 0514, the exchange after.
    IST = "        for (int e = 0; e < 8; e++) limb[lines.roff(hi) + lo + 16 * e] = A::mid(x[e], q);\n"
    if IST not in src:
        IST = "        for (int e = 0; e < 8; e++) st_rlx64(xr + 16 * e, A::xput_inv(x[e], q, tg));\n"
    for a in (F1, F2, I1, IST):
        assert src.count(a) == 1, a
    # mx: nogatemix with every block waiting again; UNI opens the uniform blocks' gate, MIXO the
    # mixed blocks'.
    mx = variants["nogatemix"].replace("        if (th.g == 1 && !G.mixed) gate_wait();\n", GATE_W)
    UNI = "        if (th.g == 0 && blockDim.x == GS_THREADS && !G.mixed) gate_open();\n"
    MIXO = "        if (th.g == 0 && G.mixed) gate_open();\n"
    assert mx.count(UNI) == 2
    variants["mixA"] = mx.replace(F2, F2 + MIXO).replace(IST, IST + MIXO)
    variants["mixB"] = mx.replace(F1, F1 + MIXO).replace(I1, I1 + MIXO)
    # uniA: the counterpart of mixA: the uniform blocks' gates moved (forward after round 2,
    # inverse at its stores), the mixed blocks' kept (the kept places open for them only).
    variants["uniA"] = mx.replace(UNI, MIXO).replace(F2, F2 + UNI).replace(IST, IST + UNI)
    # gppf (same words): every thread of a paired group asks L1 for one line of its 8 rows' twiddles
    # at the start (127 lines: the row rounds' tables at scales 1..64), so the forward's row phase
    # (after the limb barrier) and the inverse's second and third row rounds hit L1 instead of L2.
    PL = "    const PairLines lines{blockIdx.x, r.c * zs};\n"
    assert src.count(PL) == 2
    variants["gppf"] = src.replace(PL, PL + """    {
        uint32_t m = 64, i = th.t;
        while (m && i >= m) {
            i -= m;
            m >>= 1;
        }
        if (m) pf(tw + (u64)m * (SUB + 8 * lines.k) + 8 * i);
    }
""")
    ROLE = "    return GpRole{g == 0 ? wide : other, blockIdx.y};\n"
    assert src.count(ROLE) == 1
    variants["swapmix"] = src.replace(ROLE, "    return GpRole{g == 1 ? wide : other, blockIdx.y};\n")
    # g1 / g2 / late (runs 163-164, same words) move the gates of 6950f13's kernels, where both
    # directions open it after the first phase's stores (520912e moved the inverse's to g2's
    # place): `git show 6950f13:kernels/ckks.cu > /tmp/ckks-6950f13.cu` and pass src= that file.
    I2 = "                                         (SUB + lines.row(line)) * 8 + (u >> 1), q);\n        }\n        gsync(th.g);\n        // Round 3"
    if src.count(I2) != 1:
        print("g1 g2 late: skipped (they move the gates of 6950f13's kernels)")
    else:
        # g1 / g2 (same words): group 0 opens the gate after its first phase's first (g1) or second
        # (g2) round instead of after the phase's stores, so group 1 starts its rounds earlier.
        OPEN = "        if (th.g == 0 && blockDim.x == GS_THREADS) gate_open();\n"
        nog = src.replace(GATE_O, "")
        variants["g1"] = nog.replace(F1, F1 + OPEN).replace(I1, I1 + OPEN)
        variants["g2"] = nog.replace(F2, F2 + OPEN).replace(I2, I2.replace("        // Round 3", OPEN + "        // Round 3"))
        # late (same words): the forward's gate opened once group 0 has passed its limb barrier, the
        # inverse's after its first phase's last round, before the stores.
        FL = "    pair_sync(th, ctr, target);  // every column of the group's component is in out\n"
        IL = "        inv8<A>(x, tw7(tw, SUB + row), q);\n"
        assert src.count(FL) == 1 and src.count(IL) == 1
        variants["late"] = nog.replace(FL, FL + OPEN[4:]).replace(IL, IL + OPEN)

# nopart / nowide (thirty-third session, wrong words on two limbs: bounds): in the mixed blocks
# (grid rows 0 and 1: the wide prime's integer group beside a binary64 partner) the partner
# group (nopart) or the wide group (nowide, after opening the gate so the partner starts at
# once) leaves at the kernel's start. What the partner's pipeline adds to the mixed blocks
# (the launch's likely tail, run 176) and what the wide group adds: the room a layout that
# spreads the mixed blocks' work differently could win.
GPG = "    const GpGroup G(primes, prime_off);\n"
if src.count(GPG) == 2:
    MIX_ROW = "blockDim.x == GS_THREADS && gridDim.y >= 2 && blockIdx.y < 2"
    variants["nopart"] = src.replace(GPG, GPG + f"    if ({MIX_ROW} && G.th.g == 1) return;\n")
    variants["nowide"] = src.replace(
        GPG, GPG + f"    if ({MIX_ROW} && G.th.g == 0) {{\n        gate_open();\n        return;\n    }}\n")

# (Thirty-fifth session: `mdearly` and `mdlate`, ModDown's addend before its wait with the
# inner product's trigger at its start / its limb barrier, were variants here for runs 196-198;
# the second landed as gs_inv_ntt's TRIG, decision 0508; their records are in docs/perf.md.)

# f64tw (forty-first session): LooseF's twiddle products from a table that holds, for the
# primes below F64_Q, the twiddle as a double and w / q rounded (the harness converts its table
# when built with -DF64TW): the quotient round(x (w / q)) is formed from x beside x w instead of
# after it, and the twiddle needs no conversion (num: two instructions). |round(x wq) - x w / q|
# <= 0.5 + |x| 2^-53 < 0.625 for |x| < 2^50, so r = fma(-qf, q, ph) + pl stays exact and below
# 0.625 q (the words equal base's). Only the paired kernels' rows (46-49) are meaningful in such
# a build: every integer kernel reads the converted table as Shoup pairs.
MULMOD = "    __device__ __forceinline__ static double mulmod(double x, double w, double qd, double qi) {\n"
MULMOD_TW = """    __device__ __forceinline__ static double mulmod_tw(double x, WP w, double qd) {
        const double wd = d(w.w), wq = d(w.wp);
        const double ph = __dmul_rn(x, wd);
        const double pl = __fma_rn(x, wd, -ph);
        const double qf = __dsub_rn(__fma_rn(x, wq, 6755399441055744.0), 6755399441055744.0);
        return __dadd_rn(__fma_rn(-qf, qd, ph), pl);
    }
"""
variants["f64tw"] = (
    src.replace(MULMOD, MULMOD_TW + MULMOD)
    .replace("r = mulmod(d(y), num(w.w), qd, qi);", "r = mulmod_tw(d(y), w, qd);")
    .replace("y = b(mulmod(__dsub_rn(xd, yd), num(w.w), qd, qi));", "y = b(mulmod_tw(__dsub_rn(xd, yd), w, qd));")
)
assert variants["f64tw"].count("mulmod_tw(") == 3

# tw8 (forty-second session): the twiddle tables of the primes below F64_Q as 8-byte doubles
# (w only; the harness converts its table when built with -DTW8: entry j of such a prime's table
# is the u64 slot j of its region), read by the LooseF rounds of the gs family and the paired
# kernels through ldw<A> / tw7a<A>: half the twiddle bytes of those rounds (LooseF never used
# Shoup's word, which the 16-byte loads brought in), tw7's seven loads as one scalar and three
# 16-byte pair loads, and no conversion of the twiddle (num: two instructions). Unlike f64tw it
# keeps no second live word. The words stay those of base (the same double, exact below 2^52).
# Only rows 46-49 (and the gs rows) are meaningful in such a build: the integer kernels read the
# converted table as Shoup pairs.
LDWP_END = """    return WP{v.x, v.y};
#endif
}
"""
TW8_LOADS = """// tw8: A's twiddle j of table tw (LooseF: the table's u64 slot j, a double's bits).
template <class A>
__device__ __forceinline__ WP ldw(const WP* tw, uint32_t j) {
    if constexpr (A::TWD) {
        return WP{__ldg(reinterpret_cast<const unsigned long long*>(tw) + j), 0};
    } else {
        return ldwp(tw + j);
    }
}
"""
TW7_END = """    for (int i = 0; i < 4; i++) t.w2[i] = ldwp(tw + 4 * B + i);
    return t;
}
"""
TW7A = """template <class A>
__device__ __forceinline__ Tw7 tw7a(const WP* tw, uint32_t B) {
    if constexpr (A::TWD) {
        const unsigned long long* d = reinterpret_cast<const unsigned long long*>(tw);
        Tw7 t;
        t.w0 = WP{__ldg(d + B), 0};
        const ulonglong2 a = __ldg(reinterpret_cast<const ulonglong2*>(d + 2 * B));
        const ulonglong2 b = __ldg(reinterpret_cast<const ulonglong2*>(d + 4 * B));
        const ulonglong2 c = __ldg(reinterpret_cast<const ulonglong2*>(d + 4 * B + 2));
        t.w1[0] = WP{a.x, 0};
        t.w1[1] = WP{a.y, 0};
        t.w2[0] = WP{b.x, 0};
        t.w2[1] = WP{b.y, 0};
        t.w2[2] = WP{c.x, 0};
        t.w2[3] = WP{c.y, 0};
        return t;
    } else {
        return tw7(tw, B);
    }
}
"""
def tw8(v):
    for s, tag in (("struct Harvey {\n", False), ("struct Loose {\n", False), ("struct LooseF {\n", True)):
        assert v.count(s) == 1, s
        v = v.replace(s, s + f"    static constexpr bool TWD = {'true' if tag else 'false'};\n")
    assert v.count(LDWP_END) == 1 and v.count(TW7_END) == 1
    # (tw7's callers first: TW7A's own fallback calls tw7.)
    v = v.replace("tw7(tw, ", "tw7a<A>(tw, ")
    v = v.replace(LDWP_END, LDWP_END + TW8_LOADS).replace(TW7_END, TW7_END + TW7A)
    for old in ("ldwp(tw + 64 + a / 2)", "ldwp(tw + (SUB + row) * 64 + b / 2)"):
        assert v.count(old) >= 2, old
        v = v.replace(old, "ldw<A>(tw, " + old[len("ldwp(tw + "):])
    # LooseF's butterflies: the twiddle is a double already.
    for old in ("r = mulmod(d(y), num(w.w), qd, qi);", "y = b(mulmod(__dsub_rn(xd, yd), num(w.w), qd, qi));"):
        assert v.count(old) == 1, old
        v = v.replace(old, old.replace("num(w.w)", "d(w.w)"))
    assert v.count("        return tw7(tw, B);\n") == 1  # run 212's build: the fallback called itself
    return v


variants["tw8"] = tw8(src)

# ld1 / ld1e (forty-second session, same words): the paired kernels' group 1 issues its first
# phase's loads only when group 0's have landed (named barrier 4: group 0 arrives, group 1 waits
# before its loads), so that at the launch's start the SMs ask L2 for one component's 2 MiB at a
# time instead of both components' 4 MiB at once; group 1's loads then land during group 0's
# rounds, before its gate. ld1: group 0 arrives after its first radix-8 round (its loaded words
# used); ld1e: right after its loads land (the arrive takes the words as operands).
FWD_LD = "        for (int e = 0; e < 8; e++) x[e] = A::in(base[(hi + 16 * e) * SUB + col]);\n        if (th.g == 1) gate_wait();\n        fwd8<A, 4>(x, tw7(tw, 1), q);\n"
INV_LD = "            x[2 * i + 1] = A::in(x[2 * i + 1]);\n        }\n        if (th.g == 1) gate_wait();\n        inv_rows_first<A>(sr, x, tw, row, lo, hi, q);\n"
FWD_PRE = "        u64 x[8];\n#pragma unroll\n        for (int e = 0; e < 8; e++) x[e] = A::in(base[(hi + 16 * e) * SUB + col]);\n"
INV_PRE = "        u64 x[8];\n#pragma unroll\n        for (int i = 0; i < 4; i++) {\n            ld2sh(src + lines.roff(hi)"
ARR = 'if (th.g == 0 && blockDim.x == GS_THREADS) asm volatile("bar.arrive 4, 256;" ::: "memory");'
ARRX = ('if (th.g == 0 && blockDim.x == GS_THREADS) asm volatile("bar.arrive 4, 256;" :: "l"(x[0]), "l"(x[1]), '
        '"l"(x[2]), "l"(x[3]), "l"(x[4]), "l"(x[5]), "l"(x[6]), "l"(x[7]) : "memory");')
WAIT1 = '        if (th.g == 1) asm volatile("bar.sync 4, 256;" ::: "memory");\n'
if src.count(FWD_LD) == 1 and src.count(INV_LD) == 1 and src.count(FWD_PRE) == 1 and src.count(INV_PRE) == 1:
    for name in ("ld1", "ld1e"):
        v = src.replace(FWD_PRE, WAIT1 + FWD_PRE).replace(INV_PRE, WAIT1 + INV_PRE)
        if name == "ld1":
            v = v.replace(FWD_LD, FWD_LD + "        " + ARR + "\n")
            v = v.replace(INV_LD, INV_LD + "        " + ARR + "\n")
        else:
            v = v.replace(FWD_LD, FWD_LD.replace("        if (th.g == 1) gate_wait();\n", "        " + ARRX + "\n        if (th.g == 1) gate_wait();\n"))
            v = v.replace(INV_LD, INV_LD.replace("        if (th.g == 1) gate_wait();\n", "        " + ARRX + "\n        if (th.g == 1) gate_wait();\n"))
        assert v.count("bar.arrive 4") == 2 and v.count("bar.sync 4") == 2, name
        variants[name] = v
        # tw8 with it (tw8's edits after the load order's, whose patterns name tw7).
        variants["tw8" + name] = tw8(v)

# fwx2 (forty-second session, wrong words, the same bytes): ntt_fwd_gp's exchange stores (the
# column phase's last round, 8-byte words down the group's column: 4 rows of 64 bytes per warp
# store) as 16-byte pairs along the block's own 8 rows (2 rows of 256 bytes per warp store), as
# invst2 did for the inverse's last stores: the bound of any store shape on the forward's
# exchange, whose stores and fence precede the limb barrier (run 95: ~1730 cycles).
FWD_XST = "            limb[a * SUB + col] = x0;\n            limb[(a + 1) * SUB + col] = x1;\n"
if src.count(FWD_XST) == 1:
    variants["fwx2"] = src.replace(FWD_XST, "            st2(limb + lines.coff + (8 * blockIdx.x + th.t / 16) * SUB + 2 * (th.t % 16) + 32 * i, x0, x1);\n")

# gpnosync / gpnofence / gpnowait (forty-second session, wrong words: bounds): the paired
# kernels' limb barrier (pair_sync) without its inter-block part (the group's own barrier only),
# without its fence (the atomic and the wait kept), and without its wait (the fence and the
# atomic kept): what the exchange's synchronization costs in today's kernels (run 64 measured
# `nosync` on the *_gs kernels of the time: -1.1 us per call).
GP_SYNC = """        __threadfence();
        atomicAdd(ctr, 1u);
        while ((int)(ld_acquire(ctr) - target) < 0) {
        }
"""
if src.count(GP_SYNC) == 1:
    variants["gpnosync"] = src.replace(GP_SYNC, "        (void)ctr;\n        (void)target;\n")
    variants["gpnofence"] = src.replace(GP_SYNC, GP_SYNC.replace("        __threadfence();\n", ""))
    variants["gpnowait"] = src.replace(GP_SYNC, "        __threadfence();\n        atomicAdd(ctr, 1u);\n        (void)target;\n")

def sub(v, n, old, new):
    """v with old (which must occur n times) replaced by new."""
    assert v.count(old) == n, old[:70]
    return v.replace(old, new)


# gptag (forty-second session, same words; timing only: see the note on stale words): the
# paired kernels' binary64 groups exchange tagged words and meet without the fence (run 215:
# the fence costs ~0.6 us forward, ~0.45 inverse). A phase-1 word (a LooseF double d, |d| < 2^51)
# is stored as the low 52 bits of d + 1.5 2^52 under a 12-bit tag in the top bits, the tag taken
# from the launch's counter target (every thread computes it: pair_target); the counter is
# counted and waited on without the fence, and a phase-2 reader accepts a word only under its
# launch's tag (0x100-0xFD7), reloading it otherwise, so the words need no ordering beyond a 64-bit store's
# atomicity. The integer (wide) groups keep the fence. Stale words: here the output limb holds
# the previous launch's canonical words (top 12 bits < 0x100) or other tags; an engine form needs a
# scratch that holds nothing but tagged words (cleared when the tags wrap).
PAIR_SYNC_NF = """// The paired limb barrier without the fence (gptag's tagged groups; the gpnofence* bounds).
__device__ __forceinline__ void pair_sync_nf(const PairThread& th, unsigned* ctr, unsigned target) {
    gsync(th.g);
    if (th.t == 0) {
        atomicAdd(ctr, 1u);
        while ((int)(ld_acquire(ctr) - target) < 0) {
        }
    }
    gsync(th.g);
}
"""
if src.count("if (th.t == 0) target = pair_target(ctr);\n") == 2:
    v = src
    for s, tag in (("struct Harvey {\n", False), ("struct Loose {\n", False), ("struct LooseF {\n", True)):
        v = v.replace(s, s + f"    static constexpr bool TAG = {'true' if tag else 'false'};\n")
    helpers = """// gptag: a LooseF word under tag g (12 bits), and back; the load waits for its tag.
__device__ __forceinline__ u64 tag_w(u64 x, unsigned g) {
    const u64 y = (u64)__double_as_longlong(__dadd_rn(__longlong_as_double((long long)x), 6755399441055744.0));
    return (y & 0xFFFFFFFFFFFFFull) | ((u64)g << 52);
}
// tag_w's inverse: the LooseF word under the tag.
__device__ __forceinline__ u64 untag_w(u64 v) {
    const double y = __longlong_as_double((long long)((v & 0xFFFFFFFFFFFFFull) | 0x4330000000000000ull));
    return (u64)__double_as_longlong(__dsub_rn(y, 6755399441055744.0));
}
__device__ __forceinline__ u64 ld_tag(const u64* p, unsigned g) {
    u64 v = ldcg(p);
    while ((unsigned)(v >> 52) != g) v = *(const volatile u64*)p;
    return untag_w(v);
}
// Tags 0x100-0xFD7: a canonical word (< 2^60) has its top 12 bits below 0x100, and 0xFFF is the
// harness's poison.
__device__ __forceinline__ unsigned tag_of(unsigned target) { return 0x100u + (target / GP_BLOCKS) % 3800u; }
"""
    anchor2 = "__device__ __forceinline__ unsigned* pair_ctr("
    v = sub(v, 1, anchor2, helpers + PAIR_SYNC_NF + anchor2)
    v = v.replace("    if (th.t == 0) target = pair_target(ctr);\n",
                  "    if (th.t == 0 || A::TAG) target = pair_target(ctr);\n    const unsigned tg = tag_of(target);\n    (void)tg;\n")
    v = v.replace("    pair_sync(th, ctr, target);  // every", "    if constexpr (A::TAG) pair_sync_nf(th, ctr, target); else pair_sync(th, ctr, target);  // every")
    FS = "            limb[a * SUB + col] = x0;\n            limb[(a + 1) * SUB + col] = x1;\n"
    v = sub(v, 1, FS, "            if constexpr (A::TAG) {\n                x0 = tag_w(x0, tg);\n                x1 = tag_w(x1, tg);\n            }\n" + FS)
    FL = "        for (int e = 0; e < 8; e++) x[e] = ldcg(limb + lines.roff(hi) + lo + 16 * e);\n"
    v = sub(v, 1, FL, "        for (int e = 0; e < 8; e++) x[e] = A::TAG ? ld_tag(limb + lines.roff(hi) + lo + 16 * e, tg) : ldcg(limb + lines.roff(hi) + lo + 16 * e);\n")
    IS = "        for (int e = 0; e < 8; e++) limb[lines.roff(hi) + lo + 16 * e] = A::mid(x[e], q);\n"
    v = sub(v, 1, IS, "        for (int e = 0; e < 8; e++) limb[lines.roff(hi) + lo + 16 * e] = A::TAG ? tag_w(A::mid(x[e], q), tg) : A::mid(x[e], q);\n")
    IL = "            u64 x0 = ldcg(limb + a * SUB + col), x1 = ldcg(limb + (a + 1) * SUB + col);\n"
    v = sub(v, 1, IL, "            u64 x0 = A::TAG ? ld_tag(limb + a * SUB + col, tg) : ldcg(limb + a * SUB + col);\n            u64 x1 = A::TAG ? ld_tag(limb + (a + 1) * SUB + col, tg) : ldcg(limb + (a + 1) * SUB + col);\n")
    variants["gptag"] = v

# gptag2 (forty-second session, same words; timing as gptag's note): gptag with the wide
# (integer) groups fence-free too: their exchange words made canonical (below 2^60: the
# forward's < 16q by four conditional subtractions, the inverse's < 4q by two) under a 4-bit tag
# (1-14) in the top bits, read back only under it; every group's barrier without the fence
# (run 217: the fence's ~0.5 us needs both kinds fence-free). In the harness the output limb
# holds canonical words (tag 0) or the poison (15) before a launch; an engine form needs a
# scratch cleared when the 4-bit tags wrap.
if "gptag" in variants:
    v = variants["gptag"]
    helpers4 = """// gptag2: a canonical wide word under a 4-bit tag, and back; the load waits for its tag.
__device__ __forceinline__ u64 tag4(u64 x, unsigned g) { return x | ((u64)g << 60); }
__device__ __forceinline__ u64 ld_tag4(const u64* p, unsigned g) {
    u64 v = ldcg(p);
    while ((unsigned)(v >> 60) != g) v = *(const volatile u64*)p;
    return v & 0x0FFFFFFFFFFFFFFFull;
}
"""
    a2 = "__device__ __forceinline__ unsigned* pair_ctr("
    v = sub(v, 1, a2, helpers4 + a2)
    old = "    if (th.t == 0 || A::TAG) target = pair_target(ctr);\n    const unsigned tg = tag_of(target);\n    (void)tg;\n"
    v = sub(v, 2, old, "    target = pair_target(ctr);\n    const unsigned tg = tag_of(target), tg4 = 1u + (target / GP_BLOCKS) % 14u;\n    (void)tg;\n    (void)tg4;\n")
    old = "    if constexpr (A::TAG) pair_sync_nf(th, ctr, target); else pair_sync(th, ctr, target);  // every"
    v = sub(v, 2, old, "    pair_sync_nf(th, ctr, target);  // every")
    old = "                x1 = tag_w(x1, tg);\n            }\n"
    v = sub(v, 1, old, old + "            else {\n                x0 = tag4(csub(csub(csub(csub(x0, 8 * q), 4 * q), 2 * q), q), tg4);\n                x1 = tag4(csub(csub(csub(csub(x1, 8 * q), 4 * q), 2 * q), q), tg4);\n            }\n")
    for a, b in (("ld_tag(limb + lines.roff(hi) + lo + 16 * e, tg) : ldcg(limb + lines.roff(hi) + lo + 16 * e)",
                  "ld_tag(limb + lines.roff(hi) + lo + 16 * e, tg) : ld_tag4(limb + lines.roff(hi) + lo + 16 * e, tg4)"),
                 ("tag_w(A::mid(x[e], q), tg) : A::mid(x[e], q)", "tag_w(A::mid(x[e], q), tg) : tag4(csub(csub(x[e], 2 * q), q), tg4)"),
                 ("ld_tag(limb + a * SUB + col, tg) : ldcg(limb + a * SUB + col)", "ld_tag(limb + a * SUB + col, tg) : ld_tag4(limb + a * SUB + col, tg4)"),
                 ("ld_tag(limb + (a + 1) * SUB + col, tg) : ldcg(limb + (a + 1) * SUB + col)", "ld_tag(limb + (a + 1) * SUB + col, tg) : ld_tag4(limb + (a + 1) * SUB + col, tg4)")):
        assert v.count(a) == 1, a
        v = v.replace(a, b)
    assert "pair_sync(th, ctr, target);" not in v.split("GS_KERNEL ntt_fwd_gp")[0].split("__device__ __forceinline__ void gp_fwd")[1]
    variants["gptag2"] = v

# gptag3 (forty-second session, same words): gptag2 with the readers' checks batched: a
# thread's eight exchange words loaded first, one combined tag test, a re-poll only on a miss,
# then the untagging (the forward's row loads and the inverse's column loads).
if "gptag2" in variants:
    v = variants["gptag2"]
    fix = """// gptag3: a thread's eight loaded exchange words checked at once (A::TAG: 12-bit tags at bit 52,
// else 4-bit tags at bit 60), re-polled only on a miss, then untagged.
template <class A, class At>
__device__ __forceinline__ void tag_fix(u64 (&x)[8], At at, unsigned tg, unsigned tg4) {
    const unsigned sh = A::TAG ? 52 : 60, g = A::TAG ? tg : tg4;
    bool ok = true;
#pragma unroll
    for (int e = 0; e < 8; e++) ok &= (unsigned)(x[e] >> sh) == g;
    if (!ok) {
#pragma unroll
        for (int e = 0; e < 8; e++)
            while ((unsigned)(x[e] >> sh) != g) x[e] = *(const volatile u64*)at(e);
    }
#pragma unroll
    for (int e = 0; e < 8; e++) {
        if constexpr (A::TAG) {
            x[e] = untag_w(x[e]);
        } else {
            x[e] &= 0x0FFFFFFFFFFFFFFFull;
        }
    }
}
"""
    a2 = "__device__ __forceinline__ unsigned* pair_ctr("
    v = v.replace(a2, fix + a2)
    FL2 = "        for (int e = 0; e < 8; e++) x[e] = A::TAG ? ld_tag(limb + lines.roff(hi) + lo + 16 * e, tg) : ld_tag4(limb + lines.roff(hi) + lo + 16 * e, tg4);\n"
    assert v.count(FL2) == 1
    v = v.replace(FL2, "        for (int e = 0; e < 8; e++) x[e] = ldcg(limb + lines.roff(hi) + lo + 16 * e);\n"
                  "        tag_fix<A>(x, [&](int e) { return limb + lines.roff(hi) + lo + 16 * e; }, tg, tg4);\n")
    IL2 = """        for (int i = 0; i < 4; i++) {
            const uint32_t a = 2 * (hi + 16 * i);
            u64 x0 = A::TAG ? ld_tag(limb + a * SUB + col, tg) : ld_tag4(limb + a * SUB + col, tg4);
            u64 x1 = A::TAG ? ld_tag(limb + (a + 1) * SUB + col, tg) : ld_tag4(limb + (a + 1) * SUB + col, tg4);
"""
    assert v.count(IL2) == 1
    v = v.replace(IL2, """        for (int e = 0; e < 8; e++) x[e] = ldcg(limb + (2 * (hi + 16 * (e / 2)) + e % 2) * SUB + col);
        tag_fix<A>(x, [&](int e) { return limb + (2 * (hi + 16 * (e / 2)) + e % 2) * SUB + col; }, tg, tg4);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const uint32_t a = 2 * (hi + 16 * i);
            u64 x0 = x[2 * i], x1 = x[2 * i + 1];
""")
    variants["gptag3"] = v

# The forty-second session's exchange probes above (fwx2, gpnosync, gpnofence, gpnowait, gptag,
# gptag2, gptag3) and gpnofencew / gpnofencef below patch the paired kernels before decision 0514
# (gptag3 is now the kernels' exchange): `git show 81e1a02:kernels/ckks.cu > /tmp/ckks-81e1a02.cu`
# and pass src= that file to write them.
if "gptag" not in variants:
    print("fwx2 gpnosync gpnofence gpnowait gptag gptag2 gptag3 gpnofencew gpnofencef: skipped "
          "(they patch the kernels before decision 0514)")

# gpnofencew / gpnofencef (forty-second session, timing bounds like gpnofence): the fence left
# out of the limb barrier of the integer (wide-prime) groups only, or of the binary64 groups only.
# Run 216: gptag (the binary64 groups fence-free, their words tagged) gained nothing. Run 217:
# either alone -0.1 us, both (gpnofence) -0.5 to -0.6: the launch's end waits on both kinds.
if src.count(GP_SYNC) == 1 and src.count("    pair_sync(th, ctr, target);  // every") == 2:
    anchor3 = "__device__ __forceinline__ unsigned* pair_ctr("
    for name, wide in (("gpnofencew", True), ("gpnofencef", False)):
        v = src.replace(anchor3, PAIR_SYNC_NF + anchor3)
        cond = "q >= F64_Q" if wide else "q < F64_Q"
        v = v.replace("    pair_sync(th, ctr, target);  // every",
                      f"    if ({cond}) pair_sync_nf(th, ctr, target); else pair_sync(th, ctr, target);  // every")
        variants[name] = v

# xchweak (forty-third session, same words; timing only): decision 0514's exchange words by
# plain stores and ld.global.cg loads (run 219's gptag3 accesses) instead of relaxed 64-bit
# atomics (asm volatile): what the relaxed form costs, if anything.
ST_RLX = """    asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(v));
"""
# (The first loads only: xch_take's polls stay relaxed loads, which the compiler cannot hoist.)
XL_F = "        for (int e = 0; e < 8; e++) x[e] = ld_rlx64(xr + 16 * e);\n"
XL_I = "        for (int e = 0; e < 8; e++) x[e] = ld_rlx64(at(e));\n        xch_take"
# (Since the forty-third session's last kernel commit the first loads are xch_take's own: XL_T.)
XL_T = "    for (int e = 0; e < 8; e++) x[e] = ld_rlx64(at(e));\n    bool ok = true;\n"
if src.count(ST_RLX) == 1 and src.count(XL_F) == 1 and src.count(XL_I) == 1:
    v = sub(src, 1, ST_RLX, "    *p = v;\n")
    v = sub(v, 1, XL_F, XL_F.replace("ld_rlx64(", "ldcg("))
    variants["xchweak"] = sub(v, 1, XL_I, XL_I.replace("ld_rlx64(", "ldcg("))
elif src.count(ST_RLX) == 1 and src.count(XL_T) == 1:
    v = sub(src, 1, ST_RLX, "    *p = v;\n")
    variants["xchweak"] = sub(v, 1, XL_T, XL_T.replace("ld_rlx64(", "ldcg("))

# xchrlx / xchrlxw (forty-third session, same words; xchrlx is the kernels since run 223, so
# these need src= f279c0a's ckks.cu): the paired limb barrier's wait by relaxed loads instead
# of ld.acquire (run 222's SASS: the acquire ends in CCTL.IVALL, which drops the
# SM's L1, the row twiddles the block's other group loaded with it; decision 0514's tagged words
# need no acquire); xchrlxw with xchweak's accesses too.
PS_ACQ = "        while ((int)(ld_acquire(ctr) - target) < 0) {\n        }\n    }\n    gsync(th.g);\n}\n__device__ __forceinline__ unsigned* pair_ctr("
if src.count(PS_ACQ) == 1:
    variants["xchrlx"] = src.replace(PS_ACQ, PS_ACQ.replace("ld_acquire(", "ld_relaxed("))
    if "xchweak" in variants:
        variants["xchrlxw"] = variants["xchweak"].replace(PS_ACQ, PS_ACQ.replace("ld_acquire(", "ld_relaxed("))
else:
    print("xchrlx xchrlxw: skipped (the paired barrier's wait is relaxed since run 223)")

# xchbatch (forty-third session, same words): xch_take's re-polls batched: while any of a
# thread's eight words is not yet under its tag, every such word is loaded again, all in
# flight together (run 225's patch did this together with dropping the wait).
XT_POLL = """    if (!ok) {
#pragma unroll
        for (int e = 0; e < 8; e++)
            while ((unsigned)(x[e] >> 60) != tg) x[e] = ld_rlx64(at(e));
    }
"""
# (The kernels since run 227: write it with src= db52da8's ckks.cu.)
if src.count(XT_POLL) == 1:
    variants["xchbatch"] = src.replace(XT_POLL, """    while (!ok) {
#pragma unroll
        for (int e = 0; e < 8; e++)
            if ((unsigned)(x[e] >> 60) != tg) x[e] = ld_rlx64(at(e));
        ok = true;
#pragma unroll
        for (int e = 0; e < 8; e++) ok &= (unsigned)(x[e] >> 60) == tg;
    }
""")

# wcheap (forty-third session, same words; run 231: 0.4-0.8 us *slower* forward): the wide
# forward exchange words made canonical by one conditional subtraction for primes within 2^56
# of 2^60 (x = k 2^60 + l, k < 16: x - k q = l + k (2^60 - q), then csub by q), four otherwise.
XPUT_W = """    __device__ __forceinline__ static u64 xput_fwd(u64 x, u64 q, unsigned tg) {
        return csub(csub(csub(csub(x, 8 * q), 4 * q), 2 * q), q) | ((u64)tg << 60);
    }"""
if src.count(XPUT_W) == 1:
    variants["wcheap"] = src.replace(XPUT_W, """    __device__ __forceinline__ static u64 xput_fwd(u64 x, u64 q, unsigned tg) {
        const u64 d = (1ull << 60) - q;
        const u64 r = d < (1ull << 56) ? csub((x & 0x0FFFFFFFFFFFFFFFull) + (x >> 60) * d, q)
                                       : csub(csub(csub(csub(x, 8 * q), 4 * q), 2 * q), q);
        return r | ((u64)tg << 60);
    }""")

# gpmarks (forty-third session, same words; a probe, timing distorted slightly): each group of
# the paired kernels notes %globaltimer at its start, before and after its limb barrier and at
# its end (after a group barrier) in g_gpmarks; ntt_bench.cu built with this variant prints,
# per grid row and group, the medians over 50 single launches of each mark after the launch's
# first start (HAS_GP_MARKS). Run 232: the engine's prime layout costs ~0.2 us of latency per
# launch; this says which blocks wait.
GPM = """// (variant gpmarks) Per-group timeline of the paired kernels: [((row 16 + block) 2 + g) 4 + k].
#define HAS_GP_MARKS 1
__device__ unsigned long long g_gpmarks[64 * 16 * 2 * 4];
__device__ __forceinline__ void gp_mark(const PairThread& th, int k) {
    if (th.t == 0) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory");
        g_gpmarks[((blockIdx.y * gridDim.x + blockIdx.x) * 2 + th.g) * 4 + k] = t;
    }
}
"""
GP_SYNC_CALL = "    pair_sync(th, ctr, target);  // every group has read its input (in place: see GP_TAGS)\n"
FWD_END = "                        [&](uint32_t pos, u64 x0, u64 x1) { st2(dst + pos, x0, x1); });\n}\n"
INV_END = "        for (int e = 0; e < 8; e++) limb[(hi + 16 * e) * SUB + col] = x[e];\n    }\n}\n"
START = "    u64* xl = gp_xch(xch, r);\n"
if all(src.count(a) == n for a, n in ((GP_SYNC_CALL, 2), (FWD_END, 1), (INV_END, 1), (START, 2))):
    v = sub(src, 1, "__device__ __forceinline__ unsigned* pair_ctr(", GPM + "__device__ __forceinline__ unsigned* pair_ctr(")
    v = v.replace(START, START + "    gp_mark(th, 0);\n")
    v = v.replace(GP_SYNC_CALL, "    gp_mark(th, 1);\n" + GP_SYNC_CALL + "    gp_mark(th, 2);\n")
    v = v.replace(FWD_END, FWD_END[:-2] + "    gsync(th.g);\n    gp_mark(th, 3);\n}\n")
    v = v.replace(INV_END, INV_END[:-2] + "    gsync(th.g);\n    gp_mark(th, 3);\n}\n")
    variants["gpmarks"] = v

# regk (forty-fourth session, same words): the paired kernels' counter and exchange regions
# indexed by the role's grid row (the wide prime's groups region 0, its neighbour's 1, grid row
# b >= 2 region b) instead of its limb row, so that WIDE=7 (the engine's layout) uses the regions
# the default layout (wide prime first) does. Run 233: no change in either layout (and with the
# layouts' order balanced, run 230's ~0.2 us between them was the order, not the layout).
ROLE = ("struct GpRole {\n    uint32_t y, c;\n};",
        "struct GpRole {\n    uint32_t y, c, k;\n};")
ROLE_RET = (("return GpRole{blockIdx.y, g};", "return GpRole{blockIdx.y, g, blockIdx.y};"),
            ("if (blockIdx.y >= 2) return GpRole{y, g};", "if (blockIdx.y >= 2) return GpRole{y, g, blockIdx.y};"),
            ("return GpRole{g == 0 ? wide : other, blockIdx.y};",
             "return GpRole{g == 0 ? wide : other, blockIdx.y, g == 0 ? 0u : 1u};"),
            ("return xch + (2 * (u64)r.y + r.c) * NN;", "return xch + (2 * (u64)r.k + r.c) * NN;"))
CTR_CALL = "    unsigned* ctr = pair_ctr(sync_ctr, r.y, r.c);\n"


def by_grid_row(text):
    text = text.replace(*ROLE).replace(CTR_CALL, CTR_CALL.replace("r.y", "r.k"))
    for a, b in ROLE_RET:
        text = text.replace(a, b)
    return text


if src.count(ROLE[0]) == 1 and src.count(CTR_CALL) == 2 and all(src.count(a) == 1 for a, _ in ROLE_RET):
    variants["regk"] = by_grid_row(src)
    # regk with the gpmarks probe, for the timeline in both layouts.
    if "gpmarks" in variants:
        variants["regkmarks"] = by_grid_row(variants["gpmarks"])

for name, text in variants.items():
    if name != "base" and text == src:
        sys.exit(f"variant {name}: pattern not found")
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "ckks_v.cu").write_text(text)
    print(name)
