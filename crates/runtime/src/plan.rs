//! Plan execution: `explain`, `execute_actions` and scopes (spec 2.12).
//!
//! Every step is a failure-atomic primitive, so when step k fails, placement and accounting are
//! exactly as they were before step k; committed steps stay committed and are listed in the
//! error's partial report, which names the failing step (phase and index). No step ever removes
//! a value's last materialization unless the value has a source.

use std::collections::BTreeMap;
use std::sync::Arc;

use fhelium_cuda::Stream;
use fhelium_residency::{
    ResidencyAction, ResidencyLocation, ResidencyPlan, ResidencyPlanExplanation,
    ResidencyPlanReport, ResidencyTransitionReport,
};
use tracing::{info_span, warn};

use crate::error::{PlanExecutionFailure, PlanPhase, Result, RuntimeError};
use crate::manager::{now_ns, Inner, ResidencyManager};
use crate::preflight::simulate;
use crate::report;
use crate::state::State;

/// Transfer streams per destination location: ensure and move steps whose destination has an
/// entry enqueue their copy on that stream.
pub type TransferStreams = BTreeMap<ResidencyLocation, Stream>;

fn check_expected(st: &State, expected: Option<u64>) -> Result<()> {
    match expected {
        Some(e) if e != st.version => Err(RuntimeError::StaleState {
            expected_version: e,
            actual_version: st.version,
        }),
        _ => Ok(()),
    }
}

fn check_streams(inner: &Inner, streams: &TransferStreams) -> Result<()> {
    for (loc, s) in streams {
        inner.check_location(*loc)?;
        Inner::check_stream(*loc, Some(s))?;
    }
    Ok(())
}

fn stream_for<'s>(action: &ResidencyAction, streams: &'s TransferStreams) -> Option<&'s Stream> {
    match action {
        ResidencyAction::EnsureResident { location, .. } => streams.get(location),
        ResidencyAction::MoveResident { to, .. } => streams.get(to),
        ResidencyAction::DropResident { .. } | ResidencyAction::DiscardValue { .. } => None,
    }
}

fn infeasible(name: &str, ex: &ResidencyPlanExplanation) -> RuntimeError {
    let failed = ex.actions.iter().find(|a| !a.executable);
    RuntimeError::Plan {
        plan_name: name.to_owned(),
        reason: ex.reason.clone().unwrap_or_default(),
        handle: failed.map(|a| a.action.handle().clone()),
        location: failed.and_then(|a| match &a.action {
            ResidencyAction::EnsureResident { location, .. }
            | ResidencyAction::DropResident { location, .. } => Some(*location),
            ResidencyAction::MoveResident { to, .. } => Some(*to),
            ResidencyAction::DiscardValue { .. } => None,
        }),
    }
}

struct Failure {
    phase: PlanPhase,
    action: Option<(usize, ResidencyAction)>,
    reservation: Option<(usize, fhelium_residency::MemoryReservation)>,
    source: RuntimeError,
}

fn execution_error(
    name: &str,
    done: &[ResidencyTransitionReport],
    started: u64,
    f: Box<Failure>,
) -> RuntimeError {
    let (failed_action_index, failed_action) =
        f.action.map_or((None, None), |(i, a)| (Some(i), Some(a)));
    let (failed_reservation_index, failed_reservation) = f
        .reservation
        .map_or((None, None), |(i, r)| (Some(i), Some(r)));
    RuntimeError::PlanExecution(Box::new(PlanExecutionFailure {
        plan_name: name.to_owned(),
        phase: f.phase,
        partial_report: report::plan(name, done.to_vec(), started, now_ns()),
        failed_action,
        failed_action_index,
        failed_reservation,
        failed_reservation_index,
        source: f.source,
    }))
}

/// Runs `actions` in order; on failure returns the phase-local index and error.
fn run_actions(
    inner: &Inner,
    st: &mut State,
    phase: PlanPhase,
    actions: &[ResidencyAction],
    streams: &TransferStreams,
    done: &mut Vec<ResidencyTransitionReport>,
) -> std::result::Result<(), Box<Failure>> {
    for (i, a) in actions.iter().enumerate() {
        let _span = info_span!("residency.plan_step", phase = %phase, index = i, action = a.kind_name(), handle = %a.handle()).entered();
        match inner.apply_locked(st, a, stream_for(a, streams)) {
            Ok(r) => done.push(r),
            Err(source) => {
                return Err(Box::new(Failure {
                    phase,
                    action: Some((i, a.clone())),
                    reservation: None,
                    source,
                }))
            }
        }
    }
    Ok(())
}

impl ResidencyManager {
    /// Dry-runs `plan` (reclaim, reservations, enter, exit) against the current state without
    /// changing anything (spec 2.12.1). Never fails for infeasibility: see `feasible`/`reason`.
    ///
    /// # Errors
    /// [`RuntimeError::StaleState`] when `expected_state_version` differs,
    /// [`RuntimeError::Closed`], [`RuntimeError::Reentrancy`].
    pub fn explain(
        &self,
        plan: &ResidencyPlan,
        expected_state_version: Option<u64>,
    ) -> Result<ResidencyPlanExplanation> {
        let st = self.inner.open("explain")?;
        check_expected(&st, expected_state_version)?;
        let actions: Vec<&ResidencyAction> = plan.actions().collect();
        Ok(simulate(
            &self.inner,
            &st,
            plan.name(),
            &actions,
            plan.reservations(),
            plan.reclaim().len(),
        ))
    }

    /// Preflights, then executes a raw action sequence (spec 2.12.2). No reservations, no
    /// scope. On a runtime failure of action i, actions 0..i stay committed and the error is a
    /// [`RuntimeError::PlanExecution`] with phase `execute` and index i; action i changed nothing.
    ///
    /// # Errors
    /// [`RuntimeError::StaleState`], [`RuntimeError::Plan`] (infeasible preflight; nothing
    /// changed), [`RuntimeError::PlanExecution`], stream and location errors,
    /// [`RuntimeError::Closed`], [`RuntimeError::Reentrancy`].
    pub fn execute_actions(
        &self,
        name: &str,
        actions: &[ResidencyAction],
        transfer_streams: &TransferStreams,
        expected_state_version: Option<u64>,
    ) -> Result<ResidencyPlanReport> {
        if name.trim().is_empty() {
            return Err(RuntimeError::InvalidArgument {
                reason: "plan name must be non-empty".to_owned(),
            });
        }
        let _span = info_span!(
            "residency.execute_actions",
            plan = name,
            actions = actions.len()
        )
        .entered();
        let mut st = self.inner.open("execute_actions")?;
        check_expected(&st, expected_state_version)?;
        st.reap();
        check_streams(&self.inner, transfer_streams)?;
        let refs: Vec<&ResidencyAction> = actions.iter().collect();
        let ex = simulate(&self.inner, &st, name, &refs, &[], 0);
        if !ex.feasible {
            return Err(infeasible(name, &ex));
        }
        let started = now_ns();
        let mut done = Vec::with_capacity(actions.len());
        run_actions(
            &self.inner,
            &mut st,
            PlanPhase::Execute,
            actions,
            transfer_streams,
            &mut done,
        )
        .map_err(|f| execution_error(name, &done, started, f))?;
        Ok(report::plan(name, done, started, now_ns()))
    }

    /// Enters a scope for `plan` (spec 2.12.3): atomically checks `expected_state_version`
    /// (before reaping anything), reaps, validates the transfer streams, preflights the whole
    /// plan, then runs reclaim, admits the reservations, runs enter. The returned scope runs the
    /// exit actions and releases the reservations on [`ResidencyScope::close`].
    ///
    /// # Errors
    /// [`RuntimeError::StaleState`] and [`RuntimeError::Plan`] before any mutation;
    /// [`RuntimeError::PlanExecution`] with phase `reclaim`, `reserve` or `enter` (reservations
    /// admitted so far are released; completed actions stay committed).
    pub fn enter_scope(
        &self,
        plan: &ResidencyPlan,
        transfer_streams: &TransferStreams,
        expected_state_version: Option<u64>,
    ) -> Result<ResidencyScope> {
        let name = plan.name();
        let span = info_span!(
            "residency.scope_enter",
            plan = name,
            reclaim = plan.reclaim().len(),
            enter = plan.enter().len(),
            reservations = plan.reservations().len()
        );
        let _g = span.enter();
        let mut st = self.inner.open("scope entry")?;
        check_expected(&st, expected_state_version)?;
        st.reap();
        check_streams(&self.inner, transfer_streams)?;
        let actions: Vec<&ResidencyAction> = plan.actions().collect();
        let ex = simulate(
            &self.inner,
            &st,
            name,
            &actions,
            plan.reservations(),
            plan.reclaim().len(),
        );
        if !ex.feasible {
            return Err(infeasible(name, &ex));
        }
        let started = now_ns();
        let mut done = Vec::new();
        run_actions(
            &self.inner,
            &mut st,
            PlanPhase::Reclaim,
            plan.reclaim(),
            transfer_streams,
            &mut done,
        )
        .map_err(|f| execution_error(name, &done, started, f))?;
        let mut tokens = Vec::with_capacity(plan.reservations().len());
        for (i, r) in plan.reservations().iter().enumerate() {
            match self
                .inner
                .reserve_locked(&mut st, r.location(), r.nbytes(), r.label())
            {
                Ok(t) => tokens.push(t),
                Err(source) => {
                    for t in tokens.iter().rev() {
                        Inner::release_reservation_locked(&mut st, *t);
                    }
                    return Err(execution_error(
                        name,
                        &done,
                        started,
                        Box::new(Failure {
                            phase: PlanPhase::Reserve,
                            action: None,
                            reservation: Some((i, r.clone())),
                            source,
                        }),
                    ));
                }
            }
        }
        if let Err(f) = run_actions(
            &self.inner,
            &mut st,
            PlanPhase::Enter,
            plan.enter(),
            transfer_streams,
            &mut done,
        ) {
            for t in tokens.iter().rev() {
                Inner::release_reservation_locked(&mut st, *t);
            }
            return Err(execution_error(name, &done, started, f));
        }
        drop(st);
        Ok(ResidencyScope {
            inner: self.inner.clone(),
            plan: plan.clone(),
            streams: transfer_streams.clone(),
            tokens,
            entry: done,
            started,
            explanation: ex,
            closed: false,
        })
    }
}

/// An entered plan scope: its reservations are held until [`ResidencyScope::close`].
///
/// Dropping it without closing releases the reservations (with a warning) but runs no exit
/// actions. Scopes nest: each holds its own reservations.
pub struct ResidencyScope {
    inner: Arc<Inner>,
    plan: ResidencyPlan,
    streams: TransferStreams,
    tokens: Vec<u64>,
    entry: Vec<ResidencyTransitionReport>,
    started: u64,
    explanation: ResidencyPlanExplanation,
    closed: bool,
}

impl std::fmt::Debug for ResidencyScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidencyScope")
            .field("plan", &self.plan.name())
            .field("entry_transitions", &self.entry.len())
            .finish_non_exhaustive()
    }
}

impl ResidencyScope {
    /// The plan.
    #[must_use]
    pub const fn plan(&self) -> &ResidencyPlan {
        &self.plan
    }

    /// The transitions of entry (reclaim, then enter).
    #[must_use]
    pub fn entry_transitions(&self) -> &[ResidencyTransitionReport] {
        &self.entry
    }

    /// The preflight explanation computed at entry.
    #[must_use]
    pub const fn explanation(&self) -> &ResidencyPlanExplanation {
        &self.explanation
    }

    /// Runs the exit actions (not re-preflighted; each checked by the primitive rules), then
    /// always releases the reservations in reverse order (spec 2.12.3 exit).
    ///
    /// # Errors
    /// [`RuntimeError::PlanExecution`] with phase `exit` (the reservations are released
    /// anyway), [`RuntimeError::Closed`] when the manager closed meanwhile,
    /// [`RuntimeError::Reentrancy`].
    pub fn close(mut self) -> Result<ResidencyPlanReport> {
        self.closed = true;
        let name = self.plan.name().to_owned();
        let _span = info_span!("residency.scope_exit", plan = %name, exit = self.plan.exit().len(), reservations = self.tokens.len()).entered();
        let mut st = self.inner.open("scope exit")?;
        st.reap();
        let mut done = std::mem::take(&mut self.entry);
        let r = run_actions(
            &self.inner,
            &mut st,
            PlanPhase::Exit,
            self.plan.exit(),
            &self.streams,
            &mut done,
        );
        for t in self.tokens.iter().rev() {
            Inner::release_reservation_locked(&mut st, *t);
        }
        r.map_err(|f| execution_error(&name, &done, self.started, f))?;
        Ok(report::plan(&name, done, self.started, now_ns()))
    }
}

impl Drop for ResidencyScope {
    fn drop(&mut self) {
        if self.closed {
            return;
        }
        warn!(plan = %self.plan.name(), "residency scope dropped without close: releasing its reservations, exit actions not run");
        match self.inner.lock("scope abandonment") {
            Ok(mut st) => {
                if !st.closed {
                    for t in self.tokens.iter().rev() {
                        Inner::release_reservation_locked(&mut st, *t);
                    }
                }
            }
            Err(e) => warn!(error = %e, "abandoned scope could not release its reservations"),
        }
    }
}
