//! Slot embedding with the generator-3 slot order (spec §3.1–3.2).
//!
//! Slot s holds the evaluation at `ζ^(e_s)`, `e_s = 3^-s mod 2N`, `ζ = e^(iπ/N)`; the conjugate
//! points `ζ^-e_s` carry the conjugates. Encoding computes
//! `a_k = (2/N)·Re Σ_s m_s ζ^(-k e_s)` with one length-N complex FFT, then rounds `Δ·a_k` to the
//! nearest integer (decision 0402: deterministic round-half-away-from-zero instead of FHElium's
//! stochastic rounding). Decoding computes `m_s = (1/Δ) Σ_k a_k ζ^(k e_s)`.

use num_complex::Complex64;

use crate::error::CkksError;

/// Precomputed tables of the embedding for one ring degree.
#[derive(Clone, Debug)]
pub struct Encoder {
    n: usize,
    /// `e_s` for s < N/2.
    exponents: Vec<u64>,
    /// `e^(-2πi j/N)` for j < N/2.
    roots: Vec<Complex64>,
    /// `ζ^k = e^(iπk/N)` for k < N.
    twist: Vec<Complex64>,
}

/// `e_s = g^-s mod 2N` for s < N/2.
#[must_use]
pub fn slot_exponents(n: usize, generator: u64) -> Vec<u64> {
    let two_n = 2 * n as u64;
    // g^-1 mod 2N = g^(N/2 - 1) since the order of g divides N/2.
    let mut g_inv = 1u64;
    for _ in 0..(n / 2 - 1) {
        g_inv = g_inv * generator % two_n;
    }
    let mut e = 1u64;
    (0..n / 2)
        .map(|_| {
            let cur = e;
            e = e * g_inv % two_n;
            cur
        })
        .collect()
}

impl Encoder {
    /// Tables for ring degree `n` (a power of two ≥ 4) and the generator-3 order.
    #[must_use]
    pub fn new(n: usize) -> Self {
        let roots = (0..n / 2)
            .map(|j| Complex64::from_polar(1.0, -2.0 * std::f64::consts::PI * j as f64 / n as f64))
            .collect();
        let twist = (0..n)
            .map(|k| Complex64::from_polar(1.0, std::f64::consts::PI * k as f64 / n as f64))
            .collect();
        Self {
            n,
            exponents: slot_exponents(n, 3),
            roots,
            twist,
        }
    }

    /// Slot exponents `e_s`.
    #[must_use]
    pub fn exponents(&self) -> &[u64] {
        &self.exponents
    }

    /// FFT twiddles `e^(-2πi j/N)`, j < N/2 (the CUDA engine uploads these).
    #[must_use]
    pub fn roots(&self) -> &[Complex64] {
        &self.roots
    }

    /// Twist factors `ζ^k = e^(iπk/N)`, k < N.
    #[must_use]
    pub fn twist(&self) -> &[Complex64] {
        &self.twist
    }

    /// In-place radix-2 FFT, `X_k = Σ_u x_u e^(∓2πi k u / N)` (− forward, + inverse, both
    /// unnormalised).
    fn fft(&self, a: &mut [Complex64], inverse: bool) {
        let n = a.len();
        let bits = n.trailing_zeros();
        for i in 0..n {
            let j = crate::arith::bit_reverse(i, bits);
            if i < j {
                a.swap(i, j);
            }
        }
        let mut len = 2;
        while len <= n {
            let step = n / len;
            for block in a.chunks_exact_mut(len) {
                let (lo, hi) = block.split_at_mut(len / 2);
                for (k, (x, y)) in lo.iter_mut().zip(hi.iter_mut()).enumerate() {
                    let w = self.roots[k * step];
                    let w = if inverse { w.conj() } else { w };
                    let t = *y * w;
                    *y = *x - t;
                    *x += t;
                }
            }
            len <<= 1;
        }
    }

    /// Real coefficients `a_k` (unscaled) of the message, zero-padded to N/2 slots.
    pub fn embed_inverse(&self, message: &[Complex64]) -> Result<Vec<f64>, CkksError> {
        let n = self.n;
        if message.len() > n / 2 {
            return Err(CkksError::MessageTooLong {
                len: message.len(),
                slots: n / 2,
            });
        }
        let two_n = 2 * n as u64;
        let mut v = vec![Complex64::new(0.0, 0.0); n];
        for (s, &m) in message.iter().enumerate() {
            let e = self.exponents[s];
            v[((e - 1) / 2) as usize] = m;
            v[((two_n - e - 1) / 2) as usize] = m.conj();
        }
        self.fft(&mut v, false);
        let inv_n = 1.0 / n as f64;
        Ok(v.iter()
            .zip(&self.twist)
            .map(|(x, z)| (x * z.conj()).re * inv_n)
            .collect())
    }

    /// Slots `Σ_k a_k ζ^(k e_s)` (unscaled) of real coefficients.
    #[must_use]
    pub fn embed(&self, coefficients: &[f64]) -> Vec<Complex64> {
        let mut b: Vec<Complex64> = coefficients
            .iter()
            .zip(&self.twist)
            .map(|(&a, z)| z * a)
            .collect();
        self.fft(&mut b, true);
        self.exponents
            .iter()
            .map(|&e| b[((e - 1) / 2) as usize])
            .collect()
    }

    /// Encodes to integer coefficients `round(Δ·a_k)`.
    pub fn encode(&self, message: &[Complex64], scale: f64) -> Result<Vec<i64>, CkksError> {
        let a = self.embed_inverse(message)?;
        a.iter()
            .map(|&x| {
                let y = (x * scale).round();
                if y.is_finite() && y.abs() < 9.223_372_036_854_776e18 {
                    Ok(y as i64)
                } else {
                    Err(CkksError::CoefficientOutOfRange {
                        op: "encode",
                        value: y,
                    })
                }
            })
            .collect()
    }

    /// Decodes real coefficients at `scale` to N/2 complex slots.
    #[must_use]
    pub fn decode(&self, coefficients: &[f64], scale: f64) -> Vec<Complex64> {
        self.embed(coefficients)
            .into_iter()
            .map(|z| z / scale)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponents_match_the_spec() {
        let e = slot_exponents(16384, 3);
        assert_eq!(&e[..6], &[1, 10923, 3641, 23059, 18609, 6203]);
    }

    #[test]
    fn encode_decode_round_trip_and_direct_formula() {
        let n = 64;
        let enc = Encoder::new(n);
        let msg: Vec<Complex64> = (0..n / 2)
            .map(|j| Complex64::new((j as f64 * 0.3).sin(), (j as f64 * 0.7).cos() * 0.5))
            .collect();
        let a = enc.embed_inverse(&msg).expect("fits");
        // direct O(N^2) formula of spec 3.1
        for (k, &ak) in a.iter().enumerate() {
            let zeta = |e: f64| Complex64::from_polar(1.0, std::f64::consts::PI * e / n as f64);
            let s: Complex64 = msg
                .iter()
                .zip(enc.exponents())
                .map(|(m, &e)| m * zeta(-(k as f64) * e as f64))
                .sum();
            assert!((ak - 2.0 / n as f64 * s.re).abs() < 1e-12);
        }
        let back = enc.embed(&a);
        for (x, y) in back.iter().zip(&msg) {
            assert!((x - y).norm() < 1e-12);
        }
        let coeffs = enc.encode(&msg, 2f64.powi(30)).expect("fits");
        let dec = enc.decode(
            &coeffs.iter().map(|&c| c as f64).collect::<Vec<_>>(),
            2f64.powi(30),
        );
        for (x, y) in dec.iter().zip(&msg) {
            assert!((x - y).norm() < 1e-7);
        }
    }

    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// The bound the CUDA engine uses to encode on the device (which cannot report an
        /// overflow without a host sync): every encoded coefficient satisfies
        /// |p_k| <= (2/N)·Σ(|re| + |im|)·Δ·(1 + 2^-40) + 1: the f64 FFT's rounding is relative
        /// (a few ulps of the largest coefficient, found by this test at 6.3e14) and the final
        /// rounding adds 1. Below 2^62 the words therefore fit int64 with a factor of two to
        /// spare (decision 0521).
        #[test]
        fn encoded_coefficients_stay_under_the_device_bound(
            len in 1usize..=8192,
            seed in any::<u64>(),
            shape in 0u8..4,
            log_scale in 20i32..=50,
        ) {
            let enc = Encoder::new(16384);
            let mut x = seed | 1;
            let mut next = move || {
                // xorshift64*: a cheap deterministic stream per case
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
            };
            let msg: Vec<Complex64> = (0..len)
                .map(|j| match shape {
                    // constant: every slot adds up in coefficient 0
                    0 => Complex64::new(3.0, -2.0),
                    // alternating signs
                    1 => Complex64::new(if j % 2 == 0 { 5.0 } else { -5.0 }, 0.0),
                    // random complex
                    2 => Complex64::new(next() * 8.0 - 4.0, next() * 8.0 - 4.0),
                    // one large slot among small ones
                    _ => Complex64::new(if j == len / 2 { 1e3 } else { next() }, 0.0),
                })
                .collect();
            let scale = 2f64.powi(log_scale);
            let bound = msg.iter().map(|z| z.re.abs() + z.im.abs()).sum::<f64>() * 2.0
                / 16384.0
                * scale;
            let p = enc.encode(&msg, scale).expect("fits int64");
            let worst = p.iter().map(|&c| c.unsigned_abs()).max().unwrap_or(0) as f64;
            let bound = bound * (1.0 + 2f64.powi(-40)) + 1.0;
            prop_assert!(worst <= bound, "max |p_k| = {worst:e} > bound {bound:e}");
        }
    }

    #[test]
    fn too_long_and_out_of_range_messages_are_refused() {
        let enc = Encoder::new(16);
        let long = vec![Complex64::new(1.0, 0.0); 9];
        assert!(matches!(
            enc.encode(&long, 1.0),
            Err(CkksError::MessageTooLong { len: 9, slots: 8 })
        ));
        let big = vec![Complex64::new(1e10, 0.0); 8];
        assert!(matches!(
            enc.encode(&big, 2f64.powi(60)),
            Err(CkksError::CoefficientOutOfRange { .. })
        ));
        let nan = vec![Complex64::new(f64::NAN, 0.0); 1];
        assert!(matches!(
            enc.encode(&nan, 1.0),
            Err(CkksError::CoefficientOutOfRange { .. })
        ));
    }
}
