//! # fhelium-cuda: memory and streams
//!
//! This crate will own raw memory (pageable host, pinned host and device buffers), streams,
//! events, asynchronous copies, module loading and kernel launch, and the `Resident` trait that
//! the runtime manages. Two backends: `host` (always built; includes the simulated devices
//! `sim:N` whose memory is host memory) and `cuda` (feature `cuda`, on `cust`).
//!
//! It is the only crate (with the CUDA backend module of `fhelium-ckks`) allowed `unsafe` code.
#![allow(unsafe_code)]

/// PTX of `kernels/modadd.cu` (elementwise modular add over u64 limbs), embedded at build time.
pub const MODADD_PTX: &str = include_str!("../../../kernels/ptx/modadd.ptx");
