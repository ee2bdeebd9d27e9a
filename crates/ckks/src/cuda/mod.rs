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
//! * NTT = one launch over all limbs and components: a thread-block cluster of 8 blocks per
//!   limb, columns then rows of the 128 x 128 view, the transpose through distributed shared
//!   memory; by default 16 words per thread in registers with one warp-level exchange per
//!   phase (`ntt_fwd_w16`/`ntt_inv_w16`, decision 0503); key switching = three launches (ModUp fused with a whole
//!   forward NTT per target row and digit, the key inner product fused with a whole inverse NTT
//!   per target row and component, ModDown fused with the final additions). The two-pass
//!   kernels of the first version (a column and a row pass per NTT, four launches per key
//!   switch) remain as the fallback; [`NttKernels`] and [`CudaEngine::set_ntt_kernels`] choose.
//!
//! This is the one module of the crate allowed `unsafe`, each block with a `// SAFETY:` note.
#![allow(unsafe_code)]

mod engine;
pub mod tables;

pub use engine::{
    CudaBackendError, CudaEngine, GpuCiphertext, GpuPlaintext, GpuPublicKey, GpuSecretKey,
    GpuSwitchKey, GpuView, NttKernels, CKKS_PTX,
};

/// The CUDA stream type every [`CudaEngine`] operation takes (`cust`'s), re-exported so users
/// need no direct `cust` dependency; [`CudaEngine::stream`] makes one.
pub use cust::stream::Stream;
