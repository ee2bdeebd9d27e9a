//! Building the model's report types from runtime facts.

use fhelium_residency::{
    ResidencyAction, ResidencyLocation, ResidencyPlanReport, ResidencyTransitionReport,
    ResidencyTransitionReportParts,
};

/// Best-effort allocated-bytes samples of one device around a transition (spec 6.2).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AllocatorSample {
    pub device: ResidencyLocation,
    pub before: Option<u64>,
    pub after: Option<u64>,
}

/// A transition report. The inputs come from the manager, which guarantees the model's
/// invariants (storage >= logical, completed >= started, non-blank reason); should one ever be
/// violated the report is repaired rather than the transition failed.
#[allow(clippy::too_many_arguments)]
pub(crate) fn transition(
    action: &ResidencyAction,
    no_op: bool,
    source: Option<ResidencyLocation>,
    destination: Option<ResidencyLocation>,
    logical_nbytes: u64,
    storage_nbytes: u64,
    started_at_ns: u64,
    completed_at_ns: u64,
    reason: Option<&str>,
    allocator: Option<AllocatorSample>,
) -> ResidencyTransitionReport {
    let parts = ResidencyTransitionReportParts {
        action: action.clone(),
        no_op,
        source,
        destination,
        logical_nbytes,
        storage_nbytes: storage_nbytes.max(logical_nbytes),
        started_at_ns,
        completed_at_ns: completed_at_ns.max(started_at_ns),
        allocator_device: allocator.map(|a| a.device),
        allocator_allocated_bytes_before: allocator.and_then(|a| a.before),
        allocator_allocated_bytes_after: allocator.and_then(|a| a.after),
        allocator_reserved_bytes_before: None,
        allocator_reserved_bytes_after: None,
        reason: reason.filter(|r| !r.trim().is_empty()).map(str::to_owned),
    };
    #[allow(clippy::expect_used)]
    ResidencyTransitionReport::new(parts)
        .expect("transition report parts are valid by construction")
}

/// A plan report (name validated by the plan already).
pub(crate) fn plan(
    name: &str,
    transitions: Vec<ResidencyTransitionReport>,
    started_at_ns: u64,
    completed_at_ns: u64,
) -> ResidencyPlanReport {
    let name = if name.trim().is_empty() {
        "residency-actions"
    } else {
        name
    };
    #[allow(clippy::expect_used)]
    ResidencyPlanReport::new(
        name,
        transitions,
        started_at_ns,
        completed_at_ns.max(started_at_ns),
    )
    .expect("plan report parts are valid by construction")
}
