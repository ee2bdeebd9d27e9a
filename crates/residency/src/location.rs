//! Residency locations: where a materialization of a logical value can live.
//!
//! Four kinds exist: pageable host memory, page-locked (pinned) host memory, a CUDA device and a
//! *simulated* device (`sim:N`). A simulated device behaves exactly like a CUDA device for
//! planning and accounting; its memory is host memory. It lets every device scenario run on
//! machines without a GPU.
//!
//! Locations have a canonical total order used by every deterministic algorithm: pageable host,
//! pinned host, then device locations (CUDA before simulated) by ascending index.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::ModelError;

/// Largest device index a location may name.
pub const MAX_DEVICE_INDEX: u8 = 127;

/// The kind of a location, without its device index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResidencyLocationKind {
    /// Ordinary (pageable) host memory.
    PageableHost,
    /// Page-locked host memory, the only host memory the GPU can copy from asynchronously.
    PinnedHost,
    /// A CUDA device.
    Cuda,
    /// A simulated device whose memory is host memory.
    Sim,
}

impl ResidencyLocationKind {
    /// The stable diagnostic name of the kind (`pageable-host`, `pinned-host`, `cuda`, `sim`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::PageableHost => "pageable-host",
            Self::PinnedHost => "pinned-host",
            Self::Cuda => "cuda",
            Self::Sim => "sim",
        }
    }
}

/// One place where a materialization can live.
///
/// Equality, hashing and ordering are by (kind, index). `Ord` is the canonical location order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResidencyLocation {
    /// Ordinary host memory (`pageable-host`).
    PageableHost,
    /// Page-locked host memory (`pinned-host`).
    PinnedHost,
    /// CUDA device `N` (`cuda:N`).
    Cuda(u8),
    /// Simulated device `N` (`sim:N`).
    Sim(u8),
}

/// The pageable host location.
pub const PAGEABLE_HOST: ResidencyLocation = ResidencyLocation::PageableHost;
/// The pinned host location.
pub const PINNED_HOST: ResidencyLocation = ResidencyLocation::PinnedHost;

impl ResidencyLocation {
    /// A CUDA location, validating the index range.
    ///
    /// # Errors
    /// [`ModelError::IndexOutOfRange`] when `index > 127`.
    pub fn cuda(index: u32) -> Result<Self, ModelError> {
        Self::checked_index(index, "cuda").map(Self::Cuda)
    }

    /// A simulated-device location, validating the index range.
    ///
    /// # Errors
    /// [`ModelError::IndexOutOfRange`] when `index > 127`.
    pub fn sim(index: u32) -> Result<Self, ModelError> {
        Self::checked_index(index, "sim").map(Self::Sim)
    }

    fn checked_index(index: u32, prefix: &str) -> Result<u8, ModelError> {
        u8::try_from(index)
            .ok()
            .filter(|i| *i <= MAX_DEVICE_INDEX)
            .ok_or_else(|| ModelError::IndexOutOfRange {
                text: format!("{prefix}:{index}"),
            })
    }

    /// The kind of this location.
    #[must_use]
    pub const fn kind(self) -> ResidencyLocationKind {
        match self {
            Self::PageableHost => ResidencyLocationKind::PageableHost,
            Self::PinnedHost => ResidencyLocationKind::PinnedHost,
            Self::Cuda(_) => ResidencyLocationKind::Cuda,
            Self::Sim(_) => ResidencyLocationKind::Sim,
        }
    }

    /// The device index of a device location, `None` for host locations.
    #[must_use]
    pub const fn device_index(self) -> Option<u8> {
        match self {
            Self::Cuda(i) | Self::Sim(i) => Some(i),
            Self::PageableHost | Self::PinnedHost => None,
        }
    }

    /// True for `cuda:N` and `sim:N`: locations whose consumers run on streams and whose
    /// leases are tracked by events.
    #[must_use]
    pub const fn is_device(self) -> bool {
        matches!(self, Self::Cuda(_) | Self::Sim(_))
    }

    /// True for the two host locations.
    #[must_use]
    pub const fn is_host(self) -> bool {
        !self.is_device()
    }

    /// The stable diagnostic name: `pageable-host`, `pinned-host`, `cuda:N` or `sim:N`.
    #[must_use]
    pub fn name(self) -> String {
        self.to_string()
    }
}

impl fmt::Display for ResidencyLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PageableHost => f.write_str("pageable-host"),
            Self::PinnedHost => f.write_str("pinned-host"),
            Self::Cuda(i) => write!(f, "cuda:{i}"),
            Self::Sim(i) => write!(f, "sim:{i}"),
        }
    }
}

impl FromStr for ResidencyLocation {
    type Err = ModelError;

    /// Parses a location name with FHElium's canonical rules: `cuda:` followed by `0` or a
    /// digit string without a leading zero, at most 127. A bare `cuda` is rejected, because
    /// the model never resolves a "current device". `sim:N` follows the same rules.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "pageable-host" => return Ok(Self::PageableHost),
            "pinned-host" => return Ok(Self::PinnedHost),
            "cuda" | "sim" => {
                return Err(ModelError::UnindexedDevice {
                    text: text.to_owned(),
                })
            }
            _ => {}
        }
        let (prefix, digits) =
            text.split_once(':')
                .ok_or_else(|| ModelError::UnsupportedLocation {
                    text: text.to_owned(),
                })?;
        let build: fn(u8) -> Self = match prefix {
            "cuda" => Self::Cuda,
            "sim" => Self::Sim,
            _ => {
                return Err(ModelError::UnsupportedLocation {
                    text: text.to_owned(),
                })
            }
        };
        let canonical = !digits.is_empty()
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits == "0" || !digits.starts_with('0'));
        if !canonical {
            return Err(ModelError::NonCanonicalIndex {
                text: text.to_owned(),
            });
        }
        let index = digits
            .parse::<u32>()
            .ok()
            .and_then(|i| u8::try_from(i).ok())
            .filter(|i| *i <= MAX_DEVICE_INDEX)
            .ok_or_else(|| ModelError::IndexOutOfRange {
                text: text.to_owned(),
            })?;
        Ok(build(index))
    }
}

impl Serialize for ResidencyLocation {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ResidencyLocation {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for text in [
            "pageable-host",
            "pinned-host",
            "cuda:0",
            "cuda:7",
            "cuda:127",
            "sim:0",
            "sim:12",
        ] {
            let loc: ResidencyLocation = text.parse().unwrap();
            assert_eq!(loc.to_string(), text);
            let json = serde_json::to_string(&loc).unwrap();
            assert_eq!(
                serde_json::from_str::<ResidencyLocation>(&json).unwrap(),
                loc
            );
        }
    }

    #[test]
    fn non_canonical_indices_are_rejected() {
        for text in [
            "cuda:00", "cuda:01", "cuda:-1", "cuda:", "cuda:1a", "sim:007",
        ] {
            let err = text.parse::<ResidencyLocation>().unwrap_err();
            assert!(
                matches!(err, ModelError::NonCanonicalIndex { .. }),
                "{text}: {err}"
            );
            assert!(err.to_string().contains("canonical"));
        }
    }

    #[test]
    fn out_of_range_indices_are_rejected() {
        for text in ["cuda:128", "cuda:256", "cuda:999", "cuda:99999999999"] {
            let err = text.parse::<ResidencyLocation>().unwrap_err();
            assert!(matches!(err, ModelError::IndexOutOfRange { .. }), "{text}");
            assert!(err.to_string().contains("between 0 and 127"));
        }
        assert!(ResidencyLocation::cuda(128).is_err());
        assert_eq!(
            ResidencyLocation::cuda(127).unwrap(),
            ResidencyLocation::Cuda(127)
        );
        assert!(ResidencyLocation::sim(300).is_err());
    }

    #[test]
    fn unindexed_and_unknown_are_rejected() {
        let err = "cuda".parse::<ResidencyLocation>().unwrap_err();
        assert!(err.to_string().contains("indexed"));
        for text in ["cpu", "host", "gpu:0", ""] {
            let err = text.parse::<ResidencyLocation>().unwrap_err();
            assert!(err.to_string().contains("Unsupported"), "{text}");
        }
    }

    #[test]
    fn canonical_order_is_pageable_pinned_devices() {
        let mut locs = vec![
            ResidencyLocation::Sim(0),
            ResidencyLocation::Cuda(3),
            PINNED_HOST,
            ResidencyLocation::Cuda(0),
            PAGEABLE_HOST,
        ];
        locs.sort();
        assert_eq!(
            locs,
            vec![
                PAGEABLE_HOST,
                PINNED_HOST,
                ResidencyLocation::Cuda(0),
                ResidencyLocation::Cuda(3),
                ResidencyLocation::Sim(0)
            ]
        );
        assert!(ResidencyLocation::Cuda(1).is_device());
        assert!(PINNED_HOST.is_host());
        assert_eq!(ResidencyLocation::Sim(4).device_index(), Some(4));
        assert_eq!(PAGEABLE_HOST.kind().name(), "pageable-host");
    }
}
