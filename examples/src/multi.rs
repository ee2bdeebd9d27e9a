//! The multi-device flow (`multi_gpu`, `docs/tutorials/multi-device.md`): a batch of the seed's
//! rotate -> NTT -> multiply_plaintext -> INTT -> rescale stages split over several devices
//! under per-device budgets smaller than the per-device working set, so the residency manager
//! must reclaim every device's previous input before the next one enters.
//!
//! # The program
//! 1. One memory layer for every device (`sim:0,sim:1` on the CPU engine, or `cuda:N` with one
//!    CUDA engine per device sharing the CPU engine that made the keys).
//! 2. The rotation key and the operation-ready weight plaintext are uploaded to the **first**
//!    device and adopted there (replicable): the other devices get them from that replica, a
//!    device-to-device (peer) copy, direct or staged through pinned host ([`fhelium_cuda::peer`]).
//! 3. `batch` encrypted inputs are adopted at pinned host (exclusive). Item `i` runs on device
//!    `i % D` in round `i / D`.
//! 4. Every device gets the budget `key + weight + input + workspace` (workspace = 3 x input,
//!    the seed's reservation); its working set `key + weight + k x input + workspace` (k items)
//!    is larger as soon as k >= 2, which the options require.
//! 5. Each round is **one** request over all active devices (input, key and weight at each,
//!    plus each device's workspace reservation): one decision, one scope, one strict lease per
//!    device ([`ResidencyController::use_request`]); the policy's fallback tiers name pinned
//!    then pageable host, so from round 2 on the decision reclaims each device's previous input
//!    by moving it to pinned host.
//! 6. The devices compute their items concurrently (one thread per device), the leases close,
//!    the results are downloaded and every one is decrypted and compared with the cleartext.
//! 7. Per-device accounting (budget, used, peak charged, transfers in / out / peer, items,
//!    busy time) and the throughput are printed; every handle is discarded and the manager
//!    closed.

use std::fmt::Write as _;
use std::str::FromStr;
use std::time::{Duration, Instant};

use fhelium_ckks::{Ciphertext, CkksConfig, CpuEngine, ModulusBasis, Preset};
use fhelium_cuda::{Memory, MemoryConfig, PeerCopyStats, PeerMode, Resident};
use fhelium_residency::{
    DeterministicTieredLRU, MemoryReservation, ReplicaMode, ResidencyDecision, ResidencyForecast,
    ResidencyHandle, ResidencyLocation, ResidencyPlanReport, ResidencyProgramStep,
    ResidencyRequest, ResidencyRequirement, ResidencySnapshot, PAGEABLE_HOST, PINNED_HOST,
};
use fhelium_runtime::{
    ConsumerStreams, ProgramEviction, ResidencyController, ResidencyManager, TransferStreams,
};

use crate::automatic::seed_stage;
use crate::engine::Engine;
use crate::timeline::Timeline;
use crate::transfers::copies;
pub use crate::transfers::Transfer;
use crate::{error_stats, format_budget, format_bytes, ErrorStats, ExampleError, Table, MAX_ERROR};

/// Default batch size of `multi_gpu`.
pub const DEFAULT_BATCH: usize = 6;

/// Which devices to split the batch over: `--devices sim:0,sim:1 | cuda:0,cuda:1 | all`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceList {
    /// These devices, all of one backend (all `sim:N` or all `cuda:N`), no repeats.
    Locations(Vec<ResidencyLocation>),
    /// Every visible CUDA device (needs the `cuda` feature and a device).
    AllCuda,
}

impl Default for DeviceList {
    fn default() -> Self {
        Self::Locations(vec![ResidencyLocation::Sim(0), ResidencyLocation::Sim(1)])
    }
}

impl FromStr for DeviceList {
    type Err = ExampleError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |reason: String| ExampleError::InvalidArgument {
            argument: "--devices",
            reason,
        };
        if s.trim() == "all" {
            return Ok(Self::AllCuda);
        }
        let mut out: Vec<ResidencyLocation> = Vec::new();
        for part in s.split(',') {
            let loc: ResidencyLocation = part
                .trim()
                .parse()
                .map_err(|_| bad(format!("{part:?} is not sim:N or cuda:N")))?;
            if loc.is_host() {
                return Err(bad(format!("{loc} is not a device")));
            }
            if out.contains(&loc) {
                return Err(bad(format!("{loc} is named twice")));
            }
            if let Some(first) = out.first() {
                if std::mem::discriminant(first) != std::mem::discriminant(&loc) {
                    return Err(bad(format!(
                        "{first} and {loc} belong to different backends; use all sim:N or all cuda:N"
                    )));
                }
            }
            out.push(loc);
        }
        Ok(Self::Locations(out))
    }
}

/// Options of one multi-device run.
#[derive(Clone, Debug)]
pub struct MultiOptions {
    /// The devices.
    pub devices: DeviceList,
    /// Number of ciphertexts in the batch (at least 2 per device).
    pub batch: usize,
    /// CKKS preset.
    pub preset: Preset,
    /// Engine seed byte.
    pub seed: u8,
    /// Peer mode of the memory layer ([`PeerMode::Staged`] forces the staged fallback for
    /// every device-to-device copy).
    pub peer: PeerMode,
}

impl Default for MultiOptions {
    fn default() -> Self {
        Self {
            devices: DeviceList::default(),
            batch: DEFAULT_BATCH,
            preset: crate::engine::DEFAULT_PRESET,
            seed: crate::engine::DEFAULT_SEED,
            peer: PeerMode::Auto,
        }
    }
}

/// Managed charges of the run and the per-device budget derived from them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MultiCharges {
    /// Rotation key.
    pub key: u64,
    /// Weight plaintext.
    pub weight: u64,
    /// One input ciphertext (all inputs have the same size).
    pub input: u64,
    /// Workspace reservation per active device (3 x input).
    pub workspace: u64,
    /// Budget of every device: key + weight + input + workspace.
    pub device_budget: u64,
}

/// One round: the decision and the report of its scope.
#[derive(Debug)]
pub struct RoundRecord {
    /// Round index (0-based).
    pub round: usize,
    /// `(device, item)` pairs computed in this round.
    pub items: Vec<(ResidencyLocation, usize)>,
    /// The decision admitted for the round.
    pub decision: ResidencyDecision,
    /// The scope's report (entry transitions, then exit).
    pub report: ResidencyPlanReport,
    /// Wall time of the concurrent compute phase.
    pub compute: Duration,
}

/// Per-device figures of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceAccount {
    /// The device.
    pub device: ResidencyLocation,
    /// Its budget.
    pub budget: Option<u64>,
    /// Managed bytes charged there at the end.
    pub used: u64,
    /// Highest used + reserved seen.
    pub peak_charged: u64,
    /// Values resident there at the end.
    pub values: u32,
    /// Copies into the device (from anywhere) and their bytes.
    pub transfers_in: (u64, u64),
    /// Of those, copies from another device (peer copies).
    pub peer_in: (u64, u64),
    /// Copies out of the device to host locations (reclaims) and their bytes.
    pub transfers_out: (u64, u64),
    /// Items computed there.
    pub items: usize,
    /// Sum of the items' compute times there.
    pub busy: Duration,
    /// Highest bytes allocated there by the memory layer (managed values plus the engine's
    /// unmanaged temporaries and results).
    pub allocator_peak: u64,
}

/// Everything the multi-device flow produced.
#[derive(Debug)]
pub struct MultiOutcome {
    /// The devices, in order.
    pub devices: Vec<ResidencyLocation>,
    /// Engine description.
    pub engine: &'static str,
    /// Peer mode of the memory layer.
    pub peer: PeerMode,
    /// Peer links between the devices: `(from, to, path name)`.
    pub links: Vec<(ResidencyLocation, ResidencyLocation, &'static str)>,
    /// Charges and budget.
    pub charges: MultiCharges,
    /// The input handles, by item.
    pub inputs: Vec<ResidencyHandle>,
    /// The key handle.
    pub key: ResidencyHandle,
    /// The weight handle.
    pub weight: ResidencyHandle,
    /// The forecast of the whole batch (one use per round), made before anything moved.
    pub forecast: ResidencyForecast,
    /// Whether every round's decision was the forecast's.
    pub went_as_forecast: bool,
    /// The rounds.
    pub rounds: Vec<RoundRecord>,
    /// Every copy the manager made (adoption excluded), in order.
    pub transfers: Vec<Transfer>,
    /// Per-device accounting.
    pub accounts: Vec<DeviceAccount>,
    /// The snapshot after the last round.
    pub final_snapshot: ResidencySnapshot,
    /// The memory layer's device-to-device copy counters.
    pub peer_stats: PeerCopyStats,
    /// Decryption error of every item against its cleartext.
    pub errors: Vec<ErrorStats>,
    /// Wall time of all rounds (residency work + compute).
    pub wall: Duration,
    /// Sum of the rounds' compute phases.
    pub compute: Duration,
    /// Whether the manager was closed at the end.
    pub closed: bool,
}

impl MultiOutcome {
    /// Largest decryption error over the batch.
    #[must_use]
    pub fn max_error(&self) -> f64 {
        self.errors.iter().map(|e| e.max_abs).fold(0.0, f64::max)
    }

    /// Items per second over the compute phases, and over the whole rounds.
    #[must_use]
    pub fn throughput(&self) -> (f64, f64) {
        #[allow(clippy::cast_precision_loss)]
        let n = self.errors.len() as f64;
        (
            n / self.compute.as_secs_f64().max(1e-9),
            n / self.wall.as_secs_f64().max(1e-9),
        )
    }
}

/// The engines of a multi-device run: one shared CPU engine (simulated devices) or one CUDA
/// engine per device sharing one CPU engine.
struct Engines {
    memory: Memory,
    devices: Vec<ResidencyLocation>,
    /// `engines[i]` computes on `devices[i]`; with the CPU engine there is one for all.
    engines: Vec<Engine>,
}

impl Drop for Engines {
    fn drop(&mut self) {
        // Each CUDA engine frees its tables and unloads its module in its own context.
        for e in self.engines.drain(..).rev() {
            let _ = e.bind_device();
            drop(e);
        }
    }
}

impl Engines {
    fn engine(&self, i: usize) -> &Engine {
        &self.engines[i.min(self.engines.len() - 1)]
    }

    fn open(options: &MultiOptions) -> Result<Self, ExampleError> {
        let devices = match &options.devices {
            DeviceList::Locations(v) if v.is_empty() => {
                return Err(ExampleError::InvalidArgument {
                    argument: "--devices",
                    reason: "no device named".to_owned(),
                })
            }
            DeviceList::Locations(v) => v.clone(),
            DeviceList::AllCuda => Vec::new(),
        };
        if let Some(ResidencyLocation::Sim(_)) = devices.first() {
            let count = devices
                .iter()
                .map(|l| match l {
                    ResidencyLocation::Sim(n) => n.saturating_add(1),
                    _ => 0,
                })
                .max()
                .unwrap_or(1);
            let memory = Memory::new(&MemoryConfig {
                sim_devices: count,
                peer: options.peer,
                ..MemoryConfig::default()
            })?;
            let engine = CpuEngine::from_config_in(
                CkksConfig::from_preset(options.preset)?,
                Some([options.seed; 32]),
                memory.clone(),
            )?;
            return Ok(Self {
                memory,
                devices,
                engines: vec![Engine::Cpu(engine)],
            });
        }
        open_cuda(devices, options)
    }
}

#[cfg(not(feature = "cuda"))]
fn open_cuda(
    _devices: Vec<ResidencyLocation>,
    _options: &MultiOptions,
) -> Result<Engines, ExampleError> {
    Err(ExampleError::DeviceUnavailable {
        device: "cuda".to_owned(),
        reason: "this build has no CUDA backend; rebuild with `--features cuda` or use \
                 --devices sim:0,sim:1"
            .to_owned(),
    })
}

#[cfg(feature = "cuda")]
fn open_cuda(
    devices: Vec<ResidencyLocation>,
    options: &MultiOptions,
) -> Result<Engines, ExampleError> {
    let memory = Memory::new(&MemoryConfig {
        cuda: true,
        peer: options.peer,
        ..MemoryConfig::default()
    })
    .map_err(|e| ExampleError::DeviceUnavailable {
        device: "cuda".to_owned(),
        reason: format!("no CUDA driver or device: {e}"),
    })?;
    let devices = if devices.is_empty() {
        (0..memory.cuda_device_count())
            .map(ResidencyLocation::Cuda)
            .collect()
    } else {
        devices
    };
    for d in &devices {
        if !memory.is_available(d) {
            return Err(ExampleError::DeviceUnavailable {
                device: d.to_string(),
                reason: format!(
                    "the machine has {} CUDA device(s)",
                    memory.cuda_device_count()
                ),
            });
        }
    }
    let cpu = std::sync::Arc::new(CpuEngine::from_config_in(
        CkksConfig::from_preset(options.preset)?,
        Some([options.seed; 32]),
        memory.clone(),
    )?);
    let mut engines = Vec::with_capacity(devices.len());
    for d in &devices {
        let ResidencyLocation::Cuda(n) = *d else {
            unreachable!("checked by DeviceList parsing")
        };
        engines.push(crate::engine::cuda_engine(&cpu, &memory, n, options.seed)?);
    }
    Ok(Engines {
        memory,
        devices,
        engines,
    })
}

/// The cleartext of item `i` (distinct per item).
#[must_use]
pub fn item_message(i: usize, slots: usize) -> Vec<f64> {
    #[allow(clippy::cast_precision_loss)]
    (0..slots)
        .map(|j| 0.01 * (j as f64 * 0.017 + i as f64 * 0.5).sin())
        .collect()
}

/// Runs the multi-device flow (see the module docs).
///
/// # Errors
/// [`ExampleError::InvalidArgument`] for fewer than two items per device;
/// [`ExampleError::DeviceUnavailable`]; any engine, memory, manager or controller error;
/// [`ExampleError::Check`] when a decision or the final residency is not what the flow
/// requires. Items beyond the error bound are reported in the outcome (the binary fails).
#[allow(clippy::too_many_lines)] // one straight-line program
pub fn run_multi(
    options: &MultiOptions,
    timeline: &Timeline,
) -> Result<MultiOutcome, ExampleError> {
    if let DeviceList::Locations(v) = &options.devices {
        check_batch(options.batch, v.len())?;
    }
    let setup = Engines::open(options)?;
    let (memory, devices) = (&setup.memory, setup.devices.clone());
    let d_count = devices.len();
    check_batch(options.batch, d_count)?;
    let host = setup.engine(0);
    let first = devices[0];
    let slots = host.num_slots();

    // Values: key and weight uploaded to the first device; inputs at pinned host.
    let prep = timeline.host_span("prepare values");
    let weight = host
        .prepare_plaintext_for_multiplication(
            &host.encode(&vec![0.5; slots], 0, None)?,
            ModulusBasis::Q,
        )?
        .materialize(memory, &first, None)?
        .wait()?;
    let key = host
        .create_rotation_key(1, host.secret_key())?
        .materialize(memory, &first, None)?
        .wait()?;
    let mut inputs = Vec::with_capacity(options.batch);
    for i in 0..options.batch {
        inputs.push(
            host.encrypt_message(&item_message(i, slots))?
                .materialize(memory, &PINNED_HOST, None)?
                .wait()?,
        );
    }
    drop(prep);
    let input_charge = inputs[0].charge_nbytes();
    if let Some(other) = inputs.iter().find(|c| c.charge_nbytes() != input_charge) {
        return Err(ExampleError::Check {
            what: "inputs of one size",
            expected: format_bytes(input_charge),
            found: format_bytes(other.charge_nbytes()),
        });
    }
    let workspace = 3 * input_charge;
    let charges = MultiCharges {
        key: key.charge_nbytes(),
        weight: weight.charge_nbytes(),
        input: input_charge,
        workspace,
        device_budget: key.charge_nbytes() + weight.charge_nbytes() + input_charge + workspace,
    };

    let mut builder = ResidencyManager::builder(memory.clone());
    for d in &devices {
        builder = builder.budget(*d, charges.device_budget);
    }
    let manager = builder.build()?;
    timeline.set_budgets(&manager);
    let weight_h = manager.adopt(weight, Some(first), ReplicaMode::Replicable)?;
    let key_h = manager.adopt(key, Some(first), ReplicaMode::Replicable)?;
    let mut input_h = Vec::with_capacity(options.batch);
    for ct in inputs {
        input_h.push(manager.adopt(ct, Some(PINNED_HOST), ReplicaMode::Exclusive)?);
    }
    timeline.sample(&manager, "adopt");

    let policy = DeterministicTieredLRU::with_fallback_tiers(
        devices
            .iter()
            .map(|d| (*d, vec![PINNED_HOST, PAGEABLE_HOST])),
    )?;
    let controller = ResidencyController::with_policy(&manager, policy);
    let mut transfer = TransferStreams::new();
    let mut compute = ConsumerStreams::new();
    for d in &devices {
        let t = memory.stream(d)?;
        let c = memory.stream(d)?;
        timeline.name_stream(&t, "transfer");
        timeline.name_stream(&c, "compute");
        transfer.insert(*d, t);
        compute.insert(*d, c);
    }

    let mut busy = vec![Duration::ZERO; d_count];
    let mut outputs: Vec<Option<Ciphertext>> = (0..options.batch).map(|_| None).collect();
    // One use per round over its active devices: the whole batch is one program, forecast
    // before anything moves and run round by round.
    let round_items = |round: usize| -> Vec<(usize, usize)> {
        (0..d_count)
            .map(|di| (di, round * d_count + di))
            .filter(|(_, i)| *i < options.batch)
            .collect()
    };
    let round_count = options.batch.div_ceil(d_count);
    let mut program = Vec::with_capacity(round_count);
    for round in 0..round_count {
        let mut requirements = Vec::new();
        let mut reservations = Vec::new();
        for (di, i) in round_items(round) {
            let d = devices[di];
            requirements.push(ResidencyRequirement::new(input_h[i].raw().clone(), d));
            requirements.push(ResidencyRequirement::new(key_h.raw().clone(), d));
            requirements.push(ResidencyRequirement::new(weight_h.raw().clone(), d));
            reservations.push(MemoryReservation::new(d, workspace, "stage workspace")?);
        }
        program.push(ResidencyProgramStep::used(ResidencyRequest::new(
            &format!("multi/round-{round}"),
            requirements,
            reservations,
        )?));
    }
    let started = Instant::now();
    let mut compute_times = vec![Duration::ZERO; round_count];
    let span = timeline.host_span("program");
    let run = controller.run_program(
        &program,
        ProgramEviction::Policy,
        &compute,
        &transfer,
        |round, admitted| {
            timeline.sample(&manager, "round admitted");
            let items = round_items(round);
            // Borrow every device's operands, then compute on all devices at once.
            let mut work = Vec::with_capacity(items.len());
            for &(di, i) in &items {
                let d = devices[di];
                work.push((
                    di,
                    i,
                    admitted.value(&input_h[i], d)?,
                    admitted.value(&key_h, d)?,
                    admitted.value(&weight_h, d)?,
                ));
            }
            let t0 = Instant::now();
            let results: Vec<(usize, usize, Duration, Result<Ciphertext, ExampleError>)> =
                std::thread::scope(|s| {
                    let handles: Vec<_> = work
                        .iter()
                        .map(|&(di, i, src, k, w)| {
                            let engine = setup.engine(di);
                            let stream = &compute[&devices[di]];
                            s.spawn(move || {
                                let t = Instant::now();
                                // The device's time: enqueue, then wait for its stream
                                // (in this device's thread, so the others go on).
                                let r = seed_stage(engine, timeline, stream, src, k, w)
                                    .and_then(|o| Ok(stream.synchronize().map(|()| o)?));
                                (di, i, t.elapsed(), r)
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|h| match h.join() {
                            Ok(r) => r,
                            Err(_) => (
                                0,
                                usize::MAX,
                                Duration::ZERO,
                                Err(ExampleError::Check {
                                    what: "device worker",
                                    expected: "a result".to_owned(),
                                    found: "the worker thread panicked".to_owned(),
                                }),
                            ),
                        })
                        .collect()
                });
            compute_times[round] = t0.elapsed();
            drop(work);
            for &(di, _) in &items {
                compute[&devices[di]].synchronize()?;
            }
            for (di, i, took, r) in results {
                outputs[i] = Some(r?);
                busy[di] += took;
            }
            Ok::<(), ExampleError>(())
        },
    );
    drop(span);
    let run = run?;
    timeline.sample(&manager, "rounds closed");
    let compute_total: Duration = compute_times.iter().sum();
    let mut transfers = Vec::new();
    for r in &run.reports {
        transfers.extend(copies(r));
    }
    let went_as_forecast = run.went_as_forecast();
    let forecast = run.forecast;
    let rounds: Vec<RoundRecord> = run
        .decisions
        .into_iter()
        .zip(run.reports)
        .enumerate()
        .map(|(round, (decision, report))| RoundRecord {
            round,
            items: round_items(round)
                .iter()
                .map(|&(di, i)| (devices[di], i))
                .collect(),
            decision,
            report,
            compute: compute_times[round],
        })
        .collect();
    let wall = started.elapsed();

    // Checks on the decisions: from round 2 on, each active device reclaims its previous input.
    for r in rounds.iter().skip(1) {
        for &(d, i) in &r.items {
            let prev = &input_h[i - d_count];
            check(
                "previous input reclaimed at its device",
                r.decision
                    .evictions()
                    .iter()
                    .any(|e| e.action.handle() == prev.raw() && e.released_location == d),
                &format!("a reclaim of input {} at {d}", i - d_count),
                || format!("{:?}", r.decision.evictions()),
            )?;
        }
    }

    // Verify every result against its cleartext.
    let mut errors = Vec::with_capacity(options.batch);
    for (i, out) in outputs.into_iter().enumerate() {
        let out = out.ok_or_else(|| ExampleError::Check {
            what: "every item computed",
            expected: format!("a result for item {i}"),
            found: "none".to_owned(),
        })?;
        let on_host = out.materialize(memory, &PAGEABLE_HOST, None)?.wait()?;
        drop(out);
        let got = host.decrypt_message(&on_host)?;
        let m = item_message(i, slots);
        let expected: Vec<f64> = (0..slots)
            .map(|j| 0.5 * m[(j + slots - 1) % slots])
            .collect();
        errors.push(error_stats(&got, &expected));
    }

    manager.poll()?;
    let final_snapshot = manager.snapshot()?;
    let accounts = devices
        .iter()
        .enumerate()
        .map(|(di, d)| {
            let loc = final_snapshot.location(*d);
            let sum = |f: &dyn Fn(&Transfer) -> bool| {
                transfers
                    .iter()
                    .filter(|t| f(t))
                    .fold((0u64, 0u64), |(n, b), t| (n + 1, b + t.bytes))
            };
            DeviceAccount {
                device: *d,
                budget: loc.and_then(fhelium_residency::ResidencyLocationSnapshot::budget_bytes),
                used: loc.map_or(0, fhelium_residency::ResidencyLocationSnapshot::used_bytes),
                peak_charged: loc.map_or(
                    0,
                    fhelium_residency::ResidencyLocationSnapshot::peak_charged_bytes,
                ),
                values: loc.map_or(0, |l| l.parts().value_count),
                transfers_in: sum(&|t| t.to == *d),
                peer_in: sum(&|t| t.to == *d && t.from.is_device()),
                transfers_out: sum(&|t| t.from == *d && t.to.is_host()),
                items: rounds
                    .iter()
                    .map(|r| r.items.iter().filter(|(x, _)| x == d).count())
                    .sum(),
                busy: busy[di],
                allocator_peak: memory.usage(d).map_or(0, |u| u.peak_bytes),
            }
        })
        .collect();
    let links = devices
        .iter()
        .flat_map(|a| devices.iter().map(move |b| (*a, *b)))
        .filter(|(a, b)| a != b)
        .filter_map(|(a, b)| memory.peer_link(&a, &b).ok().map(|l| (a, b, l.path.name())))
        .collect();
    let peer_stats = memory.peer_copy_stats();

    let key = key_h.raw().clone();
    let weight = weight_h.raw().clone();
    let inputs: Vec<ResidencyHandle> = input_h.iter().map(|h| h.raw().clone()).collect();
    for h in inputs.iter().chain([&key, &weight]) {
        manager.discard(h)?;
    }
    manager.close(true, false)?;
    let closed = matches!(
        manager.state_version(),
        Err(fhelium_runtime::RuntimeError::Closed { .. })
    );
    Ok(MultiOutcome {
        engine: host.describe(),
        peer: memory.peer_mode(),
        links,
        devices,
        charges,
        inputs,
        key,
        weight,
        forecast,
        went_as_forecast,
        rounds,
        transfers,
        accounts,
        final_snapshot,
        peer_stats,
        errors,
        wall,
        compute: compute_total,
        closed,
    })
}

fn check_batch(batch: usize, devices: usize) -> Result<(), ExampleError> {
    if devices > 0 && batch >= 2 * devices {
        return Ok(());
    }
    Err(ExampleError::InvalidArgument {
        argument: "--batch",
        reason: format!(
            "{batch} items over {devices} device(s): need at least 2 per device so that the \
             per-device budget is smaller than the working set"
        ),
    })
}

fn check(
    what: &'static str,
    ok: bool,
    expected: &str,
    found: impl FnOnce() -> String,
) -> Result<(), ExampleError> {
    if ok {
        Ok(())
    } else {
        Err(ExampleError::Check {
            what,
            expected: expected.to_owned(),
            found: found(),
        })
    }
}

impl MultiOutcome {
    /// The rounds' decisions, the per-device accounting and the throughput, as text.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        let names: Vec<String> = self.devices.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "Multi-device stages: {} items over {} ({}), peer mode {:?}",
            self.errors.len(),
            names.join(", "),
            self.engine,
            self.peer
        );
        for (a, b, path) in &self.links {
            let _ = writeln!(out, "  link {a} -> {b}: {path}");
        }
        let _ = writeln!(
            out,
            "Per-device budget {} = key {} + weight {} + input {} + workspace {}",
            format_bytes(self.charges.device_budget),
            format_bytes(self.charges.key),
            format_bytes(self.charges.weight),
            format_bytes(self.charges.input),
            format_bytes(self.charges.workspace)
        );
        let copies: usize = self.forecast.steps.iter().map(|st| st.copies.len()).sum();
        let _ = writeln!(
            out,
            "Forecast before the run: {} rounds, {copies} copies; the run went as forecast: {}",
            self.forecast.steps.len(),
            if self.went_as_forecast { "yes" } else { "no" }
        );
        out.push_str("\nDecisions:\n");
        let mut t = Table::new([
            "round",
            "items",
            "state_version",
            "reclaim",
            "enter",
            "evictions",
        ]);
        for r in &self.rounds {
            let items: Vec<String> = r.items.iter().map(|(d, i)| format!("{i}@{d}")).collect();
            let ev: Vec<String> = r
                .decision
                .evictions()
                .iter()
                .map(|e| {
                    format!(
                        "{} {} at {} ({})",
                        e.action.kind_name(),
                        e.action.handle().short_id(),
                        e.released_location,
                        format_bytes(e.released_nbytes)
                    )
                })
                .collect();
            t.row([
                r.round.to_string(),
                items.join(" "),
                r.decision.expected_state_version().to_string(),
                r.decision.plan().reclaim().len().to_string(),
                r.decision.plan().enter().len().to_string(),
                if ev.is_empty() {
                    "-".to_owned()
                } else {
                    ev.join("; ")
                },
            ]);
        }
        out.push_str(&t.render());
        out.push_str("\nPer-device accounting:\n");
        let mut t = Table::new([
            "device",
            "budget",
            "used",
            "peak charged",
            "values",
            "in",
            "peer in",
            "out",
            "items",
            "busy ms",
            "items/s",
            "allocator peak",
        ]);
        for a in &self.accounts {
            #[allow(clippy::cast_precision_loss)]
            let rate = a.items as f64 / a.busy.as_secs_f64().max(1e-9);
            t.row([
                a.device.to_string(),
                format_budget(a.budget),
                format_bytes(a.used),
                format_bytes(a.peak_charged),
                a.values.to_string(),
                format!("{} / {}", a.transfers_in.0, format_bytes(a.transfers_in.1)),
                format!("{} / {}", a.peer_in.0, format_bytes(a.peer_in.1)),
                format!(
                    "{} / {}",
                    a.transfers_out.0,
                    format_bytes(a.transfers_out.1)
                ),
                a.items.to_string(),
                format!("{:.1}", a.busy.as_secs_f64() * 1e3),
                format!("{rate:.2}"),
                format_bytes(a.allocator_peak),
            ]);
        }
        out.push_str(&t.render());
        let s = &self.peer_stats;
        let _ = writeln!(
            out,
            "\nDevice-to-device copies (memory layer): direct {} ({}), staged {} ({}), same-device {}",
            s.direct_copies,
            format_bytes(s.direct_bytes),
            s.staged_copies,
            format_bytes(s.staged_bytes),
            s.same_device_copies
        );
        let (compute, overall) = self.throughput();
        let _ = writeln!(
            out,
            "Throughput: {compute:.2} items/s over the compute phases ({:.1} ms), {overall:.2} items/s over the rounds ({:.1} ms); max error {} (bound {})",
            self.compute.as_secs_f64() * 1e3,
            self.wall.as_secs_f64() * 1e3,
            crate::format_sci(self.max_error()),
            crate::format_sci(MAX_ERROR)
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_lists_parse_or_name_the_problem() {
        assert_eq!(
            "sim:0,sim:1".parse::<DeviceList>().ok(),
            Some(DeviceList::Locations(vec![
                ResidencyLocation::Sim(0),
                ResidencyLocation::Sim(1)
            ]))
        );
        assert_eq!("all".parse::<DeviceList>().ok(), Some(DeviceList::AllCuda));
        assert_eq!(
            "cuda:1, cuda:0".parse::<DeviceList>().ok(),
            Some(DeviceList::Locations(vec![
                ResidencyLocation::Cuda(1),
                ResidencyLocation::Cuda(0)
            ]))
        );
        for bad in ["sim:0,sim:0", "sim:0,cuda:0", "pinned-host", "gpu0", ""] {
            assert!(
                matches!(
                    bad.parse::<DeviceList>(),
                    Err(ExampleError::InvalidArgument {
                        argument: "--devices",
                        ..
                    })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn too_small_batches_are_refused_before_any_work() {
        let o = MultiOptions {
            batch: 3,
            ..MultiOptions::default()
        };
        assert!(matches!(
            run_multi(&o, &Timeline::disabled()),
            Err(ExampleError::InvalidArgument {
                argument: "--batch",
                ..
            })
        ));
    }

    #[test]
    #[cfg(not(feature = "cuda"))]
    fn cuda_devices_need_the_feature() {
        let o = MultiOptions {
            devices: DeviceList::AllCuda,
            ..MultiOptions::default()
        };
        assert!(matches!(
            run_multi(&o, &Timeline::disabled()),
            Err(ExampleError::DeviceUnavailable { .. })
        ));
    }
}
