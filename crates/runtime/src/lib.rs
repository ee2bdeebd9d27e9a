//! # fhelium-runtime: the residency manager and controller
//!
//! [`ResidencyManager`] is the sole authority for placement, accounting and lifetime of
//! managed values (spec `residency.md` 1.15, 2). It holds values of several [`Resident`] types
//! at once behind typed [`Handle`]s, charges every materialization a fixed amount against
//! immutable per-location budgets, and protects replicas with leases (bound to consumer
//! streams), holds and pending events. [`ResidencyController`] turns declarative requests into
//! state-bound decisions (the pure planner of `fhelium-residency`) and admits them through
//! version-checked scopes.
//!
//! ```
//! use fhelium_cuda::{Memory, Tensors};
//! use fhelium_residency::{ReplicaMode, ResidencyLocation, PAGEABLE_HOST};
//! use fhelium_runtime::ResidencyManager;
//!
//! let memory = Memory::with_sim_devices(1);
//! let sim0 = ResidencyLocation::Sim(0);
//! let manager = ResidencyManager::builder(memory.clone()).budget(sim0, 1 << 20).build()?;
//! let value = Tensors::upload(&memory, &PAGEABLE_HOST, &[&[1, 2, 3, 4]], None)?.value;
//! let h = manager.adopt(value, None, ReplicaMode::Replicable)?;
//! manager.ensure(&h, sim0, None)?;
//! let stream = memory.stream(&sim0)?;
//! let lease = manager.acquire(&[&h], sim0, Some(&stream))?;
//! assert_eq!(lease.get(&h)?.to_vecs(&memory)?, vec![vec![1, 2, 3, 4]]);
//! lease.release()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Resident`]: fhelium_cuda::Resident

mod controller;
mod error;
mod lifetime;
mod manager;
mod plan;
mod preflight;
mod program;
mod report;
mod snapshot;
mod state;
mod value;

pub use controller::{ConsumerStreams, ResidencyController, ResidencyPrefetch, ResidencyUse};
pub use error::{
    OwnershipViolation, PlanExecutionFailure, PlanPhase, ResidencyErrorKind, Result, RuntimeError,
    SourceError, UseFailure,
};
pub use lifetime::{ResidencyHold, ResidencyLease, ResidencyReservation};
pub use manager::{ManagerBuilder, ResidencyManager, DEFAULT_TRACE_CAPACITY};
pub use plan::{ResidencyScope, TransferStreams};
pub use program::{ProgramError, ProgramEviction, ProgramRun};
pub use value::Handle;
