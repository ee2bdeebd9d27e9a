//! Randomness: a ChaCha20 CSPRNG and the samplers of spec §1.6 (ternary secret, discrete
//! Gaussian errors, uniform residues, ternary ephemeral v).
//!
//! The secret and public keys draw sequentially from the engine's [`Csprng`]. Encryption is
//! counter-based (decision 0520): each encryption draws one 32-byte key from the engine's
//! stream, and every coefficient of `v`, `e0` and `e1` is a pure function of (key, stream id,
//! index), so the CUDA engine's device sampler (`kernels/encode.cu`) produces the same words
//! with one thread per ChaCha20 block. See [`EncryptionSamples::from_key`].
//!
//! Key-switching keys (rotation, conjugation, relinearization) are counter-based too
//! (decision 0531): the engine draws one 32-byte key-generation seed when it is made, and the
//! words of the key of Galois element `g` for secret key `id` are a pure function of (seed,
//! `id`, `g`): [`switch_key_sampling_key`], then [`uniform_from_words`] and
//! [`gaussian_from_word`] on its streams. A key made again (after a key cache let it go, or by
//! two racing threads) is the same key word for word, whatever keys were made before it.

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

/// The two-sided CDT of the discrete Gaussian over [−31, 31]: `cdt[k] = P(X ≤ k − 31)`
/// scaled to 2^64 (last entry `u64::MAX`). [`Csprng::gaussian`] and the keyed encryption
/// samplers count the entries below a uniform 64-bit word.
#[must_use]
pub fn cdt_table(sigma: f64) -> Vec<u64> {
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
    cdt
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
        Self {
            rng,
            cdt: cdt_table(sigma),
        }
    }

    /// A raw 64-bit word.
    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// The next 32-byte encryption key (one per encryption; decision 0520).
    pub fn encryption_key(&mut self) -> [u8; 32] {
        let mut key = [0u8; 32];
        self.rng.fill_bytes(&mut key);
        key
    }

    /// The two-sided CDT of [`Csprng::gaussian`]: 63 thresholds scaled to 2^64, the last one
    /// `u64::MAX`; a word `u` samples `(#{c < u}) − 31`.
    #[must_use]
    pub fn cdt(&self) -> &[u64] {
        &self.cdt
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

/// ChaCha20 stream id of the ternary ephemeral `v` (decision 0520).
pub const STREAM_V: u64 = 0;
/// ChaCha20 stream id of the error `e0`.
pub const STREAM_E0: u64 = 1;
/// ChaCha20 stream id of the error `e1`.
pub const STREAM_E1: u64 = 2;
/// Stream id `STREAM_V_RETRY + k` holds the retry words of `v[k]` (used with probability
/// 2^-64 per coefficient, when its first word is `u64::MAX`).
pub const STREAM_V_RETRY: u64 = 1 << 32;

/// Word `index` (64-bit, little-endian pairs of 32-bit ChaCha20 words) of stream `stream`
/// under `key`: block `index / 8`, words `2·(index % 8)` (low) and `+1` (high).
#[must_use]
pub fn keyed_word(key: &[u8; 32], stream: u64, index: u64) -> u64 {
    let mut r = ChaCha20Rng::from_seed(*key);
    r.set_stream(stream);
    r.set_word_pos(u128::from(index) * 2);
    r.next_u64()
}

/// `n` consecutive 64-bit words of `stream` from word 0.
fn keyed_words(key: &[u8; 32], stream: u64, n: usize) -> Vec<u64> {
    let mut r = ChaCha20Rng::from_seed(*key);
    r.set_stream(stream);
    (0..n).map(|_| r.next_u64()).collect()
}

/// Exact uniform ternary value of coefficient `index` from its first word `u`: `u mod 3 − 1`
/// when `u < 2^64 − 1` (a multiple of 3 values, so exactly uniform); otherwise the words of
/// stream `STREAM_V_RETRY + index` in order, until one is below `2^64 − 1`.
#[must_use]
pub fn ternary_from_word(key: &[u8; 32], index: u64, u: u64) -> i64 {
    let mut u = u;
    let mut j = 0u64;
    while u == u64::MAX {
        u = keyed_word(key, STREAM_V_RETRY.wrapping_add(index), j);
        j += 1;
    }
    (u % 3) as i64 - 1
}

/// CDT sample of a 64-bit word: the number of thresholds below `u`, minus 31.
#[must_use]
pub fn gaussian_from_word(cdt: &[u64], u: u64) -> i64 {
    cdt.partition_point(|&c| c < u) as i64 - GAUSSIAN_TAIL
}

/// Stream id (under a key-switching key's sampling key) of the Gaussian error of digit `d`:
/// `KEYGEN_STREAM_E + d`. The uniform part `a` of digit `d`, QP row `r` is stream
/// `d · rows + r` (below `2^32`).
pub const KEYGEN_STREAM_E: u64 = 1 << 32;

/// Uniform residue in `[0, q)` from two 64-bit words: `(hi · 2^64 + lo) mod q`
/// ([`Modulus::reduce_wide`]). The simple modular method with 64 extra bits (NIST SP 800-90A
/// Rev. 1, A.5.3): its distance from uniform is below `q / 2^128 < 2^-68`, and no coefficient
/// needs a retry, so each is a pure function of its two words (one ChaCha20 block gives four
/// coefficients on the device).
#[must_use]
pub fn uniform_from_words(m: &Modulus, lo: u64, hi: u64) -> u64 {
    m.reduce_wide(u128::from(hi) << 64 | u128::from(lo))
}

/// The 32-byte sampling key of one key-switching key (decision 0531): words 0-3 of stream
/// `secret_key_id` under the engine's key-generation seed give a per-secret-key key, whose
/// stream `galois_element` (0 for the relinearization key; Galois elements are odd) gives this
/// key's. Two secret keys never share samples, and neither do two keys of one secret key.
#[must_use]
pub fn switch_key_sampling_key(
    keygen_seed: &[u8; 32],
    secret_key_id: u64,
    galois_element: u64,
) -> zeroize::Zeroizing<[u8; 32]> {
    let derive = |key: &[u8; 32], stream: u64| {
        let mut r = ChaCha20Rng::from_seed(*key);
        r.set_stream(stream);
        let mut out = zeroize::Zeroizing::new([0u8; 32]);
        r.fill_bytes(out.as_mut());
        out
    };
    let per_secret = derive(keygen_seed, secret_key_id);
    derive(&per_secret, galois_element)
}

/// Row `r` of digit `d`'s uniform part `a` of a key-switching key (`n` residues mod `m`, the
/// NTT-domain words as stored): coefficient `k` from words `2k` (low) and `2k + 1` (high) of
/// stream `d · rows + r` under `key` ([`uniform_from_words`]).
#[must_use]
pub fn switch_key_uniform_row(key: &[u8; 32], stream: u64, m: &Modulus, n: usize) -> Vec<u64> {
    keyed_words(key, stream, 2 * n)
        .chunks_exact(2)
        .map(|w| uniform_from_words(m, w[0], w[1]))
        .collect()
}

/// Digit `d`'s Gaussian error of a key-switching key: coefficient `k` from word `k` of stream
/// [`KEYGEN_STREAM_E`]` + d` under `key` ([`gaussian_from_word`]).
#[must_use]
pub fn switch_key_error(key: &[u8; 32], digit: u64, cdt: &[u64], n: usize) -> Vec<i64> {
    keyed_words(key, KEYGEN_STREAM_E.wrapping_add(digit), n)
        .into_iter()
        .map(|u| gaussian_from_word(cdt, u))
        .collect()
}

/// The samples of one public-key encryption: ternary `v`, Gaussian `e0`, `e1`.
#[derive(Debug)]
pub struct EncryptionSamples {
    /// Ternary ephemeral, stream [`STREAM_V`].
    pub v: Vec<i64>,
    /// Error of component 0, stream [`STREAM_E0`].
    pub e0: Vec<i64>,
    /// Error of component 1, stream [`STREAM_E1`].
    pub e1: Vec<i64>,
}

impl EncryptionSamples {
    /// The samples of `n` coefficients under an encryption key: coefficient `k` of each
    /// polynomial uses word `k` of its stream (decision 0520).
    #[must_use]
    pub fn from_key(key: &[u8; 32], cdt: &[u64], n: usize) -> Self {
        let (v, (e0, e1)) = rayon::join(
            || {
                keyed_words(key, STREAM_V, n)
                    .into_iter()
                    .enumerate()
                    .map(|(k, u)| ternary_from_word(key, k as u64, u))
                    .collect()
            },
            || {
                rayon::join(
                    || {
                        keyed_words(key, STREAM_E0, n)
                            .into_iter()
                            .map(|u| gaussian_from_word(cdt, u))
                            .collect()
                    },
                    || {
                        keyed_words(key, STREAM_E1, n)
                            .into_iter()
                            .map(|u| gaussian_from_word(cdt, u))
                            .collect()
                    },
                )
            },
        );
        Self { v, e0, e1 }
    }
}

impl Drop for EncryptionSamples {
    fn drop(&mut self) {
        use zeroize::Zeroize;
        self.v.zeroize();
        self.e0.zeroize();
        self.e1.zeroize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_ids_near_the_top_wrap_instead_of_panicking() {
        // Public entry points with any index or digit: the stream id wraps (as rand_chacha's
        // 64-bit stream id does), no overflow panic in debug builds.
        let key = [1u8; 32];
        let _ = ternary_from_word(&key, u64::MAX, u64::MAX);
        let cdt = cdt_table(3.19);
        assert_ne!(
            switch_key_error(&key, u64::MAX, &cdt, 64),
            switch_key_error(&key, 0, &cdt, 64)
        );
    }

    #[test]
    fn uniform_from_words_is_the_128_bit_residue() {
        // 2^64 ≡ 1 and 2^128 ≡ 1 (mod 17), since 2^8 ≡ 1.
        let m17 = Modulus::new(17).expect("modulus");
        assert_eq!(uniform_from_words(&m17, 5, 0), 5);
        assert_eq!(uniform_from_words(&m17, 0, 1), 1);
        assert_eq!(uniform_from_words(&m17, u64::MAX, u64::MAX), 0);
        let q = (1u64 << 60) - 93; // any modulus: the map is plain arithmetic
        let m = Modulus::new(q).expect("modulus");
        for (lo, hi) in [(7, 3), (u64::MAX, u64::MAX), (0, q), (q - 1, u64::MAX - 5)] {
            assert_eq!(
                uniform_from_words(&m, lo, hi),
                ((u128::from(hi) << 64 | u128::from(lo)) % u128::from(q)) as u64
            );
        }
    }

    #[test]
    fn switch_key_samples_are_the_documented_streams() {
        let seed = [3u8; 32];
        let key = switch_key_sampling_key(&seed, 0xfeed, 25);
        // The derivation: words 0-3 of stream `id` under the seed, little-endian, then words
        // 0-3 of stream `g` under that.
        let le = |k: &[u8; 32], stream: u64| {
            let mut out = [0u8; 32];
            for (w, chunk) in out.chunks_exact_mut(8).enumerate() {
                chunk.copy_from_slice(&keyed_word(k, stream, w as u64).to_le_bytes());
            }
            out
        };
        assert_eq!(*key, le(&le(&seed, 0xfeed), 25));
        // Distinct per secret key, per element, per seed; the relinearization key is g = 0.
        for other in [
            switch_key_sampling_key(&seed, 0xfeee, 25),
            switch_key_sampling_key(&seed, 0xfeed, 125),
            switch_key_sampling_key(&seed, 0xfeed, 0),
            switch_key_sampling_key(&[4u8; 32], 0xfeed, 25),
        ] {
            assert_ne!(*other, *key);
        }
        // Row words: coefficient k from words 2k, 2k + 1 of stream d * rows + r.
        let q = 1_073_750_017u64;
        let m = Modulus::new(q).expect("modulus");
        let row = switch_key_uniform_row(&key, 11, &m, 4096);
        for k in [0usize, 1, 7, 4095] {
            let (lo, hi) = (
                keyed_word(&key, 11, 2 * k as u64),
                keyed_word(&key, 11, 2 * k as u64 + 1),
            );
            assert_eq!(row[k], uniform_from_words(&m, lo, hi), "coefficient {k}");
        }
        assert!(row.iter().all(|&x| x < q));
        let mean = row.iter().map(|&x| x as f64).sum::<f64>() / row.len() as f64;
        assert!((mean / q as f64 - 0.5).abs() < 0.02, "mean {mean}");
        // Errors: coefficient k from word k of stream KEYGEN_STREAM_E + d.
        let cdt = cdt_table(3.19);
        let e = switch_key_error(&key, 2, &cdt, 4096);
        for k in [0usize, 5, 4095] {
            let u = keyed_word(&key, KEYGEN_STREAM_E + 2, k as u64);
            assert_eq!(e[k], gaussian_from_word(&cdt, u));
        }
        let var = e.iter().map(|&x| (x * x) as f64).sum::<f64>() / e.len() as f64;
        assert!((var.sqrt() - 3.19).abs() < 0.2, "sigma {}", var.sqrt());
        assert_ne!(e, switch_key_error(&key, 3, &cdt, 4096));
    }

    /// RFC 8439 section 2.3.2: key 00..1f, nonce 00:00:00:09:00:00:00:4a:00:00:00:00, block
    /// counter 1. In ChaCha20Rng's layout (64-bit counter in words 12-13, 64-bit stream in
    /// words 14-15) the nonce's first word is the counter's high half.
    #[test]
    fn keyed_stream_matches_the_rfc_8439_block() {
        let key: [u8; 32] = std::array::from_fn(|i| i as u8);
        let mut r = ChaCha20Rng::from_seed(key);
        r.set_stream(0x4a00_0000);
        r.set_word_pos(((0x0900_0000u128 << 32) | 1) * 16);
        let words: Vec<u32> = (0..16).map(|_| r.next_u32()).collect();
        let want: [u32; 16] = [
            0xe4e7_f110,
            0x1559_3bd1,
            0x1fdd_0f50,
            0xc471_20a3,
            0xc7f4_d1c7,
            0x0368_c033,
            0x9aaa_2204,
            0x4e6c_d4c3,
            0x4664_82d2,
            0x09aa_9f07,
            0x05d7_c214,
            0xa202_8bd9,
            0xd19c_12b5,
            0xb94e_16de,
            0xe883_d0cb,
            0x4e3c_50a2,
        ];
        assert_eq!(words, want);
        // keyed_word pairs words low-first.
        let w = keyed_word(&key, 7, 11);
        let mut r = ChaCha20Rng::from_seed(key);
        r.set_stream(7);
        r.set_word_pos(16 + 6);
        let lo = u64::from(r.next_u32());
        let hi = u64::from(r.next_u32());
        assert_eq!(w, lo | (hi << 32));
    }

    #[test]
    fn encryption_samples_are_a_function_of_key_stream_and_index() {
        let r = Csprng::from_seed([3; 32], 3.19);
        let key = [9u8; 32];
        let a = EncryptionSamples::from_key(&key, r.cdt(), 4096);
        let b = EncryptionSamples::from_key(&key, r.cdt(), 64);
        assert_eq!(&a.v[..64], &b.v[..]);
        assert_eq!(&a.e0[..64], &b.e0[..]);
        for k in [0u64, 1, 7, 8, 1000, 4095] {
            let i = k as usize;
            assert_eq!(
                a.v[i],
                ternary_from_word(&key, k, keyed_word(&key, STREAM_V, k))
            );
            assert_eq!(
                a.e1[i],
                gaussian_from_word(r.cdt(), keyed_word(&key, STREAM_E1, k))
            );
        }
        assert_ne!(a.e0, a.e1);
        let c = EncryptionSamples::from_key(&[10u8; 32], r.cdt(), 64);
        assert_ne!(c.e0, b.e0);
        assert!(a.v.iter().all(|x| (-1..=1).contains(x)));
        assert!(a.e0.iter().all(|x| x.abs() <= GAUSSIAN_TAIL));
    }

    #[test]
    fn ternary_and_gaussian_word_maps_are_exact_at_the_edges() {
        let r = Csprng::from_seed([3; 32], 3.19);
        let key = [1u8; 32];
        assert_eq!(ternary_from_word(&key, 5, 0), -1);
        assert_eq!(ternary_from_word(&key, 5, 1), 0);
        assert_eq!(
            ternary_from_word(&key, 5, u64::MAX - 1),
            ((u64::MAX - 1) % 3) as i64 - 1
        );
        // The retry path: the first word of stream STREAM_V_RETRY + 5 decides.
        let retry = keyed_word(&key, STREAM_V_RETRY + 5, 0);
        assert_eq!(ternary_from_word(&key, 5, u64::MAX), (retry % 3) as i64 - 1);
        assert_eq!(gaussian_from_word(r.cdt(), 0), -GAUSSIAN_TAIL);
        // The top entries saturate at u64::MAX (the tail mass is below 2^-64), so the largest
        // word lands on the last threshold that is below it.
        let below = r.cdt().iter().filter(|&&c| c < u64::MAX).count() as i64;
        assert_eq!(gaussian_from_word(r.cdt(), u64::MAX), below - GAUSSIAN_TAIL);
        assert!((20..=GAUSSIAN_TAIL).contains(&(below - GAUSSIAN_TAIL)));
        let mid = gaussian_from_word(r.cdt(), 1 << 63);
        assert!(mid.abs() <= 1, "{mid}");
    }

    #[test]
    fn keyed_samples_have_the_right_moments() {
        let r = Csprng::from_seed([5; 32], 3.19);
        let s = EncryptionSamples::from_key(&[2; 32], r.cdt(), 1 << 17);
        let n = s.e0.len() as f64;
        let var = s.e0.iter().map(|&x| (x * x) as f64).sum::<f64>() / n;
        assert!((var.sqrt() - 3.19).abs() < 0.05, "sigma {}", var.sqrt());
        for v in [-1, 0, 1] {
            let c = s.v.iter().filter(|&&x| x == v).count() as f64 / n;
            assert!((c - 1.0 / 3.0).abs() < 0.01, "ternary {v}: {c}");
        }
    }

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
