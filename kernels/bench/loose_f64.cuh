// LooseF as the twenty-ninth session's timing probes had it (runs 153-155), before the kernels'
// own LooseF (kernels/ckks.cu, decision 0511): kernels/bench/variants.py's fp64 / fp64w7 / mixg
// variants paste it into the kernels before 0511 (commit d00e79c's ckks.cu). Timing only: its
// twiddles are the Shoup pair's w field read as a double's bits (wrong words).
#pragma once

// Binary64 butterflies (run 153's fp64 variant): words as doubles in the u64 slots, x w mod q
// as ph = x w, pl = fma(x, w, -ph), qf = round(ph / q), r = fma(-qf, q, ph) + pl (exact for q <
// 2^50 and |x| < 2^50), no reduction between stages; the twiddle's double read from the Shoup
// pair's w field.
struct LooseF {
    __device__ __forceinline__ static double d(u64 x) { return __longlong_as_double((long long)x); }
    __device__ __forceinline__ static u64 b(double x) { return (u64)__double_as_longlong(x); }
    // round(v * qi) to an integer by the 1.5 * 2^52 shift (|v * qi| < 2^51).
    __device__ __forceinline__ static double quot(double v, double qi) {
        return fma(v, qi, 6755399441055744.0) - 6755399441055744.0;
    }
    __device__ __forceinline__ static double mulmod(double x, double w, double qd, double qi) {
        const double ph = x * w;
        const double pl = fma(x, w, -ph);
        return fma(-quot(ph, qi), qd, ph) + pl;
    }
    // x mod q in [0, q) for an integer |x| < 2^50.
    __device__ __forceinline__ static double canon(double x, double qd, double qi) {
        const double r = fma(-quot(x, qi), qd, x);
        return r < 0.0 ? r + qd : r;
    }
    template <bool C>
    __device__ __forceinline__ static void ct(u64& x, u64& y, WP w, u64 q) {
        const double qd = (double)q, qi = 1.0 / qd;
        const double xd = d(x), r = mulmod(d(y), d(w.w), qd, qi);
        x = b(xd + r);
        y = b(xd - r);
    }
    __device__ __forceinline__ static void gs(u64& x, u64& y, WP w, u64 q) {
        const double qd = (double)q, qi = 1.0 / qd;
        const double xd = d(x), yd = d(y);
        y = b(mulmod(xd - yd, d(w.w), qd, qi));
        x = b(xd + yd);
    }
    __device__ __forceinline__ static u64 gs_off(u64 q) { return 4 * q; }
    __device__ __forceinline__ static void ct_out(u64& x0, u64& x1, WP w, u64 q) {
        ct<false>(x0, x1, w, q);
        const double qd = (double)q, qi = 1.0 / qd;
        x0 = b(canon(d(x0), qd, qi));
        x1 = b(canon(d(x1), qd, qi));
    }
    // A canonical word (< 2^52) as a double, and back: one logic op and one add each way.
    __device__ __forceinline__ static u64 in(u64 x) {
        return b(d(x | 0x4330000000000000ull) - 4503599627370496.0);
    }
    __device__ __forceinline__ static u64 out(u64 x) {
        return b(d(x) + 4503599627370496.0) & 0xFFFFFFFFFFFFFull;
    }
};
