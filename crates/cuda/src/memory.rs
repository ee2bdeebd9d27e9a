//! The memory inventory and allocator: which locations exist, what is allocated where, fault
//! injection, default streams.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use fhelium_residency::{ResidencyLocation, MAX_DEVICE_INDEX};
use parking_lot::Mutex;

use crate::buffer::{Buffer, Storage};
use crate::error::MemoryError;
use crate::peer::{PeerMode, PeerState};
use crate::stream::{Event, Stream};

/// How device buffers of CUDA locations are allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceAllocMode {
    /// Stream-ordered allocation from the device's default memory pool
    /// (`cuMemAllocAsync` / `cuMemFreeAsync`), release threshold raised so freed memory stays
    /// in the pool. The default.
    #[default]
    Pool,
    /// A plain `cuMemAlloc` / `cuMemFree` per buffer.
    Plain,
}

/// What a [`Memory`] should contain.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MemoryConfig {
    /// Number of simulated devices `sim:0 .. sim:n-1` (at most 128).
    pub sim_devices: u8,
    /// Capacity of each simulated device in bytes; `None` = unlimited. Allocations beyond it
    /// fail with [`MemoryError::OutOfMemory`].
    pub sim_capacity_bytes: Option<u64>,
    /// Open the CUDA devices (feature `cuda`); pinned host memory becomes page-locked.
    pub cuda: bool,
    /// Allocation mode of CUDA device buffers.
    pub device_alloc: DeviceAllocMode,
    /// Whether device-to-device copies may use peer access ([`PeerMode::Auto`], the default)
    /// or must all be staged through pinned host ([`PeerMode::Staged`]); see [`crate::peer`].
    pub peer: PeerMode,
}

/// Allocation counters of one location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocationUsage {
    /// The location.
    pub location: ResidencyLocation,
    /// Bytes held by live buffers allocated through this [`Memory`].
    pub allocated_bytes: u64,
    /// Highest `allocated_bytes` seen.
    pub peak_bytes: u64,
    /// Live buffers.
    pub live_buffers: u64,
    /// Capacity, where known (simulated capacity).
    pub capacity_bytes: Option<u64>,
}

/// What a device location is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The location.
    pub location: ResidencyLocation,
    /// Device name ("simulated device" for `sim:N`).
    pub name: String,
    /// Total device memory in bytes (the simulated capacity, or `u64::MAX` when unlimited).
    pub total_bytes: u64,
    /// Compute capability (major, minor) of a CUDA device; `None` for simulated devices.
    pub compute_capability: Option<(u32, u32)>,
}

#[derive(Debug, Default, Clone, Copy)]
struct FaultCounters {
    allocs: u32,
    copies: u32,
}

/// Per-location bookkeeping shared by the [`Memory`] and the buffers allocated there.
#[derive(Debug)]
pub(crate) struct LocationState {
    pub(crate) location: ResidencyLocation,
    allocated: AtomicU64,
    peak: AtomicU64,
    live: AtomicU64,
    capacity: Option<u64>,
    faults: Mutex<FaultCounters>,
}

impl LocationState {
    fn new(location: ResidencyLocation, capacity: Option<u64>) -> Self {
        Self {
            location,
            allocated: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            live: AtomicU64::new(0),
            capacity,
            faults: Mutex::new(FaultCounters::default()),
        }
    }

    /// Debits `bytes` for an allocation that `make` then performs: on success the peak takes
    /// the new level; when `make` fails the bytes are credited back and the peak stays as it
    /// was (a refused allocation never was a peak). Nothing changes on error.
    pub(crate) fn debit_for<T>(
        &self,
        bytes: u64,
        make: impl FnOnce() -> Result<T, MemoryError>,
    ) -> Result<T, MemoryError> {
        let level = self.debit(bytes)?;
        match make() {
            Ok(v) => {
                self.peak.fetch_max(level, Ordering::Relaxed);
                Ok(v)
            }
            Err(e) => {
                self.credit(bytes);
                Err(e)
            }
        }
    }

    /// Debits `bytes`, honouring the capacity and injected faults, and returns the allocated
    /// level it reached (the caller records it as a peak once the allocation exists:
    /// [`LocationState::debit_for`]). Nothing changes on error.
    fn debit(&self, bytes: u64) -> Result<u64, MemoryError> {
        {
            let mut f = self.faults.lock();
            if f.allocs > 0 {
                f.allocs -= 1;
                return Err(MemoryError::InjectedAllocFailure {
                    location: self.location,
                    bytes,
                });
            }
        }
        let mut cur = self.allocated.load(Ordering::Relaxed);
        loop {
            let next = cur.saturating_add(bytes);
            if let Some(cap) = self.capacity {
                if next > cap {
                    return Err(MemoryError::OutOfMemory {
                        op: "alloc",
                        location: self.location,
                        requested_bytes: bytes,
                        available_bytes: cap.saturating_sub(cur),
                    });
                }
            }
            match self.allocated.compare_exchange_weak(
                cur,
                next,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    self.live.fetch_add(1, Ordering::Relaxed);
                    return Ok(next);
                }
                Err(actual) => cur = actual,
            }
        }
    }

    pub(crate) fn credit(&self, bytes: u64) {
        self.allocated.fetch_sub(bytes, Ordering::AcqRel);
        self.live.fetch_sub(1, Ordering::Relaxed);
    }

    /// Consumes one armed copy fault, if any.
    pub(crate) fn take_copy_fault(&self) -> bool {
        let mut f = self.faults.lock();
        if f.copies > 0 {
            f.copies -= 1;
            true
        } else {
            false
        }
    }

    fn usage(&self) -> LocationUsage {
        LocationUsage {
            location: self.location,
            allocated_bytes: self.allocated.load(Ordering::Acquire),
            peak_bytes: self.peak.load(Ordering::Relaxed),
            live_buffers: self.live.load(Ordering::Relaxed),
            capacity_bytes: self.capacity,
        }
    }
}

/// Fault injection at one location: makes the next N allocations or copies there fail with a
/// typed error ([`MemoryError::InjectedAllocFailure`], [`MemoryError::InjectedCopyFailure`]).
///
/// A copy fault fires on copies whose **destination** is this location. Faults are consumed
/// one per failed operation; a failed operation changes nothing else.
#[derive(Clone)]
pub struct SimFaults {
    state: Arc<LocationState>,
}

impl fmt::Debug for SimFaults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = *self.state.faults.lock();
        write!(
            f,
            "SimFaults@{}(allocs={}, copies={})",
            self.state.location, c.allocs, c.copies
        )
    }
}

impl SimFaults {
    /// The location the faults apply to.
    #[must_use]
    pub fn location(&self) -> ResidencyLocation {
        self.state.location
    }

    /// Makes the next `n` allocations at this location fail (replaces any armed count).
    pub fn fail_next_allocs(&self, n: u32) {
        self.state.faults.lock().allocs = n;
    }

    /// Makes the next `n` copies into this location fail (replaces any armed count).
    pub fn fail_next_copies(&self, n: u32) {
        self.state.faults.lock().copies = n;
    }

    /// Disarms every fault.
    pub fn clear(&self) {
        *self.state.faults.lock() = FaultCounters::default();
    }

    /// Allocation failures still armed.
    #[must_use]
    pub fn pending_alloc_failures(&self) -> u32 {
        self.state.faults.lock().allocs
    }

    /// Copy failures still armed.
    #[must_use]
    pub fn pending_copy_failures(&self) -> u32 {
        self.state.faults.lock().copies
    }
}

pub(crate) struct MemoryInner {
    pub(crate) locations: BTreeMap<ResidencyLocation, Arc<LocationState>>,
    default_streams: Mutex<HashMap<ResidencyLocation, Stream>>,
    sim_devices: u8,
    sim_capacity: Option<u64>,
    pub(crate) peer: PeerState,
    #[cfg(feature = "cuda")]
    pub(crate) cuda: Option<crate::cuda::CudaBackend>,
}

/// The inventory and allocator of every location: pageable host, pinned host, the simulated
/// devices `sim:N` and (feature `cuda`) the CUDA devices `cuda:N`.
///
/// Cloning shares the same inventory (an `Arc` inside). Without CUDA, pinned host memory is
/// *simulated*: ordinary host memory flagged pinned ([`Memory::pinned_is_page_locked`] is
/// false).
#[derive(Clone)]
pub struct Memory {
    pub(crate) inner: Arc<MemoryInner>,
}

impl fmt::Debug for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Memory")
            .field("locations", &self.locations())
            .field("pinned_page_locked", &self.pinned_is_page_locked())
            .finish()
    }
}

impl Memory {
    /// Pageable and (simulated) pinned host memory only.
    #[must_use]
    pub fn host_only() -> Self {
        Self::with_sim_devices(0)
    }

    /// Host memory plus simulated devices `sim:0 .. sim:n-1` of unlimited capacity
    /// (`n` is capped at 128, the number of valid device indices).
    #[must_use]
    pub fn with_sim_devices(n: u8) -> Self {
        Self::build(n, None, PeerMode::Auto)
    }

    /// Host memory plus `n` simulated devices of `capacity_bytes` each.
    #[must_use]
    pub fn with_sim_devices_capacity(n: u8, capacity_bytes: u64) -> Self {
        Self::build(n, Some(capacity_bytes), PeerMode::Auto)
    }

    fn build(n: u8, sim_capacity: Option<u64>, peer: PeerMode) -> Self {
        let n = n.min(MAX_DEVICE_INDEX + 1);
        let mut locations = BTreeMap::new();
        for loc in [
            ResidencyLocation::PageableHost,
            ResidencyLocation::PinnedHost,
        ] {
            locations.insert(loc, Arc::new(LocationState::new(loc, None)));
        }
        for i in 0..n {
            let loc = ResidencyLocation::Sim(i);
            locations.insert(loc, Arc::new(LocationState::new(loc, sim_capacity)));
        }
        Self {
            inner: Arc::new(MemoryInner {
                locations,
                default_streams: Mutex::new(HashMap::new()),
                sim_devices: n,
                sim_capacity,
                peer: PeerState::new(peer, n, Vec::new()),
                #[cfg(feature = "cuda")]
                cuda: None,
            }),
        }
    }

    /// Builds a memory from a [`MemoryConfig`].
    ///
    /// # Errors
    /// [`MemoryError::CudaUnavailable`] when `config.cuda` is set and the crate was built
    /// without feature `cuda`, or the driver / a device cannot be opened.
    pub fn new(config: &MemoryConfig) -> Result<Self, MemoryError> {
        let base = Self::build(config.sim_devices, config.sim_capacity_bytes, config.peer);
        if !config.cuda {
            return Ok(base);
        }
        #[cfg(feature = "cuda")]
        {
            let backend = crate::cuda::CudaBackend::open(config.device_alloc)?;
            let cuda_links = backend.open_peers(config.peer)?;
            let mut locations = base.inner.locations.clone();
            for i in 0..backend.device_count() {
                let loc = ResidencyLocation::Cuda(i);
                locations.insert(loc, Arc::new(LocationState::new(loc, None)));
            }
            Ok(Self {
                inner: Arc::new(MemoryInner {
                    locations,
                    default_streams: Mutex::new(HashMap::new()),
                    sim_devices: base.inner.sim_devices,
                    sim_capacity: base.inner.sim_capacity,
                    peer: PeerState::new(config.peer, base.inner.sim_devices, cuda_links),
                    cuda: Some(backend),
                }),
            })
        }
        #[cfg(not(feature = "cuda"))]
        {
            drop(base);
            Err(MemoryError::CudaUnavailable {
                reason: "fhelium-cuda was built without feature `cuda`".to_owned(),
            })
        }
    }

    /// Host memory plus every visible CUDA device (`cuda:0 ..`), with page-locked pinned
    /// memory and pooled device allocation.
    ///
    /// # Errors
    /// [`MemoryError::CudaUnavailable`] without feature `cuda`, without a driver, or without
    /// a device.
    pub fn with_cuda() -> Result<Self, MemoryError> {
        Self::new(&MemoryConfig {
            cuda: true,
            ..MemoryConfig::default()
        })
    }

    /// Every location of this memory, in canonical order.
    #[must_use]
    pub fn locations(&self) -> Vec<ResidencyLocation> {
        self.inner.locations.keys().copied().collect()
    }

    /// Whether `loc` is valid here (spec 2.4): host locations always; `sim:i` when
    /// `i < sim_devices`; `cuda:i` when CUDA is open and `i` < its device count.
    #[must_use]
    pub fn is_available(&self, loc: &ResidencyLocation) -> bool {
        self.inner.locations.contains_key(loc)
    }

    /// Like [`is_available`](Self::is_available), as a typed error naming `op`.
    ///
    /// # Errors
    /// [`MemoryError::LocationUnavailable`] with the reason.
    pub fn check_available(
        &self,
        op: &'static str,
        loc: &ResidencyLocation,
    ) -> Result<(), MemoryError> {
        if self.is_available(loc) {
            return Ok(());
        }
        let reason = match loc {
            ResidencyLocation::Sim(_) => format!(
                "this memory has {} simulated device(s)",
                self.inner.sim_devices
            ),
            ResidencyLocation::Cuda(_) => self.cuda_unavailable_reason(),
            ResidencyLocation::PageableHost | ResidencyLocation::PinnedHost => {
                "host location missing".to_owned()
            }
        };
        Err(MemoryError::LocationUnavailable {
            op,
            location: *loc,
            reason,
        })
    }

    fn cuda_unavailable_reason(&self) -> String {
        #[cfg(feature = "cuda")]
        if self.inner.cuda.is_some() {
            return format!("{} CUDA device(s) are visible", self.cuda_device_count());
        }
        if cfg!(feature = "cuda") {
            "CUDA residency locations require available CUDA (this memory was built without it)"
                .to_owned()
        } else {
            "CUDA residency locations require available CUDA (fhelium-cuda built without feature `cuda`)"
                .to_owned()
        }
    }

    /// Number of simulated devices.
    #[must_use]
    pub fn sim_device_count(&self) -> u8 {
        self.inner.sim_devices
    }

    /// Number of CUDA devices (0 without CUDA).
    #[must_use]
    pub fn cuda_device_count(&self) -> u8 {
        #[cfg(feature = "cuda")]
        if let Some(c) = &self.inner.cuda {
            return c.device_count();
        }
        0
    }

    /// True when pinned host buffers are really page-locked (CUDA open), false when the
    /// pinned location is simulated by ordinary host memory.
    #[must_use]
    pub fn pinned_is_page_locked(&self) -> bool {
        #[cfg(feature = "cuda")]
        if self.inner.cuda.is_some() {
            return true;
        }
        false
    }

    /// Allocation counters of `loc`, `None` when unavailable.
    #[must_use]
    pub fn usage(&self, loc: &ResidencyLocation) -> Option<LocationUsage> {
        self.inner.locations.get(loc).map(|s| s.usage())
    }

    /// Describes a device location.
    ///
    /// # Errors
    /// [`MemoryError::LocationUnavailable`] for unknown locations,
    /// [`MemoryError::StreamOnHost`]-style refusal is not used: host locations give
    /// [`MemoryError::LocationUnavailable`] with reason "not a device".
    pub fn device_info(&self, loc: &ResidencyLocation) -> Result<DeviceInfo, MemoryError> {
        self.check_available("device_info", loc)?;
        match loc {
            ResidencyLocation::Sim(_) => Ok(DeviceInfo {
                location: *loc,
                name: "simulated device".to_owned(),
                total_bytes: self.inner.sim_capacity.unwrap_or(u64::MAX),
                compute_capability: None,
            }),
            #[cfg(feature = "cuda")]
            ResidencyLocation::Cuda(i) => self.cuda_backend(*loc)?.device_info(*i),
            _ => Err(MemoryError::LocationUnavailable {
                op: "device_info",
                location: *loc,
                reason: "not a device location".to_owned(),
            }),
        }
    }

    #[cfg(feature = "cuda")]
    pub(crate) fn cuda_backend(
        &self,
        loc: ResidencyLocation,
    ) -> Result<&crate::cuda::CudaBackend, MemoryError> {
        self.inner
            .cuda
            .as_ref()
            .ok_or_else(|| MemoryError::LocationUnavailable {
                op: "cuda",
                location: loc,
                reason: self.cuda_unavailable_reason(),
            })
    }

    pub(crate) fn state(
        &self,
        op: &'static str,
        loc: &ResidencyLocation,
    ) -> Result<&Arc<LocationState>, MemoryError> {
        self.check_available(op, loc)?;
        self.inner
            .locations
            .get(loc)
            .ok_or_else(|| MemoryError::LocationUnavailable {
                op,
                location: *loc,
                reason: "unknown location".to_owned(),
            })
    }

    /// Fault injection for `loc` (any available location, despite the name: the faults fire
    /// before any backend is touched). `None` when `loc` is unavailable.
    #[must_use]
    pub fn sim_faults(&self, loc: &ResidencyLocation) -> Option<SimFaults> {
        self.inner.locations.get(loc).map(|s| SimFaults {
            state: Arc::clone(s),
        })
    }

    /// A new stream on a device location.
    ///
    /// # Errors
    /// [`MemoryError::StreamOnHost`] for host locations, [`MemoryError::LocationUnavailable`],
    /// [`MemoryError::Cuda`].
    pub fn stream(&self, loc: &ResidencyLocation) -> Result<Stream, MemoryError> {
        self.check_available("stream", loc)?;
        match loc {
            ResidencyLocation::PageableHost | ResidencyLocation::PinnedHost => {
                Err(MemoryError::StreamOnHost {
                    op: "stream",
                    location: *loc,
                })
            }
            ResidencyLocation::Sim(_) => Ok(Stream::new_sim(*loc)),
            ResidencyLocation::Cuda(i) => {
                #[cfg(feature = "cuda")]
                {
                    let s = self.cuda_backend(*loc)?.new_stream(*i)?;
                    Ok(Stream::new_cuda(*loc, s))
                }
                #[cfg(not(feature = "cuda"))]
                {
                    let _ = i;
                    Err(MemoryError::LocationUnavailable {
                        op: "stream",
                        location: *loc,
                        reason: self.cuda_unavailable_reason(),
                    })
                }
            }
        }
    }

    /// The stream this memory uses for work on `loc` when the caller names none (created on
    /// first use, then shared).
    ///
    /// # Errors
    /// As [`stream`](Self::stream).
    pub fn default_stream(&self, loc: &ResidencyLocation) -> Result<Stream, MemoryError> {
        if let Some(s) = self.inner.default_streams.lock().get(loc) {
            return Ok(s.clone());
        }
        let s = self.stream(loc)?;
        Ok(self
            .inner
            .default_streams
            .lock()
            .entry(*loc)
            .or_insert(s)
            .clone())
    }

    /// Allocates `words` u64 words at `loc`. Contents are unspecified (host and simulated
    /// memory is zeroed, CUDA device memory is not).
    ///
    /// For a CUDA location in pool mode, the allocation is ordered on `stream` (which must be
    /// a stream of `loc`), or on the location's default stream followed by a synchronisation
    /// of that stream when `stream` is `None`, so the buffer is usable from any stream.
    /// Streams are refused for host locations.
    ///
    /// # Errors
    /// [`MemoryError::LocationUnavailable`], [`MemoryError::StreamMismatch`],
    /// [`MemoryError::SizeOverflow`], [`MemoryError::InjectedAllocFailure`],
    /// [`MemoryError::OutOfMemory`], [`MemoryError::Cuda`].
    pub fn alloc(
        &self,
        loc: &ResidencyLocation,
        words: usize,
        stream: Option<&Stream>,
    ) -> Result<Buffer, MemoryError> {
        let state = self.state("alloc", loc)?;
        if let Some(s) = stream {
            if s.location() != *loc {
                return Err(MemoryError::StreamMismatch {
                    op: "alloc",
                    stream: s.location(),
                    expected: format!("a stream of {loc}"),
                });
            }
        }
        let bytes = words_to_bytes("alloc", *loc, words)?;
        let storage = match loc {
            ResidencyLocation::PageableHost | ResidencyLocation::Sim(_) => {
                state.debit_for(bytes, || host_vec(*loc, words, bytes).map(Storage::Host))?
            }
            ResidencyLocation::PinnedHost => state.debit_for(bytes, || {
                #[cfg(feature = "cuda")]
                if let Some(c) = &self.inner.cuda {
                    return c.alloc_pinned(words).map(Storage::Locked);
                }
                host_vec(*loc, words, bytes).map(Storage::Host)
            })?,
            ResidencyLocation::Cuda(i) => {
                #[cfg(feature = "cuda")]
                {
                    let backend = self.cuda_backend(*loc)?;
                    state.debit_for(bytes, || {
                        let default;
                        let s = match stream {
                            Some(s) => Some(s),
                            None if backend.pooled() => {
                                default = self.default_stream(loc)?;
                                Some(&default)
                            }
                            None => None,
                        };
                        backend
                            .alloc_device(*i, words, s, stream.is_none())
                            .map(Storage::Device)
                    })?
                }
                #[cfg(not(feature = "cuda"))]
                {
                    let _ = i;
                    return Err(MemoryError::LocationUnavailable {
                        op: "alloc",
                        location: *loc,
                        reason: self.cuda_unavailable_reason(),
                    });
                }
            }
        };
        Ok(Buffer::new(*loc, words, storage, Arc::clone(state)))
    }

    /// Allocates a buffer at `loc` holding a copy of `data` (an upload for device locations).
    /// The event, if any, marks the copy complete on the stream used.
    ///
    /// # Errors
    /// As [`alloc`](Self::alloc) and [`Buffer::write`].
    pub fn alloc_from(
        &self,
        loc: &ResidencyLocation,
        data: &[u64],
        stream: Option<&Stream>,
    ) -> Result<(Buffer, Option<Event>), MemoryError> {
        let alloc_stream = stream.filter(|s| s.location() == *loc);
        let mut buf = self.alloc(loc, data.len(), alloc_stream)?;
        let ev = buf.write(self, data, stream)?;
        Ok((buf, ev))
    }
}

/// `words * 8` with an overflow check.
pub(crate) fn words_to_bytes(
    op: &'static str,
    location: ResidencyLocation,
    words: usize,
) -> Result<u64, MemoryError> {
    u64::try_from(words)
        .ok()
        .and_then(|w| w.checked_mul(8))
        .filter(|b| isize::try_from(*b).is_ok())
        .ok_or(MemoryError::SizeOverflow {
            op,
            location,
            words,
        })
}

/// A zeroed host vector, failing with [`MemoryError::OutOfMemory`] instead of aborting; on
/// failure the debit made by the caller is undone.
fn host_vec(
    location: ResidencyLocation,
    words: usize,
    bytes: u64,
) -> Result<Vec<u64>, MemoryError> {
    let mut v = Vec::new();
    if v.try_reserve_exact(words).is_err() {
        return Err(MemoryError::OutOfMemory {
            op: "alloc",
            location,
            requested_bytes: bytes,
            available_bytes: 0,
        });
    }
    v.resize(words, 0);
    Ok(v)
}
