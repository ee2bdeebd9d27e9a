//! The residency controller (spec 1.14, 3): decide on a snapshot with the pure planner, admit a
//! decision through a version-checked scope, and the `use` convenience flow (spec 3.13).
//!
//! The controller owns no values; the manager stays the only authority for placement.

use std::collections::BTreeMap;

use fhelium_cuda::{Resident, Stream};
use fhelium_residency::{
    decide_with_limit, forecast, forecast_next_use, next_use_priorities, DeterministicTieredLRU,
    ResidencyDecision, ResidencyDecisionParts, ResidencyForecast, ResidencyHandle,
    ResidencyLocation, ResidencyPlanReport, ResidencyPolicy, ResidencyPolicyMetadata,
    ResidencyProgramStep, ResidencyRequest, ResidencyRequirement, DEFAULT_SEARCH_STATE_LIMIT,
};
use parking_lot::Mutex;
use tracing::info_span;

use crate::error::{Result, RuntimeError, UseFailure};
use crate::lifetime::ResidencyLease;
use crate::manager::ResidencyManager;
use crate::plan::{ResidencyScope, TransferStreams};
use crate::snapshot::PolicyFacts;
use crate::value::Handle;

/// Consumer streams per device location for [`ResidencyController::use_request`].
pub type ConsumerStreams = BTreeMap<ResidencyLocation, Stream>;

struct ControllerState {
    facts: PolicyFacts,
    epoch: u64,
}

/// Derives and admits residency decisions over one manager (spec 1.14).
///
/// State: per-handle policy metadata, per-handle last access epochs and an epoch counter, all
/// behind the controller's own mutex (held for `decide`, `set_policy_metadata` and access
/// recording). Recency is updated by [`ResidencyController::use_request`] and
/// [`ResidencyController::acquire`], never by the manager's own `acquire`
/// (docs/decisions/0202).
pub struct ResidencyController<P: ResidencyPolicy = DeterministicTieredLRU> {
    manager: ResidencyManager,
    policy: P,
    search_state_limit: u64,
    state: Mutex<ControllerState>,
}

impl<P: ResidencyPolicy> std::fmt::Debug for ResidencyController<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidencyController")
            .field("manager", &self.manager)
            .field("policy", &self.policy.name())
            .field("search_state_limit", &self.search_state_limit)
            .finish_non_exhaustive()
    }
}

impl ResidencyController<DeterministicTieredLRU> {
    /// A controller with the default policy (no fallback tiers).
    #[must_use]
    pub fn new(manager: &ResidencyManager) -> Self {
        Self::with_policy(manager, DeterministicTieredLRU::new())
    }
}

impl<P: ResidencyPolicy> ResidencyController<P> {
    /// A controller with `policy` and the default search limit (100,000 states).
    #[must_use]
    pub fn with_policy(manager: &ResidencyManager, policy: P) -> Self {
        Self {
            manager: manager.clone(),
            policy,
            search_state_limit: DEFAULT_SEARCH_STATE_LIMIT,
            state: Mutex::new(ControllerState {
                facts: PolicyFacts::new(),
                epoch: 0,
            }),
        }
    }

    /// Sets the search state limit.
    ///
    /// # Errors
    /// [`RuntimeError::InvalidArgument`] for 0.
    pub fn search_state_limit(mut self, limit: u64) -> Result<Self> {
        if limit == 0 {
            return Err(RuntimeError::InvalidArgument {
                reason: "search_state_limit must be greater than 0".to_owned(),
            });
        }
        self.search_state_limit = limit;
        Ok(self)
    }

    /// The manager.
    #[must_use]
    pub const fn manager(&self) -> &ResidencyManager {
        &self.manager
    }

    /// The policy.
    #[must_use]
    pub const fn policy(&self) -> &P {
        &self.policy
    }

    /// The last access epoch recorded for `handle`, if any.
    #[must_use]
    pub fn last_access_epoch(&self, handle: &ResidencyHandle) -> Option<u64> {
        self.state.lock().facts.recency.get(handle)
    }

    /// Sets (overwrites) the policy metadata of a live handle of this manager.
    ///
    /// # Errors
    /// Handle errors (foreign, unknown, discarded), [`RuntimeError::Model`] for a blank key,
    /// [`RuntimeError::InvalidArgument`] for a `stable_key` another handle already uses
    /// (metadata of discarded handles still counts), [`RuntimeError::Closed`].
    pub fn set_policy_metadata(
        &self,
        handle: &ResidencyHandle,
        priority: i64,
        stable_key: Option<&str>,
    ) -> Result<()> {
        let meta = ResidencyPolicyMetadata::new(priority, stable_key)?;
        let mut cs = self.state.lock();
        {
            let st = self.manager.inner.open("set_policy_metadata")?;
            st.resolve(self.manager.inner.id, handle)?;
        }
        if let Some(k) = stable_key {
            if let Some((other, _)) = cs
                .facts
                .metadata
                .iter()
                .find(|(h, m)| *h != handle && m.stable_key() == Some(k))
            {
                return Err(RuntimeError::InvalidArgument {
                    reason: format!("stable_key {k:?} is already used by {other}"),
                });
            }
        }
        cs.facts.set_metadata(handle.clone(), meta);
        Ok(())
    }

    /// Derives a decision for `request` without mutating anything (spec 3.1): a snapshot (no
    /// reaping), the pure planner, then the manager's own dry run of the plan at the snapshot's
    /// version (which catches what the planner does not model, e.g. an unavailable device).
    ///
    /// # Errors
    /// Handle errors, [`RuntimeError::Ownership`] (EXCLUSIVE at several locations),
    /// [`RuntimeError::Plan`] (infeasible), [`RuntimeError::SearchLimit`] (inconclusive),
    /// [`RuntimeError::StaleState`] (the manager changed during the decision),
    /// [`RuntimeError::Closed`], [`RuntimeError::Reentrancy`].
    pub fn decide(&self, request: &ResidencyRequest) -> Result<ResidencyDecision> {
        let _span = info_span!(
            "residency.decide",
            request = request.name(),
            requirements = request.requirements().len()
        )
        .entered();
        let mut cs = self.state.lock();
        let snapshot = self.manager.snapshot_with(&mut cs.facts)?;
        let version = snapshot.state_version();
        let decision = decide_with_limit(
            &snapshot,
            request,
            &self.policy,
            Some(&cs.facts.recency),
            self.search_state_limit,
        )
        .map_err(|e| RuntimeError::from_planner(e, &snapshot))?;
        drop(cs);
        let mut parts = ResidencyDecisionParts::from(decision);
        let explanation = self.manager.explain(&parts.plan, Some(version))?;
        if !explanation.feasible {
            return Err(RuntimeError::Plan {
                plan_name: request.name().to_owned(),
                reason: explanation.reason.unwrap_or_default(),
                handle: None,
                location: None,
            });
        }
        parts.explanation = explanation;
        parts.expected_state_version = version;
        ResidencyDecision::new(parts).map_err(RuntimeError::Model)
    }

    /// Admits `decision`: checks that it belongs to this manager and policy configuration, then
    /// enters the manager scope with the decision's expected state version (checked atomically
    /// at entry, before any reclaim, reservation or placement: no silent replanning).
    ///
    /// # Errors
    /// [`RuntimeError::ForeignDecision`], [`RuntimeError::Plan`] ("another policy"),
    /// [`RuntimeError::StaleState`], and the errors of
    /// [`ResidencyManager::enter_scope`].
    pub fn scope(
        &self,
        decision: &ResidencyDecision,
        transfer_streams: &TransferStreams,
    ) -> Result<ResidencyScope> {
        if decision.manager_id() != self.manager.manager_id() {
            return Err(RuntimeError::ForeignDecision {
                decision_manager: decision.manager_id(),
                manager: self.manager.manager_id(),
            });
        }
        if decision.policy_name() != self.policy.name()
            || *decision.policy_config() != self.policy.config_identity()
        {
            return Err(RuntimeError::Plan {
                plan_name: decision.plan().name().to_owned(),
                reason: format!(
                    "ResidencyDecision was issued under another policy configuration ({} {:?})",
                    decision.policy_name(),
                    decision.policy_config()
                ),
                handle: None,
                location: None,
            });
        }
        self.manager.enter_scope(
            decision.plan(),
            transfer_streams,
            Some(decision.expected_state_version()),
        )
    }

    /// Records an access to `handles` at a fresh epoch (all share it).
    pub fn record_access<'a>(&self, handles: impl IntoIterator<Item = &'a ResidencyHandle>) {
        let mut cs = self.state.lock();
        cs.epoch += 1;
        let epoch = cs.epoch;
        for h in handles {
            cs.facts.record_access(h, epoch);
        }
    }

    /// The manager's strict acquire, recording the access for the LRU policy on success.
    ///
    /// # Errors
    /// Those of [`ResidencyManager::acquire`].
    pub fn acquire(
        &self,
        handles: &[&ResidencyHandle],
        at: ResidencyLocation,
        consumer_stream: Option<&Stream>,
    ) -> Result<ResidencyLease> {
        let lease = self.manager.acquire(handles, at, consumer_stream)?;
        self.record_access(lease.handles());
        Ok(lease)
    }

    /// The combined flow of spec 3.13: validate the consumer streams (they must exactly cover
    /// the request's device locations), reap completed events, decide, enter the
    /// version-checked scope, lease every endpoint (one strict lease per location) and record
    /// one access epoch for all the request's handles.
    ///
    /// # Errors
    /// [`RuntimeError::StreamCoverage`] / [`RuntimeError::Stream`] before anything happens; the
    /// errors of [`ResidencyController::decide`] unchanged; any later failure as
    /// [`RuntimeError::UseFailed`] carrying the decision and, once the scope was unwound, its
    /// report.
    pub fn use_request(
        &self,
        request: &ResidencyRequest,
        consumer_streams: &ConsumerStreams,
        transfer_streams: &TransferStreams,
    ) -> Result<ResidencyUse> {
        let _span = info_span!("residency.use", request = request.name()).entered();
        for (loc, s) in consumer_streams {
            if loc.is_host() {
                return Err(RuntimeError::Stream {
                    location: *loc,
                    stream_location: s.location(),
                    reason: "cannot assign a CUDA stream to a host location",
                });
            }
            if s.location() != *loc {
                return Err(RuntimeError::Stream {
                    location: *loc,
                    stream_location: s.location(),
                    reason: "stream device does not match the location",
                });
            }
        }
        let mut required: Vec<ResidencyLocation> = request
            .requirements()
            .iter()
            .map(|r| r.location)
            .filter(|l| l.is_device())
            .collect();
        required.sort();
        required.dedup();
        let missing: Vec<_> = required
            .iter()
            .filter(|l| !consumer_streams.contains_key(l))
            .copied()
            .collect();
        let unexpected: Vec<_> = consumer_streams
            .keys()
            .filter(|l| !required.contains(l))
            .copied()
            .collect();
        if !missing.is_empty() || !unexpected.is_empty() {
            return Err(RuntimeError::StreamCoverage {
                missing,
                unexpected,
            });
        }
        self.manager.poll()?;
        let decision = self.decide(request)?;
        let fail = |decision: ResidencyDecision,
                    scope: Option<ResidencyScope>,
                    leases: Vec<ResidencyLease>,
                    source: RuntimeError| {
            for l in leases.into_iter().rev() {
                let _ = l.release();
            }
            let (report, exit_error) = match scope.map(ResidencyScope::close) {
                Some(Ok(r)) => (Some(r), None),
                Some(Err(e)) => (None, Some(Box::new(e))),
                None => (None, None),
            };
            RuntimeError::UseFailed(Box::new(UseFailure {
                decision,
                report,
                exit_error,
                source,
            }))
        };
        let scope = match self.scope(&decision, transfer_streams) {
            Ok(s) => s,
            Err(e) => return Err(fail(decision, None, Vec::new(), e)),
        };
        let mut groups: Vec<(ResidencyLocation, Vec<&ResidencyHandle>)> = Vec::new();
        for r in request.requirements() {
            match groups.iter_mut().find(|(l, _)| *l == r.location) {
                Some((_, hs)) => hs.push(&r.handle),
                None => groups.push((r.location, vec![&r.handle])),
            }
        }
        let mut leases = Vec::with_capacity(groups.len());
        for (loc, hs) in &groups {
            match self.manager.acquire(hs, *loc, consumer_streams.get(loc)) {
                Ok(l) => leases.push(l),
                Err(e) => return Err(fail(decision, Some(scope), leases, e)),
            }
        }
        self.record_access(request.requirements().iter().map(|r| &r.handle));
        Ok(ResidencyUse {
            decision,
            scope: Some(scope),
            leases,
        })
    }
    /// Places `request`'s endpoints ahead of their use (an improvement over FHElium, decision
    /// 0206): decide, enter the version-checked scope (its copies start on
    /// `transfer_streams`, without a host wait), close it at once and record one access epoch
    /// for the request's handles, so that a later decision's LRU order treats them as the
    /// most recent. The endpoints stay cached; a copy still in flight keeps its replica
    /// protected by its pending event until it completes, and a later lease makes its
    /// consumer stream wait on that event. A later [`ResidencyController::use_request`] for
    /// the same endpoints enters nothing.
    ///
    /// A prefetch holds nothing once it returns, so a request with reservations is refused.
    ///
    /// # Errors
    /// [`RuntimeError::InvalidArgument`] (the request has reservations) before anything
    /// happens; the errors of [`ResidencyController::decide`] (nothing changed) and of
    /// [`ResidencyController::scope`] and [`ResidencyScope::close`].
    pub fn prefetch(
        &self,
        request: &ResidencyRequest,
        transfer_streams: &TransferStreams,
    ) -> Result<ResidencyPrefetch> {
        let _span = info_span!("residency.prefetch", request = request.name()).entered();
        if let Some(r) = request.reservations().first() {
            return Err(RuntimeError::InvalidArgument {
                reason: format!(
                    "prefetch request '{}' reserves {} bytes at {} ('{}'); a prefetch holds \
                     nothing after it returns, so it takes no reservation",
                    request.name(),
                    r.nbytes(),
                    r.location(),
                    r.label()
                ),
            });
        }
        let decision = self.decide(request)?;
        let report = self.scope(&decision, transfer_streams)?.close()?;
        self.record_access(request.requirements().iter().map(|r| &r.handle));
        Ok(ResidencyPrefetch { decision, report })
    }
    /// Forecasts `program` (steps of use and prefetch, decision 0207) from the manager's
    /// current state, with this controller's policy, recency and search limit, without
    /// changing anything: each step is decided on the state the steps before it would leave
    /// ([`fhelium_residency::forecast()`]). Before running a program, this says whether every
    /// step fits, what each will reclaim and copy, and the peak at every location.
    ///
    /// # Errors
    /// [`RuntimeError::Forecast`] naming the first step that cannot be decided, with the error
    /// [`ResidencyController::decide`] would give for it; [`RuntimeError::InvalidArgument`]
    /// for a prefetch step with reservations; [`RuntimeError::Closed`],
    /// [`RuntimeError::Reentrancy`].
    pub fn forecast(&self, program: &[ResidencyProgramStep]) -> Result<ResidencyForecast> {
        let _span = info_span!("residency.forecast", steps = program.len()).entered();
        let (snapshot, recency) = self.planning_inputs()?;
        forecast(
            &snapshot,
            program,
            &self.policy,
            Some(&recency),
            self.search_state_limit,
        )
        .map_err(|e| RuntimeError::from_planner(e, &snapshot))
    }

    /// [`ResidencyController::forecast`] of a run that calls
    /// [`ResidencyController::apply_next_use`] before every step: evictions in Belady's order
    /// (the value needed farthest ahead goes first) instead of least recently used.
    ///
    /// # Errors
    /// As [`ResidencyController::forecast`].
    pub fn forecast_next_use(&self, program: &[ResidencyProgramStep]) -> Result<ResidencyForecast> {
        let _span =
            info_span!("residency.forecast", steps = program.len(), next_use = true).entered();
        let (snapshot, recency) = self.planning_inputs()?;
        forecast_next_use(
            &snapshot,
            program,
            &self.policy,
            Some(&recency),
            self.search_state_limit,
        )
        .map_err(|e| RuntimeError::from_planner(e, &snapshot))
    }

    /// The snapshot (with this controller's policy facts) and recency a planner run needs.
    pub(crate) fn planning_inputs(
        &self,
    ) -> Result<(
        fhelium_residency::ResidencySnapshot,
        fhelium_residency::ResidencyRecency,
    )> {
        let mut cs = self.state.lock();
        let snapshot = self.manager.snapshot_with(&mut cs.facts)?;
        Ok((snapshot, cs.facts.recency.clone()))
    }

    pub(crate) const fn search_limit(&self) -> u64 {
        self.search_state_limit
    }

    /// Sets the retention priority of every handle `program` uses to
    /// [`fhelium_residency::next_use_priorities`] at step `step` (stable keys are kept): with
    /// this controller's priority-first policy the next decisions evict the value needed
    /// farthest ahead first. Call it before each step of the program (decision 0207).
    ///
    /// # Errors
    /// Handle errors (foreign, unknown, discarded) before anything changes;
    /// [`RuntimeError::Closed`].
    pub fn apply_next_use(&self, program: &[ResidencyProgramStep], step: usize) -> Result<()> {
        let priorities = next_use_priorities(program, step);
        let mut cs = self.state.lock();
        {
            let st = self.manager.inner.open("apply_next_use")?;
            for (h, _) in &priorities {
                st.resolve(self.manager.inner.id, h)?;
            }
        }
        for (h, priority) in priorities {
            let key = cs
                .facts
                .metadata
                .get(&h)
                .and_then(|m| m.stable_key().map(str::to_owned));
            let meta = ResidencyPolicyMetadata::new(priority, key.as_deref())?;
            cs.facts.set_metadata(h, meta);
        }
        Ok(())
    }
}

/// What [`ResidencyController::prefetch`] did: the admitted decision and the report of its
/// scope (entry transitions; the copies may still be in flight on the transfer streams).
#[derive(Debug, Clone)]
pub struct ResidencyPrefetch {
    /// The admitted decision.
    pub decision: ResidencyDecision,
    /// The scope's report.
    pub report: ResidencyPlanReport,
}

/// An admitted request: the decision, its entered scope and one strict lease per location.
///
/// Values are borrowed from it ([`ResidencyUse::value`]); [`ResidencyUse::close`] releases the
/// leases (device leases without waiting: pending events keep the replicas protected) and
/// closes the scope, returning its report. Endpoints stay cached afterwards.
pub struct ResidencyUse {
    decision: ResidencyDecision,
    scope: Option<ResidencyScope>,
    leases: Vec<ResidencyLease>,
}

impl std::fmt::Debug for ResidencyUse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidencyUse")
            .field("request", &self.decision.request().name())
            .field("leases", &self.leases.len())
            .finish_non_exhaustive()
    }
}

impl ResidencyUse {
    /// The decision that was admitted.
    #[must_use]
    pub const fn decision(&self) -> &ResidencyDecision {
        &self.decision
    }

    /// The lease at `location`, if the request requires that location.
    #[must_use]
    pub fn lease(&self, location: ResidencyLocation) -> Option<&ResidencyLease> {
        self.leases.iter().find(|l| l.location() == location)
    }

    /// The borrowed value of requirement (`handle`, `at`).
    ///
    /// # Errors
    /// [`RuntimeError::NotCovered`] when (`handle`, `at`) is not a requirement,
    /// [`RuntimeError::TypeMismatch`].
    pub fn value<T: Resident>(&self, handle: &Handle<T>, at: ResidencyLocation) -> Result<&T> {
        self.value_as::<T>(handle.raw(), at)
    }

    /// The borrowed value of requirement (`handle`, `at`) through an untyped handle.
    ///
    /// # Errors
    /// As [`ResidencyUse::value`].
    pub fn value_as<T: Resident>(
        &self,
        handle: &ResidencyHandle,
        at: ResidencyLocation,
    ) -> Result<&T> {
        let req = ResidencyRequirement::new(handle.clone(), at);
        if !self.decision.request().requirements().contains(&req) {
            return Err(RuntimeError::NotCovered {
                handle: handle.clone(),
                location: at,
            });
        }
        self.lease(at)
            .ok_or_else(|| RuntimeError::NotCovered {
                handle: handle.clone(),
                location: at,
            })?
            .value::<T>(handle)
    }

    /// The requirements, in request order.
    #[must_use]
    pub fn requirements(&self) -> &[ResidencyRequirement] {
        self.decision.request().requirements()
    }

    /// Releases the leases, then closes the scope (exit actions: none; reservations released).
    ///
    /// # Errors
    /// The scope's exit errors; lease release errors.
    pub fn close(mut self) -> Result<ResidencyPlanReport> {
        let mut first_err = None;
        for l in self.leases.drain(..).rev() {
            if let Err(e) = l.release() {
                first_err.get_or_insert(e);
            }
        }
        let report = match self.scope.take() {
            Some(s) => s.close()?,
            None => {
                return Err(RuntimeError::InvalidArgument {
                    reason: "use already closed".to_owned(),
                })
            }
        };
        match first_err {
            Some(e) => Err(e),
            None => Ok(report),
        }
    }
}

impl Drop for ResidencyUse {
    fn drop(&mut self) {
        for l in self.leases.drain(..).rev() {
            let _ = l.release();
        }
        if let Some(s) = self.scope.take() {
            let _ = s.close();
        }
    }
}
