//! Device selection: `--device cpu | sim:N | cuda:N` picks the CKKS engine and the memory
//! layer the residency manager allocates from.
//!
//! - `cpu` (the default) and `sim:N`: the CPU engine ([`fhelium_ckks::CpuEngine`]) over a
//!   memory layer with simulated devices; managed device replicas live on `sim:N` (host memory
//!   with device semantics: streams, events, budgets), and the CPU engine computes on them
//!   directly.
//! - `cuda:N`: needs the `cuda` feature and a CUDA device; see [`Engine::open`] for what this
//!   build does with it.

use std::str::FromStr;

use fhelium_ckks::{
    Ciphertext, CkksConfig, CpuEngine, ModulusBasis, Plaintext, Preset, RotationKey, SecretKey,
};
use fhelium_cuda::Memory;
use fhelium_residency::ResidencyLocation;

use crate::ExampleError;

/// The preset of the seed example.
pub const DEFAULT_PRESET: Preset = Preset::Slots8192Scale40Levels7Int64;

/// Fixed engine seed of the examples (reproducible keys and noise); `--seed` changes it.
pub const DEFAULT_SEED: u8 = 14;

/// A parsed `--device` argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceChoice {
    /// `cpu`: the CPU engine with the simulated device `sim:0`.
    Cpu,
    /// `sim:N`: the CPU engine with simulated device N.
    Sim(u8),
    /// `cuda:N`: a CUDA device.
    Cuda(u8),
}

impl DeviceChoice {
    /// The managed device location the example places its working set on.
    #[must_use]
    pub const fn location(self) -> ResidencyLocation {
        match self {
            Self::Cpu => ResidencyLocation::Sim(0),
            Self::Sim(n) => ResidencyLocation::Sim(n),
            Self::Cuda(n) => ResidencyLocation::Cuda(n),
        }
    }
}

impl FromStr for DeviceChoice {
    type Err = ExampleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "cpu" {
            return Ok(Self::Cpu);
        }
        match s.parse::<ResidencyLocation>() {
            Ok(ResidencyLocation::Sim(n)) => Ok(Self::Sim(n)),
            Ok(ResidencyLocation::Cuda(n)) => Ok(Self::Cuda(n)),
            _ => Err(ExampleError::InvalidArgument {
                argument: "--device",
                reason: format!("{s:?} is not one of cpu, sim:N, cuda:N"),
            }),
        }
    }
}

/// The CKKS engine an example runs on, chosen by `--device`.
#[derive(Debug)]
#[non_exhaustive]
pub enum Engine {
    /// The CPU engine; it computes on values at any host-accessible location (pageable,
    /// pinned, `sim:N`).
    Cpu(CpuEngine),
}

/// An engine with the memory layer it allocates from and the managed device location.
#[derive(Debug)]
pub struct Setup {
    /// The engine.
    pub engine: Engine,
    /// The memory layer (shared by the engine and the residency manager).
    pub memory: Memory,
    /// The device location (`sim:0` for `cpu`).
    pub device: ResidencyLocation,
}

impl Engine {
    /// Opens the engine for `device` at `preset` with a deterministic seed.
    ///
    /// `cuda:N` fails with [`ExampleError::DeviceUnavailable`]: without the `cuda` feature
    /// because the build has no CUDA backend; with it because the CUDA engine
    /// (`fhelium_ckks::cuda::CudaEngine`) computes on its own device values (`GpuCiphertext`,
    /// ...) and cannot yet compute on manager-resident `Ciphertext`/`Plaintext`/`RotationKey`
    /// replicas at `cuda:N` (`docs/decisions/0600-example-output-on-the-simulated-device.md`).
    ///
    /// # Errors
    /// [`ExampleError::DeviceUnavailable`], [`ExampleError::Ckks`].
    pub fn open(device: DeviceChoice, preset: Preset, seed: u8) -> Result<Setup, ExampleError> {
        match device {
            DeviceChoice::Cpu | DeviceChoice::Sim(_) => {
                let loc = device.location();
                let count = match loc {
                    ResidencyLocation::Sim(n) => n.saturating_add(1),
                    _ => 1,
                };
                let memory = Memory::with_sim_devices(count);
                let engine = CpuEngine::from_config_in(
                    CkksConfig::from_preset(preset)?,
                    Some([seed; 32]),
                    memory.clone(),
                )?;
                Ok(Setup {
                    engine: Engine::Cpu(engine),
                    memory,
                    device: loc,
                })
            }
            DeviceChoice::Cuda(_) => Err(cuda_unavailable(device)),
        }
    }

    /// Short description for output headers.
    #[must_use]
    pub fn describe(&self) -> &'static str {
        match self {
            Self::Cpu(_) => "CPU engine",
        }
    }

    /// Number of complex slots.
    #[must_use]
    pub fn num_slots(&self) -> usize {
        match self {
            Self::Cpu(e) => e.num_slots(),
        }
    }

    /// The engine's secret key.
    #[must_use]
    pub fn secret_key(&self) -> &SecretKey {
        match self {
            Self::Cpu(e) => e.secret_key(),
        }
    }
}

#[cfg(not(feature = "cuda"))]
fn cuda_unavailable(device: DeviceChoice) -> ExampleError {
    ExampleError::DeviceUnavailable {
        device: device.location().to_string(),
        reason: "this build has no CUDA backend; rebuild with `--features cuda` (cargo xtask \
                 example --device cuda:0 does) or run with --device cpu"
            .to_owned(),
    }
}

#[cfg(feature = "cuda")]
fn cuda_unavailable(device: DeviceChoice) -> ExampleError {
    let loc = device.location();
    let reason = match Memory::with_cuda() {
        Err(e) => format!("no CUDA driver or device: {e}"),
        Ok(m) if !m.is_available(&loc) => {
            format!("the machine has {} CUDA device(s)", m.cuda_device_count())
        }
        Ok(_) => "the CUDA CKKS engine cannot yet compute on manager-resident values at \
                  cuda:N (it takes its own GpuCiphertext/GpuPlaintext/GpuSwitchKey); run with \
                  --device cpu"
            .to_owned(),
    };
    ExampleError::DeviceUnavailable {
        device: loc.to_string(),
        reason,
    }
}

/// Forwards engine operations to the selected backend.
macro_rules! forward {
    ($($(#[$doc:meta])* fn $name:ident(&self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        impl Engine {
            $(
                $(#[$doc])*
                ///
                /// # Errors
                /// The engine's [`fhelium_ckks::CkksError`].
                pub fn $name(&self $(, $arg: $ty)*) -> Result<$ret, ExampleError> {
                    match self {
                        Self::Cpu(e) => Ok(e.$name($($arg),*)?),
                    }
                }
            )*
        }
    };
}

forward! {
    /// Encodes real slots at `level` (default scale).
    fn encode(&self, message: &[f64], level: usize, scale: Option<f64>) -> Plaintext;
    /// Makes an operation-ready (RNS, NTT) plaintext for `multiply_plaintext`.
    fn prepare_plaintext_for_multiplication(&self, pt: &Plaintext, basis: ModulusBasis) -> Plaintext;
    /// A rotation key for `step`.
    fn create_rotation_key(&self, step: i64, sk: &SecretKey) -> RotationKey;
    /// Encodes and encrypts real slots at the top level.
    fn encrypt_message(&self, message: &[f64]) -> Ciphertext;
    /// Decrypts and decodes real slots.
    fn decrypt_message(&self, ct: &Ciphertext) -> Vec<f64>;
    /// Rotates by the key's step.
    fn rotate_with_key(&self, ct: &Ciphertext, key: &RotationKey) -> Ciphertext;
    /// Coefficient domain to NTT domain.
    fn coefficient_domain_to_ntt_domain(&self, ct: &Ciphertext) -> Ciphertext;
    /// NTT domain to coefficient domain.
    fn ntt_domain_to_coefficient_domain(&self, ct: &Ciphertext) -> Ciphertext;
    /// Multiplies by an operation-ready plaintext.
    fn multiply_plaintext(&self, ct: &Ciphertext, pt: &Plaintext) -> Ciphertext;
    /// Tensor product of two ciphertexts (three components).
    fn multiply(&self, a: &Ciphertext, b: &Ciphertext) -> Ciphertext;
    /// Relinearizes with the engine's relinearization key.
    fn relinearize(&self, ct: &Ciphertext) -> Ciphertext;
    /// Divides by the last prime and drops a level.
    fn rescale_to_next_level(&self, ct: &Ciphertext) -> Ciphertext;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_parse() {
        assert_eq!("cpu".parse::<DeviceChoice>().ok(), Some(DeviceChoice::Cpu));
        assert_eq!(
            "sim:1".parse::<DeviceChoice>().ok(),
            Some(DeviceChoice::Sim(1))
        );
        assert_eq!(
            "cuda:0".parse::<DeviceChoice>().ok(),
            Some(DeviceChoice::Cuda(0))
        );
        assert_eq!(DeviceChoice::Cpu.location(), ResidencyLocation::Sim(0));
        for bad in ["gpu", "pinned-host", "pageable-host", ""] {
            assert!(matches!(
                bad.parse::<DeviceChoice>(),
                Err(ExampleError::InvalidArgument {
                    argument: "--device",
                    ..
                })
            ));
        }
    }

    #[test]
    fn cuda_without_support_is_a_clear_error() {
        let e = Engine::open(DeviceChoice::Cuda(0), DEFAULT_PRESET, DEFAULT_SEED).unwrap_err();
        assert!(
            matches!(e, ExampleError::DeviceUnavailable { ref device, .. } if device == "cuda:0")
        );
    }
}
