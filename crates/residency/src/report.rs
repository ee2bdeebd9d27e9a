//! Explanations (dry-run verdicts) and reports (completed transitions), spec 1.12.

use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::location::ResidencyLocation;
use crate::model::{MemoryReservation, ResidencyAction};

/// The dry-run verdict for one action (spec 1.12, 2.12.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResidencyActionExplanation {
    /// The action explained.
    pub action: ResidencyAction,
    /// True when the action would run (including as a no-op).
    pub executable: bool,
    /// True when it would change nothing.
    pub no_op: bool,
    /// The resolved source (for drop: the dropped location; none for discard and no-op ensure).
    pub source: Option<ResidencyLocation>,
    /// The destination (ensure, move).
    pub destination: Option<ResidencyLocation>,
    /// Spec logical bytes (0 when the handle could not be resolved).
    pub logical_nbytes: u64,
    /// Spec charge (0 when the handle could not be resolved).
    pub storage_nbytes: u64,
    /// The failure reason or the no-op reason.
    pub reason: Option<String>,
}

/// The dry-run of a whole plan (spec 1.12, 2.12.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResidencyPlanExplanation {
    /// The plan's name.
    pub plan_name: String,
    /// Explanations in simulation order; simulation stops at the first failing action.
    pub actions: Vec<ResidencyActionExplanation>,
    /// The plan's reservations.
    pub reservations: Vec<MemoryReservation>,
    /// Predicted peak managed bytes per location: registered locations in registration order,
    /// then newly referenced ones in order of first reference.
    pub predicted_peak_bytes: Vec<(ResidencyLocation, u64)>,
    /// Whether the whole plan would pass preflight.
    pub feasible: bool,
    /// The first failure reason.
    pub reason: Option<String>,
}

impl ResidencyPlanExplanation {
    /// The predicted peak at `location`, if the simulation saw it.
    #[must_use]
    pub fn predicted_peak(&self, location: ResidencyLocation) -> Option<u64> {
        self.predicted_peak_bytes
            .iter()
            .find(|(l, _)| *l == location)
            .map(|(_, b)| *b)
    }
}

/// The fields of a [`ResidencyTransitionReport`], validated by [`ResidencyTransitionReport::new`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResidencyTransitionReportParts {
    /// The exact requested action.
    pub action: ResidencyAction,
    /// True when nothing changed.
    pub no_op: bool,
    /// The resolved source location (drop: the dropped location; discard/no-op ensure: none).
    pub source: Option<ResidencyLocation>,
    /// The destination for ensure and move.
    pub destination: Option<ResidencyLocation>,
    /// Spec logical bytes.
    pub logical_nbytes: u64,
    /// Spec charge.
    pub storage_nbytes: u64,
    /// Start (Unix ns, supplied by the runtime).
    pub started_at_ns: u64,
    /// Completion (Unix ns), at least `started_at_ns`.
    pub completed_at_ns: u64,
    /// The device whose allocator was sampled.
    #[serde(default)]
    pub allocator_device: Option<ResidencyLocation>,
    /// Allocator allocated bytes before.
    #[serde(default)]
    pub allocator_allocated_bytes_before: Option<u64>,
    /// Allocator allocated bytes after.
    #[serde(default)]
    pub allocator_allocated_bytes_after: Option<u64>,
    /// Allocator reserved bytes before.
    #[serde(default)]
    pub allocator_reserved_bytes_before: Option<u64>,
    /// Allocator reserved bytes after.
    #[serde(default)]
    pub allocator_reserved_bytes_after: Option<u64>,
    /// The no-op reason ("destination already resident", ...).
    #[serde(default)]
    pub reason: Option<String>,
}

/// The result of one completed primitive action (spec 1.12).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(
    try_from = "ResidencyTransitionReportParts",
    into = "ResidencyTransitionReportParts"
)]
pub struct ResidencyTransitionReport {
    parts: ResidencyTransitionReportParts,
}

impl TryFrom<ResidencyTransitionReportParts> for ResidencyTransitionReport {
    type Error = ModelError;
    fn try_from(p: ResidencyTransitionReportParts) -> Result<Self, ModelError> {
        Self::new(p)
    }
}

impl From<ResidencyTransitionReport> for ResidencyTransitionReportParts {
    fn from(r: ResidencyTransitionReport) -> Self {
        r.parts
    }
}

impl ResidencyTransitionReport {
    /// A validated report.
    ///
    /// # Errors
    /// [`ModelError::InvalidReport`] when `storage < logical`, `completed < started`, the
    /// reason is blank, or the allocator device is a host location.
    pub fn new(parts: ResidencyTransitionReportParts) -> Result<Self, ModelError> {
        let invalid = |d: &str| ModelError::InvalidReport {
            detail: d.to_owned(),
        };
        if parts.storage_nbytes < parts.logical_nbytes {
            return Err(invalid("storage_nbytes must be at least logical_nbytes"));
        }
        if parts.completed_at_ns < parts.started_at_ns {
            return Err(invalid("completed_at_ns must not precede started_at_ns"));
        }
        if parts.reason.as_deref().is_some_and(|r| r.trim().is_empty()) {
            return Err(invalid("reason must be non-empty when present"));
        }
        if parts
            .allocator_device
            .is_some_and(ResidencyLocation::is_host)
        {
            return Err(invalid("allocator_device must be a device location"));
        }
        Ok(Self { parts })
    }
    /// The validated fields.
    #[must_use]
    pub const fn parts(&self) -> &ResidencyTransitionReportParts {
        &self.parts
    }
    /// The action.
    #[must_use]
    pub const fn action(&self) -> &ResidencyAction {
        &self.parts.action
    }
    /// True when nothing changed.
    #[must_use]
    pub const fn no_op(&self) -> bool {
        self.parts.no_op
    }
}

/// A completed sequence of transitions (spec 1.12).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "PlanReportRepr", into = "PlanReportRepr")]
pub struct ResidencyPlanReport {
    plan_name: String,
    transitions: Vec<ResidencyTransitionReport>,
    started_at_ns: u64,
    completed_at_ns: u64,
}

#[derive(Clone, Serialize, Deserialize)]
struct PlanReportRepr {
    plan_name: String,
    transitions: Vec<ResidencyTransitionReport>,
    started_at_ns: u64,
    completed_at_ns: u64,
}

impl TryFrom<PlanReportRepr> for ResidencyPlanReport {
    type Error = ModelError;
    fn try_from(r: PlanReportRepr) -> Result<Self, ModelError> {
        Self::new(
            &r.plan_name,
            r.transitions,
            r.started_at_ns,
            r.completed_at_ns,
        )
    }
}

impl From<ResidencyPlanReport> for PlanReportRepr {
    fn from(r: ResidencyPlanReport) -> Self {
        Self {
            plan_name: r.plan_name,
            transitions: r.transitions,
            started_at_ns: r.started_at_ns,
            completed_at_ns: r.completed_at_ns,
        }
    }
}

impl ResidencyPlanReport {
    /// A validated plan report.
    ///
    /// # Errors
    /// [`ModelError::EmptyName`] for a blank name, [`ModelError::InvalidReport`] when
    /// `completed < started`.
    pub fn new(
        plan_name: &str,
        transitions: Vec<ResidencyTransitionReport>,
        started_at_ns: u64,
        completed_at_ns: u64,
    ) -> Result<Self, ModelError> {
        if plan_name.trim().is_empty() {
            return Err(ModelError::EmptyName { what: "plan" });
        }
        if completed_at_ns < started_at_ns {
            return Err(ModelError::InvalidReport {
                detail: "completed_at_ns must not precede started_at_ns".to_owned(),
            });
        }
        Ok(Self {
            plan_name: plan_name.to_owned(),
            transitions,
            started_at_ns,
            completed_at_ns,
        })
    }
    /// The plan's name.
    #[must_use]
    pub fn plan_name(&self) -> &str {
        &self.plan_name
    }
    /// Transitions in execution order.
    #[must_use]
    pub fn transitions(&self) -> &[ResidencyTransitionReport] {
        &self.transitions
    }
    /// Start (Unix ns).
    #[must_use]
    pub const fn started_at_ns(&self) -> u64 {
        self.started_at_ns
    }
    /// Completion (Unix ns).
    #[must_use]
    pub const fn completed_at_ns(&self) -> u64 {
        self.completed_at_ns
    }
}
