//! The residency manager: the sole authority for placement, accounting and lifetime.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fhelium_cuda::{Event, Memory, Resident, Stream};
use fhelium_residency::{
    ModelError, Recoverability, ReplicaMode, ResidencyAction, ResidencyHandle, ResidencyLocation,
    ResidencyTransitionReport, ResidencyValueSpec,
};
use parking_lot::{Mutex, MutexGuard};
use tracing::{debug_span, warn};

use crate::error::{OwnershipViolation, Result, RuntimeError, SourceError};
use crate::lifetime::{ResidencyHold, ResidencyLease, ResidencyReservation};
use crate::report;
use crate::state::{
    HoldRecord, LeaseRecord, LocationState, Materialization, ReservationRecord, State, ValueRecord,
};
use crate::value::{ErasedValue, Handle, Loader, ValueArc};

/// Default bound of the transition trace.
pub const DEFAULT_TRACE_CAPACITY: usize = 4096;

static NEXT_MANAGER: AtomicU64 = AtomicU64::new(1);

/// A bijective 64-bit mix (splitmix64's finaliser): distinct inputs give distinct ids.
const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(crate) fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// Shared core of a manager; lifetime guards keep it alive.
pub(crate) struct Inner {
    pub id: u64,
    pub memory: Memory,
    pub state: Mutex<State>,
    /// Set while a source's `load()` runs (spec 2.14): every other access fails fast.
    pub in_callback: AtomicBool,
    /// Incremented by `close`; a lease from an earlier epoch lost its record.
    pub close_epoch: AtomicU64,
}

/// Clears the callback flag even if `load()` panics.
struct CallbackFlag<'a>(&'a AtomicBool);
impl Drop for CallbackFlag<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

impl Inner {
    /// Takes the state lock, failing fast while a source callback runs (spec 2.14): waiters
    /// poll the flag every 10 ms instead of blocking behind the callback.
    pub fn lock(&self, operation: &'static str) -> Result<MutexGuard<'_, State>> {
        loop {
            if self.in_callback.load(Ordering::SeqCst) {
                return Err(RuntimeError::Reentrancy { operation });
            }
            if let Some(g) = self.state.try_lock_for(Duration::from_millis(10)) {
                return Ok(g);
            }
        }
    }

    /// [`Inner::lock`] plus the open check.
    pub fn open(&self, operation: &'static str) -> Result<MutexGuard<'_, State>> {
        let g = self.lock(operation)?;
        if g.closed {
            return Err(RuntimeError::Closed { operation });
        }
        Ok(g)
    }

    pub fn check_location(&self, loc: ResidencyLocation) -> Result<()> {
        if self.memory.is_available(&loc) {
            Ok(())
        } else {
            Err(RuntimeError::LocationUnavailable { location: loc })
        }
    }

    /// Validates a transfer or consumer stream for endpoint `loc` (spec 2.8 step 4).
    pub fn check_stream(loc: ResidencyLocation, stream: Option<&Stream>) -> Result<()> {
        let Some(s) = stream else { return Ok(()) };
        if loc.is_host() {
            return Err(RuntimeError::Stream {
                location: loc,
                stream_location: s.location(),
                reason: "CUDA streams require a CUDA residency location",
            });
        }
        if s.location() != loc {
            return Err(RuntimeError::Stream {
                location: loc,
                stream_location: s.location(),
                reason: "stream device does not match the location",
            });
        }
        Ok(())
    }

    /// Validates a value against value record `vi`'s spec for installation at `loc`
    /// (spec 2.8 install step 3).
    fn validate(
        st: &State,
        vi: usize,
        loc: ResidencyLocation,
        value: &dyn ErasedValue,
    ) -> Result<()> {
        let rec = &st.values[vi];
        let fail = |detail: String| RuntimeError::Materialization {
            handle: rec.handle.clone(),
            location: loc,
            nbytes: value.nbytes(),
            detail,
        };
        if value.type_tag() != rec.spec.value_type() {
            return Err(fail(format!(
                "Expected {}, got {}",
                rec.spec.value_type(),
                value.type_tag()
            )));
        }
        match value.placement() {
            Ok(p) if p == loc => {}
            Ok(p) => return Err(fail(format!("Value device {p} does not match {loc}"))),
            Err(e) => return Err(fail(e.to_string())),
        }
        if value.nbytes() != rec.spec.logical_nbytes() {
            return Err(fail(format!(
                "Logical payload size mismatch: {} bytes, registered {}",
                value.nbytes(),
                rec.spec.logical_nbytes()
            )));
        }
        let charge = value.nbytes().max(value.storage_nbytes());
        if charge > rec.spec.charge() {
            return Err(fail(format!(
                "Backing-storage charge mismatch: registered charge exceeded ({charge} > {})",
                rec.spec.charge()
            )));
        }
        Ok(())
    }

    /// One event after which an adopted value's contents are complete
    /// ([`Resident::pending_events`]): none when they are; the one producer's event; or, for
    /// several, an event of `at`'s default stream after it waited on them all (on the GPU).
    fn producers_ready<T: Resident>(
        &self,
        value: &T,
        handle: &ResidencyHandle,
        at: ResidencyLocation,
        nbytes: u64,
    ) -> Result<Option<Event>> {
        let fail = |source| RuntimeError::Memory {
            handle: Some(handle.clone()),
            location: at,
            nbytes,
            source,
        };
        let mut events = value.pending_events().map_err(fail)?;
        if events.len() <= 1 {
            return Ok(events.pop());
        }
        let joined = self.memory.default_stream(&at).and_then(|s| {
            for ev in &events {
                s.wait_event(ev)?;
            }
            s.record_event()
        });
        joined.map(Some).map_err(fail)
    }

    /// Install of spec 2.8. On failure nothing changed; a value whose copy is still in flight
    /// is retired rather than freed.
    fn install(
        st: &mut State,
        vi: usize,
        loc: ResidencyLocation,
        value: ValueArc,
        ready: Option<Event>,
        in_move: bool,
    ) -> Result<()> {
        let r = Self::install_checks(st, vi, loc, &*value, in_move);
        if let Err(e) = r {
            if let Some(ev) = ready {
                if !ev.query().unwrap_or(false) {
                    st.retiring.push((value, vec![ev]));
                }
            }
            return Err(e);
        }
        let charge = st.values[vi].spec.charge();
        let keys = value.storage_keys();
        for k in &keys {
            st.owners.insert(*k, (vi, loc));
        }
        let storage = value.storage_nbytes();
        let l = st.register(loc);
        l.used += charge;
        l.bump_peaks();
        st.touch(vi);
        st.values[vi].mats.push(Materialization {
            location: loc,
            value,
            storage_nbytes: storage,
            charged_nbytes: charge,
            keys,
            uses: Vec::new(),
            holds: Vec::new(),
            pending: Vec::new(),
            ready,
            outgoing: Vec::new(),
        });
        st.bump();
        Ok(())
    }

    fn install_checks(
        st: &State,
        vi: usize,
        loc: ResidencyLocation,
        value: &dyn ErasedValue,
        in_move: bool,
    ) -> Result<()> {
        let rec = &st.values[vi];
        let charge = rec.spec.charge();
        if rec.exclusive() && !rec.mats.is_empty() && !in_move {
            return Err(RuntimeError::Ownership {
                handle: rec.handle.clone(),
                location: Some(loc),
                charged_nbytes: charge,
                violation: OwnershipViolation::SimultaneousExclusive,
            });
        }
        Self::validate(st, vi, loc, value)?;
        st.admit(loc, charge, Some(&rec.handle))?;
        if value
            .storage_keys()
            .iter()
            .any(|k| st.owners.contains_key(k))
        {
            return Err(RuntimeError::Ownership {
                handle: rec.handle.clone(),
                location: Some(loc),
                charged_nbytes: charge,
                violation: OwnershipViolation::AliasedStorage,
            });
        }
        Ok(())
    }

    /// Calls the source of value `vi` with a temporary charge at its source location
    /// (spec 2.9 steps 1-5). On success the temporary charge is still held: the caller
    /// releases it with [`Inner::release_temp`].
    fn reconstruct(&self, st: &mut State, vi: usize) -> Result<(ValueArc, ResidencyLocation)> {
        let rec = &st.values[vi];
        let handle = rec.handle.clone();
        let (Some(loader), Some(src)) = (rec.source.clone(), rec.source_location) else {
            return Err(RuntimeError::NoSource { handle });
        };
        let charge = rec.spec.charge();
        st.admit(src, charge, Some(&handle))?;
        {
            let l = st.register(src);
            l.reserved += charge;
            l.bump_peaks_charged();
        }
        let _span =
            debug_span!("residency.load", handle = %handle, location = %src, bytes = charge)
                .entered();
        let loaded = {
            self.in_callback.store(true, Ordering::SeqCst);
            let _flag = CallbackFlag(&self.in_callback);
            loader()
        };
        let checked = loaded
            .map_err(|source| RuntimeError::Source {
                handle: handle.clone(),
                location: src,
                source,
            })
            .and_then(|v| Self::validate(st, vi, src, &*v).map(|()| v));
        match checked {
            Ok(v) => Ok((v, src)),
            Err(e) => {
                Self::release_temp(st, src, charge);
                Err(e)
            }
        }
    }

    fn release_temp(st: &mut State, src: ResidencyLocation, charge: u64) {
        if let Some(l) = st.loc_mut(src) {
            l.reserved -= charge;
        }
    }

    /// Copies `value` (a replica at `from`, or a loaded value) to `to`.
    fn copy(
        &self,
        value: &dyn ErasedValue,
        ready: Option<&Event>,
        handle: &ResidencyHandle,
        to: ResidencyLocation,
        charge: u64,
        stream: Option<&Stream>,
    ) -> Result<(ValueArc, Option<Event>)> {
        let mem_err = |source| RuntimeError::Memory {
            handle: Some(handle.clone()),
            location: to,
            nbytes: charge,
            source,
        };
        if let Some(ev) = ready {
            match stream {
                Some(s) => s.wait_event(ev).map_err(mem_err)?,
                None => ev.synchronize().map_err(mem_err)?,
            }
        }
        value
            .materialize_erased(&self.memory, &to, stream)
            .map_err(mem_err)
    }

    /// Copies the replica of `vi` at `from` to `to` and installs it; records the copy's event
    /// on the source replica so its storage outlives the copy.
    fn copy_install(
        &self,
        st: &mut State,
        vi: usize,
        from: ResidencyLocation,
        to: ResidencyLocation,
        stream: Option<&Stream>,
        in_move: bool,
    ) -> Result<()> {
        let rec = &st.values[vi];
        let charge = rec.spec.charge();
        st.admit(to, charge, Some(&rec.handle))?;
        let Some(src) = rec.mat(from) else {
            return Err(RuntimeError::ExplicitSourceNotResident {
                handle: rec.handle.clone(),
                location: from,
            });
        };
        let (value, ready) = self.copy(
            &*src.value.clone(),
            src.ready.as_ref(),
            &rec.handle,
            to,
            charge,
            stream,
        )?;
        if let (Some(ev), Some(m)) = (&ready, st.mat_mut(vi, from)) {
            m.outgoing.push(ev.clone());
        }
        Self::install(st, vi, to, value, ready, in_move)
    }

    /// Reconstructs `vi` and installs it at `to` (spec 2.8 ensure step 4-5, move step 4).
    fn reconstruct_install(
        &self,
        st: &mut State,
        vi: usize,
        to: ResidencyLocation,
        stream: Option<&Stream>,
        in_move: bool,
    ) -> Result<ResidencyLocation> {
        let charge = st.values[vi].spec.charge();
        let (loaded, src) = self.reconstruct(st, vi)?;
        if src == to {
            Self::release_temp(st, src, charge);
            Self::install(st, vi, to, loaded, None, in_move)?;
            return Ok(src);
        }
        let handle = st.values[vi].handle.clone();
        let r = st.admit(to, charge, Some(&handle)).and_then(|()| {
            let (value, ready) = self.copy(&*loaded, None, &handle, to, charge, stream)?;
            if let Some(ev) = &ready {
                if !ev.query().unwrap_or(false) {
                    st.retiring.push((loaded.clone(), vec![ev.clone()]));
                }
            }
            Self::install(st, vi, to, value, ready, in_move)
        });
        Self::release_temp(st, src, charge);
        r.map(|()| src)
    }

    /// Runs one action under the lock (spec 2.8: per-action prelude, then the transition).
    /// Failure-atomic: on error the state (placement, accounting, version) is unchanged.
    pub fn apply_locked(
        &self,
        st: &mut State,
        action: &ResidencyAction,
        stream: Option<&Stream>,
    ) -> Result<ResidencyTransitionReport> {
        let started = now_ns();
        let vi = st.resolve(self.id, action.handle())?;
        let rec = &st.values[vi];
        let handle = rec.handle.clone();
        let logical = rec.spec.logical_nbytes();
        let charge = rec.spec.charge();
        // Allocator telemetry (spec 6.2): the first device among the action's relevant
        // locations, sampled before and after; never influences admission.
        let relevant: Vec<ResidencyLocation> = match action {
            ResidencyAction::EnsureResident { location, .. }
            | ResidencyAction::DropResident { location, .. } => vec![*location],
            ResidencyAction::MoveResident { to, from, .. } => std::iter::once(*to)
                .chain(from.map_or_else(
                    || rec.mats.iter().map(|m| m.location).collect(),
                    |f| vec![f],
                ))
                .collect(),
            ResidencyAction::DiscardValue { .. } => rec.mats.iter().map(|m| m.location).collect(),
        };
        let sample_device = relevant
            .into_iter()
            .find(|l| l.is_device() && self.memory.is_available(l));
        let sample = |d: ResidencyLocation| self.memory.usage(&d).map(|u| u.allocated_bytes);
        let before = sample_device.and_then(sample);
        let done = |st: &mut State, no_op: bool, source, dest, reason: Option<&str>| {
            let allocator = sample_device.map(|device| report::AllocatorSample {
                device,
                before,
                after: sample(device),
            });
            let r = report::transition(
                action,
                no_op,
                source,
                dest,
                logical,
                charge,
                started,
                now_ns(),
                reason,
                allocator,
            );
            st.push_trace(r.clone());
            r
        };
        match action {
            ResidencyAction::EnsureResident { location, .. } => {
                let to = *location;
                let _span =
                    debug_span!("residency.ensure", handle = %handle, to = %to, bytes = charge)
                        .entered();
                self.check_location(to)?;
                Self::check_stream(to, stream)?;
                if rec.mat(to).is_some() {
                    return Ok(done(
                        st,
                        true,
                        None,
                        Some(to),
                        Some("destination already resident"),
                    ));
                }
                if rec.exclusive() && !rec.mats.is_empty() {
                    return Err(RuntimeError::Ownership {
                        handle,
                        location: Some(to),
                        charged_nbytes: charge,
                        violation: OwnershipViolation::ReplicateExclusive,
                    });
                }
                let source = match rec.canonical_source(None) {
                    Some(from) => {
                        self.copy_install(st, vi, from, to, stream, false)?;
                        from
                    }
                    None => self.reconstruct_install(st, vi, to, stream, false)?,
                };
                Ok(done(st, false, Some(source), Some(to), None))
            }
            ResidencyAction::MoveResident { to, from, .. } => {
                let to = *to;
                let _span = debug_span!("residency.move", handle = %handle, to = %to, from = ?from, bytes = charge).entered();
                self.check_location(to)?;
                if let Some(f) = from {
                    self.check_location(*f)?;
                }
                Self::check_stream(to, stream)?;
                let selected = match from {
                    Some(f) if rec.mat(*f).is_none() => {
                        return Err(RuntimeError::ExplicitSourceNotResident {
                            handle,
                            location: *f,
                        })
                    }
                    Some(f) => Some(*f),
                    None => rec.canonical_source(Some(to)),
                };
                if rec.mat(to).is_some() {
                    match selected {
                        None => {
                            return Ok(done(
                                st,
                                true,
                                None,
                                Some(to),
                                Some("destination already owns the selected replica"),
                            ));
                        }
                        Some(s) if s == to => {
                            return Ok(done(
                                st,
                                true,
                                Some(s),
                                Some(to),
                                Some("destination already owns the selected replica"),
                            ));
                        }
                        Some(s) => {
                            st.removable(vi, s)?;
                            st.remove_mat(vi, s);
                            return Ok(done(st, false, Some(s), Some(to), None));
                        }
                    }
                }
                let source = if let Some(s) = selected {
                    st.removable(vi, s)?;
                    self.copy_install(st, vi, s, to, stream, true)?;
                    st.remove_mat(vi, s);
                    s
                } else {
                    self.reconstruct_install(st, vi, to, stream, true)?
                };
                Ok(done(st, false, Some(source), Some(to), None))
            }
            ResidencyAction::DropResident { location, .. } => {
                let at = *location;
                let _span =
                    debug_span!("residency.drop", handle = %handle, at = %at, bytes = charge)
                        .entered();
                self.check_location(at)?;
                if let Some(s) = stream {
                    return Err(RuntimeError::Stream {
                        location: at,
                        stream_location: s.location(),
                        reason: "DropResident takes no stream",
                    });
                }
                if rec.mat(at).is_none() {
                    return Ok(done(
                        st,
                        true,
                        Some(at),
                        None,
                        Some("materialization already absent"),
                    ));
                }
                st.removable(vi, at)?;
                let rec = &st.values[vi];
                if rec.mats.len() == 1 && rec.source.is_none() {
                    return Err(RuntimeError::Ownership {
                        handle,
                        location: Some(at),
                        charged_nbytes: charge,
                        violation: OwnershipViolation::FinalMustPreserve,
                    });
                }
                st.remove_mat(vi, at);
                Ok(done(st, false, Some(at), None, None))
            }
            ResidencyAction::DiscardValue { .. } => {
                let _span =
                    debug_span!("residency.discard", handle = %handle, bytes = charge).entered();
                if let Some(s) = stream {
                    return Err(RuntimeError::Stream {
                        location: s.location(),
                        stream_location: s.location(),
                        reason: "DiscardValue takes no stream",
                    });
                }
                let locs: Vec<ResidencyLocation> = rec.mats.iter().map(|m| m.location).collect();
                for l in &locs {
                    st.removable(vi, *l)?;
                }
                for l in locs {
                    st.remove_mat(vi, l);
                }
                st.touch(vi);
                let rec = &mut st.values[vi];
                rec.source = None;
                rec.source_location = None;
                rec.discarded = true;
                st.bump();
                Ok(done(st, false, None, None, None))
            }
        }
    }

    /// Records consumer events for a device lease and moves it to pending, or releases a host
    /// lease at once (spec 2.10). Silent no-op once the manager closed or lost the record.
    pub fn release_lease(&self, token: u64, streams: &[Stream], wait: bool) -> Result<()> {
        let mut st = self.lock("release lease")?;
        if st.closed {
            return Ok(());
        }
        let Some(rec) = st.leases.get(&token) else {
            return Ok(());
        };
        let location = rec.location;
        let _span = debug_span!("residency.release", location = %location, wait).entered();
        if location.is_host() || streams.is_empty() {
            if location.is_device() {
                warn!(%location, "device lease without consumer streams: synchronising");
            }
            st.finish_lease(token);
            st.reap();
            return Ok(());
        }
        let events: std::result::Result<Vec<Event>, _> =
            streams.iter().map(Stream::record_event).collect();
        let Ok(events) = events else {
            warn!(%location, "recording a consumer event failed: synchronising the streams");
            for s in streams {
                let _ = s.synchronize();
            }
            st.finish_lease(token);
            st.reap();
            return Ok(());
        };
        let handles = st
            .leases
            .get(&token)
            .map(|r| r.handles.clone())
            .unwrap_or_default();
        for vi in handles {
            if let Some(m) = st.mat_mut(vi, location) {
                m.uses.retain(|t| *t != token);
                m.pending.push(token);
            }
        }
        if let Some(r) = st.leases.get_mut(&token) {
            r.events = Some(events.clone());
        }
        st.bump();
        if wait {
            for e in &events {
                e.synchronize().map_err(|source| RuntimeError::Memory {
                    handle: None,
                    location,
                    nbytes: 0,
                    source,
                })?;
            }
            st.finish_lease(token);
        }
        st.reap();
        Ok(())
    }

    /// Releases a hold (bump). Silent no-op when closed or unknown.
    pub fn release_hold(&self, token: u64) -> Result<()> {
        let mut st = self.lock("release hold")?;
        if st.closed {
            return Ok(());
        }
        let Some(rec) = st.holds.remove(&token) else {
            return Ok(());
        };
        for vi in rec.handles {
            if let Some(m) = st.mat_mut(vi, rec.location) {
                m.holds.retain(|t| *t != token);
            }
        }
        st.bump();
        st.reap();
        Ok(())
    }

    /// Releases a reservation (bump). Silent no-op when closed or unknown.
    pub fn release_reservation(&self, token: u64) -> Result<()> {
        let mut st = self.lock("release reservation")?;
        if st.closed {
            return Ok(());
        }
        Self::release_reservation_locked(&mut st, token);
        st.reap();
        Ok(())
    }

    pub fn release_reservation_locked(st: &mut State, token: u64) {
        if let Some(r) = st.reservations.remove(&token) {
            if let Some(l) = st.loc_mut(r.location) {
                l.reserved -= r.nbytes;
            }
            st.bump();
        }
    }

    /// Admits a named reservation (spec 2.3, 2.11): budget check, lazy registration, bump.
    pub fn reserve_locked(
        &self,
        st: &mut State,
        location: ResidencyLocation,
        nbytes: u64,
        label: &str,
    ) -> Result<u64> {
        let _span =
            debug_span!("residency.reserve", location = %location, bytes = nbytes, label).entered();
        if label.trim().is_empty() {
            return Err(RuntimeError::InvalidArgument {
                reason: "reservation label must be non-empty".to_owned(),
            });
        }
        self.check_location(location)?;
        st.admit(location, nbytes, None)?;
        let l = st.register(location);
        l.reserved += nbytes;
        l.bump_peaks_charged();
        let token = st.token();
        st.reservations.insert(
            token,
            ReservationRecord {
                location,
                nbytes,
                label: label.to_owned(),
            },
        );
        st.bump();
        Ok(token)
    }

    /// Normalises and resolves the handles of an acquire or hold (spec 2.10 steps 1-6).
    fn resolve_resident(
        &self,
        st: &State,
        handles: &[&ResidencyHandle],
        at: ResidencyLocation,
    ) -> Result<(Vec<ResidencyHandle>, Vec<usize>)> {
        let mut out: Vec<ResidencyHandle> = Vec::with_capacity(handles.len());
        let mut vis = Vec::with_capacity(handles.len());
        for h in handles {
            if out.iter().any(|x| x == *h) {
                continue;
            }
            let vi = st.resolve(self.id, h)?;
            if st.values[vi].mat(at).is_none() {
                return Err(RuntimeError::NotResident {
                    handle: (*h).clone(),
                    location: at,
                });
            }
            out.push((*h).clone());
            vis.push(vi);
        }
        Ok((out, vis))
    }
}

/// Builds a [`ResidencyManager`] with immutable per-location budgets.
#[derive(Debug, Clone)]
pub struct ManagerBuilder {
    memory: Memory,
    budgets: Vec<(ResidencyLocation, u64)>,
    trace_capacity: usize,
}

impl ManagerBuilder {
    /// Adds a budget (a strict admission limit in bytes) at `location`. Budgets are registered
    /// in the order given. A budget of zero admits nothing with a positive charge; a location
    /// without a budget admits everything but is still accounted.
    #[must_use]
    pub fn budget(mut self, location: ResidencyLocation, bytes: u64) -> Self {
        self.budgets.push((location, bytes));
        self
    }

    /// How many transition reports [`ResidencyManager::trace`] keeps; 0 disables the trace.
    #[must_use]
    pub const fn trace_capacity(mut self, capacity: usize) -> Self {
        self.trace_capacity = capacity;
        self
    }

    /// The manager.
    ///
    /// # Errors
    /// [`RuntimeError::LocationUnavailable`] for a budget at a location the memory layer does
    /// not offer; [`RuntimeError::InvalidArgument`] for a location budgeted twice.
    pub fn build(self) -> Result<ResidencyManager> {
        let mut st = State::new(self.trace_capacity);
        for (loc, bytes) in &self.budgets {
            if !self.memory.is_available(loc) {
                return Err(RuntimeError::LocationUnavailable { location: *loc });
            }
            if st.loc(*loc).is_some() {
                return Err(RuntimeError::InvalidArgument {
                    reason: format!("location {loc} is budgeted twice"),
                });
            }
            st.locations.push(LocationState::new(*loc, Some(*bytes)));
        }
        let n = NEXT_MANAGER.fetch_add(1, Ordering::Relaxed);
        let id = mix64(n ^ (u64::from(std::process::id()) << 32) ^ now_ns().rotate_left(17));
        Ok(ResidencyManager {
            inner: Arc::new(Inner {
                id,
                memory: self.memory,
                state: Mutex::new(st),
                in_callback: AtomicBool::new(false),
                close_epoch: AtomicU64::new(0),
            }),
        })
    }
}

/// The residency manager (spec 1.15): the only owner of managed values, their materializations,
/// budgets, accounting and lifetimes.
///
/// # Thread safety
/// `ResidencyManager` is `Send + Sync` and cheap to clone (clones share one manager). All state
/// lives behind **one mutex**: every primitive, plan step, acquire/release, snapshot and
/// version read is serialised by it and atomic with respect to the others, including the
/// synchronous part of copies and a source's `load()`. What is *not* serialised: device work
/// enqueued on streams (copies and consumer kernels run asynchronously; events order them),
/// reading values through a live lease (lock-free, the lease pins them), `manager_id`, and
/// lease/hold/reservation guards' own bookkeeping until they call back into the manager.
/// While a source's `load()` runs, every other access from any thread fails fast with
/// [`RuntimeError::Reentrancy`] instead of deadlocking.
#[derive(Clone)]
pub struct ResidencyManager {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for ResidencyManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ResidencyManager({:016x})", self.inner.id)
    }
}

impl ResidencyManager {
    /// A builder over `memory` (the location inventory and allocator).
    #[must_use]
    pub fn builder(memory: Memory) -> ManagerBuilder {
        ManagerBuilder {
            memory,
            budgets: Vec::new(),
            trace_capacity: DEFAULT_TRACE_CAPACITY,
        }
    }

    /// An unbudgeted manager over `memory`.
    #[must_use]
    pub fn new(memory: Memory) -> Self {
        let b = Self::builder(memory);
        let n = NEXT_MANAGER.fetch_add(1, Ordering::Relaxed);
        Self {
            inner: Arc::new(Inner {
                id: mix64(n ^ now_ns().rotate_left(17)),
                memory: b.memory,
                state: Mutex::new(State::new(b.trace_capacity)),
                in_callback: AtomicBool::new(false),
                close_epoch: AtomicU64::new(0),
            }),
        }
    }

    /// The process-unique manager identity (lock-free; legal at any time).
    #[must_use]
    pub fn manager_id(&self) -> u64 {
        self.inner.id
    }

    /// The memory layer this manager allocates from.
    #[must_use]
    pub fn memory(&self) -> &Memory {
        &self.inner.memory
    }

    /// Registered locations in registration order (budget keys first, then lazily registered
    /// ones). Legal after close.
    ///
    /// # Errors
    /// [`RuntimeError::Reentrancy`] during a source callback.
    pub fn locations(&self) -> Result<Vec<ResidencyLocation>> {
        let st = self.inner.lock("locations")?;
        Ok(st.locations.iter().map(|l| l.location).collect())
    }

    /// The budget at `location`, if it has one. Budgets never change.
    ///
    /// # Errors
    /// [`RuntimeError::Reentrancy`] during a source callback.
    pub fn budget(&self, location: ResidencyLocation) -> Result<Option<u64>> {
        let st = self.inner.lock("budget")?;
        Ok(st.loc(location).and_then(|l| l.budget))
    }

    /// The state version. Reading it has **no side effect**: completed events are reaped only
    /// by [`ResidencyManager::poll`] and mutating calls (docs/decisions/0201).
    ///
    /// # Errors
    /// [`RuntimeError::Closed`], [`RuntimeError::Reentrancy`].
    pub fn state_version(&self) -> Result<u64> {
        Ok(self.inner.open("state_version")?.version)
    }

    /// Reaps completed consumer events: every released device lease whose events all completed
    /// stops protecting its replicas (+1 version per lease). Returns how many were reaped.
    ///
    /// # Errors
    /// [`RuntimeError::Closed`], [`RuntimeError::Reentrancy`].
    pub fn poll(&self) -> Result<usize> {
        let mut st = self.inner.open("poll")?;
        Ok(st.reap())
    }

    /// Registers a live value and takes logical ownership (spec 1.15 adopt): a MUST_PRESERVE
    /// spec with charge max(nbytes, storage_nbytes), the value installed as the first
    /// materialization at `at` (or at its own placement when `at` is `None`).
    ///
    /// # Errors
    /// [`RuntimeError::UntypedValue`] (the value's type tag is blank),
    /// [`RuntimeError::Unplaced`] (`at` is `None` and the value's buffers name no single
    /// location), [`RuntimeError::Materialization`] (the value does not match its location),
    /// [`RuntimeError::Budget`], [`RuntimeError::Ownership`] (storage aliases a managed value),
    /// [`RuntimeError::LocationUnavailable`], [`RuntimeError::Closed`],
    /// [`RuntimeError::Reentrancy`]. On error no state remains.
    pub fn adopt<T: Resident>(
        &self,
        value: T,
        at: Option<ResidencyLocation>,
        replica_mode: ReplicaMode,
    ) -> Result<Handle<T>> {
        let mut st = self.inner.open("adopt")?;
        st.reap();
        let tag = Resident::type_tag(&value);
        let nbytes = Resident::nbytes(&value);
        let storage = Resident::storage_nbytes(&value);
        let handle_id = mix64(self.inner.id ^ st.next_handle.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let handle = ResidencyHandle::new(self.inner.id, handle_id, tag).map_err(|e| match e {
            ModelError::EmptyValueType => RuntimeError::UntypedValue {
                tag,
                location: at.or_else(|| Resident::placement(&value).ok()),
                nbytes,
            },
            other => other.into(),
        })?;
        let _span =
            debug_span!("residency.adopt", handle = %handle, at = ?at, bytes = nbytes.max(storage))
                .entered();
        let at = match at {
            Some(l) => l,
            None => Resident::placement(&value).map_err(|source| RuntimeError::Unplaced {
                handle: handle.clone(),
                nbytes,
                source,
            })?,
        };
        self.inner.check_location(at)?;
        let spec = ResidencyValueSpec::adopted(tag, nbytes, storage, replica_mode)?;
        let ready = self
            .inner
            .producers_ready(&value, &handle, at, nbytes.max(storage))?;
        let vi = st.values.len();
        st.values.push(ValueRecord {
            handle: handle.clone(),
            spec,
            source: None,
            source_location: None,
            mats: Vec::new(),
            discarded: false,
            changed_at: 0,
        });
        st.index.insert(handle_id, vi);
        let version = st.version;
        if let Err(e) = Inner::install(&mut st, vi, at, Arc::new(value), ready, false) {
            st.values.pop();
            st.index.remove(&handle_id);
            debug_assert_eq!(st.version, version);
            return Err(e);
        }
        st.next_handle += 1;
        Ok(Handle::new(handle))
    }

    /// Registers a reconstructible value with no materialization (spec 1.15 register_source).
    /// `load` is called (synchronously, under the manager lock) whenever a transition needs the
    /// value and no replica exists; each call must return independent storage at
    /// `source_location`. Never calls `load` and checks no budget here.
    ///
    /// # Errors
    /// [`RuntimeError::InvalidArgument`] for a MUST_PRESERVE spec,
    /// [`RuntimeError::LocationUnavailable`], [`RuntimeError::Closed`], [`RuntimeError::Reentrancy`].
    pub fn register_source<T, F>(
        &self,
        spec: ResidencyValueSpec,
        source_location: ResidencyLocation,
        load: F,
    ) -> Result<Handle<T>>
    where
        T: Resident,
        F: Fn() -> std::result::Result<T, SourceError> + Send + Sync + 'static,
    {
        let mut st = self.inner.open("register_source")?;
        st.reap();
        if spec.recoverability() != Recoverability::Reconstructible {
            return Err(RuntimeError::InvalidArgument {
                reason: "register_source requires a RECONSTRUCTIBLE spec".to_owned(),
            });
        }
        self.inner.check_location(source_location)?;
        let handle_id = mix64(self.inner.id ^ st.next_handle.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let handle = ResidencyHandle::new(self.inner.id, handle_id, spec.value_type())?;
        let _span = debug_span!("residency.register_source", handle = %handle, at = %source_location, bytes = spec.charge()).entered();
        st.next_handle += 1;
        let loader: Loader = Arc::new(move || load().map(|v| Arc::new(v) as ValueArc));
        st.register(source_location);
        let vi = st.values.len();
        st.values.push(ValueRecord {
            handle: handle.clone(),
            spec,
            source: Some(loader),
            source_location: Some(source_location),
            mats: Vec::new(),
            discarded: false,
            changed_at: 0,
        });
        st.index.insert(handle_id, vi);
        st.bump();
        Ok(Handle::new(handle))
    }

    fn primitive(
        &self,
        op: &'static str,
        action: &ResidencyAction,
        stream: Option<&Stream>,
    ) -> Result<ResidencyTransitionReport> {
        let mut st = self.inner.open(op)?;
        st.reap();
        self.inner.apply_locked(&mut st, action, stream)
    }

    /// `EnsureResident(handle, at)`: a materialization exists at `at` afterwards (spec 2.8).
    /// A device destination's copy runs on `stream` (or the memory layer's default) and is not
    /// waited for: the replica carries its transfer event.
    ///
    /// # Errors
    /// Handle errors, [`RuntimeError::LocationUnavailable`], [`RuntimeError::Stream`],
    /// [`RuntimeError::Ownership`] (EXCLUSIVE), [`RuntimeError::NoSource`],
    /// [`RuntimeError::Budget`], [`RuntimeError::Source`], [`RuntimeError::Memory`],
    /// [`RuntimeError::Materialization`]. Failure-atomic.
    pub fn ensure(
        &self,
        handle: &ResidencyHandle,
        at: ResidencyLocation,
        stream: Option<&Stream>,
    ) -> Result<ResidencyTransitionReport> {
        self.primitive(
            "ensure",
            &ResidencyAction::EnsureResident {
                handle: handle.clone(),
                location: at,
            },
            stream,
        )
    }

    /// `MoveResident(handle, to, from)`: install at `to`, then remove the selected source
    /// (spec 2.8). With `from = None` the canonical-first other replica is the source.
    ///
    /// # Errors
    /// As [`ResidencyManager::ensure`], plus [`RuntimeError::ExplicitSourceNotResident`] and
    /// [`RuntimeError::InUse`] (protected source). Failure-atomic.
    pub fn move_to(
        &self,
        handle: &ResidencyHandle,
        to: ResidencyLocation,
        from: Option<ResidencyLocation>,
        stream: Option<&Stream>,
    ) -> Result<ResidencyTransitionReport> {
        self.primitive(
            "move",
            &ResidencyAction::MoveResident {
                handle: handle.clone(),
                to,
                from,
            },
            stream,
        )
    }

    /// `DropResident(handle, at)`: remove one materialization without ending the value.
    ///
    /// # Errors
    /// Handle errors, [`RuntimeError::InUse`], [`RuntimeError::Ownership`] (final
    /// MUST_PRESERVE copy). Failure-atomic.
    pub fn drop_at(
        &self,
        handle: &ResidencyHandle,
        at: ResidencyLocation,
    ) -> Result<ResidencyTransitionReport> {
        self.primitive(
            "drop",
            &ResidencyAction::DropResident {
                handle: handle.clone(),
                location: at,
            },
            None,
        )
    }

    /// `DiscardValue(handle)`: end the logical value (every materialization and its source).
    /// Not idempotent: a second discard is a [`RuntimeError::DiscardedHandle`].
    ///
    /// # Errors
    /// Handle errors, [`RuntimeError::InUse`] (nothing is removed then).
    pub fn discard(&self, handle: &ResidencyHandle) -> Result<ResidencyTransitionReport> {
        self.primitive(
            "discard",
            &ResidencyAction::DiscardValue {
                handle: handle.clone(),
            },
            None,
        )
    }

    /// Runs one action (any of the four) with an optional transfer stream.
    ///
    /// # Errors
    /// Those of the corresponding primitive.
    pub fn apply(
        &self,
        action: &ResidencyAction,
        stream: Option<&Stream>,
    ) -> Result<ResidencyTransitionReport> {
        self.primitive("apply", action, stream)
    }

    /// Admits `nbytes` of named headroom at `location` (spec 1.15 reserve). The returned guard
    /// releases it when dropped or released.
    ///
    /// # Errors
    /// [`RuntimeError::Budget`], [`RuntimeError::InvalidArgument`] (blank label),
    /// [`RuntimeError::LocationUnavailable`], [`RuntimeError::Closed`], [`RuntimeError::Reentrancy`].
    pub fn reserve(
        &self,
        location: ResidencyLocation,
        nbytes: u64,
        label: &str,
    ) -> Result<ResidencyReservation> {
        let mut st = self.inner.open("reserve")?;
        st.reap();
        let token = self
            .inner
            .reserve_locked(&mut st, location, nbytes, label)?;
        Ok(ResidencyReservation::new(
            self.inner.clone(),
            token,
            location,
            nbytes,
            label.to_owned(),
        ))
    }

    /// Atomic retention protection of already-resident replicas (spec 2.10): none of them can
    /// be removed while the hold lives. Exposes no values.
    ///
    /// # Errors
    /// [`RuntimeError::InvalidArgument`] (no handles), handle errors,
    /// [`RuntimeError::NotResident`], [`RuntimeError::LocationUnavailable`],
    /// [`RuntimeError::Closed`], [`RuntimeError::Reentrancy`]. Atomic: on error nothing is held.
    pub fn hold(
        &self,
        handles: &[&ResidencyHandle],
        at: ResidencyLocation,
    ) -> Result<ResidencyHold> {
        if handles.is_empty() {
            return Err(RuntimeError::InvalidArgument {
                reason: "hold requires at least one handle".to_owned(),
            });
        }
        let mut st = self.inner.open("hold")?;
        self.inner.check_location(at)?;
        st.reap();
        let (hs, vis) = self.inner.resolve_resident(&st, handles, at)?;
        let token = st.token();
        for &vi in &vis {
            if let Some(m) = st.mat_mut(vi, at) {
                m.holds.push(token);
            }
        }
        st.holds.insert(
            token,
            HoldRecord {
                handles: vis,
                location: at,
            },
        );
        st.bump();
        Ok(ResidencyHold::new(self.inner.clone(), token, hs, at))
    }

    /// Strict lease: an atomic read borrow of already-resident replicas at `at` (spec 2.10).
    /// It never places, reconstructs or invokes policy. Device locations need a
    /// `consumer_stream`: replicas whose transfer is still in flight make that stream wait for
    /// their transfer event (a stream wait, not a host sync); host leases on an in-flight
    /// replica wait on the host. Release records an event on every consumer stream.
    ///
    /// # Errors
    /// [`RuntimeError::InvalidArgument`] (no handles), [`RuntimeError::MissingConsumerStream`],
    /// [`RuntimeError::Stream`], handle errors, [`RuntimeError::NotResident`],
    /// [`RuntimeError::LocationUnavailable`], [`RuntimeError::Closed`],
    /// [`RuntimeError::Reentrancy`]. Atomic: on error nothing is leased.
    pub fn acquire(
        &self,
        handles: &[&ResidencyHandle],
        at: ResidencyLocation,
        consumer_stream: Option<&Stream>,
    ) -> Result<ResidencyLease> {
        if handles.is_empty() {
            return Err(RuntimeError::InvalidArgument {
                reason: "acquire requires at least one handle".to_owned(),
            });
        }
        let mut st = self.inner.open("acquire")?;
        self.inner.check_location(at)?;
        if at.is_device() && consumer_stream.is_none() {
            return Err(RuntimeError::MissingConsumerStream { location: at });
        }
        st.reap();
        Inner::check_stream(at, consumer_stream)?;
        let (hs, vis) = self.inner.resolve_resident(&st, handles, at)?;
        let mut values = Vec::with_capacity(vis.len());
        for &vi in &vis {
            let Some(m) = st.values[vi].mat(at) else {
                continue;
            };
            if let Some(ev) = &m.ready {
                let r = match consumer_stream {
                    Some(s) => s.wait_event(ev),
                    None => ev.synchronize(),
                };
                r.map_err(|source| RuntimeError::Memory {
                    handle: Some(st.values[vi].handle.clone()),
                    location: at,
                    nbytes: m.charged_nbytes,
                    source,
                })?;
            }
            values.push(m.value.clone());
        }
        let token = st.token();
        for &vi in &vis {
            if let Some(m) = st.mat_mut(vi, at) {
                m.uses.push(token);
            }
        }
        st.leases.insert(
            token,
            LeaseRecord {
                handles: vis,
                location: at,
                events: None,
            },
        );
        st.bump();
        let epoch = self.inner.close_epoch.load(Ordering::SeqCst);
        Ok(ResidencyLease::new(
            self.inner.clone(),
            token,
            epoch,
            hs,
            at,
            values,
            consumer_stream.cloned(),
        ))
    }

    /// The retained transition reports in completion order (bounded). Legal after close.
    ///
    /// # Errors
    /// [`RuntimeError::Reentrancy`] during a source callback.
    pub fn trace(&self) -> Result<Vec<ResidencyTransitionReport>> {
        Ok(self.inner.lock("trace")?.trace.iter().cloned().collect())
    }

    /// Empties the trace; changes no state or version. Legal after close.
    ///
    /// # Errors
    /// [`RuntimeError::Reentrancy`] during a source callback.
    pub fn clear_trace(&self) -> Result<()> {
        self.inner.lock("clear_trace")?.trace.clear();
        Ok(())
    }

    /// Closes the manager (spec 2.13). `wait`: synchronise pending consumer events first;
    /// otherwise only reap completed ones. Without `force`, remaining leases, holds or
    /// reservations make it fail with [`RuntimeError::ManagerInUse`] (after the wait/reap).
    /// `force` synchronises every known event and proceeds: outstanding leases then report
    /// [`RuntimeError::LeaseLost`]. Remaining materializations never block close. Idempotent.
    ///
    /// # Errors
    /// [`RuntimeError::ManagerInUse`], [`RuntimeError::Reentrancy`].
    pub fn close(&self, wait: bool, force: bool) -> Result<()> {
        let mut st = self.inner.lock("close")?;
        if st.closed {
            return Ok(());
        }
        let _span = debug_span!("residency.close", wait, force).entered();
        if wait {
            let pending: Vec<u64> = st
                .leases
                .iter()
                .filter(|(_, l)| l.events.is_some())
                .map(|(t, _)| *t)
                .collect();
            for t in pending {
                let ok = st
                    .leases
                    .get(&t)
                    .and_then(|l| l.events.as_ref())
                    .is_some_and(|ev| ev.iter().all(|e| e.synchronize().is_ok()));
                if ok {
                    st.finish_lease(t);
                }
            }
        }
        st.reap();
        let active = st.leases.values().filter(|l| l.events.is_none()).count();
        let pending = st.leases.len() - active;
        if (!st.leases.is_empty() || !st.holds.is_empty() || !st.reservations.is_empty()) && !force
        {
            return Err(RuntimeError::ManagerInUse {
                active_leases: active,
                pending_leases: pending,
                holds: st.holds.len(),
                reservations: st.reservations.len(),
                reserved_bytes: st.reservations.values().map(|r| r.nbytes).sum(),
            });
        }
        if force {
            for l in st.leases.values() {
                for e in l.events.iter().flatten() {
                    let _ = e.synchronize();
                }
            }
            for rec in &st.values {
                for m in &rec.mats {
                    for e in m.ready.iter().chain(&m.outgoing) {
                        let _ = e.synchronize();
                    }
                }
            }
        }
        st.leases.clear();
        st.holds.clear();
        st.reservations.clear();
        st.owners.clear();
        st.values.clear();
        st.index.clear();
        st.snapshot_cache = crate::snapshot::SnapshotCache::default();
        for l in &mut st.locations {
            l.used = 0;
            l.reserved = 0;
        }
        st.closed = true;
        st.bump();
        self.inner.close_epoch.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}
