//! The typed error of the pure model.

use thiserror::Error;

use crate::location::ResidencyLocation;
use crate::model::ResidencyHandle;

/// Every way a model value can be rejected at construction or a model operation can fail.
///
/// Variants carry the offending text, handle, location and byte figures so that a message
/// names what went wrong without the caller having to reconstruct it. Message fragments that
/// FHElium's tests match on (spec section 8) are kept verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A location string is not one of `pageable-host`, `pinned-host`, `cuda:N`, `sim:N`.
    #[error("Unsupported residency location kind in {text:?}: expected pageable-host, pinned-host, cuda:N or sim:N")]
    UnsupportedLocation {
        /// The text that was parsed.
        text: String,
    },
    /// A device location without an index (`cuda`, `sim`): the model never resolves a current device.
    #[error("residency location {text:?} requires an indexed device such as cuda:0")]
    UnindexedDevice {
        /// The text that was parsed.
        text: String,
    },
    /// A device index that is not in canonical decimal form (`cuda:00`, `cuda:01`, `cuda:-1`).
    #[error("residency location {text:?} must use the canonical device index form (0 or a number without a leading zero)")]
    NonCanonicalIndex {
        /// The text that was parsed.
        text: String,
    },
    /// A device index outside `0..=127`.
    #[error("residency location {text:?}: device index must be between 0 and 127")]
    IndexOutOfRange {
        /// The text that was parsed.
        text: String,
    },
    /// A value type tag that is empty or only whitespace.
    #[error("value type name must be non-empty")]
    EmptyValueType,
    /// A reservation label that is empty or only whitespace.
    #[error("reservation label must be non-empty")]
    EmptyLabel,
    /// A value spec whose storage charge is below its logical payload.
    #[error("storage_nbytes ({storage_nbytes} bytes) must be at least logical_nbytes ({logical_nbytes} bytes)")]
    StorageBelowLogical {
        /// Logical payload bytes.
        logical_nbytes: u64,
        /// Storage bytes given.
        storage_nbytes: u64,
    },
    /// A plan, request or report name that is empty or only whitespace.
    #[error("{what} name must be non-empty")]
    EmptyName {
        /// Which kind of object (`plan`, `request`, `policy`, ...).
        what: &'static str,
    },
    /// A request without requirements.
    #[error("ResidencyRequest {request:?} requires at least one ResidencyRequirement")]
    NoRequirements {
        /// The request name.
        request: String,
    },
    /// A request naming the same (handle, location) twice.
    #[error("ResidencyRequest {request:?} requirements must be unique (handle, location) pairs: {handle} at {location} repeats")]
    DuplicateRequirement {
        /// The request name.
        request: String,
        /// The repeated handle.
        handle: ResidencyHandle,
        /// The repeated location.
        location: ResidencyLocation,
    },
    /// A materialization snapshot charged below its logical or storage bytes.
    #[error("materialization at {location}: charged_nbytes ({charged_nbytes}) must be at least max(logical_nbytes {logical_nbytes}, storage_nbytes {storage_nbytes})")]
    ChargeBelowFootprint {
        /// Where the materialization lives.
        location: ResidencyLocation,
        /// Logical bytes.
        logical_nbytes: u64,
        /// Actual storage bytes.
        storage_nbytes: u64,
        /// The charge given.
        charged_nbytes: u64,
    },
    /// A materialization snapshot whose bytes disagree with its value's spec.
    #[error("value {handle}: materialization at {location} reports logical={logical_nbytes} charged={charged_nbytes}, but the spec says logical={spec_logical_nbytes} charge={spec_charge}")]
    MaterializationSpecMismatch {
        /// The value.
        handle: ResidencyHandle,
        /// The materialization's location.
        location: ResidencyLocation,
        /// Logical bytes of the materialization.
        logical_nbytes: u64,
        /// Charge of the materialization.
        charged_nbytes: u64,
        /// Spec logical bytes.
        spec_logical_nbytes: u64,
        /// Spec charge.
        spec_charge: u64,
    },
    /// A handle whose type tag differs from its spec's.
    #[error("value {handle}: handle type {handle_type:?} differs from spec type {spec_type:?}")]
    ValueTypeMismatch {
        /// The value.
        handle: ResidencyHandle,
        /// The handle's type tag.
        handle_type: String,
        /// The spec's type tag.
        spec_type: String,
    },
    /// Two materializations of one value at the same location.
    #[error("value {handle} lists two materializations at {location}")]
    DuplicateMaterialization {
        /// The value.
        handle: ResidencyHandle,
        /// The repeated location.
        location: ResidencyLocation,
    },
    /// A value snapshot that breaks a manager invariant (discarded with state, EXCLUSIVE with
    /// several replicas, MUST_PRESERVE with a source or without a copy, RECONSTRUCTIBLE without
    /// a source).
    #[error("value {handle}: {detail}")]
    InvalidValueSnapshot {
        /// The value.
        handle: ResidencyHandle,
        /// Which invariant is broken.
        detail: String,
    },
    /// A location snapshot whose accounting is inconsistent.
    #[error("location {location}: {detail}")]
    InvalidLocationSnapshot {
        /// The location.
        location: ResidencyLocation,
        /// Which invariant is broken.
        detail: String,
    },
    /// A whole snapshot that is inconsistent (duplicates, unregistered locations, sums).
    #[error("invalid residency snapshot: {detail}")]
    InvalidSnapshot {
        /// Which invariant is broken.
        detail: String,
    },
    /// A policy stable key that is empty or blank.
    #[error("policy metadata stable_key must be non-empty")]
    EmptyStableKey,
    /// A fallback-tier list that contains its own source location.
    #[error("fallback tiers cannot contain their source location: {location} lists itself")]
    TierContainsSource {
        /// The source location.
        location: ResidencyLocation,
    },
    /// A fallback-tier list naming one destination twice.
    #[error("fallback tiers for {location} contain duplicate locations: {destination} repeats")]
    DuplicateTierDestination {
        /// The source location.
        location: ResidencyLocation,
        /// The repeated destination.
        destination: ResidencyLocation,
    },
    /// A transfer cost model or cost-aware policy with an invalid parameter.
    #[error("invalid transfer cost model: {detail}")]
    InvalidCostModel {
        /// What is wrong.
        detail: String,
    },
    /// A fallback-tier mapping that names one source location twice.
    #[error("fallback tiers name source location {location} twice")]
    DuplicateTierSource {
        /// The repeated source.
        location: ResidencyLocation,
    },
    /// A policy whose `order_candidates` is not a permutation of its input.
    #[error("ResidencyPolicy {policy:?} must return every candidate exactly once ({given} candidates, {returned} indices returned)")]
    PolicyNotPermutation {
        /// The policy name.
        policy: String,
        /// Number of candidates given.
        given: usize,
        /// Number of indices returned.
        returned: usize,
    },
    /// A policy configuration entry with an empty key.
    #[error("policy configuration keys must be non-empty")]
    EmptyPolicyConfigKey,
    /// A search state limit of zero.
    #[error("search_state_limit must be greater than 0")]
    ZeroSearchLimit,
    /// A request handle issued by another manager.
    #[error("ResidencyRequest {request:?} contains a handle from another manager: {handle} (snapshot manager {manager_id})")]
    ForeignHandle {
        /// The request name.
        request: String,
        /// The handle.
        handle: ResidencyHandle,
        /// The snapshot's manager.
        manager_id: u64,
    },
    /// A request handle the snapshot does not know.
    #[error("ResidencyRequest {request:?} contains an unknown handle: {handle}")]
    UnknownHandle {
        /// The request name.
        request: String,
        /// The handle.
        handle: ResidencyHandle,
    },
    /// A request handle that has been discarded.
    #[error("ResidencyRequest {request:?} contains a discarded handle: {handle}")]
    DiscardedHandle {
        /// The request name.
        request: String,
        /// The handle.
        handle: ResidencyHandle,
    },
    /// An EXCLUSIVE value required at several locations.
    #[error("An EXCLUSIVE residency value cannot satisfy simultaneous requirements at multiple locations: {handle} at {locations:?}")]
    ExclusiveAtMultipleLocations {
        /// The value.
        handle: ResidencyHandle,
        /// The required locations, in request order.
        locations: Vec<ResidencyLocation>,
    },
    /// A requirement whose value has neither a materialization nor a source (unreachable under
    /// the manager's invariants; kept as its own kind, as FHElium raises it unwrapped).
    #[error("Value {handle} has no materialization or reconstruction source")]
    Unavailable {
        /// The value.
        handle: ResidencyHandle,
    },
    /// The planner proved that no invariant-valid reclaim sequence satisfies the request, or the
    /// final dry run of the chosen plan is infeasible.
    #[error("Automatic residency request {request:?} is infeasible: {detail}")]
    Infeasible {
        /// The request name.
        request: String,
        /// Why: the capacity failure and every candidate's outcome, or the dry-run reason.
        detail: String,
    },
    /// The search hit its state limit before proving either outcome.
    #[error("Automatic residency search for {request:?} is inconclusive because it reached its deterministic state limit: state_limit={state_limit}, explored_states={explored_states}. {detail}")]
    SearchLimit {
        /// The request name.
        request: String,
        /// The limit.
        state_limit: u64,
        /// States counted when the search stopped.
        explored_states: u64,
        /// Which objective was being explored.
        detail: String,
    },
    /// A decision whose fields contradict each other.
    #[error("invalid residency decision: {detail}")]
    InvalidDecision {
        /// Which invariant is broken.
        detail: String,
    },
    /// A report whose fields contradict each other.
    #[error("invalid residency report: {detail}")]
    InvalidReport {
        /// Which invariant is broken.
        detail: String,
    },
    /// A step of a forecast program could not be decided.
    #[error("forecast step {step} ({request:?}): {source}")]
    ForecastStep {
        /// The step's index in the program.
        step: usize,
        /// Its request's name.
        request: String,
        /// The planner's error.
        source: Box<ModelError>,
    },
    /// A prefetch step of a forecast program reserves memory (a prefetch holds nothing).
    #[error("forecast step {step} ({request:?}) is a prefetch that reserves {bytes} bytes at {location}; a prefetch holds nothing after it returns, so it takes no reservation")]
    PrefetchReservation {
        /// The step's index in the program.
        step: usize,
        /// Its request's name.
        request: String,
        /// The first reservation's location.
        location: ResidencyLocation,
        /// Its bytes.
        bytes: u64,
    },
    /// The text IR could not be parsed.
    #[error("residency IR line {line}: {message}")]
    Parse {
        /// 1-based line number.
        line: usize,
        /// What was expected.
        message: String,
    },
}
