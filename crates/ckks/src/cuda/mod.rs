//! # The CUDA backend (feature `cuda`)
//!
//! [`CudaEngine`] runs the CKKS operations on device-resident values ([`GpuCiphertext`],
//! [`GpuPlaintext`], [`GpuSwitchKey`]) with the PTX kernels of `kernels/ckks.cu`. Results are
//! bit for bit those of the CPU engine: the device stores the same canonical standard-form
//! residues, and every kernel computes the same function modulo each prime (the reduction
//! method inside a kernel, Shoup or Montgomery, never shows in what is stored).
//!
//! Design (see `docs/crates/ckks.md` and decisions 0500-0502):
//! * one `CudaEngine` per device: module, twiddles and every per-prime constant uploaded once;
//! * every operation takes the stream it runs on, allocates its result and scratch from the
//!   device's stream-ordered pool and never synchronises the host;
//! * NTT = two launches over all limbs and components (a column pass and a row pass of seven
//!   fused radix-2 stages each, in shared memory); key switching = four launches (ModUp fused
//!   with the first NTT pass, the second NTT pass fused with the key inner product and the
//!   first inverse pass, the second inverse pass, ModDown fused with the final additions).
//!
//! This is the one module of the crate allowed `unsafe`, each block with a `// SAFETY:` note.
#![allow(unsafe_code)]

mod engine;
pub mod tables;

pub use engine::{
    CudaBackendError, CudaEngine, GpuCiphertext, GpuPlaintext, GpuPublicKey, GpuSecretKey,
    GpuSwitchKey, GpuView, CKKS_PTX,
};

/// The CUDA stream type every [`CudaEngine`] operation takes (`cust`'s), re-exported so users
/// need no direct `cust` dependency; [`CudaEngine::stream`] makes one.
pub use cust::stream::Stream;
