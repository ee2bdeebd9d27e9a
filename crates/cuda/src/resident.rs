//! The `Resident` trait: what the runtime needs to know about a value made of buffers.

use std::collections::BTreeMap;

use fhelium_residency::ResidencyLocation;

use crate::buffer::StorageKey;
use crate::error::MemoryError;
use crate::memory::Memory;
use crate::stream::{Event, Stream};

/// A value made of one or more buffers that all live at one location (spec 1.5).
///
/// `fhelium-runtime` manages any `Resident`; `fhelium-ckks` values implement it.
pub trait Resident: Sized + Send + Sync + 'static {
    /// Runtime type name, e.g. `"Ciphertext"`.
    fn type_tag(&self) -> &'static str;

    /// The common location of all buffers.
    ///
    /// # Errors
    /// [`MemoryError::EmptyValue`] without buffers, [`MemoryError::MixedPinning`] when host
    /// buffers mix pinned and pageable storage, [`MemoryError::PlacementDisagrees`] for any
    /// other disagreement. [`common_placement`] implements exactly this.
    fn placement(&self) -> Result<ResidencyLocation, MemoryError>;

    /// Logical payload bytes: every declared part counted in full, aliases every time.
    fn nbytes(&self) -> u64;

    /// Bytes of the distinct backing storages (deduplicated by [`StorageKey`], zero-size
    /// storages skipped). May be larger (a view into a bigger buffer) or smaller (aliases)
    /// than [`nbytes`](Self::nbytes).
    fn storage_nbytes(&self) -> u64;

    /// The distinct non-empty storage keys, for the manager's alias check.
    fn storage_keys(&self) -> Vec<StorageKey>;

    /// An independent copy of the value at `to` (new storage, never aliasing `self`), with the
    /// event marking the copy complete when a stream was involved.
    ///
    /// # Errors
    /// Placement errors of `self`, and the copy / allocation errors of [`crate::Buffer`].
    fn materialize(
        &self,
        mem: &Memory,
        to: &ResidencyLocation,
        stream: Option<&Stream>,
    ) -> Result<Materialized<Self>, MemoryError>;

    /// The events of work that still writes the value's buffers ([`crate::Buffer::order_after`]:
    /// a kernel's result adopted before it completed); empty when the contents are complete,
    /// which is the default. The residency manager orders the value's first replica after
    /// them: leases make their consumer streams wait, copies out of it wait on the GPU.
    ///
    /// # Errors
    /// [`MemoryError::Cuda`] when querying an event fails.
    fn pending_events(&self) -> Result<Vec<Event>, MemoryError> {
        Ok(Vec::new())
    }

    /// The charge the manager debits for this value: `max(nbytes, storage_nbytes)` (spec 1.5).
    fn charge_nbytes(&self) -> u64 {
        self.nbytes().max(self.storage_nbytes())
    }
}

/// The result of [`Resident::materialize`]: the new value and, when the copy ran on a
/// stream, the event that marks it complete. Consumers on other streams wait on `ready`
/// (`Stream::wait_event`) instead of blocking the host.
#[derive(Debug)]
pub struct Materialized<T> {
    /// The new, independent value.
    pub value: T,
    /// Copy-complete event; `None` when the copy was synchronous (host to host).
    pub ready: Option<Event>,
}

impl<T> Materialized<T> {
    /// Blocks until the copy is complete and returns the value.
    ///
    /// # Errors
    /// The event's synchronisation error.
    pub fn wait(self) -> Result<T, MemoryError> {
        if let Some(ev) = &self.ready {
            ev.synchronize()?;
        }
        Ok(self.value)
    }
}

/// The common placement of parts at `locations` (the rule of [`Resident::placement`]).
///
/// # Errors
/// [`MemoryError::EmptyValue`], [`MemoryError::MixedPinning`],
/// [`MemoryError::PlacementDisagrees`].
pub fn common_placement(
    type_tag: &'static str,
    locations: impl IntoIterator<Item = ResidencyLocation>,
) -> Result<ResidencyLocation, MemoryError> {
    let mut it = locations.into_iter();
    let first = it.next().ok_or(MemoryError::EmptyValue { type_tag })?;
    let mut disagree = None;
    let mut mixed = false;
    for other in it {
        if other != first {
            if first.is_host() && other.is_host() {
                mixed = true;
            } else if disagree.is_none() {
                disagree = Some(other);
            }
        }
    }
    if let Some(other) = disagree {
        return Err(MemoryError::PlacementDisagrees {
            type_tag,
            first,
            other,
        });
    }
    if mixed {
        return Err(MemoryError::MixedPinning { type_tag });
    }
    Ok(first)
}

/// Distinct non-empty storages among `(key, storage bytes)` pairs, in key order.
#[must_use]
pub fn distinct_storages(
    parts: impl IntoIterator<Item = (StorageKey, u64)>,
) -> BTreeMap<StorageKey, u64> {
    parts.into_iter().filter(|(_, b)| *b > 0).collect()
}
