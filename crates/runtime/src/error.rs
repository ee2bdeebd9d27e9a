//! The one error enum of the runtime (spec section 4).
//!
//! Every variant carries the handle, location and byte figures involved. [`RuntimeError::kind`]
//! maps a variant to FHElium's error class (`ResidencyBudgetError`, `ResidencyPlanError`, ...),
//! so callers that want the original hierarchy can match on [`ResidencyErrorKind`];
//! [`RuntimeError::is_plan_error`] answers "was this a failure-atomic preflight/decision error"
//! (stale state and search limit included, plan *execution* failures excluded, spec 4.1).

use std::error::Error as StdError;
use std::fmt;

use fhelium_cuda::MemoryError;
use fhelium_residency::{
    MemoryReservation, ModelError, ResidencyAction, ResidencyHandle, ResidencyLocation,
    ResidencyPlanReport, ResidencySnapshot,
};
use thiserror::Error;

/// A boxed error from a source's `load()`.
pub type SourceError = Box<dyn StdError + Send + Sync + 'static>;

/// Shorthand for results of this crate.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

/// FHElium's error classes (spec 4.1), one per variant group of [`RuntimeError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResidencyErrorKind {
    /// `ResidencyBudgetError`.
    Budget,
    /// `ResidencyHandleError`.
    Handle,
    /// `ResidencyUnavailableError`.
    Unavailable,
    /// `ResidencyInUseError`.
    InUse,
    /// `ResidencyLifetimeClosedError`.
    LifetimeClosed,
    /// `ResidencyMaterializationError`.
    Materialization,
    /// `ResidencyOwnershipError`.
    Ownership,
    /// `ResidencyPlanError`.
    Plan,
    /// `ResidencyStaleStateError` (a plan error).
    StaleState,
    /// `ResidencySearchLimitError` (a plan error).
    SearchLimit,
    /// `ResidencyPlanExecutionError` (not a plan error).
    PlanExecution,
    /// `ResidencyClosedError`.
    Closed,
    /// `ResidencyReentrancyError`.
    Reentrancy,
    /// Argument validation (Python's `TypeError` / `ValueError`).
    InvalidArgument,
    /// Errors of a source, an allocation or a copy, propagated unchanged in meaning.
    Backend,
}

/// Why an ownership rule rejected an operation (spec 2.5, 2.6, 2.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OwnershipViolation {
    /// `ensure` would create a second replica of an EXCLUSIVE value.
    ReplicateExclusive,
    /// An install outside a move would give an EXCLUSIVE value a second steady replica.
    SimultaneousExclusive,
    /// `drop` of the final materialization of a value without a source.
    FinalMustPreserve,
    /// The new materialization's storage aliases a managed materialization.
    AliasedStorage,
    /// A request requires an EXCLUSIVE value at several locations.
    ExclusiveMultiLocation,
}

impl fmt::Display for OwnershipViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ReplicateExclusive => {
                "EnsureResident would replicate an EXCLUSIVE value; use MoveResident"
            }
            Self::SimultaneousExclusive => {
                "An EXCLUSIVE value cannot have simultaneous steady replicas"
            }
            Self::FinalMustPreserve => {
                "Cannot drop the final MUST_PRESERVE materialization; discard the logical value"
            }
            Self::AliasedStorage => {
                "Managed materializations must own independent backing storage"
            }
            Self::ExclusiveMultiLocation => {
                "An EXCLUSIVE residency value cannot satisfy simultaneous requirements at multiple locations"
            }
        })
    }
}

/// The plan phase a [`PlanExecutionFailure`] happened in (spec 4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlanPhase {
    /// A raw `execute_actions` sequence.
    Execute,
    /// A scope's reclaim prefix.
    Reclaim,
    /// A scope's reservation admission.
    Reserve,
    /// A scope's enter actions.
    Enter,
    /// A scope's exit actions.
    Exit,
}

impl fmt::Display for PlanPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Execute => "execute",
            Self::Reclaim => "reclaim",
            Self::Reserve => "reserve",
            Self::Enter => "enter",
            Self::Exit => "exit",
        })
    }
}

/// The details of a runtime failure inside a preflighted plan (spec 2.12.2-2.12.3).
///
/// Completed transitions before the failing step stay committed (they are in `partial_report`);
/// the failing step itself changed nothing (every primitive is failure-atomic).
#[derive(Debug)]
pub struct PlanExecutionFailure {
    /// The plan's name.
    pub plan_name: String,
    /// Where it failed.
    pub phase: PlanPhase,
    /// The transitions that completed before the failure, in execution order.
    pub partial_report: ResidencyPlanReport,
    /// The failing action, for action failures.
    pub failed_action: Option<ResidencyAction>,
    /// The failing action's index within its phase.
    pub failed_action_index: Option<usize>,
    /// The failing reservation, for reservation failures.
    pub failed_reservation: Option<MemoryReservation>,
    /// The failing reservation's index.
    pub failed_reservation_index: Option<usize>,
    /// The original error.
    pub source: RuntimeError,
}

impl PlanExecutionFailure {
    /// The action's or reservation's handle and location, for messages.
    fn step(&self) -> String {
        match (&self.failed_action, &self.failed_reservation) {
            (Some(a), _) => format!(
                "{} #{} for {}",
                a.kind_name(),
                self.failed_action_index.unwrap_or(0),
                a.handle()
            ),
            (None, Some(r)) => format!(
                "reservation #{} '{}' ({} bytes at {})",
                self.failed_reservation_index.unwrap_or(0),
                r.label(),
                r.nbytes(),
                r.location()
            ),
            (None, None) => "step".to_owned(),
        }
    }
}

/// What a failed `use_request` leaves for inspection (spec 3.13 entry step 6).
#[derive(Debug)]
pub struct UseFailure {
    /// The decision, available because decide succeeded.
    pub decision: fhelium_residency::ResidencyDecision,
    /// The scope's report, when the scope was entered and closed cleanly during unwinding.
    pub report: Option<ResidencyPlanReport>,
    /// The scope's exit failure during unwinding, if any.
    pub exit_error: Option<Box<RuntimeError>>,
    /// The original error.
    pub source: RuntimeError,
}

/// Every way a runtime operation can fail. One enum for the crate (spec section 4).
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// Budget admission failed at a budgeted location (spec 2.3).
    #[error("Residency location '{location}' exceeds its manager budget: budget_bytes={budget_bytes}, used_bytes={used_bytes}, reserved_bytes={reserved_bytes}, requested_bytes={requested_bytes}.")]
    Budget {
        /// The location.
        location: ResidencyLocation,
        /// The value being placed, if any (none for reservations).
        handle: Option<ResidencyHandle>,
        /// Its budget.
        budget_bytes: u64,
        /// Used bytes at the check.
        used_bytes: u64,
        /// Reserved bytes at the check.
        reserved_bytes: u64,
        /// The bytes asked for.
        requested_bytes: u64,
    },
    /// An expected state version does not match (spec 2.12.4, 3.11).
    #[error("Residency manager state changed after the decision: expected_version={expected_version}, actual_version={actual_version}.")]
    StaleState {
        /// The version the caller expected.
        expected_version: u64,
        /// The manager's version at the check.
        actual_version: u64,
    },
    /// A handle from another manager.
    #[error("Handle {handle} belongs to manager {handle_manager:016x}, not {manager:016x}")]
    ForeignHandle {
        /// The handle.
        handle: ResidencyHandle,
        /// Its manager id.
        handle_manager: u64,
        /// This manager's id.
        manager: u64,
    },
    /// A handle this manager never issued.
    #[error("Residency handle {handle} is unknown")]
    UnknownHandle {
        /// The handle.
        handle: ResidencyHandle,
    },
    /// A discarded handle.
    #[error("Residency value '{handle}' has been discarded")]
    DiscardedHandle {
        /// The handle.
        handle: ResidencyHandle,
    },
    /// `acquire` / `hold` of a value that is not materialized at the location.
    #[error("Value '{handle}' is not resident at {location}")]
    NotResident {
        /// The handle.
        handle: ResidencyHandle,
        /// The location asked for.
        location: ResidencyLocation,
    },
    /// An explicit move source that is not materialized.
    #[error("Explicit source {location} is not resident for value '{handle}'")]
    ExplicitSourceNotResident {
        /// The handle.
        handle: ResidencyHandle,
        /// The explicit source.
        location: ResidencyLocation,
    },
    /// A value with neither a materialization nor a registered source.
    #[error("Value '{handle}' has no materialization or reconstruction source")]
    NoSource {
        /// The handle.
        handle: ResidencyHandle,
    },
    /// A lease whose record the manager no longer has (after a forced close).
    #[error("Handle {handle} is not protected by this active residency lease (manager closed)")]
    LeaseLost {
        /// The handle looked up.
        handle: ResidencyHandle,
    },
    /// A location that is not available in this process (spec 2.4).
    #[error("Residency location {location} is not available in this process")]
    LocationUnavailable {
        /// The location.
        location: ResidencyLocation,
    },
    /// Removing a protected materialization (spec 2.10).
    #[error("Value '{handle}' at {location} is protected: active_reads={active_reads}, holds={holds}, pending_events={pending_events} ({charged_nbytes} bytes stay charged)")]
    InUse {
        /// The handle.
        handle: ResidencyHandle,
        /// The protected materialization's location.
        location: ResidencyLocation,
        /// Active leases covering it.
        active_reads: usize,
        /// Holds covering it.
        holds: usize,
        /// Released device leases whose events are not reaped.
        pending_events: usize,
        /// Its charge.
        charged_nbytes: u64,
    },
    /// `close` without force while lifetimes remain (spec 2.13).
    #[error("ResidencyManager cannot close with active or pending lifetimes: active_leases={active_leases}, pending_leases={pending_leases}, holds={holds}, reservations={reservations} ({reserved_bytes} bytes reserved)")]
    ManagerInUse {
        /// Active leases.
        active_leases: usize,
        /// Released leases with pending events.
        pending_leases: usize,
        /// Holds.
        holds: usize,
        /// Reservations.
        reservations: usize,
        /// Bytes held by those reservations.
        reserved_bytes: u64,
    },
    /// A value placed into managed state failed validation (spec 2.4, 2.8 install step 3).
    #[error("Residency materialization of '{handle}' at {location} rejected: {detail}")]
    Materialization {
        /// The handle (for adopt: the handle it would have had).
        handle: ResidencyHandle,
        /// The location.
        location: ResidencyLocation,
        /// Logical bytes of the offending value.
        nbytes: u64,
        /// What failed ("Expected Plaintext, got Ciphertext", "Logical payload size mismatch", ...).
        detail: String,
    },
    /// `adopt` of a value whose [`Resident::type_tag`](fhelium_cuda::Resident::type_tag) is
    /// empty or blank: no handle can carry it. `location` is where it was to be adopted (the
    /// caller's location, else the value's own placement where its buffers name one).
    #[error("Residency adopt of a value with a blank type tag {tag:?} ({nbytes} bytes, at {}) rejected: a handle needs a non-blank type tag", location.map_or_else(|| "no single location".to_owned(), |l| format!("'{l}'")))]
    UntypedValue {
        /// The tag as the value gave it.
        tag: &'static str,
        /// Where it was to be adopted, when known.
        location: Option<ResidencyLocation>,
        /// Logical bytes of the value.
        nbytes: u64,
    },
    /// `adopt` without a location, of a value whose buffers name no single location to adopt
    /// it at (buffers at different locations, pageable and pinned host storage mixed, or no
    /// buffers at all): `source` names the locations involved.
    #[error("Residency materialization of '{handle}' ({nbytes} bytes) rejected: no single location to adopt it at: {source}")]
    Unplaced {
        /// The handle it would have had.
        handle: ResidencyHandle,
        /// Logical bytes of the value.
        nbytes: u64,
        /// Why the buffers name no location ([`MemoryError::PlacementDisagrees`],
        /// [`MemoryError::MixedPinning`], [`MemoryError::EmptyValue`]).
        source: MemoryError,
    },
    /// An ownership rule (spec 2.5, 2.6, storage independence).
    #[error("{violation} (value '{handle}', location {location:?}, {charged_nbytes} bytes)")]
    Ownership {
        /// The handle.
        handle: ResidencyHandle,
        /// The location concerned, if one.
        location: Option<ResidencyLocation>,
        /// The value's charge.
        charged_nbytes: u64,
        /// Which rule.
        violation: OwnershipViolation,
    },
    /// A preflight or decision found the plan infeasible; nothing was mutated.
    #[error("Residency plan '{plan_name}' is infeasible: {reason}")]
    Plan {
        /// The plan's or request's name.
        plan_name: String,
        /// The first failure reason.
        reason: String,
        /// The handle of the failing action, if any.
        handle: Option<ResidencyHandle>,
        /// The location of the failure, if known.
        location: Option<ResidencyLocation>,
    },
    /// The controller search hit its state limit: inconclusive (spec 3.9).
    #[error("Automatic residency search for '{request_name}' is inconclusive because it reached its deterministic state limit: state_limit={state_limit}, explored_states={explored_states}. {detail}")]
    SearchLimit {
        /// The request.
        request_name: String,
        /// The limit.
        state_limit: u64,
        /// States counted.
        explored_states: u64,
        /// Where it stopped.
        detail: String,
    },
    /// A runtime failure inside a preflighted plan (not a plan error, spec 4.1).
    #[error("Residency plan '{}' failed during {} at {} after {} completed transition(s): {}", .0.plan_name, .0.phase, .0.step(), .0.partial_report.transitions().len(), .0.source)]
    PlanExecution(Box<PlanExecutionFailure>),
    /// The manager is closed.
    #[error("ResidencyManager is closed ({operation})")]
    Closed {
        /// What was attempted.
        operation: &'static str,
    },
    /// Manager access while a source callback runs, from any thread (spec 2.14).
    #[error("ResidencyManager {operation} rejected while a source callback is active")]
    Reentrancy {
        /// What was attempted.
        operation: &'static str,
    },
    /// A source's `load()` failed; the registration is intact and can be retried.
    #[error("source of '{handle}' at {location} failed to load: {source}")]
    Source {
        /// The handle.
        handle: ResidencyHandle,
        /// The source location.
        location: ResidencyLocation,
        /// The source's error.
        #[source]
        source: SourceError,
    },
    /// An allocation or copy of the memory layer failed (including injected sim faults).
    #[error(
        "memory operation for {handle:?} towards {location} ({nbytes} bytes) failed: {source}"
    )]
    Memory {
        /// The value concerned, if any.
        handle: Option<ResidencyHandle>,
        /// The destination location.
        location: ResidencyLocation,
        /// Bytes involved.
        nbytes: u64,
        /// The memory layer's error.
        #[source]
        source: MemoryError,
    },
    /// A stream given to an operation does not fit (spec 2.8 step 4, 2.10 step 5).
    #[error("stream on {stream_location} cannot serve {location}: {reason}")]
    Stream {
        /// The endpoint the stream was given for.
        location: ResidencyLocation,
        /// The stream's own location.
        stream_location: ResidencyLocation,
        /// "CUDA streams require a CUDA residency location", "does not match", "wrong CUDA device".
        reason: &'static str,
    },
    /// A device lease without a consumer stream.
    #[error("Device residency leases at {location} require an explicit consumer_stream")]
    MissingConsumerStream {
        /// The device location.
        location: ResidencyLocation,
    },
    /// A `use` whose consumer streams do not exactly cover the required device locations.
    #[error("ResidencyUse consumer_streams must exactly cover required CUDA locations before automatic admission: missing={missing:?}, unexpected={unexpected:?}")]
    StreamCoverage {
        /// Required device locations without a stream.
        missing: Vec<ResidencyLocation>,
        /// Streams for locations the request does not require.
        unexpected: Vec<ResidencyLocation>,
    },
    /// An argument failed validation (empty handle list, blank label, ...).
    #[error("invalid argument: {reason}")]
    InvalidArgument {
        /// What was wrong.
        reason: String,
    },
    /// A model value rejected at construction.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// A typed lookup asked for the wrong Rust type.
    #[error("Expected {expected} for '{handle}', got {actual}")]
    TypeMismatch {
        /// The handle.
        handle: ResidencyHandle,
        /// The type asked for.
        expected: &'static str,
        /// The stored value's type tag.
        actual: &'static str,
    },
    /// A lookup of a handle or requirement that the lease or use does not cover.
    #[error("handle {handle} at {location} is not covered by this lease or use")]
    NotCovered {
        /// The handle.
        handle: ResidencyHandle,
        /// The location asked for.
        location: ResidencyLocation,
    },
    /// A decision issued for another manager.
    #[error(
        "ResidencyDecision belongs to another manager: {decision_manager:016x}, not {manager:016x}"
    )]
    ForeignDecision {
        /// The decision's manager.
        decision_manager: u64,
        /// This controller's manager.
        manager: u64,
    },
    /// A step of a program given to `ResidencyController::forecast` cannot be decided (nothing
    /// changes: a forecast never touches the manager).
    #[error("forecast step {step} ('{request}'): {source}")]
    Forecast {
        /// The step's index in the program.
        step: usize,
        /// Its request's name.
        request: String,
        /// Why, as the controller's `decide` would report it.
        source: Box<RuntimeError>,
    },
    /// A step of `ResidencyController::use_request` failed after the decision; everything
    /// entered so far was unwound (leases released, scope closed).
    #[error("ResidencyUse '{}' failed: {}", .0.decision.request().name(), .0.source)]
    UseFailed(Box<UseFailure>),
    /// The controller's policy returned something other than a permutation of its candidates.
    #[error("ResidencyPolicy '{policy}' must return every candidate exactly once")]
    PolicyContract {
        /// The policy's name.
        policy: String,
    },
}

impl RuntimeError {
    /// FHElium's error class of this error.
    #[must_use]
    pub fn kind(&self) -> ResidencyErrorKind {
        match self {
            Self::Budget { .. } => ResidencyErrorKind::Budget,
            Self::StaleState { .. } => ResidencyErrorKind::StaleState,
            Self::UseFailed(f) => f.source.kind(),
            Self::Forecast { source, .. } => source.kind(),
            Self::ForeignDecision { .. }
            | Self::ForeignHandle { .. }
            | Self::UnknownHandle { .. }
            | Self::DiscardedHandle { .. } => ResidencyErrorKind::Handle,
            Self::NotResident { .. }
            | Self::ExplicitSourceNotResident { .. }
            | Self::NoSource { .. }
            | Self::LeaseLost { .. } => ResidencyErrorKind::Unavailable,
            Self::InUse { .. } | Self::ManagerInUse { .. } => ResidencyErrorKind::InUse,
            Self::UntypedValue { .. } => ResidencyErrorKind::InvalidArgument,
            Self::Materialization { .. } | Self::Unplaced { .. } => {
                ResidencyErrorKind::Materialization
            }
            Self::Ownership { .. } => ResidencyErrorKind::Ownership,
            Self::Plan { .. } => ResidencyErrorKind::Plan,
            Self::SearchLimit { .. } => ResidencyErrorKind::SearchLimit,
            Self::PlanExecution(_) => ResidencyErrorKind::PlanExecution,
            Self::Closed { .. } => ResidencyErrorKind::Closed,
            Self::Reentrancy { .. } => ResidencyErrorKind::Reentrancy,
            Self::Source { .. } | Self::Memory { .. } | Self::PolicyContract { .. } => {
                ResidencyErrorKind::Backend
            }
            Self::LocationUnavailable { .. }
            | Self::Stream { .. }
            | Self::MissingConsumerStream { .. }
            | Self::StreamCoverage { .. }
            | Self::InvalidArgument { .. }
            | Self::Model(_)
            | Self::TypeMismatch { .. }
            | Self::NotCovered { .. } => ResidencyErrorKind::InvalidArgument,
        }
    }

    /// True for failure-atomic plan errors: [`RuntimeError::Plan`], [`RuntimeError::StaleState`]
    /// and [`RuntimeError::SearchLimit`]. Plan *execution* failures are not plan errors.
    #[must_use]
    pub fn is_plan_error(&self) -> bool {
        match self {
            Self::UseFailed(f) => f.source.is_plan_error(),
            _ => matches!(
                self,
                Self::Plan { .. } | Self::StaleState { .. } | Self::SearchLimit { .. }
            ),
        }
    }

    /// The plan execution details, for [`RuntimeError::PlanExecution`].
    #[must_use]
    pub fn plan_execution(&self) -> Option<&PlanExecutionFailure> {
        match self {
            Self::PlanExecution(f) => Some(f),
            _ => None,
        }
    }
}

impl RuntimeError {
    /// Maps a planner error to the runtime's classes (spec 3.2, 3.5, 3.9). `snapshot` is the
    /// one the planner ran on: it gives an ownership error the value's charge.
    pub(crate) fn from_planner(e: ModelError, snapshot: &ResidencySnapshot) -> Self {
        match e {
            ModelError::ForeignHandle {
                handle, manager_id, ..
            } => Self::ForeignHandle {
                handle_manager: handle.manager_id(),
                handle,
                manager: manager_id,
            },
            ModelError::UnknownHandle { handle, .. } => Self::UnknownHandle { handle },
            ModelError::DiscardedHandle { handle, .. } => Self::DiscardedHandle { handle },
            ModelError::ExclusiveAtMultipleLocations { handle, locations } => Self::Ownership {
                charged_nbytes: snapshot.value(&handle).map_or(0, |v| v.spec().charge()),
                handle,
                location: locations.first().copied(),
                violation: OwnershipViolation::ExclusiveMultiLocation,
            },
            ModelError::Unavailable { handle } => Self::NoSource { handle },
            ModelError::Infeasible { request, detail } => Self::Plan {
                plan_name: request,
                reason: detail,
                handle: None,
                location: None,
            },
            ModelError::SearchLimit {
                request,
                state_limit,
                explored_states,
                detail,
            } => Self::SearchLimit {
                request_name: request,
                state_limit,
                explored_states,
                detail,
            },
            ModelError::PolicyNotPermutation { policy, .. } => Self::PolicyContract { policy },
            ModelError::ForecastStep {
                step,
                request,
                source,
            } => Self::Forecast {
                step,
                request,
                source: Box::new(Self::from_planner(*source, snapshot)),
            },
            e @ ModelError::PrefetchReservation { .. } => Self::InvalidArgument {
                reason: e.to_string(),
            },
            other => Self::Model(other),
        }
    }
}
