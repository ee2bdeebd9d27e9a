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
        let two_q = 2 * self.modulus.value();
        let t = dst.len() / 2;
        let (w, ws) = (self.tw[1], self.tw_shoup[1]);
        let (slo, shi) = src.split_at(t);
        let (dlo, dhi) = dst.split_at_mut(t);
        for (((x, y), &u0), &v0) in dlo.iter_mut().zip(dhi.iter_mut()).zip(slo).zip(shi) {
            let u = if u0 >= two_q { u0 - two_q } else { u0 };
            let v = self.modulus.mul_shoup_lazy(v0, w, ws);
            *x = u + v;
            *y = u + two_q - v;
        }
        self.forward_stages(dst, 2);
    }

    /// Forward stages from group count `m` on (half-span `N/(2m)`), then the final reduction.
    fn forward_stages(&self, a: &mut [u64], mut m: usize) {
        let q = self.modulus.value();
        let two_q = 2 * q;
        let n = a.len();
        let mut t = n / m;
        // all stages but the last (t = 1), which is fused with the final reduction below
        while 2 * m < n {
            t >>= 1;
            for (i, block) in a.chunks_exact_mut(2 * t).enumerate() {
                let w = self.tw[m + i];
                let ws = self.tw_shoup[m + i];
                let (lo, hi) = block.split_at_mut(t);
                for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                    let mut u = *x;
                    if u >= two_q {
                        u -= two_q;
                    }
                    let v = self.modulus.mul_shoup_lazy(*y, w, ws);
                    *x = u + v;
                    *y = u + two_q - v;
                }
            }
            m <<= 1;
        }
        let canonical = |mut v: u64| {
            if v >= two_q {
                v -= two_q;
            }
            if v >= q {
                v -= q;
            }
            v
        };
        if m < n {
            // last stage: pairs (2i, 2i + 1) with tw[n/2 + i], outputs reduced at once
            let tw = &self.tw[m..2 * m];
            let tws = &self.tw_shoup[m..2 * m];
            for ((pair, &w), &ws) in a.chunks_exact_mut(2).zip(tw).zip(tws) {
                let mut u = pair[0];
                if u >= two_q {
                    u -= two_q;
                }
                let v = self.modulus.mul_shoup_lazy(pair[1], w, ws);
                pair[0] = canonical(u + v);
                pair[1] = canonical(u + two_q - v);
            }
        } else {
            for x in a.iter_mut() {
                *x = canonical(*x);
            }
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
        let two_q = 2 * self.modulus.value();
        let h = dst.len() / 2;
        for (i, (d, s)) in dst.chunks_exact_mut(2).zip(src.chunks_exact(2)).enumerate() {
            let (u, v) = (s[0], s[1]);
            let sum = u + v;
            d[0] = if sum >= two_q { sum - two_q } else { sum };
            d[1] =
                self.modulus
                    .mul_shoup_lazy(u + two_q - v, self.itw[h + i], self.itw_shoup[h + i]);
        }
        self.inverse_stages(dst, 2);
    }

    /// Inverse stages from half-span `t` on, then × N⁻¹.
    fn inverse_stages(&self, a: &mut [u64], mut t: usize) {
        let q = self.modulus.value();
        let two_q = 2 * q;
        let n = a.len();
        if t == 1 && n >= 2 {
            // first stage: pairs (2i, 2i + 1) with itw[n/2 + i], without per-block slicing
            let h = n / 2;
            for ((pair, &w), &ws) in a
                .chunks_exact_mut(2)
                .zip(&self.itw[h..])
                .zip(&self.itw_shoup[h..])
            {
                let (u, v) = (pair[0], pair[1]);
                let sum = u + v;
                pair[0] = if sum >= two_q { sum - two_q } else { sum };
                pair[1] = self.modulus.mul_shoup_lazy(u + two_q - v, w, ws);
            }
            t = 2;
        }
        let mut m = n / (2 * t);
        while m >= 1 {
            for (i, block) in a.chunks_exact_mut(2 * t).enumerate() {
                let w = self.itw[m + i];
                let ws = self.itw_shoup[m + i];
                let (lo, hi) = block.split_at_mut(t);
                for (x, y) in lo.iter_mut().zip(hi.iter_mut()) {
                    let u = *x;
                    let v = *y;
                    let s = u + v;
                    *x = if s >= two_q { s - two_q } else { s };
                    *y = self.modulus.mul_shoup_lazy(u + two_q - v, w, ws);
                }
            }
            t <<= 1;
            m >>= 1;
        }
        for x in a.iter_mut() {
            *x = self.modulus.mul_shoup(*x, self.n_inv, self.n_inv_shoup);
        }
    }
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
