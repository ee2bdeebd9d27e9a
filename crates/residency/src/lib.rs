//! # fhelium-residency: the pure residency model
//!
//! This crate is the GPU-free heart of fhelium-rs. It owns the *vocabulary* of residency
//! (locations, handles, value specs, replica modes, actions, plans as a command IR, requests,
//! reservations, snapshots, explanations and reports, all as plain data), the policy trait with
//! `DeterministicTieredLRU`, the planner (snapshot + request + policy -> decision) and the dry-run
//! simulator (plan -> explanation).
//!
//! It never sees a buffer, a clock, a thread or a random number: whatever the planner needs
//! travels in snapshots (rule 1 of `design.md`). The runtime crate (`fhelium-runtime`) is the
//! only thing that turns these descriptions into real placements.
//!
//! The reference behaviour is FHElium 0.10's residency subsystem (see `docs/architecture.md`).

pub mod decision;
pub mod error;
pub mod explain;
mod hash;
pub mod location;
pub mod model;
pub mod plan;
pub mod planner;
pub mod policy;
pub mod report;
pub mod snapshot;
pub mod text;

pub use decision::{EvictionReason, ResidencyDecision, ResidencyDecisionParts, ResidencyEviction};
pub use error::ModelError;
pub use explain::explain;
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
