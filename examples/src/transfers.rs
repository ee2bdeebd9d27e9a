//! The copies a residency manager made, read from plan reports (shared by the examples that
//! print per-device traffic).

use fhelium_residency::{ResidencyAction, ResidencyHandle, ResidencyLocation, ResidencyPlanReport};

/// A copy the manager made, from a transition report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    /// The value copied.
    pub handle: ResidencyHandle,
    /// Source location.
    pub from: ResidencyLocation,
    /// Destination location.
    pub to: ResidencyLocation,
    /// Charged bytes moved (`max(storage, logical)`).
    pub bytes: u64,
}

/// The copies in a plan report: ensures and moves that were not no-ops, between two
/// different locations.
pub fn copies(report: &ResidencyPlanReport) -> impl Iterator<Item = Transfer> + '_ {
    report.transitions().iter().filter_map(|t| {
        let p = t.parts();
        let copying = matches!(
            t.action(),
            ResidencyAction::EnsureResident { .. } | ResidencyAction::MoveResident { .. }
        );
        match (copying && !t.no_op(), p.source, p.destination) {
            (true, Some(from), Some(to)) if from != to => Some(Transfer {
                handle: t.action().handle().clone(),
                from,
                to,
                bytes: p.storage_nbytes.max(p.logical_nbytes),
            }),
            _ => None,
        }
    })
}
