//! The explicit-residency flow (FHElium example 13, `docs/tutorials/explicit-plans-and-leases.md`):
//! the application itself decides every transition. It adopts a replicable weight, a
//! replicable rotation key and an exclusive ciphertext on the device, moves things with the
//! manager's primitives, dry-runs a named stage plan (enter, exit, a workspace reservation),
//! runs the stage inside the plan's scope through a strict lease on a compute stream, and
//! reports the accounting after the lease is released and after the stage exits.

use std::fmt::Write as _;

use fhelium_cuda::Resident;
use fhelium_residency::{
    MemoryReservation, ReplicaMode, ResidencyAction, ResidencyHandle, ResidencyLocation,
    ResidencyPlan, ResidencyPlanExplanation, ResidencyPlanReport, ResidencySnapshot, PAGEABLE_HOST,
    PINNED_HOST,
};
use fhelium_runtime::{ResidencyManager, TransferStreams};

use crate::automatic::{seed_stage, AutomaticOptions, WORKSPACE_LABEL};
use crate::engine::Engine;
use crate::timeline::Timeline;
use crate::{error_stats, format_budget, format_bytes, ErrorStats, ExampleError, Table};

/// The plan name of the seed.
pub const PLAN_NAME: &str = "inference/rotate-scale/tile-0";

/// Everything the explicit flow produced.
#[derive(Debug)]
pub struct ExplicitOutcome {
    /// The managed device location.
    pub device: ResidencyLocation,
    /// The source ciphertext's logical payload.
    pub source_nbytes: u64,
    /// The source ciphertext's unique storage.
    pub source_storage_nbytes: u64,
    /// The source charge.
    pub source_charge: u64,
    /// The plan's dry run (before the scope).
    pub explanation: ResidencyPlanExplanation,
    /// The snapshot right after the lease was released (inside the scope).
    pub released_snapshot: ResidencySnapshot,
    /// The snapshot after the scope exited.
    pub final_snapshot: ResidencySnapshot,
    /// The scope's report (enter and exit transitions).
    pub report: ResidencyPlanReport,
    /// Decryption error.
    pub error: ErrorStats,
    /// The handles (weight, key, source), discarded by the time the flow returns.
    pub handles: [ResidencyHandle; 3],
    /// Whether the manager was closed.
    pub closed: bool,
}

/// Runs example 13's program (see the module docs). The engine and device come from
/// `options` as for [`crate::run_automatic`].
///
/// # Errors
/// Any engine or manager error; [`ExampleError::Check`] when the dry run says the plan is
/// infeasible.
#[allow(clippy::too_many_lines)] // one straight-line program in the seed's order
pub fn run_explicit(
    options: &AutomaticOptions,
    timeline: &Timeline,
) -> Result<ExplicitOutcome, ExampleError> {
    let setup = Engine::open(options.device, options.preset, options.seed)?;
    let (engine, memory, dev) = (&setup.engine, &setup.memory, setup.device);
    let n = engine.num_slots();
    #[allow(clippy::cast_precision_loss)] // slot positions are small
    let message: Vec<f64> = (0..n).map(|j| 0.01 * (j as f64 * 0.017).sin()).collect();

    let prep = timeline.host_span("prepare values");
    let weight = engine.prepare_plaintext_for_multiplication(
        &engine.encode(&vec![0.5; n], 0, None)?,
        fhelium_ckks::ModulusBasis::Q,
    )?;
    let rotation_key = engine.create_rotation_key(1, engine.secret_key())?;
    let source = engine
        .encrypt_message(&message)?
        .materialize(memory, &dev, None)?
        .wait()?;
    drop(prep);

    let weight_bytes = weight.charge_nbytes();
    let key_bytes = rotation_key.charge_nbytes();
    let source_nbytes = source.nbytes();
    let source_storage_nbytes = source.storage_nbytes();
    let source_charge = source_nbytes.max(source_storage_nbytes);
    let workspace = 3 * source_charge;

    let manager = ResidencyManager::builder(memory.clone())
        .budget(PINNED_HOST, weight_bytes + source_charge)
        .budget(dev, weight_bytes + key_bytes + source_charge + workspace)
        .build()?;
    timeline.set_budgets(&manager);
    let weight_h = manager.adopt(weight, Some(PAGEABLE_HOST), ReplicaMode::Replicable)?;
    let key_h = manager.adopt(rotation_key, Some(PAGEABLE_HOST), ReplicaMode::Replicable)?;
    let source_h = manager.adopt(source, Some(dev), ReplicaMode::Exclusive)?;
    timeline.sample(&manager, "adopt");

    // Direct primitives: the application's own decisions.
    let t = timeline.now();
    let a = manager.ensure(&weight_h, PINNED_HOST, None)?;
    let b = manager.move_to(&source_h, PINNED_HOST, Some(dev), None)?;
    timeline.transitions(t, &[a, b]);
    timeline.sample(&manager, "primitives");

    let plan = ResidencyPlan::new(PLAN_NAME)?
        .with_enter([
            ResidencyAction::EnsureResident {
                handle: weight_h.raw().clone(),
                location: dev,
            },
            ResidencyAction::EnsureResident {
                handle: key_h.raw().clone(),
                location: dev,
            },
            ResidencyAction::MoveResident {
                handle: source_h.raw().clone(),
                to: dev,
                from: Some(PINNED_HOST),
            },
        ])
        .with_exit([
            ResidencyAction::MoveResident {
                handle: source_h.raw().clone(),
                to: PINNED_HOST,
                from: Some(dev),
            },
            ResidencyAction::DropResident {
                handle: key_h.raw().clone(),
                location: dev,
            },
            ResidencyAction::DropResident {
                handle: weight_h.raw().clone(),
                location: dev,
            },
        ])
        .with_reservations([MemoryReservation::new(dev, workspace, WORKSPACE_LABEL)?]);
    let explanation = manager.explain(&plan, None)?;
    if !explanation.feasible {
        return Err(ExampleError::Check {
            what: "residency plan feasibility",
            expected: "feasible".to_owned(),
            found: explanation.reason.clone().unwrap_or_default(),
        });
    }

    let compute = memory.stream(&dev)?;
    timeline.name_stream(&compute, "compute");
    let scope_start = timeline.now();
    let scope = manager.enter_scope(&plan, &TransferStreams::new(), None)?;
    timeline.scope_entry(
        scope_start,
        &manager,
        scope.entry_transitions(),
        &plan,
        "scope entry",
    );
    let lease_start = timeline.now();
    let lease = manager.acquire(&[&source_h, &key_h, &weight_h], dev, Some(&compute))?;
    let output = seed_stage(
        engine,
        timeline,
        &compute,
        lease.get(&source_h)?,
        lease.get(&key_h)?,
        lease.get(&weight_h)?,
    )?;
    lease.release()?;
    timeline.lease(&compute, lease_start, "lease source+key+weight");
    let released_snapshot = manager.snapshot()?;
    timeline.sample(&manager, "release lease");
    compute.synchronize()?;
    let t = timeline.now();
    let report = scope.close()?;
    let entered = plan.enter().len().min(report.transitions().len());
    timeline.transitions(t, &report.transitions()[entered..]);
    timeline.reservation(dev, WORKSPACE_LABEL, workspace, scope_start, timeline.now());
    timeline.sample(&manager, "scope exit");

    let actual = engine.decrypt_message(&output)?;
    let expected: Vec<f64> = (0..n).map(|j| 0.5 * message[(j + n - 1) % n]).collect();
    let error = error_stats(&actual, &expected);
    let final_snapshot = manager.snapshot()?;

    let handles = [
        weight_h.raw().clone(),
        key_h.raw().clone(),
        source_h.raw().clone(),
    ];
    for h in [&handles[2], &handles[1], &handles[0]] {
        manager.discard(h)?;
        timeline.sample(&manager, "discard");
    }
    manager.close(true, false)?;
    let closed = matches!(
        manager.state_version(),
        Err(fhelium_runtime::RuntimeError::Closed { .. })
    );
    Ok(ExplicitOutcome {
        device: dev,
        source_nbytes,
        source_storage_nbytes,
        source_charge,
        explanation,
        released_snapshot,
        final_snapshot,
        report,
        error,
        handles,
        closed,
    })
}

/// The accounting table of example 13 (FHElium's `torch` columns are the memory layer's
/// allocator figures here: `allocator allocated`, `allocator reserved`; docs/decisions/0600).
#[must_use]
pub fn accounting_table(snapshot: &ResidencySnapshot) -> Table {
    let opt = |b: Option<u64>| b.map_or_else(|| "n/a".to_owned(), format_bytes);
    let mut t = Table::new([
        "location",
        "budget",
        "remaining",
        "used",
        "reserved",
        "peak used",
        "peak charged",
        "uses",
        "pending events",
        "allocator allocated",
        "allocator reserved",
    ]);
    for l in snapshot.locations() {
        let p = l.parts();
        t.row([
            l.location().to_string(),
            format_budget(l.budget_bytes()),
            format_budget(l.remaining_budget_bytes()),
            format_bytes(l.used_bytes()),
            format_bytes(l.reserved_bytes()),
            format_bytes(p.peak_used_bytes),
            format_bytes(p.peak_charged_bytes),
            p.use_count.to_string(),
            p.pending_event_count.to_string(),
            opt(p.allocator_allocated_bytes),
            opt(p.allocator_reserved_bytes),
        ]);
    }
    t
}

impl ExplicitOutcome {
    /// Example 13's output: plan peaks, accounting after the lease was released and after
    /// stage exit, and the summary line.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "Plan: {}", self.explanation.plan_name);
        let mut t = Table::new(["location", "predicted managed peak"]);
        for (loc, b) in &self.explanation.predicted_peak_bytes {
            t.row([loc.to_string(), format_bytes(*b)]);
        }
        out.push_str(&t.render());
        let _ = write!(
            out,
            "\nAccounting after the {} lease was released:\n{}",
            self.device,
            accounting_table(&self.released_snapshot)
        );
        let _ = write!(
            out,
            "\nAccounting after stage exit:\n{}",
            accounting_table(&self.final_snapshot)
        );
        let dev = self
            .final_snapshot
            .location(self.device)
            .map(fhelium_residency::ResidencyLocationSnapshot::parts);
        let opt = |b: Option<u64>| b.map_or_else(|| "n/a".to_owned(), format_bytes);
        let _ = writeln!(
            out,
            "\nSource logical payload: {}; source unique storage: {}; managed source charge: {}; \
             allocator allocated: {}; allocator reserved: {}; plan transitions: {}; max error: {}",
            format_bytes(self.source_nbytes),
            format_bytes(self.source_storage_nbytes),
            format_bytes(self.source_charge),
            opt(dev.and_then(|p| p.allocator_allocated_bytes)),
            opt(dev.and_then(|p| p.allocator_reserved_bytes)),
            self.report.transitions().len(),
            crate::format_sci(self.error.max_abs)
        );
        out
    }
}
