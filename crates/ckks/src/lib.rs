//! # fhelium-ckks: CKKS homomorphic encryption
//!
//! Presets and primes ([`params`]), modular arithmetic ([`arith`]), the negacyclic NTT
//! ([`ntt`]), the per-limb reference kernels ([`kernels`]), slot encoding ([`encoding`]),
//! randomness ([`sampling`]), keys ([`keys`]), values ([`values`]) and the CPU engine
//! ([`CpuEngine`]). See `docs/crates/ckks.md` for the architecture and the representation
//! contract a GPU backend must reproduce bit for bit.
//!
//! ```
//! use fhelium_ckks::{CpuEngine, ModulusBasis, Preset};
//! let engine = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [1; 32])?;
//! let m: Vec<f64> = (0..engine.num_slots()).map(|j| 0.01 * (0.017 * j as f64).sin()).collect();
//! let ct = engine.encrypt_message(&m)?;
//! let key = engine.create_rotation_key(1, engine.secret_key())?;
//! let weight = engine.encode(&vec![0.5; engine.num_slots()], 0, None)?;
//! let half = engine.prepare_plaintext_for_multiplication(&weight, ModulusBasis::Q)?;
//! let rotated = engine.rotate_with_key(&ct, &key)?;
//! let out = engine.rescale_to_next_level(&engine.ntt_domain_to_coefficient_domain(
//!     &engine.multiply_plaintext(&engine.coefficient_domain_to_ntt_domain(&rotated)?, &half)?)?)?;
//! let got = engine.decrypt_message(&out)?;
//! let n = m.len();
//! let err = (0..n).map(|j| (got[j] - 0.5 * m[(j + n - 1) % n]).abs()).fold(0.0, f64::max);
//! assert!(err < 1e-5);
//! # Ok::<(), fhelium_ckks::CkksError>(())
//! ```

pub mod arith;
pub mod context;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod encoding;
mod engine;
mod error;
#[cfg(test)]
mod golden_tests;
pub mod kernels;
pub mod keycache;
pub mod keys;
pub mod ntt;
pub mod params;
// Used by the CUDA engine only; always compiled so its tests run without a GPU.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod recycle;
pub mod sampling;
pub mod serial;
mod storage;
pub mod values;

pub use context::Context;
pub use engine::CpuEngine;
pub use error::CkksError;
pub use keycache::CachedKey;
pub use keys::{KeySwitchKey, PublicKey, RelinearizationKey, RotationKey, SecretKey};
pub use params::{CkksConfig, Preset};
pub use storage::is_host_accessible;
pub use values::{Ciphertext, Domain, ModulusBasis, Plaintext, PlaintextRepresentation};
