//! The dry-run simulation of spec 2.12.1 over the live state: `explain` and every preflight.
//!
//! It reads the manager's state under the lock and changes nothing: no reaping, no location
//! registration, no source calls, no trace. Protection is the live one, except that a pending
//! token whose lease's events all query complete does not protect (spec 2.12.1 notes).

use std::collections::{HashMap, HashSet};

use fhelium_residency::{
    MemoryReservation, ResidencyAction, ResidencyActionExplanation, ResidencyLocation,
    ResidencyPlanExplanation,
};

use crate::manager::Inner;
use crate::state::State;

struct Acct {
    location: ResidencyLocation,
    budget: Option<u64>,
    used: u64,
    reserved: u64,
    peak: u64,
}

struct Sim<'a> {
    inner: &'a Inner,
    st: &'a State,
    accts: Vec<Acct>,
    sets: HashMap<usize, Vec<ResidencyLocation>>,
    discarded: HashSet<usize>,
}

impl<'a> Sim<'a> {
    fn new(inner: &'a Inner, st: &'a State) -> Self {
        Self {
            inner,
            st,
            accts: st
                .locations
                .iter()
                .map(|l| Acct {
                    location: l.location,
                    budget: l.budget,
                    used: l.used,
                    reserved: l.reserved,
                    peak: l.used.saturating_add(l.reserved),
                })
                .collect(),
            sets: HashMap::new(),
            discarded: HashSet::new(),
        }
    }

    fn prepare(&mut self, loc: ResidencyLocation) -> Result<usize, String> {
        if let Some(i) = self.accts.iter().position(|a| a.location == loc) {
            return Ok(i);
        }
        self.inner.check_location(loc).map_err(|e| e.to_string())?;
        self.accts.push(Acct {
            location: loc,
            budget: None,
            used: 0,
            reserved: 0,
            peak: 0,
        });
        Ok(self.accts.len() - 1)
    }

    fn set(&mut self, vi: usize) -> &mut Vec<ResidencyLocation> {
        let st = self.st;
        self.sets
            .entry(vi)
            .or_insert_with(|| st.values[vi].mats.iter().map(|m| m.location).collect())
    }

    fn add(
        &mut self,
        vi: usize,
        loc: ResidencyLocation,
        charge: u64,
        temporary: bool,
    ) -> Result<(), String> {
        let i = self.prepare(loc)?;
        let a = &mut self.accts[i];
        let Some(total) = a
            .used
            .checked_add(a.reserved)
            .and_then(|t| t.checked_add(charge))
        else {
            return Err(format!("Transition overflows the accounting at {loc}"));
        };
        a.peak = a.peak.max(total);
        if a.budget.is_some_and(|b| total > b) {
            return Err(format!("Transition exceeds budget at {loc}"));
        }
        if !temporary {
            a.used += charge;
            self.set(vi).push(loc);
        }
        Ok(())
    }

    fn remove(&mut self, vi: usize, loc: ResidencyLocation, charge: u64) {
        if let Some(a) = self.accts.iter_mut().find(|a| a.location == loc) {
            a.used = a.used.saturating_sub(charge);
        }
        self.set(vi).retain(|l| *l != loc);
    }

    /// Live protection of the manager's materialization of `vi` at `loc`.
    fn protected(&self, vi: usize, loc: ResidencyLocation) -> bool {
        let Some(m) = self.st.values[vi].mat(loc) else {
            return false;
        };
        if !m.uses.is_empty() || !m.holds.is_empty() {
            return true;
        }
        m.pending.iter().any(|t| {
            self.st
                .leases
                .get(t)
                .and_then(|l| l.events.as_ref())
                .is_none_or(|ev| !ev.iter().all(|e| e.query().unwrap_or(false)))
        })
    }

    fn reserve(&mut self, r: &MemoryReservation) -> Result<(), String> {
        let i = self.prepare(r.location())?;
        let a = &mut self.accts[i];
        let Some(total) = a
            .used
            .checked_add(a.reserved)
            .and_then(|t| t.checked_add(r.nbytes()))
        else {
            return Err(format!(
                "Reservation '{}' overflows the accounting at {}",
                r.label(),
                r.location()
            ));
        };
        a.reserved += r.nbytes();
        a.peak = a.peak.max(total);
        if a.budget.is_some_and(|b| total > b) {
            return Err(format!(
                "Reservation '{}' exceeds budget at {}",
                r.label(),
                r.location()
            ));
        }
        Ok(())
    }

    /// Simulates one action: (no_op, source, destination, reason).
    #[allow(clippy::type_complexity)]
    fn action(
        &mut self,
        vi: usize,
        action: &ResidencyAction,
    ) -> Result<
        (
            bool,
            Option<ResidencyLocation>,
            Option<ResidencyLocation>,
            Option<String>,
        ),
        String,
    > {
        let rec = &self.st.values[vi];
        let charge = rec.spec.charge();
        let exclusive = rec.exclusive();
        let source_location = rec.source_location;
        match action {
            ResidencyAction::EnsureResident { location, .. } => {
                let to = *location;
                self.prepare(to)?;
                let set = self.set(vi).clone();
                if set.contains(&to) {
                    return Ok((
                        true,
                        None,
                        Some(to),
                        Some("destination already resident".to_owned()),
                    ));
                }
                if exclusive && !set.is_empty() {
                    return Err(
                        "EnsureResident would replicate an EXCLUSIVE value; use MoveResident"
                            .to_owned(),
                    );
                }
                if let Some(s) = set.iter().min().copied() {
                    self.add(vi, to, charge, false)?;
                    return Ok((false, Some(s), Some(to), None));
                }
                let Some(s) = source_location else {
                    return Err("value has no materialization or source".to_owned());
                };
                self.add(vi, s, charge, true)?;
                self.add(vi, to, charge, false)?;
                Ok((false, Some(s), Some(to), None))
            }
            ResidencyAction::MoveResident { to, from, .. } => {
                let to = *to;
                self.prepare(to)?;
                let set = self.set(vi).clone();
                let (source, resident) = match from {
                    Some(f) => {
                        self.prepare(*f)?;
                        if !set.contains(f) {
                            return Err(format!("explicit source {f} is not resident"));
                        }
                        (Some(*f), true)
                    }
                    None if !set.is_empty() => {
                        (set.iter().filter(|l| **l != to).min().copied(), true)
                    }
                    None => (source_location, false),
                };
                if set.contains(&to) {
                    return match source {
                        None => Ok((
                            true,
                            None,
                            Some(to),
                            Some("destination already owns the selected replica".to_owned()),
                        )),
                        Some(s) if s == to => Ok((
                            true,
                            Some(s),
                            Some(to),
                            Some("destination already owns the selected replica".to_owned()),
                        )),
                        Some(s) => {
                            if self.protected(vi, s) {
                                return Err(format!("source {s} is protected"));
                            }
                            self.remove(vi, s, charge);
                            Ok((false, Some(s), Some(to), None))
                        }
                    };
                }
                let Some(s) = source else {
                    return Err("value has no materialization or source".to_owned());
                };
                if resident {
                    if self.protected(vi, s) {
                        return Err(format!("source {s} is protected"));
                    }
                    self.add(vi, to, charge, false)?;
                    self.remove(vi, s, charge);
                } else {
                    self.add(vi, s, charge, true)?;
                    self.add(vi, to, charge, false)?;
                }
                Ok((false, Some(s), Some(to), None))
            }
            ResidencyAction::DropResident { location, .. } => {
                let at = *location;
                self.prepare(at)?;
                let set = self.set(vi).clone();
                if !set.contains(&at) {
                    return Ok((
                        true,
                        Some(at),
                        None,
                        Some("materialization already absent".to_owned()),
                    ));
                }
                if self.protected(vi, at) {
                    return Err(format!("materialization at {at} is protected"));
                }
                if set.len() == 1 && source_location.is_none() {
                    return Err("cannot drop final MUST_PRESERVE materialization".to_owned());
                }
                self.remove(vi, at, charge);
                Ok((false, Some(at), None, None))
            }
            ResidencyAction::DiscardValue { .. } => {
                let set = self.set(vi).clone();
                let prot: Vec<String> = set
                    .iter()
                    .filter(|l| self.protected(vi, **l))
                    .map(ToString::to_string)
                    .collect();
                if !prot.is_empty() {
                    return Err(format!(
                        "discarded value has protected locations [{}]",
                        prot.join(", ")
                    ));
                }
                for l in set {
                    self.remove(vi, l, charge);
                }
                self.discarded.insert(vi);
                Ok((false, None, None, None))
            }
        }
    }
}

/// Dry-runs `actions` with `reservations` admitted after `reservation_index` actions.
pub(crate) fn simulate(
    inner: &Inner,
    st: &State,
    plan_name: &str,
    actions: &[&ResidencyAction],
    reservations: &[MemoryReservation],
    reservation_index: usize,
) -> ResidencyPlanExplanation {
    let mut sim = Sim::new(inner, st);
    let mut out = Vec::with_capacity(actions.len());
    let mut failure: Option<String> = None;
    let mut admitted = false;
    let admit = |sim: &mut Sim<'_>, failure: &mut Option<String>| {
        for r in reservations {
            if let Err(e) = sim.reserve(r) {
                *failure = Some(e);
                return;
            }
        }
    };
    for (i, action) in actions.iter().enumerate() {
        if i == reservation_index {
            admitted = true;
            admit(&mut sim, &mut failure);
            if failure.is_some() {
                break;
            }
        }
        let resolved = st.resolve(inner.id, action.handle());
        let (logical, charge) = resolved.as_ref().map_or((0, 0), |vi| {
            let s = &st.values[*vi].spec;
            (s.logical_nbytes(), s.charge())
        });
        let result = match resolved {
            Err(e) => Err(e.to_string()),
            Ok(vi) if sim.discarded.contains(&vi) => {
                Err(format!("Value '{}' is discarded", action.handle()))
            }
            Ok(vi) => sim.action(vi, action),
        };
        let (executable, no_op, source, destination, reason) = match result {
            Ok((no_op, s, d, reason)) => (true, no_op, s, d, reason),
            Err(reason) => (false, false, None, None, Some(reason)),
        };
        out.push(ResidencyActionExplanation {
            action: (*action).clone(),
            executable,
            no_op,
            source,
            destination,
            logical_nbytes: logical,
            storage_nbytes: charge,
            reason: reason.clone(),
        });
        if !executable {
            failure = reason;
            break;
        }
    }
    if failure.is_none() && !admitted {
        admit(&mut sim, &mut failure);
    }
    ResidencyPlanExplanation {
        plan_name: plan_name.to_owned(),
        actions: out,
        reservations: reservations.to_vec(),
        predicted_peak_bytes: sim.accts.iter().map(|a| (a.location, a.peak)).collect(),
        feasible: failure.is_none(),
        reason: failure,
    }
}
