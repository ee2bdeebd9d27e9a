//! Negacyclic NTT per RNS limb (spec §4.1), with Harvey's lazy butterflies.
//!
//! Order and roots (the contract a GPU backend must reproduce bit for bit):
//! * ψ is the primitive 2N-th root chosen by FHElium's rule (the first `c = 2, 3, ...` with
//!   `ψ = c^((q-1)/2N)` and `ψ^N = -1`), so the tables equal spec §1.2.
//! * `tw[k] = ψ^br(k)`, `itw[k] = ψ^-br(k)` (bit reversal over log N bits).
//! * Forward: Cooley–Tukey stages m = 1, 2, ..., N/2 with half-span t = N/(2m); group i uses
//!   `tw[m+i]`. Output index k holds `a(ψ^(2·br(k)+1))` (bit-reversed evaluation order).
//! * Inverse: Gentleman–Sande stages t = 1, 2, ..., N/2 with m = N/(2t) groups; group i uses
//!   `itw[m+i]`; then × N⁻¹.
//! * Inputs must be canonical `[0, q)`; outputs are canonical `[0, q)` in standard (not
//!   Montgomery) form. Intermediate values are lazy in `[0, 4q)` (forward) and `[0, 2q)`
//!   (inverse), which needs `4q < 2^64`.

use crate::arith::{bit_reverse, Modulus};

/// Twiddle tables of one prime.
#[derive(Clone, Debug)]
pub struct NttTable {
    modulus: Modulus,
    log_n: u32,
    psi: u64,
    tw: Vec<u64>,
    tw_shoup: Vec<u64>,
    itw: Vec<u64>,
    itw_shoup: Vec<u64>,
    n_inv: u64,
    n_inv_shoup: u64,
    /// `itw[1]·N⁻¹`, the last inverse stage's twiddle with the scaling folded in.
    itw1_n_inv: u64,
    itw1_n_inv_shoup: u64,
}

/// FHElium's root rule: the first `c = 2, 3, ...` whose `ψ = c^((q-1)/2N)` has `ψ^N = q - 1`.
/// `None` if `q ≢ 1 mod 2N`.
#[must_use]
pub fn find_psi(modulus: &Modulus, log_n: u32) -> Option<u64> {
    let q = modulus.value();
    let two_n = 2u64 << log_n;
    if q % two_n != 1 {
        return None;
    }
    let n = 1u64 << log_n;
    (2..q).find_map(|c| {
        let psi = modulus.pow(c, (q - 1) / two_n);
        (modulus.pow(psi, n) == q - 1).then_some(psi)
    })
}

impl NttTable {
    /// Builds the tables for `q` (prime, `q ≡ 1 mod 2N`, `q < 2^62`) and `N = 2^log_n`.
    #[must_use]
    pub fn new(q: u64, log_n: u32) -> Option<Self> {
        let modulus = Modulus::new(q)?;
        let psi = find_psi(&modulus, log_n)?;
        let n = 1usize << log_n;
        let psi_inv = modulus.inv(psi)?;
        let mut tw = vec![0u64; n];
        let mut itw = vec![0u64; n];
        let (mut p, mut pi) = (1u64, 1u64);
        for k in 0..n {
            let r = bit_reverse(k, log_n);
            tw[r] = p;
            itw[r] = pi;
            p = modulus.mul(p, psi);
            pi = modulus.mul(pi, psi_inv);
        }
        let tw_shoup = tw.iter().map(|&w| modulus.shoup(w)).collect();
        let itw_shoup = itw.iter().map(|&w| modulus.shoup(w)).collect();
        let n_inv = modulus.inv(n as u64)?;
        let itw1_n_inv = modulus.mul(itw.get(1).copied().unwrap_or(1), n_inv);
        Some(Self {
            modulus,
            log_n,
            psi,
            tw,
            tw_shoup,
            itw,
            itw_shoup,
            n_inv,
            n_inv_shoup: modulus.shoup(n_inv),
            itw1_n_inv,
            itw1_n_inv_shoup: modulus.shoup(itw1_n_inv),
        })
    }

    /// The prime.
    #[must_use]
    pub const fn modulus(&self) -> &Modulus {
        &self.modulus
    }

    /// The primitive 2N-th root ψ.
    #[must_use]
    pub const fn psi(&self) -> u64 {
        self.psi
    }

    /// `N⁻¹ mod q`.
    #[must_use]
    pub const fn n_inv(&self) -> u64 {
        self.n_inv
    }

    /// Ring degree N.
    #[must_use]
    pub const fn n(&self) -> usize {
        1 << self.log_n
    }

    /// The forward twiddle row `ψ^br(k)` (standard form).
    #[must_use]
    pub fn twiddles(&self) -> &[u64] {
        &self.tw
    }

    /// The inverse twiddle row `ψ^-br(k)` (standard form).
    #[must_use]
    pub fn inverse_twiddles(&self) -> &[u64] {
        &self.itw
    }

    /// Forward negacyclic NTT in place (canonical in, canonical out, bit-reversed order).
    pub fn forward(&self, a: &mut [u64]) {
        debug_assert_eq!(a.len(), self.n());
        self.forward_stages(a, 1);
    }

    /// Forward NTT of `src` into `dst`: the first stage reads `src`, so no copy is needed.
    /// Bit-identical to copying `src` into `dst` and calling [`NttTable::forward`].
    pub fn forward_from(&self, src: &[u64], dst: &mut [u64]) {
        debug_assert_eq!(src.len(), self.n());
        let n = dst.len();
        if n >= 16 && n.trailing_zeros().is_multiple_of(2) {
            // even stage count: the first radix-4 pass (m = 1, 2) reads `src`
            let h = n / 4;
            let w = [self.tw[1], self.tw[2], self.tw[3]];
            let ws = [self.tw_shoup[1], self.tw_shoup[2], self.tw_shoup[3]];
            let (slo, shi) = src.split_at(2 * h);
            let (sa, sb) = slo.split_at(h);
            let (sc, sd) = shi.split_at(h);
            let (dlo, dhi) = dst.split_at_mut(2 * h);
            let (da, db) = dlo.split_at_mut(h);
            let (dc, dd) = dhi.split_at_mut(h);
            let dsts = da
                .iter_mut()
                .zip(db.iter_mut())
                .zip(dc.iter_mut())
                .zip(dd.iter_mut());
            let srcs = sa.iter().zip(sb).zip(sc).zip(sd);
            for ((((x0, x1), x2), x3), (((&s0, &s1), &s2), &s3)) in dsts.zip(srcs) {
                (*x0, *x1, *x2, *x3) = (s0, s1, s2, s3);
                self.fwd4::<false>(x0, x1, x2, x3, w, ws);
            }
            self.forward_stages(dst, 4);
            return;
        }
        let two_q = 2 * self.modulus.value();
        let t = dst.len() / 2;
        let (w, ws) = (self.tw[1], self.tw_shoup[1]);
        let (slo, shi) = src.split_at(t);
        let (dlo, dhi) = dst.split_at_mut(t);
        for (((x, y), &u0), &v0) in dlo.iter_mut().zip(dhi.iter_mut()).zip(slo).zip(shi) {
            let u = reduce2q(u0, two_q);
            let v = self.modulus.mul_shoup_lazy(v0, w, ws);
            *x = u + v;
            *y = u + two_q - v;
        }
        self.forward_stages(dst, 2);
    }

    /// Forward stages from group count `m` on (half-span `N/(2m)`), then the final reduction.
    ///
    /// Stages are merged two at a time (radix-4 passes over quarters of each block), so the
    /// limb is streamed through memory half as often; an odd stage count starts with one
    /// radix-2 pass, and the last pass also reduces to canonical. Every value stays the same
    /// residue as in the radix-2 recurrence, so the canonical output is unchanged.
    fn forward_stages(&self, a: &mut [u64], mut m: usize) {
        let q = self.modulus.value();
        let two_q = 2 * q;
        let n = a.len();
        let mut stages = (n / m.max(1)).trailing_zeros();
        if m >= n || stages == 0 {
            for x in a.iter_mut() {
                *x = canonical4(*x, q);
            }
            return;
        }
        if stages % 2 == 1 {
            let t = n / (2 * m);
            let last = stages == 1;
            for (i, block) in a.chunks_exact_mut(2 * t).enumerate() {
                let (w, ws) = (self.tw[m + i], self.tw_shoup[m + i]);
                let (lo, hi) = block.split_at_mut(t);
                for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                    let u = reduce2q(*x, two_q);
                    let v = self.modulus.mul_shoup_lazy(*y, w, ws);
                    *x = u + v;
                    *y = u + two_q - v;
                    if last {
                        *x = canonical4(*x, q);
                        *y = canonical4(*y, q);
                    }
                }
            }
            m <<= 1;
            stages -= 1;
        }
        while stages >= 2 {
            let last = stages == 2;
            let h = n / (4 * m);
            let tw1 = &self.tw[m..2 * m];
            let tw1s = &self.tw_shoup[m..2 * m];
            let tw2 = &self.tw[2 * m..4 * m];
            let tw2s = &self.tw_shoup[2 * m..4 * m];
            let blocks = a
                .chunks_exact_mut(4 * h)
                .zip(tw1.iter().zip(tw1s))
                .zip(tw2.chunks_exact(2).zip(tw2s.chunks_exact(2)));
            if h == 1 {
                for ((blk, (&w1, &w1s)), (w2, w2s)) in blocks {
                    let w = [w1, w2[0], w2[1]];
                    let ws = [w1s, w2s[0], w2s[1]];
                    if let [x0, x1, x2, x3] = blk {
                        if last {
                            self.fwd4::<true>(x0, x1, x2, x3, w, ws);
                        } else {
                            self.fwd4::<false>(x0, x1, x2, x3, w, ws);
                        }
                    }
                }
            } else {
                for ((blk, (&w1, &w1s)), (w2, w2s)) in blocks {
                    let w = [w1, w2[0], w2[1]];
                    let ws = [w1s, w2s[0], w2s[1]];
                    let (lo, hi) = blk.split_at_mut(2 * h);
                    let (qa, qb) = lo.split_at_mut(h);
                    let (qc, qd) = hi.split_at_mut(h);
                    let quads = qa
                        .iter_mut()
                        .zip(qb.iter_mut())
                        .zip(qc.iter_mut())
                        .zip(qd.iter_mut());
                    if last {
                        for (((x0, x1), x2), x3) in quads {
                            self.fwd4::<true>(x0, x1, x2, x3, w, ws);
                        }
                    } else {
                        for (((x0, x1), x2), x3) in quads {
                            self.fwd4::<false>(x0, x1, x2, x3, w, ws);
                        }
                    }
                }
            }
            m <<= 2;
            stages -= 2;
        }
    }

    /// Two merged Cooley–Tukey stages on one quadruple (lazy `[0, 4q)` in and out, or
    /// canonical out when `LAST`): `(x0, x2)`, `(x1, x3)` with `w[0]`, then `(x0, x1)` with
    /// `w[1]` and `(x2, x3)` with `w[2]`.
    #[inline(always)]
    fn fwd4<const LAST: bool>(
        &self,
        x0: &mut u64,
        x1: &mut u64,
        x2: &mut u64,
        x3: &mut u64,
        w: [u64; 3],
        ws: [u64; 3],
    ) {
        let q = self.modulus.value();
        let two_q = 2 * q;
        let a = reduce2q(*x0, two_q);
        let b = reduce2q(*x1, two_q);
        let c = self.modulus.mul_shoup_lazy(*x2, w[0], ws[0]);
        let d = self.modulus.mul_shoup_lazy(*x3, w[0], ws[0]);
        let a1 = reduce2q(a + c, two_q);
        let c1 = reduce2q(a + two_q - c, two_q);
        let b1 = self.modulus.mul_shoup_lazy(b + d, w[1], ws[1]);
        let d1 = self.modulus.mul_shoup_lazy(b + two_q - d, w[2], ws[2]);
        let (y0, y1, y2, y3) = (a1 + b1, a1 + two_q - b1, c1 + d1, c1 + two_q - d1);
        if LAST {
            *x0 = canonical4(y0, q);
            *x1 = canonical4(y1, q);
            *x2 = canonical4(y2, q);
            *x3 = canonical4(y3, q);
        } else {
            *x0 = y0;
            *x1 = y1;
            *x2 = y2;
            *x3 = y3;
        }
    }

    /// Inverse negacyclic NTT in place (bit-reversed canonical in, canonical coefficients out).
    pub fn inverse(&self, a: &mut [u64]) {
        debug_assert_eq!(a.len(), self.n());
        self.inverse_stages(a, 1);
    }

    /// Inverse NTT of `src` into `dst`: the first stage reads `src`, so no copy is needed.
    /// Bit-identical to copying `src` into `dst` and calling [`NttTable::inverse`].
    pub fn inverse_from(&self, src: &[u64], dst: &mut [u64]) {
        debug_assert_eq!(src.len(), self.n());
        let n = dst.len();
        if n >= 16 && n.trailing_zeros().is_multiple_of(2) {
            // even stage count: the first radix-4 pass (t = 1, 2) reads `src`
            let m = n / 2;
            let blocks = dst
                .chunks_exact_mut(4)
                .zip(src.chunks_exact(4))
                .zip(
                    self.itw[m..]
                        .chunks_exact(2)
                        .zip(self.itw_shoup[m..].chunks_exact(2)),
                )
                .zip(self.itw[m / 2..m].iter().zip(&self.itw_shoup[m / 2..m]));
            for (((d, s), (w1, w1s)), (&w2, &w2s)) in blocks {
                if let ([x0, x1, x2, x3], [s0, s1, s2, s3]) = (d, s) {
                    (*x0, *x1, *x2, *x3) = (*s0, *s1, *s2, *s3);
                    self.inv4(x0, x1, x2, x3, [w1[0], w1[1], w2], [w1s[0], w1s[1], w2s]);
                }
            }
            self.inverse_stages(dst, 4);
            return;
        }
        let two_q = 2 * self.modulus.value();
        let h = dst.len() / 2;
        for (i, (d, s)) in dst.chunks_exact_mut(2).zip(src.chunks_exact(2)).enumerate() {
            let (u, v) = (s[0], s[1]);
            let sum = u + v;
            d[0] = reduce2q(sum, two_q);
            d[1] =
                self.modulus
                    .mul_shoup_lazy(u + two_q - v, self.itw[h + i], self.itw_shoup[h + i]);
        }
        self.inverse_stages(dst, 2);
    }

    /// Inverse stages from half-span `t` on, with × N⁻¹ folded into the last stage.
    ///
    /// Stages are merged two at a time (radix-4 passes); an odd stage count starts with one
    /// radix-2 pass. The last stage multiplies its sum by `N⁻¹` and its difference by
    /// `itw[1]·N⁻¹` (canonical Shoup products), so no separate scaling pass is needed.
    fn inverse_stages(&self, a: &mut [u64], mut t: usize) {
        let two_q = 2 * self.modulus.value();
        let n = a.len();
        let mut stages = (n / t.max(1)).trailing_zeros();
        if t >= n || stages == 0 {
            for x in a.iter_mut() {
                *x = self.modulus.mul_shoup(*x, self.n_inv, self.n_inv_shoup);
            }
            return;
        }
        if stages % 2 == 1 {
            let m = n / (2 * t);
            if stages == 1 {
                // only the last stage is left (m = 1): fold N^-1 in
                let (lo, hi) = a.split_at_mut(t);
                for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                    let (u, v) = (*x, *y);
                    *x = self.modulus.mul_shoup(u + v, self.n_inv, self.n_inv_shoup);
                    *y = self.modulus.mul_shoup(
                        u + two_q - v,
                        self.itw1_n_inv,
                        self.itw1_n_inv_shoup,
                    );
                }
                return;
            }
            if t == 1 {
                for ((pair, &w), &ws) in a
                    .chunks_exact_mut(2)
                    .zip(&self.itw[m..])
                    .zip(&self.itw_shoup[m..])
                {
                    if let [x, y] = pair {
                        self.gs(x, y, w, ws);
                    }
                }
            } else {
                for (i, block) in a.chunks_exact_mut(2 * t).enumerate() {
                    let (w, ws) = (self.itw[m + i], self.itw_shoup[m + i]);
                    let (lo, hi) = block.split_at_mut(t);
                    for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                        self.gs(x, y, w, ws);
                    }
                }
            }
            t <<= 1;
            stages -= 1;
        }
        while stages >= 2 {
            let last = stages == 2;
            // first merged stage has m = n/(2t) groups, the second m/2
            let m = n / (2 * t);
            let tw1 = &self.itw[m..2 * m];
            let tw1s = &self.itw_shoup[m..2 * m];
            let tw2 = &self.itw[m / 2..m];
            let tw2s = &self.itw_shoup[m / 2..m];
            let blocks = a
                .chunks_exact_mut(4 * t)
                .zip(tw1.chunks_exact(2).zip(tw1s.chunks_exact(2)))
                .zip(tw2.iter().zip(tw2s));
            let (w2_last, w2s_last) = (self.itw1_n_inv, self.itw1_n_inv_shoup);
            if t == 1 {
                for ((blk, (w1, w1s)), (&w2, &w2s)) in blocks {
                    if let [x0, x1, x2, x3] = blk {
                        if last {
                            let w = [w1[0], w1[1], w2_last];
                            let ws = [w1s[0], w1s[1], w2s_last];
                            self.inv4_last(x0, x1, x2, x3, w, ws);
                        } else {
                            let w = [w1[0], w1[1], w2];
                            let ws = [w1s[0], w1s[1], w2s];
                            self.inv4(x0, x1, x2, x3, w, ws);
                        }
                    }
                }
            } else {
                for ((blk, (w1, w1s)), (&w2, &w2s)) in blocks {
                    let (lo, hi) = blk.split_at_mut(2 * t);
                    let (qa, qb) = lo.split_at_mut(t);
                    let (qc, qd) = hi.split_at_mut(t);
                    let quads = qa
                        .iter_mut()
                        .zip(qb.iter_mut())
                        .zip(qc.iter_mut())
                        .zip(qd.iter_mut());
                    if last {
                        let w = [w1[0], w1[1], w2_last];
                        let ws = [w1s[0], w1s[1], w2s_last];
                        for (((x0, x1), x2), x3) in quads {
                            self.inv4_last(x0, x1, x2, x3, w, ws);
                        }
                    } else {
                        let w = [w1[0], w1[1], w2];
                        let ws = [w1s[0], w1s[1], w2s];
                        for (((x0, x1), x2), x3) in quads {
                            self.inv4(x0, x1, x2, x3, w, ws);
                        }
                    }
                }
            }
            t <<= 2;
            stages -= 2;
        }
    }

    /// One lazy Gentleman–Sande butterfly (`[0, 2q)` in and out).
    #[inline(always)]
    fn gs(&self, x: &mut u64, y: &mut u64, w: u64, ws: u64) {
        let two_q = 2 * self.modulus.value();
        let (u, v) = (*x, *y);
        *x = reduce2q(u + v, two_q);
        *y = self.modulus.mul_shoup_lazy(u + two_q - v, w, ws);
    }

    /// Two merged Gentleman–Sande stages on one quadruple (`[0, 2q)` in and out):
    /// `(x0, x1)` with `w[0]`, `(x2, x3)` with `w[1]`, then `(x0, x2)`, `(x1, x3)` with `w[2]`.
    #[inline(always)]
    fn inv4(
        &self,
        x0: &mut u64,
        x1: &mut u64,
        x2: &mut u64,
        x3: &mut u64,
        w: [u64; 3],
        ws: [u64; 3],
    ) {
        self.gs(x0, x1, w[0], ws[0]);
        self.gs(x2, x3, w[1], ws[1]);
        self.gs(x0, x2, w[2], ws[2]);
        self.gs(x1, x3, w[2], ws[2]);
    }

    /// [`Self::inv4`] for the last two stages: the second stage has `w[2] = itw[1]·N⁻¹` and
    /// scales its sums by `N⁻¹`, giving canonical outputs.
    #[inline(always)]
    fn inv4_last(
        &self,
        x0: &mut u64,
        x1: &mut u64,
        x2: &mut u64,
        x3: &mut u64,
        w: [u64; 3],
        ws: [u64; 3],
    ) {
        let two_q = 2 * self.modulus.value();
        self.gs(x0, x1, w[0], ws[0]);
        self.gs(x2, x3, w[1], ws[1]);
        let (a, b, c, d) = (*x0, *x1, *x2, *x3);
        *x0 = self.modulus.mul_shoup(a + c, self.n_inv, self.n_inv_shoup);
        *x1 = self.modulus.mul_shoup(b + d, self.n_inv, self.n_inv_shoup);
        *x2 = self.modulus.mul_shoup(a + two_q - c, w[2], ws[2]);
        *x3 = self.modulus.mul_shoup(b + two_q - d, w[2], ws[2]);
    }
}

/// `x` in `[0, 4q)` reduced to `[0, 2q)` (branch-free select; any `x < 2^64` with `x < 4q`).
#[inline(always)]
fn reduce2q(x: u64, two_q: u64) -> u64 {
    // `min` with the wrapped difference compiles to cmp + cmov: data-dependent branches here
    // mispredict half the time (the forward transform was 1.5x slower with them)
    x.min(x.wrapping_sub(two_q))
}

/// `x` in `[0, 4q)` reduced to canonical `[0, q)`.
#[inline(always)]
fn canonical4(x: u64, q: u64) -> u64 {
    let x = reduce2q(x, 2 * q);
    x.min(x.wrapping_sub(q))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{CkksConfig, Preset};
    use proptest::prelude::*;

    /// Naive negacyclic product mod (X^N + 1, q).
    fn naive_negacyclic(a: &[u64], b: &[u64], m: &Modulus) -> Vec<u64> {
        let n = a.len();
        let mut out = vec![0u64; n];
        for (i, &ai) in a.iter().enumerate() {
            for (j, &bj) in b.iter().enumerate() {
                let p = m.mul(ai, bj);
                let k = i + j;
                if k < n {
                    out[k] = m.add(out[k], p);
                } else {
                    out[k - n] = m.sub(out[k - n], p);
                }
            }
        }
        out
    }

    const SMALL_QS: [u64; 3] = [7681, 12289, 1_152_921_504_606_748_673];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn ntt_product_matches_naive_negacyclic(seed in any::<u64>(), log_n in 1u32..7, qi in 0usize..3) {
            let q = SMALL_QS[qi];
            let t = NttTable::new(q, log_n).expect("ntt prime");
            let m = *t.modulus();
            let n = 1usize << log_n;
            let mut s = seed;
            let mut next = || { s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); (s >> 1) % q };
            let a: Vec<u64> = (0..n).map(|_| next()).collect();
            let b: Vec<u64> = (0..n).map(|_| next()).collect();
            let want = naive_negacyclic(&a, &b, &m);
            let (mut fa, mut fb) = (a.clone(), b.clone());
            t.forward(&mut fa);
            t.forward(&mut fb);
            // evaluation order: index k holds a(psi^(2 br(k) + 1))
            for (k, &v) in fa.iter().enumerate() {
                let x = m.pow(t.psi(), 2 * bit_reverse(k, log_n) as u64 + 1);
                let eval = a.iter().rev().fold(0u64, |acc, &c| m.add(m.mul(acc, x), c));
                prop_assert_eq!(v, eval);
            }
            let mut prod: Vec<u64> = fa.iter().zip(&fb).map(|(&x, &y)| m.mul(x, y)).collect();
            t.inverse(&mut prod);
            prop_assert_eq!(&prod, &want);
            let mut oop = vec![0u64; n];
            t.inverse_from(&fa, &mut oop);
            t.inverse(&mut fa);
            prop_assert_eq!(&fa, &a);
            prop_assert_eq!(&oop, &a);
            t.forward_from(&a, &mut oop);
            t.forward(&mut fa);
            prop_assert_eq!(&oop, &fa);
        }
    }

    #[test]
    fn seed_preset_roots_match_the_spec_table() {
        let c = CkksConfig::from_preset(Preset::Slots8192Scale40Levels7Int64).expect("valid");
        let want_psi: [u64; 9] = [
            81_696_219_706,
            317_655_170_191,
            106_484_996_498,
            1_038_797_055_369,
            720_655_838_054,
            458_830_742_773,
            857_229_121_229,
            641_000_223_749_548_346,
            77_965_612_450_023_209,
        ];
        let want_ninv: [u64; 9] = [
            1_099_442_946_145,
            1_099_448_581_897,
            1_099_441_012_951,
            1_099_448_680_195,
            1_099_440_586_993,
            1_099_449_171_685,
            1_099_439_407_417,
            1_152_851_135_862_571_015,
            1_152_851_135_862_505_483,
        ];
        for (i, &q) in c.q_primes.iter().chain(&c.p_primes).enumerate() {
            let t = NttTable::new(q, 14).expect("ntt prime");
            assert_eq!(t.psi(), want_psi[i], "psi of prime id {i}");
            assert_eq!(t.n_inv(), want_ninv[i], "N^-1 of prime id {i}");
        }
    }
}
