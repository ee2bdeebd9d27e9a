//! Forecasts of whole programs: [`forecast`] decides a sequence of requests ahead of time, as
//! a controller would decide them one after another, on snapshots it derives itself, and says
//! what each step will reclaim and copy, and the peak it will charge at every location.
//!
//! A step is either a **use** (admitted, its endpoints leased and its reservations held until
//! the next use begins, as [`ResidencyController::use_request`]'s value stays open while the
//! program computes) or a **prefetch** (admitted while the last use still holds its leases,
//! then closed at once, as `ResidencyController::prefetch`). Every step records one access
//! epoch for its handles, so the LRU order evolves as it will at run time.
//!
//! The forecast assumes that the work of a use has completed when the next use begins (the
//! controller reaps completed events before each use) and that every copy succeeds. Its
//! decisions are predictions: they carry derived state versions and cannot be admitted.
//!
//! [`ResidencyController::use_request`]: https://docs.rs/fhelium-runtime

use crate::decision::ResidencyDecision;
use crate::error::ModelError;
use crate::hash::FxHashMap;
use crate::location::ResidencyLocation;
use crate::model::{MemoryReservation, ResidencyAction, ResidencyHandle};
use crate::plan::ResidencyRequest;
use crate::planner::decide_with_limit;
use crate::policy::{ResidencyPolicy, ResidencyPolicyMetadata, ResidencyRecency};
use crate::snapshot::{
    MaterializationSnapshot, ResidencyLocationSnapshot, ResidencyLocationSnapshotParts,
    ResidencySnapshot, ResidencySnapshotParts, ResidencyValueSnapshot, ResidencyValueSnapshotParts,
};

/// How a program step is admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResidencyStepKind {
    /// Admitted, leased and holding its reservations until the next use begins.
    Use,
    /// Admitted while the last use holds its leases, then closed at once; no reservations.
    Prefetch,
}

/// One step of a program: a request and how it is admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResidencyProgramStep {
    /// Use or prefetch.
    pub kind: ResidencyStepKind,
    /// The request.
    pub request: ResidencyRequest,
}

impl ResidencyProgramStep {
    /// A use of `request`.
    #[must_use]
    pub const fn used(request: ResidencyRequest) -> Self {
        Self {
            kind: ResidencyStepKind::Use,
            request,
        }
    }

    /// A prefetch of `request`.
    #[must_use]
    pub const fn prefetched(request: ResidencyRequest) -> Self {
        Self {
            kind: ResidencyStepKind::Prefetch,
            request,
        }
    }
}

/// A copy a step will make.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResidencyForecastCopy {
    /// The value.
    pub handle: ResidencyHandle,
    /// The replica it is copied from (`None`: loaded from the value's source).
    pub from: Option<ResidencyLocation>,
    /// The destination.
    pub to: ResidencyLocation,
    /// Its charge.
    pub bytes: u64,
}

/// One forecast step.
#[derive(Debug, Clone)]
pub struct ResidencyForecastStep {
    /// Use or prefetch.
    pub kind: ResidencyStepKind,
    /// The decision the planner makes for the step (a prediction: not admissible).
    pub decision: ResidencyDecision,
    /// The copies of its reclaim and enter phases, in order.
    pub copies: Vec<ResidencyForecastCopy>,
}

/// A whole program's forecast.
#[derive(Debug, Clone)]
pub struct ResidencyForecast {
    /// The steps, in program order.
    pub steps: Vec<ResidencyForecastStep>,
    /// The highest `used + reserved` at each location over the program (and before it),
    /// locations in snapshot order.
    pub peak_charged_bytes: Vec<(ResidencyLocation, u64)>,
    /// The state after the last step, with the last use's leases and reservations released.
    pub final_snapshot: ResidencySnapshot,
}

impl ResidencyForecast {
    /// Every copy into `location`, in program order.
    pub fn copies_into(
        &self,
        location: ResidencyLocation,
    ) -> impl Iterator<Item = &ResidencyForecastCopy> + '_ {
        self.steps
            .iter()
            .flat_map(|s| &s.copies)
            .filter(move |c| c.to == location)
    }

    /// Bytes copied into `location` over the program.
    #[must_use]
    pub fn bytes_into(&self, location: ResidencyLocation) -> u64 {
        self.copies_into(location).map(|c| c.bytes).sum()
    }

    /// Whether `decisions` (one per step, in program order) reclaim and enter exactly what
    /// the forecast's steps do.
    pub fn matches<'a>(&self, decisions: impl IntoIterator<Item = &'a ResidencyDecision>) -> bool {
        let mut steps = self.steps.iter();
        for d in decisions {
            match steps.next() {
                Some(f)
                    if d.plan().reclaim() == f.decision.plan().reclaim()
                        && d.plan().enter() == f.decision.plan().enter() => {}
                _ => return false,
            }
        }
        steps.next().is_none()
    }

    /// The program's peak `used + reserved` at `location`.
    #[must_use]
    pub fn peak_charged(&self, location: ResidencyLocation) -> Option<u64> {
        self.peak_charged_bytes
            .iter()
            .find(|(l, _)| *l == location)
            .map(|(_, b)| *b)
    }
}

/// `x + d` or `x - d`, saturating (bytes).
const fn adjust(x: u64, d: u64, add: bool) -> u64 {
    if add {
        x.saturating_add(d)
    } else {
        x.saturating_sub(d)
    }
}

/// `x + d` or `x - d`, saturating (counts).
const fn adjust_count(x: u32, d: u32, add: bool) -> u32 {
    if add {
        x.saturating_add(d)
    } else {
        x.saturating_sub(d)
    }
}

/// The peaks raised to the current `used` and `used + reserved` (a removal never raises them).
fn raise_peaks(l: &mut ResidencyLocationSnapshotParts) {
    l.peak_used_bytes = l.peak_used_bytes.max(l.used_bytes);
    l.peak_charged_bytes = l
        .peak_charged_bytes
        .max(l.used_bytes.saturating_add(l.reserved_bytes));
}

/// The mutable state of a forecast. Value snapshots are shared with the input snapshot until
/// a step changes them (a forecast over 10,000 values rebuilds only the handful each step
/// touches); the derived snapshot of each step reuses the previous one's index
/// ([`ResidencySnapshot::from_trusted_parts_reusing`]).
struct Projection {
    manager_id: u64,
    version: u64,
    captured_at_ns: u64,
    available: Option<Vec<ResidencyLocation>>,
    values: Vec<ResidencyValueSnapshot>,
    locations: Vec<ResidencyLocationSnapshotParts>,
    reservations: Vec<MemoryReservation>,
    /// The last derived snapshot (positions of values never change: a forecast adds none).
    previous: ResidencySnapshot,
    /// Positions of values with an unreaped pending event.
    pending: Vec<usize>,
}

impl Projection {
    fn new(snapshot: &ResidencySnapshot) -> Self {
        let parts = ResidencySnapshotParts::from(snapshot.clone());
        let pending = parts
            .values
            .iter()
            .enumerate()
            .filter(|(_, v)| {
                v.materializations()
                    .iter()
                    .any(|m| m.pending_event_count() > 0)
            })
            .map(|(i, _)| i)
            .collect();
        Self {
            manager_id: parts.manager_id,
            version: parts.state_version,
            captured_at_ns: parts.captured_at_ns,
            available: parts.available_devices,
            values: parts.values,
            locations: parts
                .locations
                .into_iter()
                .map(ResidencyLocationSnapshotParts::from)
                .collect(),
            reservations: parts.reservations,
            previous: snapshot.clone(),
            pending,
        }
    }

    /// The position of `handle` among the values.
    fn position(&self, handle: &ResidencyHandle, request: &str) -> Result<usize, ModelError> {
        self.previous
            .value_index(handle)
            .ok_or_else(|| ModelError::UnknownHandle {
                request: request.to_owned(),
                handle: handle.clone(),
            })
    }

    /// Changes the value of `handle` through `f` on a copy of its parts.
    fn update(
        &mut self,
        handle: &ResidencyHandle,
        request: &str,
        f: impl FnOnce(&mut ResidencyValueSnapshotParts),
    ) -> Result<(), ModelError> {
        let i = self.position(handle, request)?;
        let mut parts = self.values[i].parts().clone();
        f(&mut parts);
        self.replace(i, parts)
    }

    /// Replaces value `i`, moving its materializations' contributions to the location sums.
    fn replace(&mut self, i: usize, parts: ResidencyValueSnapshotParts) -> Result<(), ModelError> {
        let new = ResidencyValueSnapshot::from_trusted_parts(parts)?;
        let old = std::mem::replace(&mut self.values[i], new);
        for m in old.materializations() {
            self.account(m, false);
        }
        for m in self.values[i].clone().materializations() {
            self.account(m, true);
        }
        Ok(())
    }

    /// Adds (or removes) one materialization's charge and counts at its location, raising the
    /// peaks after an addition.
    fn account(&mut self, m: &MaterializationSnapshot, add: bool) {
        let l = self.location_mut(m.location());
        l.used_bytes = adjust(l.used_bytes, m.charged_nbytes(), add);
        l.value_count = adjust_count(l.value_count, 1, add);
        l.use_count = adjust_count(l.use_count, m.use_count(), add);
        l.hold_count = adjust_count(l.hold_count, m.hold_count(), add);
        l.pending_event_count = adjust_count(l.pending_event_count, m.pending_event_count(), add);
        raise_peaks(l);
    }

    /// Holds (or releases) a reservation at its location.
    fn reserve(&mut self, r: &MemoryReservation, add: bool) {
        let l = self.location_mut(r.location());
        l.reserved_bytes = adjust(l.reserved_bytes, r.nbytes(), add);
        l.reservation_count = adjust_count(l.reservation_count, 1, add);
        raise_peaks(l);
    }

    /// The accounting entry of `location`, added (unbudgeted) on first reference.
    fn location_mut(&mut self, location: ResidencyLocation) -> &mut ResidencyLocationSnapshotParts {
        let i = match self.locations.iter().position(|l| l.location == location) {
            Some(i) => i,
            None => {
                self.locations
                    .push(ResidencyLocationSnapshotParts::empty(location, None));
                self.locations.len() - 1
            }
        };
        &mut self.locations[i]
    }

    /// Applies one explained, executable action.
    fn apply(
        &mut self,
        request: &str,
        action: &ResidencyAction,
        source: Option<ResidencyLocation>,
        destination: Option<ResidencyLocation>,
    ) -> Result<Option<ResidencyForecastCopy>, ModelError> {
        let mut copy = None;
        self.update(action.handle(), request, |v| match action {
            ResidencyAction::DropResident { location, .. } => {
                v.materializations.retain(|m| m.location() != *location);
            }
            ResidencyAction::DiscardValue { .. } => {
                v.materializations.clear();
                v.source = None;
                v.discarded = true;
            }
            ResidencyAction::EnsureResident { .. } | ResidencyAction::MoveResident { .. } => {
                let Some(to) = destination else {
                    return;
                };
                let m = MaterializationSnapshot::for_spec(to, &v.spec);
                copy = Some(ResidencyForecastCopy {
                    handle: v.handle.clone(),
                    from: source,
                    to,
                    bytes: m.charged_nbytes(),
                });
                v.materializations.push(m);
                if matches!(action, ResidencyAction::MoveResident { .. }) {
                    if let Some(from) = source {
                        v.materializations.retain(|m| m.location() != from);
                    }
                }
            }
        })?;
        Ok(copy)
    }

    /// Adds (or, with `add` false, removes) one lease on each requirement's materialization.
    fn lease(&mut self, request: &ResidencyRequest, add: bool) -> Result<(), ModelError> {
        for r in request.requirements() {
            self.update(&r.handle, request.name(), |v| {
                for m in &mut v.materializations {
                    if m.location() == r.location {
                        let uses = if add {
                            m.use_count().saturating_add(1)
                        } else {
                            m.use_count().saturating_sub(1)
                        };
                        *m = m.with_protection(uses, m.hold_count(), m.pending_event_count());
                    }
                }
            })?;
        }
        Ok(())
    }

    /// Completed work: every pending event reaped.
    fn reap(&mut self) -> Result<(), ModelError> {
        for i in std::mem::take(&mut self.pending) {
            let mut parts = self.values[i].parts().clone();
            for m in &mut parts.materializations {
                *m = m.with_protection(m.use_count(), m.hold_count(), 0);
            }
            self.replace(i, parts)?;
        }
        Ok(())
    }

    /// Records `epoch` as the last access of `request`'s handles.
    fn touch(&mut self, request: &ResidencyRequest, epoch: u64) -> Result<(), ModelError> {
        for r in request.requirements() {
            self.update(&r.handle, request.name(), |v| {
                v.last_access_epoch = Some(epoch);
            })?;
        }
        Ok(())
    }

    /// Sets the retention priority of `handle`. A handle the state does not know (unknown or
    /// of another manager) has no priority to set: the step that uses it fails its decision
    /// with the handle error, naming that step rather than the one being prepared.
    fn set_priority(
        &mut self,
        handle: &ResidencyHandle,
        request: &str,
        priority: i64,
    ) -> Result<(), ModelError> {
        let Some(i) = self.previous.value_index(handle) else {
            return Ok(());
        };
        if self.values[i].policy_metadata().priority() == priority {
            return Ok(());
        }
        let key = self.values[i]
            .policy_metadata()
            .stable_key()
            .map(str::to_owned);
        let meta = ResidencyPolicyMetadata::new(priority, key.as_deref())?;
        self.update(handle, request, |v| v.policy_metadata = meta)
    }

    fn hold_reservations(&mut self, request: &ResidencyRequest) {
        for r in request.reservations() {
            self.reserve(r, true);
            self.reservations.push(r.clone());
        }
    }

    fn release_reservations(&mut self, request: &ResidencyRequest) {
        for r in request.reservations() {
            if let Some(i) = self.reservations.iter().position(|x| x == r) {
                let r = self.reservations.remove(i);
                self.reserve(&r, false);
            }
        }
    }

    fn raise_peak(&mut self, location: ResidencyLocation, bytes: u64) {
        let l = self.location_mut(location);
        l.peak_charged_bytes = l.peak_charged_bytes.max(bytes);
    }

    fn snapshot(&mut self) -> Result<ResidencySnapshot, ModelError> {
        let locations = self
            .locations
            .iter()
            .cloned()
            .map(ResidencyLocationSnapshot::new)
            .collect::<Result<Vec<_>, _>>()?;
        let snapshot = ResidencySnapshot::from_trusted_parts_reusing(
            ResidencySnapshotParts {
                manager_id: self.manager_id,
                state_version: self.version,
                values: self.values.clone(),
                locations,
                reservations: self.reservations.clone(),
                captured_at_ns: self.captured_at_ns,
                available_devices: self.available.clone(),
            },
            &self.previous,
        )?;
        self.previous = snapshot.clone();
        Ok(snapshot)
    }
}

/// The priority base of [`next_use_priorities`]: a handle whose next use is step `i` gets
/// `NEXT_USE_BASE - i`.
pub const NEXT_USE_BASE: i64 = 1 << 40;

/// Retention priorities that make a priority-first policy such as
/// [`crate::DeterministicTieredLRU`] evict in Belady's order at step `from` of `program`:
/// the value whose next use is farthest goes first. Every handle the program uses at step
/// `from` or later gets `NEXT_USE_BASE - (index of its next use)`, so the value needed soonest
/// ranks highest; a handle the program uses only before `from` gets 0, the default priority of
/// values outside the program (among equal priorities the policy's own order decides).
#[must_use]
pub fn next_use_priorities(
    program: &[ResidencyProgramStep],
    from: usize,
) -> Vec<(ResidencyHandle, i64)> {
    let uses = NextUses::new(program);
    uses.order
        .iter()
        .map(|h| (h.clone(), uses.priority(h, from)))
        .collect()
}

/// Every handle of a program with the steps that use it, built once per program.
struct NextUses {
    /// Handles in order of first use.
    order: Vec<ResidencyHandle>,
    /// The steps using each handle, ascending.
    steps: FxHashMap<ResidencyHandle, Vec<usize>>,
}

impl NextUses {
    fn new(program: &[ResidencyProgramStep]) -> Self {
        let mut order = Vec::new();
        let mut steps: FxHashMap<ResidencyHandle, Vec<usize>> = FxHashMap::default();
        for (i, step) in program.iter().enumerate() {
            for r in step.request.requirements() {
                let at = steps.entry(r.handle.clone()).or_insert_with(|| {
                    order.push(r.handle.clone());
                    Vec::new()
                });
                if at.last() != Some(&i) {
                    at.push(i);
                }
            }
        }
        Self { order, steps }
    }

    /// [`next_use_priorities`]'s priority of `handle` at step `from`.
    fn priority(&self, handle: &ResidencyHandle, from: usize) -> i64 {
        let Some(steps) = self.steps.get(handle) else {
            return 0;
        };
        steps
            .get(steps.partition_point(|&i| i < from))
            .map_or(0, |&i| NEXT_USE_BASE - i64::try_from(i).unwrap_or(i64::MAX))
    }
}

/// Forecasts `program` from `snapshot` under `policy` (see the module docs): each step is
/// decided by [`decide_with_limit`] with `search_state_limit` on the state the steps before it
/// leave, with the access epochs they record (`recency` first, else the snapshot's).
///
/// # Errors
/// [`ModelError::PrefetchReservation`] for a prefetch step with reservations;
/// [`ModelError::ForecastStep`] naming the first step the planner cannot decide (infeasible,
/// inconclusive, an unknown or discarded handle), with the planner's error.
pub fn forecast<P: ResidencyPolicy + ?Sized>(
    snapshot: &ResidencySnapshot,
    program: &[ResidencyProgramStep],
    policy: &P,
    recency: Option<&ResidencyRecency>,
    search_state_limit: u64,
) -> Result<ResidencyForecast, ModelError> {
    forecast_impl(
        snapshot,
        program,
        policy,
        recency,
        search_state_limit,
        false,
    )
}

/// [`forecast`] with [`next_use_priorities`] applied before every step (the program's
/// handles keep their stable keys): the forecast of a run that sets them the same way
/// before each step, as `ResidencyController::apply_next_use` does.
///
/// # Errors
/// As [`forecast`].
pub fn forecast_next_use<P: ResidencyPolicy + ?Sized>(
    snapshot: &ResidencySnapshot,
    program: &[ResidencyProgramStep],
    policy: &P,
    recency: Option<&ResidencyRecency>,
    search_state_limit: u64,
) -> Result<ResidencyForecast, ModelError> {
    forecast_impl(snapshot, program, policy, recency, search_state_limit, true)
}

/// The smallest budget at `location` under which `program` can be forecast from `snapshot`
/// (every other location keeps its budget), searched by bisection between the bytes already
/// charged there and `max_budget`: the number to give the manager instead of a guess. With
/// `next_use` the forecast applies [`next_use_priorities`] before every step
/// ([`forecast_next_use`]).
///
/// Feasibility is taken as monotone in the budget (a program that fits in B fits in any
/// larger budget), which holds for the built-in policy's decisions; each probe is a full
/// forecast.
///
/// # Errors
/// The forecast's error at `max_budget` when the program does not fit even there (or when
/// it fails for a reason other than room); [`ModelError::InvalidSnapshot`] when `location` is
/// not in the snapshot.
#[allow(clippy::too_many_arguments)]
pub fn minimum_budget<P: ResidencyPolicy + ?Sized>(
    snapshot: &ResidencySnapshot,
    program: &[ResidencyProgramStep],
    policy: &P,
    recency: Option<&ResidencyRecency>,
    search_state_limit: u64,
    next_use: bool,
    location: ResidencyLocation,
    max_budget: u64,
) -> Result<u64, ModelError> {
    let at = snapshot
        .location(location)
        .ok_or_else(|| ModelError::InvalidSnapshot {
            detail: format!("location {location} is not in the snapshot"),
        })?;
    let charged = at.used_bytes().saturating_add(at.reserved_bytes());
    let with_budget = |budget: u64| -> Result<ResidencySnapshot, ModelError> {
        let mut parts = ResidencySnapshotParts::from(snapshot.clone());
        parts.locations = parts
            .locations
            .into_iter()
            .map(|l| {
                let mut p = ResidencyLocationSnapshotParts::from(l);
                if p.location == location {
                    p.budget_bytes = Some(budget);
                }
                ResidencyLocationSnapshot::new(p)
            })
            .collect::<Result<Vec<_>, _>>()?;
        ResidencySnapshot::from_trusted_parts(parts)
    };
    let fits = |budget: u64| -> Result<bool, ModelError> {
        match forecast_impl(
            &with_budget(budget)?,
            program,
            policy,
            recency,
            search_state_limit,
            next_use,
        ) {
            Ok(_) => Ok(true),
            Err(ModelError::ForecastStep { ref source, .. })
                if matches!(**source, ModelError::Infeasible { .. }) =>
            {
                Ok(false)
            }
            Err(e) => Err(e),
        }
    };
    // The largest budget must fit; report why when it does not.
    forecast_impl(
        &with_budget(max_budget)?,
        program,
        policy,
        recency,
        search_state_limit,
        next_use,
    )?;
    let (mut lo, mut hi) = (charged, max_budget);
    if fits(lo)? {
        return Ok(lo);
    }
    // Invariant: lo does not fit, hi fits.
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid)? {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

fn forecast_impl<P: ResidencyPolicy + ?Sized>(
    snapshot: &ResidencySnapshot,
    program: &[ResidencyProgramStep],
    policy: &P,
    recency: Option<&ResidencyRecency>,
    search_state_limit: u64,
    next_use: bool,
) -> Result<ResidencyForecast, ModelError> {
    let mut epochs = match recency {
        Some(r) => r.clone(),
        None => {
            let mut r = ResidencyRecency::new();
            for v in snapshot.values() {
                if let Some(e) = v.last_access_epoch() {
                    r.record(v.handle().clone(), e);
                }
            }
            r
        }
    };
    let mut epoch = snapshot
        .values()
        .iter()
        .filter_map(|v| epochs.get(v.handle()))
        .max()
        .unwrap_or(0);
    let next_uses = next_use.then(|| NextUses::new(program));
    let mut state = Projection::new(snapshot);
    let mut current = snapshot.clone();
    let mut open_use: Option<&ResidencyRequest> = None;
    let mut steps = Vec::with_capacity(program.len());
    for (i, step) in program.iter().enumerate() {
        let request = &step.request;
        let failed = |source: ModelError| ModelError::ForecastStep {
            step: i,
            request: request.name().to_owned(),
            source: Box::new(source),
        };
        if step.kind == ResidencyStepKind::Prefetch {
            if let Some(r) = request.reservations().first() {
                return Err(ModelError::PrefetchReservation {
                    step: i,
                    request: request.name().to_owned(),
                    location: r.location(),
                    bytes: r.nbytes(),
                });
            }
        } else {
            // The last use ends: its leases and reservations go, its work has completed.
            if let Some(prev) = open_use.take() {
                state.lease(prev, false).map_err(failed)?;
                state.release_reservations(prev);
            }
            state.reap().map_err(failed)?;
            current = state.snapshot().map_err(failed)?;
        }
        if let Some(uses) = &next_uses {
            // Only the handles the previous step used move to a later next use.
            let changed: Vec<&ResidencyHandle> = match i {
                0 => uses.order.iter().collect(),
                _ => program[i - 1]
                    .request
                    .requirements()
                    .iter()
                    .map(|r| &r.handle)
                    .collect(),
            };
            for h in changed {
                state
                    .set_priority(h, request.name(), uses.priority(h, i))
                    .map_err(failed)?;
            }
            current = state.snapshot().map_err(failed)?;
        }
        let decision =
            decide_with_limit(&current, request, policy, Some(&epochs), search_state_limit)
                .map_err(failed)?;
        for (l, b) in &decision.explanation().predicted_peak_bytes {
            state.raise_peak(*l, *b);
        }
        let mut copies = Vec::new();
        for a in &decision.explanation().actions {
            if a.executable && !a.no_op {
                if let Some(c) = state
                    .apply(request.name(), &a.action, a.source, a.destination)
                    .map_err(failed)?
                {
                    copies.push(c);
                }
            }
        }
        epoch += 1;
        for r in request.requirements() {
            epochs.record(r.handle.clone(), epoch);
        }
        state.touch(request, epoch).map_err(failed)?;
        if step.kind == ResidencyStepKind::Use {
            state.hold_reservations(request);
            state.lease(request, true).map_err(failed)?;
            open_use = Some(request);
        }
        state.version += 1;
        current = state.snapshot().map_err(failed)?;
        steps.push(ResidencyForecastStep {
            kind: step.kind,
            decision,
            copies,
        });
    }
    if let Some(prev) = open_use.take() {
        state.lease(prev, false)?;
        state.release_reservations(prev);
    }
    state.reap()?;
    let final_snapshot = state.snapshot()?;
    let peak_charged_bytes = final_snapshot
        .locations()
        .iter()
        .map(|l| (l.location(), l.parts().peak_charged_bytes))
        .collect();
    Ok(ResidencyForecast {
        steps,
        peak_charged_bytes,
        final_snapshot,
    })
}
