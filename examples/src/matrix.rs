//! An encrypted matrix product whose rotation keys do not fit the device (`matrix_residency`,
//! `docs/tutorials/matrix-residency.md`): C = A·B for d x d matrices, A in plaintext and B
//! encrypted column by column (the shape of FHElium Benchmark v1's "PT x CT 16 x 16" case),
//! under a device budget far below the working set, so the residency controller streams the
//! d - 1 rotation keys (18 MiB each) through the device one at a time.
//!
//! # The program
//! 1. Column j of B is encrypted with its d entries repeated over every slot (slot t holds
//!    `B[t mod d][j]`); diagonal k of A (`diag_k[i] = A[i][(i - k) mod d]`, repeated the same
//!    way) is encoded as an operation-ready plaintext; rotation keys for steps 1..d-1. Every
//!    value is adopted at pageable host as a replicable value.
//! 2. Rotation by k moves slot t - k to slot t, so
//!    `sum_k diag_k ⊙ rot_k(col_j) = (A·B)[:, j]` in every slot: per column d - 1 rotations,
//!    d NTTs and plaintext products, accumulated in the NTT domain; one inverse NTT and one
//!    rescale at the end.
//! 3. **Key-major schedule** (the default, [`Schedule::KeyMajor`]): step k needs only key k
//!    (and diagonal k) beside the inputs, so the device holds the d inputs, the d
//!    accumulators (a reservation held for the whole product), one step's workspace and one
//!    or two keys. Each step is a use (decision, scope, strict lease); with prefetch on, the
//!    next step's key and diagonal are a prefetch admitted while the current step computes
//!    (on CUDA their copies run on the transfer stream), so the budget holds two keys. The
//!    LRU policy reclaims the finished step's key and diagonal, which keep their host
//!    replica: every key crosses to the device once.
//! 4. The steps form one program, run by [`ResidencyController::run_program`]: it is
//!    forecast first (a step that cannot fit fails before anything moves), then admitted
//!    step by step around the compute; the outcome says whether the run went as forecast.
//! 5. The accumulators are brought back to the coefficient domain and rescaled, downloaded,
//!    decrypted and compared with the f64 product in every slot.
//!
//! `layers` > 1 computes `A^layers · B` with the same keys in every layer (a cyclic key
//! pattern, LRU's worst case); [`Eviction::NextUse`] then reclaims by the program's future
//! instead (decision 0207).
//!
//! [`Schedule::ColumnHoisted`] is the order of FHElium's benchmark: step j computes column j
//! with all d - 1 rotations hoisted over one ModUp. That needs every key on the device at
//! the same time, plus the d - 1 rotated ciphertexts: 358 MiB for d = 16 against the 108 MiB
//! of the key-major schedule, for ~1.7x less compute on the CPU engine (decision 0601).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use fhelium_ckks::{Ciphertext, ModulusBasis, Plaintext, RotationKey};
use fhelium_cuda::Resident;
use fhelium_residency::{
    DeterministicTieredLRU, MemoryReservation, ReplicaMode, ResidencyDecision, ResidencyForecast,
    ResidencyHandle, ResidencyLocation, ResidencyPlanReport, ResidencyProgramStep,
    ResidencyRequest, ResidencyRequirement, PAGEABLE_HOST,
};
use fhelium_runtime::{
    ConsumerStreams, Handle, ProgramEviction, ResidencyController, ResidencyManager,
    TransferStreams,
};

use crate::automatic::AutomaticOptions;
use crate::engine::Engine;
use crate::timeline::Timeline;
use crate::transfers::{copies, Transfer};
use crate::{error_stats, format_budget, format_bytes, ErrorStats, ExampleError, Table};

/// Default matrix dimension (FHElium Benchmark v1's 16 x 16).
pub const DEFAULT_DIM: usize = 16;

/// Largest dimension the example accepts (63 rotation keys, 1.1 GiB of keys at the default
/// preset).
pub const MAX_DIM: usize = 64;

/// Most layers (products by A) the example runs: each consumes one level.
pub const MAX_LAYERS: usize = 4;

/// The matrix case's correctness bound on every decrypted slot (FHElium's matrix limit).
pub const MATRIX_MAX_ERROR: f64 = 3e-5;

/// The workspace reservation label of a step.
pub const STEP_WORKSPACE_LABEL: &str = "step workspace";

/// The held reservation that charges the accumulators.
pub const ACCUMULATOR_LABEL: &str = "accumulators";

/// The order of the product's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Step k applies key k to every column (the device holds one or two keys at a time;
    /// each rotation does its own ModUp).
    KeyMajor,
    /// Step j computes column j with all d - 1 rotations hoisted over one ModUp (FHElium's
    /// benchmark order; the device holds every key and the d - 1 rotated ciphertexts).
    ColumnHoisted,
}

impl std::str::FromStr for Schedule {
    type Err = ExampleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "key-major" => Ok(Self::KeyMajor),
            "column-hoisted" => Ok(Self::ColumnHoisted),
            _ => Err(ExampleError::InvalidArgument {
                argument: "--schedule",
                reason: format!("{s:?} is not key-major or column-hoisted"),
            }),
        }
    }
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::KeyMajor => "key-major",
            Self::ColumnHoisted => "column-hoisted",
        })
    }
}

/// How the controller chooses what to reclaim.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eviction {
    /// The policy's least-recently-used order.
    Lru,
    /// The value needed farthest ahead in the program first (Belady's order, through
    /// `ResidencyController::apply_next_use` before every step; decision 0207).
    NextUse,
}

impl std::str::FromStr for Eviction {
    type Err = ExampleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "lru" => Ok(Self::Lru),
            "next-use" => Ok(Self::NextUse),
            _ => Err(ExampleError::InvalidArgument {
                argument: "--evict",
                reason: format!("{s:?} is not lru or next-use"),
            }),
        }
    }
}

impl std::fmt::Display for Eviction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Lru => "lru",
            Self::NextUse => "next-use",
        })
    }
}

/// Options of one run.
#[derive(Clone, Copy, Debug)]
pub struct MatrixOptions {
    /// Engine, device, preset and seed.
    pub engine: AutomaticOptions,
    /// Matrix dimension d: a power of two, 2..=[`MAX_DIM`], at most the slot count.
    pub dim: usize,
    /// Layers: the product `A^layers · B`, one product by A per layer (1..=[`MAX_LAYERS`]),
    /// every layer with the same rotation keys.
    pub layers: usize,
    /// How the controller chooses what to reclaim.
    pub eviction: Eviction,
    /// The order of the work; `None` chooses by the budget: column-hoisted when
    /// `device_budget` holds what it needs, key-major otherwise (and without a budget).
    pub schedule: Option<Schedule>,
    /// Admit step k + 1's new values (key-major: its key and diagonal; column-hoisted: its
    /// column) while step k computes; the budget then holds them too.
    pub prefetch: bool,
    /// Device budget in bytes; `None` derives the smallest budget the schedule needs
    /// ([`MatrixCharges::device_budget`]).
    pub device_budget: Option<u64>,
    /// Where the rotation keys live on the host: pageable (the default) or pinned. On CUDA a
    /// copy from pageable memory is staged by the driver and holds the host until it is done,
    /// so a prefetched key overlaps no compute; from pinned memory it runs beside the step.
    pub keys_at: ResidencyLocation,
}

impl Default for MatrixOptions {
    fn default() -> Self {
        Self {
            engine: AutomaticOptions::default(),
            dim: DEFAULT_DIM,
            layers: 1,
            eviction: Eviction::Lru,
            schedule: Some(Schedule::KeyMajor),
            prefetch: true,
            device_budget: None,
            keys_at: PAGEABLE_HOST,
        }
    }
}

/// Managed charges (max(nbytes, storage_nbytes)) of the run and the budget derived from them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixCharges {
    /// One encrypted column of B.
    pub input: u64,
    /// One operation-ready diagonal of A.
    pub diagonal: u64,
    /// One rotation key.
    pub key: u64,
    /// The held accumulator reservation: d x input (level-0 NTT-domain ciphertexts).
    pub accumulators: u64,
    /// With more than one layer, the held reservation for the layer inputs (the previous
    /// layer's results): d x input; 0 for one layer.
    pub layer_inputs: u64,
    /// A step's workspace reservation: key-major 3 x input (rotated, NTT, product);
    /// column-hoisted (d + 2) x input (the d - 1 rotated ciphertexts, NTT, product, sum).
    pub workspace: u64,
    /// Everything at once: inputs, every layer's diagonals, keys, accumulators and layer
    /// inputs.
    pub working_set: u64,
    /// The smallest budget of the schedule. Key-major: d inputs, the accumulators, the layer
    /// inputs, the workspace, and one key and diagonal (two with prefetch). Column-hoisted:
    /// the accumulators, the layer inputs, the workspace, every key, one layer's diagonals
    /// (two layers' with prefetch and several layers), and one input (two with prefetch).
    pub derived_budget: u64,
    /// The budget the run used (the derived one unless the options set another).
    pub device_budget: u64,
}

/// One step of the schedule.
#[derive(Debug)]
pub struct MatrixStep {
    /// The layer.
    pub layer: usize,
    /// Step k of the layer: key-major, diagonal k and rotation by k (none at step 0);
    /// column-hoisted, column k.
    pub step: usize,
    /// The admitted decision of the step's request.
    pub decision: ResidencyDecision,
    /// The report of the step's scope (entry transitions, then exit).
    pub report: ResidencyPlanReport,
    /// The prefetch of the next step's new values, when made: decision and report.
    pub prefetch: Option<(ResidencyDecision, ResidencyPlanReport)>,
    /// Wall time of the step's compute (d columns).
    pub compute: Duration,
}

/// Everything the matrix flow produced.
#[derive(Debug)]
pub struct MatrixOutcome {
    /// The managed device location.
    pub device: ResidencyLocation,
    /// Engine description.
    pub engine: &'static str,
    /// Matrix dimension.
    pub dim: usize,
    /// Layers.
    pub layers: usize,
    /// How the controller chose what to reclaim.
    pub eviction: Eviction,
    /// The order of the work.
    pub schedule: Schedule,
    /// Whether the schedule was chosen by the budget (`MatrixOptions::schedule` = `None`).
    pub schedule_chosen: bool,
    /// Whether each step's new values were prefetched during the step before.
    pub prefetch: bool,
    /// Where the rotation keys live on the host.
    pub keys_at: ResidencyLocation,
    /// Charges and budget.
    pub charges: MatrixCharges,
    /// Encrypted columns of B, by column.
    pub inputs: Vec<ResidencyHandle>,
    /// Diagonals of A, layer by layer (`diagonals[layer * d + k]`: diagonal k at the layer's
    /// level).
    pub diagonals: Vec<ResidencyHandle>,
    /// Rotation keys, `keys[k - 1]` for step k.
    pub keys: Vec<ResidencyHandle>,
    /// The forecast of the whole program (every step's use and prefetch), made before
    /// anything moved.
    pub forecast: ResidencyForecast,
    /// The smallest device budget under which the program would run, found by forecasting
    /// (`ResidencyController::minimum_budget`); the closed form is
    /// [`MatrixCharges::derived_budget`].
    pub minimum_budget: u64,
    /// The steps, in order.
    pub steps: Vec<MatrixStep>,
    /// Every copy the manager made, in order.
    pub transfers: Vec<Transfer>,
    /// The highest managed charge (used + reserved) at the device.
    pub peak_charged: u64,
    /// The memory layer's highest allocated bytes at the device (managed values and the
    /// engine's results and temporaries).
    pub allocator_peak: u64,
    /// Decryption error of every column against the f64 product `A^layers · B`.
    pub errors: Vec<ErrorStats>,
    /// Wall time of the steps and the finish (residency work + compute).
    pub wall: Duration,
    /// Sum of the steps' compute phases and the finish.
    pub compute: Duration,
    /// Whether the manager was closed at the end.
    pub closed: bool,
}

impl MatrixOutcome {
    /// Largest decryption error over the columns.
    #[must_use]
    pub fn max_error(&self) -> f64 {
        self.errors.iter().map(|e| e.max_abs).fold(0.0, f64::max)
    }

    /// Copies of `handle` into the device.
    #[must_use]
    pub fn copies_to_device(&self, handle: &ResidencyHandle) -> usize {
        self.transfers
            .iter()
            .filter(|t| t.handle == *handle && t.to == self.device)
            .count()
    }

    /// The steps' admitted decisions in program order (each use, then its prefetch): the
    /// decisions [`MatrixOutcome::forecast`] predicted.
    #[must_use]
    pub fn decisions(&self) -> Vec<&ResidencyDecision> {
        self.steps
            .iter()
            .flat_map(|s| std::iter::once(&s.decision).chain(s.prefetch.iter().map(|(d, _)| d)))
            .collect()
    }

    /// Whether the run went as forecast: every decision's reclaims and entries, the bytes
    /// copied into the device and the device's peak charge.
    #[must_use]
    pub fn went_as_forecast(&self) -> bool {
        self.forecast.matches(self.decisions())
            && self.forecast.bytes_into(self.device) == self.bytes_to_device()
            && self.forecast.peak_charged(self.device) == Some(self.peak_charged)
    }

    /// Bytes copied into the device, in all.
    #[must_use]
    pub fn bytes_to_device(&self) -> u64 {
        self.transfers
            .iter()
            .filter(|t| t.to == self.device)
            .map(|t| t.bytes)
            .sum()
    }

    /// Logical multiply-accumulates (layers x d^3) per second of the whole run (`wall`).
    #[must_use]
    pub fn mac_rate(&self) -> f64 {
        #[allow(clippy::cast_precision_loss)] // d <= 64, layers <= 4
        let macs = (self.layers * self.dim * self.dim * self.dim) as f64;
        macs / self.wall.as_secs_f64().max(1e-9)
    }

    /// The per-step table, the device accounting and the summary lines.
    #[must_use]
    pub fn render(&self) -> String {
        let c = &self.charges;
        let d = self.dim;
        let mut out = String::new();
        let what = if self.layers == 1 {
            "A x B".to_owned()
        } else {
            format!("A^{} x B", self.layers)
        };
        let _ = writeln!(
            out,
            "Encrypted {d}x{d} matrix product ({what}: plaintext A, encrypted B, diagonal method) on {} ({})",
            self.device, self.engine
        );
        let _ = writeln!(
            out,
            "Working set: {d} columns x {}, {d} diagonals x {}, {} rotation keys x {}, {d} accumulators x {} = {}",
            format_bytes(c.input),
            format_bytes(c.diagonal),
            d - 1,
            format_bytes(c.key),
            format_bytes(c.input),
            format_bytes(c.working_set)
        );
        #[allow(clippy::cast_precision_loss)] // display only
        let share = 100.0 * c.device_budget as f64 / c.working_set as f64;
        let _ = writeln!(
            out,
            "Device budget: {} ({share:.0}% of the working set); schedule: {}{}, {}; eviction: {}",
            format_bytes(c.device_budget),
            self.schedule,
            match (self.schedule_chosen, self.schedule) {
                (false, _) => "",
                (true, Schedule::ColumnHoisted) => " (chosen: the budget holds every key)",
                (true, Schedule::KeyMajor) => " (chosen: the budget cannot hold every key)",
            },
            match (self.prefetch, self.schedule) {
                (false, _) => "no prefetch",
                (true, Schedule::KeyMajor) => "next key prefetched during each step",
                (true, Schedule::ColumnHoisted) => "next column prefetched during each step",
            },
            self.eviction
        );
        out.push('\n');
        let mut t = Table::new([
            "step",
            "reclaim",
            "enter",
            "prefetch reclaim",
            "prefetch enter",
            "copied in",
            "compute",
        ]);
        for s in &self.steps {
            let copied: u64 = copies(&s.report)
                .chain(s.prefetch.iter().flat_map(|(_, r)| copies(r)))
                .filter(|x| x.to == self.device)
                .map(|x| x.bytes)
                .sum();
            let (pr, pe) = s.prefetch.as_ref().map_or_else(
                || ("-".to_owned(), "-".to_owned()),
                |(dd, _)| {
                    (
                        dd.plan().reclaim().len().to_string(),
                        dd.plan().enter().len().to_string(),
                    )
                },
            );
            t.row([
                if self.layers == 1 {
                    s.step.to_string()
                } else {
                    format!("{}.{}", s.layer, s.step)
                },
                s.decision.plan().reclaim().len().to_string(),
                s.decision.plan().enter().len().to_string(),
                pr,
                pe,
                format_bytes(copied),
                format!("{:.1} ms", s.compute.as_secs_f64() * 1e3),
            ]);
        }
        out.push_str(&t.render());
        out.push('\n');
        let mut t = Table::new([
            "location",
            "budget",
            "peak charged",
            "allocator peak",
            "copies in",
            "bytes in",
        ]);
        let n_in = self
            .transfers
            .iter()
            .filter(|x| x.to == self.device)
            .count();
        t.row([
            self.device.to_string(),
            format_budget(Some(c.device_budget)),
            format_bytes(self.peak_charged),
            format_bytes(self.allocator_peak),
            n_in.to_string(),
            format_bytes(self.bytes_to_device()),
        ]);
        out.push_str(&t.render());
        let _ = writeln!(
            out,
            "\nForecast before the run: {} copies, {} into {}, peak {}; the run went as forecast: {}",
            self.forecast.copies_into(self.device).count(),
            format_bytes(self.forecast.bytes_into(self.device)),
            self.device,
            format_bytes(self.forecast.peak_charged(self.device).unwrap_or(0)),
            if self.went_as_forecast() { "yes" } else { "no" }
        );
        let _ = writeln!(
            out,
            "Smallest budget for this program, found by forecasting: {} (closed form: {})",
            format_bytes(self.minimum_budget),
            format_bytes(c.derived_budget)
        );
        let key_copies: usize = self.keys.iter().map(|k| self.copies_to_device(k)).sum();
        let _ = writeln!(
            out,
            "Rotation keys: {key_copies} copies into {} ({}) from {} for {} keys over {} layer(s); every key at least once: {}",
            self.device,
            format_bytes(c.key * key_copies as u64),
            self.keys_at,
            self.keys.len(),
            self.layers,
            if self.keys.iter().all(|k| self.copies_to_device(k) >= 1) {
                "yes"
            } else {
                "no"
            }
        );
        let rms = self
            .errors
            .iter()
            .map(|e| e.rms * e.rms)
            .sum::<f64>()
            .sqrt()
            / (self.errors.len().max(1) as f64).sqrt();
        let _ = writeln!(
            out,
            "Result: {d} columns, max error {} (limit {}), rms {}",
            crate::format_sci(self.max_error()),
            crate::format_sci(MATRIX_MAX_ERROR),
            crate::format_sci(rms)
        );
        let _ = writeln!(
            out,
            "Time: {:.1} ms ({:.1} ms computing); {:.0} logical MAC/s ({} MACs)",
            self.wall.as_secs_f64() * 1e3,
            self.compute.as_secs_f64() * 1e3,
            self.mac_rate(),
            self.layers * d * d * d
        );
        out
    }
}

/// Adopts every value at `at` (a host location) as a replicable value.
fn adopt_all<T: Resident>(
    manager: &ResidencyManager,
    values: Vec<T>,
    at: ResidencyLocation,
) -> Result<Vec<Handle<T>>, ExampleError> {
    values
        .into_iter()
        .map(|v| Ok(manager.adopt(v, Some(at), ReplicaMode::Replicable)?))
        .collect()
}

/// Checks the dimension: a power of two in 2..=[`MAX_DIM`], and (once the engine is open)
/// at most its slot count.
///
/// # Errors
/// [`ExampleError::InvalidArgument`] naming `--dim`.
pub fn check_dim(dim: usize, slots: Option<usize>) -> Result<(), ExampleError> {
    let reason = if !(2..=MAX_DIM).contains(&dim) || !dim.is_power_of_two() {
        format!("{dim} is not a power of two in 2..={MAX_DIM}")
    } else if let Some(s) = slots.filter(|s| dim > *s) {
        format!("{dim} rows do not fit the preset's {s} slots")
    } else {
        return Ok(());
    };
    Err(ExampleError::InvalidArgument {
        argument: "--dim",
        reason,
    })
}

/// `--budget-mib`: mebibytes to bytes.
///
/// # Errors
/// [`ExampleError::InvalidArgument`] naming `--budget-mib` when the bytes overflow 64 bits.
pub fn budget_from_mib(mib: u64) -> Result<u64, ExampleError> {
    mib.checked_mul(1 << 20)
        .ok_or_else(|| ExampleError::InvalidArgument {
            argument: "--budget-mib",
            reason: format!("{mib} MiB does not fit in 64 bits of bytes"),
        })
}

/// The cleartext A (row-major, d x d), entries in [-0.25, 0.25].
#[must_use]
pub fn matrix_a(dim: usize) -> Vec<f64> {
    #[allow(clippy::cast_precision_loss)] // small indices
    (0..dim * dim)
        .map(|x| {
            let (i, k) = ((x / dim) as f64, (x % dim) as f64);
            0.25 * (0.7 * i + 1.3 * k + 0.1).sin()
        })
        .collect()
}

/// The cleartext B (row-major, d x d), entries in [-0.25, 0.25].
#[must_use]
pub fn matrix_b(dim: usize) -> Vec<f64> {
    #[allow(clippy::cast_precision_loss)] // small indices
    (0..dim * dim)
        .map(|x| {
            let (k, j) = ((x / dim) as f64, (x % dim) as f64);
            0.25 * (0.9 * k - 0.4 * j + 0.2).cos()
        })
        .collect()
}

/// The f64 product A·B (row-major).
#[must_use]
pub fn product(a: &[f64], b: &[f64], dim: usize) -> Vec<f64> {
    let mut c = vec![0.0; dim * dim];
    for i in 0..dim {
        for j in 0..dim {
            c[i * dim + j] = (0..dim).map(|k| a[i * dim + k] * b[k * dim + j]).sum();
        }
    }
    c
}

/// Diagonal k of A repeated over `slots`: slot t holds `A[i][(i - k) mod d]`, i = t mod d.
#[must_use]
pub fn diagonal_slots(a: &[f64], dim: usize, k: usize, slots: usize) -> Vec<f64> {
    (0..slots)
        .map(|t| {
            let i = t % dim;
            a[i * dim + (i + dim - k) % dim]
        })
        .collect()
}

/// Column j of a row-major d x d matrix repeated over `slots`: slot t holds `m[t mod d][j]`.
#[must_use]
pub fn column_slots(m: &[f64], dim: usize, j: usize, slots: usize) -> Vec<f64> {
    (0..slots).map(|t| m[(t % dim) * dim + j]).collect()
}

/// The values of the run, before adoption.
struct Values {
    inputs: Vec<Ciphertext>,
    /// `diagonals[layer][k]`, prepared at the layer's level.
    diagonals: Vec<Vec<Plaintext>>,
    keys: Vec<RotationKey>,
}

fn prepare(
    engine: &Engine,
    a: &[f64],
    b: &[f64],
    dim: usize,
    layers: usize,
) -> Result<Values, ExampleError> {
    let slots = engine.num_slots();
    let inputs = (0..dim)
        .map(|j| engine.encrypt_message(&column_slots(b, dim, j, slots)))
        .collect::<Result<Vec<_>, _>>()?;
    let diagonals = (0..layers)
        .map(|level| {
            (0..dim)
                .map(|k| {
                    engine.prepare_plaintext_for_multiplication(
                        &engine.encode(&diagonal_slots(a, dim, k, slots), level, None)?,
                        ModulusBasis::Q,
                    )
                })
                .collect::<Result<Vec<_>, _>>()
        })
        .collect::<Result<Vec<_>, _>>()?;
    let keys = (1..dim)
        .map(|k| {
            #[allow(clippy::cast_possible_wrap)] // k < MAX_DIM
            engine.create_rotation_key(k as i64, engine.secret_key())
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Values {
        inputs,
        diagonals,
        keys,
    })
}

/// `--layers`: 1..=[`MAX_LAYERS`].
///
/// # Errors
/// [`ExampleError::InvalidArgument`] naming `--layers`.
pub fn check_layers(layers: usize) -> Result<(), ExampleError> {
    if (1..=MAX_LAYERS).contains(&layers) {
        Ok(())
    } else {
        Err(ExampleError::InvalidArgument {
            argument: "--layers",
            reason: format!("{layers} is not in 1..={MAX_LAYERS} (each layer consumes a level)"),
        })
    }
}

/// `--keys-at`: `pageable-host` or `pinned-host`, the host location the rotation keys are
/// adopted at.
///
/// # Errors
/// [`ExampleError::InvalidArgument`] naming `--keys-at` for anything else (a device location
/// too: the keys start on the host and the controller streams them to the device).
pub fn parse_keys_at(s: &str) -> Result<ResidencyLocation, ExampleError> {
    match s.parse::<ResidencyLocation>() {
        Ok(loc) if loc.is_host() => Ok(loc),
        _ => Err(ExampleError::InvalidArgument {
            argument: "--keys-at",
            reason: format!("{s:?} is not a host location (pageable-host, pinned-host)"),
        }),
    }
}

/// The f64 product `A^layers · B` (row-major).
#[must_use]
pub fn layered_product(a: &[f64], b: &[f64], dim: usize, layers: usize) -> Vec<f64> {
    (0..layers).fold(b.to_vec(), |x, _| product(a, &x, dim))
}

/// Step k of column j: `acc + diag_k ⊙ NTT(rot_k(col))` (step 0: `diag_0 ⊙ NTT(col)`), one
/// engine call.
fn step_column(
    engine: &Engine,
    timeline: &Timeline,
    compute: &fhelium_cuda::Stream,
    col: &Ciphertext,
    key: Option<&RotationKey>,
    diag: &Plaintext,
    acc: Option<&Ciphertext>,
) -> Result<Ciphertext, ExampleError> {
    timeline.op(compute, "rotate_multiply_accumulate", || {
        engine.rotate_multiply_accumulate(col, key, diag, acc)
    })
}

/// Column-hoisted step: all d - 1 rotations of `col` over one ModUp (each equal to its
/// `rotate_with_key` word for word), then `sum_k diag_k ⊙ NTT(rot_k(col))`. RNS additions are
/// exact, so both schedules produce the same words.
fn hoisted_column(
    engine: &Engine,
    timeline: &Timeline,
    compute: &fhelium_cuda::Stream,
    col: &Ciphertext,
    keys: &[&RotationKey],
    diags: &[&Plaintext],
) -> Result<Ciphertext, ExampleError> {
    let rotated = timeline.op(compute, "rotate_many_with_keys", || {
        engine.rotate_many_with_keys(col, keys)
    })?;
    let mut acc = step_column(engine, timeline, compute, col, None, diags[0], None)?;
    for (r, diag) in rotated.into_iter().zip(&diags[1..]) {
        acc = step_column(engine, timeline, compute, &r, None, diag, Some(&acc))?;
    }
    Ok(acc)
}

/// The request name of step `k` of `layer` (`kind`: `step` or `prefetch`); layer 0 keeps the
/// one-layer names.
fn step_name(layer: usize, kind: &str, k: usize) -> String {
    if layer == 0 {
        format!("matrix/{kind}-{k}")
    } else {
        format!("matrix/layer-{layer}/{kind}-{k}")
    }
}

/// Runs the matrix flow (see the module docs).
///
/// # Errors
/// [`ExampleError::InvalidArgument`] for a bad dimension or layer count;
/// [`ExampleError::DeviceUnavailable`]; any engine, memory, manager or controller error (a
/// budget too small for a step fails the forecast with the planner's reason, before anything
/// moves). Columns beyond the error bound are reported in the outcome (the binary fails).
#[allow(clippy::too_many_lines)] // one straight-line program
pub fn run_matrix(
    options: &MatrixOptions,
    timeline: &Timeline,
) -> Result<MatrixOutcome, ExampleError> {
    let (dim, layers) = (options.dim, options.layers);
    check_dim(dim, None)?;
    check_layers(layers)?;
    parse_keys_at(&options.keys_at.to_string())?;
    let eo = &options.engine;
    let setup = Engine::open(eo.device, eo.preset, eo.seed)?;
    let (engine, memory, dev) = (&setup.engine, &setup.memory, setup.device);
    let slots = engine.num_slots();
    check_dim(dim, Some(slots))?;
    let (a, b) = (matrix_a(dim), matrix_b(dim));

    let prep = timeline.host_span("prepare values");
    let values = prepare(engine, &a, &b, dim, layers)?;
    drop(prep);
    let input = values.inputs[0].charge_nbytes();
    let diagonal = values.diagonals[0][0].charge_nbytes();
    let key = values.keys[0].charge_nbytes();
    let d64 = dim as u64;
    let accumulators = d64 * input;
    let layer_inputs = if layers > 1 { d64 * input } else { 0 };
    let workspace_of = |schedule| match schedule {
        Schedule::KeyMajor => 3 * input,
        Schedule::ColumnHoisted => (d64 + 2) * input,
    };
    let ahead = if options.prefetch { 2 } else { 1 };
    // Column-hoisted with several layers prefetches the next layer's diagonals during the
    // last column of a layer: two layers' diagonals at once.
    let hoisted_diagonals = if options.prefetch && layers > 1 { 2 } else { 1 };
    let budget_of = |schedule| {
        accumulators
            + layer_inputs
            + workspace_of(schedule)
            + match schedule {
                Schedule::KeyMajor => d64 * input + ahead * (key + diagonal),
                Schedule::ColumnHoisted => {
                    (d64 - 1) * key + hoisted_diagonals * d64 * diagonal + ahead * input
                }
            }
    };
    let schedule = options.schedule.unwrap_or(match options.device_budget {
        Some(b) if b >= budget_of(Schedule::ColumnHoisted) => Schedule::ColumnHoisted,
        _ => Schedule::KeyMajor,
    });
    let (workspace, derived_budget) = (workspace_of(schedule), budget_of(schedule));
    let all_diagonals: u64 = values
        .diagonals
        .iter()
        .flatten()
        .map(Resident::charge_nbytes)
        .sum();
    let charges = MatrixCharges {
        input,
        diagonal,
        key,
        accumulators,
        layer_inputs,
        workspace,
        working_set: d64 * input + all_diagonals + (d64 - 1) * key + accumulators + layer_inputs,
        derived_budget,
        device_budget: options.device_budget.unwrap_or(derived_budget),
    };

    let manager = ResidencyManager::builder(memory.clone())
        .budget(dev, charges.device_budget)
        .build()?;
    timeline.set_budgets(&manager);
    let input_h = adopt_all(&manager, values.inputs, PAGEABLE_HOST)?;
    let diag_h = values
        .diagonals
        .into_iter()
        .map(|layer| adopt_all(&manager, layer, PAGEABLE_HOST))
        .collect::<Result<Vec<_>, _>>()?;
    // The keys were made in pageable memory: copied once to `keys_at` when that differs.
    let keys = values
        .keys
        .into_iter()
        .map(|k| {
            if k.placement()? == options.keys_at {
                Ok(k)
            } else {
                Ok(k.materialize(memory, &options.keys_at, None)?.wait()?)
            }
        })
        .collect::<Result<Vec<_>, ExampleError>>()?;
    let key_h = adopt_all(&manager, keys, options.keys_at)?;
    timeline.sample(&manager, "adopt");

    let policy = DeterministicTieredLRU::with_fallback_tiers([(dev, vec![PAGEABLE_HOST])])?;
    let controller = ResidencyController::with_policy(&manager, policy);
    let transfer_stream = memory.stream(&dev)?;
    let compute = memory.stream(&dev)?;
    timeline.name_stream(&transfer_stream, "transfer");
    timeline.name_stream(&compute, "compute");
    let mut transfer = TransferStreams::new();
    transfer.insert(dev, transfer_stream);
    let mut consumers = ConsumerStreams::new();
    consumers.insert(dev, compute.clone());

    let started = Instant::now();
    let acc_reservation = manager.reserve(dev, accumulators, ACCUMULATOR_LABEL)?;
    let layer_reservation = if layers > 1 {
        Some(manager.reserve(dev, layer_inputs, "layer inputs")?)
    } else {
        None
    };
    timeline.sample(&manager, "reserve accumulators");
    // What step k of `layer` requires, and which of those the step before did not.
    let step_handles = |layer: usize, k: usize| -> Vec<ResidencyHandle> {
        let inputs = || input_h.iter().map(|h| h.raw().clone());
        match schedule {
            Schedule::KeyMajor => {
                let mut hs: Vec<ResidencyHandle> = Vec::new();
                if layer == 0 {
                    hs.extend(inputs());
                }
                hs.push(diag_h[layer][k].raw().clone());
                if k > 0 {
                    hs.push(key_h[k - 1].raw().clone());
                }
                hs
            }
            Schedule::ColumnHoisted => {
                let mut hs: Vec<ResidencyHandle> = Vec::new();
                if layer == 0 {
                    hs.push(input_h[k].raw().clone());
                }
                hs.extend(key_h.iter().map(|h| h.raw().clone()));
                hs.extend(diag_h[layer].iter().map(|h| h.raw().clone()));
                hs
            }
        }
    };
    let new_in_step = |layer: usize, k: usize| -> Vec<ResidencyHandle> {
        match (schedule, layer, k) {
            (Schedule::KeyMajor, _, 0) => vec![diag_h[layer][0].raw().clone()],
            (Schedule::KeyMajor, _, _) => {
                vec![key_h[k - 1].raw().clone(), diag_h[layer][k].raw().clone()]
            }
            (Schedule::ColumnHoisted, 0, _) => vec![input_h[k].raw().clone()],
            (Schedule::ColumnHoisted, _, 0) => {
                diag_h[layer].iter().map(|h| h.raw().clone()).collect()
            }
            (Schedule::ColumnHoisted, _, _) => Vec::new(),
        }
    };
    let step_request = |layer: usize, k: usize| -> Result<ResidencyRequest, ExampleError> {
        Ok(ResidencyRequest::new(
            &step_name(layer, "step", k),
            step_handles(layer, k)
                .into_iter()
                .map(|h| ResidencyRequirement::new(h, dev))
                .collect::<Vec<_>>(),
            [MemoryReservation::new(
                dev,
                workspace,
                STEP_WORKSPACE_LABEL,
            )?],
        )?)
    };
    // The next step after (layer, k), and its prefetch request when it brings new values.
    let next_step = |layer: usize, k: usize| -> Option<(usize, usize)> {
        if k + 1 < dim {
            Some((layer, k + 1))
        } else if layer + 1 < layers {
            Some((layer + 1, 0))
        } else {
            None
        }
    };
    let prefetch_request =
        |layer: usize, k: usize| -> Result<Option<ResidencyRequest>, ExampleError> {
            if !options.prefetch {
                return Ok(None);
            }
            let Some((l, n)) = next_step(layer, k) else {
                return Ok(None);
            };
            let hs = new_in_step(l, n);
            if hs.is_empty() {
                return Ok(None);
            }
            Ok(Some(ResidencyRequest::new(
                &step_name(l, "prefetch", n),
                hs.into_iter()
                    .map(|h| ResidencyRequirement::new(h, dev))
                    .collect::<Vec<_>>(),
                [],
            )?))
        };
    // The whole program, forecast before anything moves, and the (layer, k) of each of its
    // use steps (`None` for a prefetch).
    let mut program = Vec::with_capacity(2 * dim * layers);
    let mut at: Vec<Option<(usize, usize)>> = Vec::with_capacity(2 * dim * layers);
    for layer in 0..layers {
        for k in 0..dim {
            program.push(ResidencyProgramStep::used(step_request(layer, k)?));
            at.push(Some((layer, k)));
            if let Some(p) = prefetch_request(layer, k)? {
                program.push(ResidencyProgramStep::prefetched(p));
                at.push(None);
            }
        }
    }
    let eviction = match options.eviction {
        Eviction::Lru => ProgramEviction::Policy,
        Eviction::NextUse => ProgramEviction::NextUse,
    };
    // The smallest budget for this program, found by forecasting at trial budgets (the
    // accumulator and layer-input reservations already held).
    let span = timeline.host_span("minimum budget");
    let minimum_budget = controller.minimum_budget(
        &program,
        eviction,
        dev,
        charges.working_set + charges.derived_budget,
    )?;
    drop(span);
    // The layer's results: back to the coefficient domain and rescaled. Between layers this
    // runs at the start of the next layer's first step, inside its workspace.
    let finish = |acc: &mut Vec<Option<Ciphertext>>| -> Result<Vec<Ciphertext>, ExampleError> {
        let mut out = Vec::with_capacity(dim);
        for slot in acc.iter_mut() {
            let sum = slot.take().ok_or_else(|| ExampleError::Check {
                what: "every column accumulated",
                expected: "an accumulator".to_owned(),
                found: "none".to_owned(),
            })?;
            let coeff = timeline.op(&compute, "ntt_to_coefficient", || {
                engine.ntt_domain_to_coefficient_domain(&sum)
            })?;
            drop(sum);
            out.push(timeline.op(&compute, "rescale_to_next_level", || {
                engine.rescale_to_next_level(&coeff)
            })?);
        }
        Ok(out)
    };
    let mut acc: Vec<Option<Ciphertext>> = (0..dim).map(|_| None).collect();
    // The previous layer's results (layers after the first read these, not the inputs).
    let mut layer_in: Vec<Ciphertext> = Vec::new();
    let mut step_times = vec![Duration::ZERO; program.len()];
    let span = timeline.host_span("program");
    let run = controller.run_program(&program, eviction, &consumers, &transfer, |pi, admitted| {
        let (layer, k) = at[pi].ok_or_else(|| ExampleError::Check {
            what: "program order",
            expected: "a use step".to_owned(),
            found: format!("prefetch step {pi}"),
        })?;
        timeline.sample(&manager, "step admitted");
        engine.wait_for(&compute)?;
        let t0 = Instant::now();
        if layer > 0 && k == 0 {
            layer_in.clear();
            layer_in = finish(&mut acc)?;
        }
        let column = |j: usize| -> Result<&Ciphertext, ExampleError> {
            if layer == 0 {
                Ok(admitted.value(&input_h[j], dev)?)
            } else {
                Ok(&layer_in[j])
            }
        };
        match schedule {
            Schedule::KeyMajor => {
                let diag = admitted.value(&diag_h[layer][k], dev)?;
                let step_key = match k {
                    0 => None,
                    _ => Some(admitted.value(&key_h[k - 1], dev)?),
                };
                for (j, slot) in acc.iter_mut().enumerate() {
                    let next = step_column(
                        engine,
                        timeline,
                        &compute,
                        column(j)?,
                        step_key,
                        diag,
                        slot.as_ref(),
                    )?;
                    *slot = Some(next);
                }
            }
            Schedule::ColumnHoisted => {
                let keys = key_h
                    .iter()
                    .map(|h| admitted.value(h, dev))
                    .collect::<Result<Vec<_>, _>>()?;
                let diags = diag_h[layer]
                    .iter()
                    .map(|h| admitted.value(h, dev))
                    .collect::<Result<Vec<_>, _>>()?;
                acc[k] = Some(hoisted_column(
                    engine,
                    timeline,
                    &compute,
                    column(k)?,
                    &keys,
                    &diags,
                )?);
            }
        }
        engine.signal(&compute)?;
        compute.synchronize()?;
        step_times[pi] = t0.elapsed();
        Ok::<(), ExampleError>(())
    });
    drop(span);
    let run = run?;
    // The last layer's results, in a workspace of their own.
    let reserved = manager.reserve(dev, 3 * input, "finish workspace")?;
    let t0 = Instant::now();
    let outputs = finish(&mut acc)?;
    engine.signal(&compute)?;
    compute.synchronize()?;
    let finish_time = t0.elapsed();
    reserved.release()?;
    let wall = started.elapsed();
    drop(layer_in);

    let mut transfers = Vec::new();
    for r in &run.reports {
        transfers.extend(copies(r));
    }
    let mut steps = Vec::with_capacity(dim * layers);
    for (pi, slot) in at.iter().enumerate() {
        let Some((layer, k)) = *slot else { continue };
        let prefetch = match at.get(pi + 1) {
            Some(None) => Some((run.decisions[pi + 1].clone(), run.reports[pi + 1].clone())),
            _ => None,
        };
        steps.push(MatrixStep {
            layer,
            step: k,
            decision: run.decisions[pi].clone(),
            report: run.reports[pi].clone(),
            prefetch,
            compute: step_times[pi],
        });
    }
    let compute_total = step_times.iter().sum::<Duration>() + finish_time;
    let forecast = run.forecast;

    let inputs: Vec<ResidencyHandle> = input_h.iter().map(|h| h.raw().clone()).collect();
    let diagonals: Vec<ResidencyHandle> =
        diag_h.iter().flatten().map(|h| h.raw().clone()).collect();
    let keys: Vec<ResidencyHandle> = key_h.iter().map(|h| h.raw().clone()).collect();
    let c = layered_product(&a, &b, dim, layers);
    let mut errors = Vec::with_capacity(dim);
    for (j, out) in outputs.into_iter().enumerate() {
        let on_host = out.materialize(memory, &PAGEABLE_HOST, None)?.wait()?;
        drop(out);
        let got = engine.decrypt_message(&on_host)?;
        errors.push(error_stats(&got, &column_slots(&c, dim, j, slots)));
    }
    for h in inputs.iter().chain(&diagonals).chain(&keys) {
        manager.discard(h)?;
    }
    acc_reservation.release()?;
    if let Some(r) = layer_reservation {
        r.release()?;
    }
    manager.poll()?;
    let snapshot = manager.snapshot()?;
    let peak_charged = snapshot.location(dev).map_or(
        0,
        fhelium_residency::ResidencyLocationSnapshot::peak_charged_bytes,
    );
    let allocator_peak = memory.usage(&dev).map_or(0, |u| u.peak_bytes);
    manager.close(true, false)?;
    let closed = matches!(
        manager.state_version(),
        Err(fhelium_runtime::RuntimeError::Closed { .. })
    );
    Ok(MatrixOutcome {
        device: dev,
        engine: engine.describe(),
        dim,
        layers,
        eviction: options.eviction,
        schedule,
        schedule_chosen: options.schedule.is_none(),
        prefetch: options.prefetch,
        keys_at: options.keys_at,
        charges,
        inputs,
        diagonals,
        keys,
        forecast,
        minimum_budget,
        steps,
        transfers,
        peak_charged,
        allocator_peak,
        errors,
        wall,
        compute: compute_total,
        closed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The diagonal method on cleartexts: rotating column j by k (slot t takes slot t - k)
    /// and weighting by diagonal k sums to column j of A·B in every slot.
    #[test]
    fn the_diagonal_method_reproduces_the_product_in_every_slot() {
        for dim in [2, 4, 16] {
            let slots = 64;
            let (a, b) = (matrix_a(dim), matrix_b(dim));
            let c = product(&a, &b, dim);
            for j in 0..dim {
                let col = column_slots(&b, dim, j, slots);
                let mut sum = vec![0.0; slots];
                for k in 0..dim {
                    let diag = diagonal_slots(&a, dim, k, slots);
                    for t in 0..slots {
                        sum[t] += diag[t] * col[(t + slots - k) % slots];
                    }
                }
                let want = column_slots(&c, dim, j, slots);
                for t in 0..slots {
                    assert!(
                        (sum[t] - want[t]).abs() < 1e-12,
                        "dim {dim} col {j} slot {t}"
                    );
                }
            }
        }
    }

    #[test]
    fn budgets_in_mib_convert_or_name_the_argument() {
        assert_eq!(budget_from_mib(108).ok(), Some(108 * 1_048_576));
        assert!(matches!(
            budget_from_mib(u64::MAX >> 19),
            Err(ExampleError::InvalidArgument {
                argument: "--budget-mib",
                ..
            })
        ));
    }

    #[test]
    fn bad_dimensions_name_the_argument() {
        for dim in [0, 1, 3, 12, 128] {
            assert!(
                matches!(
                    check_dim(dim, None),
                    Err(ExampleError::InvalidArgument {
                        argument: "--dim",
                        ..
                    })
                ),
                "{dim}"
            );
        }
        assert!(
            matches!(
                check_dim(16, Some(8)),
                Err(ExampleError::InvalidArgument { argument: "--dim", ref reason })
                    if reason.contains("8 slots")
            ),
            "more rows than slots"
        );
        assert!(check_dim(16, Some(8192)).is_ok() && check_dim(64, None).is_ok());
    }
}
