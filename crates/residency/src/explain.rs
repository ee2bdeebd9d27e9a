//! The dry-run simulator: [`explain`] (spec 2.12.1).
//!
//! It replays a plan on a copy-on-write view of a snapshot: only the values and locations the
//! plan touches are copied, so a dry run costs O(plan length), not O(snapshot size).

use crate::hash::{FxHashMap, FxHashSet};

use crate::location::ResidencyLocation;
use crate::model::{MemoryReservation, ReplicaMode, ResidencyAction, ResidencyHandle};
use crate::plan::ResidencyPlan;
use crate::report::{ResidencyActionExplanation, ResidencyPlanExplanation};
use crate::snapshot::ResidencySnapshot;

/// Accounting of one location during a dry run.
#[derive(Debug, Clone, Copy)]
struct SimLocation {
    location: ResidencyLocation,
    budget: Option<u64>,
    used: u64,
    reserved: u64,
    peak: u64,
}

/// The simulated state of a dry run.
struct Sim<'s> {
    snapshot: &'s ResidencySnapshot,
    /// Materialized locations of each touched value (copied from the snapshot on first touch).
    placements: FxHashMap<usize, Vec<ResidencyLocation>>,
    /// Values discarded by the plan.
    discarded: FxHashSet<usize>,
    /// Materializations created by the simulation (never protected).
    created: FxHashSet<(usize, ResidencyLocation)>,
    /// Locations in peak order: registered ones, then first references.
    locations: Vec<SimLocation>,
}

impl<'s> Sim<'s> {
    fn new(snapshot: &'s ResidencySnapshot) -> Self {
        let locations = snapshot
            .locations()
            .iter()
            .map(|l| SimLocation {
                location: l.location(),
                budget: l.budget_bytes(),
                used: l.used_bytes(),
                reserved: l.reserved_bytes(),
                peak: l.used_bytes().saturating_add(l.reserved_bytes()),
            })
            .collect();
        Self {
            snapshot,
            placements: FxHashMap::default(),
            discarded: FxHashSet::default(),
            created: FxHashSet::default(),
            locations,
        }
    }

    /// Validates `location` and makes sure it has an accounting entry.
    fn prepare(&mut self, location: ResidencyLocation) -> Result<usize, String> {
        if !self.snapshot.is_available(location) {
            return Err(unavailable_reason(self.snapshot, location));
        }
        if let Some(i) = self.locations.iter().position(|l| l.location == location) {
            return Ok(i);
        }
        self.locations.push(SimLocation {
            location,
            budget: None,
            used: 0,
            reserved: 0,
            peak: 0,
        });
        Ok(self.locations.len() - 1)
    }

    fn placement(&mut self, v: usize) -> &mut Vec<ResidencyLocation> {
        let snapshot = self.snapshot;
        self.placements.entry(v).or_insert_with(|| {
            snapshot.values()[v]
                .materializations()
                .iter()
                .map(crate::snapshot::MaterializationSnapshot::location)
                .collect()
        })
    }

    /// Adds a charge at `location`; `temporary` only raises the peak and checks the budget.
    fn add(
        &mut self,
        v: usize,
        location: ResidencyLocation,
        charge: u64,
        temporary: bool,
    ) -> Result<(), String> {
        let i = self.prepare(location)?;
        let l = &mut self.locations[i];
        let total = l.used.saturating_add(l.reserved).saturating_add(charge);
        l.peak = l.peak.max(total);
        if let Some(budget) = l.budget {
            if total > budget {
                return Err(format!(
                    "Transition exceeds budget at {location}: budget_bytes={budget}, used_bytes={}, reserved_bytes={}, requested_bytes={charge}",
                    l.used, l.reserved
                ));
            }
        }
        if !temporary {
            l.used = l.used.saturating_add(charge);
            self.placement(v).push(location);
            self.created.insert((v, location));
        }
        Ok(())
    }

    fn remove(&mut self, v: usize, location: ResidencyLocation, charge: u64) {
        if let Some(l) = self.locations.iter_mut().find(|l| l.location == location) {
            l.used = l.used.saturating_sub(charge);
        }
        self.placement(v).retain(|l| *l != location);
        self.created.remove(&(v, location));
    }

    /// Whether the live materialization of `v` at `location` is protected (a materialization
    /// created by the simulation never is).
    fn protected(&self, v: usize, location: ResidencyLocation) -> bool {
        !self.created.contains(&(v, location))
            && self.snapshot.values()[v]
                .materialization(location)
                .is_some_and(crate::snapshot::MaterializationSnapshot::is_protected)
    }

    fn admit(&mut self, r: &MemoryReservation) -> Result<(), String> {
        let i = self.prepare(r.location())?;
        let l = &mut self.locations[i];
        l.reserved = l.reserved.saturating_add(r.nbytes());
        l.peak = l.peak.max(l.used.saturating_add(l.reserved));
        match l.budget {
            Some(budget) if l.used.saturating_add(l.reserved) > budget => Err(format!(
                "Reservation '{}' exceeds budget at {}: budget_bytes={budget}, used_bytes={}, reserved_bytes={}",
                r.label(),
                r.location(),
                l.used,
                l.reserved
            )),
            _ => Ok(()),
        }
    }

    /// Resolves a handle to its snapshot position, or the handle error text.
    fn resolve(&self, h: &ResidencyHandle) -> Result<usize, String> {
        if h.manager_id() != self.snapshot.manager_id() {
            return Err(format!(
                "Handle belongs to manager {}, not {}",
                h.manager_id(),
                self.snapshot.manager_id()
            ));
        }
        let v = self
            .snapshot
            .value_index(h)
            .ok_or_else(|| format!("Residency handle is unknown: {h}"))?;
        if self.snapshot.values()[v].discarded() {
            return Err(format!("Residency value '{h}' has been discarded"));
        }
        Ok(v)
    }

    fn simulate(&mut self, action: &ResidencyAction) -> ResidencyActionExplanation {
        let mut e = ResidencyActionExplanation {
            action: action.clone(),
            executable: false,
            no_op: false,
            source: None,
            destination: None,
            logical_nbytes: 0,
            storage_nbytes: 0,
            reason: None,
        };
        let h = action.handle();
        let v = match self.resolve(h) {
            Ok(v) => v,
            Err(reason) => {
                e.reason = Some(reason);
                return e;
            }
        };
        let value = &self.snapshot.values()[v];
        let spec = value.spec();
        e.logical_nbytes = spec.logical_nbytes();
        e.storage_nbytes = spec.charge();
        if self.discarded.contains(&v) {
            e.reason = Some(format!("Value '{h}' is discarded"));
            return e;
        }
        let charge = spec.charge();
        let source_location = value.source_location();
        let mode = spec.replica_mode();
        let result = match action {
            ResidencyAction::EnsureResident { location, .. } => {
                self.ensure(v, *location, charge, mode, source_location, &mut e)
            }
            ResidencyAction::MoveResident { to, from, .. } => {
                self.move_to(v, *to, *from, charge, source_location, &mut e)
            }
            ResidencyAction::DropResident { location, .. } => {
                e.source = Some(*location);
                self.drop_at(v, *location, charge, source_location.is_some(), &mut e)
            }
            ResidencyAction::DiscardValue { .. } => self.discard(v, charge),
        };
        match result {
            Ok(()) => e.executable = true,
            Err(reason) => e.reason = Some(reason),
        }
        e
    }

    fn ensure(
        &mut self,
        v: usize,
        location: ResidencyLocation,
        charge: u64,
        mode: ReplicaMode,
        source_location: Option<ResidencyLocation>,
        e: &mut ResidencyActionExplanation,
    ) -> Result<(), String> {
        self.prepare(location)?;
        e.destination = Some(location);
        let placed = self.placement(v).clone();
        if placed.contains(&location) {
            e.no_op = true;
            e.reason = Some("destination already resident".to_owned());
            return Ok(());
        }
        if mode == ReplicaMode::Exclusive && !placed.is_empty() {
            return Err(
                "EnsureResident would replicate an EXCLUSIVE value; use MoveResident".to_owned(),
            );
        }
        if let Some(first) = placed.iter().min() {
            e.source = Some(*first);
            return self.add(v, location, charge, false);
        }
        let s =
            source_location.ok_or_else(|| "value has no materialization or source".to_owned())?;
        e.source = Some(s);
        self.add(v, s, charge, true)?;
        self.add(v, location, charge, false)
    }

    fn move_to(
        &mut self,
        v: usize,
        to: ResidencyLocation,
        from: Option<ResidencyLocation>,
        charge: u64,
        source_location: Option<ResidencyLocation>,
        e: &mut ResidencyActionExplanation,
    ) -> Result<(), String> {
        self.prepare(to)?;
        e.destination = Some(to);
        let placed = self.placement(v).clone();
        let (source, resident) = if let Some(f) = from {
            self.prepare(f)?;
            if !placed.contains(&f) {
                return Err(format!("explicit source {f} is not resident"));
            }
            (Some(f), true)
        } else if !placed.is_empty() {
            (placed.iter().filter(|l| **l != to).min().copied(), true)
        } else {
            (source_location, false)
        };
        e.source = source;
        if placed.contains(&to) {
            return match source {
                None => {
                    e.no_op = true;
                    e.reason = Some("destination already owns the selected replica".to_owned());
                    Ok(())
                }
                Some(s) if s == to => {
                    e.no_op = true;
                    e.reason = Some("destination already owns the selected replica".to_owned());
                    Ok(())
                }
                Some(s) => {
                    if self.protected(v, s) {
                        return Err(format!("source {s} is protected"));
                    }
                    self.remove(v, s, charge);
                    Ok(())
                }
            };
        }
        let s = source.ok_or_else(|| "value has no materialization or source".to_owned())?;
        if resident {
            if self.protected(v, s) {
                return Err(format!("source {s} is protected"));
            }
            self.add(v, to, charge, false)?;
            self.remove(v, s, charge);
            Ok(())
        } else {
            self.add(v, s, charge, true)?;
            self.add(v, to, charge, false)
        }
    }

    fn drop_at(
        &mut self,
        v: usize,
        location: ResidencyLocation,
        charge: u64,
        has_source: bool,
        e: &mut ResidencyActionExplanation,
    ) -> Result<(), String> {
        self.prepare(location)?;
        let placed = self.placement(v).clone();
        if !placed.contains(&location) {
            e.no_op = true;
            e.reason = Some("materialization already absent".to_owned());
            return Ok(());
        }
        if self.protected(v, location) {
            return Err(format!("materialization at {location} is protected"));
        }
        if placed.len() == 1 && !has_source {
            return Err("cannot drop final MUST_PRESERVE materialization".to_owned());
        }
        self.remove(v, location, charge);
        Ok(())
    }

    fn discard(&mut self, v: usize, charge: u64) -> Result<(), String> {
        let placed = self.placement(v).clone();
        let protected: Vec<String> = placed
            .iter()
            .filter(|l| self.protected(v, **l))
            .map(ToString::to_string)
            .collect();
        if !protected.is_empty() {
            return Err(format!(
                "discarded value has protected locations [{}]",
                protected.join(", ")
            ));
        }
        for l in placed {
            self.remove(v, l, charge);
        }
        self.discarded.insert(v);
        Ok(())
    }
}

/// The reason text for an unavailable location.
pub(crate) fn unavailable_reason(
    snapshot: &ResidencySnapshot,
    location: ResidencyLocation,
) -> String {
    let any_of_kind = snapshot
        .parts()
        .available_devices
        .as_ref()
        .is_some_and(|d| d.iter().any(|l| l.kind() == location.kind()));
    if any_of_kind {
        format!("residency location {location} is not available in this process")
    } else {
        format!(
            "{} residency locations require available {} devices: {location} is not available",
            location.kind().name(),
            location.kind().name()
        )
    }
}

/// Dry-runs `plan` against `snapshot` (spec 2.12.1): reclaim actions, then the plan's
/// reservations, then enter and exit actions, stopping at the first failure.
///
/// The prediction starts from each registered location's current `used + reserved` (not the
/// historical peaks); every add, including a temporary source load, raises the location's
/// peak. Locations first referenced by the plan are appended. A materialization is protected
/// when its snapshot counts say so (the runtime passes a snapshot whose pending counts exclude
/// events it verified complete). `explain` never fails: infeasibility is in the result.
#[must_use]
pub fn explain(snapshot: &ResidencySnapshot, plan: &ResidencyPlan) -> ResidencyPlanExplanation {
    let mut sim = Sim::new(snapshot);
    let mut actions = Vec::new();
    let mut reason = None;
    let reclaim = plan.reclaim().len();
    'run: for (i, action) in plan.actions().enumerate() {
        if i == reclaim {
            for r in plan.reservations() {
                if let Err(why) = sim.admit(r) {
                    reason = Some(why);
                    break 'run;
                }
            }
        }
        let e = sim.simulate(action);
        let failed = !e.executable;
        if failed {
            reason.clone_from(&e.reason);
        }
        actions.push(e);
        if failed {
            break;
        }
    }
    if reason.is_none() && plan.actions().count() == reclaim {
        for r in plan.reservations() {
            if let Err(why) = sim.admit(r) {
                reason = Some(why);
                break;
            }
        }
    }
    ResidencyPlanExplanation {
        plan_name: plan.name().to_owned(),
        actions,
        reservations: plan.reservations().to_vec(),
        predicted_peak_bytes: sim.locations.iter().map(|l| (l.location, l.peak)).collect(),
        feasible: reason.is_none(),
        reason,
    }
}
