//! Word-sized modular arithmetic for NTT-friendly primes below 2^62.
//!
//! # Choice of reduction (decision 0400)
//! Every stored residue in this crate is a **canonical standard-form** integer in `[0, q)`: we
//! do not keep values in Montgomery form (FHElium does, with R = 2^62). Two reductions are used:
//!
//! * **Shoup** multiplication by a precomputed constant `w` (NTT twiddles, `N^-1`, `P^-1`,
//!   `q_drop^-1`, ...): with `w' = floor(w * 2^64 / q)` the product `a*w mod q` costs one
//!   high and two low 64-bit multiplies and lands in `[0, 2q)` before one conditional subtract
//!   ([`Modulus::mul_shoup_lazy`], [`Modulus::mul_shoup`]).
//! * **Barrett** reduction of a 128-bit product for variable × variable products (pointwise
//!   products in the NTT domain, key inner products): with `b = bitlen(q)` and
//!   `mu = floor(2^(2b) / q)` the quotient estimate `((x >> (b-1)) * mu) >> (b+1)` is at most
//!   2 too small, so at most two conditional subtractions follow ([`Modulus::reduce_u128`]).
//!
//! Both give the exact residue; a GPU backend may use any reduction (Montgomery included) as
//! long as what it stores is the same canonical standard-form residue.

/// A prime modulus `q < 2^62` with its precomputed Barrett constant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Modulus {
    value: u64,
    bits: u32,
    barrett_mu: u64,
    /// `2^64 mod q` and its Shoup companion (for [`Modulus::reduce_wide`]).
    r64: u64,
    r64_shoup: u64,
}

impl Modulus {
    /// Builds the modulus; `None` when `q < 2` or `q >= 2^62` (the lazy NTT needs `4q < 2^64`).
    #[must_use]
    pub fn new(q: u64) -> Option<Self> {
        if !(2..(1u64 << 62)).contains(&q) {
            return None;
        }
        let bits = 64 - q.leading_zeros();
        let mu = (1u128 << (2 * bits)) / u128::from(q);
        let barrett_mu = u64::try_from(mu).ok()?;
        let r64 = ((1u128 << 64) % u128::from(q)) as u64;
        let r64_shoup = ((u128::from(r64) << 64) / u128::from(q)) as u64;
        Some(Self {
            value: q,
            bits,
            barrett_mu,
            r64,
            r64_shoup,
        })
    }

    /// Exact `x mod q` for any 128-bit `x` (`hi·2^64 + lo` as `(hi mod q)·(2^64 mod q) + lo`):
    /// the final reduction of lazily accumulated products.
    #[inline]
    #[must_use]
    pub fn reduce_wide(&self, x: u128) -> u64 {
        let hi = self.reduce((x >> 64) as u64);
        let lo = self.reduce(x as u64);
        self.add(self.mul_shoup(hi, self.r64, self.r64_shoup), lo)
    }

    /// The modulus `q`.
    #[inline]
    #[must_use]
    pub const fn value(&self) -> u64 {
        self.value
    }

    /// Bit length of `q`.
    #[inline]
    #[must_use]
    pub const fn bits(&self) -> u32 {
        self.bits
    }

    /// Exact `x mod q` for any `x < 2^(2*bits)` (in particular any product of two canonical
    /// residues).
    #[inline]
    #[must_use]
    pub fn reduce_u128(&self, x: u128) -> u64 {
        let q = self.value;
        // x < 2^(2b) so x >> (b-1) < 2^(b+1) <= 2^63 fits a word: one 64x64 product.
        let xs = (x >> (self.bits - 1)) as u64;
        let qhat = ((u128::from(xs) * u128::from(self.barrett_mu)) >> (self.bits + 1)) as u64;
        // the true remainder is < 3q < 2^64, so the low words suffice.
        let r = (x as u64).wrapping_sub(qhat.wrapping_mul(q));
        let r = r.min(r.wrapping_sub(q));
        r.min(r.wrapping_sub(q))
    }

    /// `x mod q` for any 64-bit `x`.
    #[inline]
    #[must_use]
    pub fn reduce(&self, x: u64) -> u64 {
        if x < self.value {
            x
        } else if self.bits >= 32 {
            self.reduce_u128(u128::from(x))
        } else {
            x % self.value
        }
    }

    /// `a * b mod q` for canonical `a, b` (canonical output).
    #[inline]
    #[must_use]
    pub fn mul(&self, a: u64, b: u64) -> u64 {
        self.reduce_u128(u128::from(a) * u128::from(b))
    }

    /// `a + b mod q` for canonical `a, b`.
    #[inline]
    #[must_use]
    pub fn add(&self, a: u64, b: u64) -> u64 {
        let s = a + b;
        s.min(s.wrapping_sub(self.value))
    }

    /// `a - b mod q` for canonical `a, b`.
    #[inline]
    #[must_use]
    pub fn sub(&self, a: u64, b: u64) -> u64 {
        let d = a.wrapping_sub(b);
        d.min(d.wrapping_add(self.value))
    }

    /// `-a mod q` for canonical `a`.
    #[inline]
    #[must_use]
    pub fn neg(&self, a: u64) -> u64 {
        let r = self.value - a; // q for a = 0, folded to 0 without a branch
        r.min(r.wrapping_sub(self.value))
    }

    /// The Shoup companion `floor(w * 2^64 / q)` of a canonical constant `w`.
    #[inline]
    #[must_use]
    pub fn shoup(&self, w: u64) -> u64 {
        ((u128::from(w) << 64) / u128::from(self.value)) as u64
    }

    /// `a * w mod q` in the lazy range `[0, 2q)`, for any `a < 2^64` and canonical `w` with
    /// Shoup companion `w_shoup`.
    #[inline]
    #[must_use]
    pub fn mul_shoup_lazy(&self, a: u64, w: u64, w_shoup: u64) -> u64 {
        let hi = ((u128::from(a) * u128::from(w_shoup)) >> 64) as u64;
        a.wrapping_mul(w).wrapping_sub(hi.wrapping_mul(self.value))
    }

    /// `a * w mod q`, canonical.
    #[inline]
    #[must_use]
    pub fn mul_shoup(&self, a: u64, w: u64, w_shoup: u64) -> u64 {
        let r = self.mul_shoup_lazy(a, w, w_shoup);
        r.min(r.wrapping_sub(self.value))
    }

    /// `base^exp mod q`.
    #[must_use]
    pub fn pow(&self, base: u64, mut exp: u64) -> u64 {
        let mut b = self.reduce(base);
        let mut acc = 1 % self.value;
        while exp > 0 {
            if exp & 1 == 1 {
                acc = self.mul(acc, b);
            }
            b = self.mul(b, b);
            exp >>= 1;
        }
        acc
    }

    /// Multiplicative inverse of `a` modulo the prime `q` (`None` for `a ≡ 0`).
    #[must_use]
    pub fn inv(&self, a: u64) -> Option<u64> {
        let a = self.reduce(a);
        if a == 0 {
            None
        } else {
            Some(self.pow(a, self.value - 2))
        }
    }

    /// Reduces a signed integer to its canonical residue.
    #[inline]
    #[must_use]
    pub fn from_i64(&self, x: i64) -> u64 {
        let m = self.reduce(x.unsigned_abs());
        if x < 0 {
            self.neg(m)
        } else {
            m
        }
    }
}

/// `a * b mod m` for arbitrary 64-bit operands (slow path, used for table set-up only).
#[must_use]
pub fn mul_mod_u64(a: u64, b: u64, m: u64) -> u64 {
    ((u128::from(a) * u128::from(b)) % u128::from(m)) as u64
}

/// `base^exp mod m` for arbitrary 64-bit `m > 0` (slow path, set-up only).
#[must_use]
pub fn pow_mod_u64(base: u64, mut exp: u64, m: u64) -> u64 {
    let mut b = base % m;
    let mut acc = 1 % m;
    while exp > 0 {
        if exp & 1 == 1 {
            acc = mul_mod_u64(acc, b, m);
        }
        b = mul_mod_u64(b, b, m);
        exp >>= 1;
    }
    acc
}

/// Deterministic Miller–Rabin primality test, exact for every 64-bit integer (bases
/// {2, 325, 9375, 28178, 450775, 9780504, 1795265022}, the set FHElium's catalog generator uses).
#[must_use]
pub fn is_prime(n: u64) -> bool {
    if n < 2 {
        return false;
    }
    for p in [2u64, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37] {
        if n.is_multiple_of(p) {
            return n == p;
        }
    }
    let mut d = n - 1;
    let mut s = 0;
    while d.is_multiple_of(2) {
        d /= 2;
        s += 1;
    }
    'bases: for a in [2u64, 325, 9375, 28_178, 450_775, 9_780_504, 1_795_265_022] {
        let a = a % n;
        if a == 0 {
            continue;
        }
        let mut x = pow_mod_u64(a, d, n);
        if x == 1 || x == n - 1 {
            continue;
        }
        for _ in 1..s {
            x = mul_mod_u64(x, x, n);
            if x == n - 1 {
                continue 'bases;
            }
        }
        return false;
    }
    true
}

/// Reverses the low `bits` bits of `x`.
#[inline]
#[must_use]
pub fn bit_reverse(x: usize, bits: u32) -> usize {
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (usize::BITS - bits)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const QS: [u64; 4] = [
        1_099_510_054_913,
        1_152_921_504_606_748_673,
        97,
        (1 << 61) - 1,
    ];

    proptest! {
        #[test]
        fn barrett_and_shoup_match_u128_remainder(a in any::<u64>(), b in any::<u64>(), i in 0usize..4) {
            let m = Modulus::new(QS[i]).expect("valid modulus");
            let q = m.value();
            let (a, b) = (a % q, b % q);
            let want = mul_mod_u64(a, b, q);
            prop_assert_eq!(m.mul(a, b), want);
            prop_assert_eq!(m.mul_shoup(a, b, m.shoup(b)), want);
            prop_assert!(m.mul_shoup_lazy(a.wrapping_mul(3) | 1, b, m.shoup(b)) < 2 * q);
            prop_assert_eq!(m.add(a, b), ((u128::from(a) + u128::from(b)) % u128::from(q)) as u64);
            prop_assert_eq!(m.sub(a, b), ((u128::from(a) + u128::from(q) - u128::from(b)) % u128::from(q)) as u64);
            prop_assert_eq!(m.add(m.neg(a), a), 0);
        }

        #[test]
        fn wide_reduction(hi in any::<u64>(), lo in any::<u64>(), i in 0usize..4) {
            let m = Modulus::new(QS[i]).expect("valid modulus");
            let x = (u128::from(hi) << 64) | u128::from(lo);
            prop_assert_eq!(u128::from(m.reduce_wide(x)), x % u128::from(m.value()));
        }

        #[test]
        fn signed_lift(x in any::<i64>(), i in 0usize..4) {
            let m = Modulus::new(QS[i]).expect("valid modulus");
            let want = i128::from(x).rem_euclid(i128::from(m.value())) as u64;
            prop_assert_eq!(m.from_i64(x), want);
        }
    }

    #[test]
    fn miller_rabin_agrees_with_trial_division_and_known_primes() {
        for n in 0u64..5000 {
            let naive = n >= 2 && (2..n).take_while(|d| d * d <= n).all(|d| n % d != 0);
            assert_eq!(is_prime(n), naive, "n = {n}");
        }
        assert!(is_prime(1_152_921_504_606_748_673));
        assert!(!is_prime(1_099_510_054_913 * 3));
        assert!(!is_prime(3_215_031_751)); // strong pseudoprime to bases 2, 3, 5, 7
    }

    #[test]
    fn inverse_and_pow() {
        let m = Modulus::new(QS[0]).expect("valid modulus");
        for a in [1u64, 2, 12345, QS[0] - 1] {
            let inv = m.inv(a).expect("nonzero");
            assert_eq!(m.mul(a, inv), 1);
        }
        assert_eq!(m.inv(0), None);
        assert!(Modulus::new(1 << 62).is_none());
        assert!(Modulus::new(1).is_none());
    }
}
