//! Value types: plaintexts, ciphertexts and their state flags.

use std::fmt;

use fhelium_residency::ResidencyLocation;
use ndarray::{ArrayView3, ArrayViewMut3};

use crate::storage::Words;

/// Polynomial domain of a value's last axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Domain {
    /// Coefficients of the polynomial.
    Coefficient,
    /// NTT evaluations in bit-reversed order (index k ↔ `a(ψ^(2·br(k)+1))`).
    Ntt,
}

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Domain::Coefficient => "coefficient",
            Domain::Ntt => "ntt",
        })
    }
}

/// Modulus basis: the active Q primes, optionally with the special primes P.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ModulusBasis {
    /// Active Q rows only.
    Q,
    /// Active Q rows followed by every P row.
    QP,
}

impl fmt::Display for ModulusBasis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ModulusBasis::Q => "Q",
            ModulusBasis::QP => "QP",
        })
    }
}

/// What a plaintext's words hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum PlaintextRepresentation {
    /// Output of `encode`: N signed coefficients, stored as i64 bit patterns in one row.
    IntegerCoefficients,
    /// Output of `decrypt`: N real coefficients, stored as f64 bit patterns in one row.
    ApproximateCoefficients,
    /// RNS residues, one row per active prime (canonical standard form).
    Rns,
}

impl PlaintextRepresentation {
    /// Stable name used in errors.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            PlaintextRepresentation::IntegerCoefficients => "integer_coefficients",
            PlaintextRepresentation::ApproximateCoefficients => "approximate_coefficients",
            PlaintextRepresentation::Rns => "rns",
        }
    }
}

/// Row ids (canonical prime ids) of a value at `level` in `basis`, for `nq` Q primes and
/// `np` P primes: `level..nq`, then `nq..nq+np` for QP.
#[must_use]
pub fn prime_ids(level: usize, basis: ModulusBasis, nq: usize, np: usize) -> Vec<usize> {
    let mut ids: Vec<usize> = (level..nq).collect();
    if basis == ModulusBasis::QP {
        ids.extend(nq..nq + np);
    }
    ids
}

/// A CKKS ciphertext: `components × limbs × N` words, limb-major per component; limb j holds the
/// residues modulo prime id `prime_ids()[j]`, canonical in `[0, q)`, standard (non-Montgomery)
/// form, in the coefficient domain or the bit-reversed NTT domain.
#[derive(Debug)]
pub struct Ciphertext {
    pub(crate) words: Words,
    pub(crate) context: u64,
    pub(crate) n: usize,
    pub(crate) level: usize,
    pub(crate) scale: f64,
    pub(crate) domain: Domain,
    pub(crate) basis: ModulusBasis,
    pub(crate) components: usize,
    pub(crate) prime_ids: Vec<usize>,
}

/// A CKKS plaintext (see [`PlaintextRepresentation`]); RNS plaintexts are `limbs × N` words.
#[derive(Debug)]
pub struct Plaintext {
    pub(crate) words: Words,
    pub(crate) context: u64,
    pub(crate) n: usize,
    pub(crate) level: usize,
    pub(crate) scale: f64,
    pub(crate) domain: Domain,
    pub(crate) basis: ModulusBasis,
    pub(crate) representation: PlaintextRepresentation,
    pub(crate) prime_ids: Vec<usize>,
}

macro_rules! common_accessors {
    ($t:ty) => {
        impl $t {
            /// Level (0 = full Q chain).
            #[must_use]
            pub fn level(&self) -> usize {
                self.level
            }
            /// The exact binary64 scale.
            #[must_use]
            pub fn scale(&self) -> f64 {
                self.scale
            }
            /// Polynomial domain.
            #[must_use]
            pub fn domain(&self) -> Domain {
                self.domain
            }
            /// Modulus basis.
            #[must_use]
            pub fn basis(&self) -> ModulusBasis {
                self.basis
            }
            /// Ring degree N.
            #[must_use]
            pub fn n(&self) -> usize {
                self.n
            }
            /// Canonical prime id of each limb row (empty for coefficient plaintexts).
            #[must_use]
            pub fn prime_ids(&self) -> &[usize] {
                &self.prime_ids
            }
            /// Identity of the parameter set that made this value.
            #[must_use]
            pub fn context_id(&self) -> u64 {
                self.context
            }
            /// Where the words live.
            #[must_use]
            pub fn location(&self) -> ResidencyLocation {
                self.words.location()
            }
            /// Logical payload bytes (words × 8), spec §2.4.
            #[must_use]
            pub fn nbytes(&self) -> u64 {
                (self.words.len() * 8) as u64
            }
            /// Bytes of the distinct backing storage (equal to `nbytes` for our values, which
            /// never narrow in place).
            #[must_use]
            pub fn storage_nbytes(&self) -> u64 {
                self.words.storage_nbytes()
            }
            /// The raw words, row-major `[component, limb, N]`.
            #[must_use]
            pub fn words(&self) -> &[u64] {
                self.words.as_slice()
            }
            /// A copy of this value's metadata around new words.
            pub(crate) fn with_words(&self, words: Words) -> Self {
                Self {
                    words,
                    prime_ids: self.prime_ids.clone(),
                    ..*self
                }
            }
        }
    };
}

common_accessors!(Ciphertext);
common_accessors!(Plaintext);

impl Ciphertext {
    /// Number of polynomial components (2, or 3 after `multiply`).
    #[must_use]
    pub fn components(&self) -> usize {
        self.components
    }

    /// Number of limb rows.
    #[must_use]
    pub fn num_limbs(&self) -> usize {
        self.prime_ids.len()
    }

    /// The words as an ndarray view shaped `[component, limb, N]` (`None` when the words are
    /// not host-accessible).
    #[must_use]
    pub fn view(&self) -> Option<ArrayView3<'_, u64>> {
        let shape = (self.components, self.prime_ids.len(), self.n);
        ArrayView3::from_shape(shape, self.words.as_slice()).ok()
    }

    /// Mutable ndarray view shaped `[component, limb, N]` (`None` when the words are not
    /// host-accessible). Every word must stay a canonical residue of its row's prime (below
    /// `q`): the next operation that reads the ciphertext checks them all once and refuses it
    /// with [`CkksError::NonCanonicalWord`](crate::CkksError::NonCanonicalWord) otherwise.
    pub fn view_mut(&mut self) -> Option<ArrayViewMut3<'_, u64>> {
        if self.words.check_host("view_mut").is_ok() {
            self.words.mark_written();
        }
        let shape = (self.components, self.prime_ids.len(), self.n);
        ArrayViewMut3::from_shape(shape, self.words.as_mut_slice()).ok()
    }
}

impl Plaintext {
    /// What the words hold.
    #[must_use]
    pub fn representation(&self) -> PlaintextRepresentation {
        self.representation
    }

    /// Number of rows (1 for coefficient representations).
    #[must_use]
    pub fn num_limbs(&self) -> usize {
        self.words.len() / self.n
    }

    /// The words as an ndarray view shaped `[1, limb, N]` (`None` when not host-accessible).
    #[must_use]
    pub fn view(&self) -> Option<ArrayView3<'_, u64>> {
        let shape = (1, self.num_limbs(), self.n);
        ArrayView3::from_shape(shape, self.words.as_slice()).ok()
    }

    /// The signed coefficients of an `IntegerCoefficients` plaintext.
    #[must_use]
    pub fn integer_coefficients(&self) -> Option<Vec<i64>> {
        (self.representation == PlaintextRepresentation::IntegerCoefficients)
            .then(|| self.words.as_slice().iter().map(|&w| w as i64).collect())
    }

    /// The real coefficients of an `ApproximateCoefficients` plaintext.
    #[must_use]
    pub fn approximate_coefficients(&self) -> Option<Vec<f64>> {
        (self.representation == PlaintextRepresentation::ApproximateCoefficients).then(|| {
            self.words
                .as_slice()
                .iter()
                .map(|&w| f64::from_bits(w))
                .collect()
        })
    }
}

/// `fhelium_cuda::Resident` for a value with one `words` field.
macro_rules! resident_impl {
    ($t:ty, $tag:literal, |$v:ident| $words:expr, |$src:ident, $w:ident| $rebuild:expr) => {
        impl fhelium_cuda::Resident for $t {
            fn type_tag(&self) -> &'static str {
                $tag
            }
            fn placement(&self) -> Result<ResidencyLocation, fhelium_cuda::MemoryError> {
                let $v = self;
                fhelium_cuda::common_placement($tag, [$words.location()])
            }
            fn nbytes(&self) -> u64 {
                let $v = self;
                ($words.len() * 8) as u64
            }
            fn storage_nbytes(&self) -> u64 {
                let $v = self;
                $words.storage_nbytes()
            }
            fn storage_keys(&self) -> Vec<fhelium_cuda::StorageKey> {
                let $v = self;
                if $words.len() == 0 {
                    Vec::new()
                } else {
                    vec![$words.storage_key()]
                }
            }
            fn pending_events(
                &self,
            ) -> Result<Vec<fhelium_cuda::Event>, fhelium_cuda::MemoryError> {
                let $v = self;
                $words.pending_events()
            }
            fn materialize(
                &self,
                mem: &fhelium_cuda::Memory,
                to: &ResidencyLocation,
                stream: Option<&fhelium_cuda::Stream>,
            ) -> Result<fhelium_cuda::Materialized<Self>, fhelium_cuda::MemoryError> {
                let $v = self;
                let ($w, ready) = $words.materialize(mem, to, stream)?;
                let $src = self;
                Ok(fhelium_cuda::Materialized {
                    value: $rebuild,
                    ready,
                })
            }
        }
    };
}
pub(crate) use resident_impl;

resident_impl!(Ciphertext, "Ciphertext", |v| v.words, |src, w| src
    .with_words(w));
resident_impl!(Plaintext, "Plaintext", |v| v.words, |src, w| src
    .with_words(w));
