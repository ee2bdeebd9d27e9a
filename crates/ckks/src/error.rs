//! The crate's one error type.

use fhelium_residency::ResidencyLocation;

use crate::values::{Domain, ModulusBasis};

/// Every way a CKKS call can fail. Operations that return an error leave their inputs untouched.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CkksError {
    /// A preset name that is not one of [`crate::Preset::ALL`].
    #[error("unknown CKKS preset {name:?}")]
    UnknownPreset {
        /// The name given.
        name: String,
    },
    /// Parameters that break a structural rule (primes, sizes, generator).
    #[error("invalid CKKS configuration: {reason}")]
    InvalidConfig {
        /// What is wrong.
        reason: String,
    },
    /// The full QP modulus exceeds the 128-bit security budget (spec §1.7).
    #[error("QP modulus of {total_modulus_bits} bits exceeds the {security_bits}-bit security budget {budget_bits:?} for N = 2^{log_n}")]
    SecurityBudgetExceeded {
        /// log2 N.
        log_n: u32,
        /// `ceil(log2(QP))`.
        total_modulus_bits: u32,
        /// The budget for this N (`None`: no table row for this N).
        budget_bits: Option<u32>,
        /// The security level claimed.
        security_bits: u32,
    },
    /// Operands at different levels.
    #[error("{op}: level mismatch ({left} vs {right})")]
    LevelMismatch {
        /// Operation name.
        op: &'static str,
        /// Level of the first operand.
        left: usize,
        /// Level of the second operand.
        right: usize,
    },
    /// Operand scales that are not bit-equal binary64 values.
    #[error("{op}: scales are not bit-equal ({left:e} vs {right:e})")]
    ScaleMismatch {
        /// Operation name.
        op: &'static str,
        /// Scale of the first operand.
        left: f64,
        /// Scale of the second operand.
        right: f64,
    },
    /// An operand in the wrong polynomial domain.
    #[error("{op}: expected {expected} domain, got {actual}")]
    DomainMismatch {
        /// Operation name.
        op: &'static str,
        /// The domain the operation needs.
        expected: Domain,
        /// The domain given.
        actual: Domain,
    },
    /// An operand in the wrong modulus basis.
    #[error("{op}: expected basis {expected}, got {actual}")]
    BasisMismatch {
        /// Operation name.
        op: &'static str,
        /// The basis the operation needs.
        expected: ModulusBasis,
        /// The basis given.
        actual: ModulusBasis,
    },
    /// A ciphertext with the wrong number of components.
    #[error("{op}: expected {expected} components, got {actual}")]
    ComponentMismatch {
        /// Operation name.
        op: &'static str,
        /// Components needed.
        expected: usize,
        /// Components given.
        actual: usize,
    },
    /// A plaintext in the wrong representation (integer coefficients, RNS, ...).
    #[error("{op}: expected a {expected} plaintext, got {actual}")]
    RepresentationMismatch {
        /// Operation name.
        op: &'static str,
        /// The representation needed.
        expected: &'static str,
        /// The representation given.
        actual: &'static str,
    },
    /// A key made for another secret key, another context or another purpose.
    #[error("{op}: wrong key: {reason}")]
    WrongKey {
        /// Operation name.
        op: &'static str,
        /// Why the key does not fit.
        reason: String,
    },
    /// A value made by an engine with other parameters.
    #[error("{op}: value belongs to context {actual:016x}, engine is {expected:016x}")]
    ContextMismatch {
        /// Operation name.
        op: &'static str,
        /// The engine's context id.
        expected: u64,
        /// The value's context id.
        actual: u64,
    },
    /// Rescale or mod-switch from the last public level.
    #[error("{op}: no level below {level} (last public level is {max_level})")]
    LevelExhausted {
        /// Operation name.
        op: &'static str,
        /// The operand's level.
        level: usize,
        /// The last public level.
        max_level: usize,
    },
    /// A level outside `0..=max_level`, or a target level above the current one.
    #[error("{op}: invalid level {level} (current {current}, last public level {max_level})")]
    InvalidLevel {
        /// Operation name.
        op: &'static str,
        /// The level asked for.
        level: usize,
        /// The operand's current level (equal to `level` when there is no operand).
        current: usize,
        /// The last public level.
        max_level: usize,
    },
    /// A scale that is not positive and finite, or a product that over/underflows binary64.
    #[error("{op}: invalid scale {scale:e}")]
    InvalidScale {
        /// Operation name.
        op: &'static str,
        /// The offending scale.
        scale: f64,
    },
    /// More message values than slots.
    #[error("message of {len} values is longer than the {slots} slots")]
    MessageTooLong {
        /// Message length.
        len: usize,
        /// Slot count N/2.
        slots: usize,
    },
    /// A coefficient vector handed to the encoder that is not of length N.
    #[error("{op}: {len} coefficients given, the ring has N = {n}")]
    CoefficientCount {
        /// Operation name.
        op: &'static str,
        /// Coefficients given.
        len: usize,
        /// Ring degree N.
        n: usize,
    },
    /// A message value that is not finite, or a scaled coefficient outside the int64 range.
    #[error("{op}: scaled coefficient {value:e} is not finite or does not fit in int64")]
    CoefficientOutOfRange {
        /// Operation name.
        op: &'static str,
        /// The offending scaled value.
        value: f64,
    },
    /// A value whose words are not in host-accessible memory (the CPU engine needs pageable,
    /// pinned or `sim:N` storage).
    #[error("{op}: {location} is not host-accessible; the CPU engine needs pageable, pinned or sim memory")]
    NotHostAccessible {
        /// Operation name.
        op: &'static str,
        /// Where the value lives.
        location: ResidencyLocation,
    },
    /// A value whose words a caller wrote (`Ciphertext::view_mut`) holds a word that is not a
    /// canonical residue of its row's prime; the operation read nothing else and changed nothing.
    #[error("{op}: word {index} at {location} is {word}, not a residue of prime id {prime_id} (q = {modulus}); words written through view_mut must stay below their row's modulus")]
    NonCanonicalWord {
        /// Operation name.
        op: &'static str,
        /// Where the value lives.
        location: ResidencyLocation,
        /// The word's index in the value (component, then limb row, then coefficient).
        index: usize,
        /// The prime of the word's row.
        prime_id: usize,
        /// The word.
        word: u64,
        /// The row's modulus.
        modulus: u64,
    },
    /// Serialized data (`serial`) that does not describe a value of this engine's parameters.
    #[error("{what}: invalid data: {reason}")]
    InvalidData {
        /// Which value was being read.
        what: &'static str,
        /// What is wrong (the field, the expected and the found value).
        reason: String,
    },
    /// A key cache with a byte capacity was asked for a key larger than the whole capacity
    /// (nothing was made and no key left the cache).
    #[error("{op}: the {key} ({bytes} bytes) does not fit the {location} key cache's capacity of {capacity} bytes")]
    KeyCacheCapacity {
        /// Operation name.
        op: &'static str,
        /// The key asked for.
        key: crate::keycache::CachedKey,
        /// Where the cache keeps its keys (`pageable-host` for the CPU engine, `cuda:N`).
        location: ResidencyLocation,
        /// The key's bytes.
        bytes: u64,
        /// The cache's capacity in bytes.
        capacity: u64,
    },
    /// The memory layer refused an allocation or a copy (budget, injected fault, location).
    #[error(transparent)]
    Memory(#[from] fhelium_cuda::MemoryError),
    /// Rotation step 0 needs no key, and conjugation keys are not rotation keys.
    #[error("{op}: invalid rotation: {reason}")]
    InvalidRotation {
        /// Operation name.
        op: &'static str,
        /// Why.
        reason: String,
    },
}
