//! # fhelium-cuda: memory and streams
//!
//! This crate owns raw memory (pageable host, pinned host and device buffers of `u64` words),
//! streams, events, asynchronous copies, PTX module loading and kernel launch, and the
//! [`Resident`] trait that the runtime manages.
//!
//! Two backends:
//! - **host** (always built): pageable memory, *simulated* pinned memory (host memory flagged
//!   pinned) and simulated devices `sim:N` whose memory is host memory, with in-order streams,
//!   events, test holds ([`Stream::hold`]) and fault injection ([`SimFaults`]);
//! - **cuda** (feature `cuda`, on `cust` 0.3.2): `cuda:N` devices through their primary
//!   contexts, stream-ordered pooled device allocation, page-locked pinned memory, async
//!   copies in every direction, events, stream waits, PTX modules and kernel launch.
//!
//! Entry point: [`Memory`] (`host_only`, `with_sim_devices`, `with_cuda`). The copy rules
//! (including the pageable-memory rule) are in the [`buffer`] module docs.
//!
//! It is the only crate (with the CUDA backend module of `fhelium-ckks`) allowed `unsafe` code;
//! all of it lives in the `cuda` module, each block with a `// SAFETY:` comment.
#![allow(unsafe_code)]

pub mod buffer;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod error;
pub mod memory;
pub mod peer;
pub mod resident;
pub mod stream;
pub mod tensors;

pub use buffer::{Buffer, StorageKey};
#[cfg(feature = "cuda")]
pub use cuda::{Kernel, KernelArg, LaunchConfig, Module};
pub use error::MemoryError;
pub use fhelium_residency::ResidencyLocation;
pub use memory::{DeviceAllocMode, DeviceInfo, LocationUsage, Memory, MemoryConfig, SimFaults};
pub use peer::{PeerCopyStats, PeerLink, PeerMode, PeerPath};
pub use resident::{common_placement, distinct_storages, Materialized, Resident};
pub use stream::{Event, Stream, SIM_HOLD_TIMEOUT};
pub use tensors::{TensorView, Tensors};

/// PTX of `kernels/modadd.cu` (elementwise modular add over u64 limbs), embedded at build time.
pub const MODADD_PTX: &str = include_str!("../../../kernels/ptx/modadd.ptx");
