//! # fhelium-residency: the pure residency model
//!
//! The GPU-free heart of fhelium-rs: the vocabulary of residency as plain data, the eviction
//! policy, the planner and the dry-run simulator. It never sees a buffer, a clock, a thread or a
//! random number; whatever the planner needs travels in snapshots (rule 1 of `design.md`). The
//! runtime crate turns these descriptions into real placements. Reference behaviour: FHElium
//! 0.10's residency subsystem (`spec/residency.md` sections 1-4).
//!
//! ## The model
//!
//! - A **logical value** is named by a [`ResidencyHandle`] and described by a
//!   [`ResidencyValueSpec`]: its logical bytes, its fixed **charge** per materialization, its
//!   [`ReplicaMode`] (several copies, or one that moves) and its [`Recoverability`] (a registered
//!   [`ResidencySource`] can recreate it, or its last copy must be preserved).
//! - A value has zero or more **materializations**, at most one per [`ResidencyLocation`]
//!   (`pageable-host`, `pinned-host`, `cuda:N`, `sim:N`). Each is charged against the location's
//!   optional **budget**; named [`MemoryReservation`]s hold headroom. Leases, holds and pending
//!   device events **protect** a materialization from removal.
//! - A [`ResidencySnapshot`] is one value-free observation of a manager: values (with their
//!   materializations, protection counts, source, policy metadata and last access epoch),
//!   locations (budget, used, reserved, peaks), reservations, and the `state_version` it was
//!   taken at. Construction validates the manager's invariants and indexes the snapshot.
//! - A [`ResidencyPlan`] is the command IR: `reclaim` actions, then the reservations, then
//!   `enter`; `exit` when the scope closes. Actions are [`ResidencyAction`]s: ensure, move, drop,
//!   discard. Plans print and parse as text listings ([`text`]).
//! - [`explain()`] dry-runs a plan on a snapshot: per-action verdicts, the first failure, and the
//!   predicted peak bytes per location.
//! - [`decide`] turns a [`ResidencyRequest`] (required `(handle, location)` endpoints plus
//!   reservations) into a [`ResidencyDecision`]: a plan whose reclaim prefix a deterministic
//!   depth-first search chose among the legal, unprotected candidates ordered by a
//!   [`ResidencyPolicy`] ([`DeterministicTieredLRU`]), with eviction evidence, the dry run, the
//!   number of explored search states, and the `state_version` it is valid at.
//!
//! Same input, same decision: no wall clock, hash order or randomness reaches a result.
//!
//! ## Example
//!
//! A cold replicable plaintext is cached on `cuda:0` next to its pageable replica; a request for
//! another value on the full device reclaims the cold device replica.
//!
//! ```
//! use fhelium_residency::*;
//!
//! # fn main() -> Result<(), ModelError> {
//! const MIB: u64 = 1 << 20;
//! let cuda = ResidencyLocation::Cuda(0);
//! let cold = ResidencyHandle::new(1, 10, "Plaintext")?;
//! let weight = ResidencyHandle::new(1, 11, "Plaintext")?;
//! let spec = ResidencyValueSpec::adopted("Plaintext", MIB, MIB, ReplicaMode::Replicable)?;
//!
//! let snapshot = ResidencySnapshotBuilder::new(1, 7)
//!     .budget(cuda, MIB + 2 * MIB)
//!     .value(
//!         ResidencyValueSnapshotParts::new(cold.clone(), spec.clone())
//!             .at(PAGEABLE_HOST)
//!             .at(cuda)
//!             .build()?,
//!     )
//!     .value(ResidencyValueSnapshotParts::new(weight.clone(), spec).at(PAGEABLE_HOST).build()?)
//!     .build()?;
//!
//! let request = ResidencyRequest::new(
//!     "tile-0",
//!     [ResidencyRequirement::new(weight.clone(), cuda)],
//!     [MemoryReservation::new(cuda, 2 * MIB, "workspace")?],
//! )?;
//! let policy = DeterministicTieredLRU::new();
//! let decision = decide(&snapshot, &request, &policy, None)?;
//!
//! assert_eq!(decision.expected_state_version(), 7);
//! assert_eq!(decision.explored_states(), 2);
//! assert_eq!(
//!     decision.plan().reclaim(),
//!     &[ResidencyAction::DropResident { handle: cold, location: cuda }]
//! );
//! assert_eq!(
//!     decision.evictions()[0].reason.to_string(),
//!     "another materialization preserves the logical value"
//! );
//! assert_eq!(decision.explanation().predicted_peak(cuda), Some(3 * MIB));
//!
//! // The plan is an IR listing that parses back to the same plan.
//! let listing = decision.plan().to_string();
//! assert!(listing.contains("reclaim drop h1.a:Plaintext at cuda:0"));
//! assert_eq!(parse_plan(&listing)?, *decision.plan());
//! # Ok(())
//! # }
//! ```
//!
//! ## Departures from FHElium
//!
//! Parity is the default (`docs/decisions/01xx` lists the exceptions): the search cuts cycles
//! that FHElium would recurse into forever and bounds its nesting depth (0100); the model's
//! inputs that FHElium reads from live objects (policy metadata, access epochs, device
//! availability, protection) travel in the snapshot (0101).

pub mod cost;
pub mod decision;
pub mod error;
pub mod explain;
pub mod forecast;
mod hash;
pub mod location;
pub mod model;
pub mod plan;
pub mod planner;
pub mod policy;
pub mod report;
pub mod snapshot;
pub mod text;

pub use cost::{
    CostAwareTieredLRU, CostAwareTieredLRUConfig, LinkCost, MoveExplanation, MoveKind,
    TransferCostModel, TransferEstimate, TransferLink,
};
pub use decision::{EvictionReason, ResidencyDecision, ResidencyDecisionParts, ResidencyEviction};
pub use error::ModelError;
pub use explain::explain;
pub use forecast::{
    forecast, forecast_next_use, minimum_budget, next_use_priorities, ResidencyForecast,
    ResidencyForecastCopy, ResidencyForecastStep, ResidencyProgramStep, ResidencyStepKind,
    NEXT_USE_BASE,
};
pub use location::{
    ResidencyLocation, ResidencyLocationKind, MAX_DEVICE_INDEX, PAGEABLE_HOST, PINNED_HOST,
};
pub use model::{
    MemoryReservation, Recoverability, ReplicaMode, ResidencyAction, ResidencyHandle,
    ResidencySource, ResidencyValueSpec,
};
pub use plan::{ResidencyPlan, ResidencyRequest, ResidencyRequirement};
pub use planner::{decide, decide_with_limit, DEFAULT_SEARCH_STATE_LIMIT, MAX_SEARCH_DEPTH};
pub use policy::{
    DeterministicTieredLRU, DeterministicTieredLRUConfig, PolicyConfig, ResidencyEvictionCandidate,
    ResidencyPolicy, ResidencyPolicyMetadata, ResidencyRecency,
};
pub use report::{
    ResidencyActionExplanation, ResidencyPlanExplanation, ResidencyPlanReport,
    ResidencyTransitionReport, ResidencyTransitionReportParts,
};
pub use snapshot::{
    MaterializationSnapshot, ResidencyLocationSnapshot, ResidencyLocationSnapshotParts,
    ResidencyReservationSnapshot, ResidencySnapshot, ResidencySnapshotBuilder,
    ResidencySnapshotParts, ResidencyValueSnapshot, ResidencyValueSnapshotParts,
};
pub use text::{eviction_table, format_bytes, parse_decision, parse_plan};
