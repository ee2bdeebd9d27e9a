//! Device selection: `--device cpu | sim:N | cuda:N` picks the CKKS engine and the memory
//! layer the residency manager allocates from.
//!
//! - `cpu` (the default) and `sim:N`: the CPU engine ([`fhelium_ckks::CpuEngine`]) over a
//!   memory layer with simulated devices; managed device replicas live on `sim:N` (host memory
//!   with device semantics: streams, events, budgets), and the CPU engine computes on them
//!   directly.
//! - `cuda:N`: needs the `cuda` feature and a CUDA device. Encoding, key generation,
//!   encryption and decryption run on the CPU engine; the homomorphic operations run on the
//!   CUDA engine (`fhelium_ckks::cuda::CudaEngine`) directly on the manager's `cuda:N`
//!   replicas, borrowed without a copy, and return `cuda:N` values allocated from the same
//!   memory layer.

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
#[allow(clippy::large_enum_variant)] // one engine per run; the CUDA side is boxed
pub enum Engine {
    /// The CPU engine; it computes on values at any host-accessible location (pageable,
    /// pinned, `sim:N`).
    Cpu(CpuEngine),
    /// The CUDA engine on `cuda:N` (feature `cuda`).
    #[cfg(feature = "cuda")]
    Cuda(Box<CudaBackend>),
}

/// The CUDA side of [`Engine::Cuda`]: a CPU engine for encoding, keys, encryption and
/// decryption, and the CUDA engine that computes on `cuda:N` values.
///
/// Stream rule: the CUDA engine enqueues on its own stream, a `cust` stream handed to the
/// memory layer ([`Memory::wrap_stream`]), and no operation waits on the host. Before
/// computing on values borrowed through a lease, call [`Engine::wait_for`] with the lease's
/// consumer stream (the engine stream waits, on the GPU, for the transfers the lease ordered
/// there); after the operations, [`Engine::signal`] orders the consumer stream after them,
/// so the lease's release (and a synchronisation of that stream) covers the engine's reads.
/// Results become `cuda:N` values in stream order
/// ([`fhelium_ckks::cuda::CudaEngine::into_resident_ciphertext_on`]): their buffers are
/// ordered after the engine stream, and dropped ones are freed on it.
#[cfg(feature = "cuda")]
pub struct CudaBackend {
    // Field order = drop order: the stream goes before the engine releases its context.
    stream: fhelium_cuda::Stream,
    // The relinearization key, made on the device from `cpu`'s secret key on first use
    // (decision 0531: the CPU engine's key word for word; 18 MiB of the engine's pool, held
    // until the backend drops; not part of the residency manager's budget, like the engine's
    // scratch).
    keys: fhelium_ckks::cuda::GpuKeyCache,
    gpu: fhelium_ckks::cuda::CudaEngine,
    cpu: std::sync::Arc<CpuEngine>,
    memory: Memory,
}

#[cfg(feature = "cuda")]
impl std::fmt::Debug for CudaBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CudaBackend({:?} at {})", self.gpu, self.gpu.location())
    }
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
    /// `cuda:N` opens the memory layer on CUDA, a CPU engine allocating from it and the CUDA
    /// engine on device N (`Engine::Cuda`, feature `cuda`). It fails with [`ExampleError::DeviceUnavailable`]
    /// without the `cuda` feature (the build has no CUDA backend), without a driver or that
    /// device, or when the CUDA engine does not support the preset.
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
            DeviceChoice::Cuda(n) => open_cuda(n, preset, seed),
        }
    }

    /// Orders the engine's work after everything enqueued so far on `stream` (the consumer
    /// stream of a lease): the CUDA engine's stream waits for it on the GPU (the host does
    /// not block); the CPU engine needs nothing (it runs on the host in program order).
    ///
    /// # Errors
    /// [`ExampleError::Memory`] when the wait fails.
    pub fn wait_for(&self, stream: &fhelium_cuda::Stream) -> Result<(), ExampleError> {
        match self {
            Self::Cpu(_) => {
                let _ = stream;
                Ok(())
            }
            #[cfg(feature = "cuda")]
            Self::Cuda(b) => Ok(b.stream.wait_for(stream)?),
        }
    }

    /// Orders everything enqueued so far on `stream` (the consumer stream of a lease) after
    /// the engine's work: on CUDA the stream waits on the GPU for the engine's stream, so
    /// releasing the lease, or synchronising `stream`, covers the operations that read the
    /// leased values. Nothing for the CPU engine (its operations have returned complete).
    ///
    /// # Errors
    /// [`ExampleError::Memory`] when the wait fails.
    pub fn signal(&self, stream: &fhelium_cuda::Stream) -> Result<(), ExampleError> {
        match self {
            Self::Cpu(_) => {
                let _ = stream;
                Ok(())
            }
            #[cfg(feature = "cuda")]
            Self::Cuda(b) => Ok(stream.wait_for(&b.stream)?),
        }
    }

    /// Makes the engine's device current on the calling thread (the CUDA engine's primary
    /// context; nothing for the CPU engine). Its operations do this themselves; call it before
    /// dropping a CUDA engine on a thread where another device may be current.
    ///
    /// # Errors
    /// The CUDA engine's driver error.
    pub fn bind_device(&self) -> Result<(), ExampleError> {
        match self {
            Self::Cpu(_) => Ok(()),
            #[cfg(feature = "cuda")]
            Self::Cuda(b) => Ok(b.gpu.make_current()?),
        }
    }

    /// Short description for output headers.
    #[must_use]
    pub fn describe(&self) -> &'static str {
        match self {
            Self::Cpu(_) => "CPU engine",
            #[cfg(feature = "cuda")]
            Self::Cuda(_) => "CUDA engine",
        }
    }

    /// Number of complex slots.
    #[must_use]
    pub fn num_slots(&self) -> usize {
        match self {
            Self::Cpu(e) => e.num_slots(),
            #[cfg(feature = "cuda")]
            Self::Cuda(b) => b.cpu.num_slots(),
        }
    }

    /// The engine's secret key.
    #[must_use]
    pub fn secret_key(&self) -> &SecretKey {
        match self {
            Self::Cpu(e) => e.secret_key(),
            #[cfg(feature = "cuda")]
            Self::Cuda(b) => b.cpu.secret_key(),
        }
    }
}

impl Engine {
    /// `acc + diag ⊙ NTT(rot_key(col))` in one call: the rotation is skipped without a key
    /// and the sum without an accumulator. `col` is a coefficient-domain ciphertext, `diag` an
    /// operation-ready plaintext; the result is in the NTT domain. The words equal those of
    /// the separate calls; on `cuda:N` the intermediates never leave the engine (one adoption
    /// by the memory layer instead of four).
    ///
    /// # Errors
    /// The engine's errors, as the separate calls.
    pub fn rotate_multiply_accumulate(
        &self,
        col: &Ciphertext,
        key: Option<&RotationKey>,
        diag: &Plaintext,
        acc: Option<&Ciphertext>,
    ) -> Result<Ciphertext, ExampleError> {
        match self {
            Self::Cpu(e) => {
                let rotated = key.map(|k| e.rotate_with_key(col, k)).transpose()?;
                let ntt = e.coefficient_domain_to_ntt_domain(rotated.as_ref().unwrap_or(col))?;
                drop(rotated);
                let prod = e.multiply_plaintext(&ntt, diag)?;
                drop(ntt);
                Ok(match acc {
                    Some(a) => e.add(a, &prod)?,
                    None => prod,
                })
            }
            #[cfg(feature = "cuda")]
            Self::Cuda(b) => b.rotate_multiply_accumulate(col, key, diag, acc),
        }
    }
}

#[cfg(not(feature = "cuda"))]
fn open_cuda(n: u8, _preset: Preset, _seed: u8) -> Result<Setup, ExampleError> {
    Err(ExampleError::DeviceUnavailable {
        device: ResidencyLocation::Cuda(n).to_string(),
        reason: "this build has no CUDA backend; rebuild with `--features cuda` (cargo xtask \
                 example --device cuda:0 does) or run with --device cpu"
            .to_owned(),
    })
}

#[cfg(feature = "cuda")]
fn open_cuda(n: u8, preset: Preset, seed: u8) -> Result<Setup, ExampleError> {
    let loc = ResidencyLocation::Cuda(n);
    let unavailable = |reason: String| ExampleError::DeviceUnavailable {
        device: loc.to_string(),
        reason,
    };
    let memory =
        Memory::with_cuda().map_err(|e| unavailable(format!("no CUDA driver or device: {e}")))?;
    if !memory.is_available(&loc) {
        return Err(unavailable(format!(
            "the machine has {} CUDA device(s)",
            memory.cuda_device_count()
        )));
    }
    let cpu = std::sync::Arc::new(CpuEngine::from_config_in(
        CkksConfig::from_preset(preset)?,
        Some([seed; 32]),
        memory.clone(),
    )?);
    Ok(Setup {
        engine: cuda_engine(&cpu, &memory, n, seed)?,
        memory,
        device: loc,
    })
}

/// The CUDA engine of device `n` sharing `cpu` (keys, encoding, encryption) and `memory`.
#[cfg(feature = "cuda")]
pub(crate) fn cuda_engine(
    cpu: &std::sync::Arc<CpuEngine>,
    memory: &Memory,
    n: u8,
    seed: u8,
) -> Result<Engine, ExampleError> {
    let loc = ResidencyLocation::Cuda(n);
    let gpu =
        fhelium_ckks::cuda::CudaEngine::with_seed(cpu.context(), u32::from(n), Some([seed; 32]))
            .map_err(|e| ExampleError::DeviceUnavailable {
                device: loc.to_string(),
                reason: format!("the CUDA CKKS engine cannot start: {e}"),
            })?;
    gpu.make_current()?;
    let stream = gpu.memory_stream(memory)?;
    let keys = gpu.device_key_cache(std::sync::Arc::clone(cpu), cust_stream(&stream)?)?;
    Ok(Engine::Cuda(Box::new(CudaBackend {
        stream,
        keys,
        gpu,
        cpu: std::sync::Arc::clone(cpu),
        memory: memory.clone(),
    })))
}

/// The `cust` stream under the engine's memory-layer stream (always there: the backend made
/// it with [`Memory::wrap_stream`]).
#[cfg(feature = "cuda")]
fn cust_stream(s: &fhelium_cuda::Stream) -> Result<&fhelium_ckks::cuda::Stream, ExampleError> {
    s.as_cust().ok_or_else(|| ExampleError::DeviceUnavailable {
        device: s.location().to_string(),
        reason: "the engine's stream is not a wrapped cust stream".to_owned(),
    })
}

/// A CUDA-engine operand: a no-copy view of a value already on the engine's device, or a copy
/// uploaded from anywhere else.
#[cfg(feature = "cuda")]
enum Operand<'a, T> {
    View(fhelium_ckks::cuda::GpuView<'a, T>),
    Copy(T),
}

#[cfg(feature = "cuda")]
impl<T> std::ops::Deref for Operand<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        match self {
            Self::View(v) => v,
            Self::Copy(c) => c,
        }
    }
}

/// Device values an operation no longer needs, freed in stream order (a drop would wait for
/// the device).
#[cfg(feature = "cuda")]
trait FreeAsync {
    fn free_async(
        self,
        stream: &fhelium_ckks::cuda::Stream,
    ) -> Result<(), fhelium_ckks::cuda::CudaBackendError>;
}

/// `FreeAsync` through the engine values' own `free_async`.
#[cfg(feature = "cuda")]
macro_rules! free_async {
    ($($t:ty),*) => {$(
        impl FreeAsync for $t {
            fn free_async(
                self,
                stream: &fhelium_ckks::cuda::Stream,
            ) -> Result<(), fhelium_ckks::cuda::CudaBackendError> {
                <$t>::free_async(self, stream)
            }
        }
    )*};
}

#[cfg(feature = "cuda")]
free_async!(
    fhelium_ckks::cuda::GpuCiphertext,
    fhelium_ckks::cuda::GpuPlaintext,
    fhelium_ckks::cuda::GpuSwitchKey
);

#[cfg(feature = "cuda")]
impl<T: FreeAsync> Operand<'_, T> {
    /// Done with the operand: a view is let go, an upload freed after the work enqueued on
    /// `stream` (which read it).
    fn finish(self, stream: &fhelium_ckks::cuda::Stream) -> Result<(), ExampleError> {
        match self {
            Self::View(_) => Ok(()),
            Self::Copy(c) => Ok(c.free_async(stream)?),
        }
    }
}

#[cfg(feature = "cuda")]
impl CudaBackend {
    /// The engine's `cust` stream.
    fn s(&self) -> Result<&fhelium_ckks::cuda::Stream, ExampleError> {
        cust_stream(&self.stream)
    }

    /// A no-copy view of `value` when it is on the engine's device (the engine stream first
    /// waits, on the GPU, for the value's pending producers on other streams), or an upload
    /// of it.
    fn operand<'a, V: fhelium_cuda::Resident, T>(
        &self,
        value: &'a V,
        borrow: impl FnOnce(
            &'a V,
        ) -> Result<
            fhelium_ckks::cuda::GpuView<'a, T>,
            fhelium_ckks::cuda::CudaBackendError,
        >,
        upload: impl FnOnce(
            &'a V,
            &fhelium_ckks::cuda::Stream,
        ) -> Result<T, fhelium_ckks::cuda::CudaBackendError>,
    ) -> Result<Operand<'a, T>, ExampleError> {
        self.gpu.make_current()?;
        if value.placement()? == self.gpu.location() {
            for ev in value.pending_events()? {
                if ev.stream_id() != self.stream.id() {
                    self.stream.wait_event(&ev)?;
                }
            }
            Ok(Operand::View(borrow(value)?))
        } else {
            Ok(Operand::Copy(upload(value, self.s()?)?))
        }
    }

    fn ct<'a>(
        &self,
        ct: &'a Ciphertext,
    ) -> Result<Operand<'a, fhelium_ckks::cuda::GpuCiphertext>, ExampleError> {
        self.operand(
            ct,
            |v| self.gpu.borrow_ciphertext(v),
            |v, s| self.gpu.upload_ciphertext(v, s),
        )
    }

    fn pt<'a>(
        &self,
        pt: &'a Plaintext,
    ) -> Result<Operand<'a, fhelium_ckks::cuda::GpuPlaintext>, ExampleError> {
        self.operand(
            pt,
            |v| self.gpu.borrow_plaintext(v),
            |v, s| self.gpu.upload_plaintext(v, s),
        )
    }

    fn key<'a>(
        &self,
        key: &'a RotationKey,
    ) -> Result<Operand<'a, fhelium_ckks::cuda::GpuSwitchKey>, ExampleError> {
        self.operand(
            key,
            |v| self.gpu.borrow_rotation_key(v),
            |v, s| self.gpu.upload_rotation_key(v, s),
        )
    }

    /// A GPU result as a `cuda:N` value of the memory layer, without a copy and without a
    /// host wait: the memory layer adopts the allocation in stream order (the value's buffer
    /// is ordered after the engine stream; dropped, it is freed there).
    fn out(&self, r: fhelium_ckks::cuda::GpuCiphertext) -> Result<Ciphertext, ExampleError> {
        Ok(self
            .gpu
            .into_resident_ciphertext_on(r, &self.memory, &self.stream)
            .map_err(fhelium_ckks::cuda::CudaBackendError::from)?)
    }

    /// A host copy of `ct` for the CPU engine when it lives on a CUDA device (the copy waits
    /// for the value's producers on the GPU, the host for the copy).
    fn host(&self, ct: &Ciphertext) -> Result<Option<Ciphertext>, ExampleError> {
        if matches!(ct.location(), ResidencyLocation::Cuda(_)) {
            use fhelium_cuda::Resident;
            let h = ct
                .materialize(&self.memory, &fhelium_residency::PAGEABLE_HOST, None)?
                .wait()?;
            Ok(Some(h))
        } else {
            Ok(None)
        }
    }

    /// One operation on one ciphertext operand: `f` enqueues it on the engine stream, the
    /// operand is finished after it, the result adopted in stream order.
    fn unary(
        &self,
        ct: &Ciphertext,
        f: impl FnOnce(
            &fhelium_ckks::cuda::GpuCiphertext,
            &fhelium_ckks::cuda::Stream,
        ) -> Result<
            fhelium_ckks::cuda::GpuCiphertext,
            fhelium_ckks::cuda::CudaBackendError,
        >,
    ) -> Result<Ciphertext, ExampleError> {
        self.gpu.make_current()?;
        let s = self.s()?;
        let c = self.ct(ct)?;
        let r = f(&c, s)?;
        c.finish(s)?;
        self.out(r)
    }

    /// [`unary`](Self::unary) with a second operand, finished after the operation too.
    fn binary<T: FreeAsync>(
        &self,
        ct: &Ciphertext,
        other: Operand<'_, T>,
        f: impl FnOnce(
            &fhelium_ckks::cuda::GpuCiphertext,
            &T,
            &fhelium_ckks::cuda::Stream,
        ) -> Result<
            fhelium_ckks::cuda::GpuCiphertext,
            fhelium_ckks::cuda::CudaBackendError,
        >,
    ) -> Result<Ciphertext, ExampleError> {
        let r = self.unary(ct, |c, s| f(c, &other, s))?;
        other.finish(self.s()?)?;
        Ok(r)
    }

    fn rotate_with_key(
        &self,
        ct: &Ciphertext,
        key: &RotationKey,
    ) -> Result<Ciphertext, ExampleError> {
        self.binary(ct, self.key(key)?, |c, k, s| {
            self.gpu.rotate_with_key(c, k, s)
        })
    }

    fn rotate_many_with_keys(
        &self,
        ct: &Ciphertext,
        keys: &[&RotationKey],
    ) -> Result<Vec<Ciphertext>, ExampleError> {
        self.gpu.make_current()?;
        let s = self.s()?;
        let c = self.ct(ct)?;
        let ks = keys
            .iter()
            .map(|k| self.key(k))
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&fhelium_ckks::cuda::GpuSwitchKey> = ks.iter().map(|k| &**k).collect();
        let rs = self.gpu.rotate_many_with_keys(&c, &refs, s)?;
        drop(refs);
        c.finish(s)?;
        for k in ks {
            k.finish(s)?;
        }
        rs.into_iter().map(|r| self.out(r)).collect()
    }

    fn coefficient_domain_to_ntt_domain(
        &self,
        ct: &Ciphertext,
    ) -> Result<Ciphertext, ExampleError> {
        self.unary(ct, |c, s| self.gpu.coefficient_domain_to_ntt_domain(c, s))
    }

    fn ntt_domain_to_coefficient_domain(
        &self,
        ct: &Ciphertext,
    ) -> Result<Ciphertext, ExampleError> {
        self.unary(ct, |c, s| self.gpu.ntt_domain_to_coefficient_domain(c, s))
    }

    fn multiply_plaintext(
        &self,
        ct: &Ciphertext,
        pt: &Plaintext,
    ) -> Result<Ciphertext, ExampleError> {
        self.binary(ct, self.pt(pt)?, |c, p, s| {
            self.gpu.multiply_plaintext(c, p, s)
        })
    }

    /// [`Engine::rotate_multiply_accumulate`] on the device, recorded as one
    /// [`fhelium_ckks::cuda::Pipeline`]: rotate -> NTT -> multiply_plaintext -> add go out as
    /// one chain graph (one submission, no graph boundary next to the key switch); the
    /// intermediate results are freed in stream order and only the sum is adopted by the
    /// memory layer.
    fn rotate_multiply_accumulate(
        &self,
        col: &Ciphertext,
        key: Option<&RotationKey>,
        diag: &Plaintext,
        acc: Option<&Ciphertext>,
    ) -> Result<Ciphertext, ExampleError> {
        self.gpu.make_current()?;
        let s = self.s()?;
        let (c, p) = (self.ct(col)?, self.pt(diag)?);
        let k = key.map(|k| self.key(k)).transpose()?;
        let a = acc.map(|a| self.ct(a)).transpose()?;
        let out = {
            let mut pipe = self.gpu.pipeline(s);
            let x = pipe.input(&c);
            let x = match &k {
                Some(k) => pipe.rotate_with_key(x, k)?,
                None => x,
            };
            let ntt = pipe.coefficient_domain_to_ntt_domain(x)?;
            let prod = pipe.multiply_plaintext(ntt, &p)?;
            let sum = match &a {
                Some(a) => {
                    let a = pipe.input(a);
                    pipe.add(a, prod)?
                }
                None => prod,
            };
            pipe.submit()?.take(sum)?
        };
        c.finish(s)?;
        p.finish(s)?;
        if let Some(k) = k {
            k.finish(s)?;
        }
        if let Some(a) = a {
            a.finish(s)?;
        }
        self.out(out)
    }

    fn multiply(&self, a: &Ciphertext, b: &Ciphertext) -> Result<Ciphertext, ExampleError> {
        self.binary(a, self.ct(b)?, |x, y, s| self.gpu.multiply(x, y, s))
    }

    fn relinearize(&self, ct: &Ciphertext) -> Result<Ciphertext, ExampleError> {
        self.unary(ct, |c, s| self.gpu.relinearize(c, &self.keys, s))
    }

    fn rescale_to_next_level(&self, ct: &Ciphertext) -> Result<Ciphertext, ExampleError> {
        self.unary(ct, |c, s| self.gpu.rescale_to_next_level(c, s))
    }

    fn decrypt_message(&self, ct: &Ciphertext) -> Result<Vec<f64>, ExampleError> {
        let h = self.host(ct)?;
        Ok(self.cpu.decrypt_message(h.as_ref().unwrap_or(ct))?)
    }

    fn encode(
        &self,
        m: &[f64],
        level: usize,
        scale: Option<f64>,
    ) -> Result<Plaintext, ExampleError> {
        Ok(self.cpu.encode(m, level, scale)?)
    }

    fn prepare_plaintext_for_multiplication(
        &self,
        pt: &Plaintext,
        basis: ModulusBasis,
    ) -> Result<Plaintext, ExampleError> {
        Ok(self.cpu.prepare_plaintext_for_multiplication(pt, basis)?)
    }

    fn create_rotation_key(&self, step: i64, sk: &SecretKey) -> Result<RotationKey, ExampleError> {
        Ok(self.cpu.create_rotation_key(step, sk)?)
    }

    fn encrypt_message(&self, m: &[f64]) -> Result<Ciphertext, ExampleError> {
        Ok(self.cpu.encrypt_message(m)?)
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
                /// The engine's [`fhelium_ckks::CkksError`] (and, on `cuda:N`, the CUDA
                /// engine's and the memory layer's errors).
                pub fn $name(&self $(, $arg: $ty)*) -> Result<$ret, ExampleError> {
                    match self {
                        Self::Cpu(e) => Ok(e.$name($($arg),*)?),
                        #[cfg(feature = "cuda")]
                        Self::Cuda(b) => b.$name($($arg),*),
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
    /// Rotates by every key's step with one shared ModUp (hoisted); result `i` equals
    /// `rotate_with_key(ct, keys[i])` word for word.
    fn rotate_many_with_keys(&self, ct: &Ciphertext, keys: &[&RotationKey]) -> Vec<Ciphertext>;
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

    /// A ciphertext, an operation-ready plaintext and a rotation key by `step`, made by `e`.
    fn fused_inputs(e: &Engine, step: i64) -> (Ciphertext, Plaintext, RotationKey) {
        let n = e.num_slots();
        let m: Vec<f64> = (0..n).map(|j| 0.01 * (0.02 * j as f64).cos()).collect();
        let col = e.encrypt_message(&m).expect("encrypt");
        let diag = e
            .prepare_plaintext_for_multiplication(
                &e.encode(&vec![0.5; n], 0, None).expect("encode"),
                ModulusBasis::Q,
            )
            .expect("prepare");
        let key = e.create_rotation_key(step, e.secret_key()).expect("key");
        (col, diag, key)
    }

    /// The fused call equals the separate calls word for word, with and without a key and an
    /// accumulator, and refuses what the separate calls refuse (an NTT-domain input).
    #[test]
    fn rotate_multiply_accumulate_equals_the_separate_calls() {
        let setup = Engine::open(DeviceChoice::Cpu, DEFAULT_PRESET, DEFAULT_SEED).expect("cpu");
        let e = &setup.engine;
        let (col, diag, key) = fused_inputs(e, 3);
        #[allow(irrefutable_let_patterns)] // one variant without the `cuda` feature
        let Engine::Cpu(cpu) = e
        else {
            unreachable!("opened with DeviceChoice::Cpu")
        };
        let words = |c: &Ciphertext| c.words().to_vec();
        let first = e
            .rotate_multiply_accumulate(&col, None, &diag, None)
            .expect("no key, no acc");
        let want_first = cpu
            .multiply_plaintext(&cpu.coefficient_domain_to_ntt_domain(&col).unwrap(), &diag)
            .unwrap();
        assert_eq!(words(&first), words(&want_first));
        let second = e
            .rotate_multiply_accumulate(&col, Some(&key), &diag, Some(&first))
            .expect("key and acc");
        let rotated = cpu.rotate_with_key(&col, &key).unwrap();
        let prod = cpu
            .multiply_plaintext(
                &cpu.coefficient_domain_to_ntt_domain(&rotated).unwrap(),
                &diag,
            )
            .unwrap();
        assert_eq!(words(&second), words(&cpu.add(&first, &prod).unwrap()));
        assert!(matches!(
            e.rotate_multiply_accumulate(&first, None, &diag, None),
            Err(ExampleError::Ckks(_))
        ));
    }

    #[test]
    #[cfg(not(feature = "cuda"))]
    fn cuda_without_support_is_a_clear_error() {
        let e = Engine::open(DeviceChoice::Cuda(0), DEFAULT_PRESET, DEFAULT_SEED).unwrap_err();
        assert!(
            matches!(e, ExampleError::DeviceUnavailable { ref device, .. } if device == "cuda:0")
        );
    }

    #[test]
    #[cfg(feature = "cuda")]
    fn cuda_opens_the_cuda_engine_or_says_why_not() {
        let required = std::env::var("FHELIUM_REQUIRE_GPU").is_ok_and(|v| v == "1");
        // A device index past any machine's count is always a clear error.
        let e = Engine::open(DeviceChoice::Cuda(200), DEFAULT_PRESET, DEFAULT_SEED).unwrap_err();
        assert!(
            matches!(e, ExampleError::DeviceUnavailable { ref device, .. } if device == "cuda:200")
        );
        match Engine::open(DeviceChoice::Cuda(0), DEFAULT_PRESET, DEFAULT_SEED) {
            Ok(setup) => {
                assert_eq!(setup.engine.describe(), "CUDA engine");
                assert_eq!(setup.device, ResidencyLocation::Cuda(0));
            }
            Err(ExampleError::DeviceUnavailable { device, reason }) => {
                assert!(!required, "FHELIUM_REQUIRE_GPU=1 but {device}: {reason}");
                assert_eq!(device, "cuda:0");
                eprintln!("skipped: {reason}");
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }

    /// The examples' engine on cuda:0, or `None` (the test skips) when the machine has no
    /// CUDA device, unless FHELIUM_REQUIRE_GPU=1.
    #[cfg(feature = "cuda")]
    fn cuda_or_skip() -> Option<Setup> {
        let required = std::env::var("FHELIUM_REQUIRE_GPU").is_ok_and(|v| v == "1");
        match Engine::open(DeviceChoice::Cuda(0), DEFAULT_PRESET, DEFAULT_SEED) {
            Ok(s) => Some(s),
            Err(e) => {
                assert!(!required, "FHELIUM_REQUIRE_GPU=1 but {e}");
                eprintln!("skipped: {e}");
                None
            }
        }
    }

    /// The CUDA backend relinearizes with a key made on the device, and its product decrypts
    /// to the CPU engine's bit for bit (same seed: the same key word for word).
    #[test]
    #[cfg(feature = "cuda")]
    fn cuda_relinearization_with_a_device_made_key_equals_the_cpu_engines() {
        let Some(gpu) = cuda_or_skip() else { return };
        let Engine::Cuda(backend) = &gpu.engine else {
            panic!("cuda:0 opened {}", gpu.engine.describe());
        };
        assert!(backend.keys.makes_keys_on_device());
        assert!(
            backend.keys.keys().is_empty(),
            "no key before the first relinearization"
        );
        let cpu = Engine::open(DeviceChoice::Cpu, DEFAULT_PRESET, DEFAULT_SEED).expect("cpu");
        let (g, c) = (&gpu.engine, &cpu.engine);
        let n = c.num_slots();
        let x: Vec<f64> = (0..n).map(|j| 0.5 * (0.011 * j as f64).cos()).collect();
        let y: Vec<f64> = (0..n).map(|j| 0.25 - 0.001 * (j % 97) as f64).collect();
        let to_ntt = |ct| c.coefficient_domain_to_ntt_domain(&ct).expect("ntt");
        let a = to_ntt(c.encrypt_message(&x).expect("encrypt x"));
        let b = to_ntt(c.encrypt_message(&y).expect("encrypt y"));
        let prod = c.multiply(&a, &b).expect("multiply");
        let want = c
            .decrypt_message(&c.relinearize(&prod).expect("cpu relinearize"))
            .expect("decrypt cpu");
        let r = g.relinearize(&prod).expect("cuda relinearize");
        assert_eq!(r.location(), ResidencyLocation::Cuda(0));
        assert_eq!(
            backend.keys.keys().len(),
            1,
            "the key was made once, on the device"
        );
        let got = g.decrypt_message(&r).expect("decrypt gpu");
        assert!(
            got.iter()
                .zip(&want)
                .all(|(p, q)| p.to_bits() == q.to_bits()),
            "the device-made key's product differs from the CPU engine's"
        );
        let err = got
            .iter()
            .enumerate()
            .map(|(j, v)| (v - x[j] * y[j]).abs())
            .fold(0.0f64, f64::max);
        assert!(err < 1e-3, "x * y decrypts within 1e-3, max error {err}");
    }

    /// The CUDA backend's fused rotate / NTT / multiply / add decrypts to the CPU engine's
    /// result bit for bit, with and without a key and an accumulator, and its result is a
    /// cuda:0 value.
    #[test]
    #[cfg(feature = "cuda")]
    fn cuda_rotate_multiply_accumulate_equals_the_cpu_engines() {
        let Some(gpu) = cuda_or_skip() else { return };
        let cpu = Engine::open(DeviceChoice::Cpu, DEFAULT_PRESET, DEFAULT_SEED).expect("cpu");
        let (g, c) = (&gpu.engine, &cpu.engine);
        let (col, diag, key) = fused_inputs(c, 5);
        let run = |e: &Engine| {
            let a = e
                .rotate_multiply_accumulate(&col, None, &diag, None)
                .expect("first");
            let b = e
                .rotate_multiply_accumulate(&col, Some(&key), &diag, Some(&a))
                .expect("second");
            (
                a.location(),
                e.decrypt_message(&e.ntt_domain_to_coefficient_domain(&b).expect("intt"))
                    .expect("decrypt"),
            )
        };
        let (gl, got) = run(g);
        let (_, want) = run(c);
        assert_eq!(gl, ResidencyLocation::Cuda(0));
        assert!(
            got.iter()
                .zip(&want)
                .all(|(p, q)| p.to_bits() == q.to_bits()),
            "the device's fused step differs from the CPU engine's"
        );
    }

    /// The CUDA backend's hoisted rotations decrypt to the CPU engine's results bit for bit
    /// (same seed, same keys, a CPU-made ciphertext as input).
    #[test]
    #[cfg(feature = "cuda")]
    fn cuda_hoisted_rotations_equal_the_cpu_engines() {
        let Some(gpu) = cuda_or_skip() else { return };
        let cpu = Engine::open(DeviceChoice::Cpu, DEFAULT_PRESET, DEFAULT_SEED).expect("cpu");
        let (g, c) = (&gpu.engine, &cpu.engine);
        let n = c.num_slots();
        let m: Vec<f64> = (0..n).map(|j| 0.01 * (0.03 * j as f64).sin()).collect();
        let ct = c.encrypt_message(&m).expect("encrypt");
        let keys: Vec<RotationKey> = [2, -3, 17]
            .into_iter()
            .map(|step| c.create_rotation_key(step, c.secret_key()).expect("key"))
            .collect();
        let refs: Vec<&RotationKey> = keys.iter().collect();
        let want = c.rotate_many_with_keys(&ct, &refs).expect("cpu hoisted");
        let got = g.rotate_many_with_keys(&ct, &refs).expect("cuda hoisted");
        assert_eq!(got.len(), 3);
        for (i, (a, b)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                a.location(),
                ResidencyLocation::Cuda(0),
                "result {i} stays on cuda:0"
            );
            let (x, y) = (
                g.decrypt_message(a).expect("decrypt gpu"),
                c.decrypt_message(b).expect("decrypt cpu"),
            );
            assert!(
                x.iter().zip(&y).all(|(p, q)| p.to_bits() == q.to_bits()),
                "result {i} differs from the CPU engine's"
            );
        }
    }
}
