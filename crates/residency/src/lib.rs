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

pub mod error;
pub mod location;
pub mod model;

pub use error::ModelError;
pub use location::{
    ResidencyLocation, ResidencyLocationKind, MAX_DEVICE_INDEX, PAGEABLE_HOST, PINNED_HOST,
};
pub use model::{
    MemoryReservation, Recoverability, ReplicaMode, ResidencyAction, ResidencyHandle,
    ResidencyValueSpec,
};
