//! The typed error of the pure model.

use thiserror::Error;

/// Every way a model value can be rejected at construction or a model operation can fail.
///
/// Variants carry the offending text, handle, location and byte figures so that a message
/// names what went wrong without the caller having to reconstruct it.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A location string is not one of `pageable-host`, `pinned-host`, `cuda:N`, `sim:N`.
    #[error("Unsupported residency location kind in {text:?}: expected pageable-host, pinned-host, cuda:N or sim:N")]
    UnsupportedLocation {
        /// The text that was parsed.
        text: String,
    },
    /// A device location without an index (`cuda`, `sim`): the model never resolves a current device.
    #[error("residency location {text:?} requires an indexed device such as cuda:0")]
    UnindexedDevice {
        /// The text that was parsed.
        text: String,
    },
    /// A device index that is not in canonical decimal form (`cuda:00`, `cuda:01`, `cuda:-1`).
    #[error("residency location {text:?} must use the canonical device index form (0 or a number without a leading zero)")]
    NonCanonicalIndex {
        /// The text that was parsed.
        text: String,
    },
    /// A device index outside `0..=127`.
    #[error("residency location {text:?}: device index must be between 0 and 127")]
    IndexOutOfRange {
        /// The text that was parsed.
        text: String,
    },
    /// A value type tag that is empty or only whitespace.
    #[error("value type name must be non-empty")]
    EmptyValueType,
    /// A reservation label that is empty or only whitespace.
    #[error("reservation label must be non-empty")]
    EmptyLabel,
    /// A value spec whose storage charge is below its logical payload.
    #[error("storage_nbytes ({storage_nbytes} bytes) must be at least logical_nbytes ({logical_nbytes} bytes)")]
    StorageBelowLogical {
        /// Logical payload bytes.
        logical_nbytes: u64,
        /// Storage bytes given.
        storage_nbytes: u64,
    },
}
