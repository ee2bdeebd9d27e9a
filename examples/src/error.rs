//! The one error type of the examples.

use fhelium_residency::ResidencyLocation;

/// Everything an example can fail with. Library errors are carried whole; the example's own
/// checks (the seed's `RuntimeError`s) name what they expected and what they found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExampleError {
    /// A command-line value could not be understood.
    #[error("invalid argument {argument}: {reason}")]
    InvalidArgument {
        /// The argument.
        argument: &'static str,
        /// Why.
        reason: String,
    },
    /// The device cannot run this example with this build.
    #[error("device {device} is unavailable: {reason}")]
    DeviceUnavailable {
        /// The requested device.
        device: String,
        /// Why, and what to do instead.
        reason: String,
    },
    /// A residency manager or controller call failed.
    #[error("residency: {0}")]
    Runtime(#[from] fhelium_runtime::RuntimeError),
    /// A residency model value could not be built.
    #[error("residency model: {0}")]
    Model(#[from] fhelium_residency::ModelError),
    /// A CKKS engine call failed.
    #[error("ckks: {0}")]
    Ckks(#[from] fhelium_ckks::CkksError),
    /// The CUDA CKKS engine failed (feature `cuda`).
    #[cfg(feature = "cuda")]
    #[error("cuda engine: {0}")]
    Cuda(#[from] fhelium_ckks::cuda::CudaBackendError),
    /// A memory-layer call (streams, copies) failed.
    #[error("memory: {0}")]
    Memory(#[from] fhelium_cuda::MemoryError),
    /// One of the checks the seed program makes did not hold.
    #[error("check failed: {what} (expected {expected}, found {found})")]
    Check {
        /// The check.
        what: &'static str,
        /// The expected outcome.
        expected: String,
        /// What happened.
        found: String,
    },
    /// The decrypted result is further from the cleartext than the example allows.
    #[error("error too large at {location}: max abs error {max_abs:.3e} > {bound:.0e}")]
    ErrorTooLarge {
        /// Where the stage ran.
        location: ResidencyLocation,
        /// The measured maximum absolute error.
        max_abs: f64,
        /// The bound.
        bound: f64,
    },
    /// Writing an output file (trace, plot) failed.
    #[error("writing {path}: {reason}")]
    Output {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
}

/// A program run's failure as the example's error: the residency error, or the body's own
/// error as it was (the step index is in the run's reports).
impl From<fhelium_runtime::ProgramError<ExampleError>> for ExampleError {
    fn from(e: fhelium_runtime::ProgramError<ExampleError>) -> Self {
        match e {
            fhelium_runtime::ProgramError::Residency(e) => Self::Runtime(e),
            fhelium_runtime::ProgramError::Body { error, .. } => error,
        }
    }
}
