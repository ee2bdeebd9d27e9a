//! Lifetime guards: leases (read borrows bound to consumer streams), holds and reservations
//! (spec 1.17, 2.10).
//!
//! Each guard releases itself when dropped; an explicit `release` consumes it, so a value
//! reference borrowed from a lease cannot outlive the lease (the borrow checker ends every
//! access before release records its consumer events).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use fhelium_cuda::{Resident, Stream};
use fhelium_residency::{ResidencyHandle, ResidencyLocation};
use tracing::warn;

use crate::error::{Result, RuntimeError};
use crate::manager::Inner;
use crate::value::{downcast, Handle, ValueArc};

/// A strict read lease over already-resident replicas at one location.
///
/// Values are borrowed from the lease: [`ResidencyLease::get`] returns `&T` tied to `&self`.
/// For device locations the lease is bound to consumer streams: release records one event per
/// stream and the replicas stay protected (pending) until those events complete and are reaped.
/// Dropping an unreleased lease releases it **and waits** for its events (with a warning).
///
/// A borrowed value cannot outlive its lease: `release` consumes the lease, so this does not
/// compile (the borrow checker ends every access before release records its consumer events):
///
/// ```compile_fail,E0505
/// use fhelium_cuda::{Memory, Tensors};
/// use fhelium_residency::{ReplicaMode, PAGEABLE_HOST};
/// use fhelium_runtime::ResidencyManager;
///
/// let memory = Memory::host_only();
/// let manager = ResidencyManager::new(memory.clone());
/// let value = Tensors::upload(&memory, &PAGEABLE_HOST, &[&[1, 2]], None).unwrap().value;
/// let h = manager.adopt(value, None, ReplicaMode::Exclusive).unwrap();
/// let lease = manager.acquire(&[&h], PAGEABLE_HOST, None).unwrap();
/// let borrowed: &Tensors = lease.get(&h).unwrap();
/// lease.release().unwrap();
/// let _still_reading = borrowed.views().len(); // error[E0505]: cannot move out of `lease`
/// ```
pub struct ResidencyLease {
    inner: Arc<Inner>,
    token: u64,
    epoch: u64,
    handles: Vec<ResidencyHandle>,
    location: ResidencyLocation,
    values: Vec<ValueArc>,
    streams: Vec<Stream>,
    released: bool,
}

impl std::fmt::Debug for ResidencyLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidencyLease")
            .field("location", &self.location)
            .field("handles", &self.handles)
            .field("streams", &self.streams.len())
            .finish_non_exhaustive()
    }
}

impl ResidencyLease {
    pub(crate) fn new(
        inner: Arc<Inner>,
        token: u64,
        epoch: u64,
        handles: Vec<ResidencyHandle>,
        location: ResidencyLocation,
        values: Vec<ValueArc>,
        stream: Option<Stream>,
    ) -> Self {
        Self {
            inner,
            token,
            epoch,
            handles,
            location,
            values,
            streams: stream.into_iter().collect(),
            released: false,
        }
    }

    /// The leased handles, de-duplicated in first-occurrence order.
    #[must_use]
    pub fn handles(&self) -> &[ResidencyHandle] {
        &self.handles
    }

    /// The single location of every leased replica.
    #[must_use]
    pub const fn location(&self) -> ResidencyLocation {
        self.location
    }

    /// The consumer streams whose work the lease protects.
    #[must_use]
    pub fn consumer_streams(&self) -> &[Stream] {
        &self.streams
    }

    fn lookup(&self, handle: &ResidencyHandle) -> Result<&ValueArc> {
        if self.inner.close_epoch.load(Ordering::SeqCst) != self.epoch {
            return Err(RuntimeError::LeaseLost {
                handle: handle.clone(),
            });
        }
        self.handles
            .iter()
            .position(|h| h == handle)
            .map(|i| &self.values[i])
            .ok_or_else(|| RuntimeError::NotCovered {
                handle: handle.clone(),
                location: self.location,
            })
    }

    /// The leased value named by a typed handle: the very object the manager stores.
    ///
    /// # Errors
    /// [`RuntimeError::NotCovered`] for a handle outside the lease, [`RuntimeError::LeaseLost`]
    /// after a forced close, [`RuntimeError::TypeMismatch`].
    pub fn get<T: Resident>(&self, handle: &Handle<T>) -> Result<&T> {
        self.value::<T>(handle.raw())
    }

    /// The leased value named by an untyped handle, as `T`.
    ///
    /// # Errors
    /// As [`ResidencyLease::get`].
    pub fn value<T: Resident>(&self, handle: &ResidencyHandle) -> Result<&T> {
        downcast::<T>(&**self.lookup(handle)?, handle)
    }

    /// True when both leases (or one lease twice) hand out the same stored object for
    /// `handle`: no copy, no proxy.
    #[must_use]
    pub fn same_object(&self, other: &Self, handle: &ResidencyHandle) -> bool {
        match (self.lookup(handle), other.lookup(handle)) {
            (Ok(a), Ok(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }

    /// Registers another consumer stream whose reads the lease protects (duplicates ignored).
    ///
    /// # Errors
    /// [`RuntimeError::Stream`] for a host lease or a stream of another device.
    pub fn add_consumer_stream(&mut self, stream: &Stream) -> Result<()> {
        if self.location.is_host() {
            return Err(RuntimeError::Stream {
                location: self.location,
                stream_location: stream.location(),
                reason: "CPU residency leases do not use CUDA streams",
            });
        }
        if stream.location() != self.location {
            return Err(RuntimeError::Stream {
                location: self.location,
                stream_location: stream.location(),
                reason: "wrong CUDA device",
            });
        }
        if !self.streams.iter().any(|s| s == stream) {
            self.streams.push(stream.clone());
        }
        Ok(())
    }

    /// Releases the lease without waiting: device replicas stay protected by the recorded
    /// consumer events until they complete and are reaped.
    ///
    /// # Errors
    /// [`RuntimeError::Reentrancy`] during a source callback (the lease is then leaked:
    /// its replicas stay protected).
    pub fn release(mut self) -> Result<()> {
        self.released = true;
        self.inner.release_lease(self.token, &self.streams, false)
    }

    /// Releases the lease and waits for its consumer events; the replicas are unprotected
    /// when this returns.
    ///
    /// # Errors
    /// As [`ResidencyLease::release`], plus [`RuntimeError::Memory`] when waiting fails.
    pub fn release_and_wait(mut self) -> Result<()> {
        self.released = true;
        self.inner.release_lease(self.token, &self.streams, true)
    }
}

impl Drop for ResidencyLease {
    fn drop(&mut self) {
        if !self.released {
            warn!(location = %self.location, handles = self.handles.len(), "residency lease dropped without release: releasing and waiting");
            if let Err(e) = self.inner.release_lease(self.token, &self.streams, true) {
                warn!(error = %e, "abandoned residency lease could not be released; its replicas stay protected");
            }
        }
    }
}

/// Retention protection of resident replicas; exposes no values.
pub struct ResidencyHold {
    inner: Arc<Inner>,
    token: u64,
    handles: Vec<ResidencyHandle>,
    location: ResidencyLocation,
    released: bool,
}

impl std::fmt::Debug for ResidencyHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidencyHold")
            .field("location", &self.location)
            .field("handles", &self.handles)
            .finish_non_exhaustive()
    }
}

impl ResidencyHold {
    pub(crate) fn new(
        inner: Arc<Inner>,
        token: u64,
        handles: Vec<ResidencyHandle>,
        location: ResidencyLocation,
    ) -> Self {
        Self {
            inner,
            token,
            handles,
            location,
            released: false,
        }
    }

    /// The held handles, de-duplicated in first-occurrence order.
    #[must_use]
    pub fn handles(&self) -> &[ResidencyHandle] {
        &self.handles
    }

    /// Where the held replicas are.
    #[must_use]
    pub const fn location(&self) -> ResidencyLocation {
        self.location
    }

    /// Releases the hold (silent no-op after the manager closed).
    ///
    /// # Errors
    /// [`RuntimeError::Reentrancy`] during a source callback.
    pub fn release(mut self) -> Result<()> {
        self.released = true;
        self.inner.release_hold(self.token)
    }
}

impl Drop for ResidencyHold {
    fn drop(&mut self) {
        if !self.released {
            warn!(location = %self.location, "residency hold dropped without release");
            if let Err(e) = self.inner.release_hold(self.token) {
                warn!(error = %e, "abandoned residency hold could not be released");
            }
        }
    }
}

/// Named accounting headroom; allocates nothing.
pub struct ResidencyReservation {
    inner: Arc<Inner>,
    token: u64,
    location: ResidencyLocation,
    nbytes: u64,
    label: String,
    released: bool,
}

impl std::fmt::Debug for ResidencyReservation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidencyReservation")
            .field("location", &self.location)
            .field("nbytes", &self.nbytes)
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

impl ResidencyReservation {
    pub(crate) fn new(
        inner: Arc<Inner>,
        token: u64,
        location: ResidencyLocation,
        nbytes: u64,
        label: String,
    ) -> Self {
        Self {
            inner,
            token,
            location,
            nbytes,
            label,
            released: false,
        }
    }

    /// Where the headroom is held.
    #[must_use]
    pub const fn location(&self) -> ResidencyLocation {
        self.location
    }

    /// How many bytes.
    #[must_use]
    pub const fn nbytes(&self) -> u64 {
        self.nbytes
    }

    /// The label.
    #[must_use]
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Returns the headroom (silent no-op after the manager closed).
    ///
    /// # Errors
    /// [`RuntimeError::Reentrancy`] during a source callback.
    pub fn release(mut self) -> Result<()> {
        self.released = true;
        self.inner.release_reservation(self.token)
    }
}

impl Drop for ResidencyReservation {
    fn drop(&mut self) {
        if !self.released {
            warn!(location = %self.location, label = %self.label, "residency reservation dropped without release");
            if let Err(e) = self.inner.release_reservation(self.token) {
                warn!(error = %e, "abandoned residency reservation could not be released");
            }
        }
    }
}
