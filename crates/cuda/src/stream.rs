//! Streams and events, for simulated devices (always) and CUDA devices (feature `cuda`).
//!
//! # The simulated model
//! A simulated stream executes the work enqueued on it at once, in order (its memory is host
//! memory, so "running" a copy is an ordinary `memcpy`). An event therefore completes as soon
//! as it is recorded, **unless** the stream is *held*: [`Stream::hold`] opens a gate, and every
//! event recorded on that stream until [`Stream::release_hold`] stays pending (its
//! [`Event::query`] answers `false`). A stream that waits on a pending event
//! ([`Stream::wait_event`]) inherits that event's gates, so its later events stay pending too,
//! exactly as a CUDA stream waiting on an unfinished event would. This is what lets tests
//! prove that memory under a pending event is never reclaimed, on machines without a GPU.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fhelium_residency::ResidencyLocation;
use parking_lot::{Condvar, Mutex};

use crate::error::MemoryError;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// How long a blocking wait on a held simulated event lasts before it reports
/// [`MemoryError::HoldTimeout`] instead of hanging a test forever.
pub const SIM_HOLD_TIMEOUT: Duration = Duration::from_secs(30);

/// A hold gate of the simulated backend: pending until released.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    released: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn is_released(&self) -> bool {
        *self.released.lock()
    }

    fn release(&self) {
        *self.released.lock() = true;
        self.cv.notify_all();
    }

    fn wait(
        &self,
        op: &'static str,
        location: ResidencyLocation,
        deadline: Instant,
        limit: Duration,
    ) -> Result<(), MemoryError> {
        let mut released = self.released.lock();
        while !*released {
            if self.cv.wait_until(&mut released, deadline).timed_out() && !*released {
                return Err(MemoryError::HoldTimeout {
                    op,
                    location,
                    millis: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                });
            }
        }
        Ok(())
    }
}

#[derive(Debug, Default)]
pub(crate) struct SimStreamState {
    /// The open hold, if any.
    hold: Option<Arc<Gate>>,
    /// Gates inherited through `wait_event`.
    deps: Vec<Arc<Gate>>,
}

impl SimStreamState {
    fn pending_gates(&mut self) -> Vec<Arc<Gate>> {
        self.deps.retain(|g| !g.is_released());
        let mut gates = self.deps.clone();
        gates.extend(self.hold.iter().cloned());
        gates
    }
}

pub(crate) enum StreamKind {
    Sim(Mutex<SimStreamState>),
    #[cfg(feature = "cuda")]
    Cuda(crate::cuda::CudaStream),
}

pub(crate) struct StreamInner {
    pub(crate) id: u64,
    pub(crate) location: ResidencyLocation,
    pub(crate) kind: StreamKind,
}

/// An in-order work queue on one device location (`sim:N` or `cuda:N`).
///
/// Cloning shares the stream. Two clones compare equal; distinct streams never do.
#[derive(Clone)]
pub struct Stream {
    pub(crate) inner: Arc<StreamInner>,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Stream#{}@{}", self.inner.id, self.inner.location)
    }
}

impl PartialEq for Stream {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for Stream {}

impl Stream {
    pub(crate) fn new_sim(location: ResidencyLocation) -> Self {
        Self {
            inner: Arc::new(StreamInner {
                id: next_id(),
                location,
                kind: StreamKind::Sim(Mutex::new(SimStreamState::default())),
            }),
        }
    }

    #[cfg(feature = "cuda")]
    pub(crate) fn new_cuda(location: ResidencyLocation, stream: crate::cuda::CudaStream) -> Self {
        Self {
            inner: Arc::new(StreamInner {
                id: next_id(),
                location,
                kind: StreamKind::Cuda(stream),
            }),
        }
    }

    /// The device location this stream runs on.
    #[must_use]
    pub fn location(&self) -> ResidencyLocation {
        self.inner.location
    }

    /// A process-unique number, for diagnostics.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// True for streams of simulated devices.
    #[must_use]
    pub fn is_simulated(&self) -> bool {
        matches!(self.inner.kind, StreamKind::Sim(_))
    }

    /// The CUDA stream, for kernel launches (feature `cuda`).
    #[cfg(feature = "cuda")]
    pub(crate) fn cuda(&self) -> Option<&crate::cuda::CudaStream> {
        match &self.inner.kind {
            StreamKind::Cuda(s) => Some(s),
            StreamKind::Sim(_) => None,
        }
    }

    /// The `cust` stream under this one, when it was handed over by
    /// [`Memory::wrap_stream`](crate::Memory::wrap_stream): for code that enqueues its own
    /// work (kernels) in the same order as this layer's copies and events. `None` for
    /// simulated streams and for streams this layer created.
    #[cfg(feature = "cuda")]
    #[must_use]
    pub fn as_cust(&self) -> Option<&cust::stream::Stream> {
        self.cuda().and_then(crate::cuda::CudaStream::as_cust)
    }

    /// Records an event that completes when all work enqueued so far has run.
    ///
    /// # Errors
    /// [`MemoryError::Cuda`] when the driver refuses.
    pub fn record_event(&self) -> Result<Event, MemoryError> {
        self.record(false)
    }

    /// Like [`record_event`](Self::record_event), with timing enabled on CUDA so that
    /// [`Event::elapsed_ms`] works (plain events skip timing, which makes them cheaper).
    ///
    /// # Errors
    /// [`MemoryError::Cuda`] when the driver refuses.
    pub fn record_timing_event(&self) -> Result<Event, MemoryError> {
        self.record(true)
    }

    fn record(&self, timing: bool) -> Result<Event, MemoryError> {
        #[cfg(not(feature = "cuda"))]
        let _ = timing;
        let location = self.inner.location;
        match &self.inner.kind {
            StreamKind::Sim(state) => {
                let gates = state.lock().pending_gates();
                Ok(Event {
                    inner: Arc::new(EventInner {
                        id: next_id(),
                        stream_id: self.inner.id,
                        location,
                        kind: EventKind::Sim(gates),
                    }),
                })
            }
            #[cfg(feature = "cuda")]
            StreamKind::Cuda(s) => {
                let ev = s.record(location, timing)?;
                Ok(Event {
                    inner: Arc::new(EventInner {
                        id: next_id(),
                        stream_id: self.inner.id,
                        location,
                        kind: EventKind::Cuda(ev),
                    }),
                })
            }
        }
    }

    /// Makes all work enqueued on this stream from now on wait until `event` completes
    /// (`cuStreamWaitEvent`); the host does not block. Events of another device of the same
    /// backend are accepted.
    ///
    /// # Errors
    /// [`MemoryError::BackendMismatch`] when a simulated stream is asked to wait on a CUDA
    /// event or the reverse; [`MemoryError::Cuda`] when the driver refuses.
    pub fn wait_event(&self, event: &Event) -> Result<(), MemoryError> {
        match (&self.inner.kind, &event.inner.kind) {
            (StreamKind::Sim(state), EventKind::Sim(gates)) => {
                let mut state = state.lock();
                for g in gates {
                    if !g.is_released() && !state.deps.iter().any(|d| Arc::ptr_eq(d, g)) {
                        state.deps.push(Arc::clone(g));
                    }
                }
                Ok(())
            }
            #[cfg(feature = "cuda")]
            (StreamKind::Cuda(s), EventKind::Cuda(e)) => s.wait(e, self.inner.location),
            #[cfg(feature = "cuda")]
            _ => Err(MemoryError::BackendMismatch {
                op: "wait_event",
                a: self.inner.location,
                b: event.inner.location,
            }),
        }
    }

    /// Makes all work enqueued on this stream from now on wait until the work enqueued so far
    /// on `earlier` has run (an event recorded there, waited on here); nothing when they are
    /// one stream. The host does not block.
    ///
    /// # Errors
    /// As [`record_event`](Self::record_event) and [`wait_event`](Self::wait_event).
    pub fn wait_for(&self, earlier: &Stream) -> Result<(), MemoryError> {
        if self == earlier {
            return Ok(());
        }
        self.wait_event(&earlier.record_event()?)
    }

    /// Blocks the host until all work enqueued on this stream has run.
    ///
    /// On a simulated stream this waits for its open hold and inherited gates to be released
    /// (from another thread), for at most [`SIM_HOLD_TIMEOUT`].
    ///
    /// # Errors
    /// [`MemoryError::HoldTimeout`] (simulated) or [`MemoryError::Cuda`].
    pub fn synchronize(&self) -> Result<(), MemoryError> {
        match &self.inner.kind {
            StreamKind::Sim(state) => {
                let gates = state.lock().pending_gates();
                for g in gates {
                    g.wait(
                        "stream synchronize",
                        self.inner.location,
                        Instant::now() + SIM_HOLD_TIMEOUT,
                        SIM_HOLD_TIMEOUT,
                    )?;
                }
                Ok(())
            }
            #[cfg(feature = "cuda")]
            StreamKind::Cuda(s) => s.synchronize(self.inner.location),
        }
    }

    /// Opens a hold on a simulated stream: every event recorded on it until
    /// [`release_hold`](Self::release_hold) stays pending. Holding a held stream changes
    /// nothing.
    ///
    /// # Errors
    /// [`MemoryError::HoldUnsupported`] on a CUDA stream.
    pub fn hold(&self) -> Result<(), MemoryError> {
        match &self.inner.kind {
            StreamKind::Sim(state) => {
                let mut state = state.lock();
                if state.hold.is_none() {
                    state.hold = Some(Arc::new(Gate::default()));
                }
                Ok(())
            }
            #[cfg(feature = "cuda")]
            StreamKind::Cuda(_) => Err(MemoryError::HoldUnsupported {
                op: "hold",
                location: self.inner.location,
            }),
        }
    }

    /// Releases the open hold: the events recorded under it complete (unless they also
    /// depend on another pending gate). Releasing a stream that is not held changes nothing.
    ///
    /// # Errors
    /// [`MemoryError::HoldUnsupported`] on a CUDA stream.
    pub fn release_hold(&self) -> Result<(), MemoryError> {
        match &self.inner.kind {
            StreamKind::Sim(state) => {
                if let Some(g) = state.lock().hold.take() {
                    g.release();
                }
                Ok(())
            }
            #[cfg(feature = "cuda")]
            StreamKind::Cuda(_) => Err(MemoryError::HoldUnsupported {
                op: "release_hold",
                location: self.inner.location,
            }),
        }
    }

    /// True while a simulated stream has an open hold (always false for CUDA streams).
    #[must_use]
    pub fn is_held(&self) -> bool {
        match &self.inner.kind {
            StreamKind::Sim(state) => state.lock().hold.is_some(),
            #[cfg(feature = "cuda")]
            StreamKind::Cuda(_) => false,
        }
    }
}

pub(crate) enum EventKind {
    Sim(Vec<Arc<Gate>>),
    #[cfg(feature = "cuda")]
    Cuda(crate::cuda::CudaEvent),
}

pub(crate) struct EventInner {
    id: u64,
    pub(crate) stream_id: u64,
    location: ResidencyLocation,
    pub(crate) kind: EventKind,
}

/// A point in a stream's work: complete once everything enqueued before it has run.
///
/// Cloning shares the event.
#[derive(Clone)]
pub struct Event {
    pub(crate) inner: Arc<EventInner>,
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Event#{}@{}", self.inner.id, self.inner.location)
    }
}

impl Event {
    /// The device location of the stream the event was recorded on.
    #[must_use]
    pub fn location(&self) -> ResidencyLocation {
        self.inner.location
    }

    /// A process-unique number, for diagnostics.
    #[must_use]
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// True for events of CUDA streams (false for simulated ones).
    #[must_use]
    pub fn is_cuda(&self) -> bool {
        match &self.inner.kind {
            EventKind::Sim(_) => false,
            #[cfg(feature = "cuda")]
            EventKind::Cuda(_) => true,
        }
    }

    /// The [`Stream::id`] of the stream the event was recorded on.
    #[must_use]
    pub fn stream_id(&self) -> u64 {
        self.inner.stream_id
    }

    /// Non-blocking completion check: `true` when complete.
    ///
    /// # Errors
    /// [`MemoryError::Cuda`] when the driver reports an error other than "not ready".
    pub fn query(&self) -> Result<bool, MemoryError> {
        match &self.inner.kind {
            EventKind::Sim(gates) => Ok(gates.iter().all(|g| g.is_released())),
            #[cfg(feature = "cuda")]
            EventKind::Cuda(e) => e.query(self.inner.location),
        }
    }

    /// Blocks the host until the event is complete.
    ///
    /// # Errors
    /// [`MemoryError::HoldTimeout`] when a simulated hold is not released within
    /// [`SIM_HOLD_TIMEOUT`]; [`MemoryError::Cuda`].
    pub fn synchronize(&self) -> Result<(), MemoryError> {
        match &self.inner.kind {
            EventKind::Sim(_) => self.synchronize_within(SIM_HOLD_TIMEOUT),
            #[cfg(feature = "cuda")]
            EventKind::Cuda(e) => e.synchronize(self.inner.location),
        }
    }

    /// Blocks until the event completes or `limit` has passed.
    ///
    /// # Errors
    /// [`MemoryError::HoldTimeout`] when the event is still pending after `limit` (a held
    /// simulated stream, or CUDA work still running); [`MemoryError::Cuda`].
    pub fn synchronize_within(&self, limit: Duration) -> Result<(), MemoryError> {
        let deadline = Instant::now() + limit;
        match &self.inner.kind {
            EventKind::Sim(gates) => {
                for g in gates {
                    g.wait("event synchronize", self.inner.location, deadline, limit)?;
                }
                Ok(())
            }
            #[cfg(feature = "cuda")]
            EventKind::Cuda(e) => loop {
                if e.query(self.inner.location)? {
                    return Ok(());
                }
                if Instant::now() >= deadline {
                    return Err(MemoryError::HoldTimeout {
                        op: "event synchronize",
                        location: self.inner.location,
                        millis: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                    });
                }
                std::thread::sleep(Duration::from_micros(20));
            },
        }
    }

    /// Milliseconds between `self` and a later event `end` (CUDA events recorded with
    /// [`Stream::record_timing_event`], both complete). `None` for simulated events.
    ///
    /// # Errors
    /// [`MemoryError::Cuda`].
    pub fn elapsed_ms(&self, end: &Event) -> Result<Option<f32>, MemoryError> {
        match (&self.inner.kind, &end.inner.kind) {
            #[cfg(feature = "cuda")]
            (EventKind::Cuda(a), EventKind::Cuda(b)) => {
                a.elapsed_ms(b, self.inner.location).map(Some)
            }
            _ => Ok(None),
        }
    }
}
