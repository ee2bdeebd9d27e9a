//! [`CudaEngine`]: CKKS operations on device-resident values, as PTX kernels from
//! `kernels/ckks.cu`. Every operation enqueues its kernels on the stream it is given, allocates
//! its result (and scratch) from the device's stream-ordered pool and returns without a host
//! synchronisation; only [`CudaEngine::download_ciphertext`] waits for the stream.

use std::ffi::c_void;
use std::sync::Arc;

use cust::context::Context as CuContext;
use cust::device::Device;
use cust::memory::{AsyncCopyDestination, CopyDestination, DeviceBuffer};
use cust::module::Module;
use cust::stream::Stream;
use fhelium_residency::ResidencyLocation;

use super::tables::{galois_inverse, DeviceTables, KERNEL_N};
use crate::context::Context;
use crate::encoding::Encoder;
use crate::error::CkksError;
use crate::keys::{KeySwitchKey, PublicKey, RelinearizationKey, RotationKey, SecretKey};
use crate::recycle::{Bins, Sized64};
use crate::sampling::Csprng;
use crate::storage::Words;
use crate::values::{Ciphertext, Domain, ModulusBasis, Plaintext, PlaintextRepresentation};
use parking_lot::Mutex;

// Device encode/decode and the counter-based sampler (kernels/encode.cu): an `impl
// CudaEngine` block in a child module, so it reaches the engine's launch helpers and tables.
#[path = "encrypt.rs"]
mod encrypt;
// Launches replayed through one-node CUDA graphs (decision 0505).
#[path = "graphs.rs"]
mod graphs;
// Hoisted rotations and conjugation (an `impl CudaEngine` block reaching the key switch).
#[path = "hoisted.rs"]
mod hoisted;
// Keys made on first use from a CPU engine and kept on the device (decision 0510).
#[path = "keycache.rs"]
mod keycache;
// Plaintext domain transitions, integer multiples and level drops.
#[path = "levels.rs"]
mod levels;

#[path = "pipeline.rs"]
mod pipeline;

pub use encrypt::SlotValues;
pub use keycache::GpuKeyCache;
pub use pipeline::{PipeValue, Pipeline, PipelineOutputs};

/// PTX of `kernels/ckks.cu`, embedded at build time.
pub const CKKS_PTX: &str = include_str!("../../../../kernels/ptx/ckks.ptx");

/// Threads per block of the NTT and key-switch kernels (`NTT_THREADS` in the .cu file).
const NTT_THREADS: u32 = 512;
/// Blocks per limb of one NTT pass (`SUB / TILE_COLS`).
const NTT_BLOCKS_PER_LIMB: u32 = 16;
/// Threads per block of the elementwise kernels.
const EW_THREADS: u32 = 256;

/// Errors of the CUDA backend: a driver call that failed, a CKKS rule a value breaks, or
/// parameters the kernels were not built for.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CudaBackendError {
    /// A CUDA driver call failed.
    #[error("{op}: CUDA driver error: {source}")]
    Driver {
        /// The engine operation.
        op: &'static str,
        /// The driver's error.
        #[source]
        source: cust::error::CudaError,
    },
    /// A kernel launch was refused by the driver.
    #[error("{op}: launch of {kernel} failed: {code}")]
    Launch {
        /// The engine operation.
        op: &'static str,
        /// The kernel.
        kernel: String,
        /// The driver's status code.
        code: String,
    },
    /// The operands break a CKKS rule (same variants as the CPU engine).
    #[error(transparent)]
    Ckks(#[from] CkksError),
    /// A value to borrow in place is not on the engine's device.
    #[error("{op}: the value's words are at {actual}, not on the engine's device {expected}")]
    NotOnDevice {
        /// The engine operation.
        op: &'static str,
        /// The engine's device.
        expected: ResidencyLocation,
        /// Where the value's words are.
        actual: ResidencyLocation,
    },
    /// A [`PipeValue`] that does not name a value of the pipeline it was given to (another
    /// pipeline's handle, or a result already taken from its outputs), or an input given to
    /// [`PipelineOutputs::take`].
    #[error("{op}: value {index} of pipeline {pipeline}: {reason}")]
    PipelineValue {
        /// The pipeline operation.
        op: &'static str,
        /// The serial number the handle carries.
        pipeline: u64,
        /// The handle's index.
        index: usize,
        /// Why it was refused.
        reason: String,
    },
    /// Parameters or values the kernels do not support.
    #[error("{op}: unsupported by the CUDA kernels: {reason}")]
    Unsupported {
        /// The engine operation.
        op: &'static str,
        /// Why.
        reason: String,
    },
}

type Result<T> = std::result::Result<T, CudaBackendError>;

/// Why [`CudaEngine::into_resident_ciphertext`] (or `into_resident_plaintext`, with
/// `V = GpuPlaintext`) could not hand a result to the memory layer, with the result given back
/// unchanged (`value`). Converts into its [`CudaBackendError`] for `?` (dropping the value).
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct IntoResidentError<V: std::fmt::Debug = GpuCiphertext> {
    /// What went wrong.
    pub error: Box<CudaBackendError>,
    /// The device result, still owned by the caller.
    pub value: Box<V>,
}

impl<V: std::fmt::Debug> From<IntoResidentError<V>> for CudaBackendError {
    fn from(e: IntoResidentError<V>) -> Self {
        *e.error
    }
}

fn drv<T>(op: &'static str, r: cust::error::CudaResult<T>) -> Result<T> {
    r.map_err(|source| CudaBackendError::Driver { op, source })
}

/// Every kernel of `kernels/ckks.cu` the engine launches, in the order of [`K`].
const KERNELS: [&str; 32] = [
    "ntt_fwd_cols",
    "ntt_fwd_rows",
    "ntt_inv_rows",
    "ntt_inv_cols",
    "ks_inner",
    "ks_moddown",
    "ew_add",
    "ew_sub",
    "ew_neg",
    "ew_mul",
    "ew_mul_const",
    "ew_tensor",
    "aut_coeff",
    "rescale",
    "drop_rows",
    "add_signed",
    "ntt_fwd_cl",
    "ntt_inv_cl",
    "ks_inner_cl",
    "ntt_fwd_clr",
    "ntt_inv_clr",
    "ntt_fwd_gs",
    "ntt_inv_gs",
    "ks_inner_gs",
    "ntt_fwd_gq",
    "ntt_fwd_gp",
    "ntt_inv_gp",
    "aut_ntt",
    "ew_mul_int",
    "ks_inner_gh",
    "ntt_fwd_gpn",
    "ntt_inv_gpn",
];

/// A kernel of [`KERNELS`] by position: launches index the engine's handle table directly
/// (no name search per launch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(dead_code)] // every variant names a kernel of the module; not all are launched by name
enum K {
    NttFwdCols = 0,
    NttFwdRows,
    NttInvRows,
    NttInvCols,
    KsInner,
    KsModdown,
    EwAdd,
    EwSub,
    EwNeg,
    EwMul,
    EwMulConst,
    EwTensor,
    AutCoeff,
    Rescale,
    DropRows,
    AddSigned,
    NttFwdCl,
    NttInvCl,
    KsInnerCl,
    NttFwdClr,
    NttInvClr,
    NttFwdGs,
    NttInvGs,
    KsInnerGs,
    NttFwdGq,
    NttFwdGp,
    NttInvGp,
    AutNtt,
    EwMulInt,
    KsInnerGh,
    NttFwdGpn,
    NttInvGpn,
}

/// What [`CudaEngine::launch`] accepts as a kernel: a [`K`] (direct index) or a kernel name
/// (looked up in [`KERNELS`]).
trait KernelRef: Copy {
    /// Position in [`KERNELS`], `None` for an unknown name.
    fn slot(self) -> Option<usize>;
}

impl KernelRef for K {
    fn slot(self) -> Option<usize> {
        Some(self as usize)
    }
}

impl KernelRef for &str {
    fn slot(self) -> Option<usize> {
        KERNELS.iter().position(|n| *n == self)
    }
}

/// Most parameters any kernel of `kernels/ckks.cu` takes (the argument pointer array lives on
/// the stack, no allocation per launch).
const MAX_ARGS: usize = 18;

/// Blocks per thread-block cluster of the one-launch NTT kernels (`CL` in the .cu file): one
/// cluster per limb NTT.
const CL_BLOCKS: u32 = 8;
/// Threads per block of the cluster kernels (`CL_THREADS`).
const CL_THREADS: u32 = 512;
/// Threads per block of the `*_gs` NTT kernels (`GS_THREADS`: 8 words per thread).
const GS_THREADS: u32 = 256;

/// The kernels' `F64_Q`: primes below it take the binary64 butterflies (decision 0511).
const F64_Q: u64 = 1 << 41;

/// Whether `q` lies within 2^32 below 2^60 (the kernels' `near60`): the 60-bit message primes
/// (the largest NTT primes below 2^60) do, and take `LooseN`'s folds (decision 0515).
const fn near60(q: u64) -> bool {
    q < 1 << 60 && q > (1 << 60) - (1 << 32)
}

/// Whether every prime of `moduli[prime_off..prime_off + rows]` at or above [`F64_Q`] is
/// [`near60`], so that a paired NTT over those rows may run as `ntt_fwd_gpn` /
/// `ntt_inv_gpn`; false for rows outside `moduli`.
fn near60_rows(moduli: &[u64], prime_off: usize, rows: usize) -> bool {
    prime_off
        .checked_add(rows)
        .and_then(|end| moduli.get(prime_off..end))
        .is_some_and(|m| m.iter().all(|&q| q < F64_Q || near60(q)))
}
/// Limbs (grid y x z) one launch of the `*_gs` NTT kernels may span: two counter words each
/// (the kernels use the first).
const SYNC_SLOTS: usize = 256;
/// Words of `ntt_fwd_gq`'s queue state: ticket, blocks done, one column-arrival count and
/// one row-read count per limb (at most [`SYNC_SLOTS`] limbs).
const QUEUE_WORDS: usize = 2 + 2 * SYNC_SLOTS;
/// Words of one stream's barrier state: the `*_gs` / `*_gp` kernels' counters (two per limb
/// slot), then `ntt_fwd_gq`'s queue state.
const STREAM_STATE_WORDS: usize = 2 * SYNC_SLOTS + QUEUE_WORDS;
/// The paired NTT kernels' second counter of limb y is word 2 (y + `GP_CTR2`) + 1 (`GP_CTR2` in
/// the .cu file): they run for at most `GP_CTR2` limbs, whose counters stay inside the
/// stream's `2 * SYNC_SLOTS` counter words.
const GP_CTR2: usize = 128;
const _: () = assert!(2 * (2 * GP_CTR2 - 1) + 1 < 2 * SYNC_SLOTS);
/// Streams that get barrier state of their own (4 KiB each, made on a stream's first launch
/// that needs it); launches on further streams run the cluster kernels, which need none.
const MAX_SYNC_STREAMS: usize = 1024;

/// One stream's barrier state (see `CudaEngine::sync_streams`).
struct StreamSync {
    /// The `*_gs` / `*_gp` kernels' counters, then `ntt_fwd_gq`'s queue state
    /// (`STREAM_STATE_WORDS` words, zeroed before the stream's first launch that reads them).
    state: DeviceBuffer<u32>,
    /// The paired NTT kernels' exchange scratch (decision 0514): `2 x gp_rows x N` words, two
    /// regions of N per limb row (one per component), made and zeroed on the stream's first
    /// paired launch. Each word is zero or holds the tag of the last launch that counted on
    /// its region's counter (kernels/ckks.cu, `GP_TAGS`), so it lives as long as the counters.
    xch: Option<DeviceBuffer<u32>>,
}

/// Which kernels run the engine's NTTs and key switches. Every choice gives the same words;
/// they differ in speed (docs/perf.md, decision 0503) and in what the driver must support.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NttKernels {
    /// Two launches per NTT (column pass, row pass) and per key-switch half; no clusters.
    TwoPass,
    /// One launch per NTT: thread-block clusters of 8 blocks x 512 threads per limb, the
    /// transpose through distributed shared memory (`ntt_fwd_cl`/`ntt_inv_cl`), also for the
    /// key switch's ModUp.
    Cluster,
    /// [`NttKernels::Cluster`] with every twiddle of a phase loaded into registers before the
    /// phase (`ntt_fwd_clr`/`ntt_inv_clr`, one block per SM) for the NTT operations; the
    /// key switch as [`NttKernels::Cluster`].
    ClusterPreload,
    /// The default. One launch per NTT operation without clusters: 8 blocks x 256 threads per
    /// limb, 8 words per thread in registers (radix-8 rounds); the 8 blocks of a limb
    /// exchange their first-phase results through the output in global memory and meet on
    /// counters (`ntt_fwd_gs`/`ntt_inv_gs`, launched cooperatively so every block is resident;
    /// a launch too large for one wave runs [`NttKernels::ClusterPreload`]'s kernels); the NTT
    /// operations on a two-component value (`coefficient_domain_to_ntt_domain`, the dense inverse)
    /// by paired blocks, 16 per limb, each holding 8 lines of both components so a row's
    /// twiddles serve both (`ntt_fwd_gp`/`ntt_inv_gp`, else the `*_gs` kernels). The key
    /// switch: the ModUp's NTTs (72 limbs at level 0, more than one wave) as a queue of column
    /// and row work items taken by one wave of blocks (`ntt_fwd_gq`), the key inner product and
    /// its inverse NTT the same way as the NTT operations (`ks_inner_gs`); each falls back to
    /// [`NttKernels::Cluster`]'s kernel when it cannot run.
    GlobalSync,
}

impl NttKernels {
    fn code(self) -> u8 {
        match self {
            Self::TwoPass => 0,
            Self::Cluster => 1,
            Self::ClusterPreload => 2,
            Self::GlobalSync => 3,
        }
    }

    fn from_code(code: u8) -> Self {
        match code {
            0 => Self::TwoPass,
            1 => Self::Cluster,
            2 => Self::ClusterPreload,
            _ => Self::GlobalSync,
        }
    }

    /// The choice an engine starts with: `FHELIUM_CKKS_NTT` = `two-pass`, `cluster`,
    /// `cluster-preload` or `global-sync` when set, else two-pass when
    /// `FHELIUM_CKKS_CLUSTERS=0`, else [`NttKernels::GlobalSync`].
    fn from_env() -> Self {
        match std::env::var("FHELIUM_CKKS_NTT").as_deref() {
            Ok("two-pass") => return Self::TwoPass,
            Ok("cluster") => return Self::Cluster,
            Ok("cluster-preload") => return Self::ClusterPreload,
            Ok("global-sync") => return Self::GlobalSync,
            _ => {}
        }
        if std::env::var("FHELIUM_CKKS_CLUSTERS").is_ok_and(|v| v == "0") {
            Self::TwoPass
        } else {
            Self::GlobalSync
        }
    }

    /// The one-launch cluster forward and inverse NTT kernels of the NTT operations, `None`
    /// for two-pass.
    fn ntt_pair(self) -> Option<(K, K)> {
        match self {
            Self::TwoPass => None,
            Self::Cluster => Some((K::NttFwdCl, K::NttInvCl)),
            Self::ClusterPreload | Self::GlobalSync => Some((K::NttFwdClr, K::NttInvClr)),
        }
    }

    /// The one-launch ModUp (forward NTT) kernel of the key switch, `None` for two-pass.
    fn modup(self) -> Option<K> {
        match self {
            Self::TwoPass => None,
            Self::Cluster | Self::ClusterPreload | Self::GlobalSync => Some(K::NttFwdCl),
        }
    }
}

/// A kernel handle of the engine's module, looked up once.
#[derive(Clone, Copy)]
struct Kernel(cust::sys::CUfunction);

// SAFETY: a CUfunction is an immutable driver handle, valid while its module is loaded (the
// engine owns the module and outlives every use); the driver allows launching it from any
// thread.
unsafe impl Send for Kernel {}
// SAFETY: as above; the handle is never mutated.
unsafe impl Sync for Kernel {}

/// One kernel argument.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Arg {
    U64(u64),
    U32(u32),
}

/// The kernel names of a recorded chain, `a -> b -> c` (a field of the `ckks.chain` span).
struct ChainNames<'a>(&'a [graphs::Node]);

impl std::fmt::Display for ChainNames<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, n) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" -> ")?;
            }
            f.write_str(n.name)?;
        }
        Ok(())
    }
}

/// Launches `kernel` (named `name` in errors) on `stream` with `args` marshalled into a stack
/// array, through its launch graph when `graphs` takes it: the one launch call site of the
/// CUDA engine (both modules).
#[allow(clippy::too_many_arguments)]
fn launch_raw(
    graphs: &graphs::LaunchGraphs,
    op: &'static str,
    kernel: Kernel,
    name: &'static str,
    grid: (u32, u32, u32),
    block: u32,
    stream: &Stream,
    args: &[Arg],
) -> Result<()> {
    launch_raw_as(graphs, op, kernel, name, grid, block, stream, args, false)
}

/// Pointers to the values of `args`, in order (the kernel-parameter array of a launch).
fn arg_ptrs(args: &[Arg]) -> [*mut c_void; MAX_ARGS] {
    let mut ptrs = [std::ptr::null_mut::<c_void>(); MAX_ARGS];
    for (p, a) in ptrs.iter_mut().zip(args) {
        *p = match a {
            Arg::U64(v) => std::ptr::from_ref(v).cast_mut().cast::<c_void>(),
            Arg::U32(v) => std::ptr::from_ref(v).cast_mut().cast::<c_void>(),
        };
    }
    ptrs
}

/// [`launch_raw`], or a cooperative launch (`cuLaunchCooperativeKernel`: every block resident
/// at once, or the launch fails without enqueueing anything). While the thread records a
/// chain (`graphs::Recording`), the launch is recorded instead of enqueued.
#[allow(clippy::too_many_arguments)]
fn launch_raw_as(
    graphs: &graphs::LaunchGraphs,
    op: &'static str,
    kernel: Kernel,
    name: &'static str,
    grid: (u32, u32, u32),
    block: u32,
    stream: &Stream,
    args: &[Arg],
    cooperative: bool,
) -> Result<()> {
    if args.len() > MAX_ARGS {
        return Err(CudaBackendError::Unsupported {
            op,
            reason: format!("{name} takes at most {MAX_ARGS} arguments"),
        });
    }
    // The node is built only for a recording thread: a launch enqueued now goes straight on
    // (the call's host time before `cuGraphLaunch` is latency, run 181).
    let recorded = graphs::record_with(|| {
        let mut held = [Arg::U32(0); MAX_ARGS];
        held[..args.len()].copy_from_slice(args);
        graphs::Node {
            func: kernel.0,
            name,
            grid,
            block,
            cooperative,
            args: held,
            len: args.len(),
            deps: graphs::Deps::default(),
        }
    });
    if recorded {
        return Ok(());
    }
    launch_args(
        graphs,
        op,
        kernel,
        name,
        grid,
        block,
        cooperative,
        args,
        stream,
    )
}

/// Enqueues the launch `n` now: through its launch graph, else directly.
fn launch_now(
    graphs: &graphs::LaunchGraphs,
    op: &'static str,
    n: &graphs::Node,
    stream: &Stream,
) -> Result<()> {
    launch_args(
        graphs,
        op,
        Kernel(n.func),
        n.name,
        n.grid,
        n.block,
        n.cooperative,
        &n.args[..n.len],
        stream,
    )
}

/// Enqueues `kernel` (`name`) over `grid` x `block` with `args` now: through its launch graph,
/// else directly (cooperatively when `cooperative`).
#[allow(clippy::too_many_arguments)]
fn launch_args(
    graphs: &graphs::LaunchGraphs,
    op: &'static str,
    kernel: Kernel,
    name: &'static str,
    grid: (u32, u32, u32),
    block: u32,
    cooperative: bool,
    args: &[Arg],
    stream: &Stream,
) -> Result<()> {
    let span = tracing::trace_span!(
        "ckks.kernel",
        op,
        kernel = name,
        grid = ?grid,
        block,
        cooperative,
        stream = ?stream.as_inner(),
        via = tracing::field::Empty,
    )
    .entered();
    let mut ptrs = arg_ptrs(args);
    let rc = if let Some(rc) = graphs.launch(
        kernel.0,
        grid,
        block,
        stream.as_inner(),
        &mut ptrs,
        args,
        cooperative,
    ) {
        span.record("via", "graph");
        rc
    } else {
        span.record("via", "direct");
        launch_direct(kernel, grid, block, stream, &mut ptrs, cooperative)
    };
    if rc == cust::sys::cudaError_enum::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(CudaBackendError::Launch {
            op,
            kernel: name.to_string(),
            code: format!("{rc:?}"),
        })
    }
}

/// `cuLaunchKernel` / `cuLaunchCooperativeKernel` with the argument pointers of
/// [`launch_raw_as`].
fn launch_direct(
    kernel: Kernel,
    grid: (u32, u32, u32),
    block: u32,
    stream: &Stream,
    ptrs: &mut [*mut c_void; MAX_ARGS],
    cooperative: bool,
) -> cust::sys::CUresult {
    // SAFETY: every pointer argument is a live device allocation sized for the kernel's grid
    // (checked by the callers from the value shapes), the scalar arguments match the kernel's
    // parameter types one for one (the first entries of `ptrs`, pointing to the caller's
    // `args`; f64 parameters are passed as their bit patterns, which the driver copies byte for
    // byte), and the values outlive the call (the driver copies them at launch).
    // (For a cooperative launch the same holds; the driver checks residency itself.)
    unsafe {
        if cooperative {
            cust::sys::cuLaunchCooperativeKernel(
                kernel.0,
                grid.0,
                grid.1,
                grid.2,
                block,
                1,
                1,
                0,
                stream.as_inner(),
                ptrs.as_mut_ptr(),
            )
        } else {
            cust::sys::cuLaunchKernel(
                kernel.0,
                grid.0,
                grid.1,
                grid.2,
                block,
                1,
                1,
                0,
                stream.as_inner(),
                ptrs.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
    }
}

/// What a key switch adds to its two output components.
#[derive(Clone, Copy)]
enum KsAdd {
    /// ModDown adds coefficient-domain rows: `add0` (through σ_g when the switch rotates) to
    /// component 0, `add1` to component 1; 0 adds nothing.
    Coeff { add0: u64, add1: u64 },
    /// NTT-domain rows (component c at `base + c * limbs * N` words) enter the inner product
    /// times P, so that ModDown's division by P returns them as they are; no inverse NTT of
    /// them is needed (relinearize's d0, d1). The two-pass fallback transforms them instead.
    NttTimesP { base: u64 },
}

/// The shared extended digits of a hoisted key switch (decision 0509): `ext` holds the
/// ModUp of `c1` without σ (`[digit][row][N]`, NTT domain), `g` the switch's Galois element.
/// In place of its own ModUp the switch reads them through σ_g inside the inner product
/// (`ks_inner_gh`), or on the cluster kernels permutes them first (`aut_ntt`).
#[derive(Clone, Copy)]
struct Hoisted {
    ext: u64,
    g: u32,
}

/// Arguments of a forward NTT over `limbs x comps` rows (`ntt_fwd_cols` and `ntt_fwd_cl` take
/// the same parameter list; `ntt_fwd_rows` takes the output part).
#[derive(Clone, Copy)]
struct FwdNtt {
    src: u64,
    dst: u64,
    prime_off: u32,
    in_ys: u64,
    in_zs: u64,
    out_ys: u64,
    out_zs: u64,
    /// 0: plain rows, 1: signed int64 input.
    mode: u32,
    /// Automorphism inverse (0 = none).
    ginv: u32,
    src_off: u32,
    /// Balanced ModUp lift of digit z (1) or none (0).
    src_by_z: u32,
    /// The input rows are canonical residues of their own primes (an engine value): the
    /// kernels skip the reducing pre-step (`pre` passed as null).
    canonical: bool,
}

impl FwdNtt {
    /// Plain dense rows: row stride N, component stride `limbs * N`, same layout out.
    fn dense(src: u64, dst: u64, prime_off: usize, limbs: usize) -> Self {
        let n = KERNEL_N as u64;
        let cs = limbs as u64 * n;
        Self {
            src,
            dst,
            prime_off: prime_off as u32,
            in_ys: n,
            in_zs: cs,
            out_ys: n,
            out_zs: cs,
            mode: 0,
            ginv: 0,
            src_off: prime_off as u32,
            src_by_z: 0,
            canonical: false,
        }
    }

    fn args(&self, primes: u64, twf: u64, pre: u64) -> [Arg; 14] {
        [
            Arg::U64(self.src),
            Arg::U64(self.dst),
            Arg::U64(primes),
            Arg::U64(twf),
            Arg::U64(if self.canonical { 0 } else { pre }),
            Arg::U32(self.prime_off),
            Arg::U64(self.in_ys),
            Arg::U64(self.in_zs),
            Arg::U64(self.out_ys),
            Arg::U64(self.out_zs),
            Arg::U32(self.mode),
            Arg::U32(self.ginv),
            Arg::U32(self.src_off),
            Arg::U32(self.src_by_z),
        ]
    }
}

/// Arguments of an inverse NTT (`ntt_inv_cl` and `ntt_inv_cols` take the same list;
/// `ntt_inv_rows` the same without `post`), `post` the per-prime constant applied last.
#[derive(Clone, Copy)]
struct InvNtt {
    src: u64,
    dst: u64,
    post: u64,
    prime_off: u32,
    ys: u64,
    zs: u64,
}

impl InvNtt {
    fn args(
        &self,
        src: u64,
        dst: u64,
        primes: u64,
        twi: u64,
        post: Option<u64>,
    ) -> ([Arg; 10], usize) {
        let mut a = [Arg::U32(0); 10];
        let mut i = 0;
        let mut push = |x: Arg| {
            a[i] = x;
            i += 1;
        };
        push(Arg::U64(src));
        push(Arg::U64(dst));
        push(Arg::U64(primes));
        push(Arg::U64(twi));
        if let Some(p) = post {
            push(Arg::U64(p));
        }
        push(Arg::U32(self.prime_off));
        for v in [self.ys, self.zs, self.ys, self.zs] {
            push(Arg::U64(v));
        }
        (a, i)
    }
}

/// The device words of a [`GpuCiphertext`], [`GpuPlaintext`] or [`GpuSwitchKey`]: an
/// allocation of the engine's pool, or the words of a value the memory layer placed on the
/// engine's device, borrowed for the life of a [`GpuView`] (never freed by the engine).
#[derive(Debug)]
enum DevWords {
    Owned(PoolWords),
    /// An engine allocation that goes back to the engine's bins when freed in stream order.
    Recycled(PoolWords, Arc<Recycler>),
    Borrowed {
        ptr: u64,
        len: usize,
    },
}

/// An allocation of the device's stream-ordered pool owned by a value. Freed in stream order
/// by `free_async`; dropped instead, it first waits for the device (`cuCtxSynchronize`):
/// `cuMemFree` does not wait for work still reading or writing pool memory, on any stream,
/// and the pool could hand the words to another stream's allocation while that work runs.
#[derive(Debug)]
struct PoolWords(Option<DeviceBuffer<u64>>);

impl PoolWords {
    fn new(buf: DeviceBuffer<u64>) -> Self {
        Self(Some(buf))
    }

    /// The buffer, for a stream-ordered free or a new owner (nothing waits then).
    fn take(mut self) -> Option<DeviceBuffer<u64>> {
        self.0.take()
    }

    fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |b| b.len())
    }

    fn ptr(&self) -> u64 {
        self.0.as_ref().map_or(0, DevPtr::device_address)
    }

    fn raw_mut(&mut self) -> Option<&mut DeviceBuffer<u64>> {
        self.0.as_mut()
    }

    /// Copies every word to `host` (synchronous; `host.len()` words).
    fn copy_to(&self, host: &mut [u64]) -> cust::error::CudaResult<()> {
        self.0.as_ref().map_or(Ok(()), |b| b.copy_to(host))
    }
}

thread_local! {
    /// Pool buffers this thread freed by a drop that waited for the device
    /// ([`CudaEngine::waited_drops`]).
    static WAITED_DROPS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl Drop for PoolWords {
    fn drop(&mut self) {
        if let Some(buf) = self.0.take() {
            WAITED_DROPS.with(|n| n.set(n.get() + 1));
            // Errors leave nothing better to do than freeing: the context is gone or broken.
            let _ = cust::context::CurrentContext::synchronize();
            drop(buf);
        }
    }
}

/// The engine's recycling bins ([`crate::recycle`]).
type Recycler = Bins<DeviceBuffer<u64>>;

impl Sized64 for DeviceBuffer<u64> {
    fn words(&self) -> usize {
        self.len()
    }
}

/// The bins' key of a stream: its handle.
fn stream_key(stream: &Stream) -> usize {
    stream.as_inner() as usize
}

/// `words` 32-bit words of device memory for work on `stream`, zeroed in stream order (the
/// engine's per-stream barrier state and exchange scratch, kept until the engine is dropped).
fn zeroed_words(op: &'static str, words: usize, stream: &Stream) -> Result<DeviceBuffer<u32>> {
    // SAFETY: a stream-ordered allocation that only work on `stream` uses, zeroed on `stream`
    // before any kernel reads it; the engine keeps it until it is dropped.
    let mut buf = drv(op, unsafe {
        DeviceBuffer::<u32>::uninitialized_async(words, stream)
    })?;
    // SAFETY: an enqueued fill of the live buffer above, ordered before every launch on
    // `stream` that reads it.
    drv(op, unsafe { buf.set_32_async(0, stream) })?;
    Ok(buf)
}

/// Keeps `buf` in `bins` for the next allocation of its length on `stream`, or frees it in
/// stream order when recycling is off or the bins are full.
fn recycle_into(
    bins: &Recycler,
    buf: DeviceBuffer<u64>,
    stream: &Stream,
) -> cust::error::CudaResult<()> {
    match bins.put(stream_key(stream), buf) {
        Ok(()) => Ok(()),
        Err(buf) => buf.drop_async(stream),
    }
}

impl DevWords {
    fn len(&self) -> usize {
        match self {
            Self::Owned(w) | Self::Recycled(w, _) => w.len(),
            Self::Borrowed { len, .. } => *len,
        }
    }

    fn ptr(&self) -> u64 {
        match self {
            Self::Owned(w) | Self::Recycled(w, _) => w.ptr(),
            Self::Borrowed { ptr, .. } => *ptr,
        }
    }

    /// Frees an owned allocation in stream order (an engine allocation goes back to the
    /// engine's bins for the next allocation of its length on `stream`); a borrowed view frees
    /// nothing.
    fn drop_async(self, stream: &Stream) -> cust::error::CudaResult<()> {
        match self {
            Self::Owned(w) => w.take().map_or(Ok(()), |b| b.drop_async(stream)),
            Self::Recycled(w, bins) => w.take().map_or(Ok(()), |b| recycle_into(&bins, b, stream)),
            Self::Borrowed { .. } => Ok(()),
        }
    }

    /// Lets go of the words without freeing them (their new owner frees them).
    fn forget(self) {
        match self {
            Self::Owned(w) | Self::Recycled(w, _) => std::mem::forget(w.take()),
            Self::Borrowed { .. } => {}
        }
    }

    /// Copies every word to `host` (synchronous; `host.len() == self.len()`).
    fn copy_to(&self, host: &mut [u64]) -> cust::error::CudaResult<()> {
        match self {
            Self::Owned(w) | Self::Recycled(w, _) => w.copy_to(host),
            Self::Borrowed { ptr, len } => {
                debug_assert_eq!(host.len(), *len);
                // SAFETY: `ptr` is a live device allocation of `len` words (kept alive by the
                // borrow the view carries); `host` is a writable slice of `len` words; the copy
                // is synchronous, so neither outlives the call.
                let rc = unsafe {
                    cust::sys::cuMemcpyDtoH_v2(host.as_mut_ptr().cast::<c_void>(), *ptr, len * 8)
                };
                if rc == cust::sys::cudaError_enum::CUDA_SUCCESS {
                    Ok(())
                } else {
                    Err(cust::error::CudaError::UnknownError)
                }
            }
        }
    }
}

/// A [`GpuCiphertext`], [`GpuPlaintext`] or [`GpuSwitchKey`] that computes directly on the
/// words of a CPU-engine value the memory layer placed on the engine's `cuda:N` (a replica the
/// residency manager holds): no copy, nothing freed on drop. It borrows the source value for
/// `'a`, so the words cannot be freed or moved while the view exists; use it through `Deref`
/// wherever the engine takes `&GpuCiphertext` (...). Made by [`CudaEngine::borrow_ciphertext`],
/// [`CudaEngine::borrow_plaintext`] and [`CudaEngine::borrow_rotation_key`].
///
/// The caller orders the engine's stream after whatever wrote the words (for a lease: the
/// consumer stream's wait on the transfer event) and keeps the source alive and unmodified
/// until the work enqueued on the view has completed.
#[derive(Debug)]
pub struct GpuView<'a, T> {
    value: T,
    _source: std::marker::PhantomData<&'a ()>,
}

impl<T> std::ops::Deref for GpuView<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

/// A device-resident CKKS ciphertext: `components x limbs x N` canonical words (the CPU
/// engine's layout and residue form) in device memory from the stream-ordered pool.
#[derive(Debug)]
pub struct GpuCiphertext {
    buf: DevWords,
    // The engine's device ordinal (`cuda:N`).
    device: u32,
    context: u64,
    level: usize,
    scale: f64,
    domain: Domain,
    basis: ModulusBasis,
    components: usize,
    prime_ids: Vec<usize>,
}

/// A device-resident RNS plaintext (`limbs x N` canonical words).
#[derive(Debug)]
pub struct GpuPlaintext {
    buf: DevWords,
    // The engine's device ordinal (`cuda:N`).
    device: u32,
    context: u64,
    level: usize,
    scale: f64,
    domain: Domain,
    basis: ModulusBasis,
    prime_ids: Vec<usize>,
}

/// A device-resident key-switching key (`[digit, 2, rows, N]`, NTT domain, canonical), with
/// the Galois element of a rotation key (`None` for a relinearization key).
#[derive(Debug)]
pub struct GpuSwitchKey {
    buf: DevWords,
    context: u64,
    key_id: u64,
    digits: usize,
    rows: usize,
    galois_element: Option<u64>,
}

/// A device copy of the secret key (every QP row, NTT domain); zeroed when dropped.
#[derive(Debug)]
pub struct GpuSecretKey {
    buf: PoolWords,
    context: u64,
    key_id: u64,
}

impl Drop for GpuSecretKey {
    fn drop(&mut self) {
        // Secret material: once no work reads it any more, overwrite it before the memory
        // goes back (`PoolWords`' drop then waits for the memset and frees; errors leave
        // nothing to do).
        let _ = cust::context::CurrentContext::synchronize();
        if let Some(b) = self.buf.0.as_mut() {
            let _ = b.set_zero();
        }
    }
}

/// A device copy of the public key (`[2, Q rows, N]`, NTT domain).
#[derive(Debug)]
pub struct GpuPublicKey {
    buf: PoolWords,
    context: u64,
    key_id: u64,
    rows: usize,
}

impl GpuSecretKey {
    /// Identity of the secret key (random, not secret).
    #[must_use]
    pub fn key_id(&self) -> u64 {
        self.key_id
    }
}

impl GpuPublicKey {
    /// Identity of the secret key this public key belongs to.
    #[must_use]
    pub fn key_id(&self) -> u64 {
        self.key_id
    }
}

macro_rules! value_accessors {
    ($t:ty) => {
        impl $t {
            /// Level (0 = full Q chain).
            #[must_use]
            pub fn level(&self) -> usize {
                self.level
            }
            /// The exact binary64 scale.
            #[must_use]
            pub fn scale(&self) -> f64 {
                self.scale
            }
            /// Polynomial domain.
            #[must_use]
            pub fn domain(&self) -> Domain {
                self.domain
            }
            /// Modulus basis.
            #[must_use]
            pub fn basis(&self) -> ModulusBasis {
                self.basis
            }
            /// Canonical prime id of each limb row.
            #[must_use]
            pub fn prime_ids(&self) -> &[usize] {
                &self.prime_ids
            }
            /// Payload bytes.
            #[must_use]
            pub fn nbytes(&self) -> u64 {
                (self.buf.len() * 8) as u64
            }
            /// The device the words are on: `cuda:N` of the engine that made the value.
            #[must_use]
            pub fn location(&self) -> ResidencyLocation {
                cuda_location(self.device)
            }
            /// The device address of the words (`[component][row][N]` u64, canonical
            /// residues), for interoperation with other CUDA code on the same device; valid
            /// while the value lives.
            #[must_use]
            pub fn device_ptr(&self) -> u64 {
                self.buf.ptr()
            }
            /// Frees the device memory in stream order (no host synchronisation), after the
            /// work already enqueued on `stream`: the engine keeps the buffer for the next
            /// result of the same size on `stream` ([`CudaEngine::set_recycling`]), or gives it
            /// back to the device's pool. Dropping the value instead first waits for all work
            /// on the device (every stream: any of them may still use the words), then frees
            /// them.
            pub fn free_async(self, stream: &Stream) -> Result<()> {
                drv("free_async", self.buf.drop_async(stream))
            }
        }
    };
}
value_accessors!(GpuCiphertext);
value_accessors!(GpuPlaintext);

impl GpuCiphertext {
    /// Number of polynomial components.
    #[must_use]
    pub fn components(&self) -> usize {
        self.components
    }
    /// Number of limb rows.
    #[must_use]
    pub fn num_limbs(&self) -> usize {
        self.prime_ids.len()
    }
    fn ptr(&self) -> u64 {
        self.buf.ptr()
    }
}

impl GpuCiphertext {
    /// A CPU-engine ciphertext with this value's metadata over `words`.
    fn with_words(&self, words: Words) -> Ciphertext {
        Ciphertext {
            words,
            context: self.context,
            n: KERNEL_N,
            level: self.level,
            scale: self.scale,
            domain: self.domain,
            basis: self.basis,
            components: self.components,
            prime_ids: self.prime_ids.clone(),
        }
    }
}

impl GpuPlaintext {
    /// A CPU-engine plaintext (RNS rows) with this value's metadata over `words`.
    fn with_words(&self, words: Words) -> Plaintext {
        Plaintext {
            words,
            context: self.context,
            n: KERNEL_N,
            level: self.level,
            scale: self.scale,
            domain: self.domain,
            basis: self.basis,
            representation: PlaintextRepresentation::Rns,
            prime_ids: self.prime_ids.clone(),
        }
    }

    fn ptr(&self) -> u64 {
        self.buf.ptr()
    }
}

/// A device value whose words the memory layer can adopt ([`CudaEngine::into_resident_ciphertext`]).
/// How [`CudaEngine`]'s adoption orders a result before the memory layer owns it.
#[derive(Clone, Copy)]
enum AdoptOn<'a> {
    /// The `cust` stream it was computed on, synchronised first.
    Synced(&'a Stream),
    /// The memory-layer stream it was computed on, in stream order (no host wait).
    Ordered(&'a fhelium_cuda::Stream),
}

trait Adoptable: std::fmt::Debug {
    /// The CPU-engine value over adopted words.
    type Host;
    fn device(&self) -> u32;
    fn words(&self) -> &DevWords;
    /// This value's metadata over `words`.
    fn host_value(&self, words: Words) -> Self::Host;
    /// Lets go of the words without freeing them (the memory layer owns them now).
    fn forget_words(self);
}

/// `impl Adoptable` for a device value type with `device` and `buf` fields; `$host` builds
/// the CPU-engine value over adopted words.
macro_rules! adoptable {
    ($t:ty, $host:ty, $make:expr) => {
        impl Adoptable for $t {
            type Host = $host;
            fn device(&self) -> u32 {
                self.device
            }
            fn words(&self) -> &DevWords {
                &self.buf
            }
            fn host_value(&self, words: Words) -> $host {
                $make(self, words)
            }
            fn forget_words(self) {
                self.buf.forget();
            }
        }
    };
}

adoptable!(GpuCiphertext, Ciphertext, GpuCiphertext::with_words);
adoptable!(GpuPlaintext, Plaintext, GpuPlaintext::with_words);

impl GpuSwitchKey {
    /// The Galois element of a rotation key; `None` for a relinearization key.
    #[must_use]
    pub fn galois_element(&self) -> Option<u64> {
        self.galois_element
    }
    /// Payload bytes (18 MiB at the seed preset).
    #[must_use]
    pub fn nbytes(&self) -> u64 {
        (self.buf.len() * 8) as u64
    }
    /// Identity of the secret key the key belongs to.
    #[must_use]
    pub fn key_id(&self) -> u64 {
        self.key_id
    }
    /// Frees the device memory in stream order (no host synchronisation), after the work
    /// already enqueued on `stream`. Dropping the key instead first waits for all work on the
    /// device, then frees it.
    pub fn free_async(self, stream: &Stream) -> Result<()> {
        drv("free_async", self.buf.drop_async(stream))
    }
}

/// The CKKS engine on one CUDA device: the PTX module and every constant table, uploaded once.
pub struct CudaEngine {
    device: u32,
    kernels: [Kernel; KERNELS.len()],
    // Launch graphs of both modules' kernels (decision 0505); destroyed before the modules.
    graphs: graphs::LaunchGraphs,
    // Which kernels run NTTs and key switches ([`NttKernels::code`]); set to two-pass for good
    // if the driver ever refuses a cluster launch.
    ntt_kernels: std::sync::atomic::AtomicU8,
    // Owns the code behind `kernels`: kept loaded for the engine's lifetime.
    _module: Module,
    context_id: u64,
    nq: usize,
    max_level: usize,
    moduli: Vec<u64>,
    primes: DeviceBuffer<u64>,
    twf: DeviceBuffer<u64>,
    twi: DeviceBuffer<u64>,
    reduce: DeviceBuffer<u64>,
    n_inv: DeviceBuffer<u64>,
    mont_fix: DeviceBuffer<u64>,
    ks_post: DeviceBuffer<u64>,
    p_inv: DeviceBuffer<u64>,
    p_mod: DeviceBuffer<u64>,
    q_inv: DeviceBuffer<u64>,
    q_primes: Vec<u64>,
    encoder: Encoder,
    // The encode/sampler module and its tables (dropped before the context).
    enc: encrypt::EncodeState,
    default_scale: f64,
    rng: Mutex<Csprng>,
    // Each stream's barrier state (STREAM_STATE_WORDS words, zeroed in stream order before
    // the stream's first launch that uses it), by stream handle, for at most MAX_SYNC_STREAMS
    // streams. The counters of the `*_gs` / `*_gp` kernels hold a multiple of their blocks per
    // limb between launches (each launch adds exactly that; the kernel reads its target at the
    // start, so nothing is reset), `ntt_fwd_gq`'s queue state is zero between launches (each
    // launch zeroes it as it ends). Launches on one stream run one after the other, so they
    // share the state safely, and their arguments repeat (launch graphs replay them as they
    // are); launches on different streams, which may run at the same time, never share it. A
    // stream handle comes back only after the destroyed stream's work has completed (the
    // driver releases it then), so a new stream with an old handle inherits idle state.
    // The paired NTT kernels' exchange scratch sits beside the counters (StreamSync::xch).
    // Before `_cu`: freed while the context is retained.
    sync_streams: Mutex<rustc_hash::FxHashMap<usize, StreamSync>>,
    // Result and scratch buffers freed in stream order, for the next allocation of their
    // length on the same stream (crate::recycle). Before `_cu`: its buffers are freed while
    // the context is still retained (values hold clones and may free theirs later).
    recycler: Arc<Recycler>,
    // Keeps the primary context retained for the engine's lifetime; dropped last.
    _cu: CuContext,
    // Blocks of the `*_gs` kernels the device holds at once (cooperative launch limit).
    gs_capacity: u32,
    // Blocks of `ntt_fwd_gq` the device holds at once: its grid (one wave), 0 = not used.
    gq_blocks: u32,
    // Launches of the paired NTT kernels (`ntt_fwd_gp` / `ntt_inv_gp`) so far.
    paired_launches: std::sync::atomic::AtomicU64,
    // Hoisted key switches whose inner product read the shared digits through σ_g.
    hoisted_inner: std::sync::atomic::AtomicU64,
}

impl Drop for CudaEngine {
    fn drop(&mut self) {
        // The bins' buffers, the barrier state and the tables are freed after this, some from
        // the stream-ordered pool (which `cuMemFree` does not wait for): let the work that may
        // still use them finish first. Errors leave nothing better to do.
        if self.make_current().is_ok() {
            let _ = cust::context::CurrentContext::synchronize();
        }
    }
}

impl std::fmt::Debug for CudaEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CudaEngine(context {:016x}, {} primes)",
            self.context_id,
            self.moduli.len()
        )
    }
}

/// The residency location of CUDA device `device` (`cuda:N`).
fn cuda_location(device: u32) -> ResidencyLocation {
    ResidencyLocation::Cuda(u8::try_from(device).unwrap_or(u8::MAX))
}

/// What has a device address: the engine's tables (`DeviceBuffer`) and pool words.
trait DevPtr {
    fn device_address(&self) -> u64;
}

impl DevPtr for DeviceBuffer<u64> {
    fn device_address(&self) -> u64 {
        self.as_device_ptr().as_raw()
    }
}

impl DevPtr for PoolWords {
    fn device_address(&self) -> u64 {
        self.ptr()
    }
}

fn dev_ptr(b: &impl DevPtr) -> u64 {
    b.device_address()
}

impl CudaEngine {
    /// Initialises CUDA on `device` (its primary context), loads the PTX and uploads every
    /// table derived from `context`. The kernels are built for N = 16384, one special prime and
    /// single-prime key-switching digits (the seed preset's shape).
    ///
    /// Encryption samples `v`, `e0`, `e1` on the host from the engine's own ChaCha20 stream
    /// (seeded from the OS, or from `seed`): the same samplers as the CPU engine.
    pub fn new(context: &Context, device: u32) -> Result<Self> {
        Self::with_seed(context, device, None)
    }

    /// [`CudaEngine::new`] with a fixed encryption-sampling seed (tests, benchmarks).
    pub fn with_seed(context: &Context, device: u32, seed: Option<[u8; 32]>) -> Result<Self> {
        const OP: &str = "CudaEngine::new";
        let unsupported = |reason: String| CudaBackendError::Unsupported { op: OP, reason };
        if context.n != KERNEL_N {
            return Err(unsupported(format!(
                "N = {} (kernels are built for N = {KERNEL_N})",
                context.n
            )));
        }
        if context.np != 1 || context.digits.iter().any(|d| d.len() != 1) {
            return Err(unsupported(
                "needs exactly one P prime and single-prime digits".into(),
            ));
        }
        if context.tables.len() > 16 {
            return Err(unsupported("more than 16 primes".into()));
        }
        let tables = DeviceTables::new(&context.tables, context.nq)
            .ok_or_else(|| unsupported("prime tables could not be built".into()))?;
        check_device_primes(OP, &tables.moduli)?;
        drv(OP, cust::init(cust::CudaFlags::empty()))?;
        let dev = drv(OP, Device::get_device(device))?;
        let cu = drv(OP, CuContext::new(dev))?;
        // Keep freed pool memory in the pool: stream-ordered allocations then never go back to
        // the driver between operations.
        // SAFETY: plain driver calls on a valid device handle with a valid out-pointer; the
        // attribute value outlives the call.
        unsafe {
            let mut pool: cust::sys::CUmemoryPool = std::ptr::null_mut();
            if cust::sys::cuDeviceGetDefaultMemPool(&mut pool, dev.as_raw())
                == cust::sys::cudaError_enum::CUDA_SUCCESS
            {
                let mut threshold: u64 = u64::MAX;
                let _ = cust::sys::cuMemPoolSetAttribute(
                    pool,
                    cust::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    (&raw mut threshold).cast::<c_void>(),
                );
            }
        }
        let module = drv(OP, Module::from_ptx(CKKS_PTX, &[]))?;
        let mut kernels = [Kernel(std::ptr::null_mut()); KERNELS.len()];
        for (slot, name) in kernels.iter_mut().zip(KERNELS) {
            *slot = Kernel(drv(OP, module.get_function(name))?.to_raw());
        }
        let up = |v: &[u64]| drv(OP, DeviceBuffer::from_slice(v));
        let sms = drv(
            OP,
            dev.get_attribute(cust::device::DeviceAttribute::MultiprocessorCount),
        )?;
        // Blocks of kernel `k` (GS_THREADS threads) the device holds at once (0 if unknown).
        let wave = |k: K| {
            let mut per_sm: i32 = 0;
            // SAFETY: a valid kernel handle of the loaded module and a valid out-pointer.
            let rc = unsafe {
                cust::sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                    &mut per_sm,
                    kernels[k as usize].0,
                    GS_THREADS as i32,
                    0,
                )
            };
            if rc == cust::sys::cudaError_enum::CUDA_SUCCESS {
                u32::try_from(per_sm.max(0) * sms.max(0)).unwrap_or(0)
            } else {
                0
            }
        };
        let gs_capacity = [
            K::NttFwdGs,
            K::NttInvGs,
            K::KsInnerGs,
            K::NttFwdGp,
            K::NttInvGp,
            K::NttFwdGpn,
            K::NttInvGpn,
        ]
        .into_iter()
        .map(wave)
        .min()
        .unwrap_or(0);
        let gq_blocks = wave(K::NttFwdGq);
        Ok(Self {
            paired_launches: std::sync::atomic::AtomicU64::new(0),
            hoisted_inner: std::sync::atomic::AtomicU64::new(0),
            device,
            kernels,
            graphs: graphs::LaunchGraphs::from_env(),
            ntt_kernels: std::sync::atomic::AtomicU8::new(NttKernels::from_env().code()),
            _module: module,
            context_id: context.id,
            nq: context.nq,
            max_level: context.config.max_level(),
            moduli: tables.moduli.clone(),
            primes: up(&tables.primes)?,
            twf: up(&tables.twf)?,
            twi: up(&tables.twi)?,
            reduce: up(&tables.reduce)?,
            n_inv: up(&tables.n_inv)?,
            mont_fix: up(&tables.mont_fix)?,
            ks_post: up(&tables.ks_post)?,
            p_inv: up(&tables.p_inv)?,
            p_mod: up(&tables.p_mod)?,
            q_inv: up(&tables.q_inv)?,
            q_primes: context.config.q_primes.clone(),
            encoder: Encoder::new(context.n)?,
            enc: encrypt::EncodeState::new(context)?,
            default_scale: context.config.default_scale(),
            rng: Mutex::new(match seed {
                Some(s) => Csprng::from_seed(s, context.config.sigma),
                None => Csprng::from_os(context.config.sigma),
            }),
            recycler: Arc::new(Recycler::new(
                std::env::var("FHELIUM_CKKS_RECYCLE").map_or(true, |v| v != "0"),
            )),
            _cu: cu,
            sync_streams: Mutex::new(rustc_hash::FxHashMap::default()),
            gs_capacity,
            gq_blocks,
        })
    }

    /// A new non-blocking stream on the engine's device (its context is made current on the
    /// calling thread first, so the stream belongs to this engine's device whatever was current).
    pub fn stream(&self) -> Result<Stream> {
        self.make_current()?;
        drv(
            "CudaEngine::stream",
            Stream::new(cust::stream::StreamFlags::NON_BLOCKING, None),
        )
    }

    /// A new stream on the engine's device, handed to the memory layer `mem`
    /// ([`fhelium_cuda::Memory::wrap_stream`]): the engine enqueues on its `cust` side
    /// ([`fhelium_cuda::Stream::as_cust`]), the memory layer's copies, events and
    /// stream-ordered frees run on the same stream, and results adopted with
    /// [`into_resident_ciphertext_on`](Self::into_resident_ciphertext_on) need no host wait.
    ///
    /// # Errors
    /// The driver's error making the stream; [`CkksError::Memory`] when `mem` has no CUDA
    /// backend for this engine's device.
    pub fn memory_stream(&self, mem: &fhelium_cuda::Memory) -> Result<fhelium_cuda::Stream> {
        let s = self.stream()?;
        Ok(mem
            .wrap_stream(&self.location(), s)
            .map_err(CkksError::from)?)
    }

    /// Makes this engine's device (its primary context) current on the calling thread.
    ///
    /// The engine's operations use the thread's current context (allocations, launches), which
    /// the constructor sets on the constructing thread only. Call this first on any other
    /// thread, and after anything else made another device current on this thread (another
    /// engine, or `fhelium_cuda` calls on another `cuda:N`, which bind their device's context):
    /// one engine per device, each driven from its own thread, is the multi-GPU pattern.
    pub fn make_current(&self) -> Result<()> {
        drv(
            "CudaEngine::make_current",
            cust::context::CurrentContext::set_current(&self._cu),
        )
    }

    /// The context id values must carry.
    #[must_use]
    pub fn context_id(&self) -> u64 {
        self.context_id
    }

    /// Which kernels run NTTs and key switches ([`NttKernels`]; the results are the same
    /// words for every choice). `FHELIUM_CKKS_NTT` (`two-pass`, `cluster`, `cluster-preload`,
    /// `global-sync`) or `FHELIUM_CKKS_CLUSTERS=0` (two-pass) in the environment sets an
    /// engine's first choice, [`NttKernels::GlobalSync`] otherwise; a driver that refuses a cluster launch turns
    /// the engine to [`NttKernels::TwoPass`] for good (the operation then runs the two-pass
    /// kernels).
    #[must_use]
    pub fn ntt_kernels(&self) -> NttKernels {
        NttKernels::from_code(self.ntt_kernels.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Chooses the NTT and key-switch kernels for the operations enqueued after this call
    /// (tests and benchmarks compare them).
    pub fn set_ntt_kernels(&self, kernels: NttKernels) {
        self.ntt_kernels
            .store(kernels.code(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Turns launch graphs on or off for the launches enqueued after this call (decision
    /// 0505): on (the default, unless `FHELIUM_CKKS_GRAPHS=0` was set when the engine was
    /// made), each kernel launch replays a one-node CUDA graph kept per (kernel, grid, stream)
    /// with its arguments updated, which costs less host time than a direct launch; off,
    /// every launch calls `cuLaunchKernel` / `cuLaunchCooperativeKernel`. The results are the
    /// same words either way.
    pub fn set_graph_launches(&self, on: bool) {
        self.graphs.set_enabled(on);
    }

    /// Whether launches go through launch graphs: on, and the driver has not refused to build
    /// one (after a refusal the engine launches directly for good).
    #[must_use]
    pub fn graph_launches(&self) -> bool {
        self.graphs.enabled()
    }

    /// Turns programmatic dependent launch in the chain graphs on or off (decision 0508): on
    /// (the default, unless `FHELIUM_CKKS_PDL=0` was set when the engine was made), a kernel
    /// that waits on its predecessor on the device (`griddepcontrol.wait`) hangs on it by a
    /// programmatic edge and is launched while it drains; off, every edge of a chain is a full
    /// edge (the kernel starts once its predecessor has completed). The words are the same
    /// either way; [`CudaEngine::programmatic_edges`] counts the programmatic edges built.
    /// Chains built in either form are kept apart, so a change applies to the next operation.
    pub fn set_programmatic_launch(&self, on: bool) {
        self.graphs.set_programmatic(on);
    }

    /// Whether chain graphs hang their waiting kernels by programmatic edges.
    #[must_use]
    pub fn programmatic_launch(&self) -> bool {
        self.graphs.programmatic()
    }

    /// How many kernel launches went through a launch graph since the engine was made.
    #[must_use]
    pub fn graph_replays(&self) -> u64 {
        self.graphs.replays()
    }

    /// How many key switches of [`CudaEngine::rotate_many_with_keys`] read the shared
    /// extended digits through `σ_g` inside the inner product (`ks_inner_gh`,
    /// [`NttKernels::GlobalSync`]) since the engine was made; the others permuted them first
    /// (`aut_ntt`) or ran a whole rotation.
    #[must_use]
    pub fn hoisted_inner_launches(&self) -> u64 {
        self.hoisted_inner
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Device buffers the calling thread has freed by a drop that had to wait for the device:
    /// values dropped instead of freed with `free_async`, and scratch of an operation that
    /// returned an error after enqueuing work. Operations that succeed never add to it (no
    /// host synchronisation inside an operation), so a count that grows in a loop points at
    /// values the loop drops.
    #[must_use]
    pub fn waited_drops() -> u64 {
        WAITED_DROPS.with(std::cell::Cell::get)
    }

    /// How many NTTs (of a two-component value, or of one polynomial's canonical rows) ran as
    /// one paired-block kernel (`ntt_fwd_gp` / `ntt_inv_gp`, [`NttKernels::GlobalSync`]) since
    /// the engine was made; a launch the device or driver refused ran the `*_gs` kernels
    /// instead and is not counted.
    #[must_use]
    pub fn paired_ntt_launches(&self) -> u64 {
        self.paired_launches
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many streams hold barrier state of their own (4 KiB of device memory each, made on
    /// a stream's first launch of a kernel whose blocks meet across the device: the
    /// [`NttKernels::GlobalSync`] NTT and key-switch kernels; plus the paired NTT kernels'
    /// exchange scratch, [`Self::exchange_bytes`], on a stream's first paired launch).
    /// Launches on different streams never share it, so they may run at the same time.
    #[must_use]
    pub fn barrier_streams(&self) -> usize {
        self.sync_streams.lock().len()
    }

    /// Device memory held for the paired NTT kernels' exchange (`ntt_fwd_gp` / `ntt_inv_gp`,
    /// decision 0514): `(streams, bytes)`, the streams that ran a paired launch and the bytes
    /// their exchange scratch takes together (2 x N words per prime of the chain per stream:
    /// 2.25 MiB at the preset's 9 primes). Held until the engine is dropped, like the counters
    /// beside it.
    #[must_use]
    pub fn exchange_bytes(&self) -> (usize, u64) {
        let map = self.sync_streams.lock();
        map.values()
            .filter_map(|s| s.xch.as_ref())
            .fold((0, 0), |(n, b), x| (n + 1, b + 4 * x.len() as u64))
    }

    /// The most streams that get barrier state ([`Self::barrier_streams`]); launches on
    /// further streams run [`NttKernels::ClusterPreload`]'s kernels, which need none (the
    /// same words, slower).
    #[must_use]
    pub fn barrier_stream_limit(&self) -> usize {
        MAX_SYNC_STREAMS
    }

    /// How many chain graphs (an operation's dependent launches as one graph: rotate,
    /// relinearize, encrypt, decrypt; decision 0508) were launched since the engine was made.
    #[must_use]
    pub fn chain_launches(&self) -> u64 {
        self.graphs.chain_replays()
    }

    /// How many programmatic edges (programmatic dependent launch) the chain graphs built so
    /// far hold: 0 on a driver older than CUDA 12.3, where chains use full edges only.
    #[must_use]
    pub fn programmatic_edges(&self) -> u64 {
        self.graphs.programmatic_edges()
    }

    /// How many launch graphs the engine holds: one-node graphs (at most 8 per kernel, grid
    /// and stream) and chain graphs (at most 32 per chain shape and stream); each replays the
    /// argument lists of its last launch without an update.
    #[must_use]
    pub fn graph_count(&self) -> usize {
        self.graphs.built()
    }

    /// Whether NTTs and key switches run one-launch thread-block-cluster kernels (any
    /// [`NttKernels`] but [`NttKernels::TwoPass`]).
    #[must_use]
    pub fn cluster_kernels(&self) -> bool {
        self.ntt_kernels() != NttKernels::TwoPass
    }

    /// `true`: the default one-launch kernels ([`NttKernels::GlobalSync`]); `false`: the
    /// two-pass kernels.
    pub fn set_cluster_kernels(&self, on: bool) {
        self.set_ntt_kernels(if on {
            NttKernels::GlobalSync
        } else {
            NttKernels::TwoPass
        });
    }

    fn launch(
        &self,
        op: &'static str,
        kernel: impl KernelRef,
        grid: (u32, u32, u32),
        block: u32,
        stream: &Stream,
        args: &[Arg],
    ) -> Result<()> {
        let Some(slot) = kernel.slot() else {
            return Err(CudaBackendError::Unsupported {
                op,
                reason: "kernel is not in the engine's table".into(),
            });
        };
        launch_raw(
            &self.graphs,
            op,
            self.kernels[slot],
            KERNELS[slot],
            grid,
            block,
            stream,
            args,
        )
    }

    /// Launches a cluster kernel when one is given (`None`: the two-pass kernels are chosen);
    /// `Ok(false)` when none is given or the driver refused the launch (which turns the
    /// engine to two-pass: nothing was enqueued, so the caller runs the two-pass kernels
    /// instead).
    fn launch_cluster(
        &self,
        op: &'static str,
        kernel: Option<K>,
        grid: (u32, u32),
        stream: &Stream,
        args: &[Arg],
    ) -> Result<bool> {
        let Some(kernel) = kernel else {
            return Ok(false);
        };
        match self.launch(
            op,
            kernel,
            (CL_BLOCKS, grid.0, grid.1),
            CL_THREADS,
            stream,
            args,
        ) {
            Ok(()) => Ok(true),
            Err(CudaBackendError::Launch { .. }) => {
                self.set_ntt_kernels(NttKernels::TwoPass);
                Ok(false)
            }
            Err(e) => Err(e),
        }
    }

    /// Launches a `*_gs` NTT kernel (cooperatively, with the stream's counters appended to
    /// `args`) when the grid of `yz` limbs fits the device at once; `Ok(false)` when it does
    /// not or the driver refused (nothing enqueued: the caller runs another kernel).
    fn launch_gs(
        &self,
        op: &'static str,
        kernel: K,
        yz: (u32, u32),
        stream: &Stream,
        args: &[Arg],
    ) -> Result<bool> {
        self.launch_synced(
            op,
            kernel,
            (CL_BLOCKS, yz.0, yz.1),
            GS_THREADS,
            stream,
            args,
            false,
        )
    }

    /// Launches a paired NTT kernel (`ntt_fwd_gp` / `ntt_inv_gp`: the `comps` (1 or 2)
    /// components of each of `limbs` limbs, 2 x CL_BLOCKS blocks per limb, 128 threads per
    /// component) cooperatively with the stream's counters and exchange scratch appended
    /// ([`Self::launch_synced`]), counting it in `paired_launches`; `Ok(false)`: nothing enqueued
    /// (also for more limbs than [`Self::gp_rows`], other component counts, more blocks than
    /// one wave holds, a stream without barrier state), the caller runs the `*_gs` kernel.
    /// One component takes half the blocks' threads and spreads a limb over twice the SMs the
    /// `*_gs` kernels use.
    ///
    /// `kernel` is `ntt_fwd_gp` or `ntt_inv_gp`; when every integer prime of the rows
    /// `prime_off..prime_off + limbs` is a 60-bit message prime ([`near60_rows`]), its `*_gpn`
    /// form runs instead (decision 0515: the same words, the 60-bit groups' reductions folded).
    #[allow(clippy::too_many_arguments)]
    fn launch_gp(
        &self,
        op: &'static str,
        kernel: K,
        prime_off: usize,
        limbs: usize,
        comps: usize,
        stream: &Stream,
        args: &[Arg],
    ) -> Result<bool> {
        if limbs > self.gp_rows() || !(1..=2).contains(&comps) {
            return Ok(false);
        }
        let kernel = match kernel {
            K::NttFwdGp if near60_rows(&self.moduli, prime_off, limbs) => K::NttFwdGpn,
            K::NttInvGp if near60_rows(&self.moduli, prime_off, limbs) => K::NttInvGpn,
            k => k,
        };
        let block = GS_THREADS / 2 * comps as u32;
        let grid = (2 * CL_BLOCKS, limbs as u32, 1);
        let launched = self.launch_synced(op, kernel, grid, block, stream, args, true)?;
        if launched {
            self.paired_launches
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(launched)
    }

    /// A cooperative launch of a kernel whose `grid.0` blocks per limb (`grid.1 x grid.2`
    /// limbs) meet on the stream's counters (appended to `args`, then, when `xch` is set, the
    /// stream's exchange scratch: the paired NTT kernels), when the limbs fit the counters and
    /// the blocks one wave of the device; `Ok(false)` otherwise, when the stream has no
    /// barrier state (more than MAX_SYNC_STREAMS streams) or when the driver refused (nothing
    /// enqueued).
    #[allow(clippy::too_many_arguments)]
    fn launch_synced(
        &self,
        op: &'static str,
        kernel: K,
        grid: (u32, u32, u32),
        block: u32,
        stream: &Stream,
        args: &[Arg],
        xch: bool,
    ) -> Result<bool> {
        let limbs = grid.1 as usize * grid.2 as usize;
        // gs_capacity counts blocks of GS_THREADS; smaller blocks fit at least as many.
        if limbs > SYNC_SLOTS || grid.0 as usize * limbs > self.gs_capacity as usize {
            return Ok(false);
        }
        let Some((ctr, scratch)) = self.sync_entry(op, stream, xch)? else {
            return Ok(false);
        };
        let both = [Arg::U64(ctr), Arg::U64(scratch.unwrap_or(0))];
        let extra = match (xch, scratch) {
            (false, _) => &both[..1],
            (true, Some(_)) => &both[..],
            // sync_entry makes the scratch when asked or fails: never launch without it.
            (true, None) => return Ok(false),
        };
        self.try_launch(op, kernel, grid, block, stream, args, extra, true)
    }

    /// Launches `ntt_fwd_gq` over the `yz` limbs of a forward NTT with `args` (those of
    /// `ntt_fwd_gs` without the counters): one wave of blocks taking the column and row phases
    /// of every limb as work items, with the stream's queue state appended. `Ok(false)` when
    /// the device holds none, the stream has no barrier state or the driver refused (nothing
    /// enqueued: the caller runs another kernel).
    fn launch_gq(
        &self,
        op: &'static str,
        yz: (u32, u32),
        stream: &Stream,
        args: &[Arg],
    ) -> Result<bool> {
        let limbs = yz.0 as usize * yz.1 as usize;
        // At least CL_BLOCKS blocks: the rows of a limb at the ticket frontier may wait for
        // each other (see ntt_fwd_gq).
        if limbs > SYNC_SLOTS || self.gq_blocks < CL_BLOCKS {
            return Ok(false);
        }
        let Some(state) = self.sync_state(op, stream)? else {
            return Ok(false);
        };
        let qs = state + (2 * SYNC_SLOTS * 4) as u64;
        let blocks = (CL_BLOCKS * limbs as u32).min(self.gq_blocks);
        self.try_launch(
            op,
            K::NttFwdGq,
            (blocks, 1, 1),
            GS_THREADS,
            stream,
            args,
            &[Arg::U32(yz.0), Arg::U32(yz.1), Arg::U64(qs)],
            false,
        )
    }

    /// Launches `kernel` (`block` threads) with `args` followed by `extra`; `Ok(false)`
    /// when they are more than a launch takes or the driver refused (nothing enqueued: the
    /// caller runs another kernel).
    #[allow(clippy::too_many_arguments)]
    fn try_launch(
        &self,
        op: &'static str,
        kernel: K,
        grid: (u32, u32, u32),
        block: u32,
        stream: &Stream,
        args: &[Arg],
        extra: &[Arg],
        cooperative: bool,
    ) -> Result<bool> {
        let len = args.len() + extra.len();
        if len > MAX_ARGS {
            return Ok(false);
        }
        let mut all = [Arg::U32(0); MAX_ARGS];
        all[..args.len()].copy_from_slice(args);
        all[args.len()..len].copy_from_slice(extra);
        match launch_raw_as(
            &self.graphs,
            op,
            self.kernels[kernel as usize],
            KERNELS[kernel as usize],
            grid,
            block,
            stream,
            &all[..len],
            cooperative,
        ) {
            Ok(()) => Ok(true),
            Err(CudaBackendError::Launch { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Starts recording this thread's launches for one chain graph when chains are on and no
    /// recording runs already (`None`: launches are enqueued as they come).
    ///
    /// Inside a pipeline's recording the launches join it instead, and the place is noted as
    /// one where the pipeline may cut its chains (`graphs::mark_cut`).
    fn start_chain(&self) -> Option<graphs::Recording> {
        if !self.graphs.chains_enabled() {
            return None;
        }
        let rec = graphs::Recording::start();
        if rec.is_none() {
            graphs::mark_cut();
        }
        rec
    }

    /// Enqueues the launches `rec` recorded, in order, on `stream`: as one chain graph, or
    /// (chains off or refused by the driver) one by one.
    fn submit_chain(
        &self,
        op: &'static str,
        rec: graphs::Recording,
        stream: &Stream,
    ) -> Result<()> {
        self.submit_nodes(op, &rec.finish(), stream)
    }

    /// Enqueues `nodes`, in order, on `stream`: as one chain graph, or (chains off or refused
    /// by the driver, or more than `MAX_CHAIN` nodes) one by one.
    fn submit_nodes(
        &self,
        op: &'static str,
        nodes: &[graphs::Node],
        stream: &Stream,
    ) -> Result<()> {
        let _span = tracing::trace_span!(
            "ckks.chain",
            op,
            kernels = %ChainNames(nodes),
            stream = ?stream.as_inner(),
        )
        .entered();
        let mut ptrs = [[std::ptr::null_mut::<c_void>(); MAX_ARGS]; graphs::MAX_CHAIN];
        for (p, n) in ptrs.iter_mut().zip(nodes) {
            *p = arg_ptrs(&n.args[..n.len]);
        }
        if self
            .graphs
            .launch_chain(nodes, &mut ptrs, stream.as_inner())
        {
            return Ok(());
        }
        for n in nodes {
            launch_now(&self.graphs, op, n, stream)?;
        }
        Ok(())
    }

    /// The device address of `stream`'s barrier state (counters, then `ntt_fwd_gq`'s queue
    /// state; see `sync_streams`), made and zeroed in stream order on the stream's first
    /// launch that needs it; `None` once MAX_SYNC_STREAMS streams hold state (the caller runs
    /// kernels that need none).
    fn sync_state(&self, op: &'static str, stream: &Stream) -> Result<Option<u64>> {
        Ok(self.sync_entry(op, stream, false)?.map(|(state, _)| state))
    }

    /// The limb rows a paired NTT launch may span: one per prime of the chain (a launch's rows
    /// are primes `prime_off..prime_off + limbs`), at most `GP_CTR2` (the counters' layout).
    fn gp_rows(&self) -> usize {
        self.moduli.len().min(GP_CTR2)
    }

    /// The addresses of `stream`'s barrier state and (made when `xch` asks for it, else as it
    /// is) its exchange scratch; `None` once MAX_SYNC_STREAMS streams hold state. Each buffer
    /// is made in stream order and zeroed on `stream` before any launch that reads it.
    fn sync_entry(
        &self,
        op: &'static str,
        stream: &Stream,
        xch: bool,
    ) -> Result<Option<(u64, Option<u64>)>> {
        let mut map = self.sync_streams.lock();
        let full = map.len() >= MAX_SYNC_STREAMS;
        let entry = match map.entry(stream_key(stream)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(_) if full => return Ok(None),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(StreamSync {
                state: zeroed_words(op, STREAM_STATE_WORDS, stream)?,
                xch: None,
            }),
        };
        if xch && entry.xch.is_none() {
            entry.xch = Some(zeroed_words(op, 4 * self.gp_rows() * KERNEL_N, stream)?);
        }
        Ok(Some((
            entry.state.as_device_ptr().as_raw(),
            entry.xch.as_ref().map(|x| x.as_device_ptr().as_raw()),
        )))
    }

    /// A buffer of `words` words for work on `stream`: one the engine recycled from an earlier
    /// stream-ordered free on the same stream (no driver call), or a new stream-ordered
    /// allocation from the device's pool.
    ///
    /// The buffer waits for the device if it is dropped (an error return after some launches
    /// were enqueued): normal paths hand it on with [`Self::recycle`] or [`Self::owned`].
    fn alloc(&self, op: &'static str, words: usize, stream: &Stream) -> Result<PoolWords> {
        if let Some(buf) = self.recycler.take(stream_key(stream), words) {
            return Ok(PoolWords::new(buf));
        }
        // SAFETY: the buffer is used only by work enqueued on `stream` after this call (or
        // after the stream is synchronised), and every word is written by a kernel before it
        // is read.
        drv(op, unsafe {
            DeviceBuffer::uninitialized_async(words, stream)
        })
        .map(PoolWords::new)
    }

    /// Frees a scratch buffer in stream order: into the bins for the next allocation of its
    /// length on `stream`, or back to the pool.
    ///
    /// While a [`Pipeline`] operation records on this thread, the buffer is kept by the
    /// pipeline instead and freed after its chains are enqueued: its recorded kernels may
    /// still use the words, and a free enqueued now would come before them.
    fn recycle(&self, op: &'static str, buf: PoolWords, stream: &Stream) -> Result<()> {
        buf.take().map_or(Ok(()), |b| match pipeline::defer(b) {
            Ok(()) => Ok(()),
            Err(b) => drv(op, recycle_into(&self.recycler, b, stream)),
        })
    }

    /// An engine value's words: freed into the engine's bins by `free_async`.
    fn owned(&self, buf: PoolWords) -> DevWords {
        DevWords::Recycled(buf, Arc::clone(&self.recycler))
    }

    /// Whether freed results and scratch are kept for reuse on the same stream (on unless
    /// `FHELIUM_CKKS_RECYCLE=0` was set when the engine was made).
    #[must_use]
    pub fn recycling(&self) -> bool {
        self.recycler.enabled()
    }

    /// Turns recycling of freed buffers on or off. Off waits for the device and frees the
    /// buffers waiting in the bins (`cuMemFree` does not wait for work still using pool memory,
    /// and work queued before a buffer went into the bins may still run), and from then on
    /// every free goes back to the device's pool and every allocation comes from it.
    pub fn set_recycling(&self, on: bool) {
        let freed = self.recycler.set_enabled(on);
        if !freed.is_empty() {
            // Errors leave nothing better to do than freeing.
            let _ = cust::context::CurrentContext::synchronize();
        }
        drop(freed);
    }

    /// Buffers waiting in the engine's recycling bins.
    #[must_use]
    pub fn recycled_buffers(&self) -> usize {
        self.recycler.len()
    }

    // -----------------------------------------------------------------------------------
    // Uploads and downloads

    /// `InvalidLevel` past the last public level (as the CPU engine's `check_level`).
    fn check_level(&self, op: &'static str, level: usize) -> Result<()> {
        if level > self.max_level {
            return Err(CkksError::InvalidLevel {
                op,
                level,
                current: level,
                max_level: self.max_level,
            }
            .into());
        }
        Ok(())
    }

    fn check_context(&self, op: &'static str, ctx: u64) -> Result<()> {
        if ctx == self.context_id {
            Ok(())
        } else {
            Err(CkksError::ContextMismatch {
                op,
                expected: self.context_id,
                actual: ctx,
            }
            .into())
        }
    }

    fn check_rows(&self, op: &'static str, ids: &[usize]) -> Result<()> {
        let contiguous = ids.windows(2).all(|w| w[1] == w[0] + 1);
        if ids.is_empty() || !contiguous || ids[ids.len() - 1] >= self.moduli.len() {
            return Err(CudaBackendError::Unsupported {
                op,
                reason: format!("prime ids {ids:?} are not a contiguous run"),
            });
        }
        Ok(())
    }

    /// A fresh device copy of a value's words: from host memory (pageable or pinned), or
    /// device to device when the words already live in a CUDA buffer of the memory layer
    /// (a value the residency manager placed on `cuda:N`).
    fn upload_words(&self, op: &'static str, words: &Words, stream: &Stream) -> Result<PoolWords> {
        let len = words.len();
        let mut buf = self.alloc(op, len, stream)?;
        if let Some(src) = words.buffer().and_then(fhelium_cuda::Buffer::device_ptr) {
            // SAFETY: `src` is a live device allocation of `len` words owned by `words`, which
            // the caller borrows for this call; the copy is ordered on `stream` before any use
            // of `buf`, and callers keep the source value alive until that work completes
            // (documented on the upload functions).
            let rc = unsafe {
                cust::sys::cuMemcpyDtoDAsync_v2(buf.ptr(), src, len * 8, stream.as_inner())
            };
            if rc != cust::sys::cudaError_enum::CUDA_SUCCESS {
                return Err(CudaBackendError::Unsupported {
                    op,
                    reason: format!("device-to-device copy failed: {rc:?}"),
                });
            }
            return Ok(buf);
        }
        words.check_host(op)?;
        // SAFETY: host memory: pageable memory is staged by the driver before the call returns;
        // pinned memory is read in stream order and the caller keeps the value alive until the
        // stream passes the copy; `buf` is fresh and sized to the words.
        if let Some(b) = buf.raw_mut() {
            drv(op, unsafe { b.async_copy_from(words.as_slice(), stream) })?;
        }
        Ok(buf)
    }

    /// Copies a ciphertext (any host location, or a CUDA buffer of the memory layer) into the
    /// engine's pool. Keep `ct` alive until `stream` has passed the copy.
    #[tracing::instrument(
        name = "ckks.upload_ciphertext",
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
    pub fn upload_ciphertext(&self, ct: &Ciphertext, stream: &Stream) -> Result<GpuCiphertext> {
        const OP: &str = "upload_ciphertext";
        self.check_context(OP, ct.context)?;
        self.check_rows(OP, &ct.prime_ids)?;
        // Words a caller wrote through `Ciphertext::view_mut` must be canonical residues.
        ct.words
            .check_rows_canonical(OP, crate::cuda::tables::KERNEL_N, &ct.prime_ids, |id| {
                self.moduli[id]
            })?;
        Ok(GpuCiphertext {
            buf: self.owned(self.upload_words(OP, &ct.words, stream)?),
            device: self.device,
            context: ct.context,
            level: ct.level,
            scale: ct.scale,
            domain: ct.domain,
            basis: ct.basis,
            components: ct.components,
            prime_ids: ct.prime_ids.clone(),
        })
    }

    /// Copies an RNS plaintext to the device.
    #[tracing::instrument(
        name = "ckks.upload_plaintext",
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
    pub fn upload_plaintext(&self, pt: &Plaintext, stream: &Stream) -> Result<GpuPlaintext> {
        const OP: &str = "upload_plaintext";
        self.check_context(OP, pt.context)?;
        if pt.representation != PlaintextRepresentation::Rns {
            return Err(CkksError::RepresentationMismatch {
                op: OP,
                expected: PlaintextRepresentation::Rns.name(),
                actual: pt.representation.name(),
            }
            .into());
        }
        self.check_rows(OP, &pt.prime_ids)?;
        Ok(GpuPlaintext {
            buf: self.owned(self.upload_words(OP, &pt.words, stream)?),
            device: self.device,
            context: pt.context,
            level: pt.level,
            scale: pt.scale,
            domain: pt.domain,
            basis: pt.basis,
            prime_ids: pt.prime_ids.clone(),
        })
    }

    fn upload_ksk(
        &self,
        op: &'static str,
        k: &KeySwitchKey,
        g: Option<u64>,
        stream: &Stream,
    ) -> Result<GpuSwitchKey> {
        self.check_context(op, k.context)?;
        if k.rows != self.moduli.len() || k.digits != self.nq {
            return Err(CudaBackendError::Unsupported {
                op,
                reason: format!("key of {} digits x {} rows", k.digits, k.rows),
            });
        }
        Ok(GpuSwitchKey {
            buf: DevWords::Owned(self.upload_words(op, &k.words, stream)?),
            context: k.context,
            key_id: k.key_id,
            digits: k.digits,
            rows: k.rows,
            galois_element: g,
        })
    }

    /// Copies a rotation key (18 MiB at the seed preset) to the device.
    #[tracing::instrument(
        name = "ckks.upload_rotation_key",
        level = "debug",
        skip_all,
        fields(location = %self.location(), bytes = key.nbytes(), stream = ?stream.as_inner()),
        err(level = "debug")
    )]
    pub fn upload_rotation_key(&self, key: &RotationKey, stream: &Stream) -> Result<GpuSwitchKey> {
        self.upload_ksk(
            "upload_rotation_key",
            &key.ksk,
            Some(key.galois_element),
            stream,
        )
    }

    /// Copies a relinearization key to the device.
    #[tracing::instrument(
        name = "ckks.upload_relinearization_key",
        level = "debug",
        skip_all,
        fields(location = %self.location(), bytes = key.nbytes(), stream = ?stream.as_inner()),
        err(level = "debug")
    )]
    pub fn upload_relinearization_key(
        &self,
        key: &RelinearizationKey,
        stream: &Stream,
    ) -> Result<GpuSwitchKey> {
        self.upload_ksk("upload_relinearization_key", &key.ksk, None, stream)
    }

    /// The device location of this engine (`cuda:N`).
    #[must_use]
    pub fn location(&self) -> ResidencyLocation {
        cuda_location(self.device)
    }

    /// The device pointer of `words` when they live in a memory-layer buffer on this engine's
    /// device; [`CudaBackendError::NotOnDevice`] otherwise.
    fn borrowed_words(&self, op: &'static str, words: &Words) -> Result<DevWords> {
        let expected = self.location();
        let actual = words.location();
        match words.buffer().and_then(fhelium_cuda::Buffer::device_ptr) {
            Some(ptr) if actual == expected => Ok(DevWords::Borrowed {
                ptr,
                len: words.len(),
            }),
            _ => Err(CudaBackendError::NotOnDevice {
                op,
                expected,
                actual,
            }),
        }
    }

    /// A no-copy [`GpuCiphertext`] view of a ciphertext whose words the memory layer placed on
    /// this engine's `cuda:N` (e.g. a residency-manager replica borrowed through a lease).
    ///
    /// # Errors
    /// [`CudaBackendError::NotOnDevice`] when the words are elsewhere (host, `sim:N`, another
    /// device); [`CkksError::ContextMismatch`] and [`CudaBackendError::Unsupported`] as for
    /// [`CudaEngine::upload_ciphertext`].
    pub fn borrow_ciphertext<'a>(&self, ct: &'a Ciphertext) -> Result<GpuView<'a, GpuCiphertext>> {
        const OP: &str = "borrow_ciphertext";
        self.check_context(OP, ct.context)?;
        self.check_rows(OP, &ct.prime_ids)?;
        Ok(GpuView {
            value: GpuCiphertext {
                buf: self.borrowed_words(OP, &ct.words)?,
                device: self.device,
                context: ct.context,
                level: ct.level,
                scale: ct.scale,
                domain: ct.domain,
                basis: ct.basis,
                components: ct.components,
                prime_ids: ct.prime_ids.clone(),
            },
            _source: std::marker::PhantomData,
        })
    }

    /// A no-copy [`GpuPlaintext`] view of an RNS plaintext on this engine's `cuda:N`.
    ///
    /// # Errors
    /// [`CudaBackendError::NotOnDevice`], and the errors of [`CudaEngine::upload_plaintext`].
    pub fn borrow_plaintext<'a>(&self, pt: &'a Plaintext) -> Result<GpuView<'a, GpuPlaintext>> {
        const OP: &str = "borrow_plaintext";
        self.check_context(OP, pt.context)?;
        if pt.representation != PlaintextRepresentation::Rns {
            return Err(CkksError::RepresentationMismatch {
                op: OP,
                expected: PlaintextRepresentation::Rns.name(),
                actual: pt.representation.name(),
            }
            .into());
        }
        self.check_rows(OP, &pt.prime_ids)?;
        Ok(GpuView {
            value: GpuPlaintext {
                buf: self.borrowed_words(OP, &pt.words)?,
                device: self.device,
                context: pt.context,
                level: pt.level,
                scale: pt.scale,
                domain: pt.domain,
                basis: pt.basis,
                prime_ids: pt.prime_ids.clone(),
            },
            _source: std::marker::PhantomData,
        })
    }

    /// A no-copy [`GpuSwitchKey`] view of a rotation key on this engine's `cuda:N`.
    ///
    /// # Errors
    /// [`CudaBackendError::NotOnDevice`], and the errors of
    /// [`CudaEngine::upload_rotation_key`].
    pub fn borrow_rotation_key<'a>(
        &self,
        key: &'a RotationKey,
    ) -> Result<GpuView<'a, GpuSwitchKey>> {
        const OP: &str = "borrow_rotation_key";
        let k = &key.ksk;
        self.check_context(OP, k.context)?;
        if k.rows != self.moduli.len() || k.digits != self.nq {
            return Err(CudaBackendError::Unsupported {
                op: OP,
                reason: format!("key of {} digits x {} rows", k.digits, k.rows),
            });
        }
        Ok(GpuView {
            value: GpuSwitchKey {
                buf: self.borrowed_words(OP, &k.words)?,
                context: k.context,
                key_id: k.key_id,
                digits: k.digits,
                rows: k.rows,
                galois_element: Some(key.galois_element),
            },
            _source: std::marker::PhantomData,
        })
    }

    /// Copies a device ciphertext back to pageable host memory (waits for `stream`).
    #[tracing::instrument(
        name = "ckks.download_ciphertext",
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
    pub fn download_ciphertext(&self, ct: &GpuCiphertext, stream: &Stream) -> Result<Ciphertext> {
        const OP: &str = "download_ciphertext";
        drv(OP, stream.synchronize())?;
        let mut host = vec![0u64; ct.buf.len()];
        drv(OP, ct.buf.copy_to(&mut host[..]))?;
        Ok(ct.with_words(Words::from_vec(host, ResidencyLocation::PageableHost)))
    }

    /// A copy of a device ciphertext as a CPU-engine [`Ciphertext`] whose words live in an
    /// `fhelium_cuda::Buffer` on this engine's `cuda:N`, allocated from `mem` (so its budget
    /// and accounting apply): the value type the residency manager places and moves through
    /// `Resident`. [`CudaEngine::upload_ciphertext`] takes it back without a host round trip.
    /// Synchronises `stream` once (the copy must be complete before the buffer is handed out).
    #[tracing::instrument(
        name = "ckks.to_resident_ciphertext",
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
    pub fn to_resident_ciphertext(
        &self,
        ct: &GpuCiphertext,
        mem: &fhelium_cuda::Memory,
        stream: &Stream,
    ) -> Result<Ciphertext> {
        const OP: &str = "to_resident_ciphertext";
        let loc = self.location();
        let buf = mem
            .alloc(&loc, ct.buf.len(), None)
            .map_err(CkksError::from)?;
        let Some(dst) = buf.device_ptr() else {
            return Err(CudaBackendError::Unsupported {
                op: OP,
                reason: format!("{loc} buffer without a device pointer"),
            });
        };
        // SAFETY: `dst` is a fresh synchronous allocation of `len` words owned by `buf`; the
        // source is `ct`'s live buffer of the same length; the stream is synchronised before
        // `buf` is handed out or dropped.
        let rc = unsafe {
            cust::sys::cuMemcpyDtoDAsync_v2(dst, ct.ptr(), ct.buf.len() * 8, stream.as_inner())
        };
        if rc != cust::sys::cudaError_enum::CUDA_SUCCESS {
            return Err(CudaBackendError::Unsupported {
                op: OP,
                reason: format!("device-to-device copy failed: {rc:?}"),
            });
        }
        drv(OP, stream.synchronize())?;
        Ok(ct.with_words(Words::from_buffer(buf)))
    }

    /// Turns a device result into a CPU-engine [`Ciphertext`] on this engine's `cuda:N`
    /// *without a copy*: the memory layer `mem` adopts the result's device allocation (from
    /// now on it counts in `mem`'s usage of `cuda:N`, and the residency manager can place the
    /// value through `Resident`). Synchronises `stream` once, so the words are complete before
    /// any other stream reads them. [`CudaEngine::to_resident_ciphertext`] copies instead and
    /// leaves `ct` to the caller.
    ///
    /// # Errors
    /// An [`IntoResidentError`] that gives `ct` back unchanged: `ct` is another device's
    /// ([`CudaBackendError::NotOnDevice`]), `mem` has no CUDA backend for this device
    /// ([`CkksError::Memory`] with `LocationUnavailable`), an injected allocation failure, or
    /// the stream synchronisation failed.
    pub fn into_resident_ciphertext(
        &self,
        ct: GpuCiphertext,
        mem: &fhelium_cuda::Memory,
        stream: &Stream,
    ) -> std::result::Result<Ciphertext, IntoResidentError> {
        self.adopt_result("into_resident_ciphertext", ct, mem, AdoptOn::Synced(stream))
    }

    /// [`into_resident_ciphertext`](Self::into_resident_ciphertext) for a device plaintext
    /// (e.g. from [`encode_for_multiplication`](Self::encode_for_multiplication)): a `cuda:N`
    /// [`Plaintext`] (RNS representation) over the same device words, counted in `mem`'s usage;
    /// a refusal gives the plaintext back.
    pub fn into_resident_plaintext(
        &self,
        pt: GpuPlaintext,
        mem: &fhelium_cuda::Memory,
        stream: &Stream,
    ) -> std::result::Result<Plaintext, IntoResidentError<GpuPlaintext>> {
        self.adopt_result("into_resident_plaintext", pt, mem, AdoptOn::Synced(stream))
    }

    /// [`into_resident_ciphertext`](Self::into_resident_ciphertext) without a host wait, for
    /// a result computed on `stream.as_cust()` (a `cust` stream handed to the memory layer by
    /// [`fhelium_cuda::Memory::wrap_stream`]): the memory layer adopts the device allocation
    /// in stream order ([`fhelium_cuda::Memory::adopt_device_words_on`]). The returned
    /// value's buffer is ordered after the work enqueued on `stream` so far: the next
    /// operations on `stream` need nothing, copies of the memory layer and leases of the
    /// residency manager wait for it on the GPU, and dropping it frees the memory on
    /// `stream`. `stream` must be the stream the result was computed on (or one ordered after
    /// it).
    ///
    /// ```no_run
    /// use fhelium_ckks::cuda::CudaEngine;
    /// use fhelium_ckks::{CpuEngine, Domain, Preset};
    /// use fhelium_cuda::{Memory, ResidencyLocation, Resident};
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mem = Memory::with_cuda()?;
    /// let cpu = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [1; 32])?;
    /// let gpu = CudaEngine::new(cpu.context(), 0)?;
    /// // One stream for the engine and the memory layer: the engine takes its `cust` side.
    /// let stream = gpu.memory_stream(&mem)?;
    /// let s = stream.as_cust().expect("a wrapped stream");
    /// let ct = gpu.upload_ciphertext(&cpu.encrypt_message(&vec![0.5; cpu.num_slots()])?, s)?;
    /// let ntt = gpu.coefficient_domain_to_ntt_domain(&ct, s)?;
    /// ct.free_async(s)?;
    /// // No host wait: the value is ordered after `stream` and freed on it when dropped.
    /// let value = gpu.into_resident_ciphertext_on(ntt, &mem, &stream)?;
    /// assert_eq!(value.placement()?, ResidencyLocation::Cuda(0));
    /// // A copy to the host waits for the NTT on the GPU; the host waits for the copy.
    /// let host = value
    ///     .materialize(&mem, &ResidencyLocation::PageableHost, None)?
    ///     .wait()?;
    /// assert_eq!(host.domain(), Domain::Ntt);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`into_resident_ciphertext`](Self::into_resident_ciphertext), plus
    /// [`fhelium_cuda::MemoryError::StreamMismatch`] when `stream` is not a CUDA stream of this
    /// engine's device and [`fhelium_cuda::MemoryError::NotStreamOrdered`] for a result that
    /// is not pool memory; the ciphertext is given back unchanged.
    pub fn into_resident_ciphertext_on(
        &self,
        ct: GpuCiphertext,
        mem: &fhelium_cuda::Memory,
        stream: &fhelium_cuda::Stream,
    ) -> std::result::Result<Ciphertext, IntoResidentError> {
        self.adopt_result(
            "into_resident_ciphertext_on",
            ct,
            mem,
            AdoptOn::Ordered(stream),
        )
    }

    /// [`into_resident_plaintext`](Self::into_resident_plaintext) in stream order, as
    /// [`into_resident_ciphertext_on`](Self::into_resident_ciphertext_on).
    ///
    /// # Errors
    /// As [`into_resident_ciphertext_on`](Self::into_resident_ciphertext_on); the plaintext is
    /// given back unchanged.
    pub fn into_resident_plaintext_on(
        &self,
        pt: GpuPlaintext,
        mem: &fhelium_cuda::Memory,
        stream: &fhelium_cuda::Stream,
    ) -> std::result::Result<Plaintext, IntoResidentError<GpuPlaintext>> {
        self.adopt_result(
            "into_resident_plaintext_on",
            pt,
            mem,
            AdoptOn::Ordered(stream),
        )
    }

    /// Hands `value`'s device words to `mem` without a copy: after one synchronisation of a
    /// `cust` stream, or in stream order on a memory-layer stream.
    fn adopt_result<V: Adoptable>(
        &self,
        op: &'static str,
        value: V,
        mem: &fhelium_cuda::Memory,
        on: AdoptOn<'_>,
    ) -> std::result::Result<V::Host, IntoResidentError<V>> {
        let back = |error: CudaBackendError, value: V| IntoResidentError {
            error: Box::new(error),
            value: Box::new(value),
        };
        let loc = self.location();
        if value.device() != self.device {
            let error = CudaBackendError::NotOnDevice {
                op,
                expected: loc,
                actual: cuda_location(value.device()),
            };
            return Err(back(error, value));
        }
        if let Err(e) = mem.check_available(op, &loc) {
            return Err(back(CkksError::from(e).into(), value));
        }
        if let AdoptOn::Synced(stream) = on {
            if let Err(e) = drv(op, stream.synchronize()) {
                return Err(back(e, value));
            }
        }
        let (ptr, words) = (value.words().ptr(), value.words().len());
        let adopted = match on {
            // SAFETY: `value` owns `ptr` (an engine allocation of `words` words on this
            // engine's device, from the device's pool, in the primary context `mem` uses too):
            // its handle is forgotten below, without freeing, once `mem` has taken the
            // allocation, so it has exactly one owner; every kernel writing it was enqueued on
            // `stream`, synchronised above. A borrowed view never reaches here: `GpuView`
            // hands out references only.
            AdoptOn::Synced(_) => unsafe { mem.adopt_device_words(&loc, ptr, words) },
            // SAFETY: ownership as above; every kernel writing it was enqueued on `stream`
            // (this method's contract), so the adoption's event and the stream-ordered free
            // follow them; the memory layer refuses memory that is not pool memory.
            AdoptOn::Ordered(stream) => unsafe {
                mem.adopt_device_words_on(&loc, ptr, words, stream)
            },
        };
        let buf = match adopted {
            Ok(b) => b,
            Err(e) => return Err(back(CkksError::from(e).into(), value)),
        };
        let host = value.host_value(Words::from_buffer(buf));
        value.forget_words();
        Ok(host)
    }

    /// Raw words of a device ciphertext (waits for `stream`).
    #[tracing::instrument(
        name = "ckks.download_words",
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
    pub fn download_words(&self, ct: &GpuCiphertext, stream: &Stream) -> Result<Vec<u64>> {
        Ok(self
            .download_ciphertext(ct, stream)?
            .words
            .as_slice()
            .to_vec())
    }

    /// The words of a device key-switching key, `[digit, component, row, N]` as the CPU
    /// engine's `KeySwitchKey::view` orders them (an uploaded key, or one the device made:
    /// `CudaEngine::device_key_cache`). Waits for `stream` (the work that made the key) first.
    #[tracing::instrument(
        name = "ckks.download_switch_key_words",
        level = "debug",
        skip_all,
        fields(location = %self.location(), bytes = key.nbytes(), stream = ?stream.as_inner()),
        err(level = "debug")
    )]
    pub fn download_switch_key_words(
        &self,
        key: &GpuSwitchKey,
        stream: &Stream,
    ) -> Result<Vec<u64>> {
        const OP: &str = "download_switch_key_words";
        self.check_context(OP, key.context)?;
        drv(OP, stream.synchronize())?;
        let mut host = vec![0u64; (key.nbytes() / 8) as usize];
        drv(OP, key.buf.copy_to(&mut host))?;
        Ok(host)
    }

    /// Fills `words` words of the stream-ordered pool with `0xFF` bytes and frees them again, so
    /// that the next allocations on `stream` most likely reuse poisoned memory (tests use this
    /// to catch output words a kernel forgets to write).
    ///
    /// The buffers waiting in the engine's recycling bins for `stream` are poisoned too (they
    /// are what the next allocations on `stream` take first).
    pub fn poison_pool(&self, words: usize, stream: &Stream) -> Result<()> {
        self.poison_pool_with(words, 0xFF, stream)
    }

    /// [`Self::poison_pool`] with every byte set to `byte` instead of `0xFF` (tests choose the
    /// top four bits of every poisoned word this way, e.g. to fill outputs with words that
    /// look like the paired NTT kernels' tagged exchange words, decision 0514).
    pub fn poison_pool_with(&self, words: usize, byte: u8, stream: &Stream) -> Result<()> {
        const OP: &str = "poison_pool";
        // SAFETY: the buffer is only written (memset below, ordered on `stream`) and freed.
        let mut b = drv(OP, unsafe {
            DeviceBuffer::<u64>::uninitialized_async(words, stream)
        })?;
        // SAFETY: `b` is a live allocation of `words` words, ordered on `stream`.
        drv(OP, unsafe { b.set_8_async(byte, stream) })?;
        drv(OP, b.drop_async(stream))?;
        for mut buf in self.recycler.take_all(stream_key(stream)) {
            // SAFETY: `buf` was freed in stream order on `stream`, so the memset runs after
            // every earlier use of it.
            drv(OP, unsafe { buf.set_8_async(byte, stream) })?;
            drv(OP, recycle_into(&self.recycler, buf, stream))?;
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------
    // Helpers

    fn same_shape(&self, op: &'static str, a: &GpuCiphertext, b: &GpuCiphertext) -> Result<()> {
        self.check_context(op, a.context)?;
        self.check_context(op, b.context)?;
        if a.level != b.level {
            return Err(CkksError::LevelMismatch {
                op,
                left: a.level,
                right: b.level,
            }
            .into());
        }
        if a.domain != b.domain {
            return Err(CkksError::DomainMismatch {
                op,
                expected: a.domain,
                actual: b.domain,
            }
            .into());
        }
        if a.basis != b.basis {
            return Err(CkksError::BasisMismatch {
                op,
                expected: a.basis,
                actual: b.basis,
            }
            .into());
        }
        if a.components != b.components {
            return Err(CkksError::ComponentMismatch {
                op,
                expected: a.components,
                actual: b.components,
            }
            .into());
        }
        Ok(())
    }

    fn need_domain(op: &'static str, have: Domain, want: Domain) -> Result<()> {
        if have == want {
            Ok(())
        } else {
            Err(CkksError::DomainMismatch {
                op,
                expected: want,
                actual: have,
            }
            .into())
        }
    }

    fn need_components(op: &'static str, have: usize, want: usize) -> Result<()> {
        if have == want {
            Ok(())
        } else {
            Err(CkksError::ComponentMismatch {
                op,
                expected: want,
                actual: have,
            }
            .into())
        }
    }

    fn like(&self, ct: &GpuCiphertext, buf: PoolWords) -> GpuCiphertext {
        GpuCiphertext {
            buf: self.owned(buf),
            device: ct.device,
            context: ct.context,
            level: ct.level,
            scale: ct.scale,
            domain: ct.domain,
            basis: ct.basis,
            components: ct.components,
            prime_ids: ct.prime_ids.clone(),
        }
    }

    fn ew_grid(limbs: usize, comps: usize) -> (u32, u32, u32) {
        ((KERNEL_N as u32) / EW_THREADS, limbs as u32, comps as u32)
    }

    /// Forward NTT of `rows x comps` rows (grid y = row, z = component) as `f` describes: on
    /// [`NttKernels::GlobalSync`] one `ntt_fwd_gp` launch for one or two components of plain
    /// canonical rows, else one `ntt_fwd_gs` launch, or `ntt_fwd_gq` when the rows are more
    /// than one cooperative wave holds; otherwise one cluster launch, or the column pass then
    /// the row pass in place on `f.dst`.
    fn ntt_fwd(
        &self,
        op: &'static str,
        f: &FwdNtt,
        rows: usize,
        comps: usize,
        stream: &Stream,
    ) -> Result<()> {
        let (primes, twf) = (dev_ptr(&self.primes), dev_ptr(&self.twf));
        let yz = (rows as u32, comps as u32);
        let kernels = self.ntt_kernels();
        // One or two components of canonical dense rows (no lift, no automorphism, no
        // pre-step): the paired kernel, 16 blocks per limb (one group per block for one
        // component) instead of the *_gs kernels' 8.
        let plain = f.canonical
            && f.mode == 0
            && f.ginv == 0
            && f.src_by_z == 0
            && f.in_ys == KERNEL_N as u64
            && f.out_ys == f.in_ys
            && f.src_off == f.prime_off;
        if kernels == NttKernels::GlobalSync
            && plain
            && self.launch_gp(
                op,
                K::NttFwdGp,
                f.prime_off as usize,
                rows,
                comps,
                stream,
                &[
                    Arg::U64(f.src),
                    Arg::U64(f.dst),
                    Arg::U64(primes),
                    Arg::U64(twf),
                    Arg::U32(f.prime_off),
                    Arg::U64(f.in_ys),
                    Arg::U64(f.in_zs),
                ],
            )?
        {
            return Ok(());
        }
        let args = f.args(primes, twf, dev_ptr(&self.reduce));
        // More limbs than one cooperative wave holds (a key's digits x rows): the same
        // phases as a queue of work items, which needs no co-residency.
        if kernels == NttKernels::GlobalSync
            && (self.launch_gs(op, K::NttFwdGs, yz, stream, &args)?
                || self.launch_gq(op, yz, stream, &args)?)
        {
            return Ok(());
        }
        let kernel = kernels.ntt_pair().map(|(fwd, _)| fwd);
        if self.launch_cluster(op, kernel, yz, stream, &args)? {
            return Ok(());
        }
        let grid = (NTT_BLOCKS_PER_LIMB, yz.0, yz.1);
        self.launch(op, K::NttFwdCols, grid, NTT_THREADS, stream, &args)?;
        self.launch(
            op,
            K::NttFwdRows,
            grid,
            NTT_THREADS,
            stream,
            &[
                Arg::U64(f.dst),
                Arg::U64(f.dst),
                Arg::U64(primes),
                Arg::U64(twf),
                Arg::U32(f.prime_off),
                Arg::U64(f.out_ys),
                Arg::U64(f.out_zs),
                Arg::U64(f.out_ys),
                Arg::U64(f.out_zs),
            ],
        )
    }

    /// Inverse NTT then `x * post[pid]`: one cluster launch, or the row pass (`src` to `dst`)
    /// then the column pass in place on `dst`.
    fn ntt_inv(
        &self,
        op: &'static str,
        v: &InvNtt,
        rows: usize,
        comps: usize,
        stream: &Stream,
    ) -> Result<()> {
        let (primes, twi) = (dev_ptr(&self.primes), dev_ptr(&self.twi));
        let yz = (rows as u32, comps as u32);
        let (args, len) = v.args(v.src, v.dst, primes, twi, Some(v.post));
        let kernels = self.ntt_kernels();
        if kernels == NttKernels::GlobalSync
            && self.launch_gs(op, K::NttInvGs, yz, stream, &args[..len])?
        {
            return Ok(());
        }
        let kernel = kernels.ntt_pair().map(|(_, inv)| inv);
        if self.launch_cluster(op, kernel, yz, stream, &args[..len])? {
            return Ok(());
        }
        let grid = (NTT_BLOCKS_PER_LIMB, yz.0, yz.1);
        let (rargs, rlen) = v.args(v.src, v.dst, primes, twi, None);
        self.launch(op, K::NttInvRows, grid, NTT_THREADS, stream, &rargs[..rlen])?;
        let (cargs, clen) = v.args(v.dst, v.dst, primes, twi, Some(v.post));
        self.launch(op, K::NttInvCols, grid, NTT_THREADS, stream, &cargs[..clen])
    }

    /// Forward NTT of `comps x limbs` dense rows of canonical residues (engine values, the
    /// sampler's v rows) from `src` (row stride N, component stride `limbs * N`) to `dst`,
    /// prime ids starting at `prime_off`.
    #[allow(clippy::too_many_arguments)]
    fn ntt_forward_raw(
        &self,
        op: &'static str,
        src: u64,
        dst: u64,
        prime_off: usize,
        limbs: usize,
        comps: usize,
        stream: &Stream,
    ) -> Result<()> {
        let f = FwdNtt {
            canonical: true,
            ..FwdNtt::dense(src, dst, prime_off, limbs)
        };
        self.ntt_fwd(op, &f, limbs, comps, stream)
    }

    /// Forward NTT of signed int64 rows (`mode` 1: each word lifted modulo the row's prime):
    /// component z reads the one row `src + z·N` for every prime `prime_off..prime_off + rows`
    /// and writes rows of N at `dst + z·out_zs` (words). Key generation's errors (one per
    /// digit, on every row) and an encoded message's coefficients (one component).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn ntt_forward_signed_rows(
        &self,
        op: &'static str,
        src: u64,
        dst: u64,
        prime_off: usize,
        rows: usize,
        comps: usize,
        out_zs: usize,
        stream: &Stream,
    ) -> Result<()> {
        let n = KERNEL_N as u64;
        let f = FwdNtt {
            in_ys: 0,
            in_zs: n,
            out_zs: out_zs as u64,
            mode: 1,
            ..FwdNtt::dense(src, dst, prime_off, rows)
        };
        self.ntt_fwd(op, &f, rows, comps, stream)
    }

    /// Inverse NTT of dense rows with the `post` per-prime constant.
    #[allow(clippy::too_many_arguments)]
    fn ntt_inverse_raw(
        &self,
        op: &'static str,
        src: u64,
        dst: u64,
        post: u64,
        prime_off: usize,
        limbs: usize,
        comps: usize,
        stream: &Stream,
    ) -> Result<()> {
        let n = KERNEL_N as u64;
        let v = InvNtt {
            src,
            dst,
            post,
            prime_off: prime_off as u32,
            ys: n,
            zs: limbs as u64 * n,
        };
        // One or two components by paired blocks (ntt_inv_gp), else the *_gs path.
        let paired = self.ntt_kernels() == NttKernels::GlobalSync
            && self.launch_gp(
                op,
                K::NttInvGp,
                prime_off,
                limbs,
                comps,
                stream,
                &[
                    Arg::U64(src),
                    Arg::U64(dst),
                    Arg::U64(dev_ptr(&self.primes)),
                    Arg::U64(dev_ptr(&self.twi)),
                    Arg::U64(post),
                    Arg::U32(prime_off as u32),
                    Arg::U64(v.ys),
                    Arg::U64(v.zs),
                ],
            )?;
        if paired {
            return Ok(());
        }
        self.ntt_inv(op, &v, limbs, comps, stream)
    }

    // -----------------------------------------------------------------------------------
    // Operations

    /// Coefficient domain -> NTT domain (all components and limbs; one launch, two on the
    /// two-pass kernels).
    #[tracing::instrument(
        name = "ckks.coefficient_domain_to_ntt_domain",
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
    pub fn coefficient_domain_to_ntt_domain(
        &self,
        ct: &GpuCiphertext,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "coefficient_domain_to_ntt_domain";
        self.check_context(OP, ct.context)?;
        Self::need_domain(OP, ct.domain, Domain::Coefficient)?;
        let out = self.alloc(OP, ct.buf.len(), stream)?;
        let f = FwdNtt {
            // Engine values hold canonical residues: no reducing pre-step.
            canonical: true,
            ..FwdNtt::dense(ct.ptr(), dev_ptr(&out), ct.prime_ids[0], ct.num_limbs())
        };
        // Two components by paired blocks (ntt_fwd_gp), three by the *_gs path (ntt_fwd).
        self.ntt_fwd(OP, &f, ct.num_limbs(), ct.components, stream)?;
        let mut r = self.like(ct, out);
        r.domain = Domain::Ntt;
        Ok(r)
    }

    /// NTT domain -> coefficient domain (one launch, two on the two-pass kernels).
    #[tracing::instrument(
        name = "ckks.ntt_domain_to_coefficient_domain",
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
    pub fn ntt_domain_to_coefficient_domain(
        &self,
        ct: &GpuCiphertext,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "ntt_domain_to_coefficient_domain";
        self.check_context(OP, ct.context)?;
        Self::need_domain(OP, ct.domain, Domain::Ntt)?;
        let out = self.alloc(OP, ct.buf.len(), stream)?;
        self.ntt_inverse_raw(
            OP,
            ct.ptr(),
            dev_ptr(&out),
            dev_ptr(&self.n_inv),
            ct.prime_ids[0],
            ct.num_limbs(),
            ct.components,
            stream,
        )?;
        let mut r = self.like(ct, out);
        r.domain = Domain::Coefficient;
        Ok(r)
    }

    fn binary(
        &self,
        op: &'static str,
        kernel: K,
        a: &GpuCiphertext,
        b: &GpuCiphertext,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        self.same_shape(op, a, b)?;
        if a.scale.to_bits() != b.scale.to_bits() {
            return Err(CkksError::ScaleMismatch {
                op,
                left: a.scale,
                right: b.scale,
            }
            .into());
        }
        let out = self.alloc(op, a.buf.len(), stream)?;
        self.launch(
            op,
            kernel,
            Self::ew_grid(a.num_limbs(), a.components),
            EW_THREADS,
            stream,
            &[
                Arg::U64(a.ptr()),
                Arg::U64(b.ptr()),
                Arg::U64(dev_ptr(&out)),
                Arg::U64(dev_ptr(&self.primes)),
                Arg::U32(a.prime_ids[0] as u32),
            ],
        )?;
        Ok(self.like(a, out))
    }

    /// `a + b` (same level, domain, components and bit-equal scale).
    #[tracing::instrument(
        name = "ckks.add",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = a.level(),
            bytes = a.nbytes(),
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn add(
        &self,
        a: &GpuCiphertext,
        b: &GpuCiphertext,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        self.binary("add", K::EwAdd, a, b, stream)
    }

    /// `a - b`.
    #[tracing::instrument(
        name = "ckks.subtract",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = a.level(),
            bytes = a.nbytes(),
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn subtract(
        &self,
        a: &GpuCiphertext,
        b: &GpuCiphertext,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        self.binary("subtract", K::EwSub, a, b, stream)
    }

    /// `-a`.
    #[tracing::instrument(
        name = "ckks.negate",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = a.level(),
            bytes = a.nbytes(),
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn negate(&self, a: &GpuCiphertext, stream: &Stream) -> Result<GpuCiphertext> {
        self.unary("negate", K::EwNeg, a, &[], stream)
    }

    /// An elementwise kernel over every word of `a` into a new value of its shape, taking
    /// `(a, out, primes, mid.., prime_off)`.
    fn unary(
        &self,
        op: &'static str,
        kernel: K,
        a: &GpuCiphertext,
        mid: &[Arg],
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        self.check_context(op, a.context)?;
        let out = self.alloc(op, a.buf.len(), stream)?;
        let mut args = [Arg::U32(0); 6];
        let len = 4 + mid.len();
        args[0] = Arg::U64(a.ptr());
        args[1] = Arg::U64(dev_ptr(&out));
        args[2] = Arg::U64(dev_ptr(&self.primes));
        args[3..3 + mid.len()].copy_from_slice(mid);
        args[len - 1] = Arg::U32(a.prime_ids[0] as u32);
        self.launch(
            op,
            kernel,
            Self::ew_grid(a.num_limbs(), a.components),
            EW_THREADS,
            stream,
            &args[..len],
        )?;
        Ok(self.like(a, out))
    }

    /// `ct + pt` on component 0 (an RNS plaintext in the ciphertext's domain, level and basis,
    /// with a bit-equal scale); the other components are copied.
    #[tracing::instrument(
        name = "ckks.add_plaintext",
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
    pub fn add_plaintext(
        &self,
        ct: &GpuCiphertext,
        pt: &GpuPlaintext,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "add_plaintext";
        self.check_context(OP, ct.context)?;
        self.check_context(OP, pt.context)?;
        Self::need_domain(OP, pt.domain, ct.domain)?;
        if ct.level != pt.level {
            return Err(CkksError::LevelMismatch {
                op: OP,
                left: ct.level,
                right: pt.level,
            }
            .into());
        }
        if ct.basis != pt.basis || ct.prime_ids != pt.prime_ids {
            return Err(CkksError::BasisMismatch {
                op: OP,
                expected: ct.basis,
                actual: pt.basis,
            }
            .into());
        }
        if ct.scale.to_bits() != pt.scale.to_bits() {
            return Err(CkksError::ScaleMismatch {
                op: OP,
                left: ct.scale,
                right: pt.scale,
            }
            .into());
        }
        let limbs = ct.num_limbs();
        let out = self.alloc(OP, ct.buf.len(), stream)?;
        self.launch(
            OP,
            K::EwAdd,
            Self::ew_grid(limbs, 1),
            EW_THREADS,
            stream,
            &[
                Arg::U64(ct.ptr()),
                Arg::U64(pt.ptr()),
                Arg::U64(dev_ptr(&out)),
                Arg::U64(dev_ptr(&self.primes)),
                Arg::U32(ct.prime_ids[0] as u32),
            ],
        )?;
        let comp = (limbs * KERNEL_N * 8) as u64;
        self.launch(
            OP,
            K::DropRows,
            Self::ew_grid(limbs, ct.components - 1),
            EW_THREADS,
            stream,
            &[
                Arg::U64(ct.ptr() + comp),
                Arg::U64(dev_ptr(&out) + comp),
                Arg::U32(limbs as u32),
                Arg::U32(0),
            ],
        )?;
        Ok(self.like(ct, out))
    }

    fn product_scale(op: &'static str, a: f64, b: f64) -> Result<f64> {
        let s = a * b;
        if s.is_finite() && s > 0.0 {
            Ok(s)
        } else {
            Err(CkksError::InvalidScale { op, scale: s }.into())
        }
    }

    /// `ct ⊙ pt` in the NTT domain (each component times the plaintext); scale multiplies.
    #[tracing::instrument(
        name = "ckks.multiply_plaintext",
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
    pub fn multiply_plaintext(
        &self,
        ct: &GpuCiphertext,
        pt: &GpuPlaintext,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "multiply_plaintext";
        self.check_context(OP, ct.context)?;
        self.check_context(OP, pt.context)?;
        Self::need_domain(OP, ct.domain, Domain::Ntt)?;
        Self::need_domain(OP, pt.domain, Domain::Ntt)?;
        if ct.level != pt.level {
            return Err(CkksError::LevelMismatch {
                op: OP,
                left: ct.level,
                right: pt.level,
            }
            .into());
        }
        if ct.basis != pt.basis || ct.prime_ids != pt.prime_ids {
            return Err(CkksError::BasisMismatch {
                op: OP,
                expected: ct.basis,
                actual: pt.basis,
            }
            .into());
        }
        let scale = Self::product_scale(OP, ct.scale, pt.scale)?;
        let out = self.alloc(OP, ct.buf.len(), stream)?;
        self.launch(
            OP,
            K::EwMul,
            Self::ew_grid(ct.num_limbs(), ct.components),
            EW_THREADS,
            stream,
            &[
                Arg::U64(ct.ptr()),
                Arg::U64(pt.ptr()),
                Arg::U64(dev_ptr(&out)),
                Arg::U64(dev_ptr(&self.primes)),
                Arg::U64(dev_ptr(&self.mont_fix)),
                Arg::U32(ct.prime_ids[0] as u32),
                Arg::U64(0),
            ],
        )?;
        let mut r = self.like(ct, out);
        r.scale = scale;
        Ok(r)
    }

    /// Tensor product of two 2-component NTT-domain ciphertexts: 3 components.
    #[tracing::instrument(
        name = "ckks.multiply",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = a.level(),
            bytes = a.nbytes(),
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn multiply(
        &self,
        a: &GpuCiphertext,
        b: &GpuCiphertext,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "multiply";
        self.same_shape(OP, a, b)?;
        Self::need_domain(OP, a.domain, Domain::Ntt)?;
        Self::need_components(OP, a.components, 2)?;
        let scale = Self::product_scale(OP, a.scale, b.scale)?;
        let limbs = a.num_limbs();
        let out = self.alloc(OP, 3 * limbs * KERNEL_N, stream)?;
        self.launch(
            OP,
            K::EwTensor,
            Self::ew_grid(limbs, 1),
            EW_THREADS,
            stream,
            &[
                Arg::U64(a.ptr()),
                Arg::U64(b.ptr()),
                Arg::U64(dev_ptr(&out)),
                Arg::U64(dev_ptr(&self.primes)),
                Arg::U64(dev_ptr(&self.mont_fix)),
                Arg::U32(a.prime_ids[0] as u32),
                Arg::U32(limbs as u32),
            ],
        )?;
        let mut r = self.like(a, out);
        r.scale = scale;
        r.components = 3;
        Ok(r)
    }

    fn next_level_check(&self, op: &'static str, ct: &GpuCiphertext) -> Result<()> {
        self.check_context(op, ct.context)?;
        if ct.level >= self.max_level {
            return Err(CkksError::LevelExhausted {
                op,
                level: ct.level,
                max_level: self.max_level,
            }
            .into());
        }
        Ok(())
    }

    /// Rescale by the leading prime with nearest rounding (coefficient domain, spec 3.12).
    #[tracing::instrument(
        name = "ckks.rescale_to_next_level",
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
    pub fn rescale_to_next_level(
        &self,
        ct: &GpuCiphertext,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "rescale_to_next_level";
        self.next_level_check(OP, ct)?;
        Self::need_domain(OP, ct.domain, Domain::Coefficient)?;
        let limbs = ct.num_limbs();
        let drop = ct.prime_ids[0];
        let q_drop = self.moduli[drop];
        let out = self.alloc(OP, ct.components * (limbs - 1) * KERNEL_N, stream)?;
        let q_inv_row = dev_ptr(&self.q_inv) + (drop * self.moduli.len() * 2 * 8) as u64;
        self.launch(
            OP,
            K::Rescale,
            Self::ew_grid(limbs - 1, ct.components),
            EW_THREADS,
            stream,
            &[
                Arg::U64(ct.ptr()),
                Arg::U64(dev_ptr(&out)),
                Arg::U64(dev_ptr(&self.primes)),
                Arg::U64(q_inv_row),
                Arg::U32(drop as u32),
                Arg::U32(limbs as u32),
                Arg::U32(0),
            ],
        )?;
        let mut r = self.like(ct, out);
        r.level += 1;
        r.scale = ct.scale / q_drop as f64;
        r.prime_ids.remove(0);
        Ok(r)
    }

    /// Drop the leading prime without dividing (scale unchanged).
    #[tracing::instrument(
        name = "ckks.mod_switch_to_next_level",
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
    pub fn mod_switch_to_next_level(
        &self,
        ct: &GpuCiphertext,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "mod_switch_to_next_level";
        self.next_level_check(OP, ct)?;
        self.drop_rows(OP, ct, 1, stream)
    }

    /// The coefficient-domain automorphism `σ_g` of every component (no key switch).
    #[tracing::instrument(
        name = "ckks.automorphism",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = ct.level(),
            bytes = ct.nbytes(),
            galois_element = galois_element,
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn automorphism(
        &self,
        ct: &GpuCiphertext,
        galois_element: u64,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "automorphism";
        self.check_context(OP, ct.context)?;
        Self::need_domain(OP, ct.domain, Domain::Coefficient)?;
        if galois_element.is_multiple_of(2) {
            return Err(CudaBackendError::Unsupported {
                op: OP,
                reason: format!("even Galois element {galois_element}"),
            });
        }
        let out = self.alloc(OP, ct.buf.len(), stream)?;
        self.launch(
            OP,
            K::AutCoeff,
            Self::ew_grid(ct.num_limbs(), ct.components),
            EW_THREADS,
            stream,
            &[
                Arg::U64(ct.ptr()),
                Arg::U64(dev_ptr(&out)),
                Arg::U64(dev_ptr(&self.primes)),
                Arg::U32(ct.prime_ids[0] as u32),
                Arg::U32(galois_inverse(galois_element, KERNEL_N) as u32),
            ],
        )?;
        Ok(self.like(ct, out))
    }

    /// Hybrid key switch of the coefficient-domain row set at `src` (L rows from prime id
    /// `prime_off`), optionally through `σ_g` (`ginv != 0`), then ModDown and the additions
    /// `add` names: with [`KsAdd::Coeff`], `out_0 = σ_g(add0) + corr_0` (or `add0 + corr_0`),
    /// `out_1 = add1 + corr_1` (or `corr_1`); with [`KsAdd::NttTimesP`], `out_c = row_c +
    /// corr_c` for the NTT-domain rows (decision 0506).
    ///
    /// Cluster kernels: three launches (ModUp + whole forward NTT per target row and digit,
    /// `σ_g` applied as a permutation of its output slots; key inner product (+ the rows times
    /// P) + whole inverse NTT per target row and component, `ks_inner_gs` without clusters on
    /// [`NttKernels::GlobalSync`] when the limbs fit one cooperative wave, else `ks_inner_cl`;
    /// ModDown + adds); on [`NttKernels::GlobalSync`] the ModUp is `ntt_fwd_gq`, the same
    /// words (`σ_g` as the same output permutation). Two-pass kernels:
    /// four (ModUp through `σ_g` + column pass; row pass + inner product + inverse row pass;
    /// inverse column pass; ModDown + adds), and for [`KsAdd::NttTimesP`] the inverse NTT of
    /// the rows before ModDown. One scratch allocation either way.
    #[allow(clippy::too_many_arguments)]
    fn key_switch(
        &self,
        op: &'static str,
        src: u64,
        add: KsAdd,
        ginv: u32,
        key: &GpuSwitchKey,
        prime_off: usize,
        limbs: usize,
        pre: Option<&dyn Fn() -> Result<()>>,
        hoisted: Option<Hoisted>,
        stream: &Stream,
    ) -> Result<PoolWords> {
        let n = KERNEL_N as u64;
        let rows = limbs + 1; // active Q rows + P
        let ext_words = limbs * rows * KERNEL_N;
        let acc_words = 2 * rows * KERNEL_N;
        let kernels = self.ntt_kernels();
        let global = kernels == NttKernels::GlobalSync;
        // A hoisted switch on GlobalSync reads the shared extended digits (`ks_inner_gh`): its
        // scratch is the accumulators alone, and the ModUp's part is allocated below only if
        // that launch is refused. Otherwise one buffer holds both: [ext | acc].
        let lean = hoisted.is_some() && global;
        // Launches a pipeline recorded before this switch (none outside a pipeline).
        let earlier_launches = graphs::recorded().unwrap_or(0);
        let scratch = self.alloc(
            op,
            if lean {
                acc_words
            } else {
                ext_words + acc_words
            },
            stream,
        )?;
        let out = self.alloc(op, 2 * limbs * KERNEL_N, stream)?;
        // The launches from here to ModDown (with the caller's pre-step) go out as one chain
        // graph (decision 0508), submitted before any scratch is recycled.
        let chain = self.start_chain();
        if let Some(pre) = pre {
            pre()?;
        }
        let (mut ext, acc) = if lean {
            (0, dev_ptr(&scratch))
        } else {
            (
                dev_ptr(&scratch),
                dev_ptr(&scratch) + (ext_words * 8) as u64,
            )
        };
        let (primes, twf, twi) = (
            dev_ptr(&self.primes),
            dev_ptr(&self.twf),
            dev_ptr(&self.twi),
        );
        let key_rows = key.rows as u64;
        // Rows ks_inner_gs / ks_inner_cl add times P before the inverse NTT (none for a plain
        // switch).
        let (addn, addn_cs, padd) = match add {
            KsAdd::NttTimesP { base } => (base, limbs as u64 * n, dev_ptr(&self.p_mod)),
            KsAdd::Coeff { .. } => (0, 0, 0),
        };
        // ks_inner_gs / ks_inner_cl take (twi, ks_post) where ks_inner takes (twf, twi), and
        // three more arguments (the added rows) that ks_inner does not take.
        let inner = |ext: u64, w0: u64, w1: u64| {
            [
                Arg::U64(ext),
                Arg::U64(key.buf.ptr()),
                Arg::U64(acc),
                Arg::U64(primes),
                Arg::U64(w0),
                Arg::U64(w1),
                Arg::U32(prime_off as u32),
                Arg::U32(limbs as u32),
                Arg::U32(rows as u32),
                Arg::U64(2 * key_rows * n),
                Arg::U64(key_rows * n),
                Arg::U64(addn),
                Arg::U64(addn_cs),
                Arg::U64(padd),
            ]
        };
        // Hoisted on GlobalSync: the inner product reads the shared extended digits through
        // σ_g (`ks_inner_gh`), no ModUp and no permutation pass.
        let fused = match hoisted {
            Some(h) if global => {
                let mut args = [Arg::U32(h.g); 15];
                args[..14].copy_from_slice(&inner(h.ext, twi, dev_ptr(&self.ks_post)));
                let launched = self.launch_gs(op, K::KsInnerGh, (rows as u32, 2), stream, &args)?;
                if launched {
                    self.hoisted_inner
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
                launched
            }
            _ => false,
        };
        // The ModUp's part of a lean scratch, when the fused launch was refused.
        let ext_buf = if lean && !fused {
            let b = self.alloc(op, ext_words, stream)?;
            ext = dev_ptr(&b);
            Some(b)
        } else {
            None
        };
        let modup = self.modup_args(src, ext, ginv, prime_off, limbs);
        let inner_args = inner(ext, twi, dev_ptr(&self.ks_post));
        // ModUp (or, hoisted, σ_g of the shared extended digits), then the inner product:
        // each on its GlobalSync kernel when it runs, else on the cluster kernel; `false` when
        // neither ran (the two-pass kernels below then redo the whole switch from `src`).
        let modup_done = fused
            || match hoisted {
                Some(h) => {
                    self.launch(
                        op,
                        K::AutNtt,
                        ((KERNEL_N as u32) / EW_THREADS, rows as u32, limbs as u32),
                        EW_THREADS,
                        stream,
                        &[Arg::U64(h.ext), Arg::U64(ext), Arg::U32(h.g)],
                    )?;
                    true
                }
                None => self.launch_modup(op, rows, limbs, &modup, stream)?,
            };
        let clustered = fused
            || modup_done
                && ((global
                    && self.launch_gs(op, K::KsInnerGs, (rows as u32, 2), stream, &inner_args)?)
                    || self.launch_cluster(
                        op,
                        kernels.modup().map(|_| K::KsInnerCl),
                        (rows as u32, 2),
                        stream,
                        &inner_args,
                    )?);
        if !clustered {
            // Two-pass kernels (also after a refused cluster launch: nothing of a refused
            // launch was enqueued, and the passes below rewrite `ext` from `src`).
            self.launch(
                op,
                K::NttFwdCols,
                (NTT_BLOCKS_PER_LIMB, rows as u32, limbs as u32),
                NTT_THREADS,
                stream,
                &modup,
            )?;
            // Forward row pass + key inner product + inverse row pass.
            self.launch(
                op,
                K::KsInner,
                (NTT_BLOCKS_PER_LIMB, rows as u32, 1),
                NTT_THREADS,
                stream,
                &inner(ext, twf, twi)[..11],
            )?;
            // Inverse column pass of both accumulators (N^-1 and the Montgomery factor).
            let (args, len) = InvNtt {
                src: acc,
                dst: acc,
                post: dev_ptr(&self.ks_post),
                prime_off: prime_off as u32,
                ys: n,
                zs: rows as u64 * n,
            }
            .args(acc, acc, primes, twi, Some(dev_ptr(&self.ks_post)));
            self.launch(
                op,
                K::NttInvCols,
                (NTT_BLOCKS_PER_LIMB, rows as u32, 2),
                NTT_THREADS,
                stream,
                &args[..len],
            )?;
        }
        // What ModDown adds: coefficient rows, nothing (ks_inner_gs / ks_inner_cl added the NTT
        // rows), or on the two-pass kernels the NTT rows brought to the coefficient domain here.
        // ModDown loads its addend before its grid_dep_wait only when no kernel of this chain
        // writes it (`KsAdd::Coeff`: the operation's input), never the rows transformed here,
        // which its programmatic predecessor writes (decision 0508); nor when a pipeline
        // recorded launches before this switch (the input may be one of their results).
        let adds_early = u32::from(matches!(add, KsAdd::Coeff { .. }) && earlier_launches == 0);
        let (fallback_rows, add0, add1) = match add {
            KsAdd::Coeff { add0, add1 } => (None, add0, add1),
            KsAdd::NttTimesP { .. } if clustered => (None, 0, 0),
            KsAdd::NttTimesP { base } => {
                let rows_buf = self.alloc(op, 2 * limbs * KERNEL_N, stream)?;
                let p = dev_ptr(&rows_buf);
                self.ntt_inverse_raw(
                    op,
                    base,
                    p,
                    dev_ptr(&self.n_inv),
                    prime_off,
                    limbs,
                    2,
                    stream,
                )?;
                (Some(rows_buf), p, p + (limbs * KERNEL_N * 8) as u64)
            }
        };
        // ModDown by P + the final additions.
        self.launch(
            op,
            K::KsModdown,
            Self::ew_grid(limbs, 2),
            EW_THREADS,
            stream,
            &[
                Arg::U64(acc),
                Arg::U64(add0),
                Arg::U64(add1),
                Arg::U64(dev_ptr(&out)),
                Arg::U64(primes),
                Arg::U64(dev_ptr(&self.p_inv)),
                Arg::U32(prime_off as u32),
                Arg::U32(limbs as u32),
                Arg::U32(ginv),
                Arg::U32(adds_early),
            ],
        )?;
        if let Some(rec) = chain {
            self.submit_chain(op, rec, stream)?;
        }
        for b in [fallback_rows, ext_buf].into_iter().flatten() {
            self.recycle(op, b, stream)?;
        }
        self.recycle(op, scratch, stream)?;
        Ok(out)
    }

    /// Arguments of the key switch's ModUp of the `limbs` digits at `src` (balanced lift,
    /// through σ_g when `ginv` is nonzero) to every target row, into `ext` (`[digit][row][N]`):
    /// grid (row, digit).
    fn modup_args(
        &self,
        src: u64,
        ext: u64,
        ginv: u32,
        prime_off: usize,
        limbs: usize,
    ) -> [Arg; 14] {
        let n = KERNEL_N as u64;
        FwdNtt {
            src,
            dst: ext,
            prime_off: prime_off as u32,
            in_ys: 0,
            in_zs: n,
            out_ys: n,
            out_zs: (limbs + 1) as u64 * n,
            mode: 0,
            ginv,
            src_off: prime_off as u32,
            src_by_z: 1,
            canonical: false,
        }
        .args(
            dev_ptr(&self.primes),
            dev_ptr(&self.twf),
            dev_ptr(&self.reduce),
        )
    }

    /// The ModUp in one launch: `ntt_fwd_gq` on [`NttKernels::GlobalSync`] when it runs, else
    /// the cluster ModUp; `Ok(false)` when neither ran (nothing enqueued).
    fn launch_modup(
        &self,
        op: &'static str,
        rows: usize,
        limbs: usize,
        modup: &[Arg],
        stream: &Stream,
    ) -> Result<bool> {
        let kernels = self.ntt_kernels();
        let yz = (rows as u32, limbs as u32);
        Ok(
            (kernels == NttKernels::GlobalSync && self.launch_gq(op, yz, stream, modup)?)
                || self.launch_cluster(op, kernels.modup(), yz, stream, modup)?,
        )
    }

    fn check_key(&self, op: &'static str, key: &GpuSwitchKey) -> Result<()> {
        self.check_context(op, key.context)?;
        if key.digits != self.nq || key.rows != self.moduli.len() {
            return Err(CudaBackendError::Unsupported {
                op,
                reason: format!("key of {} digits x {} rows", key.digits, key.rows),
            });
        }
        Ok(())
    }

    /// Rotation `σ_g` + hybrid key switch with a rotation key (coefficient-domain,
    /// 2-component, basis Q input; spec 3.9). Three launches (the key switch's).
    #[tracing::instrument(
        name = "ckks.rotate_with_key",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = ct.level(),
            bytes = ct.nbytes(),
            galois = ?key.galois_element(),
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn rotate_with_key(
        &self,
        ct: &GpuCiphertext,
        key: &GpuSwitchKey,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "rotate_with_key";
        self.check_rotation_input(OP, ct)?;
        let g = self.rotation_element(OP, key)?;
        self.galois_switch(OP, ct, key, g, None, stream)
    }

    /// What a rotation's input must be: a value of this engine's context, coefficient
    /// domain, two components, basis Q.
    fn check_rotation_input(&self, op: &'static str, ct: &GpuCiphertext) -> Result<()> {
        self.check_context(op, ct.context)?;
        Self::need_domain(op, ct.domain, Domain::Coefficient)?;
        Self::need_components(op, ct.components, 2)?;
        if ct.basis != ModulusBasis::Q {
            return Err(CkksError::BasisMismatch {
                op,
                expected: ModulusBasis::Q,
                actual: ct.basis,
            }
            .into());
        }
        Ok(())
    }

    /// The Galois element of a rotation (or conjugation) key of this engine; a
    /// relinearization key is [`CkksError::WrongKey`].
    fn rotation_element(&self, op: &'static str, key: &GpuSwitchKey) -> Result<u64> {
        self.check_key(op, key)?;
        key.galois_element.ok_or_else(|| {
            CkksError::WrongKey {
                op,
                reason: "a relinearization key is not a rotation key".into(),
            }
            .into()
        })
    }

    /// `σ_g(ct)` switched back to the secret key by `key` (checked by the caller): the key
    /// switch of `c1` through `σ_g`, ModDown adding `σ_g(c0)`; `hoisted`: the shared extended
    /// digits of [`Self::rotate_many_with_keys`] in place of the switch's own ModUp.
    fn galois_switch(
        &self,
        op: &'static str,
        ct: &GpuCiphertext,
        key: &GpuSwitchKey,
        g: u64,
        hoisted: Option<u64>,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        let limbs = ct.num_limbs();
        let c1 = ct.ptr() + (limbs * KERNEL_N * 8) as u64;
        let out = self.key_switch(
            op,
            c1,
            KsAdd::Coeff {
                add0: ct.ptr(),
                add1: 0,
            },
            galois_inverse(g, KERNEL_N) as u32,
            key,
            ct.prime_ids[0],
            limbs,
            None,
            hoisted.map(|ext| Hoisted { ext, g: g as u32 }),
            stream,
        )?;
        Ok(self.like(ct, out))
    }

    /// What relinearization's input must be: a 3-component NTT-domain value of this
    /// engine's context.
    fn check_relinearize_input(&self, op: &'static str, ct: &GpuCiphertext) -> Result<()> {
        self.check_context(op, ct.context)?;
        Self::need_domain(op, ct.domain, Domain::Ntt)?;
        Self::need_components(op, ct.components, 3)
    }

    /// Relinearize a 3-component NTT-domain product into a 2-component coefficient-domain
    /// ciphertext (spec 3.15). Four launches: the inverse NTT of d2, then the key switch, whose
    /// inner product takes d0 and d1 in the NTT domain (times P).
    #[tracing::instrument(
        name = "ckks.relinearize_with_key",
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
    pub fn relinearize_with_key(
        &self,
        ct: &GpuCiphertext,
        key: &GpuSwitchKey,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "relinearize";
        self.check_relinearize_input(OP, ct)?;
        self.check_key(OP, key)?;
        if key.galois_element.is_some() {
            return Err(CkksError::WrongKey {
                op: OP,
                reason: "a rotation key is not a relinearization key".into(),
            }
            .into());
        }
        let limbs = ct.num_limbs();
        // Only d2 needs the coefficient domain (the digits of the key switch); d0 and d1 enter
        // the key switch's inner product in the NTT domain, times P (KsAdd::NttTimesP), and
        // leave ModDown's division by P as they are.
        let row = (limbs * KERNEL_N * 8) as u64;
        let coeff = self.alloc(OP, limbs * KERNEL_N, stream)?;
        // d2's inverse NTT runs as the key switch's pre-step (the first node of its chain).
        let intt = || {
            self.ntt_inverse_raw(
                OP,
                ct.ptr() + 2 * row,
                dev_ptr(&coeff),
                dev_ptr(&self.n_inv),
                ct.prime_ids[0],
                limbs,
                1,
                stream,
            )
        };
        let out = self.key_switch(
            OP,
            dev_ptr(&coeff),
            KsAdd::NttTimesP { base: ct.ptr() },
            0,
            key,
            ct.prime_ids[0],
            limbs,
            Some(&intt),
            None,
            stream,
        )?;
        self.recycle(OP, coeff, stream)?;
        let mut r = self.like(ct, out);
        r.components = 2;
        r.domain = Domain::Coefficient;
        Ok(r)
    }
    // -----------------------------------------------------------------------------------
    // Keys for encryption and decryption

    /// Copies the secret key to the device (for [`CudaEngine::decrypt`]).
    pub fn upload_secret_key(&self, sk: &SecretKey, stream: &Stream) -> Result<GpuSecretKey> {
        const OP: &str = "upload_secret_key";
        self.check_context(OP, sk.context)?;
        if sk.words.len() != self.moduli.len() * KERNEL_N {
            return Err(CudaBackendError::Unsupported {
                op: OP,
                reason: format!("secret key of {} words", sk.words.len()),
            });
        }
        Ok(GpuSecretKey {
            buf: self.upload_words(OP, &sk.words, stream)?,
            context: sk.context,
            key_id: sk.key_id,
        })
    }

    /// Copies the public key to the device (for [`CudaEngine::encrypt`]).
    pub fn upload_public_key(&self, pk: &PublicKey, stream: &Stream) -> Result<GpuPublicKey> {
        const OP: &str = "upload_public_key";
        self.check_context(OP, pk.context)?;
        let rows = pk.words.len() / (2 * KERNEL_N);
        if rows != self.nq {
            return Err(CudaBackendError::Unsupported {
                op: OP,
                reason: format!("public key of {rows} rows"),
            });
        }
        Ok(GpuPublicKey {
            buf: self.upload_words(OP, &pk.words, stream)?,
            context: pk.context,
            key_id: pk.key_id,
            rows,
        })
    }

    /// Public-key encryption of an integer-coefficient plaintext (host) at its level with
    /// explicit samples: `c0 = INTT(v̂ ⊙ k0) + e0 + p`, `c1 = INTT(v̂ ⊙ k1) + e1` (spec 3.4,
    /// ternary `v` as in the CPU engine). Seven launches after one upload of `v, e0, e1, p`.
    #[tracing::instrument(
        name = "ckks.encrypt_with_samples",
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
    pub fn encrypt_with_samples(
        &self,
        pt: &Plaintext,
        pk: &GpuPublicKey,
        samples: [&[i64]; 3],
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "encrypt";
        self.check_context(OP, pt.context)?;
        self.check_context(OP, pk.context)?;
        if pt.representation != PlaintextRepresentation::IntegerCoefficients {
            return Err(CkksError::RepresentationMismatch {
                op: OP,
                expected: PlaintextRepresentation::IntegerCoefficients.name(),
                actual: pt.representation.name(),
            }
            .into());
        }
        pt.words.check_host(OP)?;
        let n = KERNEL_N;
        if pt.words.len() != n || samples.iter().any(|x| x.len() != n) {
            return Err(CudaBackendError::Unsupported {
                op: OP,
                reason: "plaintext and samples must hold N coefficients".into(),
            });
        }
        self.check_level(OP, pt.level)?;
        let level = pt.level;
        let limbs = self.nq - level;
        let mut host = Vec::with_capacity(4 * n);
        for x in samples {
            host.extend(x.iter().map(|&c| c as u64));
        }
        host.extend_from_slice(pt.words.as_slice());
        let upl = self.upload_words(
            OP,
            &Words::from_vec(host, ResidencyLocation::PageableHost),
            stream,
        )?;
        let (v, e, p) = (
            dev_ptr(&upl),
            dev_ptr(&upl) + (n * 8) as u64,
            dev_ptr(&upl) + (3 * n * 8) as u64,
        );
        let nn = n as u64;
        let vhat = self.alloc(OP, limbs * n, stream)?;
        let grid = (NTT_BLOCKS_PER_LIMB, limbs as u32, 1);
        self.launch(
            OP,
            "ntt_fwd_cols",
            grid,
            NTT_THREADS,
            stream,
            &[
                Arg::U64(v),
                Arg::U64(dev_ptr(&vhat)),
                Arg::U64(dev_ptr(&self.primes)),
                Arg::U64(dev_ptr(&self.twf)),
                Arg::U64(dev_ptr(&self.reduce)),
                Arg::U32(level as u32),
                Arg::U64(0),
                Arg::U64(0),
                Arg::U64(nn),
                Arg::U64(limbs as u64 * nn),
                Arg::U32(1),
                Arg::U32(0),
                Arg::U32(level as u32),
                Arg::U32(0),
            ],
        )?;
        self.launch(
            OP,
            "ntt_fwd_rows",
            grid,
            NTT_THREADS,
            stream,
            &[
                Arg::U64(dev_ptr(&vhat)),
                Arg::U64(dev_ptr(&vhat)),
                Arg::U64(dev_ptr(&self.primes)),
                Arg::U64(dev_ptr(&self.twf)),
                Arg::U32(level as u32),
                Arg::U64(nn),
                Arg::U64(limbs as u64 * nn),
                Arg::U64(nn),
                Arg::U64(limbs as u64 * nn),
            ],
        )?;
        let out = self.alloc(OP, 2 * limbs * n, stream)?;
        for comp in 0..2u64 {
            let k = pk.buf.ptr() + ((comp * pk.rows as u64 + level as u64) * nn * 8);
            self.launch(
                OP,
                "ew_mul",
                Self::ew_grid(limbs, 1),
                EW_THREADS,
                stream,
                &[
                    Arg::U64(k),
                    Arg::U64(dev_ptr(&vhat)),
                    Arg::U64(dev_ptr(&out) + comp * limbs as u64 * nn * 8),
                    Arg::U64(dev_ptr(&self.primes)),
                    Arg::U64(dev_ptr(&self.mont_fix)),
                    Arg::U32(level as u32),
                    Arg::U64(0),
                ],
            )?;
        }
        self.recycle(OP, vhat, stream)?;
        self.ntt_inverse_raw(
            OP,
            dev_ptr(&out),
            dev_ptr(&out),
            dev_ptr(&self.n_inv),
            level,
            limbs,
            2,
            stream,
        )?;
        // + e0 / e1 on each component, then + p on component 0.
        for (src, comps, zs) in [(e, 2u32, nn), (p, 1, 0)] {
            self.launch(
                OP,
                "add_signed",
                Self::ew_grid(limbs, comps as usize),
                EW_THREADS,
                stream,
                &[
                    Arg::U64(dev_ptr(&out)),
                    Arg::U64(src),
                    Arg::U64(dev_ptr(&out)),
                    Arg::U64(dev_ptr(&self.primes)),
                    Arg::U32(level as u32),
                    Arg::U64(zs),
                ],
            )?;
        }
        self.recycle(OP, upl, stream)?;
        Ok(GpuCiphertext {
            buf: self.owned(out),
            device: self.device,
            context: self.context_id,
            level,
            scale: pt.scale,
            domain: Domain::Coefficient,
            basis: ModulusBasis::Q,
            components: 2,
            prime_ids: (level..self.nq).collect(),
        })
    }

    /// Public-key encryption: one 32-byte sampling key from the engine's ChaCha20 stream per
    /// call, `v`, `e0`, `e1` sampled on the device from it (decision 0520; see
    /// [`CudaEngine::encrypt_with_sampling_key`]).
    #[tracing::instrument(
        name = "ckks.encrypt",
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
    pub fn encrypt(
        &self,
        pt: &Plaintext,
        pk: &GpuPublicKey,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        self.encrypt_plaintext(pt, pk, encrypt::SamplingKey::Engine, stream)
    }

    /// Encodes real slots (level 0, default scale) and encrypts, all on the device: one
    /// sampling key from the engine's ChaCha20 stream per call (see
    /// [`CudaEngine::encrypt_message_with_sampling_key`]).
    #[tracing::instrument(
        name = "ckks.encrypt_message",
        level = "debug",
        skip_all,
        fields(location = %self.location(), slots = message.len(), stream = ?stream.as_inner()),
        err(level = "debug")
    )]
    pub fn encrypt_message(
        &self,
        message: &[f64],
        pk: &GpuPublicKey,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        self.encrypt_slots(
            "encrypt_message",
            SlotValues::Real(message),
            pk,
            encrypt::SamplingKey::Engine,
            stream,
        )
    }

    /// Decrypts a 2-component coefficient-domain ciphertext (spec 3.5): the phase
    /// `c0 + INTT(NTT(c1) ⊙ s)` on the two trailing Q rows only, on the device (5 launches),
    /// then the two rows come back and are reconstructed centred on the host, exactly as the
    /// CPU engine does. Returns approximate coefficients (waits for `stream`).
    #[tracing::instrument(
        name = "ckks.decrypt",
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
    pub fn decrypt(
        &self,
        ct: &GpuCiphertext,
        sk: &GpuSecretKey,
        stream: &Stream,
    ) -> Result<Plaintext> {
        const OP: &str = "decrypt";
        self.check_context(OP, ct.context)?;
        self.check_context(OP, sk.context)?;
        Self::need_domain(OP, ct.domain, Domain::Coefficient)?;
        Self::need_components(OP, ct.components, 2)?;
        let nq = self.nq;
        let limbs = ct.num_limbs();
        let first = ct.prime_ids[0];
        if ct.basis != ModulusBasis::Q || first + limbs != nq || limbs < 2 {
            return Err(CkksError::BasisMismatch {
                op: OP,
                expected: ModulusBasis::Q,
                actual: ct.basis,
            }
            .into());
        }
        let off = nq - 2;
        let row = |r: usize| (r * KERNEL_N * 8) as u64;
        let c0 = ct.ptr() + row(limbs - 2);
        let c1 = ct.ptr() + row(2 * limbs - 2);
        let tmp = self.alloc(OP, 2 * KERNEL_N, stream)?;
        self.ntt_forward_raw(OP, c1, dev_ptr(&tmp), off, 2, 1, stream)?;
        self.launch(
            OP,
            "ew_mul",
            Self::ew_grid(2, 1),
            EW_THREADS,
            stream,
            &[
                Arg::U64(dev_ptr(&tmp)),
                Arg::U64(sk.buf.ptr() + row(off)),
                Arg::U64(dev_ptr(&tmp)),
                Arg::U64(dev_ptr(&self.primes)),
                Arg::U64(dev_ptr(&self.mont_fix)),
                Arg::U32(off as u32),
                Arg::U64(0),
            ],
        )?;
        self.ntt_inverse_raw(
            OP,
            dev_ptr(&tmp),
            dev_ptr(&tmp),
            dev_ptr(&self.n_inv),
            off,
            2,
            1,
            stream,
        )?;
        self.launch(
            OP,
            "ew_add",
            Self::ew_grid(2, 1),
            EW_THREADS,
            stream,
            &[
                Arg::U64(dev_ptr(&tmp)),
                Arg::U64(c0),
                Arg::U64(dev_ptr(&tmp)),
                Arg::U64(dev_ptr(&self.primes)),
                Arg::U32(off as u32),
            ],
        )?;
        drv(OP, stream.synchronize())?;
        let mut phase = vec![0u64; 2 * KERNEL_N];
        drv(OP, tmp.copy_to(&mut phase[..]))?;
        self.recycle(OP, tmp, stream)?;
        let a = self.q_primes[nq - 2];
        let b = self.q_primes[nq - 1];
        let mb = crate::arith::Modulus::new(b).ok_or_else(|| CudaBackendError::Unsupported {
            op: OP,
            reason: "invalid modulus".into(),
        })?;
        let a_inv = mb.inv(a % b).unwrap_or(0);
        let d = i128::from(a) * i128::from(b);
        let (p0, p1) = phase.split_at(KERNEL_N);
        let coeffs: Vec<u64> = p0
            .iter()
            .zip(p1)
            .map(|(&v0, &w1)| {
                let v1 = mb.mul(mb.sub(w1, mb.reduce(v0)), a_inv);
                let mut x = i128::from(v0) + i128::from(v1) * i128::from(a);
                if x > d / 2 {
                    x -= d;
                }
                (x as f64).to_bits()
            })
            .collect();
        Ok(Plaintext {
            words: Words::from_vec(coeffs, ResidencyLocation::PageableHost),
            context: self.context_id,
            n: KERNEL_N,
            level: ct.level,
            scale: ct.scale,
            domain: Domain::Coefficient,
            basis: ModulusBasis::Q,
            representation: PlaintextRepresentation::ApproximateCoefficients,
            prime_ids: Vec::new(),
        })
    }

    /// Decrypts and decodes the real parts of the N/2 slots on the device; one download of
    /// N/2 f64 (see [`CudaEngine::decrypt_message_on_device`]).
    #[tracing::instrument(
        name = "ckks.decrypt_message",
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
    pub fn decrypt_message(
        &self,
        ct: &GpuCiphertext,
        sk: &GpuSecretKey,
        stream: &Stream,
    ) -> Result<Vec<f64>> {
        self.decrypt_message_on_device(ct, sk, stream)
    }
}

/// The device kernels' NTT butterflies (`Loose` in kernels/ckks.cu) let words grow to 14 q,
/// which fits a u64 for q < 2^60: every chain FHElium's catalog gives qualifies (its widest
/// primes are the largest NTT primes below 2^60); any other is refused, naming the prime.
fn check_device_primes(op: &'static str, moduli: &[u64]) -> Result<()> {
    match moduli.iter().position(|&q| q >= 1 << 60) {
        None => Ok(()),
        Some(id) => Err(CudaBackendError::Unsupported {
            op,
            reason: format!(
                "prime id {id} = {} is not below 2^60 (the NTT kernels keep words below 14 q)",
                moduli[id]
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::{KernelRef, K, KERNELS};

    /// `K`'s variants name the kernels of `KERNELS` at the same positions, and every name is
    /// an `extern "C"` kernel of the embedded PTX.
    #[test]
    fn kernel_slots_match_the_names_and_the_ptx() {
        let all = [
            K::NttFwdCols,
            K::NttFwdRows,
            K::NttInvRows,
            K::NttInvCols,
            K::KsInner,
            K::KsModdown,
            K::EwAdd,
            K::EwSub,
            K::EwNeg,
            K::EwMul,
            K::EwMulConst,
            K::EwTensor,
            K::AutCoeff,
            K::Rescale,
            K::DropRows,
            K::AddSigned,
            K::NttFwdCl,
            K::NttInvCl,
            K::KsInnerCl,
            K::NttFwdClr,
            K::NttInvClr,
            K::NttFwdGs,
            K::NttInvGs,
            K::KsInnerGs,
            K::NttFwdGq,
            K::NttFwdGp,
            K::NttInvGp,
            K::AutNtt,
            K::EwMulInt,
            K::KsInnerGh,
            K::NttFwdGpn,
            K::NttInvGpn,
        ];
        assert_eq!(all.len(), KERNELS.len());
        for (i, k) in all.iter().enumerate() {
            let snake: String = format!("{k:?}")
                .chars()
                .enumerate()
                .flat_map(|(j, c)| {
                    let lower = c.to_ascii_lowercase();
                    if c.is_ascii_uppercase() && j > 0 {
                        vec!['_', lower]
                    } else {
                        vec![lower]
                    }
                })
                .collect();
            assert_eq!(snake, KERNELS[i], "variant {k:?} at slot {i}");
            assert_eq!(k.slot(), Some(i));
            assert_eq!(KERNELS[i].slot(), Some(i));
            assert!(
                super::CKKS_PTX.contains(&format!(".entry {}(", KERNELS[i])),
                "{} is not in the PTX",
                KERNELS[i]
            );
        }
        assert_eq!("no_such_kernel".slot(), None);
    }

    /// The device kernels take every preset the device engine runs (N = 16384: all primes
    /// below 2^60) and refuse a chain with a prime of 2^60 or more, naming it.
    #[test]
    fn device_kernels_take_chains_below_2_pow_60() {
        use crate::{CkksConfig, Context, Preset};
        let mut seen = 0;
        for p in Preset::ALL {
            let ctx = Context::new(CkksConfig::from_preset(p).expect("preset")).expect("context");
            if ctx.config().n() != super::KERNEL_N {
                continue;
            }
            let moduli: Vec<u64> = ctx
                .ntt_tables()
                .iter()
                .map(|t| t.modulus().value())
                .collect();
            assert!(
                super::check_device_primes("t", &moduli).is_ok(),
                "{p:?}: {moduli:?}"
            );
            seen += 1;
        }
        assert_eq!(seen, 3, "the three slots8192 presets");
        assert!(super::check_device_primes("t", &[(1 << 60) - 1]).is_ok());
        let e = super::check_device_primes("CudaEngine::new", &[1_099_510_054_913, 1 << 60])
            .expect_err("2^60 refused");
        let text = e.to_string();
        assert!(text.contains("CudaEngine::new"), "{text}");
        assert!(text.contains("prime id 1 = 1152921504606846976"), "{text}");
        assert!(super::check_device_primes("t", &[u64::MAX - 58]).is_err());
    }

    /// `F64_Q` and `near60` are the kernels' (kernels/ckks.cu), and they choose the paired NTT
    /// kernels as decision 0515 says: the 40-bit and 30-bit chains' only integer prime is a
    /// 60-bit message prime (`*_gpn` on every rows range), a 50-bit chain's scale primes are
    /// integer primes outside `near60` (`*_gp` wherever one of them is in the range), and
    /// rows beyond the chain are refused.
    #[test]
    fn the_gpn_kernels_run_where_every_integer_prime_is_a_60_bit_message_prime() {
        use super::{near60, near60_rows, F64_Q};
        use crate::{CkksConfig, Context, Preset};
        let src = include_str!("../../../../kernels/ckks.cu");
        assert!(src.contains("#define F64_Q (1ull << 41)"));
        assert_eq!(F64_Q, 1 << 41);
        assert!(src.contains("return q < (1ull << 60) && q > (1ull << 60) - (1ull << 32);"));
        assert!(near60((1 << 60) - 1) && near60((1 << 60) - (1 << 32) + 1));
        assert!(!near60(1 << 60) && !near60((1 << 60) - (1 << 32)) && !near60(F64_Q));
        let moduli = |p: Preset| -> Vec<u64> {
            let ctx = Context::new(CkksConfig::from_preset(p).expect("preset")).expect("context");
            ctx.ntt_tables()
                .iter()
                .map(|t| t.modulus().value())
                .collect()
        };
        for p in [
            Preset::Slots8192Scale40Levels7Int64,
            Preset::Slots8192Scale30Levels9Int64,
        ] {
            let m = moduli(p);
            for off in 0..m.len() {
                for rows in 1..=m.len() - off {
                    assert!(near60_rows(&m, off, rows), "{p:?}: rows {off}..+{rows}");
                }
            }
            assert!(!near60_rows(&m, 0, m.len() + 1), "{p:?}: beyond the chain");
            assert!(
                !near60_rows(&m, usize::MAX, 2),
                "{p:?}: an offset that overflows"
            );
        }
        let m = moduli(Preset::Slots8192Scale50Levels5Int64);
        let first_50 = m
            .iter()
            .position(|&q| q >= F64_Q && !near60(q))
            .expect("a 50-bit scale prime");
        assert!(!near60_rows(&m, 0, m.len()));
        assert!(!near60_rows(&m, first_50, 1));
        assert!(
            m.iter().any(|&q| near60(q)),
            "the 50-bit chain's 60-bit primes"
        );
    }
}
