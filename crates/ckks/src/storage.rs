//! The one place that owns a value's words.
//!
//! Until `fhelium_cuda::Buffer` lands this is a host vector tagged with its
//! [`ResidencyLocation`]; every value reaches its words only through [`Words`], so swapping the
//! backing store is a change to this file alone.

use fhelium_residency::ResidencyLocation;

use crate::error::CkksError;

/// Contiguous u64 words at one location.
#[derive(Clone, Debug)]
pub(crate) struct Words {
    data: Vec<u64>,
    location: ResidencyLocation,
}

/// Is a location's memory readable by the host (pageable, pinned or a simulated device)?
#[must_use]
pub fn is_host_accessible(location: &ResidencyLocation) -> bool {
    !matches!(location, ResidencyLocation::Cuda(_))
}

impl Words {
    /// Wraps a host vector as storage at `location`.
    pub(crate) fn from_vec(data: Vec<u64>, location: ResidencyLocation) -> Self {
        Self { data, location }
    }

    /// The words (host-accessible storage only).
    pub(crate) fn as_slice(&self) -> &[u64] {
        &self.data
    }

    /// The words, mutably.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u64] {
        &mut self.data
    }

    /// Number of words.
    pub(crate) fn len(&self) -> usize {
        self.data.len()
    }

    /// Where the words live.
    pub(crate) fn location(&self) -> ResidencyLocation {
        self.location
    }

    /// Bytes of the backing allocation (equal to the payload for freshly allocated values).
    pub(crate) fn storage_nbytes(&self) -> u64 {
        (self.data.len() * 8) as u64
    }

    /// A copy of these words at another host-accessible location.
    pub(crate) fn copy_to(&self, location: ResidencyLocation) -> Result<Self, CkksError> {
        if !is_host_accessible(&location) {
            return Err(CkksError::NotHostAccessible {
                op: "copy",
                location,
            });
        }
        Ok(Self {
            data: self.data.clone(),
            location,
        })
    }

    /// Overwrites every word with zero (secret material).
    pub(crate) fn zeroize(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.data);
    }

    /// Checks that the CPU engine can read these words.
    pub(crate) fn check_host(&self, op: &'static str) -> Result<(), CkksError> {
        if is_host_accessible(&self.location) {
            Ok(())
        } else {
            Err(CkksError::NotHostAccessible {
                op,
                location: self.location,
            })
        }
    }
}
