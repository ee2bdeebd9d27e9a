//! The planner: `decide(snapshot, request, policy, recency)` (spec 3).

use crate::decision::ResidencyDecision;
use crate::error::ModelError;
use crate::plan::ResidencyRequest;
use crate::policy::{ResidencyPolicy, ResidencyRecency};
use crate::snapshot::ResidencySnapshot;

/// FHElium's default `search_state_limit`.
pub const DEFAULT_SEARCH_STATE_LIMIT: u64 = 100_000;

/// Decides a plan for `request` on `snapshot` with the default search limit.
///
/// # Errors
/// See [`decide_with_limit`].
pub fn decide<P: ResidencyPolicy + ?Sized>(
    snapshot: &ResidencySnapshot,
    request: &ResidencyRequest,
    policy: &P,
    recency: Option<&ResidencyRecency>,
) -> Result<ResidencyDecision, ModelError> {
    decide_with_limit(
        snapshot,
        request,
        policy,
        recency,
        DEFAULT_SEARCH_STATE_LIMIT,
    )
}

/// Decides a plan for `request` on `snapshot`, expanding at most `search_state_limit` states.
///
/// # Errors
/// Request validation errors, [`ModelError::Infeasible`], [`ModelError::SearchLimit`].
pub fn decide_with_limit<P: ResidencyPolicy + ?Sized>(
    snapshot: &ResidencySnapshot,
    request: &ResidencyRequest,
    policy: &P,
    recency: Option<&ResidencyRecency>,
    search_state_limit: u64,
) -> Result<ResidencyDecision, ModelError> {
    let _ = (snapshot, policy, recency, search_state_limit);
    Err(ModelError::Infeasible {
        request: request.name().to_owned(),
        detail: "the planner is not implemented yet".to_owned(),
    })
}
