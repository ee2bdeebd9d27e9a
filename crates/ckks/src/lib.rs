//! # fhelium-ckks: CKKS homomorphic encryption
//!
//! This crate will own presets, primes, modular arithmetic, the NTT, RNS, encoding, keys, the
//! CSPRNG, values (implementing the memory layer's `Resident`) and the engine with a CPU backend
//! and a CUDA backend (feature `cuda`) that launches the PTX built from `kernels/`.
