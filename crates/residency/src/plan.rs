//! Plans (the command IR) and requests (declarative post-conditions), spec 1.9-1.10.

use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::location::ResidencyLocation;
use crate::model::{MemoryReservation, ResidencyAction, ResidencyHandle};

fn checked_name(name: &str, what: &'static str) -> Result<String, ModelError> {
    if name.trim().is_empty() {
        Err(ModelError::EmptyName { what })
    } else {
        Ok(name.to_owned())
    }
}

/// An ordered residency program: `reclaim` actions run first (to free capacity), then the
/// `reservations` are admitted, then `enter` runs; `exit` runs when the scope closes, before the
/// reservations are released (spec 1.9).
///
/// Build one with [`ResidencyPlan::new`] and the `with_*` methods; the fields are named, never
/// positional. [`Display`](std::fmt::Display) prints the text IR (see [`crate::text`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "PlanRepr")]
pub struct ResidencyPlan {
    name: String,
    reclaim: Vec<ResidencyAction>,
    enter: Vec<ResidencyAction>,
    exit: Vec<ResidencyAction>,
    reservations: Vec<MemoryReservation>,
}

#[derive(Deserialize)]
struct PlanRepr {
    name: String,
    #[serde(default)]
    reclaim: Vec<ResidencyAction>,
    #[serde(default)]
    enter: Vec<ResidencyAction>,
    #[serde(default)]
    exit: Vec<ResidencyAction>,
    #[serde(default)]
    reservations: Vec<MemoryReservation>,
}

impl TryFrom<PlanRepr> for ResidencyPlan {
    type Error = ModelError;
    fn try_from(r: PlanRepr) -> Result<Self, ModelError> {
        Ok(Self::new(&r.name)?
            .with_reclaim(r.reclaim)
            .with_enter(r.enter)
            .with_exit(r.exit)
            .with_reservations(r.reservations))
    }
}

impl ResidencyPlan {
    /// An empty plan named `name`.
    ///
    /// # Errors
    /// [`ModelError::EmptyName`] when the name is empty or blank.
    pub fn new(name: &str) -> Result<Self, ModelError> {
        Ok(Self {
            name: checked_name(name, "plan")?,
            reclaim: Vec::new(),
            enter: Vec::new(),
            exit: Vec::new(),
            reservations: Vec::new(),
        })
    }

    /// Replaces the reclaim actions.
    #[must_use]
    pub fn with_reclaim(mut self, actions: impl IntoIterator<Item = ResidencyAction>) -> Self {
        self.reclaim = actions.into_iter().collect();
        self
    }
    /// Replaces the enter actions.
    #[must_use]
    pub fn with_enter(mut self, actions: impl IntoIterator<Item = ResidencyAction>) -> Self {
        self.enter = actions.into_iter().collect();
        self
    }
    /// Replaces the exit actions.
    #[must_use]
    pub fn with_exit(mut self, actions: impl IntoIterator<Item = ResidencyAction>) -> Self {
        self.exit = actions.into_iter().collect();
        self
    }
    /// Replaces the reservations.
    #[must_use]
    pub fn with_reservations(
        mut self,
        reservations: impl IntoIterator<Item = MemoryReservation>,
    ) -> Self {
        self.reservations = reservations.into_iter().collect();
        self
    }

    /// The diagnostic name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Actions run first at scope entry.
    #[must_use]
    pub fn reclaim(&self) -> &[ResidencyAction] {
        &self.reclaim
    }
    /// Actions run at scope entry after the reservations are admitted.
    #[must_use]
    pub fn enter(&self) -> &[ResidencyAction] {
        &self.enter
    }
    /// Actions run when the scope closes.
    #[must_use]
    pub fn exit(&self) -> &[ResidencyAction] {
        &self.exit
    }
    /// Reservations held for the scope's lifetime.
    #[must_use]
    pub fn reservations(&self) -> &[MemoryReservation] {
        &self.reservations
    }
    /// Every action in execution order: reclaim, enter, exit.
    pub fn actions(&self) -> impl Iterator<Item = &ResidencyAction> + '_ {
        self.reclaim.iter().chain(&self.enter).chain(&self.exit)
    }
}

/// One required post-admission endpoint: `handle` materialized at `location` (spec 1.10).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ResidencyRequirement {
    /// The value.
    pub handle: ResidencyHandle,
    /// Where it must be materialized.
    pub location: ResidencyLocation,
}

impl ResidencyRequirement {
    /// The requirement `handle` at `location`.
    #[must_use]
    pub const fn new(handle: ResidencyHandle, location: ResidencyLocation) -> Self {
        Self { handle, location }
    }
}

/// A declarative request: required endpoints plus named headroom (spec 1.10).
///
/// Invariants: a non-blank name, at least one requirement, unique (handle, location) pairs.
/// Whether one handle may appear at several locations depends on its replica mode and is
/// checked by [`crate::decide`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "RequestRepr")]
pub struct ResidencyRequest {
    name: String,
    requirements: Vec<ResidencyRequirement>,
    reservations: Vec<MemoryReservation>,
}

#[derive(Deserialize)]
struct RequestRepr {
    name: String,
    requirements: Vec<ResidencyRequirement>,
    #[serde(default)]
    reservations: Vec<MemoryReservation>,
}

impl TryFrom<RequestRepr> for ResidencyRequest {
    type Error = ModelError;
    fn try_from(r: RequestRepr) -> Result<Self, ModelError> {
        Self::new(&r.name, r.requirements, r.reservations)
    }
}

impl ResidencyRequest {
    /// A validated request.
    ///
    /// # Errors
    /// [`ModelError::EmptyName`], [`ModelError::NoRequirements`],
    /// [`ModelError::DuplicateRequirement`].
    pub fn new(
        name: &str,
        requirements: impl IntoIterator<Item = ResidencyRequirement>,
        reservations: impl IntoIterator<Item = MemoryReservation>,
    ) -> Result<Self, ModelError> {
        let name = checked_name(name, "request")?;
        let requirements: Vec<ResidencyRequirement> = requirements.into_iter().collect();
        if requirements.is_empty() {
            return Err(ModelError::NoRequirements { request: name });
        }
        let mut seen = std::collections::HashSet::with_capacity(requirements.len());
        for r in &requirements {
            if !seen.insert(r) {
                return Err(ModelError::DuplicateRequirement {
                    request: name,
                    handle: r.handle.clone(),
                    location: r.location,
                });
            }
        }
        Ok(Self {
            name,
            requirements,
            reservations: reservations.into_iter().collect(),
        })
    }

    /// The request name (the decision's plan carries it).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The required endpoints, in request order.
    #[must_use]
    pub fn requirements(&self) -> &[ResidencyRequirement] {
        &self.requirements
    }
    /// The named headroom to admit.
    #[must_use]
    pub fn reservations(&self) -> &[MemoryReservation] {
        &self.reservations
    }
    /// True when (handle, location) is one of the requirements.
    #[must_use]
    pub fn requires(&self, handle: &ResidencyHandle, location: ResidencyLocation) -> bool {
        self.requirements
            .iter()
            .any(|r| r.location == location && &r.handle == handle)
    }
}
