//! The manager's internal state (spec 2.1) and its accounting helpers.
//!
//! Everything here runs under the manager's one mutex. Nothing in this module touches a lock,
//! a clock or a source; `manager.rs` drives it.

use std::collections::{BTreeMap, HashMap, VecDeque};

use fhelium_cuda::{Event, StorageKey};
use fhelium_residency::{
    ReplicaMode, ResidencyHandle, ResidencyLocation, ResidencyTransitionReport, ResidencyValueSpec,
};

use crate::error::{Result, RuntimeError};
use crate::value::{Loader, ValueArc};

/// One ready (or in-flight) concrete copy of a value at one location.
pub(crate) struct Materialization {
    pub location: ResidencyLocation,
    pub value: ValueArc,
    /// Actual unique backing storage measured at install.
    pub storage_nbytes: u64,
    /// The fixed charge (spec storage_nbytes).
    pub charged_nbytes: u64,
    pub keys: Vec<StorageKey>,
    /// Active leases.
    pub uses: Vec<u64>,
    /// Holds.
    pub holds: Vec<u64>,
    /// Released device leases whose consumer events are not reaped.
    pub pending: Vec<u64>,
    /// The copy-complete event of the transfer that produced this replica.
    pub ready: Option<Event>,
    /// Events of copies that read from this replica (it must outlive them).
    pub outgoing: Vec<Event>,
}

impl Materialization {
    pub fn protected(&self) -> bool {
        !(self.uses.is_empty() && self.holds.is_empty() && self.pending.is_empty())
    }
}

/// One logical value.
pub(crate) struct ValueRecord {
    pub handle: ResidencyHandle,
    pub spec: ResidencyValueSpec,
    pub source: Option<Loader>,
    pub source_location: Option<ResidencyLocation>,
    /// Installation order.
    pub mats: Vec<Materialization>,
    pub discarded: bool,
    /// [`State::edits`] at this record's last change that a snapshot can show (stamped by
    /// [`State::touch`]); snapshot captures rebuild only records stamped after their
    /// previous capture.
    pub changed_at: u64,
}

impl ValueRecord {
    pub fn mat(&self, loc: ResidencyLocation) -> Option<&Materialization> {
        self.mats.iter().find(|m| m.location == loc)
    }
    /// The first materialized location in canonical order, excluding `except`.
    pub fn canonical_source(&self, except: Option<ResidencyLocation>) -> Option<ResidencyLocation> {
        self.mats
            .iter()
            .map(|m| m.location)
            .filter(|l| Some(*l) != except)
            .min()
    }
    pub fn exclusive(&self) -> bool {
        self.spec.replica_mode() == ReplicaMode::Exclusive
    }
}

/// Accounting at one registered location.
#[derive(Debug, Clone)]
pub(crate) struct LocationState {
    pub location: ResidencyLocation,
    pub budget: Option<u64>,
    pub used: u64,
    pub reserved: u64,
    pub peak_used: u64,
    pub peak_charged: u64,
}

impl LocationState {
    pub fn new(location: ResidencyLocation, budget: Option<u64>) -> Self {
        Self {
            location,
            budget,
            used: 0,
            reserved: 0,
            peak_used: 0,
            peak_charged: 0,
        }
    }
    pub fn bump_peaks_charged(&mut self) {
        self.peak_charged = self
            .peak_charged
            .max(self.used.saturating_add(self.reserved));
    }
    pub fn bump_peaks(&mut self) {
        self.peak_used = self.peak_used.max(self.used);
        self.bump_peaks_charged();
    }
}

/// A lease record: active, or released with pending consumer events.
pub(crate) struct LeaseRecord {
    pub handles: Vec<usize>,
    pub location: ResidencyLocation,
    /// `None` while active; the recorded consumer events once released.
    pub events: Option<Vec<Event>>,
}

/// A hold record.
pub(crate) struct HoldRecord {
    pub handles: Vec<usize>,
    pub location: ResidencyLocation,
}

/// A named reservation.
#[derive(Debug, Clone)]
pub(crate) struct ReservationRecord {
    pub location: ResidencyLocation,
    pub nbytes: u64,
    pub label: String,
}

/// The whole mutable state of one manager.
pub(crate) struct State {
    pub closed: bool,
    pub version: u64,
    pub values: Vec<ValueRecord>,
    pub index: HashMap<u64, usize>,
    pub locations: Vec<LocationState>,
    pub leases: BTreeMap<u64, LeaseRecord>,
    pub holds: BTreeMap<u64, HoldRecord>,
    /// Keyed by token; tokens grow, so iteration order is creation order.
    pub reservations: BTreeMap<u64, ReservationRecord>,
    pub owners: HashMap<StorageKey, (usize, ResidencyLocation)>,
    pub trace: VecDeque<ResidencyTransitionReport>,
    pub trace_capacity: usize,
    /// Removed storage that in-flight copies may still read or write.
    pub retiring: Vec<(ValueArc, Vec<Event>)>,
    pub next_token: u64,
    pub next_handle: u64,
    /// Value snapshots reused by later captures (private; never observable).
    pub snapshot_cache: crate::snapshot::SnapshotCache,
    /// Counts record changes (see [`ValueRecord::changed_at`]); not observable.
    pub edits: u64,
}

impl State {
    pub fn new(trace_capacity: usize) -> Self {
        Self {
            closed: false,
            version: 0,
            values: Vec::new(),
            index: HashMap::new(),
            locations: Vec::new(),
            leases: BTreeMap::new(),
            holds: BTreeMap::new(),
            reservations: BTreeMap::new(),
            owners: HashMap::new(),
            trace: VecDeque::new(),
            trace_capacity,
            retiring: Vec::new(),
            next_token: 1,
            next_handle: 0,
            snapshot_cache: crate::snapshot::SnapshotCache::default(),
            edits: 0,
        }
    }

    pub fn bump(&mut self) {
        self.version += 1;
    }

    /// Stamps value `vi` as changed (its materializations, their protection counts, its
    /// source or its discarded flag). Every such change goes through here or
    /// [`State::mat_mut`], which is what lets a snapshot capture skip unchanged records; debug
    /// builds re-check every skipped record.
    pub fn touch(&mut self, vi: usize) {
        self.edits += 1;
        if let Some(rec) = self.values.get_mut(vi) {
            rec.changed_at = self.edits;
        }
    }

    /// The materialization of value `vi` at `loc`, for changing it (stamps the value changed).
    pub fn mat_mut(&mut self, vi: usize, loc: ResidencyLocation) -> Option<&mut Materialization> {
        self.touch(vi);
        self.values
            .get_mut(vi)?
            .mats
            .iter_mut()
            .find(|m| m.location == loc)
    }

    pub fn token(&mut self) -> u64 {
        let t = self.next_token;
        self.next_token += 1;
        t
    }

    pub fn loc(&self, loc: ResidencyLocation) -> Option<&LocationState> {
        self.locations.iter().find(|l| l.location == loc)
    }

    pub fn loc_mut(&mut self, loc: ResidencyLocation) -> Option<&mut LocationState> {
        self.locations.iter_mut().find(|l| l.location == loc)
    }

    /// Registers `loc` (unbudgeted) when it is new; bumps the version then.
    pub fn register(&mut self, loc: ResidencyLocation) -> &mut LocationState {
        if self.loc(loc).is_none() {
            self.locations.push(LocationState::new(loc, None));
            self.bump();
        }
        let i = self
            .locations
            .iter()
            .position(|l| l.location == loc)
            .unwrap_or(0);
        &mut self.locations[i]
    }

    /// The admission test of spec 2.3 for `incoming` bytes at `loc`.
    pub fn admit(
        &self,
        loc: ResidencyLocation,
        incoming: u64,
        handle: Option<&ResidencyHandle>,
    ) -> Result<()> {
        let Some(l) = self.loc(loc) else {
            return Ok(());
        };
        // Checked: reservations are pure accounting, so `incoming` can be any u64.
        let total = l
            .used
            .checked_add(l.reserved)
            .and_then(|t| t.checked_add(incoming));
        match (l.budget, total) {
            (Some(budget), t) if t.is_none_or(|t| t > budget) => Err(RuntimeError::Budget {
                location: loc,
                handle: handle.cloned(),
                budget_bytes: budget,
                used_bytes: l.used,
                reserved_bytes: l.reserved,
                requested_bytes: incoming,
            }),
            (None, None) => Err(RuntimeError::InvalidArgument {
                reason: format!(
                    "{incoming} bytes at {loc} would overflow its accounting (used {} + \
                     reserved {} bytes)",
                    l.used, l.reserved
                ),
            }),
            _ => Ok(()),
        }
    }

    /// Resolves a handle to its record index (spec 2.8 per-action prelude step 2).
    pub fn resolve(&self, manager_id: u64, h: &ResidencyHandle) -> Result<usize> {
        if h.manager_id() != manager_id {
            return Err(RuntimeError::ForeignHandle {
                handle: h.clone(),
                handle_manager: h.manager_id(),
                manager: manager_id,
            });
        }
        let Some(&i) = self.index.get(&h.handle_id()) else {
            return Err(RuntimeError::UnknownHandle { handle: h.clone() });
        };
        let rec = &self.values[i];
        if rec.handle != *h {
            return Err(RuntimeError::UnknownHandle { handle: h.clone() });
        }
        if rec.discarded {
            return Err(RuntimeError::DiscardedHandle { handle: h.clone() });
        }
        Ok(i)
    }

    /// `InUse` unless the materialization of value `vi` at `loc` is removable.
    pub fn removable(&self, vi: usize, loc: ResidencyLocation) -> Result<()> {
        let rec = &self.values[vi];
        match rec.mat(loc) {
            Some(m) if m.protected() => Err(RuntimeError::InUse {
                handle: rec.handle.clone(),
                location: loc,
                active_reads: m.uses.len(),
                holds: m.holds.len(),
                pending_events: m.pending.len(),
                charged_nbytes: m.charged_nbytes,
            }),
            _ => Ok(()),
        }
    }

    /// Removes a materialization (assumed removable): ownership, accounting, version.
    /// Its storage is retired instead of freed while copies into or out of it are in flight.
    pub fn remove_mat(&mut self, vi: usize, loc: ResidencyLocation) {
        self.touch(vi);
        let rec = &mut self.values[vi];
        let Some(pos) = rec.mats.iter().position(|m| m.location == loc) else {
            return;
        };
        let m = rec.mats.remove(pos);
        for k in &m.keys {
            self.owners.remove(k);
        }
        if let Some(l) = self.loc_mut(loc) {
            l.used -= m.charged_nbytes;
        }
        let mut events: Vec<Event> = m.outgoing;
        events.extend(m.ready);
        events.retain(|e| !e.query().unwrap_or(false));
        if !events.is_empty() {
            self.retiring.push((m.value, events));
        }
        self.bump();
    }

    /// Frees retired storage whose copies completed. Not observable; no version change.
    pub fn reap_retiring(&mut self) {
        self.retiring.retain_mut(|(_, events)| {
            events.retain(|e| !e.query().unwrap_or(false));
            !events.is_empty()
        });
    }

    /// Releases every pending lease whose events all completed; one bump per lease.
    /// Returns how many were released.
    pub fn reap(&mut self) -> usize {
        let done: Vec<u64> = self
            .leases
            .iter()
            .filter(|(_, l)| {
                l.events
                    .as_ref()
                    .is_some_and(|ev| ev.iter().all(|e| e.query().unwrap_or(false)))
            })
            .map(|(t, _)| *t)
            .collect();
        for t in &done {
            self.finish_lease(*t);
        }
        self.reap_retiring();
        for rec in &mut self.values {
            for m in &mut rec.mats {
                if m.ready.as_ref().is_some_and(|e| e.query().unwrap_or(false)) {
                    m.ready = None;
                }
                m.outgoing.retain(|e| !e.query().unwrap_or(false));
            }
        }
        done.len()
    }

    /// Removes a lease's tokens (use or pending) and its record; bumps.
    pub fn finish_lease(&mut self, token: u64) {
        let Some(rec) = self.leases.remove(&token) else {
            return;
        };
        for &vi in &rec.handles {
            if let Some(m) = self.mat_mut(vi, rec.location) {
                m.uses.retain(|t| *t != token);
                m.pending.retain(|t| *t != token);
            }
        }
        self.bump();
    }

    /// Appends a report to the bounded trace.
    pub fn push_trace(&mut self, report: ResidencyTransitionReport) {
        if self.trace_capacity == 0 {
            return;
        }
        while self.trace.len() >= self.trace_capacity {
            self.trace.pop_front();
        }
        self.trace.push_back(report);
    }
}
