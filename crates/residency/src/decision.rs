//! Decisions: a planner's output, bound to a snapshot's `state_version` (spec 1.14, 3.12).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::location::ResidencyLocation;
use crate::model::ResidencyAction;
use crate::plan::{ResidencyPlan, ResidencyRequest};
use crate::policy::PolicyConfig;
use crate::report::ResidencyPlanExplanation;

/// Why a reclaim step was legal (spec 1.14). `Display` gives FHElium's exact text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum EvictionReason {
    /// "another materialization preserves the logical value"
    AnotherMaterialization,
    /// "registered source can reconstruct the logical value"
    SourceReconstructs,
    /// "sole materialization moved to requested destination D instead of reconstructing it
    /// later" (FHElium uses this wording for policy-fallback moves as well).
    SoleMaterializationMoved {
        /// The destination.
        destination: ResidencyLocation,
    },
}

impl fmt::Display for EvictionReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AnotherMaterialization => {
                f.write_str("another materialization preserves the logical value")
            }
            Self::SourceReconstructs => {
                f.write_str("registered source can reconstruct the logical value")
            }
            Self::SoleMaterializationMoved { destination } => write!(
                f,
                "sole materialization moved to requested destination {destination} instead of reconstructing it later"
            ),
        }
    }
}

/// One selected reclaim step (spec 1.14).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResidencyEviction {
    /// A `DropResident` or a `MoveResident` with an explicit source.
    pub action: ResidencyAction,
    /// The candidate's index in the ordered candidate list of the capacity resolution that
    /// chose it (not a global counter).
    pub rank: u32,
    /// The candidate's location.
    pub released_location: ResidencyLocation,
    /// The candidate's charge.
    pub released_nbytes: u64,
    /// Why the step is legal.
    pub reason: EvictionReason,
}

/// The fields of a [`ResidencyDecision`], validated by [`ResidencyDecision::new`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResidencyDecisionParts {
    /// The manager the snapshot came from.
    pub manager_id: u64,
    /// The snapshot's `state_version`: the decision is valid only at this version.
    pub expected_state_version: u64,
    /// Search nodes expanded (> 0); search work, not an eviction count.
    pub explored_states: u64,
    /// The request decided on.
    pub request: ResidencyRequest,
    /// The plan (name = request name, no exit actions).
    pub plan: ResidencyPlan,
    /// The policy's name.
    pub policy_name: String,
    /// The policy's configuration identity.
    pub policy_config: PolicyConfig,
    /// One eviction per reclaim action, in order.
    pub evictions: Vec<ResidencyEviction>,
    /// The plan's dry run (feasible).
    pub explanation: ResidencyPlanExplanation,
}

/// A planner's output: a concrete plan plus its evidence (spec 1.14, 3.12).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ResidencyDecisionParts", into = "ResidencyDecisionParts")]
pub struct ResidencyDecision {
    parts: ResidencyDecisionParts,
}

impl TryFrom<ResidencyDecisionParts> for ResidencyDecision {
    type Error = ModelError;
    fn try_from(p: ResidencyDecisionParts) -> Result<Self, ModelError> {
        Self::new(p)
    }
}

impl From<ResidencyDecision> for ResidencyDecisionParts {
    fn from(d: ResidencyDecision) -> Self {
        d.parts
    }
}

impl ResidencyDecision {
    /// A validated decision.
    ///
    /// # Errors
    /// [`ModelError::InvalidDecision`] unless: `explored_states > 0`; the plan's name equals the
    /// request's; the plan has no exit actions; every reclaim action is a `DropResident` or a
    /// `MoveResident` with an explicit source, with exactly one eviction per reclaim action
    /// (same action, in order), each eviction's reason and released location matching its
    /// action; the plan's reservations are the request's; the policy name and
    /// config keys are non-empty; the explanation names the plan and is feasible.
    pub fn new(parts: ResidencyDecisionParts) -> Result<Self, ModelError> {
        let invalid = |d: &str| ModelError::InvalidDecision {
            detail: d.to_owned(),
        };
        if parts.explored_states == 0 {
            return Err(invalid("explored_states must be greater than 0"));
        }
        if parts.plan.name() != parts.request.name() {
            return Err(invalid("the plan's name must equal the request's name"));
        }
        if !parts.plan.exit().is_empty() {
            return Err(invalid("a decision's plan has no exit actions"));
        }
        if parts.plan.reservations() != parts.request.reservations() {
            return Err(invalid("the plan's reservations must be the request's"));
        }
        for a in parts.plan.reclaim() {
            let ok = matches!(
                a,
                ResidencyAction::DropResident { .. }
                    | ResidencyAction::MoveResident { from: Some(_), .. }
            );
            if !ok {
                return Err(invalid(
                    "reclaim actions are DropResident or MoveResident with an explicit source",
                ));
            }
        }
        if parts.evictions.len() != parts.plan.reclaim().len()
            || parts
                .evictions
                .iter()
                .zip(parts.plan.reclaim())
                .any(|(e, a)| &e.action != a)
        {
            return Err(invalid(
                "evictions must list the plan's reclaim actions one to one, in order",
            ));
        }
        for e in &parts.evictions {
            let consistent = match (&e.action, e.reason) {
                (
                    ResidencyAction::DropResident { location, .. },
                    EvictionReason::AnotherMaterialization | EvictionReason::SourceReconstructs,
                ) => *location == e.released_location,
                (
                    ResidencyAction::MoveResident {
                        to,
                        from: Some(from),
                        ..
                    },
                    EvictionReason::SoleMaterializationMoved { destination },
                ) => *to == destination && *from == e.released_location,
                _ => false,
            };
            if !consistent {
                return Err(invalid(
                    "an eviction's reason and released location must match its action",
                ));
            }
        }
        if parts.policy_name.trim().is_empty() {
            return Err(ModelError::EmptyName { what: "policy" });
        }
        if parts.policy_config.iter().any(|(k, _)| k.trim().is_empty()) {
            return Err(ModelError::EmptyPolicyConfigKey);
        }
        if parts.explanation.plan_name != parts.plan.name() {
            return Err(invalid("the explanation must name the decision's plan"));
        }
        if !parts.explanation.feasible {
            return Err(invalid("a decision cannot describe an infeasible plan"));
        }
        Ok(Self { parts })
    }

    /// The manager the snapshot came from.
    #[must_use]
    pub const fn manager_id(&self) -> u64 {
        self.parts.manager_id
    }
    /// The version precondition for admitting the plan.
    #[must_use]
    pub const fn expected_state_version(&self) -> u64 {
        self.parts.expected_state_version
    }
    /// Search nodes expanded.
    #[must_use]
    pub const fn explored_states(&self) -> u64 {
        self.parts.explored_states
    }
    /// The request.
    #[must_use]
    pub const fn request(&self) -> &ResidencyRequest {
        &self.parts.request
    }
    /// The plan.
    #[must_use]
    pub const fn plan(&self) -> &ResidencyPlan {
        &self.parts.plan
    }
    /// The policy's name.
    #[must_use]
    pub fn policy_name(&self) -> &str {
        &self.parts.policy_name
    }
    /// The policy's configuration identity.
    #[must_use]
    pub fn policy_config(&self) -> &PolicyConfig {
        &self.parts.policy_config
    }
    /// The evictions, one per reclaim action.
    #[must_use]
    pub fn evictions(&self) -> &[ResidencyEviction] {
        &self.parts.evictions
    }
    /// The plan's dry run.
    #[must_use]
    pub const fn explanation(&self) -> &ResidencyPlanExplanation {
        &self.parts.explanation
    }
    /// The validated fields.
    #[must_use]
    pub const fn parts(&self) -> &ResidencyDecisionParts {
        &self.parts
    }
}
