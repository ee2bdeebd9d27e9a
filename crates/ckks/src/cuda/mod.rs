//! # The CUDA backend (feature `cuda`)
//!
//! [`CudaEngine`] runs the CKKS operations on device-resident values ([`GpuCiphertext`],
//! [`GpuPlaintext`], [`GpuSwitchKey`]) with the PTX kernels of `kernels/ckks.cu`. Results are
//! bit for bit those of the CPU engine: the device stores the same canonical standard-form
//! residues, and every kernel computes the same function modulo each prime (the reduction
//! method inside a kernel, Shoup or Montgomery, never shows in what is stored).
//!
//! Design (see `docs/crates/ckks.md` and decisions 0500-0505):
//! * one `CudaEngine` per device: module, twiddles and every per-prime constant uploaded once;
//! * every operation takes the stream it runs on, allocates its result and scratch in stream
//!   order and never synchronises the host; buffers freed with `free_async` (and the engine's
//!   own scratch) are recycled for the next allocation of their length on the same stream
//!   (`crate::recycle`, [`CudaEngine::set_recycling`]), the device's stream-ordered pool
//!   serves the rest;
//! * NTT = one launch over all limbs and components: 8 blocks per limb, columns then rows of
//!   the 128 x 128 view. By default (`NttKernels::GlobalSync`, decision 0503) the blocks (256
//!   threads, 8 words each) of a limb exchange the transpose through the output limb in L2
//!   and meet on a per-limb counter, in one cooperative launch; the thread-block-cluster
//!   kernels (512 threads, 4 words each; the transpose through distributed shared memory)
//!   are the other one-launch choice. Key
//!   switching = three launches (ModUp fused with a whole forward NTT per target row and
//!   digit, the key inner product fused with a whole inverse NTT per target row and
//!   component, ModDown fused with the final additions); by default the first runs as a
//!   queue of column and row work items over one wave of blocks (`ntt_fwd_gq`) and the
//!   second as a cooperative launch like the NTTs (`ks_inner_gs`), decision 0507. The
//!   two-pass kernels of the first version (a column and a row pass per NTT, four launches
//!   per key switch) remain as the fallback; [`NttKernels`] and
//!   [`CudaEngine::set_ntt_kernels`] choose.
//! * every kernel launch replays a one-node CUDA graph kept per (kernel, grid, stream), its
//!   arguments updated per call (decision 0505): on the H200 VM that costs ~1-2 us less host
//!   time than `cuLaunchKernel`, which is latency for a call timed on an idle stream;
//!   [`CudaEngine::set_graph_launches`] or `FHELIUM_CKKS_GRAPHS=0` launch directly instead;
//! * an operation of several dependent launches (rotate, relinearize, encrypt, decrypt)
//!   submits them as one chain graph, with programmatic edges into the kernels that start by
//!   waiting for their predecessor (decision 0508; [`CudaEngine::chain_launches`]);
//! * a [`Pipeline`] records several operations on one stream and submits them as chain
//!   graphs of up to sixteen kernels (decision 0513): the example-14 stage is one graph.
//!
//! This is the one module of the crate allowed `unsafe`, each block with a `// SAFETY:` note.
#![allow(unsafe_code)]

mod engine;
pub mod tables;

pub use engine::{
    CudaBackendError, CudaEngine, GpuCiphertext, GpuKeyCache, GpuPlaintext, GpuPublicKey,
    GpuSecretKey, GpuSwitchKey, GpuView, IntoResidentError, NttKernels, PipeValue, Pipeline,
    PipelineOutputs, SlotValues, CKKS_PTX,
};

/// The CUDA stream type every [`CudaEngine`] operation takes (`cust`'s), re-exported so users
/// need no direct `cust` dependency; [`CudaEngine::stream`] makes one.
pub use cust::stream::Stream;

/// The GPU tutorial (`docs/tutorials/ckks-on-the-gpu.md`), included so that its code is
/// compiled by the documentation tests.
#[cfg(doctest)]
#[doc = include_str!("../../../../docs/tutorials/ckks-on-the-gpu.md")]
pub struct TutorialCkksOnTheGpu;
