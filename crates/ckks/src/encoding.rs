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

/// The ring degrees the encoder takes: powers of two from 4 to 2^30 (`2N` and the products of
/// two residues mod `2N` fit a u64).
fn check_ring_degree(n: usize) -> Result<(), CkksError> {
    if n.is_power_of_two() && (4..=1 << 30).contains(&n) {
        Ok(())
    } else {
        Err(CkksError::InvalidConfig {
            reason: format!("encoder ring degree {n}: a power of two from 4 to 2^30"),
        })
    }
}

/// `e_s = g^-s mod 2N` for s < N/2.
///
/// # Errors
/// [`CkksError::InvalidConfig`] unless `n` is a power of two from 4 to 2^30 and `generator`
/// is odd (a unit mod 2N).
pub fn slot_exponents(n: usize, generator: u64) -> Result<Vec<u64>, CkksError> {
    check_ring_degree(n)?;
    if generator.is_multiple_of(2) {
        return Err(CkksError::InvalidConfig {
            reason: format!("slot generator {generator} is even: not a unit mod 2N"),
        });
    }
    let two_n = 2 * n as u64;
    let generator = generator % two_n;
    // g^-1 mod 2N = g^(N/2 - 1) since the order of g divides N/2.
    let mut g_inv = 1u64;
    for _ in 0..(n / 2 - 1) {
        g_inv = g_inv * generator % two_n;
    }
    let mut e = 1u64;
    Ok((0..n / 2)
        .map(|_| {
            let cur = e;
            e = e * g_inv % two_n;
            cur
        })
        .collect())
}

impl Encoder {
    /// Tables for ring degree `n` and the generator-3 order.
    ///
    /// # Errors
    /// [`CkksError::InvalidConfig`] unless `n` is a power of two from 4 to 2^30.
    pub fn new(n: usize) -> Result<Self, CkksError> {
        let exponents = slot_exponents(n, 3)?;
        let roots = (0..n / 2)
            .map(|j| Complex64::from_polar(1.0, -2.0 * std::f64::consts::PI * j as f64 / n as f64))
            .collect();
        let twist = (0..n)
            .map(|k| Complex64::from_polar(1.0, std::f64::consts::PI * k as f64 / n as f64))
            .collect();
        Ok(Self {
            n,
            exponents,
            roots,
            twist,
        })
    }

    /// Refuses coefficient vectors that are not of length N.
    fn check_coefficients(&self, op: &'static str, len: usize) -> Result<(), CkksError> {
        if len == self.n {
            Ok(())
        } else {
            Err(CkksError::CoefficientCount { op, len, n: self.n })
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

    /// Slots `Σ_k a_k ζ^(k e_s)` (unscaled) of N real coefficients.
    ///
    /// # Errors
    /// [`CkksError::CoefficientCount`] unless there are exactly N coefficients.
    pub fn embed(&self, coefficients: &[f64]) -> Result<Vec<Complex64>, CkksError> {
        self.check_coefficients("embed", coefficients.len())?;
        let mut b: Vec<Complex64> = coefficients
            .iter()
            .zip(&self.twist)
            .map(|(&a, z)| z * a)
            .collect();
        self.fft(&mut b, true);
        Ok(self
            .exponents
            .iter()
            .map(|&e| b[((e - 1) / 2) as usize])
            .collect())
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

    /// Decodes N real coefficients at `scale` to N/2 complex slots.
    ///
    /// # Errors
    /// [`CkksError::CoefficientCount`] unless there are exactly N coefficients.
    pub fn decode(&self, coefficients: &[f64], scale: f64) -> Result<Vec<Complex64>, CkksError> {
        self.check_coefficients("decode", coefficients.len())?;
        Ok(self
            .embed(coefficients)?
            .into_iter()
            .map(|z| z / scale)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ring degrees the tables cannot hold, even generators and coefficient vectors of the
    /// wrong length are typed errors, not panics (n = 1 used to underflow, a short vector to
    /// index out of bounds).
    #[test]
    fn bad_degrees_generators_and_lengths_are_refused() {
        for n in [0, 1, 2, 3, 12, 1 << 31] {
            assert!(
                matches!(Encoder::new(n), Err(CkksError::InvalidConfig { ref reason }) if reason.contains(&n.to_string())),
                "n = {n}"
            );
        }
        assert!(matches!(
            slot_exponents(16, 4),
            Err(CkksError::InvalidConfig { .. })
        ));
        // A generator above 2N is taken mod 2N (no overflow of the products).
        assert_eq!(
            slot_exponents(16, u64::MAX - 28).expect("odd"),
            slot_exponents(16, (u64::MAX - 28) % 32).expect("odd")
        );
        let enc = Encoder::new(16).expect("encoder");
        for len in [0, 8, 15, 17] {
            let c = vec![0.5; len];
            assert_eq!(
                enc.embed(&c),
                Err(CkksError::CoefficientCount {
                    op: "embed",
                    len,
                    n: 16
                })
            );
            assert_eq!(
                enc.decode(&c, 2.0),
                Err(CkksError::CoefficientCount {
                    op: "decode",
                    len,
                    n: 16
                })
            );
        }
        assert_eq!(enc.decode(&[0.0; 16], 2.0).expect("16").len(), 8);
    }

    #[test]
    fn exponents_match_the_spec() {
        let e = slot_exponents(16384, 3).expect("exponents");
        assert_eq!(&e[..6], &[1, 10923, 3641, 23059, 18609, 6203]);
    }

    #[test]
    fn encode_decode_round_trip_and_direct_formula() {
        let n = 64;
        let enc = Encoder::new(n).expect("encoder");
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
        let back = enc.embed(&a).expect("n coefficients");
        for (x, y) in back.iter().zip(&msg) {
            assert!((x - y).norm() < 1e-12);
        }
        let coeffs = enc.encode(&msg, 2f64.powi(30)).expect("fits");
        let dec = enc
            .decode(
                &coeffs.iter().map(|&c| c as f64).collect::<Vec<_>>(),
                2f64.powi(30),
            )
            .expect("n coefficients");
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
            let enc = Encoder::new(16384).expect("encoder");
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
        let enc = Encoder::new(16).expect("encoder");
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
