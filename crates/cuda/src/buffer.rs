//! Buffers of u64 words at one location, and the copy engine between any two locations.
//!
//! # Copy rules
//! - Host to host (pageable, pinned): a synchronous `memcpy`; no stream is accepted and no
//!   event is returned.
//! - Any copy with a device endpoint (`sim:N` or `cuda:N`) runs on a stream of one of its
//!   device endpoints: the one given, or the [`Memory::default_stream`] of the destination
//!   device (else of the source device). It returns the event recorded after the copy; the
//!   copy is complete when that event is.
//! - **Pageable host memory on CUDA**: a copy between pageable host memory and a CUDA device is
//!   *staged by the driver* through its own pinned bounce buffer. It is not truly
//!   asynchronous: host-to-device returns once the source has been consumed, device-to-host
//!   returns once the data has arrived. Only pinned (page-locked) memory overlaps with the host.
//! - Pinned host memory written or read by an in-flight CUDA copy is fenced: the buffer keeps
//!   the copy's event and [`Buffer::host_slice`], [`Buffer::host_slice_mut`] and `Drop` wait for
//!   it, so safe code can never observe or free memory the GPU is still using.
//! - Between two devices of one backend the copy takes the pair's recorded path (see
//!   [`crate::peer`]): the same device, a direct peer copy, or two copies staged through pinned
//!   host memory when the pair has no peer access.
//! - Simulated devices run copies at once (their memory is host memory), so the data is in
//!   place when the call returns even if the event stays pending under a hold.

use std::fmt;
use std::sync::Arc;

use fhelium_residency::ResidencyLocation;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::error::MemoryError;
use crate::memory::{words_to_bytes, LocationState, Memory};
use crate::peer::PeerPath;
use crate::stream::{Event, Stream};

/// Identity of one backing storage: its location and base address. Two buffers (or views)
/// with the same key alias the same memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StorageKey {
    /// Where the storage lives.
    pub location: ResidencyLocation,
    /// Its base address (host virtual address, or device pointer).
    pub base: u64,
}

impl fmt::Display for StorageKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{:#x}", self.location, self.base)
    }
}

pub(crate) enum Storage {
    /// Host memory: pageable, simulated pinned, or a simulated device.
    Host(Vec<u64>),
    /// Page-locked host memory (CUDA open).
    #[cfg(feature = "cuda")]
    Locked(crate::cuda::PinnedAlloc),
    /// CUDA device memory.
    #[cfg(feature = "cuda")]
    Device(crate::cuda::DeviceAlloc),
}

/// A contiguous buffer of `u64` words at one location. It owns its memory; dropping it
/// frees the memory (and credits the location's [`crate::LocationUsage`]).
pub struct Buffer {
    location: ResidencyLocation,
    words: usize,
    pub(crate) storage: Storage,
    state: Arc<LocationState>,
    /// Pending work the contents depend on: for page-locked memory the last asynchronous
    /// CUDA copy touching it; for device memory the producers named by
    /// [`Buffer::order_after`] (at most one event per stream).
    fence: Mutex<Vec<Event>>,
}

impl fmt::Debug for Buffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Buffer({} words at {})", self.words, self.storage_key())
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        let fences = std::mem::take(self.fence.get_mut());
        match &self.storage {
            // Simulated device memory is host memory whose producers have already run (a
            // pending event only models the GPU's order): it is freed at once.
            Storage::Host(_) => drop(fences),
            // Device memory freed in stream order waits on the GPU (the free's stream waits
            // for its producers); anything else waits on the host.
            #[cfg(feature = "cuda")]
            Storage::Device(d) => d.order_free_after(&fences),
            // Page-locked memory must not be freed under an in-flight copy; errors leave
            // nothing to do.
            #[cfg(feature = "cuda")]
            Storage::Locked(_) => {
                for ev in &fences {
                    let _ = ev.synchronize();
                }
            }
        }
        self.state.credit(self.words as u64 * 8);
    }
}

impl Buffer {
    pub(crate) fn new(
        location: ResidencyLocation,
        words: usize,
        storage: Storage,
        state: Arc<LocationState>,
    ) -> Self {
        Self {
            location,
            words,
            storage,
            state,
            fence: Mutex::new(Vec::new()),
        }
    }

    /// Where the buffer lives.
    #[must_use]
    pub fn location(&self) -> ResidencyLocation {
        self.location
    }

    /// Length in u64 words.
    #[must_use]
    pub fn words(&self) -> usize {
        self.words
    }

    /// Payload bytes (`words * 8`).
    #[must_use]
    pub fn nbytes(&self) -> u64 {
        self.words as u64 * 8
    }

    /// Backing-storage bytes; equal to [`nbytes`](Self::nbytes) for a whole buffer.
    #[must_use]
    pub fn storage_nbytes(&self) -> u64 {
        self.nbytes()
    }

    /// True when the buffer lives at the pinned host location.
    #[must_use]
    pub fn is_pinned(&self) -> bool {
        self.location == ResidencyLocation::PinnedHost
    }

    /// True when the host can read the memory directly (every location but `cuda:N`).
    #[must_use]
    pub fn is_host_accessible(&self) -> bool {
        match &self.storage {
            Storage::Host(_) => true,
            #[cfg(feature = "cuda")]
            Storage::Locked(_) => true,
            #[cfg(feature = "cuda")]
            Storage::Device(_) => false,
        }
    }

    /// The storage identity (location, base address).
    #[must_use]
    pub fn storage_key(&self) -> StorageKey {
        let base = match &self.storage {
            Storage::Host(v) => v.as_ptr() as u64,
            #[cfg(feature = "cuda")]
            Storage::Locked(p) => p.as_ptr() as u64,
            #[cfg(feature = "cuda")]
            Storage::Device(d) => d.ptr(),
        };
        StorageKey {
            location: self.location,
            base,
        }
    }

    /// The raw CUDA device pointer, for kernel arguments; `None` off CUDA devices.
    #[must_use]
    pub fn device_ptr(&self) -> Option<u64> {
        match &self.storage {
            #[cfg(feature = "cuda")]
            Storage::Device(d) => Some(d.ptr()),
            _ => None,
        }
    }

    #[cfg(feature = "cuda")]
    fn wait_fence(&self) {
        let fences = std::mem::take(&mut *self.fence.lock());
        for ev in fences {
            // A failed wait means the context is broken; the data is then undefined anyway,
            // but the memory is no longer in use by a copy that can still run.
            let _ = ev.synchronize();
        }
    }

    /// The events of the work this buffer's contents still wait for: producers named by
    /// [`order_after`](Self::order_after) and, for page-locked memory, an in-flight copy.
    /// Completed events are forgotten. A stream that reads or writes the buffer after
    /// waiting on each of them (`Stream::wait_event`) is ordered after that work; the
    /// memory layer's own copies and the residency manager do this themselves.
    ///
    /// # Errors
    /// [`MemoryError::Cuda`] when the driver reports an error querying an event.
    pub fn pending_events(&self) -> Result<Vec<Event>, MemoryError> {
        let mut fences = self.fence.lock();
        let mut pending = Vec::with_capacity(fences.len());
        for ev in fences.iter() {
            if !ev.query()? {
                pending.push(ev.clone());
            }
        }
        fences.clone_from(&pending);
        Ok(pending)
    }

    /// Declares that this device buffer's contents are complete only once `event` is: work
    /// enqueued before `event` (a kernel, a copy of another library) writes it. From now on
    /// every copy into or out of the buffer is ordered after `event` on the GPU (its stream
    /// waits on the event; the host does not block), [`pending_events`](Self::pending_events)
    /// reports it until it completes, and a buffer freed in stream order waits for it on the
    /// GPU. An event replaces an earlier one recorded on the same stream (it must be later);
    /// events of several streams are all kept.
    ///
    /// # Errors
    /// [`MemoryError::NotStreamOrdered`] when the buffer is host memory (pageable or pinned:
    /// the host, not a stream, writes it), [`MemoryError::BackendMismatch`] when the event
    /// belongs to another backend than the buffer (a simulated event for a CUDA buffer or the
    /// reverse). Nothing changes on error.
    pub fn order_after(&self, event: &Event) -> Result<(), MemoryError> {
        if !self.location.is_device() {
            return Err(MemoryError::NotStreamOrdered {
                op: "order_after",
                location: self.location,
                bytes: self.nbytes(),
                reason: "host memory is written by the host, not on a stream",
            });
        }
        if matches!(self.location, ResidencyLocation::Cuda(_)) != event.is_cuda() {
            return Err(MemoryError::BackendMismatch {
                op: "order_after",
                a: self.location,
                b: event.location(),
            });
        }
        let mut fences = self.fence.lock();
        fences.retain(|f| f.stream_id() != event.stream_id());
        fences.push(event.clone());
        Ok(())
    }

    /// Consumes one copy fault armed at this buffer's location, if any.
    pub(crate) fn state_take_copy_fault(&self) -> bool {
        self.state.take_copy_fault()
    }

    /// Marks an in-flight copy on page-locked memory: it replaces every earlier fence, since
    /// the copy's stream waited on them first.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn set_fence(&self, ev: &Event) {
        *self.fence.lock() = vec![ev.clone()];
    }

    /// The words, when host-accessible (pageable, pinned, simulated device). Waits for an
    /// in-flight CUDA copy into or out of pinned memory first.
    #[must_use]
    pub fn host_slice(&self) -> Option<&[u64]> {
        match &self.storage {
            Storage::Host(v) => Some(v),
            #[cfg(feature = "cuda")]
            Storage::Locked(p) => {
                self.wait_fence();
                Some(p.as_slice())
            }
            #[cfg(feature = "cuda")]
            Storage::Device(_) => None,
        }
    }

    /// The words, mutably, when host-accessible. Waits for an in-flight CUDA copy first.
    #[must_use]
    pub fn host_slice_mut(&mut self) -> Option<&mut [u64]> {
        // Simulated device memory is written in place by its producers, which have run.
        #[cfg(feature = "cuda")]
        if matches!(self.storage, Storage::Locked(_)) {
            self.wait_fence();
        }
        match &mut self.storage {
            Storage::Host(v) => Some(v),
            #[cfg(feature = "cuda")]
            Storage::Locked(p) => Some(p.as_mut_slice()),
            #[cfg(feature = "cuda")]
            Storage::Device(_) => None,
        }
    }

    /// A new, independent buffer at `to` holding a copy of this one, and the event that marks
    /// the copy complete (`None` for host-to-host copies, which are synchronous).
    ///
    /// # Errors
    /// [`MemoryError::LocationUnavailable`], [`MemoryError::StreamMismatch`], allocation
    /// errors at `to`, [`MemoryError::InjectedCopyFailure`], [`MemoryError::Cuda`]. On error
    /// nothing is allocated.
    pub fn copy_to(
        &self,
        mem: &Memory,
        to: &ResidencyLocation,
        stream: Option<&Stream>,
    ) -> Result<(Buffer, Option<Event>), MemoryError> {
        self.copy_range_to(mem, to, 0, self.words, stream)
    }

    /// Like [`copy_to`](Self::copy_to) for the words `start .. start + len` only (a compacting
    /// copy of a view).
    ///
    /// # Errors
    /// As [`copy_to`](Self::copy_to), plus [`MemoryError::RangeOutOfBounds`].
    pub fn copy_range_to(
        &self,
        mem: &Memory,
        to: &ResidencyLocation,
        start: usize,
        len: usize,
        stream: Option<&Stream>,
    ) -> Result<(Buffer, Option<Event>), MemoryError> {
        mem.check_available("copy", &self.location)?;
        mem.check_available("copy", to)?;
        check_range("copy", self.location, start, len, self.words)?;
        let stream = resolve_stream(mem, "copy", self.location, *to, stream)?;
        let alloc_stream = stream.as_ref().filter(|s| s.location() == *to);
        let mut dst = mem.alloc(to, len, alloc_stream)?;
        let ev = copy_engine(
            mem,
            Src::Buf(self, start),
            Dst::Buf(&mut dst, 0),
            len,
            stream.as_ref(),
        )?;
        Ok((dst, ev))
    }

    /// Copies all of `src` into this buffer (same word count).
    ///
    /// # Errors
    /// [`MemoryError::SizeMismatch`], plus the errors of [`copy_to`](Self::copy_to).
    pub fn copy_from(
        &mut self,
        mem: &Memory,
        src: &Buffer,
        stream: Option<&Stream>,
    ) -> Result<Option<Event>, MemoryError> {
        if src.words != self.words {
            return Err(MemoryError::SizeMismatch {
                op: "copy_from",
                from: src.location,
                to: self.location,
                from_bytes: src.nbytes(),
                to_bytes: self.nbytes(),
            });
        }
        mem.check_available("copy_from", &src.location)?;
        mem.check_available("copy_from", &self.location)?;
        let stream = resolve_stream(mem, "copy_from", src.location, self.location, stream)?;
        let words = self.words;
        copy_engine(
            mem,
            Src::Buf(src, 0),
            Dst::Buf(self, 0),
            words,
            stream.as_ref(),
        )
    }

    /// Copies `data` (pageable host memory) into this buffer (same word count).
    ///
    /// # Errors
    /// As [`copy_from`](Self::copy_from).
    pub fn write(
        &mut self,
        mem: &Memory,
        data: &[u64],
        stream: Option<&Stream>,
    ) -> Result<Option<Event>, MemoryError> {
        let host = ResidencyLocation::PageableHost;
        if data.len() != self.words {
            return Err(MemoryError::SizeMismatch {
                op: "write",
                from: host,
                to: self.location,
                from_bytes: data.len() as u64 * 8,
                to_bytes: self.nbytes(),
            });
        }
        mem.check_available("write", &self.location)?;
        let stream = resolve_stream(mem, "write", host, self.location, stream)?;
        let words = self.words;
        copy_engine(
            mem,
            Src::Slice(data),
            Dst::Buf(self, 0),
            words,
            stream.as_ref(),
        )
    }

    /// Reads the whole buffer into a new vector, synchronously (for device buffers: a copy on
    /// the default stream, waited for).
    ///
    /// # Errors
    /// [`MemoryError::LocationUnavailable`], [`MemoryError::Cuda`], a held simulated stream's
    /// [`MemoryError::HoldTimeout`] never occurs here (simulated reads do not wait).
    pub fn to_vec(&self, mem: &Memory) -> Result<Vec<u64>, MemoryError> {
        if let Some(s) = self.host_slice() {
            return Ok(s.to_vec());
        }
        mem.check_available("to_vec", &self.location)?;
        let mut out = vec![0u64; self.words];
        let stream = resolve_stream(
            mem,
            "to_vec",
            self.location,
            ResidencyLocation::PageableHost,
            None,
        )?;
        let ev = copy_engine(
            mem,
            Src::Buf(self, 0),
            Dst::Slice(&mut out),
            self.words,
            stream.as_ref(),
        )?;
        if let Some(ev) = ev {
            ev.synchronize()?;
        }
        Ok(out)
    }
}

fn check_range(
    op: &'static str,
    location: ResidencyLocation,
    start: usize,
    len: usize,
    words: usize,
) -> Result<(), MemoryError> {
    if start.checked_add(len).is_some_and(|end| end <= words) {
        Ok(())
    } else {
        Err(MemoryError::RangeOutOfBounds {
            op,
            location,
            start,
            len,
            words,
        })
    }
}

/// Picks the stream of a copy `from -> to` (see the module's copy rules), validating a given one.
pub(crate) fn resolve_stream(
    mem: &Memory,
    op: &'static str,
    from: ResidencyLocation,
    to: ResidencyLocation,
    given: Option<&Stream>,
) -> Result<Option<Stream>, MemoryError> {
    // Endpoints that may carry the stream: CUDA endpoints if any (the copy needs a CUDA
    // stream), else simulated device endpoints; the destination is preferred.
    let cuda: Vec<ResidencyLocation> = [to, from]
        .into_iter()
        .filter(|l| matches!(l, ResidencyLocation::Cuda(_)))
        .collect();
    let candidates: Vec<ResidencyLocation> = if cuda.is_empty() {
        [to, from].into_iter().filter(|l| l.is_device()).collect()
    } else {
        cuda
    };
    match given {
        Some(s) if candidates.contains(&s.location()) => Ok(Some(s.clone())),
        Some(s) => Err(MemoryError::StreamMismatch {
            op,
            stream: s.location(),
            expected: if candidates.is_empty() {
                format!("no stream: the host-to-host copy {from} -> {to} is synchronous")
            } else {
                format!("a stream of a device endpoint of the copy {from} -> {to}")
            },
        }),
        None => match candidates.first() {
            Some(loc) => mem.default_stream(loc).map(Some),
            None => Ok(None),
        },
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Src<'a> {
    Buf(&'a Buffer, usize),
    Slice(&'a [u64]),
}

pub(crate) enum Dst<'a> {
    Buf(&'a mut Buffer, usize),
    Slice(&'a mut [u64]),
}

impl Src<'_> {
    pub(crate) fn location(&self) -> ResidencyLocation {
        match self {
            Src::Buf(b, _) => b.location,
            Src::Slice(_) => ResidencyLocation::PageableHost,
        }
    }

    /// The host words `start .. start + len`, when host-accessible.
    fn host(&self, len: usize) -> Option<&[u64]> {
        match self {
            Src::Buf(b, start) => b.host_slice().map(|s| &s[*start..*start + len]),
            Src::Slice(s) => Some(&s[..len]),
        }
    }
}

impl Dst<'_> {
    pub(crate) fn location(&self) -> ResidencyLocation {
        match self {
            Dst::Buf(b, _) => b.location,
            Dst::Slice(_) => ResidencyLocation::PageableHost,
        }
    }

    fn state(&self) -> Option<&Arc<LocationState>> {
        match self {
            Dst::Buf(b, _) => Some(&b.state),
            Dst::Slice(_) => None,
        }
    }

    fn host(&mut self, len: usize) -> Option<&mut [u64]> {
        match self {
            Dst::Buf(b, start) => {
                let start = *start;
                b.host_slice_mut().map(|s| &mut s[start..start + len])
            }
            Dst::Slice(s) => Some(&mut s[..len]),
        }
    }
}

/// Copies `len` words from `src` to `dst` on `stream` (already resolved by
/// [`resolve_stream`]); ranges were checked by the caller.
pub(crate) fn copy_engine(
    mem: &Memory,
    src: Src<'_>,
    mut dst: Dst<'_>,
    len: usize,
    stream: Option<&Stream>,
) -> Result<Option<Event>, MemoryError> {
    let (from, to) = (src.location(), dst.location());
    let bytes = words_to_bytes("copy", to, len)?;
    let faulted = dst.state().is_some_and(|s| s.take_copy_fault());
    if faulted {
        return Err(MemoryError::InjectedCopyFailure { from, to, bytes });
    }
    // Device to device of one backend: the pair's recorded path (crate::peer).
    match crate::peer::path_of(mem, from, to) {
        Some(PeerPath::Staged) => return crate::peer::staged_copy(mem, src, dst, len, stream),
        Some(path) => crate::peer::count(mem, path, bytes),
        None => {}
    }
    tracing::trace!(%from, %to, bytes, stream = stream.map(Stream::id), "copy");
    if let Some(s) = stream {
        order_after_fences(s, src, &dst)?;
    }
    #[cfg(feature = "cuda")]
    if matches!(from, ResidencyLocation::Cuda(_)) || matches!(to, ResidencyLocation::Cuda(_)) {
        return crate::cuda::copy(mem, src, dst, len, stream);
    }
    let data = src.host(len).ok_or(MemoryError::NotHostAccessible {
        op: "copy",
        location: from,
    })?;
    let out = dst.host(len).ok_or(MemoryError::NotHostAccessible {
        op: "copy",
        location: to,
    })?;
    out.copy_from_slice(data);
    stream.map(Stream::record_event).transpose()
}

/// Makes `stream` wait on the pending events of the copy's endpoints (their producers, or an
/// in-flight copy on page-locked memory) recorded on other streams: the copy then runs after
/// them on the GPU, and its event completes only after them.
fn order_after_fences(stream: &Stream, src: Src<'_>, dst: &Dst<'_>) -> Result<(), MemoryError> {
    let mut fences = Vec::new();
    if let Src::Buf(b, _) = src {
        fences.extend(b.pending_events()?);
    }
    if let Dst::Buf(b, _) = dst {
        fences.extend(b.pending_events()?);
    }
    for f in fences.iter().filter(|f| f.stream_id() != stream.id()) {
        stream.wait_event(f)?;
    }
    Ok(())
}
