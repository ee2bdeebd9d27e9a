//! Host-side constant tables of the CUDA backend: everything the kernels in `kernels/ckks.cu`
//! read besides the data, computed once per engine and uploaded once.
//!
//! Pure Rust (no device): tested on any machine against the CPU engine's own tables.

use crate::arith::Modulus;
use crate::ntt::NttTable;

/// Ring degree the kernels are compiled for (`LOGN` in `kernels/ckks.cu`).
pub const KERNEL_LOG_N: u32 = 14;
/// `N` of the kernels.
pub const KERNEL_N: usize = 1 << KERNEL_LOG_N;

/// `floor(w * 2^64 / q)`: the Shoup companion of a canonical constant `w`.
#[must_use]
pub fn shoup(w: u64, q: u64) -> u64 {
    ((u128::from(w) << 64) / u128::from(q)) as u64
}

/// `-q^-1 mod 2^64` for odd `q` (Newton iteration on the 2-adic inverse).
#[must_use]
pub fn neg_inv_mod_2_64(q: u64) -> u64 {
    let mut inv: u64 = 1;
    for _ in 0..7 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(q.wrapping_mul(inv)));
    }
    inv.wrapping_neg()
}

/// `2^64 mod q`.
#[must_use]
pub fn two_64_mod(q: u64) -> u64 {
    ((1u128 << 64) % u128::from(q)) as u64
}

/// All tables, flattened into `u64` words in the layouts the kernels read.
#[derive(Clone, Debug)]
pub struct DeviceTables {
    /// The moduli by prime id.
    pub moduli: Vec<u64>,
    /// `struct Prime { q, -q^-1 mod 2^64, floor(2^64/q), 0 }` per prime id.
    pub primes: Vec<u64>,
    /// Forward twiddles `(psi^br(k), shoup)` pairs, `[prime][N][2]`.
    pub twf: Vec<u64>,
    /// Inverse twiddles `(psi^-br(k), shoup)` pairs, `[prime][N][2]`.
    pub twi: Vec<u64>,
    /// `(1, floor(2^64/q))` per prime: reduction of an arbitrary word (forward NTT pre-step).
    pub reduce: Vec<u64>,
    /// The inverse NTT's final scaling `N^-1` per prime, as a `struct Post` of two Shoup
    /// pairs: `(c, shoup)` and `(c * w1, shoup)` with `c = N^-1` and `w1` the inverse table's
    /// entry 1 (the last stage's one twiddle, which the `*_gs` kernels fold the scaling into).
    pub n_inv: Vec<u64>,
    /// `(2^64 mod q, shoup)` per prime: turns a Montgomery (R = 2^64) product into `a*b mod q`.
    pub mont_fix: Vec<u64>,
    /// `c = N^-1 * 2^64 mod q` in the layout of [`DeviceTables::n_inv`]: inverse NTT scaling
    /// of key-switch accumulators (their products are left with the 2^-64 Montgomery factor).
    pub ks_post: Vec<u64>,
    /// `(P^-1 mod q_i, shoup)` for Q ids; zero for P ids.
    pub p_inv: Vec<u64>,
    /// `P mod q_i` (plain words, one per prime id) for Q ids; zero for P ids: the factor of
    /// the rows `ks_inner_gs` / `ks_inner_cl` add before the inverse NTT (relinearize's d0, d1).
    pub p_mod: Vec<u64>,
    /// `(q_d^-1 mod q_i, shoup)` in a `[d][i][2]` table (zero on the diagonal).
    pub q_inv: Vec<u64>,
    /// Number of Q primes.
    pub nq: usize,
}

fn pair(out: &mut Vec<u64>, w: u64, q: u64) {
    out.push(w);
    out.push(shoup(w, q));
}

/// A `struct Post` of `kernels/ckks.cu`: the scaling constant `c` and `c * w1` (`w1` the last
/// inverse stage's twiddle), each with its Shoup companion.
fn post(out: &mut Vec<u64>, m: &Modulus, c: u64, w1: u64) {
    pair(out, c, m.value());
    pair(out, m.mul(c, w1), m.value());
}

impl DeviceTables {
    /// Builds the tables from the CPU engine's NTT tables (one per QP prime id, Q first, one
    /// P prime last). Returns `None` when N is not [`KERNEL_N`].
    #[must_use]
    pub fn new(tables: &[NttTable], nq: usize) -> Option<Self> {
        if tables.iter().any(|t| t.n() != KERNEL_N) || nq >= tables.len() {
            return None;
        }
        let moduli: Vec<u64> = tables.iter().map(|t| t.modulus().value()).collect();
        let mods: Vec<Modulus> = tables.iter().map(|t| *t.modulus()).collect();
        let np = tables.len() - nq;
        let mut primes = Vec::with_capacity(4 * moduli.len());
        let mut twf = Vec::with_capacity(2 * KERNEL_N * moduli.len());
        let mut twi = Vec::with_capacity(2 * KERNEL_N * moduli.len());
        let (mut reduce, mut n_inv, mut mont_fix, mut ks_post, mut p_inv) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let mut p_mod = Vec::with_capacity(moduli.len());
        for (id, t) in tables.iter().enumerate() {
            let q = moduli[id];
            let m = &mods[id];
            primes.extend_from_slice(&[q, neg_inv_mod_2_64(q), shoup(1, q), 0]);
            for (&w, &wi) in t.twiddles().iter().zip(t.inverse_twiddles()) {
                pair(&mut twf, w, q);
                pair(&mut twi, wi, q);
            }
            pair(&mut reduce, 1, q);
            let w1 = t.inverse_twiddles()[1];
            post(&mut n_inv, m, t.n_inv(), w1);
            let fix = two_64_mod(q);
            pair(&mut mont_fix, fix, q);
            post(&mut ks_post, m, m.mul(t.n_inv(), fix), w1);
            if id < nq {
                let p = moduli[nq..]
                    .iter()
                    .fold(1u64, |acc, &p| m.mul(acc, m.reduce(p)));
                pair(&mut p_inv, m.inv(p)?, q);
                p_mod.push(p);
            } else {
                pair(&mut p_inv, 0, q);
                p_mod.push(0);
            }
        }
        let _ = np;
        let mut q_inv = Vec::with_capacity(2 * moduli.len() * moduli.len());
        for &qd in &moduli {
            for (i, m) in mods.iter().enumerate() {
                if qd == moduli[i] {
                    pair(&mut q_inv, 0, moduli[i]);
                } else {
                    pair(&mut q_inv, m.inv(m.reduce(qd))?, moduli[i]);
                }
            }
        }
        Some(Self {
            moduli,
            primes,
            twf,
            twi,
            reduce,
            n_inv,
            mont_fix,
            ks_post,
            p_inv,
            p_mod,
            q_inv,
            nq,
        })
    }
}

/// `g^-1 mod 2N` for an odd Galois element `g`.
#[must_use]
pub fn galois_inverse(g: u64, n: usize) -> u64 {
    let two_n = 2 * n as u64;
    let g = g % two_n;
    // The group (Z/2NZ)^* has exponent N/2 for N >= 8, so g^(N/2 - 1) = g^-1.
    let mut acc = 1u64;
    let mut b = g;
    let mut e = (n / 2 - 1) as u64;
    while e > 0 {
        if e & 1 == 1 {
            acc = acc * b % two_n;
        }
        b = b * b % two_n;
        e >>= 1;
    }
    acc
}

/// Host model of the device Montgomery product (`mont` in `kernels/ckks.cu`): `a*b*2^-64 mod q`.
#[must_use]
pub fn mont_model(a: u64, b: u64, q: u64, qinv_neg: u64) -> u64 {
    let prod = u128::from(a) * u128::from(b);
    let lo = prod as u64;
    let hi = (prod >> 64) as u64;
    let m = lo.wrapping_mul(qinv_neg);
    let t = ((u128::from(m) * u128::from(q)) >> 64) as u64;
    let r = hi + t + u64::from(lo != 0);
    if r >= q {
        r - q
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arith::mul_mod_u64;

    const QS: [u64; 3] = [
        1_099_510_054_913,
        1_152_921_504_606_748_673,
        1_152_921_504_606_683_137,
    ];

    #[test]
    fn montgomery_model_and_fix_give_the_plain_product() {
        let mut x = 0x1234_5678_9abc_def1u64;
        for &q in &QS {
            let qn = neg_inv_mod_2_64(q);
            assert_eq!(q.wrapping_mul(qn.wrapping_neg()), 1);
            let fix = two_64_mod(q);
            for _ in 0..1000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let a = x % q;
                let b = x.rotate_left(29) % q;
                let r = mont_model(a, b, q, qn);
                assert!(r < q);
                assert_eq!(mul_mod_u64(r, fix, q), mul_mod_u64(a, b, q));
            }
        }
    }

    #[test]
    fn galois_inverse_inverts() {
        let n = KERNEL_N;
        for g in [3u64, 10_923, 2 * n as u64 - 1, 5, 25] {
            let gi = galois_inverse(g, n);
            assert_eq!(g * gi % (2 * n as u64), 1, "g = {g}");
        }
    }

    #[test]
    fn tables_match_the_cpu_ntt_tables() {
        let tables: Vec<NttTable> = QS
            .iter()
            .filter_map(|&q| NttTable::new(q, KERNEL_LOG_N))
            .collect();
        assert_eq!(tables.len(), 3);
        let t = DeviceTables::new(&tables, 2).expect("tables");
        assert_eq!(t.twf.len(), 3 * 2 * KERNEL_N);
        for (id, tab) in tables.iter().enumerate() {
            let q = QS[id];
            for k in [0usize, 1, 77, KERNEL_N - 1] {
                let w = t.twf[(id * KERNEL_N + k) * 2];
                assert_eq!(w, tab.twiddles()[k]);
                assert_eq!(t.twf[(id * KERNEL_N + k) * 2 + 1], shoup(w, q));
            }
            let ks = t.ks_post[4 * id];
            // ks_post * 2^-64 == N^-1
            let r = mont_model(ks, 1, q, neg_inv_mod_2_64(q));
            assert_eq!(r, tab.n_inv());
            // The Post layout: (c, shoup, c * w1, shoup), w1 the inverse table's entry 1.
            let w1 = tab.inverse_twiddles()[1];
            assert_eq!(
                &t.n_inv[4 * id..4 * id + 2],
                &[tab.n_inv(), shoup(tab.n_inv(), q)]
            );
            let f = mul_mod_u64(tab.n_inv(), w1, q);
            assert_eq!(&t.n_inv[4 * id + 2..4 * id + 4], &[f, shoup(f, q)]);
            assert_eq!(t.ks_post[4 * id + 2], mul_mod_u64(ks, w1, q));
            assert_eq!(t.ks_post[4 * id + 3], shoup(t.ks_post[4 * id + 2], q));
        }
        // P^-1 mod q0 times P mod q0 is one
        let pinv = t.p_inv[0];
        assert_eq!(mul_mod_u64(pinv, QS[2] % QS[0], QS[0]), 1);
        // P mod q_i for the Q ids, zero for the P id
        assert_eq!(t.p_mod, vec![QS[2] % QS[0], QS[2] % QS[1], 0]);
        // q_inv[d=0][i=1] * q0 mod q1 == 1
        assert_eq!(t.q_inv[(3 + 1) * 2], 0);
        let qi = t.q_inv[2];
        assert_eq!(mul_mod_u64(qi, QS[0] % QS[1], QS[1]), 1);
        assert!(DeviceTables::new(&tables[..1], 1).is_none());
    }
}
