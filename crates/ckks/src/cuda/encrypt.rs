//! Device encode/decode and the counter-based encryption sampler of [`CudaEngine`]
//! (`kernels/encode.cu`, a second PTX module; decision 0520).
//!
//! * `encrypt_message`: the message goes up once through a pinned staging slot; one launch
//!   runs the first half of the encoding FFT and the ChaCha20 sampler (v lifted to every
//!   limb, e0, e1), one launch the second half with scale and round, then the forward NTT of
//!   v, the products with the public key, the inverse NTT and the additions of e0, e1 and p
//!   (the engine's NTT launches in between). No host synchronisation.
//! * `decrypt_message`: the phase `c0 + INTT(NTT(c1)·s)` on the two trailing Q rows, the
//!   centred reconstruction fused into the first half of the decoding FFT, the second half
//!   with the slot gather and `/ scale`, and one download of the N/2 real slots through a
//!   pinned staging slot.
//! * `encrypt_complex_message` / `decrypt_complex_message`: the same kernels with complex
//!   slots, staged and downloaded as (re, im) pairs.
//!
//! Every word equals the CPU engine's: the sampler is the CPU's
//! [`EncryptionSamples::from_key`](crate::sampling::EncryptionSamples::from_key) and the FFT
//! performs the CPU `Encoder`'s f64 operations in the same order.

use std::sync::atomic::{AtomicUsize, Ordering};

use cust::event::{Event, EventFlags};
use cust::memory::{DeviceBuffer, LockedBuffer};
use cust::module::Module;
use cust::stream::Stream;
use num_complex::Complex64;
use parking_lot::Mutex;

use super::{
    dev_ptr, drv, graphs, launch_raw, Arg, CudaBackendError, CudaEngine, GpuCiphertext,
    GpuPlaintext, GpuPublicKey, GpuSecretKey, GpuSwitchKey, Kernel, Result, KERNEL_N,
};
use crate::arith::Modulus;
use crate::context::Context;
use crate::engine::valid_scale;
use crate::error::CkksError;
use crate::sampling::cdt_table;
use crate::values::{prime_ids, Domain, ModulusBasis, Plaintext, PlaintextRepresentation};

/// PTX of `kernels/encode.cu`, embedded at build time.
const ENCODE_PTX: &str = include_str!("../../../../kernels/ptx/encode.ptx");

/// The kernels of `kernels/encode.cu`, in the order of [`EncK`].
const ENC_KERNELS: [&str; 10] = [
    "enc_rows_sample",
    "enc_cols",
    "enc_mul_pk",
    "enc_add_err",
    "dec_mul_s",
    "dec_rows",
    "dec_cols",
    "enc_lift",
    "ksk_sample",
    "ksk_finish",
];

/// A kernel of [`ENC_KERNELS`] by position.
#[derive(Clone, Copy, Debug)]
enum EncK {
    RowsSample = 0,
    Cols,
    MulPk,
    AddErr,
    MulS,
    DecRows,
    DecCols,
    Lift,
    KskSample,
    KskFinish,
}

/// Threads per block of the FFT and sampler kernels (`E_THREADS`).
const E_THREADS: u32 = 512;
/// Points per FFT tile (`E_TILE_WORDS`): 8 rows or columns of 128.
const E_TILE_POINTS: usize = 1024;
/// Blocks of one FFT pass (N / 1024 row tiles, or 128 / 8 column tiles).
const FFT_BLOCKS: u32 = (KERNEL_N / E_TILE_POINTS) as u32;
/// Active sampler threads per block of `enc_rows_sample` (`SAMPLER_PER_BLOCK`).
const SAMPLER_PER_BLOCK: u32 = 128;
/// Sampler blocks: 3 streams x N/8 ChaCha20 blocks, one per active thread.
const SAMPLER_BLOCKS: u32 = (3 * KERNEL_N / 8) as u32 / SAMPLER_PER_BLOCK;
/// Threads per block of the elementwise kernels (`EW_THREADS`).
const EW: u32 = 256;
/// `slot_of` flag of a conjugate point (`CONJ_BIT`).
const CONJ_BIT: u32 = 0x8000_0000;
/// Pinned staging slots (each N words) shared by the engine's calls, used round-robin.
const STAGING_SLOTS: usize = 4;

/// One pinned host buffer of N words and the event that says when the device is done with it.
struct StagingSlot {
    host: LockedBuffer<u64>,
    done: Event,
    pending: bool,
}

/// The second module and its tables, uploaded once per engine.
pub(super) struct EncodeState {
    kernels: [Kernel; ENC_KERNELS.len()],
    // Owns the code behind `kernels`.
    _module: Module,
    /// Per prime id: (q, -q^-1 mod 2^64, 2^128 mod q, floor(2^64 / q)).
    primes: DeviceBuffer<u64>,
    slot_of: DeviceBuffer<u32>,
    roots: DeviceBuffer<f64>,
    twist: DeviceBuffer<f64>,
    cdt: DeviceBuffer<u64>,
    staging: Vec<Mutex<StagingSlot>>,
    next_slot: AtomicUsize,
    /// Centred reconstruction from the two trailing Q primes a, b: a^-1 mod b and its Shoup
    /// constant, D = a·b and floor(D / 2) as (hi, lo) words.
    recon: [u64; 6],
    /// Key generation: P mod q per QP row (0 on the P rows, which no digit holds).
    p_mod_q: DeviceBuffer<u64>,
    /// Key generation: per digit, bit r set when prime r belongs to the digit.
    digit_mask: DeviceBuffer<u32>,
    /// Digits of a key-switching key.
    digits: usize,
}

impl std::fmt::Debug for EncodeState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EncodeState({} staging slots)", self.staging.len())
    }
}

/// `ksk_finish`'s P mod q per QP row: the context's values on the Q rows, 0 on the P rows.
fn keygen_p_mod_q(context: &Context) -> Vec<u64> {
    let rows = context.tables.len();
    (0..rows)
        .map(|r| context.p_mod_q.get(r).copied().unwrap_or(0))
        .collect()
}

/// `ksk_finish`'s digit masks: bit r of mask d set when prime r belongs to digit d.
fn keygen_digit_masks(context: &Context) -> Vec<u32> {
    context
        .digits
        .iter()
        .map(|ids| ids.iter().fold(0u32, |m, &r| m | (1u32 << r)))
        .collect()
}

/// -q^-1 mod 2^64 (q odd), by Newton iteration.
fn neg_inv64(q: u64) -> u64 {
    let mut inv: u64 = 1;
    for _ in 0..7 {
        inv = inv.wrapping_mul(2u64.wrapping_sub(q.wrapping_mul(inv)));
    }
    inv.wrapping_neg()
}

impl EncodeState {
    /// Loads `kernels/encode.cu` into the current context and uploads the tables of
    /// `context` (the engine calls this after making its context current).
    pub(super) fn new(context: &Context) -> Result<Self> {
        const OP: &str = "CudaEngine::new (encode module)";
        let n = context.n;
        let module = drv(OP, Module::from_ptx(ENCODE_PTX, &[]))?;
        let mut kernels = [Kernel(std::ptr::null_mut()); ENC_KERNELS.len()];
        for (slot, name) in kernels.iter_mut().zip(ENC_KERNELS) {
            *slot = Kernel(drv(OP, module.get_function(name))?.to_raw());
        }
        let mut primes = Vec::with_capacity(4 * context.tables.len());
        for t in &context.tables {
            let q = t.modulus().value();
            let r = ((1u128 << 64) % u128::from(q)) as u64;
            let r2 = (u128::from(r) * u128::from(r) % u128::from(q)) as u64;
            let red_wp = ((1u128 << 64) / u128::from(q)) as u64;
            primes.extend_from_slice(&[q, neg_inv64(q), r2, red_wp]);
        }
        let enc = &context.encoder;
        let mut slot_of = vec![u32::MAX; n];
        for (s, &e) in enc.exponents().iter().enumerate() {
            slot_of[((e - 1) / 2) as usize] = s as u32;
            slot_of[((2 * n as u64 - e - 1) / 2) as usize] = s as u32 | CONJ_BIT;
        }
        let pairs = |z: &[Complex64]| -> Vec<f64> { z.iter().flat_map(|c| [c.re, c.im]).collect() };
        let nq = context.nq;
        let (a, b) = (
            context.config.q_primes[nq - 2],
            context.config.q_primes[nq - 1],
        );
        let mb = Modulus::new(b).ok_or_else(|| CudaBackendError::Unsupported {
            op: OP,
            reason: format!("{b} is not a usable modulus"),
        })?;
        let ainv = mb.inv(a % b).unwrap_or(0);
        let ainv_wp = ((u128::from(ainv) << 64) / u128::from(b)) as u64;
        let d = u128::from(a) * u128::from(b);
        let h = d / 2;
        let staging = (0..STAGING_SLOTS)
            .map(|_| {
                Ok(Mutex::new(StagingSlot {
                    host: drv(OP, LockedBuffer::new(&0u64, n))?,
                    done: drv(OP, Event::new(EventFlags::DISABLE_TIMING))?,
                    pending: false,
                }))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            kernels,
            _module: module,
            primes: drv(OP, DeviceBuffer::from_slice(&primes))?,
            slot_of: drv(OP, DeviceBuffer::from_slice(&slot_of))?,
            roots: drv(OP, DeviceBuffer::from_slice(&pairs(enc.roots())))?,
            twist: drv(OP, DeviceBuffer::from_slice(&pairs(enc.twist())))?,
            cdt: drv(
                OP,
                DeviceBuffer::from_slice(&cdt_table(context.config.sigma)),
            )?,
            staging,
            next_slot: AtomicUsize::new(0),
            recon: [
                ainv,
                ainv_wp,
                (d >> 64) as u64,
                d as u64,
                (h >> 64) as u64,
                h as u64,
            ],
            p_mod_q: drv(OP, DeviceBuffer::from_slice(&keygen_p_mod_q(context)))?,
            digit_mask: drv(OP, DeviceBuffer::from_slice(&keygen_digit_masks(context)))?,
            digits: context.digits.len(),
        })
    }

    /// The next staging slot, once the device has finished with its previous copy.
    fn slot(&self, op: &'static str) -> Result<parking_lot::MutexGuard<'_, StagingSlot>> {
        let i = self.next_slot.fetch_add(1, Ordering::Relaxed) % self.staging.len();
        let mut slot = self.staging[i].lock();
        if slot.pending {
            drv(op, slot.done.synchronize())?;
            slot.pending = false;
        }
        Ok(slot)
    }
}

/// The slots of a message for [`CudaEngine::encode_for_multiplication`] and
/// [`CudaEngine::encode_for_addition`]: real values (imaginary parts zero), or complex ones; at
/// most N/2, zero-padded. `&[f64]`, `&Vec<f64>`, `&[Complex64]` and `&Vec<Complex64>` convert
/// into it.
#[derive(Clone, Copy, Debug)]
pub enum SlotValues<'a> {
    /// Real slots.
    Real(&'a [f64]),
    /// Complex slots.
    Complex(&'a [Complex64]),
}

impl<'a> From<&'a [f64]> for SlotValues<'a> {
    fn from(m: &'a [f64]) -> Self {
        Self::Real(m)
    }
}

impl<'a> From<&'a Vec<f64>> for SlotValues<'a> {
    fn from(m: &'a Vec<f64>) -> Self {
        Self::Real(m)
    }
}

impl<'a> From<&'a [Complex64]> for SlotValues<'a> {
    fn from(m: &'a [Complex64]) -> Self {
        Self::Complex(m)
    }
}

impl<'a> From<&'a Vec<Complex64>> for SlotValues<'a> {
    fn from(m: &'a Vec<Complex64>) -> Self {
        Self::Complex(m)
    }
}

impl SlotValues<'_> {
    fn len(self) -> usize {
        match self {
            Self::Real(m) => m.len(),
            Self::Complex(m) => m.len(),
        }
    }

    /// A bound on Σ|m_s| (Σ|re| + |im| for complex slots); NaN or infinity propagate.
    fn abs_sum(self) -> f64 {
        match self {
            Self::Real(m) => abs_sum(m),
            Self::Complex(m) => m.iter().map(|z| z.re.abs() + z.im.abs()).sum(),
        }
    }

    /// `MessageTooLong` past N/2 slots (the CPU encoder's error).
    fn check_len(self) -> std::result::Result<(), CkksError> {
        let slots = KERNEL_N / 2;
        if self.len() > slots {
            return Err(CkksError::MessageTooLong {
                len: self.len(),
                slots,
            });
        }
        Ok(())
    }

    /// The slots as the CPU encoder takes them.
    fn to_complex(self) -> Vec<Complex64> {
        match self {
            Self::Real(m) => m.iter().map(|&x| Complex64::new(x, 0.0)).collect(),
            Self::Complex(m) => m.to_vec(),
        }
    }

    /// Writes the slots' f64 bit patterns to `h` (real slots, or (re, im) pairs): the
    /// words written.
    fn stage(self, h: &mut [u64]) -> usize {
        match self {
            Self::Real(m) => {
                for (o, x) in h.iter_mut().zip(m) {
                    *o = x.to_bits();
                }
                m.len()
            }
            Self::Complex(m) => {
                for (o, z) in h.chunks_exact_mut(2).zip(m) {
                    o[0] = z.re.to_bits();
                    o[1] = z.im.to_bits();
                }
                2 * m.len()
            }
        }
    }
}

/// The encode FFT of one message (device addresses): `len` slots at `msg` (pairs when
/// `cplx` = 1), the FFT scratch, and the int64 coefficients out at `p`, at `scale`.
#[derive(Clone, Copy, Default)]
struct FftJob {
    msg: u64,
    len: u32,
    cplx: u32,
    fft: u64,
    p: u64,
    scale: f64,
}

/// The encryption sampler's work: the ChaCha20 key, v lifted to `limbs` rows from prime id
/// `prime_off` at `vrows`, e0 and e1 at `err`.
#[derive(Clone, Copy, Default)]
struct SamplerJob {
    key: [u64; 4],
    prime_off: u32,
    limbs: u32,
    vrows: u64,
    err: u64,
}

/// Where the plaintext of a device encryption comes from.
#[derive(Clone, Copy)]
enum Source<'a> {
    /// Slot values, encoded on the device at the default scale.
    Message(SlotValues<'a>),
    /// Integer coefficients (as int64 words) encoded on the host.
    Coefficients(&'a [u64]),
}

/// The sampling key of a device encryption: given by the caller, or drawn from the engine's
/// ChaCha20 stream after the call's checks, allocations and upload have succeeded.
#[derive(Clone, Copy)]
pub(super) enum SamplingKey<'a> {
    /// The caller's key (the `*_with_sampling_key` entry points).
    Given(&'a [u8; 32]),
    /// One key from the engine's stream, drawn only once nothing can refuse the call any more.
    Engine,
}

impl CudaEngine {
    fn launch_enc(
        &self,
        op: &'static str,
        kernel: EncK,
        grid: (u32, u32, u32),
        block: u32,
        stream: &Stream,
        args: &[Arg],
    ) -> Result<()> {
        launch_raw(
            &self.graphs,
            op,
            self.enc.kernels[kernel as usize],
            ENC_KERNELS[kernel as usize],
            grid,
            block,
            stream,
            args,
        )
    }

    /// Fills a pinned staging slot with `fill` (which returns how many words it wrote, at
    /// most N) and copies those words to `dst` on `stream`.
    fn stage_up(
        &self,
        op: &'static str,
        dst: u64,
        stream: &Stream,
        fill: impl FnOnce(&mut [u64]) -> usize,
    ) -> Result<()> {
        let mut slot = self.enc.slot(op)?;
        let words = fill(slot.host.as_mut_slice()).min(KERNEL_N);
        if words == 0 {
            return Ok(()); // an empty message: nothing to copy, the kernel reads no slot
        }
        // SAFETY: `dst` is a fresh device allocation of at least `words` words; the source is
        // page-locked memory owned by the slot, which is not written again before `done`
        // (recorded right after the copy on the same stream) has completed.
        let rc = unsafe {
            cust::sys::cuMemcpyHtoDAsync_v2(
                dst,
                slot.host.as_ptr().cast(),
                words * 8,
                stream.as_inner(),
            )
        };
        if rc != cust::sys::cudaError_enum::CUDA_SUCCESS {
            return Err(CudaBackendError::Unsupported {
                op,
                reason: format!("host-to-device copy failed: {rc:?}"),
            });
        }
        drv(op, slot.done.record(stream))?;
        slot.pending = true;
        Ok(())
    }

    /// Public-key encryption of real slots (at most N/2, zero-padded) at level 0 and the
    /// default scale with an explicit sampling key: encode and sampling on the device, same
    /// words as the CPU engine's `encrypt_with_sampling_key(&encode(message, 0, None), key)`.
    /// No host synchronisation (the message is staged through pinned memory).
    #[tracing::instrument(
        name = "ckks.encrypt_message_with_sampling_key",
        level = "debug",
        skip_all,
        fields(location = %self.location(), slots = message.len(), stream = ?stream.as_inner()),
        err(level = "debug")
    )]
    pub fn encrypt_message_with_sampling_key(
        &self,
        message: &[f64],
        pk: &GpuPublicKey,
        key: &[u8; 32],
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        self.encrypt_slots(
            "encrypt_message",
            SlotValues::Real(message),
            pk,
            SamplingKey::Given(key),
            stream,
        )
    }

    /// Encryption of `message` at level 0 and the default scale with `key`: encoded on the
    /// device when a bound shows every coefficient fits, else by the CPU encoder on the host
    /// (which reports `CoefficientOutOfRange` exactly as the CPU engine does).
    pub(super) fn encrypt_slots(
        &self,
        op: &'static str,
        message: SlotValues<'_>,
        pk: &GpuPublicKey,
        key: SamplingKey<'_>,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        message.check_len()?;
        let scale = self.default_scale;
        if let Some(words) = self.host_encoding(message, scale)? {
            return self.encrypt_on_device(
                op,
                0,
                scale,
                pk,
                key,
                Source::Coefficients(&words),
                stream,
            );
        }
        self.encrypt_on_device(op, 0, scale, pk, key, Source::Message(message), stream)
    }

    /// Public-key encryption of complex slots (at most N/2, zero-padded) at level 0 and the
    /// default scale with an explicit sampling key: as
    /// [`encrypt_message_with_sampling_key`](Self::encrypt_message_with_sampling_key), the
    /// slots staged as (re, im) pairs; the same words as the CPU engine's
    /// `encrypt_with_sampling_key(&encode_complex(message, 0, None), key)`.
    #[tracing::instrument(
        name = "ckks.encrypt_complex_message_with_sampling_key",
        level = "debug",
        skip_all,
        fields(location = %self.location(), slots = message.len(), stream = ?stream.as_inner()),
        err(level = "debug")
    )]
    pub fn encrypt_complex_message_with_sampling_key(
        &self,
        message: &[Complex64],
        pk: &GpuPublicKey,
        key: &[u8; 32],
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        self.encrypt_slots(
            "encrypt_complex_message",
            SlotValues::Complex(message),
            pk,
            SamplingKey::Given(key),
            stream,
        )
    }

    /// [`CudaEngine::encrypt_complex_message_with_sampling_key`] with one sampling key from
    /// the engine's ChaCha20 stream.
    #[tracing::instrument(
        name = "ckks.encrypt_complex_message",
        level = "debug",
        skip_all,
        fields(location = %self.location(), slots = message.len(), stream = ?stream.as_inner()),
        err(level = "debug")
    )]
    pub fn encrypt_complex_message(
        &self,
        message: &[Complex64],
        pk: &GpuPublicKey,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        self.encrypt_slots(
            "encrypt_complex_message",
            SlotValues::Complex(message),
            pk,
            SamplingKey::Engine,
            stream,
        )
    }

    /// Decrypts a 2-component coefficient-domain ciphertext and decodes its N/2 complex slots
    /// on the device, as [`CudaEngine::decrypt_message`] does the real parts; one download of
    /// N f64 (waits for `stream`). Bit for bit the CPU engine's `decrypt_complex_message`.
    #[tracing::instrument(
        name = "ckks.decrypt_complex_message",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = ct.level(),
            bytes = ct.nbytes(),
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn decrypt_complex_message(
        &self,
        ct: &GpuCiphertext,
        sk: &GpuSecretKey,
        stream: &Stream,
    ) -> Result<Vec<Complex64>> {
        let words = self.decrypt_and_decode("decrypt_complex_message", ct, sk, true, stream)?;
        Ok(words
            .chunks_exact(2)
            .map(|z| Complex64::new(z[0], z[1]))
            .collect())
    }

    /// Public-key encryption of an integer-coefficient plaintext (host) at its level with an
    /// explicit sampling key: `p` goes up through pinned staging, `v`, `e0`, `e1` are sampled
    /// on the device (the CPU engine's `encrypt_with_sampling_key` words).
    #[tracing::instrument(
        name = "ckks.encrypt_with_sampling_key",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = pt.level(),
            bytes = pt.nbytes(),
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn encrypt_with_sampling_key(
        &self,
        pt: &Plaintext,
        pk: &GpuPublicKey,
        key: &[u8; 32],
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        self.encrypt_plaintext(pt, pk, SamplingKey::Given(key), stream)
    }

    /// [`CudaEngine::encrypt_with_sampling_key`] with the key given or drawn from the
    /// engine's stream once every check has passed.
    pub(super) fn encrypt_plaintext(
        &self,
        pt: &Plaintext,
        pk: &GpuPublicKey,
        key: SamplingKey<'_>,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "encrypt";
        self.check_context(OP, pt.context)?;
        if pt.representation != PlaintextRepresentation::IntegerCoefficients {
            return Err(CkksError::RepresentationMismatch {
                op: OP,
                expected: PlaintextRepresentation::IntegerCoefficients.name(),
                actual: pt.representation.name(),
            }
            .into());
        }
        pt.words.check_host(OP)?;
        if pt.words.len() != KERNEL_N {
            return Err(CudaBackendError::Unsupported {
                op: OP,
                reason: "the plaintext must hold N coefficients".into(),
            });
        }
        self.encrypt_on_device(
            OP,
            pt.level,
            pt.scale,
            pk,
            key,
            Source::Coefficients(pt.words.as_slice()),
            stream,
        )
    }

    /// Encodes `message` at `level` and `scale` (default: the engine's) into the operand of
    /// [`multiply_plaintext`](Self::multiply_plaintext): RNS rows of `basis`, NTT domain, on
    /// the device. The same words as the CPU engine's
    /// `prepare_plaintext_for_multiplication(&encode_complex(message, level, scale), basis)`,
    /// and its errors (`InvalidLevel`, `InvalidScale`, `MessageTooLong`,
    /// `CoefficientOutOfRange`). The slots go up through a pinned staging slot; no host
    /// synchronisation. A message whose bound (2/N)·Σ|m_s|·scale reaches 2^62 is encoded by
    /// the CPU encoder on the host instead (decision 0521).
    #[tracing::instrument(
        name = "ckks.encode_for_multiplication",
        level = "debug",
        skip_all,
        fields(location = %self.location(), level = level, basis = ?basis, stream = ?stream.as_inner()),
        err(level = "debug")
    )]
    pub fn encode_for_multiplication<'a>(
        &self,
        message: impl Into<SlotValues<'a>>,
        level: usize,
        scale: Option<f64>,
        basis: ModulusBasis,
        stream: &Stream,
    ) -> Result<GpuPlaintext> {
        let op = "encode_for_multiplication";
        self.encode_rns(op, message.into(), level, scale, basis, true, stream)
    }

    /// [`encode_for_multiplication`](Self::encode_for_multiplication) without the NTT: the
    /// operand of [`add_plaintext`](Self::add_plaintext) (RNS rows of `basis`, coefficient
    /// domain), the CPU engine's
    /// `prepare_plaintext_for_addition(&encode_complex(message, level, scale), basis)`.
    #[tracing::instrument(
        name = "ckks.encode_for_addition",
        level = "debug",
        skip_all,
        fields(location = %self.location(), level = level, basis = ?basis, stream = ?stream.as_inner()),
        err(level = "debug")
    )]
    pub fn encode_for_addition<'a>(
        &self,
        message: impl Into<SlotValues<'a>>,
        level: usize,
        scale: Option<f64>,
        basis: ModulusBasis,
        stream: &Stream,
    ) -> Result<GpuPlaintext> {
        let op = "encode_for_addition";
        self.encode_rns(op, message.into(), level, scale, basis, false, stream)
    }

    /// `None` when the device may encode `message` at `scale`, else the CPU encoder's int64
    /// coefficients (as words) or its error. |a_k·Δ| <= (2/N)·Σ|m_s|·Δ: below 2^62 every
    /// rounded coefficient fits int64 with room for the FFT's rounding; otherwise (or for NaN
    /// and infinities) the host encodes, and reports `CoefficientOutOfRange` exactly as the
    /// CPU engine does.
    fn host_encoding(&self, message: SlotValues<'_>, scale: f64) -> Result<Option<Vec<u64>>> {
        let bound = message.abs_sum() * 2.0 / KERNEL_N as f64 * scale;
        if bound < 4.611_686_018_427_388e18 {
            // 2^62 (false for NaN)
            return Ok(None);
        }
        let coeffs = self.encoder.encode(&message.to_complex(), scale)?;
        Ok(Some(coeffs.into_iter().map(|c| c as u64).collect()))
    }

    /// Launches `enc_rows_sample` with the FFT's row blocks (`fft`) and/or the sampler's blocks
    /// (`sampler`), then, with `fft`, `enc_cols`: the int64 coefficients of the message at
    /// `fft.scale` in `fft.p`.
    fn launch_encode(
        &self,
        op: &'static str,
        fft: Option<FftJob>,
        sampler: Option<SamplerJob>,
        stream: &Stream,
    ) -> Result<()> {
        let e = &self.enc;
        let fft_blocks = if fft.is_some() { FFT_BLOCKS } else { 0 };
        let sampler_blocks = if sampler.is_some() { SAMPLER_BLOCKS } else { 0 };
        // Arguments of the half that does not run are never read.
        let f = fft.unwrap_or_default();
        let z = sampler.unwrap_or_default();
        self.launch_enc(
            op,
            EncK::RowsSample,
            (fft_blocks + sampler_blocks, 1, 1),
            E_THREADS,
            stream,
            &[
                Arg::U64(f.msg),
                Arg::U32(f.len),
                Arg::U32(f.cplx),
                Arg::U64(dev_ptr32(&e.slot_of)),
                Arg::U64(dev_ptr_f(&e.roots)),
                Arg::U64(f.fft),
                Arg::U32(fft_blocks),
                Arg::U64(z.key[0]),
                Arg::U64(z.key[1]),
                Arg::U64(z.key[2]),
                Arg::U64(z.key[3]),
                Arg::U64(dev_ptr(&e.cdt)),
                Arg::U64(dev_ptr(&e.primes)),
                Arg::U32(z.prime_off),
                Arg::U32(z.limbs),
                Arg::U64(z.vrows),
                Arg::U64(z.err),
            ],
        )?;
        if fft.is_none() {
            return Ok(());
        }
        self.launch_enc(
            op,
            EncK::Cols,
            (FFT_BLOCKS, 1, 1),
            E_THREADS,
            stream,
            &[
                Arg::U64(f.fft),
                Arg::U64(dev_ptr_f(&e.roots)),
                Arg::U64(dev_ptr_f(&e.twist)),
                Arg::U64((1.0 / KERNEL_N as f64).to_bits()),
                Arg::U64(f.scale.to_bits()),
                Arg::U64(f.p),
            ],
        )
    }

    /// Encode (device FFT, or the host encoder past the bound), lift to the RNS rows of
    /// `basis` at `level` (`enc_lift`) and, when `ntt`, the forward NTT: three or four
    /// launches as one chain graph.
    #[allow(clippy::too_many_arguments)]
    fn encode_rns(
        &self,
        op: &'static str,
        message: SlotValues<'_>,
        level: usize,
        scale: Option<f64>,
        basis: ModulusBasis,
        ntt: bool,
        stream: &Stream,
    ) -> Result<GpuPlaintext> {
        self.check_level(op, level)?;
        let scale = valid_scale(op, scale.unwrap_or(self.default_scale))?;
        message.check_len()?;
        let n = KERNEL_N;
        let ids = prime_ids(level, basis, self.nq, self.moduli.len() - self.nq);
        let rows = ids.len();
        let host_words = self.host_encoding(message, scale)?;
        // scratch: FFT (N complex) | message (N words) | p (N)
        let scratch = self.alloc(op, 2 * n + n + n, stream)?;
        let base = dev_ptr(&scratch);
        let at = |words: usize| base + (words * 8) as u64;
        let (fft, msg, p) = (at(0), at(2 * n), at(3 * n));
        let out = self.alloc(op, rows * n, stream)?;
        match &host_words {
            None => self.stage_up(op, msg, stream, |h| message.stage(h))?,
            Some(w) => self.stage_up(op, p, stream, |h| {
                h[..w.len()].copy_from_slice(w);
                w.len()
            })?,
        }
        let e = &self.enc;
        let chain = self.start_chain();
        if host_words.is_none() {
            let job = FftJob {
                msg,
                len: message.len() as u32,
                cplx: u32::from(matches!(message, SlotValues::Complex(_))),
                fft,
                p,
                scale,
            };
            self.launch_encode(op, Some(job), None, stream)?;
        }
        if ntt {
            // The int64 coefficients lifted to every row in the NTT's loads (no lifted rows
            // in between: one launch and 2 x rows x N words of traffic fewer).
            self.ntt_forward_signed_rows(op, p, dev_ptr(&out), level, rows, 1, rows * n, stream)?;
        } else {
            self.launch_enc(
                op,
                EncK::Lift,
                ((n as u32) / EW, rows as u32, 1),
                EW,
                stream,
                &[
                    Arg::U64(p),
                    Arg::U64(dev_ptr(&out)),
                    Arg::U64(dev_ptr(&e.primes)),
                    Arg::U32(level as u32),
                ],
            )?;
        }
        if let Some(rec) = chain {
            self.submit_chain(op, rec, stream)?;
        }
        self.recycle(op, scratch, stream)?;
        Ok(GpuPlaintext {
            buf: self.owned(out),
            device: self.device,
            context: self.context_id,
            level,
            scale,
            domain: if ntt {
                Domain::Ntt
            } else {
                Domain::Coefficient
            },
            basis,
            prime_ids: ids,
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn encrypt_on_device(
        &self,
        op: &'static str,
        level: usize,
        scale: f64,
        pk: &GpuPublicKey,
        key: SamplingKey<'_>,
        source: Source<'_>,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        self.check_context(op, pk.context)?;
        self.check_level(op, level)?;
        if pk.rows != self.nq {
            return Err(CudaBackendError::Unsupported {
                op,
                reason: format!("public key of {} rows", pk.rows),
            });
        }
        let n = KERNEL_N;
        let limbs = self.nq - level;
        // scratch: v rows | v̂ rows | e0 e1 p | FFT (N complex) | message (N/2 slots: N words
        // as (re, im) pairs)
        let scratch = self.alloc(op, 2 * limbs * n + 3 * n + 2 * n + n, stream)?;
        let out = self.alloc(op, 2 * limbs * n, stream)?;
        let base = dev_ptr(&scratch);
        let at = |words: usize| base + (words * 8) as u64;
        let (vrows, vhat) = (at(0), at(limbs * n));
        let err = at(2 * limbs * n);
        let p = at(2 * limbs * n + 2 * n);
        let fft = at(2 * limbs * n + 3 * n);
        let msg = at(2 * limbs * n + 5 * n);
        let job = match source {
            Source::Message(m) => {
                self.stage_up(op, msg, stream, |h| m.stage(h))?;
                Some(FftJob {
                    msg,
                    len: m.len() as u32,
                    cplx: u32::from(matches!(m, SlotValues::Complex(_))),
                    fft,
                    p,
                    scale,
                })
            }
            Source::Coefficients(w) => {
                self.stage_up(op, p, stream, |h| {
                    h[..w.len()].copy_from_slice(w);
                    w.len()
                })?;
                None
            }
        };
        // Every check, both allocations and the upload are behind us: only now is a key drawn
        // from the engine's stream, so a refused call leaves the stream where it was.
        let key = match key {
            SamplingKey::Given(k) => *k,
            SamplingKey::Engine => self.rng.lock().encryption_key(),
        };
        let e = &self.enc;
        // The six launches after the upload go out as one chain graph (decision 0508).
        let chain = self.start_chain();
        let sampler = SamplerJob {
            key: std::array::from_fn(|i| {
                u64::from_le_bytes(key[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]))
            }),
            prime_off: level as u32,
            limbs: limbs as u32,
            vrows,
            err,
        };
        let fft = job.is_some();
        self.launch_encode(op, job, Some(sampler), stream)?;
        // In a chain, the FFT's column pass (the last node so far, the message's p) runs beside
        // v's NTT, v̂·pk and the inverse NTT, which need only the sampler's v (the node
        // before it); enc_add_err joins the two branches.
        let cols = if fft {
            graphs::recorded().and_then(|len| len.checked_sub(1))
        } else {
            None
        };
        if let Some(c) = cols {
            graphs::next_after(c.checked_sub(1), None);
        }
        self.ntt_forward_raw(op, vrows, vhat, level, limbs, 1, stream)?;
        self.launch_enc(
            op,
            EncK::MulPk,
            ((n as u32) / EW, limbs as u32, 2),
            EW,
            stream,
            &[
                Arg::U64(vhat),
                Arg::U64(pk.buf.ptr()),
                Arg::U64(dev_ptr(&out)),
                Arg::U64(dev_ptr(&e.primes)),
                Arg::U32(level as u32),
                Arg::U32(pk.rows as u32),
            ],
        )?;
        self.ntt_inverse_raw(
            op,
            dev_ptr(&out),
            dev_ptr(&out),
            dev_ptr(&self.n_inv),
            level,
            limbs,
            2,
            stream,
        )?;
        graphs::next_after(None, cols);
        self.launch_enc(
            op,
            EncK::AddErr,
            ((n as u32) / EW, limbs as u32, 2),
            EW,
            stream,
            &[
                Arg::U64(dev_ptr(&out)),
                Arg::U64(err),
                Arg::U64(dev_ptr(&e.primes)),
                Arg::U32(level as u32),
            ],
        )?;
        if let Some(rec) = chain {
            self.submit_chain(op, rec, stream)?;
        }
        self.recycle(op, scratch, stream)?;
        Ok(GpuCiphertext {
            buf: self.owned(out),
            device: self.device,
            context: self.context_id,
            level,
            scale,
            domain: Domain::Coefficient,
            basis: ModulusBasis::Q,
            components: 2,
            prime_ids: (level..self.nq).collect(),
        })
    }

    /// Decrypts a 2-component coefficient-domain ciphertext and decodes the real parts of the
    /// N/2 slots on the device; one download of N/2 f64 (waits for `stream`). Bit for bit the
    /// CPU engine's `decrypt_message`.
    #[tracing::instrument(
        name = "ckks.decrypt_message_on_device",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = ct.level(),
            bytes = ct.nbytes(),
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn decrypt_message_on_device(
        &self,
        ct: &GpuCiphertext,
        sk: &GpuSecretKey,
        stream: &Stream,
    ) -> Result<Vec<f64>> {
        self.decrypt_and_decode("decrypt_message", ct, sk, false, stream)
    }

    /// Decrypts and decodes on the device: the N/2 slots' real parts (`complex` false) or
    /// their (re, im) pairs (N words), downloaded once (waits for `stream`).
    fn decrypt_and_decode(
        &self,
        op: &'static str,
        ct: &GpuCiphertext,
        sk: &GpuSecretKey,
        complex: bool,
        stream: &Stream,
    ) -> Result<Vec<f64>> {
        self.check_context(op, ct.context)?;
        self.check_context(op, sk.context)?;
        Self::need_domain(op, ct.domain, Domain::Coefficient)?;
        Self::need_components(op, ct.components, 2)?;
        let nq = self.nq;
        let limbs = ct.num_limbs();
        let first = ct.prime_ids[0];
        if ct.basis != ModulusBasis::Q || first + limbs != nq || limbs < 2 {
            return Err(CkksError::BasisMismatch {
                op,
                expected: ModulusBasis::Q,
                actual: ct.basis,
            }
            .into());
        }
        let n = KERNEL_N;
        let off = nq - 2;
        let row = |r: usize| (r * n * 8) as u64;
        let c0 = ct.ptr() + row(limbs - 2);
        let c1 = ct.ptr() + row(2 * limbs - 2);
        // Words out: the slots' real parts, or their (re, im) pairs.
        let words = if complex { n } else { n / 2 };
        // scratch: phase rows (2N) | FFT (N complex) | slots
        let scratch = self.alloc(op, 2 * n + 2 * n + words, stream)?;
        let tmp = dev_ptr(&scratch);
        let fft = tmp + row(2);
        let out = tmp + row(4);
        let e = &self.enc;
        // The five launches before the download go out as one chain graph (decision 0508).
        let chain = self.start_chain();
        self.ntt_forward_raw(op, c1, tmp, off, 2, 1, stream)?;
        self.launch_enc(
            op,
            EncK::MulS,
            ((n as u32) / EW, 2, 1),
            EW,
            stream,
            &[
                Arg::U64(tmp),
                Arg::U64(sk.buf.ptr()),
                Arg::U64(dev_ptr(&e.primes)),
                Arg::U32(off as u32),
            ],
        )?;
        self.ntt_inverse_raw(op, tmp, tmp, dev_ptr(&self.n_inv), off, 2, 1, stream)?;
        let r = e.recon;
        self.launch_enc(
            op,
            EncK::DecRows,
            (FFT_BLOCKS, 1, 1),
            E_THREADS,
            stream,
            &[
                Arg::U64(tmp),
                Arg::U64(c0),
                Arg::U64(dev_ptr(&e.primes)),
                Arg::U32(off as u32),
                Arg::U64(r[0]),
                Arg::U64(r[1]),
                Arg::U64(r[2]),
                Arg::U64(r[3]),
                Arg::U64(r[4]),
                Arg::U64(r[5]),
                Arg::U64(dev_ptr_f(&e.twist)),
                Arg::U64(dev_ptr_f(&e.roots)),
                Arg::U64(fft),
            ],
        )?;
        self.launch_enc(
            op,
            EncK::DecCols,
            (FFT_BLOCKS, 1, 1),
            E_THREADS,
            stream,
            &[
                Arg::U64(fft),
                Arg::U64(dev_ptr_f(&e.roots)),
                Arg::U64(dev_ptr32(&e.slot_of)),
                Arg::U64(ct.scale.to_bits()),
                Arg::U64(out),
                Arg::U32(u32::from(complex)),
            ],
        )?;
        if let Some(rec) = chain {
            self.submit_chain(op, rec, stream)?;
        }
        let mut slot = e.slot(op)?;
        // SAFETY: `out` holds `words` f64 written by dec_cols on `stream`; the destination is
        // the slot's page-locked buffer of N >= words words, held locked until the stream has
        // been synchronised below.
        let rc = unsafe {
            cust::sys::cuMemcpyDtoHAsync_v2(
                slot.host.as_mut_ptr().cast(),
                out,
                words * 8,
                stream.as_inner(),
            )
        };
        if rc != cust::sys::cudaError_enum::CUDA_SUCCESS {
            return Err(CudaBackendError::Unsupported {
                op,
                reason: format!("device-to-host copy failed: {rc:?}"),
            });
        }
        self.recycle(op, scratch, stream)?;
        drv(op, stream.synchronize())?;
        Ok(slot.host.as_slice()[..words]
            .iter()
            .map(|&w| f64::from_bits(w))
            .collect())
    }
}

/// `ksk_sample`'s parameters: the sampling key's four words, the CDT, the primes, digits,
/// rows, the key's words, the errors' scratch.
fn ksk_sample_args(
    key: [u64; 4],
    cdt: u64,
    primes: u64,
    digits: usize,
    rows: usize,
    out: u64,
    err: u64,
) -> [Arg; 10] {
    [
        Arg::U64(key[0]),
        Arg::U64(key[1]),
        Arg::U64(key[2]),
        Arg::U64(key[3]),
        Arg::U64(cdt),
        Arg::U64(primes),
        Arg::U32(digits as u32),
        Arg::U32(rows as u32),
        Arg::U64(out),
        Arg::U64(err),
    ]
}

/// `ksk_finish`'s parameters: the key's words, the secret key's rows, the primes, P mod q per
/// row, the digit masks, rows, the Galois element (0: relinearization).
fn ksk_finish_args(
    out: u64,
    sk: u64,
    primes: u64,
    p_mod_q: u64,
    digit_mask: u64,
    rows: usize,
    g: u64,
) -> [Arg; 7] {
    [
        Arg::U64(out),
        Arg::U64(sk),
        Arg::U64(primes),
        Arg::U64(p_mod_q),
        Arg::U64(digit_mask),
        Arg::U32(rows as u32),
        Arg::U64(g),
    ]
}

/// Threads of `ksk_sample` per launch block (`SAMPLE_THREADS`).
const KSK_SAMPLE_THREADS: u32 = 512;

impl CudaEngine {
    /// The key-switching key of Galois element `g` (0: the relinearization key) for the device
    /// secret key `sk`, made on the device on `stream` from the key's 32-byte sampling key
    /// (decision 0531): `ksk_sample` (the uniform `a` of every digit and row, the digits'
    /// Gaussian errors), the forward NTT of the errors onto every row of `b`, `ksk_finish`
    /// (`b − a·s`, plus `P·σ_g(s)` or `P·s²` on the digit's own rows). One chain graph, no host
    /// synchronisation. Word for word the CPU engine's key when `sampling_key` is the one that
    /// engine derives for (`sk`'s id, `g`).
    pub(super) fn generate_switch_key(
        &self,
        op: &'static str,
        sk: &GpuSecretKey,
        g: u64,
        sampling_key: &[u8; 32],
        stream: &Stream,
    ) -> Result<GpuSwitchKey> {
        self.check_context(op, sk.context)?;
        let n = KERNEL_N;
        let rows = self.moduli.len();
        let digits = self.enc.digits;
        if g != 0 && (g.is_multiple_of(2) || g >= 2 * n as u64) {
            return Err(CudaBackendError::Unsupported {
                op,
                reason: format!("{g} is not a Galois element of N = {n}"),
            });
        }
        // The key switch takes keys of one prime per digit (as `upload_ksk` checks), and
        // `ksk_finish`'s digit masks hold 32 rows.
        if digits != self.nq || rows > 32 {
            return Err(CudaBackendError::Unsupported {
                op,
                reason: format!("key of {digits} digits x {rows} rows"),
            });
        }
        let out = self.alloc(op, digits * 2 * rows * n, stream)?;
        let err = self.alloc(op, digits * n, stream)?;
        let (outp, errp) = (out.ptr(), err.ptr());
        let key: [u64; 4] = std::array::from_fn(|i| {
            u64::from_le_bytes(sampling_key[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]))
        });
        let e = &self.enc;
        let chain = self.start_chain();
        let threads = (digits * rows * n / 4 + digits * n / 8) as u32;
        self.launch_enc(
            op,
            EncK::KskSample,
            (threads.div_ceil(KSK_SAMPLE_THREADS), 1, 1),
            KSK_SAMPLE_THREADS,
            stream,
            &ksk_sample_args(
                key,
                dev_ptr(&e.cdt),
                dev_ptr(&e.primes),
                digits,
                rows,
                outp,
                errp,
            ),
        )?;
        // Digit d's signed error, the same row for every prime (in_ys = 0), lifted and
        // transformed onto component 0 of digit d (out_zs: one digit of the key).
        self.ntt_forward_signed_rows(op, errp, outp, 0, rows, digits, 2 * rows * n, stream)?;
        self.launch_enc(
            op,
            EncK::KskFinish,
            ((n as u32) / EW, rows as u32, digits as u32),
            EW,
            stream,
            &ksk_finish_args(
                outp,
                sk.buf.ptr(),
                dev_ptr(&e.primes),
                dev_ptr(&e.p_mod_q),
                dev_ptr32(&e.digit_mask),
                rows,
                g,
            ),
        )?;
        if let Some(rec) = chain {
            self.submit_chain(op, rec, stream)?;
        }
        self.recycle(op, err, stream)?;
        Ok(GpuSwitchKey {
            buf: self.owned(out),
            context: self.context_id,
            key_id: sk.key_id,
            digits,
            rows,
            galois_element: (g != 0).then_some(g),
        })
    }
}

/// Σ|x| with eight independent partial sums (no loop-carried add chain; the sum only bounds
/// the encoded coefficients, so its association does not matter). NaN or infinity propagate.
fn abs_sum(xs: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a += x.abs();
        }
    }
    let tail: f64 = chunks.remainder().iter().map(|x| x.abs()).sum();
    acc.iter().sum::<f64>() + tail
}

fn dev_ptr32(b: &DeviceBuffer<u32>) -> u64 {
    b.as_device_ptr().as_raw()
}

fn dev_ptr_f(b: &DeviceBuffer<f64>) -> u64 {
    b.as_device_ptr().as_raw()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complex_slots_stage_as_pairs_and_bound_by_both_parts() {
        let m = [Complex64::new(1.5, -2.0), Complex64::new(-0.25, 0.0)];
        let slots = SlotValues::Complex(&m);
        assert_eq!(slots.len(), 2);
        assert_eq!(slots.abs_sum(), 3.75);
        assert!(SlotValues::Complex(&[Complex64::new(0.0, f64::NAN)])
            .abs_sum()
            .is_nan());
        let mut h = [u64::MAX; 6];
        assert_eq!(slots.stage(&mut h), 4);
        let want = [1.5f64, -2.0, -0.25, 0.0].map(f64::to_bits);
        assert_eq!(h[..4], want);
        assert_eq!(h[4..], [u64::MAX; 2], "nothing past the pairs");
        assert_eq!(slots.to_complex(), m.to_vec());
        let full = vec![0.0; KERNEL_N / 2];
        assert_eq!(SlotValues::Real(&full).check_len(), Ok(()));
        let long = vec![Complex64::new(0.0, 0.0); KERNEL_N / 2 + 1];
        assert_eq!(
            SlotValues::from(&long).check_len(),
            Err(CkksError::MessageTooLong {
                len: KERNEL_N / 2 + 1,
                slots: KERNEL_N / 2
            })
        );
        let r = [0.5, -1.0];
        let mut h = [u64::MAX; 3];
        assert_eq!(SlotValues::Real(&r).stage(&mut h), 2);
        assert_eq!(h, [0.5f64.to_bits(), (-1.0f64).to_bits(), u64::MAX]);
        assert_eq!(
            SlotValues::Real(&r).to_complex(),
            vec![Complex64::new(0.5, 0.0), Complex64::new(-1.0, 0.0)]
        );
    }

    #[test]
    fn abs_sum_bounds_and_propagates_nan() {
        let xs: Vec<f64> = (0..1003)
            .map(|i| f64::from(i) * if i % 2 == 0 { 1.0 } else { -1.0 })
            .collect();
        assert_eq!(abs_sum(&xs), (0..1003).map(f64::from).sum::<f64>());
        assert!(abs_sum(&[1.0, f64::NAN]).is_nan());
        assert_eq!(abs_sum(&[]), 0.0);
    }

    #[test]
    fn montgomery_constants_are_right() {
        for q in [1_099_510_054_913u64, 1_152_921_504_606_846_883] {
            assert_eq!(q.wrapping_mul(neg_inv64(q)), u64::MAX);
        }
    }

    /// The `.param` types of kernel `entry` in the PTX, in order (`u64` / `u32`).
    fn ptx_params(entry: &str) -> Vec<String> {
        let start = ENCODE_PTX
            .find(&format!(".entry {entry}("))
            .unwrap_or_else(|| panic!("no entry {entry}"));
        let list = &ENCODE_PTX[start..];
        let list = &list[..list.find(')').unwrap_or(list.len())];
        list.lines()
            .filter_map(|l| l.trim().strip_prefix(".param ."))
            .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
            .collect()
    }

    fn widths(args: &[Arg]) -> Vec<String> {
        args.iter()
            .map(|a| match a {
                Arg::U64(_) => "u64".to_string(),
                Arg::U32(_) => "u32".to_string(),
            })
            .collect()
    }

    #[test]
    fn key_generation_arguments_match_the_kernel_signatures() {
        let sample = ksk_sample_args([1, 2, 3, 4], 5, 6, 8, 9, 7, 8);
        assert_eq!(widths(&sample), ptx_params("ksk_sample"));
        let finish = ksk_finish_args(1, 2, 3, 4, 5, 9, 27);
        assert_eq!(widths(&finish), ptx_params("ksk_finish"));
        // An older kernel, to show the reader works: enc_lift (p, rows, primes, prime_off).
        assert_eq!(ptx_params("enc_lift"), ["u64", "u64", "u64", "u32"]);
    }

    #[test]
    fn key_generation_tables_follow_the_context() {
        let ctx = crate::context::Context::new(
            crate::params::CkksConfig::from_preset(
                crate::params::Preset::Slots8192Scale40Levels7Int64,
            )
            .expect("preset"),
        )
        .expect("context");
        let rows = ctx.tables.len();
        let pmq = keygen_p_mod_q(&ctx);
        assert_eq!(pmq.len(), rows);
        assert_eq!(&pmq[..ctx.nq], &ctx.p_mod_q[..]);
        assert!(
            pmq[ctx.nq..].iter().all(|&x| x == 0),
            "no digit holds a P row"
        );
        let masks = keygen_digit_masks(&ctx);
        assert_eq!(masks.len(), ctx.digits.len());
        for (mask, ids) in masks.iter().zip(&ctx.digits) {
            for r in 0..rows {
                assert_eq!((mask >> r) & 1 == 1, ids.contains(&r), "row {r} of {ids:?}");
            }
        }
    }

    #[test]
    fn launch_geometry_matches_the_kernels() {
        assert_eq!(FFT_BLOCKS, 16);
        // one ChaCha20 block per sampler thread: 3 streams x N/8 blocks
        assert_eq!(SAMPLER_BLOCKS * SAMPLER_PER_BLOCK, 3 * 16384 / 8);
        assert!(ENCODE_PTX.contains("setp") && SAMPLER_PER_BLOCK <= E_THREADS);
        assert!(ENCODE_PTX.contains(".entry enc_rows_sample"));
        for k in ENC_KERNELS {
            assert!(ENCODE_PTX.contains(&format!(".entry {k}(")), "{k}");
        }
    }
}
