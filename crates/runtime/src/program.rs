//! Running a whole program of uses and prefetches: [`ResidencyController::run_program`]
//! (decision 0207).

use fhelium_residency::{
    minimum_budget, ResidencyDecision, ResidencyForecast, ResidencyLocation, ResidencyPlanReport,
    ResidencyPolicy, ResidencyProgramStep, ResidencyStepKind,
};
use tracing::info_span;

use crate::controller::{ConsumerStreams, ResidencyController, ResidencyUse};
use crate::error::RuntimeError;
use crate::plan::TransferStreams;

/// How [`ResidencyController::run_program`] chooses what to reclaim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ProgramEviction {
    /// The policy's own order (least recently used first for the built-in policy).
    #[default]
    Policy,
    /// Retention priorities from the program's future before every step
    /// ([`ResidencyController::apply_next_use`]): the value needed farthest ahead first.
    NextUse,
}

/// What a program run did, step by step in program order.
#[derive(Debug, Clone)]
pub struct ProgramRun {
    /// The forecast made before anything moved.
    pub forecast: ResidencyForecast,
    /// The decision admitted for every step.
    pub decisions: Vec<ResidencyDecision>,
    /// The report of every step's scope (a use's includes its exit, made when the next use
    /// began or the program ended).
    pub reports: Vec<ResidencyPlanReport>,
}

impl ProgramRun {
    /// Whether every step's reclaims and entries were the forecast's.
    #[must_use]
    pub fn went_as_forecast(&self) -> bool {
        self.forecast.matches(&self.decisions)
    }
}

/// Why a program run stopped.
#[derive(Debug, thiserror::Error)]
pub enum ProgramError<E> {
    /// The forecast or a step's admission failed (a failed forecast moves nothing; a failed
    /// step leaves the earlier steps' placements, with every lease released).
    #[error("residency: {0}")]
    Residency(#[from] RuntimeError),
    /// The body failed at a use step (its lease released and its scope closed).
    #[error("program step {step}: {error}")]
    Body {
        /// The use step's index in the program.
        step: usize,
        /// The body's error.
        error: E,
    },
}

impl<P: ResidencyPolicy> ResidencyController<P> {
    /// The smallest budget at `location` under which `program` would run from the manager's
    /// current state (other locations keep their budgets), found by forecasting at budgets
    /// between the bytes already charged there and `max_budget`
    /// ([`fhelium_residency::minimum_budget`]). Nothing changes.
    ///
    /// # Errors
    /// [`RuntimeError::Forecast`] when the program does not fit even in `max_budget` (or fails
    /// for another reason), [`RuntimeError::Model`] when `location` is not one of the
    /// manager's, [`RuntimeError::Closed`].
    pub fn minimum_budget(
        &self,
        program: &[ResidencyProgramStep],
        eviction: ProgramEviction,
        location: ResidencyLocation,
        max_budget: u64,
    ) -> Result<u64, RuntimeError> {
        let _span =
            info_span!("residency.minimum_budget", steps = program.len(), %location).entered();
        let (snapshot, recency) = self.planning_inputs()?;
        minimum_budget(
            &snapshot,
            program,
            self.policy(),
            Some(&recency),
            self.search_limit(),
            eviction == ProgramEviction::NextUse,
            location,
            max_budget,
        )
        .map_err(|e| RuntimeError::from_planner(e, &snapshot))
    }

    /// Runs `program` (decision 0207): forecasts it (a step that cannot fit fails here, before
    /// anything moves), then admits the steps in order. `consumer_streams` holds a stream for
    /// every device location the program uses; each use gets those of the locations it
    /// requires. A use step's [`ResidencyUse`] stays
    /// open while `body(step, &use)` computes on its values; the prefetch steps that follow it
    /// in the program are admitted before `body` runs, so their copies overlap its work; the
    /// use closes when the next use begins or the program ends. With
    /// [`ProgramEviction::NextUse`] the next-use priorities are applied before every step.
    ///
    /// # Errors
    /// [`ProgramError::Residency`] with the forecast's error ([`RuntimeError::Forecast`]) or a
    /// step's; [`ProgramError::Body`] with the body's error and its step.
    pub fn run_program<E, F>(
        &self,
        program: &[ResidencyProgramStep],
        eviction: ProgramEviction,
        consumer_streams: &ConsumerStreams,
        transfer_streams: &TransferStreams,
        mut body: F,
    ) -> Result<ProgramRun, ProgramError<E>>
    where
        F: FnMut(usize, &ResidencyUse) -> Result<(), E>,
    {
        let _span = info_span!("residency.run_program", steps = program.len()).entered();
        let next_use = eviction == ProgramEviction::NextUse;
        let forecast = if next_use {
            self.forecast_next_use(program)?
        } else {
            self.forecast(program)?
        };
        let mut decisions = Vec::with_capacity(program.len());
        // Reports in program order; a use's is filled in when it closes.
        let mut reports: Vec<Option<ResidencyPlanReport>> = vec![None; program.len()];
        let before = |i: usize| -> Result<(), RuntimeError> {
            if next_use {
                self.apply_next_use(program, i)?;
            }
            Ok(())
        };
        let mut open: Option<(usize, ResidencyUse)> = None;
        let mut i = 0;
        while i < program.len() {
            let step = &program[i];
            if step.kind == ResidencyStepKind::Prefetch {
                before(i)?;
                let p = self.prefetch(&step.request, transfer_streams)?;
                decisions.push(p.decision);
                reports[i] = Some(p.report);
                i += 1;
                continue;
            }
            if let Some((at, u)) = open.take() {
                reports[at] = Some(u.close()?);
            }
            before(i)?;
            // The streams of the locations this use requires (a program may use fewer devices
            // in some steps than in others).
            let streams: ConsumerStreams = consumer_streams
                .iter()
                .filter(|(l, _)| {
                    step.request
                        .requirements()
                        .iter()
                        .any(|r| r.location == **l)
                })
                .map(|(l, s)| (*l, s.clone()))
                .collect();
            let u = self.use_request(&step.request, &streams, transfer_streams)?;
            decisions.push(u.decision().clone());
            let mut j = i + 1;
            while j < program.len() && program[j].kind == ResidencyStepKind::Prefetch {
                before(j)?;
                let p = self.prefetch(&program[j].request, transfer_streams)?;
                decisions.push(p.decision);
                reports[j] = Some(p.report);
                j += 1;
            }
            if let Err(error) = body(i, &u) {
                drop(u.close());
                return Err(ProgramError::Body { step: i, error });
            }
            open = Some((i, u));
            i = j;
        }
        if let Some((at, u)) = open.take() {
            reports[at] = Some(u.close()?);
        }
        Ok(ProgramRun {
            forecast,
            decisions,
            reports: reports.into_iter().flatten().collect(),
        })
    }
}
