//! The CPU engine: every public CKKS operation of the seed example, on values in any
//! host-accessible location (pageable, pinned, `sim:N`). Results are allocated at the location
//! of the (first) input. Every operation validates all its inputs before computing, so a typed
//! error leaves them untouched (they are borrowed immutably in any case).

use std::sync::Arc;

use fhelium_residency::ResidencyLocation;
use num_complex::Complex64;
use parking_lot::Mutex;
use rayon::prelude::*;
use zeroize::Zeroize;

use crate::context::Context;
use crate::error::CkksError;
use crate::kernels::{
    add_assign_limb, apply_automorphism_limb, automorphism_index_map, mul_acc_limb,
    mul_assign_limb, mul_scalar_limb, negate_limb, rescale_limb, sub_assign_limb,
};
use crate::keycache::{trace_evictions, traced_admission, CachedKey, KeyLru};
use crate::keys::{KeySwitchKey, PublicKey, RelinearizationKey, RotationKey, SecretKey};
use crate::params::{CkksConfig, Preset};
use crate::sampling::{self, Csprng, EncryptionSamples};
use crate::storage::Words;
use fhelium_cuda::Memory;

use crate::values::{
    prime_ids, Ciphertext, Domain, ModulusBasis, Plaintext, PlaintextRepresentation,
};

mod domains;
mod hoisted;
mod keyswitch;
mod serial;

/// The CKKS engine with the CPU backend.
#[derive(Debug)]
pub struct CpuEngine {
    ctx: Arc<Context>,
    rng: Mutex<Csprng>,
    secret_key: SecretKey,
    public_key: PublicKey,
    /// Seed of the counter-based key-switching key generation (decision 0531).
    keygen_seed: KeygenSeed,
    /// The Gaussian CDT of the key-switching keys' errors.
    keygen_cdt: Vec<u64>,
    /// Rotation and relinearization keys made on first use (`crate::keycache`).
    keys: Mutex<KeyLru<HostKey>>,
    /// One gate per key slot ever made: the thread that makes a key holds its gate, so threads
    /// asking for the same new key at once wait for that one instead of each making it (one
    /// small entry per distinct key).
    key_gates: Mutex<std::collections::HashMap<CachedKey, Arc<Mutex<()>>>>,
    location: ResidencyLocation,
    memory: Memory,
    /// Reused key-switch scratch blocks (see `engine/keyswitch.rs`).
    scratch: keyswitch::Scratch,
}

/// The seed of the counter-based key-switching key generation (decision 0531): zeroed on
/// drop, never printed.
struct KeygenSeed(zeroize::Zeroizing<[u8; 32]>);

impl std::fmt::Debug for KeygenSeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeygenSeed(<redacted>)")
    }
}

/// A key held by the CPU engine's key cache.
#[derive(Debug, Clone)]
enum HostKey {
    Rotation(Arc<RotationKey>),
    Relinearization(Arc<RelinearizationKey>),
}

impl HostKey {
    fn rotation(&self) -> Option<Arc<RotationKey>> {
        match self {
            Self::Rotation(k) => Some(Arc::clone(k)),
            Self::Relinearization(_) => None,
        }
    }

    fn relinearization(&self) -> Option<Arc<RelinearizationKey>> {
        match self {
            Self::Relinearization(k) => Some(Arc::clone(k)),
            Self::Rotation(_) => None,
        }
    }

    fn nbytes(&self) -> u64 {
        match self {
            Self::Rotation(k) => k.nbytes(),
            Self::Relinearization(k) => k.nbytes(),
        }
    }
}

pub(crate) fn valid_scale(op: &'static str, scale: f64) -> Result<f64, CkksError> {
    if scale.is_finite() && scale.is_normal() && scale > 0.0 {
        Ok(scale)
    } else {
        Err(CkksError::InvalidScale { op, scale })
    }
}

impl CpuEngine {
    /// An engine for a preset, seeded from the operating system; creates the secret and public
    /// keys.
    pub fn new(preset: Preset) -> Result<Self, CkksError> {
        Self::from_config(CkksConfig::from_preset(preset)?, None)
    }

    /// An engine for a preset with a deterministic ChaCha20 stream (reproducible tests).
    pub fn with_seed(preset: Preset, seed: [u8; 32]) -> Result<Self, CkksError> {
        Self::from_config(CkksConfig::from_preset(preset)?, Some(seed))
    }

    /// An engine for any validated configuration; `seed: None` seeds from the OS.
    pub fn from_config(config: CkksConfig, seed: Option<[u8; 32]>) -> Result<Self, CkksError> {
        Self::from_config_in(config, seed, Memory::host_only())
    }

    /// An engine whose values are allocated from `memory` (pageable, pinned and `sim:N`
    /// locations; budgets and fault injection of the memory layer apply). Keys and fresh
    /// encodings go to pageable host memory.
    pub fn from_config_in(
        config: CkksConfig,
        seed: Option<[u8; 32]>,
        memory: Memory,
    ) -> Result<Self, CkksError> {
        let sigma = config.sigma;
        let ctx = Arc::new(Context::new(config)?);
        let mut rng = match seed {
            Some(s) => Csprng::from_seed(s, sigma),
            None => Csprng::from_os(sigma),
        };
        let location = ResidencyLocation::PageableHost;
        let secret_key = Self::gen_secret_key(&ctx, &mut rng, &memory, location)?;
        let public_key = Self::gen_public_key(&ctx, &mut rng, &secret_key, &memory, location)?;
        let keygen_seed = KeygenSeed(zeroize::Zeroizing::new(rng.encryption_key()));
        let keygen_cdt = rng.cdt().to_vec();
        Ok(Self {
            keygen_seed,
            keygen_cdt,
            ctx,
            rng: Mutex::new(rng),
            secret_key,
            public_key,
            keys: Mutex::new(KeyLru::default()),
            key_gates: Mutex::new(std::collections::HashMap::new()),
            location,
            memory,
            scratch: keyswitch::Scratch::default(),
        })
    }

    // ----------------------------------------------------------------- accessors

    /// The parameters.
    #[must_use]
    pub fn config(&self) -> &CkksConfig {
        &self.ctx.config
    }

    /// The shared tables.
    #[must_use]
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The context id stamped on every value.
    #[must_use]
    pub fn context_id(&self) -> u64 {
        self.ctx.id
    }

    /// Ring degree N.
    #[must_use]
    pub fn n(&self) -> usize {
        self.ctx.n
    }

    /// Number of complex slots N/2.
    #[must_use]
    pub fn num_slots(&self) -> usize {
        self.ctx.n / 2
    }

    /// The last public level.
    #[must_use]
    pub fn max_level(&self) -> usize {
        self.ctx.config.max_level()
    }

    /// The memory layer results are allocated from.
    #[must_use]
    pub fn memory(&self) -> &Memory {
        &self.memory
    }

    /// The default scale `2^scale_bits`.
    #[must_use]
    pub fn default_scale(&self) -> f64 {
        self.ctx.config.default_scale()
    }

    /// The engine's secret key.
    #[must_use]
    pub fn secret_key(&self) -> &SecretKey {
        &self.secret_key
    }

    /// The engine's public key.
    #[must_use]
    pub fn public_key(&self) -> &PublicKey {
        &self.public_key
    }

    // ----------------------------------------------------------------- helpers

    fn n_(&self) -> usize {
        self.ctx.n
    }

    fn check_ctx(&self, op: &'static str, ctx: u64) -> Result<(), CkksError> {
        if ctx == self.ctx.id {
            Ok(())
        } else {
            Err(CkksError::ContextMismatch {
                op,
                expected: self.ctx.id,
                actual: ctx,
            })
        }
    }

    fn check_level(&self, op: &'static str, level: usize) -> Result<(), CkksError> {
        if level <= self.max_level() {
            Ok(())
        } else {
            Err(CkksError::InvalidLevel {
                op,
                level,
                current: level,
                max_level: self.max_level(),
            })
        }
    }

    fn check_ct(&self, op: &'static str, ct: &Ciphertext) -> Result<(), CkksError> {
        self.check_ctx(op, ct.context)?;
        ct.words.check_host(op)?;
        ct.words
            .check_rows_canonical(op, ct.n, &ct.prime_ids, |id| self.ctx.modulus(id).value())
    }

    fn check_pt(&self, op: &'static str, pt: &Plaintext) -> Result<(), CkksError> {
        self.check_ctx(op, pt.context)?;
        pt.words.check_host(op)
    }

    fn check_key(&self, op: &'static str, ksk: &KeySwitchKey) -> Result<(), CkksError> {
        if ksk.context != self.ctx.id {
            return Err(CkksError::WrongKey {
                op,
                reason: "key was made for another parameter set".into(),
            });
        }
        if ksk.key_id != self.secret_key.key_id {
            return Err(CkksError::WrongKey {
                op,
                reason: format!(
                    "key belongs to secret key {:016x}, engine secret key is {:016x}",
                    ksk.key_id, self.secret_key.key_id
                ),
            });
        }
        ksk.words.check_host(op)
    }

    fn check_secret(&self, op: &'static str, sk: &SecretKey) -> Result<(), CkksError> {
        if sk.context != self.ctx.id {
            return Err(CkksError::WrongKey {
                op,
                reason: "secret key was made for another parameter set".into(),
            });
        }
        sk.words.check_host(op)
    }

    fn ids(&self, level: usize, basis: ModulusBasis) -> Vec<usize> {
        prime_ids(level, basis, self.ctx.nq, self.ctx.np)
    }

    /// Runs `f(prime_id, row)` over every row of a `[component, limb, N]` buffer, in parallel.
    fn par_rows<F>(&self, words: &mut [u64], ids: &[usize], f: F)
    where
        F: Fn(usize, &mut [u64]) + Sync + Send,
    {
        let n = self.n_();
        let rows = ids.len();
        words
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(i, row)| f(ids[i % rows], row));
    }

    /// Runs `f(prime_id, src_row, dst_row)` over matching rows of two `[component, limb, N]`
    /// buffers, in parallel.
    fn par_rows_from<F>(&self, dst: &mut [u64], src: &[u64], ids: &[usize], f: F)
    where
        F: Fn(usize, &[u64], &mut [u64]) + Sync + Send,
    {
        let n = self.n_();
        let rows = ids.len();
        dst.par_chunks_mut(n)
            .zip(src.par_chunks(n))
            .enumerate()
            .for_each(|(i, (d, s))| f(ids[i % rows], s, d));
    }

    fn make_ct(
        &self,
        like: &Ciphertext,
        words: &[u64],
        components: usize,
    ) -> Result<Ciphertext, CkksError> {
        Ok(self.wrap_ct(
            like,
            Words::alloc_copy(&self.memory, like.location(), words)?,
            components,
        ))
    }

    fn wrap_ct(&self, like: &Ciphertext, words: Words, components: usize) -> Ciphertext {
        Ciphertext {
            words,
            context: self.ctx.id,
            n: self.n_(),
            level: like.level,
            scale: like.scale,
            domain: like.domain,
            basis: like.basis,
            components,
            prime_ids: like.prime_ids.clone(),
        }
    }

    fn lift_signed(&self, id: usize, coeffs: &[i64], out: &mut [u64]) {
        let m = self.ctx.modulus(id);
        for (o, &c) in out.iter_mut().zip(coeffs) {
            *o = m.from_i64(c);
        }
    }

    // ----------------------------------------------------------------- keys

    fn gen_secret_key(
        ctx: &Context,
        rng: &mut Csprng,
        memory: &Memory,
        location: ResidencyLocation,
    ) -> Result<SecretKey, CkksError> {
        let n = ctx.n;
        let mut s = rng.ternary(n);
        let rows = ctx.nq + ctx.np;
        let mut words = match Words::alloc(memory, location, rows * n) {
            Ok(w) => w,
            Err(e) => {
                s.zeroize();
                return Err(e);
            }
        };
        words
            .as_mut_slice()
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(id, row)| {
                let m = ctx.modulus(id);
                for (o, &c) in row.iter_mut().zip(&s) {
                    *o = m.from_i64(c);
                }
                ctx.tables[id].forward(row);
            });
        s.zeroize();
        Ok(SecretKey {
            words,
            context: ctx.id,
            key_id: rng.next_u64(),
            n,
        })
    }

    fn gen_public_key(
        ctx: &Context,
        rng: &mut Csprng,
        sk: &SecretKey,
        memory: &Memory,
        location: ResidencyLocation,
    ) -> Result<PublicKey, CkksError> {
        let n = ctx.n;
        let nq = ctx.nq;
        let mut words = vec![0u64; 2 * nq * n];
        let e = rng.gaussian(n);
        let (k0, k1) = words.split_at_mut(nq * n);
        for (id, a) in k1.chunks_mut(n).enumerate() {
            rng.fill_uniform(ctx.modulus(id), a);
        }
        k0.par_chunks_mut(n)
            .zip(k1.par_chunks(n))
            .enumerate()
            .for_each(|(id, (b, a))| {
                let m = ctx.modulus(id);
                for (o, &c) in b.iter_mut().zip(&e) {
                    *o = m.from_i64(c);
                }
                ctx.tables[id].forward(b);
                for ((o, &ai), &si) in b.iter_mut().zip(a).zip(sk.row(id)) {
                    *o = m.sub(*o, m.mul(ai, si));
                }
            });
        Ok(PublicKey {
            words: Words::alloc_copy(memory, location, &words)?,
            context: ctx.id,
            key_id: sk.key_id,
            n,
        })
    }

    /// Key-switching key from `s_src` (NTT rows over every QP prime) to `sk` (spec §3.7).
    fn gen_key_switch_key(
        &self,
        sk: &SecretKey,
        s_src: &[u64],
        galois_element: u64,
    ) -> Result<KeySwitchKey, CkksError> {
        let ctx = &self.ctx;
        let n = ctx.n;
        let rows = ctx.nq + ctx.np;
        let digits = ctx.digits.len();
        let mut words = vec![0u64; digits * 2 * rows * n];
        // Counter-based (decision 0531): every word is a function of (seed, secret key,
        // Galois element), whatever was made before.
        let key = sampling::switch_key_sampling_key(&self.keygen_seed.0, sk.key_id, galois_element);
        let mut errors: Vec<Vec<i64>> = (0..digits as u64)
            .into_par_iter()
            .map(|k| sampling::switch_key_error(&key, k, &self.keygen_cdt, n))
            .collect();
        words
            .par_chunks_mut(rows * n)
            .enumerate()
            .filter(|(half, _)| half % 2 == 1)
            .for_each(|(half, a)| {
                let k = half / 2;
                a.par_chunks_mut(n).enumerate().for_each(|(id, row)| {
                    let stream = (k * rows + id) as u64;
                    let m = ctx.modulus(id);
                    row.copy_from_slice(&sampling::switch_key_uniform_row(&key, stream, m, n));
                });
            });
        words
            .par_chunks_mut(2 * rows * n)
            .enumerate()
            .for_each(|(k, slice)| {
                let (b, a) = slice.split_at_mut(rows * n);
                b.par_chunks_mut(n)
                    .zip(a.par_chunks(n))
                    .enumerate()
                    .for_each(|(id, (b, a))| {
                        let m = ctx.modulus(id);
                        for (o, &c) in b.iter_mut().zip(&errors[k]) {
                            *o = m.from_i64(c);
                        }
                        ctx.tables[id].forward(b);
                        for ((o, &ai), &si) in b.iter_mut().zip(a).zip(sk.row(id)) {
                            *o = m.sub(*o, m.mul(ai, si));
                        }
                        if ctx.digits[k].contains(&id) {
                            let p = ctx.p_mod_q[id];
                            let ps = m.shoup(p);
                            for (o, &x) in b.iter_mut().zip(&s_src[id * n..(id + 1) * n]) {
                                *o = m.add(*o, m.mul_shoup(x, p, ps));
                            }
                        }
                    });
            });
        errors.zeroize();
        Ok(KeySwitchKey {
            words: Words::alloc_copy(&self.memory, self.location, &words)?,
            context: ctx.id,
            key_id: sk.key_id,
            n,
            digits,
            rows,
        })
    }

    /// σ_g(s) in NTT form on every QP row.
    fn automorphed_secret(&self, sk: &SecretKey, g: u64) -> Vec<u64> {
        let n = self.n_();
        let map = automorphism_index_map(n, g);
        let mut out = vec![0u64; sk.words.len()];
        out.par_chunks_mut(n).enumerate().for_each(|(id, row)| {
            let mut tmp = sk.row(id).to_vec();
            let t = &self.ctx.tables[id];
            t.inverse(&mut tmp);
            apply_automorphism_limb(t.modulus(), &map, &tmp, row);
            tmp.zeroize();
            t.forward(row);
        });
        out
    }

    /// The canonical step in `[-N/4, N/4)` and its Galois element `3^step mod 2N`.
    #[must_use]
    pub fn galois_element_for_step(&self, step: i64) -> (i64, u64) {
        let s = self.num_slots() as i64;
        // Reduced first, so that no step (i64::MAX, i64::MIN) overflows.
        let canonical = (step.rem_euclid(s) + s / 2).rem_euclid(s) - s / 2;
        let two_n = 2 * self.n_() as u64;
        let e = canonical.rem_euclid(s) as u64;
        let mut g = 1u64;
        let mut base = self.ctx.config.galois_generator % two_n;
        let mut x = e;
        while x > 0 {
            if x & 1 == 1 {
                g = g * base % two_n;
            }
            base = base * base % two_n;
            x >>= 1;
        }
        (canonical, g)
    }

    /// A rotation key for `step` slots (`roll(m, step)`), for the given secret key.
    #[tracing::instrument(
        name = "ckks.create_rotation_key",
        level = "debug",
        skip_all,
        fields(location = "host", step = step),
        err(level = "debug")
    )]
    pub fn create_rotation_key(&self, step: i64, sk: &SecretKey) -> Result<RotationKey, CkksError> {
        const OP: &str = "create_rotation_key";
        self.check_secret(OP, sk)?;
        let (canonical, g) = self.galois_element_for_step(step);
        if canonical == 0 {
            return Err(CkksError::InvalidRotation {
                op: OP,
                reason: format!("step {step} is the identity"),
            });
        }
        let s_src = self.automorphed_secret(sk, g);
        let ksk = self.gen_key_switch_key(sk, &s_src, g)?;
        Ok(RotationKey {
            ksk,
            step: Some(canonical),
            galois_element: g,
        })
    }

    /// The conjugation key (g = 2N − 1).
    #[tracing::instrument(
        name = "ckks.create_conjugation_key",
        level = "debug",
        skip_all,
        fields(location = "host"),
        err(level = "debug")
    )]
    pub fn create_conjugation_key(&self, sk: &SecretKey) -> Result<RotationKey, CkksError> {
        self.check_secret("create_conjugation_key", sk)?;
        let g = 2 * self.n_() as u64 - 1;
        let s_src = self.automorphed_secret(sk, g);
        let ksk = self.gen_key_switch_key(sk, &s_src, g)?;
        Ok(RotationKey {
            ksk,
            step: None,
            galois_element: g,
        })
    }

    /// A relinearization key (`s²` → `s`).
    #[tracing::instrument(
        name = "ckks.create_relinearization_key",
        level = "debug",
        skip_all,
        fields(location = "host"),
        err(level = "debug")
    )]
    pub fn create_relinearization_key(
        &self,
        sk: &SecretKey,
    ) -> Result<RelinearizationKey, CkksError> {
        self.check_secret("create_relinearization_key", sk)?;
        let n = self.n_();
        let mut s2 = sk.words.as_slice().to_vec();
        s2.par_chunks_mut(n).enumerate().for_each(|(id, row)| {
            let m = self.ctx.modulus(id);
            for x in row.iter_mut() {
                *x = m.mul(*x, *x);
            }
        });
        let ksk = self.gen_key_switch_key(sk, &s2, 0)?;
        s2.zeroize();
        Ok(RelinearizationKey { ksk })
    }

    /// The engine's relinearization key, created on first use and kept in the engine's key
    /// cache (see [`CpuEngine::set_key_cache_capacity`]).
    pub fn relinearization_key(&self) -> Result<Arc<RelinearizationKey>, CkksError> {
        self.cached_relinearization_key("relinearization_key")
    }

    /// The engine's rotation key for `step`, created on first use and kept in the engine's key
    /// cache (see [`CpuEngine::set_key_cache_capacity`]). Steps equal modulo the slot count
    /// share one key; a step ≡ 0 has none ([`CkksError::InvalidRotation`]).
    pub fn rotation_key(&self, step: i64) -> Result<Arc<RotationKey>, CkksError> {
        self.cached_rotation_key("rotation_key", step)
    }

    /// Bytes of one rotation or relinearization key at these parameters (18,874,368 at the
    /// seed preset).
    #[must_use]
    pub fn switch_key_bytes(&self) -> u64 {
        let rows = self.ctx.nq + self.ctx.np;
        (self.ctx.digits.len() * 2 * rows * self.n_() * 8) as u64
    }

    /// The 32-byte sampling key of this engine's key-switching key of Galois element `g`
    /// (0: relinearization) for its own secret key (decision 0531): what a device needs to
    /// make the same key word for word. Secret.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn switch_key_sampling_key(&self, g: u64) -> zeroize::Zeroizing<[u8; 32]> {
        sampling::switch_key_sampling_key(&self.keygen_seed.0, self.secret_key.key_id, g)
    }

    /// The cache slot of `step`'s rotation key (`None` for a step ≡ 0).
    #[must_use]
    pub(crate) fn rotation_slot(&self, step: i64) -> Option<CachedKey> {
        let (canonical, galois_element) = self.galois_element_for_step(step);
        (canonical != 0).then_some(CachedKey::Rotation {
            galois_element,
            step: canonical,
        })
    }

    /// Fails with [`CkksError::KeyCacheCapacity`] when `slot` is not held and a key cannot
    /// fit the capacity at all. Changes nothing.
    pub(crate) fn check_key_admissible(
        &self,
        op: &'static str,
        slot: CachedKey,
    ) -> Result<(), CkksError> {
        let bytes = self.switch_key_bytes();
        let cache = self.keys.lock();
        if cache.contains(&slot) {
            return Ok(());
        }
        cache
            .check_fits(bytes)
            .map_err(|capacity| CkksError::KeyCacheCapacity {
                op,
                key: slot,
                location: self.location,
                bytes,
                capacity,
            })
    }

    /// The cached key of `slot`, or a new one from `make` admitted to the cache. The key is
    /// made outside the cache's lock (tens of milliseconds: other keys stay available) but
    /// under the slot's gate, so threads asking for the same new key wait for the one that
    /// makes it and find it in the cache. Keys that leave are dropped outside the lock.
    fn cached_key<K>(
        &self,
        op: &'static str,
        slot: CachedKey,
        pick: fn(&HostKey) -> Option<Arc<K>>,
        wrap: fn(Arc<K>) -> HostKey,
        make: impl FnOnce() -> Result<K, CkksError>,
    ) -> Result<Arc<K>, CkksError> {
        if let Some(k) = self.keys.lock().get_mut(&slot).and_then(|k| pick(k)) {
            return Ok(k);
        }
        self.check_key_admissible(op, slot)?;
        let gate = Arc::clone(self.key_gates.lock().entry(slot).or_default());
        let _making = gate.lock();
        // Another thread may have made it while this one waited at the gate.
        if let Some(k) = self.keys.lock().get_mut(&slot).and_then(|k| pick(k)) {
            return Ok(k);
        }
        let key = Arc::new(make()?);
        let gone = {
            let mut cache = self.keys.lock();
            if let Some(k) = cache.get_mut(&slot).and_then(|k| pick(k)) {
                return Ok(k);
            }
            let held = wrap(Arc::clone(&key));
            let bytes = held.nbytes();
            if cache.check_fits(bytes).is_err() {
                // The capacity was lowered meanwhile: the caller gets the key, the cache
                // keeps nothing.
                return Ok(key);
            }
            traced_admission("host", slot, bytes, HostKey::nbytes, || {
                let gone = cache.insert(slot, held, bytes);
                (gone, cache.bytes())
            })
        };
        drop(gone);
        Ok(key)
    }

    pub(crate) fn cached_relinearization_key(
        &self,
        op: &'static str,
    ) -> Result<Arc<RelinearizationKey>, CkksError> {
        self.cached_key(
            op,
            CachedKey::Relinearization,
            HostKey::relinearization,
            HostKey::Relinearization,
            || self.create_relinearization_key(&self.secret_key),
        )
    }

    pub(crate) fn cached_rotation_key(
        &self,
        op: &'static str,
        step: i64,
    ) -> Result<Arc<RotationKey>, CkksError> {
        let Some(
            slot @ CachedKey::Rotation {
                step: canonical, ..
            },
        ) = self.rotation_slot(step)
        else {
            return Err(CkksError::InvalidRotation {
                op,
                reason: format!("step {step} is a multiple of the slot count: no rotation key"),
            });
        };
        self.cached_key(op, slot, HostKey::rotation, HostKey::Rotation, || {
            self.create_rotation_key(canonical, &self.secret_key)
        })
    }

    /// Bounds the engine's key cache to `capacity` bytes (`None`: unbounded, the default).
    /// The least recently used keys leave until the rest fit; later first uses let the least
    /// recently used keys go to make room, and a key larger than the whole capacity is
    /// [`CkksError::KeyCacheCapacity`]. A key a caller still holds (an `Arc` from
    /// [`CpuEngine::rotation_key`], or a device cache's upload in progress) stays alive until
    /// that caller lets go. Returns the keys that left, least recently used first.
    pub fn set_key_cache_capacity(&self, capacity: Option<u64>) -> Vec<CachedKey> {
        let gone = self.keys.lock().set_capacity(capacity);
        trace_evictions(&"host", &gone, HostKey::nbytes);
        gone.into_iter().map(|(k, _)| k).collect()
    }

    /// The key cache's capacity in bytes (`None`: unbounded).
    #[must_use]
    pub fn key_cache_capacity(&self) -> Option<u64> {
        self.keys.lock().capacity()
    }

    /// Bytes of every key the cache holds (keys it let go of that callers still hold are
    /// theirs, not counted).
    #[must_use]
    pub fn key_cache_bytes(&self) -> u64 {
        self.keys.lock().bytes()
    }

    /// The keys the cache holds, least recently used first (the order they would leave in).
    #[must_use]
    pub fn cached_keys(&self) -> Vec<CachedKey> {
        self.keys.lock().keys_by_age()
    }

    /// Lets go of every cached key (the next use makes it again: the same words, decision 0531).
    /// Returns the keys that left, least recently used first.
    pub fn clear_key_cache(&self) -> Vec<CachedKey> {
        let gone = self.keys.lock().clear();
        trace_evictions(&"host", &gone, HostKey::nbytes);
        gone.into_iter().map(|(k, _)| k).collect()
    }

    // ----------------------------------------------------------------- encoding

    /// Encodes real slots (zero-padded to N/2) at `level` and `scale` (default `2^scale_bits`)
    /// into integer coefficients.
    #[tracing::instrument(
        name = "ckks.encode",
        level = "debug",
        skip_all,
        fields(location = "host", level = level, slots = message.len()),
        err(level = "debug")
    )]
    pub fn encode(
        &self,
        message: &[f64],
        level: usize,
        scale: Option<f64>,
    ) -> Result<Plaintext, CkksError> {
        let m: Vec<Complex64> = message.iter().map(|&x| Complex64::new(x, 0.0)).collect();
        self.encode_complex(&m, level, scale)
    }

    /// Encodes complex slots.
    #[tracing::instrument(
        name = "ckks.encode_complex",
        level = "debug",
        skip_all,
        fields(location = "host", level = level, slots = message.len()),
        err(level = "debug")
    )]
    pub fn encode_complex(
        &self,
        message: &[Complex64],
        level: usize,
        scale: Option<f64>,
    ) -> Result<Plaintext, CkksError> {
        self.check_level("encode", level)?;
        let scale = valid_scale("encode", scale.unwrap_or_else(|| self.default_scale()))?;
        let coeffs = self.ctx.encoder.encode(message, scale)?;
        Ok(Plaintext {
            words: Words::alloc_copy(
                &self.memory,
                self.location,
                &coeffs.into_iter().map(|c| c as u64).collect::<Vec<_>>(),
            )?,
            context: self.ctx.id,
            n: self.n_(),
            level,
            scale,
            domain: Domain::Coefficient,
            basis: ModulusBasis::Q,
            representation: PlaintextRepresentation::IntegerCoefficients,
            prime_ids: Vec::new(),
        })
    }

    /// Decodes integer or approximate coefficients to N/2 complex slots.
    #[tracing::instrument(
        name = "ckks.decode",
        level = "debug",
        skip_all,
        fields(location = "host", level = pt.level(), bytes = pt.nbytes()),
        err(level = "debug")
    )]
    pub fn decode(&self, pt: &Plaintext) -> Result<Vec<Complex64>, CkksError> {
        self.check_pt("decode", pt)?;
        let coeffs: Vec<f64> = match pt.representation {
            PlaintextRepresentation::IntegerCoefficients => pt
                .words
                .as_slice()
                .iter()
                .map(|&w| w as i64 as f64)
                .collect(),
            PlaintextRepresentation::ApproximateCoefficients => pt
                .words
                .as_slice()
                .iter()
                .map(|&w| f64::from_bits(w))
                .collect(),
            PlaintextRepresentation::Rns => {
                return Err(CkksError::RepresentationMismatch {
                    op: "decode",
                    expected: "integer_coefficients or approximate_coefficients",
                    actual: pt.representation.name(),
                })
            }
        };
        self.ctx.encoder.decode(&coeffs, pt.scale)
    }

    /// Decodes to the real parts of the slots.
    #[tracing::instrument(
        name = "ckks.decode_real",
        level = "debug",
        skip_all,
        fields(location = "host", level = pt.level(), bytes = pt.nbytes()),
        err(level = "debug")
    )]
    pub fn decode_real(&self, pt: &Plaintext) -> Result<Vec<f64>, CkksError> {
        Ok(self.decode(pt)?.into_iter().map(|z| z.re).collect())
    }

    fn rns_from_integer(
        &self,
        op: &'static str,
        pt: &Plaintext,
        basis: ModulusBasis,
    ) -> Result<(Vec<usize>, Vec<u64>), CkksError> {
        self.check_pt(op, pt)?;
        if pt.representation != PlaintextRepresentation::IntegerCoefficients {
            return Err(CkksError::RepresentationMismatch {
                op,
                expected: "integer_coefficients",
                actual: pt.representation.name(),
            });
        }
        let n = self.n_();
        let ids = self.ids(pt.level, basis);
        let coeffs: Vec<i64> = pt.words.as_slice().iter().map(|&w| w as i64).collect();
        let mut words = vec![0u64; ids.len() * n];
        self.par_rows(&mut words, &ids, |id, row| {
            self.lift_signed(id, &coeffs, row);
        });
        Ok((ids, words))
    }

    /// Reduces integer coefficients to RNS rows of `basis` and moves them to the NTT domain:
    /// the operand of [`CpuEngine::multiply_plaintext`] (`[8 − ℓ, N]` for basis Q).
    #[tracing::instrument(
        name = "ckks.prepare_plaintext_for_multiplication",
        level = "debug",
        skip_all,
        fields(location = "host", level = pt.level(), bytes = pt.nbytes(), basis = ?basis),
        err(level = "debug")
    )]
    pub fn prepare_plaintext_for_multiplication(
        &self,
        pt: &Plaintext,
        basis: ModulusBasis,
    ) -> Result<Plaintext, CkksError> {
        let (ids, mut words) =
            self.rns_from_integer("prepare_plaintext_for_multiplication", pt, basis)?;
        self.par_rows(&mut words, &ids, |id, row| self.ctx.tables[id].forward(row));
        Ok(Plaintext {
            words: Words::alloc_copy(&self.memory, pt.location(), &words)?,
            context: self.ctx.id,
            n: self.n_(),
            level: pt.level,
            scale: pt.scale,
            domain: Domain::Ntt,
            basis,
            representation: PlaintextRepresentation::Rns,
            prime_ids: ids,
        })
    }

    /// Reduces integer coefficients to RNS rows of `basis` in the coefficient domain: the
    /// operand of [`CpuEngine::add_plaintext`].
    #[tracing::instrument(
        name = "ckks.prepare_plaintext_for_addition",
        level = "debug",
        skip_all,
        fields(location = "host", level = pt.level(), bytes = pt.nbytes(), basis = ?basis),
        err(level = "debug")
    )]
    pub fn prepare_plaintext_for_addition(
        &self,
        pt: &Plaintext,
        basis: ModulusBasis,
    ) -> Result<Plaintext, CkksError> {
        let (ids, words) = self.rns_from_integer("prepare_plaintext_for_addition", pt, basis)?;
        Ok(Plaintext {
            words: Words::alloc_copy(&self.memory, pt.location(), &words)?,
            context: self.ctx.id,
            n: self.n_(),
            level: pt.level,
            scale: pt.scale,
            domain: Domain::Coefficient,
            basis,
            representation: PlaintextRepresentation::Rns,
            prime_ids: ids,
        })
    }

    // ----------------------------------------------------------------- encrypt / decrypt

    /// Public-key encryption of integer coefficients at the plaintext's level (spec §3.4, with
    /// a ternary ephemeral v). Output: 2 components, coefficient domain, basis Q.
    ///
    /// Each call draws one 32-byte sampling key from the engine's ChaCha20 stream and samples
    /// `v`, `e0`, `e1` from it ([`CpuEngine::encrypt_with_sampling_key`], decision 0520).
    #[tracing::instrument(
        name = "ckks.encrypt",
        level = "debug",
        skip_all,
        fields(location = "host", level = pt.level(), bytes = pt.nbytes()),
        err(level = "debug")
    )]
    pub fn encrypt(&self, pt: &Plaintext) -> Result<Ciphertext, CkksError> {
        // Every refusal (the input, the output's allocation) comes before the sampling key is
        // drawn: a failed call leaves the engine's random stream where it was.
        let out = self.encryption_output("encrypt", pt)?;
        let key = self.rng.lock().encryption_key();
        Ok(self.encrypt_into(pt, &key, out))
    }

    /// Checks an encryption's input and allocates its output words (zero), next to the
    /// plaintext.
    fn encryption_output(&self, op: &'static str, pt: &Plaintext) -> Result<Words, CkksError> {
        self.check_pt(op, pt)?;
        if pt.representation != PlaintextRepresentation::IntegerCoefficients {
            return Err(CkksError::RepresentationMismatch {
                op,
                expected: "integer_coefficients",
                actual: pt.representation.name(),
            });
        }
        let rows = self.ids(pt.level, ModulusBasis::Q).len();
        Words::alloc(&self.memory, pt.location(), 2 * rows * self.n_())
    }

    /// [`CpuEngine::encrypt`] with an explicit sampling key: coefficient `k` of `v`, `e0`,
    /// `e1` comes from word `k` of ChaCha20 streams 0, 1, 2 under `key`
    /// ([`crate::sampling::EncryptionSamples::from_key`]). The CUDA engine's
    /// `encrypt_with_sampling_key` gives the same words.
    #[tracing::instrument(
        name = "ckks.encrypt_with_sampling_key",
        level = "debug",
        skip_all,
        fields(location = "host", level = pt.level(), bytes = pt.nbytes()),
        err(level = "debug")
    )]
    pub fn encrypt_with_sampling_key(
        &self,
        pt: &Plaintext,
        key: &[u8; 32],
    ) -> Result<Ciphertext, CkksError> {
        let out = self.encryption_output("encrypt", pt)?;
        Ok(self.encrypt_into(pt, key, out))
    }

    /// The encryption of a checked plaintext under the sampling key `key`, into `out`
    /// ([`CpuEngine::encryption_output`]).
    fn encrypt_into(&self, pt: &Plaintext, key: &[u8; 32], mut out: Words) -> Ciphertext {
        let n = self.n_();
        let ids = self.ids(pt.level, ModulusBasis::Q);
        let rows = ids.len();
        let samples = EncryptionSamples::from_key(key, self.rng.lock().cdt(), n);
        let (v, e0, e1) = (&samples.v, &samples.e0, &samples.e1);
        let p: Vec<i64> = pt.words.as_slice().iter().map(|&w| w as i64).collect();
        let pk = &self.public_key;
        out.as_mut_slice()
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(i, row)| {
                let comp = i / rows;
                let id = ids[i % rows];
                let t = &self.ctx.tables[id];
                let m = t.modulus();
                self.lift_signed(id, v, row);
                t.forward(row);
                mul_assign_limb(m, row, pk.row(comp, id));
                t.inverse(row);
                let e = if comp == 0 { e0 } else { e1 };
                for (k, o) in row.iter_mut().enumerate() {
                    let mut x = m.add(*o, m.from_i64(e[k]));
                    if comp == 0 {
                        x = m.add(x, m.from_i64(p[k]));
                    }
                    *o = x;
                }
            });
        drop(samples);
        Ciphertext {
            words: out,
            context: self.ctx.id,
            n,
            level: pt.level,
            scale: pt.scale,
            domain: Domain::Coefficient,
            basis: ModulusBasis::Q,
            components: 2,
            prime_ids: ids,
        }
    }

    /// Encodes real slots at level 0 and the default scale, then encrypts.
    #[tracing::instrument(
        name = "ckks.encrypt_message",
        level = "debug",
        skip_all,
        fields(location = "host", slots = message.len()),
        err(level = "debug")
    )]
    pub fn encrypt_message(&self, message: &[f64]) -> Result<Ciphertext, CkksError> {
        self.encrypt(&self.encode(message, 0, None)?)
    }

    /// Encodes complex slots at level 0 and the default scale, then encrypts.
    #[tracing::instrument(
        name = "ckks.encrypt_complex_message",
        level = "debug",
        skip_all,
        fields(location = "host", slots = message.len()),
        err(level = "debug")
    )]
    pub fn encrypt_complex_message(&self, message: &[Complex64]) -> Result<Ciphertext, CkksError> {
        self.encrypt(&self.encode_complex(message, 0, None)?)
    }

    /// Decrypts to approximate real coefficients (spec §3.5): the phase `Σ c_i·s^i` on the two
    /// trailing Q rows only, reconstructed centred from those two residues.
    #[tracing::instrument(
        name = "ckks.decrypt",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes()),
        err(level = "debug")
    )]
    pub fn decrypt(&self, ct: &Ciphertext) -> Result<Plaintext, CkksError> {
        const OP: &str = "decrypt";
        self.check_ct(OP, ct)?;
        let n = self.n_();
        let nq = self.ctx.nq;
        let rows = ct.num_limbs();
        // the trailing two Q rows: positions of ids nq-2, nq-1
        let tail: Vec<usize> = (0..rows)
            .filter(|&j| ct.prime_ids[j] + 2 >= nq && ct.prime_ids[j] < nq)
            .collect();
        let phases: Vec<Vec<u64>> = tail
            .par_iter()
            .map(|&j| {
                let id = ct.prime_ids[j];
                let t = &self.ctx.tables[id];
                let m = t.modulus();
                let s = self.secret_key.row(id);
                let row_of =
                    |c: usize| &ct.words.as_slice()[(c * rows + j) * n..(c * rows + j + 1) * n];
                let mut acc = vec![0u64; n];
                let mut s_pow = s.to_vec();
                for c in 1..ct.components {
                    let mut x = row_of(c).to_vec();
                    if ct.domain == Domain::Coefficient {
                        t.forward(&mut x);
                    }
                    mul_acc_limb(m, &mut acc, &x, &s_pow);
                    if c + 1 < ct.components {
                        mul_assign_limb(m, &mut s_pow, s);
                    }
                }
                s_pow.zeroize();
                if ct.domain == Domain::Ntt {
                    add_assign_limb(m, &mut acc, row_of(0));
                    t.inverse(&mut acc);
                } else {
                    t.inverse(&mut acc);
                    add_assign_limb(m, &mut acc, row_of(0));
                }
                acc
            })
            .collect();
        let a = self.ctx.config.q_primes[nq - 2];
        let b = self.ctx.config.q_primes[nq - 1];
        let mb = self.ctx.modulus(nq - 1);
        let a_inv = mb.inv(a % b).unwrap_or(0);
        let d = i128::from(a) * i128::from(b);
        let coeffs: Vec<u64> = (0..n)
            .map(|k| {
                let v0 = phases[0][k];
                let v1 = mb.mul(mb.sub(phases[1][k], mb.reduce(v0)), a_inv);
                let mut x = i128::from(v0) + i128::from(v1) * i128::from(a);
                if x > d / 2 {
                    x -= d;
                }
                (x as f64).to_bits()
            })
            .collect();
        Ok(Plaintext {
            words: Words::alloc_copy(&self.memory, ct.location(), &coeffs)?,
            context: self.ctx.id,
            n,
            level: ct.level,
            scale: ct.scale,
            domain: Domain::Coefficient,
            basis: ModulusBasis::Q,
            representation: PlaintextRepresentation::ApproximateCoefficients,
            prime_ids: Vec::new(),
        })
    }

    /// Decrypts and decodes to the real parts of the N/2 slots.
    #[tracing::instrument(
        name = "ckks.decrypt_message",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes()),
        err(level = "debug")
    )]
    pub fn decrypt_message(&self, ct: &Ciphertext) -> Result<Vec<f64>, CkksError> {
        self.decode_real(&self.decrypt(ct)?)
    }

    /// Decrypts and decodes to N/2 complex slots.
    #[tracing::instrument(
        name = "ckks.decrypt_complex_message",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes()),
        err(level = "debug")
    )]
    pub fn decrypt_complex_message(&self, ct: &Ciphertext) -> Result<Vec<Complex64>, CkksError> {
        self.decode(&self.decrypt(ct)?)
    }

    // ----------------------------------------------------------------- domains

    /// Forward NTT of every row of every component (coefficient → NTT).
    #[tracing::instrument(
        name = "ckks.coefficient_domain_to_ntt_domain",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes()),
        err(level = "debug")
    )]
    pub fn coefficient_domain_to_ntt_domain(
        &self,
        ct: &Ciphertext,
    ) -> Result<Ciphertext, CkksError> {
        self.change_domain(
            "coefficient_domain_to_ntt_domain",
            ct,
            Domain::Coefficient,
            Domain::Ntt,
        )
    }

    /// Inverse NTT of every row of every component (NTT → coefficient).
    #[tracing::instrument(
        name = "ckks.ntt_domain_to_coefficient_domain",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes()),
        err(level = "debug")
    )]
    pub fn ntt_domain_to_coefficient_domain(
        &self,
        ct: &Ciphertext,
    ) -> Result<Ciphertext, CkksError> {
        self.change_domain(
            "ntt_domain_to_coefficient_domain",
            ct,
            Domain::Ntt,
            Domain::Coefficient,
        )
    }

    /// One domain transition: checks that `ct` is in `from`, transforms every row out of place
    /// (forward NTT towards [`Domain::Ntt`], inverse towards [`Domain::Coefficient`]).
    fn change_domain(
        &self,
        op: &'static str,
        ct: &Ciphertext,
        from: Domain,
        to: Domain,
    ) -> Result<Ciphertext, CkksError> {
        self.check_ct(op, ct)?;
        expect_domain(op, from, ct.domain)?;
        let mut buf = Words::alloc(&self.memory, ct.location(), ct.words.len())?;
        self.par_rows_from(
            buf.as_mut_slice(),
            ct.words.as_slice(),
            &ct.prime_ids,
            |id, src, dst| {
                if to == Domain::Ntt {
                    self.ctx.tables[id].forward_from(src, dst);
                } else {
                    self.ctx.tables[id].inverse_from(src, dst);
                }
            },
        );
        let mut out = self.wrap_ct(ct, buf, ct.components);
        out.domain = to;
        Ok(out)
    }

    // ----------------------------------------------------------------- arithmetic

    fn check_same_state(
        &self,
        op: &'static str,
        a: &Ciphertext,
        b: &Ciphertext,
    ) -> Result<(), CkksError> {
        self.check_ct(op, a)?;
        self.check_ct(op, b)?;
        expect_same_level(op, a.level, b.level)?;
        expect_basis(op, a.basis, b.basis)?;
        expect_domain(op, a.domain, b.domain)?;
        if a.components != b.components {
            return Err(CkksError::ComponentMismatch {
                op,
                expected: a.components,
                actual: b.components,
            });
        }
        Ok(())
    }

    fn check_same_scale(op: &'static str, a: f64, b: f64) -> Result<(), CkksError> {
        if a.to_bits() == b.to_bits() {
            Ok(())
        } else {
            Err(CkksError::ScaleMismatch {
                op,
                left: a,
                right: b,
            })
        }
    }

    fn elementwise<F>(&self, a: &Ciphertext, b: &Ciphertext, f: F) -> Result<Ciphertext, CkksError>
    where
        F: Fn(&crate::arith::Modulus, &mut [u64], &[u64]) + Sync + Send,
    {
        let n = self.n_();
        let rows = a.num_limbs();
        let mut buf = Words::alloc_copy(&self.memory, a.location(), a.words.as_slice())?;
        let words = buf.as_mut_slice();
        words
            .par_chunks_mut(n)
            .zip(b.words.as_slice().par_chunks(n))
            .enumerate()
            .for_each(|(i, (x, y))| {
                f(self.ctx.modulus(a.prime_ids[i % rows]), x, y);
            });
        Ok(self.wrap_ct(a, buf, a.components))
    }

    /// `a + b`: identical level, basis, domain, components and bit-equal scale.
    #[tracing::instrument(
        name = "ckks.add",
        level = "debug",
        skip_all,
        fields(location = "host", level = a.level(), bytes = a.nbytes()),
        err(level = "debug")
    )]
    pub fn add(&self, a: &Ciphertext, b: &Ciphertext) -> Result<Ciphertext, CkksError> {
        self.check_same_state("add", a, b)?;
        Self::check_same_scale("add", a.scale, b.scale)?;
        self.elementwise(a, b, add_assign_limb)
    }

    /// `a − b`: identical level, basis, domain, components and bit-equal scale.
    #[tracing::instrument(
        name = "ckks.subtract",
        level = "debug",
        skip_all,
        fields(location = "host", level = a.level(), bytes = a.nbytes()),
        err(level = "debug")
    )]
    pub fn subtract(&self, a: &Ciphertext, b: &Ciphertext) -> Result<Ciphertext, CkksError> {
        self.check_same_state("subtract", a, b)?;
        Self::check_same_scale("subtract", a.scale, b.scale)?;
        self.elementwise(a, b, sub_assign_limb)
    }

    /// `−a`.
    #[tracing::instrument(
        name = "ckks.negate",
        level = "debug",
        skip_all,
        fields(location = "host", level = a.level(), bytes = a.nbytes()),
        err(level = "debug")
    )]
    pub fn negate(&self, a: &Ciphertext) -> Result<Ciphertext, CkksError> {
        self.check_ct("negate", a)?;
        let mut buf = Words::alloc_copy(&self.memory, a.location(), a.words.as_slice())?;
        let words = buf.as_mut_slice();
        self.par_rows(words, &a.prime_ids, |id, row| {
            negate_limb(self.ctx.modulus(id), row);
        });
        Ok(self.wrap_ct(a, buf, a.components))
    }

    fn check_rns_operand(
        &self,
        op: &'static str,
        ct: &Ciphertext,
        pt: &Plaintext,
        domain: Domain,
    ) -> Result<(), CkksError> {
        self.check_ct(op, ct)?;
        self.check_pt(op, pt)?;
        if pt.representation != PlaintextRepresentation::Rns {
            return Err(CkksError::RepresentationMismatch {
                op,
                expected: "rns",
                actual: pt.representation.name(),
            });
        }
        expect_domain(op, domain, ct.domain)?;
        expect_domain(op, domain, pt.domain)?;
        expect_same_level(op, ct.level, pt.level)?;
        expect_basis(op, ct.basis, pt.basis)?;
        Ok(())
    }

    /// `ct + pt` on component 0; `pt` is an RNS plaintext in the ciphertext's domain, level and
    /// basis with a bit-equal scale (coefficient domain: [`CpuEngine::prepare_plaintext_for_addition`]).
    #[tracing::instrument(
        name = "ckks.add_plaintext",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes()),
        err(level = "debug")
    )]
    pub fn add_plaintext(&self, ct: &Ciphertext, pt: &Plaintext) -> Result<Ciphertext, CkksError> {
        const OP: &str = "add_plaintext";
        self.check_rns_operand(OP, ct, pt, ct.domain)?;
        Self::check_same_scale(OP, ct.scale, pt.scale)?;
        let n = self.n_();
        let rows = ct.num_limbs();
        let mut buf = Words::alloc_copy(&self.memory, ct.location(), ct.words.as_slice())?;
        let words = buf.as_mut_slice();
        words[..rows * n]
            .par_chunks_mut(n)
            .zip(pt.words.as_slice().par_chunks(n))
            .enumerate()
            .for_each(|(j, (x, y))| add_assign_limb(self.ctx.modulus(ct.prime_ids[j]), x, y));
        Ok(self.wrap_ct(ct, buf, ct.components))
    }

    fn product_scale(op: &'static str, a: f64, b: f64) -> Result<f64, CkksError> {
        valid_scale(op, a * b)
    }

    /// `ct ⊙ pt` per row in the NTT domain; scale `Δ_ct·Δ_pt`.
    #[tracing::instrument(
        name = "ckks.multiply_plaintext",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes()),
        err(level = "debug")
    )]
    pub fn multiply_plaintext(
        &self,
        ct: &Ciphertext,
        pt: &Plaintext,
    ) -> Result<Ciphertext, CkksError> {
        const OP: &str = "multiply_plaintext";
        self.check_rns_operand(OP, ct, pt, Domain::Ntt)?;
        let scale = Self::product_scale(OP, ct.scale, pt.scale)?;
        let n = self.n_();
        let rows = ct.num_limbs();
        let mut buf = Words::alloc_copy(&self.memory, ct.location(), ct.words.as_slice())?;
        let words = buf.as_mut_slice();
        let p = pt.words.as_slice();
        words.par_chunks_mut(n).enumerate().for_each(|(i, x)| {
            let j = i % rows;
            mul_assign_limb(self.ctx.modulus(ct.prime_ids[j]), x, &p[j * n..(j + 1) * n]);
        });
        let mut out = self.wrap_ct(ct, buf, ct.components);
        out.scale = scale;
        Ok(out)
    }

    /// Tensor product of two 2-component NTT-domain ciphertexts: `(a0b0, a0b1 + a1b0, a1b1)`,
    /// scale `Δ_a·Δ_b`.
    #[tracing::instrument(
        name = "ckks.multiply",
        level = "debug",
        skip_all,
        fields(location = "host", level = a.level(), bytes = a.nbytes()),
        err(level = "debug")
    )]
    pub fn multiply(&self, a: &Ciphertext, b: &Ciphertext) -> Result<Ciphertext, CkksError> {
        const OP: &str = "multiply";
        self.check_same_state(OP, a, b)?;
        if a.components != 2 {
            return Err(CkksError::ComponentMismatch {
                op: OP,
                expected: 2,
                actual: a.components,
            });
        }
        expect_domain(OP, Domain::Ntt, a.domain)?;
        let scale = Self::product_scale(OP, a.scale, b.scale)?;
        let n = self.n_();
        let rows = a.num_limbs();
        let (aw, bw) = (a.words.as_slice(), b.words.as_slice());
        let mut words = vec![0u64; 3 * rows * n];
        words.par_chunks_mut(n).enumerate().for_each(|(i, out)| {
            let (c, j) = (i / rows, i % rows);
            let m = self.ctx.modulus(a.prime_ids[j]);
            let r = |w: &'_ [u64], comp: usize| -> std::ops::Range<usize> {
                let _ = w;
                (comp * rows + j) * n..(comp * rows + j + 1) * n
            };
            match c {
                0 => {
                    out.copy_from_slice(&aw[r(aw, 0)]);
                    mul_assign_limb(m, out, &bw[r(bw, 0)]);
                }
                1 => {
                    out.copy_from_slice(&aw[r(aw, 0)]);
                    mul_assign_limb(m, out, &bw[r(bw, 1)]);
                    mul_acc_limb(m, out, &aw[r(aw, 1)], &bw[r(bw, 0)]);
                }
                _ => {
                    out.copy_from_slice(&aw[r(aw, 1)]);
                    mul_assign_limb(m, out, &bw[r(bw, 1)]);
                }
            }
        });
        let mut out = self.make_ct(a, &words, 3)?;
        out.scale = scale;
        Ok(out)
    }

    // ----------------------------------------------------------------- key switching

    fn check_keyswitch_input(
        &self,
        op: &'static str,
        ct: &Ciphertext,
        components: usize,
        domain: Domain,
    ) -> Result<(), CkksError> {
        self.check_ct(op, ct)?;
        if ct.components != components {
            return Err(CkksError::ComponentMismatch {
                op,
                expected: components,
                actual: ct.components,
            });
        }
        expect_domain(op, domain, ct.domain)?;
        expect_basis(op, ModulusBasis::Q, ct.basis)?;
        Ok(())
    }

    /// Rotation with an explicit key: slot j of the result holds slot `j − step` of the input
    /// (`roll(m, step)`). Input: 2 components, coefficient domain, basis Q.
    #[tracing::instrument(
        name = "ckks.rotate_with_key",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes(), step = ?key.step),
        err(level = "debug")
    )]
    pub fn rotate_with_key(
        &self,
        ct: &Ciphertext,
        key: &RotationKey,
    ) -> Result<Ciphertext, CkksError> {
        const OP: &str = "rotate_with_key";
        self.check_keyswitch_input(OP, ct, 2, Domain::Coefficient)?;
        self.check_key(OP, &key.ksk)?;
        self.apply_galois(ct, key)
    }

    /// Rotation by `step` with the engine's cached key (created on first use); step ≡ 0 returns
    /// a copy.
    #[tracing::instrument(
        name = "ckks.rotate_by_step",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes(), step = step),
        err(level = "debug")
    )]
    pub fn rotate_by_step(&self, ct: &Ciphertext, step: i64) -> Result<Ciphertext, CkksError> {
        const OP: &str = "rotate_by_step";
        self.check_keyswitch_input(OP, ct, 2, Domain::Coefficient)?;
        if self.galois_element_for_step(step).0 == 0 {
            return self.make_ct(ct, ct.words.as_slice(), 2);
        }
        let key = self.cached_rotation_key(OP, step)?;
        self.apply_galois(ct, &key)
    }

    /// Complex conjugation of every slot with a conjugation key.
    #[tracing::instrument(
        name = "ckks.conjugate",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes()),
        err(level = "debug")
    )]
    pub fn conjugate(&self, ct: &Ciphertext, key: &RotationKey) -> Result<Ciphertext, CkksError> {
        const OP: &str = "conjugate";
        self.check_keyswitch_input(OP, ct, 2, Domain::Coefficient)?;
        self.check_key(OP, &key.ksk)?;
        if key.step.is_some() {
            return Err(CkksError::WrongKey {
                op: OP,
                reason: "a rotation key is not a conjugation key".into(),
            });
        }
        self.apply_galois(ct, key)
    }

    /// Relinearizes a 3-component NTT-domain product with the engine's key (created on first
    /// use). Output: 2 components, coefficient domain.
    #[tracing::instrument(
        name = "ckks.relinearize",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes()),
        err(level = "debug")
    )]
    pub fn relinearize(&self, ct: &Ciphertext) -> Result<Ciphertext, CkksError> {
        self.check_keyswitch_input("relinearize", ct, 3, Domain::Ntt)?;
        let key = self.cached_relinearization_key("relinearize")?;
        self.relinearize_with_key(ct, &key)
    }

    /// Relinearizes with an explicit key (spec §3.15).
    #[tracing::instrument(
        name = "ckks.relinearize_with_key",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes()),
        err(level = "debug")
    )]
    pub fn relinearize_with_key(
        &self,
        ct: &Ciphertext,
        key: &RelinearizationKey,
    ) -> Result<Ciphertext, CkksError> {
        const OP: &str = "relinearize";
        self.check_keyswitch_input(OP, ct, 3, Domain::Ntt)?;
        self.check_key(OP, &key.ksk)?;
        let n = self.n_();
        let rows = ct.num_limbs();
        let src = ct.words.as_slice();
        let mut out = Words::alloc(&self.memory, ct.location(), 2 * rows * n)?;
        let mut d2 = self.scratch.take(rows * n);
        d2[..rows * n]
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(j, dst)| {
                let x = 2 * rows + j;
                self.ctx.tables[ct.prime_ids[j]].inverse_from(&src[x * n..(x + 1) * n], dst);
            });
        let acc = self.key_switch_accumulate(&d2[..rows * n], ct.level, &key.ksk);
        self.scratch.put(d2);
        // c_i = INTT(d_i) + corr_i, the inverse NTT and the ModDown fused per output row
        out.as_mut_slice()
            .par_chunks_mut(n)
            .enumerate()
            .for_each(|(x, dst)| {
                let (comp, j) = (x / rows, x % rows);
                let t = &self.ctx.tables[ct.prime_ids[j]];
                let m = *t.modulus();
                t.inverse_from(&src[x * n..(x + 1) * n], dst);
                self.moddown_row(&acc, ct.level, comp, j, |i, v| dst[i] = m.add(dst[i], v));
            });
        self.release(acc);
        let mut out = self.wrap_ct(ct, out, 2);
        out.domain = Domain::Coefficient;
        Ok(out)
    }

    // ----------------------------------------------------------------- levels

    /// Divides by the leading prime with nearest rounding and drops it (spec §3.12). Input:
    /// coefficient domain, level below the last; scale becomes `Δ / q_drop`.
    #[tracing::instrument(
        name = "ckks.rescale_to_next_level",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes()),
        err(level = "debug")
    )]
    pub fn rescale_to_next_level(&self, ct: &Ciphertext) -> Result<Ciphertext, CkksError> {
        const OP: &str = "rescale_to_next_level";
        self.check_ct(OP, ct)?;
        expect_domain(OP, Domain::Coefficient, ct.domain)?;
        if ct.level >= self.max_level() {
            return Err(CkksError::LevelExhausted {
                op: OP,
                level: ct.level,
                max_level: self.max_level(),
            });
        }
        let q_drop = self.ctx.config.q_primes[ct.level];
        let scale = valid_scale(OP, ct.scale / q_drop as f64)?;
        let n = self.n_();
        let rows = ct.num_limbs();
        let new_ids: Vec<usize> = ct.prime_ids[1..].to_vec();
        let src = ct.words.as_slice();
        let mut words = vec![0u64; ct.components * (rows - 1) * n];
        words.par_chunks_mut(n).enumerate().for_each(|(i, out)| {
            let (c, j) = (i / (rows - 1), i % (rows - 1));
            let id = new_ids[j];
            let m = self.ctx.modulus(id);
            let inv = m.inv(q_drop).unwrap_or(0);
            let base = c * rows * n;
            out.copy_from_slice(&src[base + (j + 1) * n..base + (j + 2) * n]);
            rescale_limb(m, q_drop, inv, &src[base..base + n], out);
        });
        let mut out = self.make_ct(ct, &words, ct.components)?;
        out.level = ct.level + 1;
        out.scale = scale;
        out.prime_ids = new_ids;
        Ok(out)
    }

    /// Drops the leading row without dividing (scale unchanged).
    #[tracing::instrument(
        name = "ckks.mod_switch_to_next_level",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes()),
        err(level = "debug")
    )]
    pub fn mod_switch_to_next_level(&self, ct: &Ciphertext) -> Result<Ciphertext, CkksError> {
        const OP: &str = "mod_switch_to_next_level";
        self.check_ct(OP, ct)?;
        if ct.level >= self.max_level() {
            return Err(CkksError::LevelExhausted {
                op: OP,
                level: ct.level,
                max_level: self.max_level(),
            });
        }
        self.drop_rows(ct, ct.level + 1)
    }

    /// Drops leading rows down to `level` (≥ the current level, ≤ the last public level).
    #[tracing::instrument(
        name = "ckks.mod_switch_to_level",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes(), to_level = level),
        err(level = "debug")
    )]
    pub fn mod_switch_to_level(
        &self,
        ct: &Ciphertext,
        level: usize,
    ) -> Result<Ciphertext, CkksError> {
        const OP: &str = "mod_switch_to_level";
        self.check_ct(OP, ct)?;
        if level < ct.level || level > self.max_level() {
            return Err(CkksError::InvalidLevel {
                op: OP,
                level,
                current: ct.level,
                max_level: self.max_level(),
            });
        }
        self.drop_rows(ct, level)
    }

    fn drop_rows(&self, ct: &Ciphertext, level: usize) -> Result<Ciphertext, CkksError> {
        let n = self.n_();
        let rows = ct.num_limbs();
        let drop = level - ct.level;
        let src = ct.words.as_slice();
        let mut words = Vec::with_capacity(ct.components * (rows - drop) * n);
        for c in 0..ct.components {
            words.extend_from_slice(&src[(c * rows + drop) * n..(c + 1) * rows * n]);
        }
        let mut out = self.make_ct(ct, &words, ct.components)?;
        out.level = level;
        out.prime_ids = ct.prime_ids[drop..].to_vec();
        Ok(out)
    }

    /// Multiplies every coefficient by an integer constant (no scale change); a helper for
    /// tests and simple programs.
    #[tracing::instrument(
        name = "ckks.multiply_by_integer",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes(), k = k),
        err(level = "debug")
    )]
    pub fn multiply_by_integer(&self, ct: &Ciphertext, k: i64) -> Result<Ciphertext, CkksError> {
        self.check_ct("multiply_by_integer", ct)?;
        let mut buf = Words::alloc_copy(&self.memory, ct.location(), ct.words.as_slice())?;
        let words = buf.as_mut_slice();
        self.par_rows(words, &ct.prime_ids, |id, row| {
            let m = self.ctx.modulus(id);
            mul_scalar_limb(m, row, m.from_i64(k));
        });
        Ok(self.wrap_ct(ct, buf, ct.components))
    }
}

/// `DomainMismatch` unless `actual` is `expected`.
fn expect_domain(op: &'static str, expected: Domain, actual: Domain) -> Result<(), CkksError> {
    if actual == expected {
        Ok(())
    } else {
        Err(CkksError::DomainMismatch {
            op,
            expected,
            actual,
        })
    }
}

/// `BasisMismatch` unless `actual` is `expected`.
fn expect_basis(
    op: &'static str,
    expected: ModulusBasis,
    actual: ModulusBasis,
) -> Result<(), CkksError> {
    if actual == expected {
        Ok(())
    } else {
        Err(CkksError::BasisMismatch {
            op,
            expected,
            actual,
        })
    }
}

/// `LevelMismatch` unless both operands are at the same level.
fn expect_same_level(op: &'static str, left: usize, right: usize) -> Result<(), CkksError> {
    if left == right {
        Ok(())
    } else {
        Err(CkksError::LevelMismatch { op, left, right })
    }
}
