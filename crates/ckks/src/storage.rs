//! The one place that owns a value's words.
//!
//! Values made by the engine keep their words in an [`fhelium_cuda::Buffer`] allocated from
//! the engine's [`Memory`] at the location of the operation's input (so budgets and fault
//! injection of the memory layer apply). [`Words::from_vec`] wraps a plain host vector
//! (pageable memory outside any budget), for code that downloads results.

use std::sync::atomic::{AtomicBool, Ordering};

use fhelium_cuda::{Buffer, Event, Memory, MemoryError, StorageKey, Stream};
use fhelium_residency::ResidencyLocation;

use crate::error::CkksError;

#[derive(Debug)]
enum Backing {
    Buffer(Buffer),
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    Host(Vec<u64>),
}

/// Contiguous u64 words at one location.
#[derive(Debug)]
pub(crate) struct Words {
    backing: Backing,
    location: ResidencyLocation,
    /// Written through a public mutable view since the engine last checked that every word is
    /// canonical ([`Words::mark_written`], [`Words::check_rows_canonical`]).
    written: AtomicBool,
}

/// Is a location's memory readable by the host (pageable, pinned or a simulated device)?
#[must_use]
pub fn is_host_accessible(location: &ResidencyLocation) -> bool {
    !matches!(location, ResidencyLocation::Cuda(_))
}

impl Words {
    /// Wraps a host vector as storage at `location` (not accounted in any [`Memory`]).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn from_vec(data: Vec<u64>, location: ResidencyLocation) -> Self {
        Self {
            backing: Backing::Host(data),
            location,
            written: AtomicBool::new(false),
        }
    }

    /// Wraps a buffer of the memory layer.
    pub(crate) fn from_buffer(buffer: Buffer) -> Self {
        Self {
            location: buffer.location(),
            backing: Backing::Buffer(buffer),
            written: AtomicBool::new(false),
        }
    }

    /// `len` zeroed words at `location`, allocated from `mem`.
    pub(crate) fn alloc(
        mem: &Memory,
        location: ResidencyLocation,
        len: usize,
    ) -> Result<Self, CkksError> {
        Ok(Self::from_buffer(mem.alloc(&location, len, None)?))
    }

    /// A copy of `data` at `location`, allocated from `mem` (host-accessible locations).
    pub(crate) fn alloc_copy(
        mem: &Memory,
        location: ResidencyLocation,
        data: &[u64],
    ) -> Result<Self, CkksError> {
        let mut w = Self::alloc(mem, location, data.len())?;
        w.as_mut_slice().copy_from_slice(data);
        Ok(w)
    }

    /// The words (empty for device memory: check [`Words::check_host`] first).
    pub(crate) fn as_slice(&self) -> &[u64] {
        match &self.backing {
            Backing::Host(v) => v,
            Backing::Buffer(b) => b.host_slice().unwrap_or(&[]),
        }
    }

    /// The words, mutably (empty for device memory).
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u64] {
        match &mut self.backing {
            Backing::Host(v) => v,
            Backing::Buffer(b) => b.host_slice_mut().unwrap_or(&mut []),
        }
    }

    /// Number of words.
    pub(crate) fn len(&self) -> usize {
        match &self.backing {
            Backing::Host(v) => v.len(),
            Backing::Buffer(b) => b.words(),
        }
    }

    /// Where the words live.
    pub(crate) fn location(&self) -> ResidencyLocation {
        self.location
    }

    /// The buffer, when the words live in one.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn buffer(&self) -> Option<&Buffer> {
        match &self.backing {
            Backing::Buffer(b) => Some(b),
            Backing::Host(_) => None,
        }
    }

    /// Bytes of the backing allocation (equal to the payload: values never narrow in place).
    pub(crate) fn storage_nbytes(&self) -> u64 {
        (self.len() * 8) as u64
    }

    /// Storage identity for the residency manager's alias check.
    pub(crate) fn storage_key(&self) -> StorageKey {
        match &self.backing {
            Backing::Buffer(b) => b.storage_key(),
            Backing::Host(v) => StorageKey {
                location: self.location,
                base: v.as_ptr() as u64,
            },
        }
    }

    /// The pending events of the buffer's producers (none for host vectors).
    pub(crate) fn pending_events(&self) -> Result<Vec<Event>, MemoryError> {
        match &self.backing {
            Backing::Buffer(b) => b.pending_events(),
            Backing::Host(_) => Ok(Vec::new()),
        }
    }

    /// An independent copy at `to` and its copy-complete event.
    pub(crate) fn materialize(
        &self,
        mem: &Memory,
        to: &ResidencyLocation,
        stream: Option<&Stream>,
    ) -> Result<(Self, Option<Event>), MemoryError> {
        let (buf, ev) = match &self.backing {
            Backing::Buffer(b) => b.copy_to(mem, to, stream)?,
            Backing::Host(v) => mem.alloc_from(to, v, stream)?,
        };
        let copy = Self::from_buffer(buf);
        // A copy of words nobody has checked since a caller wrote them is just as unchecked.
        copy.written
            .store(self.written.load(Ordering::Relaxed), Ordering::Relaxed);
        Ok((copy, ev))
    }

    /// Marks the words as written by a caller: the next operation that reads them checks that
    /// every word is canonical first.
    pub(crate) fn mark_written(&self) {
        self.written.store(true, Ordering::Relaxed);
    }

    /// When the words were written by a caller since the last check ([`Words::mark_written`]):
    /// checks that each row of `n` words (row r belongs to prime `ids[r % ids.len()]`, whose
    /// modulus `modulus` gives) holds canonical residues, and remembers that they do.
    ///
    /// # Errors
    /// [`CkksError::NonCanonicalWord`] for the first word `>=` its modulus (the words stay
    /// marked, so every later operation refuses them too); [`CkksError::NotHostAccessible`].
    pub(crate) fn check_rows_canonical(
        &self,
        op: &'static str,
        n: usize,
        ids: &[usize],
        modulus: impl Fn(usize) -> u64,
    ) -> Result<(), CkksError> {
        if !self.written.load(Ordering::Relaxed) {
            return Ok(());
        }
        self.check_host(op)?;
        if let Some(bad) = first_non_canonical(self.as_slice(), n, ids, modulus) {
            return Err(CkksError::NonCanonicalWord {
                op,
                location: self.location,
                index: bad.index,
                prime_id: bad.prime_id,
                word: bad.word,
                modulus: bad.modulus,
            });
        }
        self.written.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Overwrites every word with zero (secret material).
    pub(crate) fn zeroize(&mut self) {
        zeroize::Zeroize::zeroize(self.as_mut_slice());
    }

    /// Checks that the CPU engine can read these words.
    pub(crate) fn check_host(&self, op: &'static str) -> Result<(), CkksError> {
        let host = match &self.backing {
            Backing::Host(_) => true,
            Backing::Buffer(b) => b.is_host_accessible(),
        };
        if host {
            Ok(())
        } else {
            Err(CkksError::NotHostAccessible {
                op,
                location: self.location,
            })
        }
    }
}

/// A word that is not a canonical residue of its row's prime.
pub(crate) struct NonCanonical {
    /// Its index in the words.
    pub index: usize,
    /// The prime of its row.
    pub prime_id: usize,
    /// The word.
    pub word: u64,
    /// The row's modulus.
    pub modulus: u64,
}

/// The first word `>=` its row's modulus, rows of `n` words, row r of prime `ids[r % ids.len()]`
/// (the layout of every RNS value: component, then limb row).
pub(crate) fn first_non_canonical(
    words: &[u64],
    n: usize,
    ids: &[usize],
    modulus: impl Fn(usize) -> u64,
) -> Option<NonCanonical> {
    words.chunks_exact(n).enumerate().find_map(|(r, row)| {
        let prime_id = ids[r % ids.len()];
        let q = modulus(prime_id);
        row.iter().position(|&w| w >= q).map(|k| NonCanonical {
            index: r * n + k,
            prime_id,
            word: row[k],
            modulus: q,
        })
    })
}
