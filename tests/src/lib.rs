//! # fhelium-tests
//!
//! Cross-crate tests of fhelium-rs live in `tests/tests/`: example parity on the simulated
//! device and randomized model-based tests of the manager against a reference model.
