//! Copies between two devices: peer access, direct peer copies and the staged fallback.
//!
//! # Paths
//! A copy between two device locations of the same backend takes one of three paths
//! ([`PeerPath`]), decided once per ordered pair when the [`Memory`] opens and recorded as a
//! [`PeerLink`] ([`Memory::peer_link`], [`Memory::peer_links`]):
//!
//! - [`PeerPath::SameDevice`]: both endpoints on one device (`cuMemcpyDtoDAsync`, or a
//!   `memcpy` on a simulated device).
//! - [`PeerPath::Direct`]: CUDA devices whose hardware allows peer access
//!   (`cuDeviceCanAccessPeer`) get it enabled (`cuCtxEnablePeerAccess` from the destination's
//!   primary context to the source's and back) and copy with one `cuMemcpyPeerAsync` on a
//!   stream of an endpoint. Simulated devices model every pair as peers in
//!   [`PeerMode::Auto`]: one in-order copy on the stream.
//! - [`PeerPath::Staged`]: no peer access (the hardware says no, or [`PeerMode::Staged`] asks
//!   for the fallback): two asynchronous copies through a page-locked host staging buffer,
//!   source device to pinned host on a stream of the source device, then pinned host to the
//!   destination on a stream of the destination device, ordered by an event (`cuStreamWaitEvent`),
//!   never by a host synchronisation. The event returned completes after the second copy.
//!
//! # Ordering
//! A peer copy is ordered after the work already enqueued on the stream it is given (or the
//! default stream it picks, the destination device's). In the staged path the first copy runs
//! on the source device, so that device's stream first waits on an event recorded on the given
//! stream. Ordering against work on *other* streams that produced the source stays the caller's
//! job (`Stream::wait_event`), as for every device copy.
//!
//! # Staging buffers
//! Staging buffers are page-locked host buffers allocated through the [`Memory`] (they count in
//! `usage(pinned-host)` while they exist), kept in a small pool and reused once the event of
//! their last copy has completed; a buffer whose copy is still in flight is never reused or
//! freed. [`Memory::trim_staging`] frees the idle ones. A copy stages its whole length at once
//! (no chunking): the fallback trades pinned memory for simplicity.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use fhelium_residency::{ResidencyLocation, TransferCostModel};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::buffer::{copy_engine, Buffer, Dst, Src};
use crate::error::MemoryError;
use crate::memory::{words_to_bytes, Memory};
use crate::stream::{Event, Stream};

/// Whether device-to-device copies may use peer access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum PeerMode {
    /// Direct peer copies wherever the hardware allows (CUDA: `cuDeviceCanAccessPeer`, then
    /// `cuCtxEnablePeerAccess`; simulated devices: every pair), staged copies elsewhere.
    #[default]
    Auto,
    /// Never use peer access: every copy between two different devices is staged through
    /// pinned host memory (the fallback path, forced; tests and comparisons).
    Staged,
}

/// How a copy between two device locations travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PeerPath {
    /// Both endpoints are the same device.
    SameDevice,
    /// One peer copy (`cuMemcpyPeerAsync`; a simulated device's in-order copy).
    Direct,
    /// Two asynchronous copies through a pinned host staging buffer, ordered by an event.
    Staged,
}

impl PeerPath {
    /// Lower-case name: `same-device`, `direct`, `staged`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::SameDevice => "same-device",
            Self::Direct => "direct",
            Self::Staged => "staged",
        }
    }
}

impl fmt::Display for PeerPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What is known about copies from one device to another, recorded when the memory opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerLink {
    /// Source device.
    pub from: ResidencyLocation,
    /// Destination device.
    pub to: ResidencyLocation,
    /// The hardware's answer (`cuDeviceCanAccessPeer(to, from)`; `true` for simulated pairs,
    /// `false` for a device and itself, which needs no peer access).
    pub can_access_peer: bool,
    /// Whether peer access is enabled for this pair (both directions on CUDA).
    pub peer_enabled: bool,
    /// The path copies `from -> to` take.
    pub path: PeerPath,
}

/// Counters of device-to-device copies made through one [`Memory`] (all pairs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PeerCopyStats {
    /// Copies within one device.
    pub same_device_copies: u64,
    /// Bytes of same-device copies.
    pub same_device_bytes: u64,
    /// Direct peer copies between two devices.
    pub direct_copies: u64,
    /// Bytes of direct peer copies.
    pub direct_bytes: u64,
    /// Staged copies (each two hops through pinned host).
    pub staged_copies: u64,
    /// Bytes of staged copies (counted once per copy, not per hop).
    pub staged_bytes: u64,
    /// Staging buffers allocated (not reused) so far.
    pub staging_allocations: u64,
}

#[derive(Debug, Default)]
struct Counters {
    same: AtomicU64,
    same_bytes: AtomicU64,
    direct: AtomicU64,
    direct_bytes: AtomicU64,
    staged: AtomicU64,
    staged_bytes: AtomicU64,
    staging_allocs: AtomicU64,
}

/// A staging buffer and the event of the last copy that uses it.
struct Staging {
    buffer: Buffer,
    busy_until: Option<Event>,
}

impl Staging {
    fn idle(&self) -> bool {
        self.busy_until
            .as_ref()
            .is_none_or(|e| e.query().unwrap_or(false))
    }
}

/// The peer state of a [`Memory`]: links, staging pool, counters.
pub(crate) struct PeerState {
    pub(crate) mode: PeerMode,
    links: BTreeMap<(ResidencyLocation, ResidencyLocation), PeerLink>,
    staging: Mutex<Vec<Staging>>,
    counters: Counters,
}

impl PeerState {
    /// Links for the simulated devices `sim:0 .. sim:n-1` (every distinct pair is a peer pair in
    /// [`PeerMode::Auto`]) plus the CUDA links given.
    pub(crate) fn new(mode: PeerMode, sim_devices: u8, cuda_links: Vec<PeerLink>) -> Self {
        let mut links = BTreeMap::new();
        for i in 0..sim_devices {
            for j in 0..sim_devices {
                let (from, to) = (ResidencyLocation::Sim(i), ResidencyLocation::Sim(j));
                let link = if i == j {
                    PeerLink {
                        from,
                        to,
                        can_access_peer: false,
                        peer_enabled: false,
                        path: PeerPath::SameDevice,
                    }
                } else {
                    let direct = mode == PeerMode::Auto;
                    PeerLink {
                        from,
                        to,
                        can_access_peer: true,
                        peer_enabled: direct,
                        path: if direct {
                            PeerPath::Direct
                        } else {
                            PeerPath::Staged
                        },
                    }
                };
                links.insert((from, to), link);
            }
        }
        for l in cuda_links {
            links.insert((l.from, l.to), l);
        }
        Self {
            mode,
            links,
            staging: Mutex::new(Vec::new()),
            counters: Counters::default(),
        }
    }

    pub(crate) fn link(&self, from: ResidencyLocation, to: ResidencyLocation) -> Option<PeerLink> {
        self.links.get(&(from, to)).copied()
    }

    fn count(&self, path: PeerPath, bytes: u64) {
        let c = &self.counters;
        let (n, b) = match path {
            PeerPath::SameDevice => (&c.same, &c.same_bytes),
            PeerPath::Direct => (&c.direct, &c.direct_bytes),
            PeerPath::Staged => (&c.staged, &c.staged_bytes),
        };
        n.fetch_add(1, Ordering::Relaxed);
        b.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// True when `a` and `b` are device locations of the same backend (both `sim:N` or both
/// `cuda:N`): the pairs a peer copy connects.
pub(crate) fn same_backend_devices(a: ResidencyLocation, b: ResidencyLocation) -> bool {
    matches!(
        (a, b),
        (ResidencyLocation::Sim(_), ResidencyLocation::Sim(_))
            | (ResidencyLocation::Cuda(_), ResidencyLocation::Cuda(_))
    )
}

impl Memory {
    /// The peer mode this memory was opened with.
    #[must_use]
    pub fn peer_mode(&self) -> PeerMode {
        self.inner.peer.mode
    }

    /// How copies from device `from` to device `to` travel (recorded when the memory opened).
    ///
    /// # Errors
    /// [`MemoryError::LocationUnavailable`] for a location not in this memory;
    /// [`MemoryError::NotAPeerPair`] when either is a host location or they belong to
    /// different backends (a simulated device's memory is host memory: copies between `sim:N`
    /// and `cuda:M` are uploads and downloads, not peer copies).
    pub fn peer_link(
        &self,
        from: &ResidencyLocation,
        to: &ResidencyLocation,
    ) -> Result<PeerLink, MemoryError> {
        self.check_available("peer_link", from)?;
        self.check_available("peer_link", to)?;
        if !same_backend_devices(*from, *to) {
            return Err(MemoryError::NotAPeerPair {
                op: "peer_link",
                from: *from,
                to: *to,
                reason: not_a_pair_reason(*from, *to),
            });
        }
        self.inner
            .peer
            .link(*from, *to)
            .ok_or_else(|| MemoryError::NotAPeerPair {
                op: "peer_link",
                from: *from,
                to: *to,
                reason: "no link recorded for this pair".to_owned(),
            })
    }

    /// Whether the hardware lets `to` access `from`'s memory directly (`cuDeviceCanAccessPeer`,
    /// recorded at open). False for a device and itself and for pairs that are not peer pairs.
    #[must_use]
    pub fn can_access_peer(&self, from: &ResidencyLocation, to: &ResidencyLocation) -> bool {
        self.peer_link(from, to).is_ok_and(|l| l.can_access_peer)
    }

    /// Every recorded link between two *different* devices, in (from, to) order.
    #[must_use]
    pub fn peer_links(&self) -> Vec<PeerLink> {
        self.inner
            .peer
            .links
            .values()
            .filter(|l| l.from != l.to)
            .copied()
            .collect()
    }

    /// `model` with every pair of this memory's devices that has no direct path marked as
    /// having no peer access ([`TransferCostModel::without_peer_access`]), so that a cost-aware
    /// policy (`fhelium_residency::CostAwareTieredLRU`) prices copies between them as the
    /// staged path they really take. Pairs with a direct path in both directions stay peers.
    #[must_use]
    pub fn cost_model_with_peer_links(&self, model: TransferCostModel) -> TransferCostModel {
        let mut model = model;
        for l in self.peer_links() {
            let back = self.inner.peer.link(l.to, l.from).map(|b| b.path);
            if l.path != PeerPath::Direct || back != Some(PeerPath::Direct) {
                // Two different device locations: `without_peer_access` cannot refuse them.
                model = match model.clone().without_peer_access(l.from, l.to) {
                    Ok(m) => m,
                    Err(_) => model,
                };
            }
        }
        model
    }

    /// Device-to-device copy counters since the memory opened.
    #[must_use]
    pub fn peer_copy_stats(&self) -> PeerCopyStats {
        let c = &self.inner.peer.counters;
        PeerCopyStats {
            same_device_copies: c.same.load(Ordering::Relaxed),
            same_device_bytes: c.same_bytes.load(Ordering::Relaxed),
            direct_copies: c.direct.load(Ordering::Relaxed),
            direct_bytes: c.direct_bytes.load(Ordering::Relaxed),
            staged_copies: c.staged.load(Ordering::Relaxed),
            staged_bytes: c.staged_bytes.load(Ordering::Relaxed),
            staging_allocations: c.staging_allocs.load(Ordering::Relaxed),
        }
    }

    /// Frees the staging buffers whose last copy has completed; returns how many were freed.
    /// Buffers still in flight stay.
    pub fn trim_staging(&self) -> usize {
        let mut pool = self.inner.peer.staging.lock();
        let before = pool.len();
        pool.retain(|s| !s.idle());
        before - pool.len()
    }

    /// Staging buffers currently held (idle or in flight).
    #[must_use]
    pub fn staging_buffers(&self) -> usize {
        self.inner.peer.staging.lock().len()
    }

    /// An idle staging buffer of at least `words` words, or a new one.
    fn take_staging(&self, words: usize) -> Result<Buffer, MemoryError> {
        {
            let mut pool = self.inner.peer.staging.lock();
            // Smallest idle buffer that fits.
            let best = pool
                .iter()
                .enumerate()
                .filter(|(_, s)| s.buffer.words() >= words && s.idle())
                .min_by_key(|(_, s)| s.buffer.words())
                .map(|(i, _)| i);
            if let Some(i) = best {
                return Ok(pool.swap_remove(i).buffer);
            }
        }
        let b = self.alloc(&ResidencyLocation::PinnedHost, words, None)?;
        self.inner
            .peer
            .counters
            .staging_allocs
            .fetch_add(1, Ordering::Relaxed);
        Ok(b)
    }

    fn return_staging(&self, buffer: Buffer, busy_until: Option<Event>) {
        self.inner
            .peer
            .staging
            .lock()
            .push(Staging { buffer, busy_until });
    }
}

fn not_a_pair_reason(from: ResidencyLocation, to: ResidencyLocation) -> String {
    if from.is_host() || to.is_host() {
        format!("{from} -> {to} has a host endpoint; peer copies connect two devices")
    } else {
        format!(
            "{from} and {to} belong to different backends (a simulated device's memory is host \
             memory)"
        )
    }
}

impl Buffer {
    /// Copies all of `src` into this buffer through the **staged** path (two asynchronous
    /// copies through a pinned host staging buffer, ordered by an event; no host
    /// synchronisation), whatever the pair's [`PeerLink`] says. Both buffers must live on
    /// devices of the same backend; the same device is allowed (it exercises the fallback on a
    /// one-GPU machine). Ordinary copies ([`Buffer::copy_from`], [`Buffer::copy_to`]) take the
    /// staged path by themselves when the pair has no peer access.
    ///
    /// # Errors
    /// [`MemoryError::SizeMismatch`], [`MemoryError::NotAPeerPair`],
    /// [`MemoryError::LocationUnavailable`], [`MemoryError::StreamMismatch`],
    /// [`MemoryError::InjectedCopyFailure`] (a fault armed at the destination),
    /// [`MemoryError::PeerCopy`] when a hop fails (naming the hop), [`MemoryError::Cuda`].
    pub fn copy_from_staged(
        &mut self,
        mem: &Memory,
        src: &Buffer,
        stream: Option<&Stream>,
    ) -> Result<Option<Event>, MemoryError> {
        let (from, to) = (src.location(), self.location());
        if src.words() != self.words() {
            return Err(MemoryError::SizeMismatch {
                op: "copy_from_staged",
                from,
                to,
                from_bytes: src.nbytes(),
                to_bytes: self.nbytes(),
            });
        }
        mem.check_available("copy_from_staged", &from)?;
        mem.check_available("copy_from_staged", &to)?;
        if !same_backend_devices(from, to) {
            return Err(MemoryError::NotAPeerPair {
                op: "copy_from_staged",
                from,
                to,
                reason: not_a_pair_reason(from, to),
            });
        }
        let stream = crate::buffer::resolve_stream(mem, "copy_from_staged", from, to, stream)?;
        let words = self.words();
        let bytes = words_to_bytes("copy_from_staged", to, words)?;
        if self.state_take_copy_fault() {
            return Err(MemoryError::InjectedCopyFailure { from, to, bytes });
        }
        staged_copy(
            mem,
            Src::Buf(src, 0),
            Dst::Buf(self, 0),
            words,
            stream.as_ref(),
        )
    }
}

/// The path a copy `from -> to` takes, `None` when it is not a device-to-device copy of one
/// backend.
pub(crate) fn path_of(
    mem: &Memory,
    from: ResidencyLocation,
    to: ResidencyLocation,
) -> Option<PeerPath> {
    if !same_backend_devices(from, to) {
        return None;
    }
    mem.inner.peer.link(from, to).map(|l| l.path)
}

/// Counts a device-to-device copy that took `path`.
pub(crate) fn count(mem: &Memory, path: PeerPath, bytes: u64) {
    mem.inner.peer.count(path, bytes);
}

/// The staged path: `src` (a device buffer) -> pinned staging on a stream of the source
/// device -> `dst` on a stream of the destination device; see the module docs. `stream` is the
/// resolved stream of the copy (on one of the endpoints). The destination's armed copy fault
/// has already been consumed by the caller.
pub(crate) fn staged_copy(
    mem: &Memory,
    src: Src<'_>,
    dst: Dst<'_>,
    len: usize,
    stream: Option<&Stream>,
) -> Result<Option<Event>, MemoryError> {
    let (from, to) = (src.location(), dst.location());
    let bytes = words_to_bytes("staged copy", to, len)?;
    let fail = |stage: &'static str, cause: MemoryError| MemoryError::PeerCopy {
        from,
        to,
        bytes,
        path: PeerPath::Staged,
        stage,
        cause: Box::new(cause),
    };
    // The two streams: the given one serves its own endpoint; the other endpoint's default.
    let (s_src, s_dst) = match stream {
        Some(s) if s.location() == from && from != to => (
            s.clone(),
            mem.default_stream(&to).map_err(|e| fail("stream", e))?,
        ),
        Some(s) if s.location() == to && from != to => (
            mem.default_stream(&from).map_err(|e| fail("stream", e))?,
            s.clone(),
        ),
        Some(s) => (s.clone(), s.clone()),
        None => (
            mem.default_stream(&from).map_err(|e| fail("stream", e))?,
            mem.default_stream(&to).map_err(|e| fail("stream", e))?,
        ),
    };
    // Order the first hop after the work already on the given stream.
    if let Some(s) = stream {
        s_src.wait_for(s).map_err(|e| fail("order", e))?;
    }
    let mut staging = mem
        .take_staging(len)
        .map_err(|e| fail("staging alloc", e))?;
    let first = copy_engine(mem, src, Dst::Buf(&mut staging, 0), len, Some(&s_src));
    let first = match first {
        Ok(ev) => ev,
        Err(e) => {
            mem.return_staging(staging, None);
            return Err(fail("device to pinned host", e));
        }
    };
    if let Some(ev) = &first {
        if s_dst != s_src {
            if let Err(e) = s_dst.wait_event(ev) {
                mem.return_staging(staging, first.clone());
                return Err(fail("order", e));
            }
        }
    }
    let second = copy_engine(mem, Src::Buf(&staging, 0), dst, len, Some(&s_dst));
    match second {
        Ok(ev) => {
            mem.return_staging(staging, ev.clone().or(first));
            count(mem, PeerPath::Staged, bytes);
            Ok(ev)
        }
        Err(e) => {
            mem.return_staging(staging, first);
            Err(fail("pinned host to device", e))
        }
    }
}
