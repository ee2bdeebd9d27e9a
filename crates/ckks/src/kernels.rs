//! The CPU reference kernels: pure per-limb functions that every engine operation is built
//! from. A GPU backend is checked against these bit for bit. All residues are canonical
//! `[0, q)` standard form (no Montgomery factor) unless a function says otherwise.
//!
//! The NTT itself is [`crate::ntt::NttTable::forward`] / [`crate::ntt::NttTable::inverse`].

use crate::arith::Modulus;

/// `a[i] = a[i] + b[i] mod q`.
pub fn add_assign_limb(m: &Modulus, a: &mut [u64], b: &[u64]) {
    for (x, &y) in a.iter_mut().zip(b) {
        *x = m.add(*x, y);
    }
}

/// `a[i] = a[i] - b[i] mod q`.
pub fn sub_assign_limb(m: &Modulus, a: &mut [u64], b: &[u64]) {
    for (x, &y) in a.iter_mut().zip(b) {
        *x = m.sub(*x, y);
    }
}

/// `a[i] = -a[i] mod q`.
pub fn negate_limb(m: &Modulus, a: &mut [u64]) {
    for x in a.iter_mut() {
        *x = m.neg(*x);
    }
}

/// Pointwise product `a[i] = a[i] * b[i] mod q` (NTT-domain multiplication).
pub fn mul_assign_limb(m: &Modulus, a: &mut [u64], b: &[u64]) {
    for (x, &y) in a.iter_mut().zip(b) {
        *x = m.mul(*x, y);
    }
}

/// Pointwise multiply-accumulate `acc[i] = acc[i] + a[i] * b[i] mod q`.
pub fn mul_acc_limb(m: &Modulus, acc: &mut [u64], a: &[u64], b: &[u64]) {
    for ((x, &y), &z) in acc.iter_mut().zip(a).zip(b) {
        *x = m.add(*x, m.mul(y, z));
    }
}

/// Lazy multiply-accumulate without reduction: `acc[i] += a[i] * b[i]` in 128 bits. The caller
/// bounds the number of terms (each product is `< q²`) and reduces with
/// [`Modulus::reduce_wide`]; the result equals repeated [`mul_acc_limb`].
pub fn mul_acc_wide_limb(acc: &mut [u128], a: &[u64], b: &[u64]) {
    for ((x, &y), &z) in acc.iter_mut().zip(a).zip(b) {
        *x += u128::from(y) * u128::from(z);
    }
}

/// Multiplies every residue by the constant `c` (canonical), `a[i] = a[i] * c mod q`.
pub fn mul_scalar_limb(m: &Modulus, a: &mut [u64], c: u64) {
    let cs = m.shoup(c);
    for x in a.iter_mut() {
        *x = m.mul_shoup(*x, c, cs);
    }
}

/// Reduces residues of another prime (`src[i] < 2^64`) modulo `q`: the ModUp of a single-prime
/// digit (spec §3.8 step 2).
pub fn reduce_limb(m: &Modulus, src: &[u64], dst: &mut [u64]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = m.reduce(s);
    }
}

/// One destination entry of the coefficient-domain automorphism σ_g: `dst[k] = ±src[index]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutomorphismEntry {
    /// Source coefficient index.
    pub index: u32,
    /// Whether the source coefficient is negated.
    pub negate: bool,
}

/// The destination-indexed map of `σ_g: a(X) ↦ a(X^g)` on `Z[X]/(X^N + 1)` for odd `g`:
/// source coefficient i goes to `t = g·i mod 2N`, landing at `t` (sign +) when `t < N`, else at
/// `t − N` (sign −). Same map for every limb.
#[must_use]
pub fn automorphism_index_map(n: usize, g: u64) -> Vec<AutomorphismEntry> {
    let two_n = 2 * n as u64;
    let mut map = vec![
        AutomorphismEntry {
            index: 0,
            negate: false
        };
        n
    ];
    let step = g % two_n;
    let mut t = 0u64; // g·i mod 2N, stepped instead of multiplied and divided
    for i in 0..n {
        if i > 0 {
            t += step;
            if t >= two_n {
                t -= two_n;
            }
        }
        let (pos, negate) = if t < n as u64 {
            (t, false)
        } else {
            (t - n as u64, true)
        };
        map[pos as usize] = AutomorphismEntry {
            index: i as u32,
            negate,
        };
    }
    map
}

/// Applies an automorphism map to one limb: `dst[k] = ±src[map[k].index] mod q`.
pub fn apply_automorphism_limb(
    m: &Modulus,
    map: &[AutomorphismEntry],
    src: &[u64],
    dst: &mut [u64],
) {
    for (d, &e) in dst.iter_mut().zip(map) {
        *d = automorphism_value(m, src, e);
    }
}

/// One entry of [`apply_automorphism_limb`]: `±src[e.index] mod q` (branch-free select).
#[inline]
#[must_use]
pub fn automorphism_value(m: &Modulus, src: &[u64], e: AutomorphismEntry) -> u64 {
    let v = src[e.index as usize];
    std::hint::select_unpredictable(e.negate, m.neg(v), v)
}

/// The NTT-domain form of σ_g (a pure gather, no sign): destination index j reads source index
/// `br(((g·(2·br(j)+1)) mod 2N − 1)/2)` (spec §3.6). Provided for hoisted rotations and as a
/// cross-check of the coefficient map.
#[must_use]
pub fn automorphism_ntt_index_map(log_n: u32, g: u64) -> Vec<u32> {
    use crate::arith::bit_reverse;
    let n = 1usize << log_n;
    let mask = 2 * n as u64 - 1; // mod 2N as a mask: no divisions on the rotation's serial path
    (0..n)
        .map(|j| {
            let e = 2 * bit_reverse(j, log_n) as u64 + 1;
            let t = ((g & mask) * e) & mask;
            bit_reverse(((t - 1) / 2) as usize, log_n) as u32
        })
        .collect()
}

/// Constants of the exact mixed-radix (Garner) conversion of a residue tuple over primes
/// `p_0..p_{k-1}`: `inv[j][i] = p_i⁻¹ mod p_j` for `i < j`.
#[derive(Clone, Debug)]
pub struct MixedRadix {
    moduli: Vec<Modulus>,
    inv: Vec<Vec<u64>>,
    /// Mixed-radix digits of `(D − 1)/2`, `D = Π p` (the balanced threshold).
    half: Vec<u64>,
}

impl MixedRadix {
    /// Constants for the given distinct primes.
    #[must_use]
    pub fn new(moduli: &[Modulus]) -> Self {
        let inv = moduli
            .iter()
            .enumerate()
            .map(|(j, mj)| {
                moduli[..j]
                    .iter()
                    .map(|mi| mj.inv(mi.value()).unwrap_or(0))
                    .collect()
            })
            .collect();
        let mut r = Self {
            moduli: moduli.to_vec(),
            inv,
            half: vec![0; moduli.len()],
        };
        // (D - 1)/2 ≡ (p_j - 1)/2 mod every (odd) p_j
        let res: Vec<u64> = moduli.iter().map(|m| (m.value() - 1) / 2).collect();
        let mut half = vec![0u64; moduli.len()];
        r.digits(&res, &mut half);
        r.half = half;
        r
    }

    /// Whether the integer with mixed-radix digits `v` exceeds `(D − 1)/2` (it is then
    /// represented by `x − D` in the balanced range).
    #[must_use]
    pub fn above_half(&self, v: &[u64]) -> bool {
        for (a, b) in v.iter().zip(&self.half).rev() {
            if a != b {
                return a > b;
            }
        }
        false
    }

    /// `D mod target`.
    #[must_use]
    pub fn product_mod(&self, target: &Modulus) -> u64 {
        self.moduli.iter().fold(1 % target.value(), |acc, m| {
            target.mul(acc, target.reduce(m.value()))
        })
    }

    /// Number of primes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.moduli.len()
    }

    /// Whether there are no primes.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.moduli.is_empty()
    }

    /// Mixed-radix digits `v` of the integer `x ∈ [0, Πp)` with residues `x_j`:
    /// `x = v_0 + v_1·p_0 + v_2·p_0·p_1 + ...`, `v_j ∈ [0, p_j)`.
    pub fn digits(&self, residues: &[u64], v: &mut [u64]) {
        for j in 0..self.moduli.len() {
            let mj = &self.moduli[j];
            let mut t = residues[j];
            for (vi, &inv) in v[..j].iter().zip(&self.inv[j]) {
                t = mj.mul(mj.sub(t, mj.reduce(*vi)), inv);
            }
            v[j] = t;
        }
    }

    /// `x mod target` from mixed-radix digits (Horner).
    #[must_use]
    pub fn eval(&self, v: &[u64], target: &Modulus) -> u64 {
        let k = self.moduli.len();
        let mut acc = target.reduce(v[k - 1]);
        for i in (0..k - 1).rev() {
            acc = target.add(
                target.mul(acc, target.reduce(self.moduli[i].value())),
                target.reduce(v[i]),
            );
        }
        acc
    }
}

/// Exact **balanced** ModUp of one digit (residue rows `digit_rows` over the primes of `radix`,
/// product D) to the prime `target`: `dst[i] = x_i mod target`, where `x_i ∈ (−D/2, D/2)` is the
/// centred integer with those residues (decision 0403; FHElium lifts `[0, D)`, whose mean D/2
/// puts a deterministic ~2e-6 outlier on slot 0 after every key switch).
///
/// Single-prime digit: `x = d` if `d ≤ (q_j − 1)/2`, else `d − q_j`.
pub fn modup_limb(radix: &MixedRadix, digit_rows: &[&[u64]], target: &Modulus, dst: &mut [u64]) {
    if radix.len() == 1 {
        let qj = radix.moduli[0].value();
        let half = (qj - 1) / 2;
        let qj_mod = target.reduce(qj);
        for (d, &s) in dst.iter_mut().zip(digit_rows[0]) {
            let r = target.reduce(s);
            // a coin flip per coefficient: a branch here mispredicts half the time
            *d = std::hint::select_unpredictable(s > half, target.sub(r, qj_mod), r);
        }
        return;
    }
    let d_mod = radix.product_mod(target);
    let k = radix.len();
    let mut res = vec![0u64; k];
    let mut v = vec![0u64; k];
    for (i, d) in dst.iter_mut().enumerate() {
        for (r, row) in res.iter_mut().zip(digit_rows) {
            *r = row[i];
        }
        radix.digits(&res, &mut v);
        let x = radix.eval(&v, target);
        *d = if radix.above_half(&v) {
            target.sub(x, d_mod)
        } else {
            x
        };
    }
}

/// ModDown of one Q row (spec §3.8 step 6): `acc[i] = (acc[i] − (x_P mod q)) · P⁻¹ mod q`,
/// where `x_P ∈ [0, P)` is the integer with residues `p_rows[·][i]` — the floor division
/// `⌊x / P⌋` of the representative `x ∈ [0, Q·P)`. `p_inv` is `P⁻¹ mod q`.
pub fn moddown_limb(
    m: &Modulus,
    p_radix: &MixedRadix,
    p_rows: &[&[u64]],
    p_inv: u64,
    acc: &mut [u64],
) {
    let p_inv_shoup = m.shoup(p_inv);
    if p_radix.len() == 1 {
        for (a, &xp) in acc.iter_mut().zip(p_rows[0]) {
            *a = m.mul_shoup(m.sub(*a, m.reduce(xp)), p_inv, p_inv_shoup);
        }
        return;
    }
    let k = p_radix.len();
    let mut res = vec![0u64; k];
    let mut v = vec![0u64; k];
    for (i, a) in acc.iter_mut().enumerate() {
        for (r, row) in res.iter_mut().zip(p_rows) {
            *r = row[i];
        }
        p_radix.digits(&res, &mut v);
        let xp = p_radix.eval(&v, m);
        *a = m.mul_shoup(m.sub(*a, xp), p_inv, p_inv_shoup);
    }
}

/// [`moddown_limb`] reading the accumulator row `src` and handing each result coefficient to
/// `f(index, value)`, so the caller can fuse it with what it writes next (same words).
pub fn moddown_each<F>(
    m: &Modulus,
    p_radix: &MixedRadix,
    p_rows: &[&[u64]],
    p_inv: u64,
    src: &[u64],
    mut f: F,
) where
    F: FnMut(usize, u64),
{
    let p_inv_shoup = m.shoup(p_inv);
    if p_radix.len() == 1 {
        for (i, (&a, &xp)) in src.iter().zip(p_rows[0]).enumerate() {
            f(i, m.mul_shoup(m.sub(a, m.reduce(xp)), p_inv, p_inv_shoup));
        }
        return;
    }
    let k = p_radix.len();
    let mut res = vec![0u64; k];
    let mut v = vec![0u64; k];
    for (i, &a) in src.iter().enumerate() {
        for (r, row) in res.iter_mut().zip(p_rows) {
            *r = row[i];
        }
        p_radix.digits(&res, &mut v);
        let xp = p_radix.eval(&v, m);
        f(i, m.mul_shoup(m.sub(a, xp), p_inv, p_inv_shoup));
    }
}

/// Rescale of one remaining row by the dropped prime (spec §3.12, nearest rounding):
/// `row[i] = (row[i] − (drop[i] mod q)) · q_drop⁻¹ mod q`, plus 1 when `drop[i] > ⌊q_drop/2⌋`.
/// `q_drop_inv` is `q_drop⁻¹ mod q`.
pub fn rescale_limb(m: &Modulus, q_drop: u64, q_drop_inv: u64, drop: &[u64], row: &mut [u64]) {
    let inv_shoup = m.shoup(q_drop_inv);
    let half = q_drop / 2;
    for (r, &d) in row.iter_mut().zip(drop) {
        let v = m.mul_shoup(m.sub(*r, m.reduce(d)), q_drop_inv, inv_shoup);
        *r = if d > half { m.add(v, 1 % m.value()) } else { v };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arith::bit_reverse;
    use crate::ntt::NttTable;
    use num_bigint::BigUint;
    use num_traits::{ToPrimitive, Zero};
    use proptest::prelude::*;

    const PRIMES: [u64; 4] = [
        1_099_510_054_913,
        1_099_515_691_009,
        1_152_921_504_606_748_673,
        1_152_921_504_606_683_137,
    ];

    fn crt(residues: &[u64], primes: &[u64]) -> BigUint {
        let big_q: BigUint = primes.iter().map(|&p| BigUint::from(p)).product();
        let mut x = BigUint::zero();
        for (&r, &p) in residues.iter().zip(primes) {
            let qi = &big_q / p;
            let qi_mod = (&qi % p).to_u64().unwrap_or(0);
            let inv = Modulus::new(p).and_then(|m| m.inv(qi_mod)).unwrap_or(0);
            x += qi * BigUint::from(r) * BigUint::from(inv);
        }
        x % big_q
    }

    proptest! {
        #[test]
        fn modup_and_moddown_are_exact_against_bigint_crt(
            r in proptest::collection::vec(any::<u64>(), 4),
        ) {
            let moduli: Vec<Modulus> = PRIMES.iter().filter_map(|&p| Modulus::new(p)).collect();
            let res: Vec<u64> = r.iter().zip(&PRIMES).map(|(&x, &p)| x % p).collect();
            // ModUp of the 2-prime digit {p0, p1} to p2 and p3
            let radix = MixedRadix::new(&moduli[..2]);
            let x = crt(&res[..2], &PRIMES[..2]);
            let d: BigUint = BigUint::from(PRIMES[0]) * PRIMES[1];
            let centred_above = x > ((&d - 1u32) >> 1u32);
            for t in 2..4 {
                let mut out = [0u64];
                modup_limb(&radix, &[&res[0..1], &res[1..2]], &moduli[t], &mut out);
                // balanced: x - D when x > (D-1)/2, reduced mod the target
                let want = if centred_above {
                    (&x + BigUint::from(PRIMES[t]) * 4u32 - &d % PRIMES[t]) % PRIMES[t]
                } else {
                    &x % PRIMES[t]
                };
                prop_assert_eq!(BigUint::from(out[0]), want);
                let single = MixedRadix::new(&moduli[..1]);
                modup_limb(&single, &[&res[0..1]], &moduli[t], &mut out);
                let r0 = i128::from(res[0]);
                let c0 = if res[0] > (PRIMES[0] - 1) / 2 { r0 - i128::from(PRIMES[0]) } else { r0 };
                prop_assert_eq!(i128::from(out[0]), c0.rem_euclid(i128::from(PRIMES[t])));
            }
            // ModDown by P = p2·p3 of x in Q = p0·p1 ... on row p0
            let full = crt(&res, &PRIMES);
            let p: BigUint = BigUint::from(PRIMES[2]) * PRIMES[3];
            let want = (&full / &p) % PRIMES[0];
            let p_radix = MixedRadix::new(&moduli[2..]);
            let p_inv = moduli[0].inv((&p % PRIMES[0]).to_u64().unwrap_or(0)).unwrap_or(0);
            let mut acc = [res[0]];
            moddown_limb(&moduli[0], &p_radix, &[&res[2..3], &res[3..4]], p_inv, &mut acc);
            prop_assert_eq!(BigUint::from(acc[0]), want);
            // rescale: drop p0 from x in p0·p1·p2, nearest rounding, check on row p1
            let x3 = crt(&res[..3], &PRIMES[..3]);
            let q0 = BigUint::from(PRIMES[0]);
            let rounded = (&x3 + (&q0 >> 1u32)) / &q0;
            let mut row = [res[1]];
            let inv = moduli[1].inv(PRIMES[0] % PRIMES[1]).unwrap_or(0);
            rescale_limb(&moduli[1], PRIMES[0], inv, &res[0..1], &mut row);
            prop_assert_eq!(BigUint::from(row[0]), rounded % PRIMES[1]);
        }
    }

    #[test]
    fn automorphism_maps_agree_between_domains() {
        let log_n = 5;
        let n = 1usize << log_n;
        let q = 7681u64; // 7681 = 1 mod 64
        let t = NttTable::new(q, log_n).expect("ntt prime");
        let m = *t.modulus();
        let a: Vec<u64> = (0..n as u64).map(|i| (i * 37 + 5) % q).collect();
        for g in [3u64, 9, 2 * n as u64 - 1, 11] {
            let map = automorphism_index_map(n, g);
            let mut coef = vec![0u64; n];
            apply_automorphism_limb(&m, &map, &a, &mut coef);
            // direct definition: a(X^g)
            let mut want = vec![0u64; n];
            for (i, &c) in a.iter().enumerate() {
                let e = (g as usize * i) % (2 * n);
                if e < n {
                    want[e] = m.add(want[e], c);
                } else {
                    want[e - n] = m.sub(want[e - n], c);
                }
            }
            assert_eq!(coef, want, "g = {g}");
            let mut fa = a.clone();
            t.forward(&mut fa);
            t.forward(&mut coef);
            let nmap = automorphism_ntt_index_map(log_n, g);
            let gathered: Vec<u64> = nmap.iter().map(|&s| fa[s as usize]).collect();
            assert_eq!(gathered, coef, "ntt gather g = {g}");
        }
        assert_eq!(bit_reverse(1, 5), 16);
    }

    #[test]
    fn elementwise_kernels() {
        let m = Modulus::new(PRIMES[0]).expect("prime");
        let q = PRIMES[0];
        let mut a = vec![0, 1, q - 1, 12345];
        let b = vec![q - 1, q - 1, q - 1, 1];
        add_assign_limb(&m, &mut a, &b);
        assert_eq!(a, vec![q - 1, 0, q - 2, 12346]);
        sub_assign_limb(&m, &mut a, &b);
        assert_eq!(a, vec![0, 1, q - 1, 12345]);
        negate_limb(&m, &mut a);
        assert_eq!(a, vec![0, q - 1, 1, q - 12345]);
        let mut c = vec![2, 3, 4, 5];
        mul_scalar_limb(&m, &mut c, q - 1);
        assert_eq!(c, vec![q - 2, q - 3, q - 4, q - 5]);
        let mut acc = vec![1, 1, 1, 1];
        mul_acc_limb(&m, &mut acc, &[2, 3, 4, 5], &[q - 1; 4]);
        assert_eq!(acc, vec![q - 1, q - 2, q - 3, q - 4]);
        mul_assign_limb(&m, &mut acc, &[q - 1; 4]);
        assert_eq!(acc, vec![1, 2, 3, 4]);
    }
}
