//! The automatic-residency flow (FHElium example 14, `docs/tutorials/automatic-residency.md`)
//! as a library function, so the binary prints it and the parity test asserts on it.

use std::fmt::Write as _;

use fhelium_ckks::{ModulusBasis, Preset};
use fhelium_cuda::Resident;
use fhelium_residency::{
    DeterministicTieredLRU, MemoryReservation, ReplicaMode, ResidencyDecision, ResidencyHandle,
    ResidencyLocation, ResidencyPlanReport, ResidencyRequest, ResidencyRequirement,
    ResidencySnapshot, PAGEABLE_HOST, PINNED_HOST,
};
use fhelium_runtime::{ResidencyController, ResidencyManager, TransferStreams};

use crate::engine::{DeviceChoice, Engine};
use crate::timeline::Timeline;
use crate::{error_stats, format_budget, format_bytes, ErrorStats, ExampleError, Table};

/// The seed's correctness bound on the decrypted result.
pub const MAX_ERROR: f64 = 1e-5;

/// The request name of the seed.
pub const REQUEST_NAME: &str = "automatic/rotate-scale/tile-0";

/// The workspace reservation label of the seed.
pub const WORKSPACE_LABEL: &str = "rotate/multiply outputs and workspace";

/// Options of one run.
#[derive(Clone, Copy, Debug)]
pub struct AutomaticOptions {
    /// Engine and device.
    pub device: DeviceChoice,
    /// CKKS preset.
    pub preset: Preset,
    /// Engine seed byte.
    pub seed: u8,
}

impl Default for AutomaticOptions {
    fn default() -> Self {
        Self {
            device: DeviceChoice::Cpu,
            preset: crate::engine::DEFAULT_PRESET,
            seed: crate::engine::DEFAULT_SEED,
        }
    }
}

/// The handles of the four managed values.
#[derive(Clone, Debug)]
pub struct AutomaticHandles {
    /// The cold replicable plaintext (cached on the device before the decision).
    pub cold: ResidencyHandle,
    /// The operation-ready weight plaintext.
    pub weight: ResidencyHandle,
    /// The rotation key.
    pub key: ResidencyHandle,
    /// The encrypted source (exclusive, pinned host).
    pub source: ResidencyHandle,
}

/// Managed charges (max(nbytes, storage_nbytes)) and the budgets derived from them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutomaticCharges {
    /// Weight plaintext.
    pub weight: u64,
    /// Cold plaintext.
    pub cold: u64,
    /// Rotation key.
    pub key: u64,
    /// Source ciphertext.
    pub source: u64,
    /// Workspace reservation (3 x source).
    pub workspace: u64,
    /// Device budget: weight + key + source + workspace.
    pub device_budget: u64,
    /// Pinned budget: the source charge.
    pub pinned_budget: u64,
}

/// Everything the flow produced, for printing and for assertions.
#[derive(Debug)]
pub struct AutomaticOutcome {
    /// The managed device location (`sim:0` for `--device cpu`).
    pub device: ResidencyLocation,
    /// Engine description.
    pub engine: &'static str,
    /// Charges and budgets.
    pub charges: AutomaticCharges,
    /// The handles (discarded by the time the flow returns).
    pub handles: AutomaticHandles,
    /// The manager state version right before `decide`.
    pub state_version_before_decide: u64,
    /// The decision.
    pub decision: ResidencyDecision,
    /// The scope's completed plan report.
    pub report: ResidencyPlanReport,
    /// The snapshot after scope exit (the "final cached residency").
    pub final_snapshot: ResidencySnapshot,
    /// Decryption error against the cleartext.
    pub error: ErrorStats,
    /// Whether the manager was closed after discarding every handle.
    pub closed: bool,
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

/// Current locations of `handle` in snapshot order.
#[must_use]
pub fn materialization_locations(
    snapshot: &ResidencySnapshot,
    handle: &ResidencyHandle,
) -> Vec<ResidencyLocation> {
    snapshot
        .value(handle)
        .map(|v| {
            v.materializations()
                .iter()
                .map(fhelium_residency::MaterializationSnapshot::location)
                .collect()
        })
        .unwrap_or_default()
}

/// Runs the seed program step by step: prepares the values, creates the capacity conflict,
/// decides, checks the decision, enters the scope, runs rotate -> NTT -> multiply_plaintext ->
/// INTT -> rescale through a strict lease on the compute stream, verifies the final cached
/// residency, discards every handle and closes the manager. `timeline` records what happened
/// (pass [`Timeline::disabled`] when not wanted).
///
/// Returns the outcome even when the error bound is exceeded; the caller decides (the binary
/// exits non-zero when `error.max_abs > MAX_ERROR`).
///
/// # Errors
/// Any engine, manager or controller error, and [`ExampleError::Check`] when a check of the
/// seed fails (stale decision, cold replica not selected, final residency wrong).
#[allow(clippy::too_many_lines)] // one straight-line program, kept in the seed's order
pub fn run_automatic(
    options: &AutomaticOptions,
    timeline: &Timeline,
) -> Result<AutomaticOutcome, ExampleError> {
    let setup = Engine::open(options.device, options.preset, options.seed)?;
    let (engine, memory, dev) = (&setup.engine, &setup.memory, setup.device);
    let transfer = memory.stream(&dev)?;
    let compute = memory.stream(&dev)?;
    timeline.name_stream(&transfer, "transfer");
    timeline.name_stream(&compute, "compute");

    let n = engine.num_slots();
    #[allow(clippy::cast_precision_loss)] // slot positions are small
    let message: Vec<f64> = (0..n).map(|j| 0.01 * (j as f64 * 0.017).sin()).collect();
    let weight_message = vec![0.5; n];
    let cold_message = vec![0.25; n];

    let prep = timeline.host_span("prepare values");
    let weight = engine.prepare_plaintext_for_multiplication(
        &engine.encode(&weight_message, 0, None)?,
        ModulusBasis::Q,
    )?;
    let cold = engine.prepare_plaintext_for_multiplication(
        &engine.encode(&cold_message, 0, None)?,
        ModulusBasis::Q,
    )?;
    let rotation_key = engine.create_rotation_key(1, engine.secret_key())?;
    let source = engine
        .encrypt_message(&message)?
        .materialize(memory, &PINNED_HOST, None)?
        .wait()?;
    drop(prep);

    let weight_charge = weight.charge_nbytes();
    let cold_charge = cold.charge_nbytes();
    let key_charge = rotation_key.charge_nbytes();
    let source_charge = source.charge_nbytes();
    let workspace = 3 * source_charge;
    let device_budget = weight_charge + key_charge + source_charge + workspace;
    let charges = AutomaticCharges {
        weight: weight_charge,
        cold: cold_charge,
        key: key_charge,
        source: source_charge,
        workspace,
        device_budget,
        pinned_budget: source_charge,
    };

    let manager = ResidencyManager::builder(memory.clone())
        .budget(PINNED_HOST, source_charge)
        .budget(dev, device_budget)
        .build()?;
    timeline.set_budgets(&manager);
    let cold_h = manager.adopt(cold, Some(PAGEABLE_HOST), ReplicaMode::Replicable)?;
    timeline.sample(&manager, "adopt cold");
    let weight_h = manager.adopt(weight, Some(PAGEABLE_HOST), ReplicaMode::Replicable)?;
    timeline.sample(&manager, "adopt weight");
    let key_h = manager.adopt(rotation_key, Some(PAGEABLE_HOST), ReplicaMode::Replicable)?;
    timeline.sample(&manager, "adopt key");
    let source_h = manager.adopt(source, Some(PINNED_HOST), ReplicaMode::Exclusive)?;
    timeline.sample(&manager, "adopt source");
    let handles = AutomaticHandles {
        cold: cold_h.raw().clone(),
        weight: weight_h.raw().clone(),
        key: key_h.raw().clone(),
        source: source_h.raw().clone(),
    };

    // The capacity conflict: the cold value keeps its pageable replica while an unused device
    // replica occupies managed capacity.
    let t = timeline.now();
    let r = manager.ensure(&cold_h, dev, Some(&transfer))?;
    timeline.transitions(t, std::slice::from_ref(&r));
    timeline.sample(&manager, "ensure cold on device");

    let policy =
        DeterministicTieredLRU::with_fallback_tiers([(dev, vec![PINNED_HOST, PAGEABLE_HOST])])?;
    let controller = ResidencyController::with_policy(&manager, policy);
    let requirements = vec![
        ResidencyRequirement::new(handles.source.clone(), dev),
        ResidencyRequirement::new(handles.key.clone(), dev),
        ResidencyRequirement::new(handles.weight.clone(), dev),
    ];
    let request = ResidencyRequest::new(
        REQUEST_NAME,
        requirements.clone(),
        [MemoryReservation::new(dev, workspace, WORKSPACE_LABEL)?],
    )?;

    let version = manager.state_version()?;
    let span = timeline.host_span("decide");
    let decision = controller.decide(&request)?;
    drop(span);
    check(
        "decision state version",
        decision.expected_state_version() == manager.state_version()?,
        "the manager's current version",
        || {
            format!(
                "{} (manager {})",
                decision.expected_state_version(),
                version
            )
        },
    )?;
    check(
        "cold device replica selected for reclaim",
        decision
            .evictions()
            .iter()
            .any(|e| *e.action.handle() == handles.cold && e.released_location == dev),
        "a reclaim of the cold replica at the device",
        || format!("{:?}", decision.evictions()),
    )?;

    let mut streams = TransferStreams::new();
    streams.insert(dev, transfer.clone());
    let scope_start = timeline.now();
    let scope = controller.scope(&decision, &streams)?;
    timeline.scope_entry(
        scope_start,
        &manager,
        scope.entry_transitions(),
        decision.plan(),
        "scope entry",
    );

    let (output, lease_span) = {
        let lease_start = timeline.now();
        let lease = manager.acquire(&[&source_h, &key_h, &weight_h], dev, Some(&compute))?;
        timeline.sample(&manager, "acquire lease");
        let output = seed_stage(
            engine,
            timeline,
            &compute,
            lease.get(&source_h)?,
            lease.get(&key_h)?,
            lease.get(&weight_h)?,
        )?;
        lease.release()?;
        (output, lease_start)
    };
    timeline.lease(&compute, lease_span, "lease source+key+weight");
    timeline.sample(&manager, "release lease");
    compute.synchronize()?;
    let t = timeline.now();
    let report = scope.close()?;
    timeline.reservation(dev, WORKSPACE_LABEL, workspace, scope_start, timeline.now());
    timeline.transitions(
        t,
        report
            .transitions()
            .get(decision.plan().reclaim().len() + decision.plan().enter().len()..)
            .unwrap_or(&[]),
    );
    timeline.sample(&manager, "scope exit");

    let span = timeline.host_span("decrypt");
    let actual = engine.decrypt_message(&output)?;
    drop(span);
    let expected: Vec<f64> = (0..n).map(|j| 0.5 * message[(j + n - 1) % n]).collect();
    let error = error_stats(&actual, &expected);

    manager.poll()?;
    timeline.sample(&manager, "poll");
    let final_snapshot = manager.snapshot()?;
    let cold_locs = materialization_locations(&final_snapshot, &handles.cold);
    check(
        "cold value keeps only its host-side cache",
        !cold_locs.contains(&dev) && cold_locs.contains(&PAGEABLE_HOST),
        "pageable-host only",
        || format!("{cold_locs:?}"),
    )?;
    for r in &requirements {
        let locs = materialization_locations(&final_snapshot, &r.handle);
        check(
            "requested endpoint retained after scope exit",
            locs.contains(&r.location),
            &r.location.to_string(),
            || format!("{} at {locs:?}", r.handle.short_id()),
        )?;
    }

    for h in [
        &handles.source,
        &handles.key,
        &handles.weight,
        &handles.cold,
    ] {
        manager.discard(h)?;
        timeline.sample(&manager, "discard");
    }
    manager.close(true, false)?;
    let closed = matches!(
        manager.state_version(),
        Err(fhelium_runtime::RuntimeError::Closed { .. })
    );

    Ok(AutomaticOutcome {
        device: dev,
        engine: engine.describe(),
        charges,
        handles,
        state_version_before_decide: version,
        decision,
        report,
        final_snapshot,
        error,
        closed,
    })
}

impl AutomaticOutcome {
    /// The decision line, the reclaim table, the predicted peaks, the final cached residency
    /// and the summary line, in FHElium's example-14 layout.
    #[must_use]
    pub fn render(&self) -> String {
        let d = &self.decision;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Decision: policy={}; state_version={}; search_states={}; reclaim={}; enter={}",
            d.policy_name(),
            d.expected_state_version(),
            d.explored_states(),
            d.plan().reclaim().len(),
            d.plan().enter().len()
        );
        let mut t = Table::new(["rank", "action", "handle", "released", "bytes", "reason"]);
        for e in d.evictions() {
            t.row([
                e.rank.to_string(),
                e.action.kind_name().to_owned(),
                e.action.handle().short_id(),
                e.released_location.to_string(),
                format_bytes(e.released_nbytes),
                e.reason.to_string(),
            ]);
        }
        out.push_str(&t.render());
        out.push_str("\nPredicted managed peaks:\n");
        let mut t = Table::new(["location", "peak charged"]);
        for (loc, bytes) in &d.explanation().predicted_peak_bytes {
            t.row([loc.to_string(), format_bytes(*bytes)]);
        }
        out.push_str(&t.render());
        out.push_str("\nFinal cached residency:\n");
        let mut t = Table::new([
            "location",
            "budget",
            "used",
            "reserved",
            "peak charged",
            "values",
            "pending",
        ]);
        for l in self.final_snapshot.locations() {
            t.row([
                l.location().to_string(),
                format_budget(l.budget_bytes()),
                format_bytes(l.used_bytes()),
                format_bytes(l.reserved_bytes()),
                format_bytes(l.parts().peak_charged_bytes),
                l.parts().value_count.to_string(),
                l.parts().pending_event_count.to_string(),
            ]);
        }
        out.push_str(&t.render());
        let _ = writeln!(
            out,
            "\nManaged CUDA budget: {}; cold charge: {}; workspace reservation: {}; transitions: {}; max error: {}",
            format_bytes(self.charges.device_budget),
            format_bytes(self.charges.cold),
            format_bytes(self.charges.workspace),
            self.report.transitions().len(),
            crate::format_sci(self.error.max_abs)
        );
        out
    }
}

/// The seed's compute stage on leased values, one timeline span per operation:
/// rotate by the key's step -> NTT -> multiply by the prepared plaintext -> INTT -> rescale.
///
/// The lease has already made `compute` wait on each replica's transfer event; this first
/// orders the engine after `compute` ([`Engine::wait_for`]) and last `compute` after the
/// engine ([`Engine::signal`]), so releasing the lease covers the engine's reads (both are
/// GPU-side waits on CUDA and no-ops on the CPU engine).
pub(crate) fn seed_stage(
    engine: &Engine,
    timeline: &Timeline,
    compute: &fhelium_cuda::Stream,
    source: &fhelium_ckks::Ciphertext,
    key: &fhelium_ckks::RotationKey,
    weight: &fhelium_ckks::Plaintext,
) -> Result<fhelium_ckks::Ciphertext, ExampleError> {
    engine.wait_for(compute)?;
    let rotated = timeline.op(compute, "rotate_with_key", || {
        engine.rotate_with_key(source, key)
    })?;
    let ntt = timeline.op(compute, "coefficient_to_ntt", || {
        engine.coefficient_domain_to_ntt_domain(&rotated)
    })?;
    let prod = timeline.op(compute, "multiply_plaintext", || {
        engine.multiply_plaintext(&ntt, weight)
    })?;
    let coeff = timeline.op(compute, "ntt_to_coefficient", || {
        engine.ntt_domain_to_coefficient_domain(&prod)
    })?;
    let output = timeline.op(compute, "rescale_to_next_level", || {
        engine.rescale_to_next_level(&coeff)
    })?;
    engine.signal(compute)?;
    Ok(output)
}
