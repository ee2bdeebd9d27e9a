//! Hybrid key switching on the CPU, scheduled for two cores (decision 0410).
//!
//! The arithmetic is the reference of `docs/crates/ckks.md` ("Key switch") word for word; only
//! the schedule differs from a per-row loop:
//!
//! 1. **ModUp + forward NTT**, one task per (QP row, live digit) pair (72 at level 0 of the seed
//!    preset), into one `[row, digit, N]` scratch block. A row whose prime belongs to the digit
//!    is the digit's own residue row (the balanced lift is the identity there), so it goes
//!    through `forward_from` without a ModUp.
//! 2. **Inner product + inverse NTT**, one task per (component, QP row) pair: the digit products
//!    are summed in 128 bits over blocks of coefficients and reduced once per coefficient
//!    (exact while `digits·(q−1)² < 2^128`, otherwise one reduction per digit, the same
//!    residue), then transformed back in place. For a rotation the digits are read through the
//!    NTT-domain automorphism map (hoisting, spec §3.9): `c1` is extended unrotated, which gives
//!    the same words because the balanced lift commutes with negation.
//! 3. **ModDown**, fused with whatever else touches the output row (the automorphism of `c0`
//!    for rotations, the inverse NTT of `d0`/`d1` for relinearization), written straight into
//!    the result's storage.
//!
//! Scratch blocks come from a small pool held by the engine, so the hot path neither allocates
//! nor faults in fresh pages after the first call.

use parking_lot::Mutex;
use rayon::prelude::*;

use super::CpuEngine;
use crate::arith::Modulus;
use crate::error::CkksError;
use crate::kernels::{
    automorphism_index_map, automorphism_ntt_index_map, automorphism_value, modup_limb,
    mul_acc_limb, MixedRadix,
};
use crate::keys::{KeySwitchKey, RotationKey};
use crate::storage::Words;
use crate::values::{Ciphertext, ModulusBasis};

/// Coefficients per block of the inner product: a whole row at N = 16384 (the 256 KiB of
/// 128-bit sums stay in L2 while each digit pair streams its NTT rows and key rows; 64- and
/// 512-coefficient blocks and a per-coefficient loop over the digits measured slower).
const BLOCK: usize = 16384;

/// Reusable host vectors for the key-switch scratch blocks (never secret: they hold
/// ciphertext-derived words only). At most [`Scratch::KEEP`] vectors are kept.
#[derive(Debug, Default)]
pub(super) struct Scratch(Mutex<Vec<Vec<u64>>>);

impl Scratch {
    const KEEP: usize = 6;

    /// A vector of at least `len` words (contents unspecified; callers overwrite what they
    /// use): the smallest pooled one that is large enough, else the largest grown.
    pub(super) fn take(&self, len: usize) -> Vec<u64> {
        let mut pool = self.0.lock();
        let fit = pool
            .iter()
            .enumerate()
            .filter(|(_, v)| v.len() >= len)
            .min_by_key(|(_, v)| v.len())
            .map(|(i, _)| i);
        let pick = fit.or_else(|| {
            pool.iter()
                .enumerate()
                .max_by_key(|(_, v)| v.len())
                .map(|(i, _)| i)
        });
        let mut v = pick.map(|i| pool.swap_remove(i)).unwrap_or_default();
        drop(pool);
        if v.len() < len {
            v.resize(len, 0);
        }
        v
    }

    /// Returns a vector to the pool.
    pub(super) fn put(&self, v: Vec<u64>) {
        let mut pool = self.0.lock();
        if pool.len() < Self::KEEP {
            pool.push(v);
        }
    }
}

/// One live digit at a level: level-0 digit index, live prime ids, mixed-radix constants.
struct Digit {
    k: usize,
    live: Vec<usize>,
    radix: MixedRadix,
}

/// The extended digits of one polynomial: `[QP row, digit, N]` NTT rows in a pooled vector.
pub(super) struct Extended {
    words: Vec<u64>,
    qp_ids: Vec<usize>,
    digits: Vec<Digit>,
    q_rows: usize,
}

/// The accumulators of one key switch: `[component, QP row, N]`, coefficient domain,
/// canonical, in a pooled vector (return it with [`CpuEngine::release`]).
pub(super) struct Accumulators {
    pub(super) words: Vec<u64>,
    /// Number of QP rows per component.
    pub(super) rows: usize,
    /// Number of Q rows (the first rows of each component).
    pub(super) q_rows: usize,
}

impl CpuEngine {
    fn live_digits(&self, level: usize) -> Vec<Digit> {
        let ctx = &self.ctx;
        ctx.digits
            .iter()
            .enumerate()
            .filter_map(|(k, d)| {
                let live: Vec<usize> = d.iter().copied().filter(|&i| i >= level).collect();
                if live.is_empty() {
                    None
                } else if live.len() == d.len() {
                    Some(Digit {
                        k,
                        live,
                        radix: ctx.digit_radix[k].clone(),
                    })
                } else {
                    let moduli: Vec<_> = live.iter().map(|&i| *ctx.modulus(i)).collect();
                    Some(Digit {
                        k,
                        live,
                        radix: MixedRadix::new(&moduli),
                    })
                }
            })
            .collect()
    }

    /// Phase 1: ModUp + forward NTT of the coefficient-domain polynomial `c` (rows = Q ids from
    /// `level`) on every QP row, one task per (row, digit).
    pub(super) fn mod_up(&self, c: &[u64], level: usize) -> Extended {
        let ctx = &self.ctx;
        let n = ctx.n;
        let qp_ids = self.ids(level, ModulusBasis::QP);
        let digits = self.live_digits(level);
        let nd = digits.len();
        let len = qp_ids.len() * nd * n;
        let mut words = self.scratch.take(len);
        words[..len]
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(x, dst)| {
                let (id, digit) = (qp_ids[x / nd], &digits[x % nd]);
                let t = &ctx.tables[id];
                let row = |i: usize| &c[(i - level) * n..(i - level + 1) * n];
                if digit.live.contains(&id) {
                    t.forward_from(row(id), dst);
                } else {
                    let src: Vec<&[u64]> = digit.live.iter().map(|&i| row(i)).collect();
                    modup_limb(&digit.radix, &src, t.modulus(), dst);
                    t.forward(dst);
                }
            });
        Extended {
            words,
            qp_ids,
            digits,
            q_rows: ctx.nq - level,
        }
    }

    /// Phase 2: inner product of the extended digits with `ksk` and inverse NTT, one task per
    /// (component, QP row). With `gather`, digit coefficient `i` is read at `gather[i]` (the
    /// NTT-domain automorphism applied on the fly: hoisted rotations).
    pub(super) fn accumulate(
        &self,
        x: &Extended,
        ksk: &KeySwitchKey,
        gather: Option<&[u32]>,
    ) -> Accumulators {
        let ctx = &self.ctx;
        let n = ctx.n;
        let rows = x.qp_ids.len();
        let nd = x.digits.len();
        let mut acc = self.scratch.take(2 * rows * n);
        acc[..2 * rows * n]
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(task, out)| {
                let (comp, r) = (task / rows, task % rows);
                let id = x.qp_ids[r];
                let t = &ctx.tables[id];
                let m = t.modulus();
                let ext_r = &x.words[r * nd * n..(r + 1) * nd * n];
                let q = u128::from(m.value());
                if (q - 1) * (q - 1) <= u128::MAX / nd.max(1) as u128 {
                    inner_product_wide(m, ext_r, &x.digits, ksk, comp, id, gather, out);
                } else {
                    // one reduction per digit: the same residue as the lazy sum
                    out.fill(0);
                    let mut e = vec![0u64; if gather.is_some() { n } else { 0 }];
                    for (d, digit) in x.digits.iter().enumerate() {
                        let row = &ext_r[d * n..(d + 1) * n];
                        let row = match gather {
                            Some(map) => {
                                for (o, &k) in e.iter_mut().zip(map) {
                                    *o = row[k as usize];
                                }
                                &e[..]
                            }
                            None => row,
                        };
                        mul_acc_limb(m, out, row, ksk.row(digit.k, comp, id));
                    }
                }
                t.inverse(out);
            });
        Accumulators {
            words: acc,
            rows,
            q_rows: x.q_rows,
        }
    }

    /// Phases 1 and 2 of the key switch of the coefficient-domain polynomial `c` (rows = Q ids
    /// from `level`) with `ksk`: the QP accumulators before ModDown.
    pub(super) fn key_switch_accumulate(
        &self,
        c: &[u64],
        level: usize,
        ksk: &KeySwitchKey,
    ) -> Accumulators {
        let x = self.mod_up(c, level);
        let acc = self.accumulate(&x, ksk, None);
        self.scratch.put(x.words);
        acc
    }

    /// `σ_g(ct)` switched back to the engine secret with `key`, from the extended digits of the
    /// *unrotated* `c1`: the automorphism is a gather in the inner product (NTT domain) and in
    /// the ModDown pass (`c0`, coefficient domain). The balanced lift commutes with negation,
    /// so the words equal those of ModUp applied to `σ_g(c1)` (spec §3.9 hoisting).
    pub(super) fn galois_from_extended(
        &self,
        ct: &Ciphertext,
        x: &Extended,
        key: &RotationKey,
    ) -> Result<Ciphertext, CkksError> {
        let n = self.ctx.n;
        let rows = ct.num_limbs();
        let mut out = Words::alloc(&self.memory, ct.location(), 2 * rows * n)?;
        let g = key.galois_element;
        let ntt_map = automorphism_ntt_index_map(self.ctx.config.log_n, g);
        let map = automorphism_index_map(n, g);
        let acc = self.accumulate(x, &key.ksk, Some(&ntt_map));
        let src = ct.words.as_slice();
        out.as_mut_slice()
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(task, dst)| {
                let (comp, j) = (task / rows, task % rows);
                if comp == 0 {
                    let m = *self.ctx.modulus(ct.prime_ids[j]);
                    let c0 = &src[j * n..(j + 1) * n];
                    self.moddown_row(&acc, ct.level, 0, j, |i, v| {
                        dst[i] = m.add(automorphism_value(&m, c0, map[i]), v);
                    });
                } else {
                    self.moddown_row(&acc, ct.level, 1, j, |i, v| dst[i] = v);
                }
            });
        self.release(acc);
        Ok(self.wrap_ct(ct, out, 2))
    }

    /// `σ_g(ct)` key-switched back to the engine secret (`c0' = σ(c0) + corr0`, `c1' = corr1`)
    /// for a validated ciphertext and key.
    pub(super) fn apply_galois(
        &self,
        ct: &Ciphertext,
        key: &RotationKey,
    ) -> Result<Ciphertext, CkksError> {
        let x = self.mod_up_c1(ct);
        let out = self.galois_from_extended(ct, &x, key);
        self.scratch.put(x.words);
        out
    }

    /// [`CpuEngine::mod_up`] of component 1 of a 2-component ciphertext.
    fn mod_up_c1(&self, ct: &Ciphertext) -> Extended {
        let (n, rows) = (self.ctx.n, ct.num_limbs());
        self.mod_up(&ct.words.as_slice()[rows * n..2 * rows * n], ct.level)
    }

    /// Rotations (or conjugations) of one validated ciphertext by several keys, sharing one
    /// ModUp + NTT of `c1`; `None` stands for the identity (a copy of `ct`).
    pub(super) fn galois_many(
        &self,
        ct: &Ciphertext,
        keys: &[Option<&RotationKey>],
    ) -> Result<Vec<Ciphertext>, CkksError> {
        let x = keys.iter().any(Option::is_some).then(|| self.mod_up_c1(ct));
        let out = keys
            .iter()
            .map(|key| match (key, &x) {
                (Some(key), Some(x)) => self.galois_from_extended(ct, x, key),
                _ => self.make_ct(ct, ct.words.as_slice(), 2),
            })
            .collect();
        if let Some(x) = x {
            self.scratch.put(x.words);
        }
        out
    }

    /// Phase 3 for one output row: ModDown of accumulator component `comp`, Q row `j`
    /// (prime id `level + j`), handing each result coefficient to `f(index, value)`.
    pub(super) fn moddown_row<F>(
        &self,
        acc: &Accumulators,
        level: usize,
        comp: usize,
        j: usize,
        f: F,
    ) where
        F: FnMut(usize, u64),
    {
        let n = self.ctx.n;
        let base = comp * acc.rows * n;
        let src = &acc.words[base + j * n..base + (j + 1) * n];
        let p_rows: Vec<&[u64]> = acc.words[base + acc.q_rows * n..base + acc.rows * n]
            .chunks(n)
            .collect();
        let id = level + j;
        crate::kernels::moddown_each(
            self.ctx.modulus(id),
            &self.ctx.p_radix,
            &p_rows,
            self.ctx.p_inv_mod_q[id],
            src,
            f,
        );
    }

    /// Returns the accumulators' vector to the scratch pool.
    pub(super) fn release(&self, acc: Accumulators) {
        self.scratch.put(acc.words);
    }
}

/// `out[i] = Σ_d ext[d][g(i)]·key_d[i] mod q` (`g` = `gather` or the identity) with 128-bit
/// sums over blocks of [`BLOCK`] coefficients (the caller has checked that the sums cannot
/// overflow).
#[allow(clippy::too_many_arguments)]
fn inner_product_wide(
    m: &Modulus,
    ext_r: &[u64],
    digits: &[Digit],
    ksk: &KeySwitchKey,
    comp: usize,
    id: usize,
    gather: Option<&[u32]>,
    out: &mut [u64],
) {
    let n = out.len();
    let keys: Vec<&[u64]> = digits.iter().map(|d| ksk.row(d.k, comp, id)).collect();
    let mut s = vec![0u128; BLOCK.min(n)];
    for (b, ob) in out.chunks_mut(BLOCK).enumerate() {
        let lo = b * BLOCK;
        let hi = lo + ob.len();
        if b > 0 {
            s.fill(0); // the first block starts from the zeroed allocation
        }
        // digits two at a time: one read-modify-write of the block sums per pair
        let mut d = 0;
        while d + 1 < keys.len() {
            let (e0, e1) = (&ext_r[d * n..(d + 1) * n], &ext_r[(d + 1) * n..(d + 2) * n]);
            let (k0, k1) = (&keys[d][lo..hi], &keys[d + 1][lo..hi]);
            match gather {
                None => {
                    let it = s.iter_mut().zip(&e0[lo..hi]).zip(&e1[lo..hi]);
                    for (((s, &x0), &x1), (&y0, &y1)) in it.zip(k0.iter().zip(k1)) {
                        *s += u128::from(x0) * u128::from(y0) + u128::from(x1) * u128::from(y1);
                    }
                }
                Some(map) => {
                    let it = s.iter_mut().zip(&map[lo..hi]);
                    for ((s, &k), (&y0, &y1)) in it.zip(k0.iter().zip(k1)) {
                        let k = k as usize;
                        *s +=
                            u128::from(e0[k]) * u128::from(y0) + u128::from(e1[k]) * u128::from(y1);
                    }
                }
            }
            d += 2;
        }
        if d < keys.len() {
            let e = &ext_r[d * n..(d + 1) * n];
            let key = &keys[d][lo..hi];
            match gather {
                None => {
                    for ((s, &x), &y) in s.iter_mut().zip(&e[lo..hi]).zip(key) {
                        *s += u128::from(x) * u128::from(y);
                    }
                }
                Some(map) => {
                    for ((s, &k), &y) in s.iter_mut().zip(&map[lo..hi]).zip(key) {
                        *s += u128::from(e[k as usize]) * u128::from(y);
                    }
                }
            }
        }
        for (o, &s) in ob.iter_mut().zip(&s) {
            *o = m.reduce_wide(s);
        }
    }
}
