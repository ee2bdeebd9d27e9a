//! Randomness: a ChaCha20 CSPRNG and the samplers of spec §1.6 (ternary secret, discrete
//! Gaussian errors, uniform residues, ternary ephemeral v).

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::arith::Modulus;

/// Largest error magnitude produced by [`Csprng::gaussian`] (FHElium's CDT support is ±31).
pub const GAUSSIAN_TAIL: i64 = 31;

/// A ChaCha20 stream seeded from the operating system or from an explicit 32-byte seed.
#[derive(Debug)]
pub struct Csprng {
    rng: ChaCha20Rng,
    cdt: Vec<u64>,
}

impl Csprng {
    /// Seeded from the operating system's entropy source.
    #[must_use]
    pub fn from_os(sigma: f64) -> Self {
        Self::with_rng(ChaCha20Rng::from_os_rng(), sigma)
    }

    /// Deterministic stream from an explicit seed (reproducible tests).
    #[must_use]
    pub fn from_seed(seed: [u8; 32], sigma: f64) -> Self {
        Self::with_rng(ChaCha20Rng::from_seed(seed), sigma)
    }

    fn with_rng(rng: ChaCha20Rng, sigma: f64) -> Self {
        // Two-sided CDT over [-31, 31]: cdt[k] = P(X <= k - 31) scaled to 2^64.
        let weights: Vec<f64> = (-GAUSSIAN_TAIL..=GAUSSIAN_TAIL)
            .map(|x| (-(x * x) as f64 / (2.0 * sigma * sigma)).exp())
            .collect();
        let total: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let mut cdt = Vec::with_capacity(weights.len());
        for w in &weights {
            acc += w / total;
            cdt.push(if acc >= 1.0 {
                u64::MAX
            } else {
                (acc * 18_446_744_073_709_551_616.0) as u64
            });
        }
        if let Some(last) = cdt.last_mut() {
            *last = u64::MAX;
        }
        Self { rng, cdt }
    }

    /// A raw 64-bit word.
    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// Uniform ternary coefficients in {−1, 0, 1}, each independent (secret keys and the
    /// encryption ephemeral v).
    pub fn ternary(&mut self, n: usize) -> Vec<i64> {
        (0..n)
            .map(|_| i64::from(self.rng.random_range(0u8..3)) - 1)
            .collect()
    }

    /// Centred discrete Gaussian samples (sigma of the constructor, support ±31).
    pub fn gaussian(&mut self, n: usize) -> Vec<i64> {
        (0..n)
            .map(|_| {
                let u = self.rng.next_u64();
                let k = self.cdt.partition_point(|&c| c < u);
                k as i64 - GAUSSIAN_TAIL
            })
            .collect()
    }

    /// Uniform residues in `[0, q)` by rejection sampling (no bias).
    pub fn fill_uniform(&mut self, m: &Modulus, out: &mut [u64]) {
        let q = m.value();
        let mask = if m.bits() >= 64 {
            u64::MAX
        } else {
            (1u64 << m.bits()) - 1
        };
        for x in out.iter_mut() {
            *x = loop {
                let c = self.rng.next_u64() & mask;
                if c < q {
                    break c;
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distributions_have_the_right_moments() {
        let mut r = Csprng::from_seed([7; 32], 3.19);
        let n = 200_000;
        let g = r.gaussian(n);
        let mean = g.iter().sum::<i64>() as f64 / n as f64;
        let var = g.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.05, "mean {mean}");
        assert!((var.sqrt() - 3.19).abs() < 0.05, "sigma {}", var.sqrt());
        assert!(g.iter().all(|x| x.abs() <= GAUSSIAN_TAIL));
        let t = r.ternary(n);
        for v in [-1, 0, 1] {
            let c = t.iter().filter(|&&x| x == v).count() as f64 / n as f64;
            assert!((c - 1.0 / 3.0).abs() < 0.01, "ternary {v}: {c}");
        }
        let m = Modulus::new(1_099_510_054_913).expect("prime");
        let mut u = vec![0u64; n];
        r.fill_uniform(&m, &mut u);
        assert!(u.iter().all(|&x| x < m.value()));
        let mean = u.iter().map(|&x| x as f64).sum::<f64>() / n as f64 / m.value() as f64;
        assert!((mean - 0.5).abs() < 0.01);
    }

    #[test]
    fn explicit_seed_is_reproducible_and_os_seed_differs() {
        let a = Csprng::from_seed([1; 32], 3.19).gaussian(64);
        let b = Csprng::from_seed([1; 32], 3.19).gaussian(64);
        assert_eq!(a, b);
        let c = Csprng::from_os(3.19).next_u64();
        let d = Csprng::from_os(3.19).next_u64();
        assert_ne!(c, d);
    }
}
