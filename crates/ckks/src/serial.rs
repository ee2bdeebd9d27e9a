//! Portable forms of CKKS values and keys, for storage and transport with any serde format.
//!
//! `to_data()` on a [`Ciphertext`], [`Plaintext`], [`PublicKey`], [`RotationKey`] or
//! [`RelinearizationKey`] gives plain data (metadata and the words, which must be in
//! host-accessible memory); the `CpuEngine::*_from_data` methods check such data against the
//! engine's parameters (format version, context, ring degree, level, prime ids, shape, scale,
//! every word canonical modulo its prime, a key's Galois element) and make the value at the
//! engine's location. Bad data is a typed error ([`CkksError::InvalidData`] naming the value and
//! what is wrong, or the error the engine would give for the same value); nothing is allocated.
//!
//! The secret key has no portable form: an engine's keys come from its seed
//! ([`CpuEngine::with_seed`](crate::CpuEngine::with_seed)), which is what to keep.
//!
//! ```
//! use fhelium_ckks::{CpuEngine, Preset};
//! let engine = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [9; 32])?;
//! let ct = engine.encrypt_message(&[0.5, -0.25])?;
//! // Any serde format; JSON here.
//! let text = serde_json::to_string(&ct.to_data()?).expect("serialize");
//! let data = serde_json::from_str(&text).expect("deserialize");
//! let back = engine.ciphertext_from_data(&data)?;
//! assert_eq!(back.words(), ct.words());
//! let m = engine.decrypt_message(&back)?;
//! assert!((m[0] - 0.5).abs() < 1e-6 && (m[1] + 0.25).abs() < 1e-6);
//! # Ok::<(), fhelium_ckks::CkksError>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::error::CkksError;
use crate::keys::{KeySwitchKey, PublicKey, RelinearizationKey, RotationKey};
use crate::values::{Ciphertext, Domain, ModulusBasis, Plaintext, PlaintextRepresentation};

/// The format version these types write and read.
pub const FORMAT: u32 = 1;

/// A ciphertext as plain data: `components × prime_ids.len() × n` words, limb-major per
/// component, canonical residues.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CiphertextData {
    /// [`FORMAT`] when written.
    pub format: u32,
    /// The parameter set's identity ([`crate::Context::id`]).
    pub context_id: u64,
    /// Ring degree N.
    pub n: usize,
    /// Level (0 = full Q chain).
    pub level: usize,
    /// The exact scale.
    pub scale: f64,
    /// Polynomial domain.
    pub domain: Domain,
    /// Modulus basis.
    pub basis: ModulusBasis,
    /// Components (2, or 3 for an unrelinearized product).
    pub components: usize,
    /// Prime id of each limb row.
    pub prime_ids: Vec<usize>,
    /// The words.
    pub words: Vec<u64>,
}

/// A plaintext as plain data (see [`PlaintextRepresentation`] for what the words hold).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlaintextData {
    /// [`FORMAT`] when written.
    pub format: u32,
    /// The parameter set's identity.
    pub context_id: u64,
    /// Ring degree N.
    pub n: usize,
    /// Level.
    pub level: usize,
    /// The exact scale.
    pub scale: f64,
    /// Polynomial domain.
    pub domain: Domain,
    /// Modulus basis.
    pub basis: ModulusBasis,
    /// What the words hold.
    pub representation: PlaintextRepresentation,
    /// Prime id of each RNS row (empty for coefficient representations).
    pub prime_ids: Vec<usize>,
    /// The words.
    pub words: Vec<u64>,
}

/// A public key as plain data: `[2, Q rows, n]`, NTT domain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PublicKeyData {
    /// [`FORMAT`] when written.
    pub format: u32,
    /// The parameter set's identity.
    pub context_id: u64,
    /// The identity of the secret key it belongs to.
    pub key_id: u64,
    /// Ring degree N.
    pub n: usize,
    /// The words.
    pub words: Vec<u64>,
}

/// What a key-switching key switches from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SwitchKeyKind {
    /// σ_g for a rotation by `step` slots (the canonical step, g = 3^step mod 2N).
    Rotation {
        /// The canonical step in `[-N/4, N/4)`.
        step: i64,
        /// Its Galois element.
        galois_element: u64,
    },
    /// σ_g for the complex conjugation (g = 2N − 1).
    Conjugation {
        /// Its Galois element.
        galois_element: u64,
    },
    /// `s²` to `s`.
    Relinearization,
}

/// A key-switching key (rotation, conjugation or relinearization) as plain data:
/// `[digits, 2, rows, n]`, NTT domain.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SwitchKeyData {
    /// [`FORMAT`] when written.
    pub format: u32,
    /// The parameter set's identity.
    pub context_id: u64,
    /// The identity of the secret key it belongs to.
    pub key_id: u64,
    /// Ring degree N.
    pub n: usize,
    /// Key-switching digits.
    pub digits: usize,
    /// Rows (every Q and P prime).
    pub rows: usize,
    /// What it switches from.
    pub kind: SwitchKeyKind,
    /// The words.
    pub words: Vec<u64>,
}

impl Ciphertext {
    /// The portable form of this ciphertext (words copied; `NotHostAccessible` for a value in
    /// device memory: bring it to the host first).
    ///
    /// # Errors
    /// [`CkksError::NotHostAccessible`].
    pub fn to_data(&self) -> Result<CiphertextData, CkksError> {
        self.words.check_host("ciphertext to_data")?;
        Ok(CiphertextData {
            format: FORMAT,
            context_id: self.context,
            n: self.n,
            level: self.level,
            scale: self.scale,
            domain: self.domain,
            basis: self.basis,
            components: self.components,
            prime_ids: self.prime_ids.clone(),
            words: self.words.as_slice().to_vec(),
        })
    }
}

impl Plaintext {
    /// The portable form of this plaintext.
    ///
    /// # Errors
    /// [`CkksError::NotHostAccessible`].
    pub fn to_data(&self) -> Result<PlaintextData, CkksError> {
        self.words.check_host("plaintext to_data")?;
        Ok(PlaintextData {
            format: FORMAT,
            context_id: self.context,
            n: self.n,
            level: self.level,
            scale: self.scale,
            domain: self.domain,
            basis: self.basis,
            representation: self.representation,
            prime_ids: self.prime_ids.clone(),
            words: self.words.as_slice().to_vec(),
        })
    }
}

impl PublicKey {
    /// The portable form of this public key.
    ///
    /// # Errors
    /// [`CkksError::NotHostAccessible`].
    pub fn to_data(&self) -> Result<PublicKeyData, CkksError> {
        self.words.check_host("public key to_data")?;
        Ok(PublicKeyData {
            format: FORMAT,
            context_id: self.context,
            key_id: self.key_id,
            n: self.n,
            words: self.words.as_slice().to_vec(),
        })
    }
}

fn switch_key_data(
    ksk: &KeySwitchKey,
    what: &'static str,
    kind: SwitchKeyKind,
) -> Result<SwitchKeyData, CkksError> {
    ksk.words.check_host(what)?;
    Ok(SwitchKeyData {
        format: FORMAT,
        context_id: ksk.context,
        key_id: ksk.key_id,
        n: ksk.n,
        digits: ksk.digits,
        rows: ksk.rows,
        kind,
        words: ksk.words.as_slice().to_vec(),
    })
}

impl RotationKey {
    /// The portable form of this rotation or conjugation key.
    ///
    /// # Errors
    /// [`CkksError::NotHostAccessible`].
    pub fn to_data(&self) -> Result<SwitchKeyData, CkksError> {
        let kind = match self.step {
            Some(step) => SwitchKeyKind::Rotation {
                step,
                galois_element: self.galois_element,
            },
            None => SwitchKeyKind::Conjugation {
                galois_element: self.galois_element,
            },
        };
        switch_key_data(&self.ksk, "rotation key to_data", kind)
    }
}

impl RelinearizationKey {
    /// The portable form of this relinearization key.
    ///
    /// # Errors
    /// [`CkksError::NotHostAccessible`].
    pub fn to_data(&self) -> Result<SwitchKeyData, CkksError> {
        switch_key_data(
            &self.ksk,
            "relinearization key to_data",
            SwitchKeyKind::Relinearization,
        )
    }
}
