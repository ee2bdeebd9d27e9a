//! # fhelium-runtime: the residency manager and controller
//!
//! This crate will own the `ResidencyManager` (the sole authority for placement, accounting and
//! lifetime of managed values), leases tracked by stream events, holds, reservations, plan
//! execution with transactional steps, and the `ResidencyController` (decide / scope / use with
//! stale-state detection). It is generic over values that implement
//! [`fhelium_cuda::Resident`]-style traits from the memory layer.
