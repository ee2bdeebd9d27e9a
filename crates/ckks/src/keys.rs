//! Secret, public and key-switching keys (spec §3.3, §3.7).
//!
//! Key layout (the contract for a GPU backend): every key is NTT domain, canonical standard
//! form, always at level 0 with every row present, sliced by row at use time.
//! * [`SecretKey`]: `[Q+P rows, N]`.
//! * [`PublicKey`]: `[2, Q rows, N]` = (k0 = e − a·s, k1 = a).
//! * key-switching keys ([`RotationKey`], [`RelinearizationKey`]): `[digit, 2, Q+P rows, N]`;
//!   slice `(j, 0)` is `b_j = e_j − a_j·s + [P·s_src on the Q rows of digit j]`, slice `(j, 1)`
//!   is `a_j`. The row of prime id i is row i; at level ℓ the Q rows used start at row ℓ and the
//!   P rows are the last ones.

use fhelium_residency::ResidencyLocation;
use ndarray::{ArrayView2, ArrayView3, ArrayView4};

use crate::storage::Words;

/// The ternary secret key in NTT form on every QP row. Its words are zeroed on drop.
#[derive(Debug)]
pub struct SecretKey {
    pub(crate) words: Words,
    pub(crate) context: u64,
    pub(crate) key_id: u64,
    pub(crate) n: usize,
}

impl Drop for SecretKey {
    fn drop(&mut self) {
        self.words.zeroize();
    }
}

/// The public encryption key `(e − a·s, a)` on the Q rows (NTT form).
#[derive(Debug)]
pub struct PublicKey {
    pub(crate) words: Words,
    pub(crate) context: u64,
    pub(crate) key_id: u64,
    pub(crate) n: usize,
}

/// A hybrid key-switching key from `s_src` to the engine secret `s` (see the module docs).
#[derive(Debug)]
pub struct KeySwitchKey {
    pub(crate) words: Words,
    pub(crate) context: u64,
    pub(crate) key_id: u64,
    pub(crate) n: usize,
    pub(crate) digits: usize,
    pub(crate) rows: usize,
}

/// Key switching for the automorphism σ_g: a rotation by `step` slots (g = 3^step mod 2N) or
/// the conjugation (g = 2N − 1).
#[derive(Debug)]
pub struct RotationKey {
    pub(crate) ksk: KeySwitchKey,
    pub(crate) step: Option<i64>,
    pub(crate) galois_element: u64,
}

/// Key switching from `s²` to `s` (relinearization of a 3-component product).
#[derive(Debug)]
pub struct RelinearizationKey {
    pub(crate) ksk: KeySwitchKey,
}

macro_rules! key_common {
    ($t:ty) => {
        impl $t {
            /// Logical payload bytes.
            #[must_use]
            pub fn nbytes(&self) -> u64 {
                (self.words.len() * 8) as u64
            }
            /// Bytes of the distinct backing storage.
            #[must_use]
            pub fn storage_nbytes(&self) -> u64 {
                self.words.storage_nbytes()
            }
            /// Where the words live.
            #[must_use]
            pub fn location(&self) -> ResidencyLocation {
                self.words.location()
            }
            /// Identity of the parameter set.
            #[must_use]
            pub fn context_id(&self) -> u64 {
                self.context
            }
            /// Identity of the secret key this key belongs to (random, not secret).
            #[must_use]
            pub fn key_id(&self) -> u64 {
                self.key_id
            }
        }
    };
}

key_common!(SecretKey);
key_common!(PublicKey);
key_common!(KeySwitchKey);

impl SecretKey {
    /// `[row, N]` view of the NTT-form secret (`None` when not host-accessible).
    #[must_use]
    pub fn view(&self) -> Option<ArrayView2<'_, u64>> {
        ArrayView2::from_shape((self.words.len() / self.n, self.n), self.words.as_slice()).ok()
    }

    pub(crate) fn row(&self, id: usize) -> &[u64] {
        &self.words.as_slice()[id * self.n..(id + 1) * self.n]
    }
}

impl PublicKey {
    /// `[component, row, N]` view.
    #[must_use]
    pub fn view(&self) -> Option<ArrayView3<'_, u64>> {
        let rows = self.words.len() / (2 * self.n);
        ArrayView3::from_shape((2, rows, self.n), self.words.as_slice()).ok()
    }

    pub(crate) fn row(&self, component: usize, id: usize) -> &[u64] {
        let rows = self.words.len() / (2 * self.n);
        let off = (component * rows + id) * self.n;
        &self.words.as_slice()[off..off + self.n]
    }
}

impl KeySwitchKey {
    /// `[digit, component, row, N]` view.
    #[must_use]
    pub fn view(&self) -> Option<ArrayView4<'_, u64>> {
        ArrayView4::from_shape((self.digits, 2, self.rows, self.n), self.words.as_slice()).ok()
    }

    pub(crate) fn with_words(&self, words: Words) -> Self {
        Self { words, ..*self }
    }

    /// Number of level-0 digits (dnum).
    #[must_use]
    pub fn digits(&self) -> usize {
        self.digits
    }

    pub(crate) fn row(&self, digit: usize, component: usize, id: usize) -> &[u64] {
        let off = ((digit * 2 + component) * self.rows + id) * self.n;
        &self.words.as_slice()[off..off + self.n]
    }
}

impl RotationKey {
    /// The canonical rotation step in `[-N/4, N/4)` (`None` for the conjugation key).
    #[must_use]
    pub fn step(&self) -> Option<i64> {
        self.step
    }

    /// The Galois element g of σ_g.
    #[must_use]
    pub fn galois_element(&self) -> u64 {
        self.galois_element
    }

    /// The key-switching key.
    #[must_use]
    pub fn key_switch_key(&self) -> &KeySwitchKey {
        &self.ksk
    }

    /// Logical payload bytes (18,874,368 at the seed preset).
    #[must_use]
    pub fn nbytes(&self) -> u64 {
        self.ksk.nbytes()
    }

    /// Bytes of the distinct backing storage.
    #[must_use]
    pub fn storage_nbytes(&self) -> u64 {
        self.ksk.storage_nbytes()
    }

    /// Where the words live.
    #[must_use]
    pub fn location(&self) -> ResidencyLocation {
        self.ksk.location()
    }

    /// `[digit, component, row, N]` view.
    #[must_use]
    pub fn view(&self) -> Option<ArrayView4<'_, u64>> {
        self.ksk.view()
    }
}

impl RelinearizationKey {
    /// The key-switching key.
    #[must_use]
    pub fn key_switch_key(&self) -> &KeySwitchKey {
        &self.ksk
    }

    /// Logical payload bytes.
    #[must_use]
    pub fn nbytes(&self) -> u64 {
        self.ksk.nbytes()
    }

    /// `[digit, component, row, N]` view.
    #[must_use]
    pub fn view(&self) -> Option<ArrayView4<'_, u64>> {
        self.ksk.view()
    }
}

crate::values::resident_impl!(RotationKey, "RotationKey", |v| v.ksk.words, |src, w| {
    RotationKey {
        ksk: src.ksk.with_words(w),
        step: src.step,
        galois_element: src.galois_element,
    }
});
crate::values::resident_impl!(
    RelinearizationKey,
    "RelinearizationKey",
    |v| v.ksk.words,
    |src, w| {
        RelinearizationKey {
            ksk: src.ksk.with_words(w),
        }
    }
);
crate::values::resident_impl!(PublicKey, "PublicKey", |v| v.words, |src, w| PublicKey {
    words: w,
    context: src.context,
    key_id: src.key_id,
    n: src.n
});
crate::values::resident_impl!(SecretKey, "SecretKey", |v| v.words, |src, w| SecretKey {
    words: w,
    context: src.context,
    key_id: src.key_id,
    n: src.n
});
