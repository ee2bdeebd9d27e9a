//! Snapshots: one immutable, value-free observation of a manager (spec 1.11).
//!
//! Every snapshot type validates the manager invariants it states at construction and on
//! deserialization. [`ResidencySnapshot`] also builds an index (handle -> value, location ->
//! values materialized there) so that the planner never scans the whole snapshot per step.

use std::collections::hash_map::Entry;
use std::sync::Arc;

use crate::hash::{FxHashMap, FxHashSet};

use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::location::ResidencyLocation;
use crate::model::{
    MemoryReservation, Recoverability, ReplicaMode, ResidencyHandle, ResidencySource,
    ResidencyValueSpec,
};
use crate::policy::ResidencyPolicyMetadata;

/// One materialization of a value (spec 1.11).
///
/// `storage_nbytes` is the actual backing storage (it may be below the charge after
/// compaction); `charged_nbytes` is the fixed charge. The three counts are its protection: a
/// materialization with any active lease, hold or unreaped pending event is never removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "MaterializationRepr")]
pub struct MaterializationSnapshot {
    location: ResidencyLocation,
    logical_nbytes: u64,
    storage_nbytes: u64,
    charged_nbytes: u64,
    use_count: u32,
    hold_count: u32,
    pending_event_count: u32,
}

#[derive(Deserialize)]
struct MaterializationRepr {
    location: ResidencyLocation,
    logical_nbytes: u64,
    storage_nbytes: u64,
    charged_nbytes: u64,
    #[serde(default)]
    use_count: u32,
    #[serde(default)]
    hold_count: u32,
    #[serde(default)]
    pending_event_count: u32,
}

impl TryFrom<MaterializationRepr> for MaterializationSnapshot {
    type Error = ModelError;
    fn try_from(r: MaterializationRepr) -> Result<Self, ModelError> {
        Ok(Self::new(
            r.location,
            r.logical_nbytes,
            r.storage_nbytes,
            r.charged_nbytes,
        )?
        .with_protection(r.use_count, r.hold_count, r.pending_event_count))
    }
}

impl MaterializationSnapshot {
    /// An unprotected materialization.
    ///
    /// # Errors
    /// [`ModelError::ChargeBelowFootprint`] when `charged < max(logical, storage)`.
    pub fn new(
        location: ResidencyLocation,
        logical_nbytes: u64,
        storage_nbytes: u64,
        charged_nbytes: u64,
    ) -> Result<Self, ModelError> {
        if charged_nbytes < logical_nbytes.max(storage_nbytes) {
            return Err(ModelError::ChargeBelowFootprint {
                location,
                logical_nbytes,
                storage_nbytes,
                charged_nbytes,
            });
        }
        Ok(Self {
            location,
            logical_nbytes,
            storage_nbytes,
            charged_nbytes,
            use_count: 0,
            hold_count: 0,
            pending_event_count: 0,
        })
    }

    /// An unprotected materialization of `spec` at `location` whose storage equals the charge.
    #[must_use]
    pub fn for_spec(location: ResidencyLocation, spec: &ResidencyValueSpec) -> Self {
        Self {
            location,
            logical_nbytes: spec.logical_nbytes(),
            storage_nbytes: spec.charge(),
            charged_nbytes: spec.charge(),
            use_count: 0,
            hold_count: 0,
            pending_event_count: 0,
        }
    }

    /// The same materialization with the given protection counts.
    #[must_use]
    pub const fn with_protection(mut self, use_count: u32, hold_count: u32, pending: u32) -> Self {
        self.use_count = use_count;
        self.hold_count = hold_count;
        self.pending_event_count = pending;
        self
    }

    /// The same materialization moved to `location` (a planner projection: counts are kept).
    #[must_use]
    pub const fn relocated(mut self, location: ResidencyLocation) -> Self {
        self.location = location;
        self
    }

    /// Where it lives.
    #[must_use]
    pub const fn location(&self) -> ResidencyLocation {
        self.location
    }
    /// Logical payload bytes.
    #[must_use]
    pub const fn logical_nbytes(&self) -> u64 {
        self.logical_nbytes
    }
    /// Actual unique backing storage.
    #[must_use]
    pub const fn storage_nbytes(&self) -> u64 {
        self.storage_nbytes
    }
    /// The fixed charge.
    #[must_use]
    pub const fn charged_nbytes(&self) -> u64 {
        self.charged_nbytes
    }
    /// Active leases covering it.
    #[must_use]
    pub const fn use_count(&self) -> u32 {
        self.use_count
    }
    /// Holds covering it.
    #[must_use]
    pub const fn hold_count(&self) -> u32 {
        self.hold_count
    }
    /// Released device leases whose completion events are not yet reaped.
    #[must_use]
    pub const fn pending_event_count(&self) -> u32 {
        self.pending_event_count
    }
    /// True when any lease, hold or pending event protects it.
    #[must_use]
    pub const fn is_protected(&self) -> bool {
        self.use_count > 0 || self.hold_count > 0 || self.pending_event_count > 0
    }
}

/// The fields of a [`ResidencyValueSnapshot`], validated by [`ResidencyValueSnapshot::new`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResidencyValueSnapshotParts {
    /// The value's handle.
    pub handle: ResidencyHandle,
    /// Its spec.
    pub spec: ResidencyValueSpec,
    /// Its materializations in installation order, at most one per location.
    #[serde(default)]
    pub materializations: Vec<MaterializationSnapshot>,
    /// The registered source, if any (`has_source` / `source_location`).
    #[serde(default)]
    pub source: Option<ResidencySource>,
    /// Whether the value has been discarded (it stays listed for diagnostics).
    #[serde(default)]
    pub discarded: bool,
    /// Controller-side policy metadata (priority, stable key).
    #[serde(default)]
    pub policy_metadata: ResidencyPolicyMetadata,
    /// Controller-side last access epoch, `None` when never accessed.
    #[serde(default)]
    pub last_access_epoch: Option<u64>,
}

impl ResidencyValueSnapshotParts {
    /// Parts for a live value with no materialization, no source and default metadata.
    #[must_use]
    pub fn new(handle: ResidencyHandle, spec: ResidencyValueSpec) -> Self {
        Self {
            handle,
            spec,
            materializations: Vec::new(),
            source: None,
            discarded: false,
            policy_metadata: ResidencyPolicyMetadata::default(),
            last_access_epoch: None,
        }
    }
    /// Adds an unprotected materialization at `location` (storage = charge).
    #[must_use]
    pub fn at(mut self, location: ResidencyLocation) -> Self {
        self.materializations
            .push(MaterializationSnapshot::for_spec(location, &self.spec));
        self
    }
    /// Adds a materialization at `location` with protection counts.
    #[must_use]
    pub fn at_protected(
        mut self,
        location: ResidencyLocation,
        use_count: u32,
        hold_count: u32,
        pending: u32,
    ) -> Self {
        self.materializations.push(
            MaterializationSnapshot::for_spec(location, &self.spec)
                .with_protection(use_count, hold_count, pending),
        );
        self
    }
    /// Sets the registered source location.
    #[must_use]
    pub const fn with_source(mut self, location: ResidencyLocation) -> Self {
        self.source = Some(ResidencySource::new(location));
        self
    }
    /// Sets the policy metadata.
    #[must_use]
    pub fn with_metadata(mut self, metadata: ResidencyPolicyMetadata) -> Self {
        self.policy_metadata = metadata;
        self
    }
    /// Sets the last access epoch.
    #[must_use]
    pub const fn with_last_access(mut self, epoch: u64) -> Self {
        self.last_access_epoch = Some(epoch);
        self
    }
    /// Marks the value discarded (and clears its state).
    #[must_use]
    pub fn discarded(mut self) -> Self {
        self.discarded = true;
        self.materializations.clear();
        self.source = None;
        self
    }
    /// Validates into a [`ResidencyValueSnapshot`].
    ///
    /// # Errors
    /// See [`ResidencyValueSnapshot::new`].
    pub fn build(self) -> Result<ResidencyValueSnapshot, ModelError> {
        ResidencyValueSnapshot::new(self)
    }
}

/// One registered or discarded value (spec 1.11), with the controller-side policy facts the
/// planner needs (metadata, last access epoch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    try_from = "ResidencyValueSnapshotParts",
    into = "ResidencyValueSnapshotParts"
)]
pub struct ResidencyValueSnapshot {
    /// Shared and immutable: a clone is one reference-count increment, so a producer (the
    /// runtime's manager) can hand the same value snapshot to many manager snapshots while the
    /// value does not change.
    parts: Arc<ResidencyValueSnapshotParts>,
}

impl TryFrom<ResidencyValueSnapshotParts> for ResidencyValueSnapshot {
    type Error = ModelError;
    fn try_from(p: ResidencyValueSnapshotParts) -> Result<Self, ModelError> {
        Self::new(p)
    }
}

impl From<ResidencyValueSnapshot> for ResidencyValueSnapshotParts {
    fn from(v: ResidencyValueSnapshot) -> Self {
        Arc::unwrap_or_clone(v.parts)
    }
}

impl ResidencyValueSnapshot {
    /// A validated value snapshot.
    ///
    /// # Errors
    /// [`ModelError::ValueTypeMismatch`] (handle vs spec type), [`ModelError::DuplicateMaterialization`],
    /// [`ModelError::MaterializationSpecMismatch`] (bytes differ from the spec), and
    /// [`ModelError::InvalidValueSnapshot`] for: a discarded value with a source or
    /// materializations; an EXCLUSIVE value with several materializations; a MUST_PRESERVE value
    /// with a source or without any materialization; a RECONSTRUCTIBLE value without a source.
    pub fn new(parts: ResidencyValueSnapshotParts) -> Result<Self, ModelError> {
        let h = &parts.handle;
        let invalid = |detail: &str| ModelError::InvalidValueSnapshot {
            handle: h.clone(),
            detail: detail.to_owned(),
        };
        if h.value_type() != parts.spec.value_type() {
            return Err(ModelError::ValueTypeMismatch {
                handle: h.clone(),
                handle_type: h.value_type().to_owned(),
                spec_type: parts.spec.value_type().to_owned(),
            });
        }
        for (i, m) in parts.materializations.iter().enumerate() {
            if parts.materializations[..i]
                .iter()
                .any(|o| o.location == m.location)
            {
                return Err(ModelError::DuplicateMaterialization {
                    handle: h.clone(),
                    location: m.location,
                });
            }
            if m.logical_nbytes != parts.spec.logical_nbytes()
                || m.charged_nbytes != parts.spec.charge()
            {
                return Err(ModelError::MaterializationSpecMismatch {
                    handle: h.clone(),
                    location: m.location,
                    logical_nbytes: m.logical_nbytes,
                    charged_nbytes: m.charged_nbytes,
                    spec_logical_nbytes: parts.spec.logical_nbytes(),
                    spec_charge: parts.spec.charge(),
                });
            }
        }
        if parts.discarded {
            if parts.source.is_some() || !parts.materializations.is_empty() {
                return Err(invalid(
                    "a discarded value has no source and no materializations",
                ));
            }
        } else {
            if parts.spec.replica_mode() == ReplicaMode::Exclusive
                && parts.materializations.len() > 1
            {
                return Err(invalid(
                    "an EXCLUSIVE value has at most one steady materialization",
                ));
            }
            match parts.spec.recoverability() {
                Recoverability::MustPreserve => {
                    if parts.source.is_some() {
                        return Err(invalid("a MUST_PRESERVE value has no registered source"));
                    }
                    if parts.materializations.is_empty() {
                        return Err(invalid(
                            "a live MUST_PRESERVE value keeps at least one materialization",
                        ));
                    }
                }
                Recoverability::Reconstructible => {
                    if parts.source.is_none() {
                        return Err(invalid("a RECONSTRUCTIBLE value has a registered source"));
                    }
                }
            }
        }
        Ok(Self {
            parts: Arc::new(parts),
        })
    }

    /// A value snapshot from parts whose invariants the producer already guarantees (the
    /// runtime's manager). It skips the checks of [`Self::new`]; deserialization and user code
    /// should use [`Self::new`]. Builds with debug assertions (tests) run the checks instead.
    ///
    /// # Errors
    /// None without debug assertions; with them, the errors of [`Self::new`].
    pub fn from_trusted_parts(parts: ResidencyValueSnapshotParts) -> Result<Self, ModelError> {
        if cfg!(debug_assertions) {
            Self::new(parts)
        } else {
            Ok(Self {
                parts: Arc::new(parts),
            })
        }
    }

    /// The handle.
    #[must_use]
    pub fn handle(&self) -> &ResidencyHandle {
        &self.parts.handle
    }
    /// The spec.
    #[must_use]
    pub fn spec(&self) -> &ResidencyValueSpec {
        &self.parts.spec
    }
    /// Materializations in installation order.
    #[must_use]
    pub fn materializations(&self) -> &[MaterializationSnapshot] {
        &self.parts.materializations
    }
    /// The materialization at `location`, if any.
    #[must_use]
    pub fn materialization(&self, location: ResidencyLocation) -> Option<&MaterializationSnapshot> {
        self.parts
            .materializations
            .iter()
            .find(|m| m.location == location)
    }
    /// The registered source, if any.
    #[must_use]
    pub fn source(&self) -> Option<&ResidencySource> {
        self.parts.source.as_ref()
    }
    /// True when a source is registered.
    #[must_use]
    pub fn has_source(&self) -> bool {
        self.parts.source.is_some()
    }
    /// The source's location, if any.
    #[must_use]
    pub fn source_location(&self) -> Option<ResidencyLocation> {
        self.parts.source.map(|s| s.location())
    }
    /// Whether the value was discarded.
    #[must_use]
    pub fn discarded(&self) -> bool {
        self.parts.discarded
    }
    /// Policy metadata.
    #[must_use]
    pub fn policy_metadata(&self) -> &ResidencyPolicyMetadata {
        &self.parts.policy_metadata
    }
    /// Last access epoch recorded in the snapshot.
    #[must_use]
    pub fn last_access_epoch(&self) -> Option<u64> {
        self.parts.last_access_epoch
    }
    /// The validated fields.
    #[must_use]
    pub fn parts(&self) -> &ResidencyValueSnapshotParts {
        &self.parts
    }
    /// True when `self` and `other` share one allocation (a clone of the same snapshot), which
    /// implies equality; producers use it to tell a reused value snapshot from a rebuilt one.
    #[must_use]
    pub fn shares_parts_with(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.parts, &other.parts)
    }
}

/// The fields of a [`ResidencyLocationSnapshot`], validated by [`ResidencyLocationSnapshot::new`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResidencyLocationSnapshotParts {
    /// The location.
    pub location: ResidencyLocation,
    /// The budget, `None` when unbudgeted.
    pub budget_bytes: Option<u64>,
    /// Sum of charges of materializations here.
    pub used_bytes: u64,
    /// Sum of active reservations here.
    pub reserved_bytes: u64,
    /// Historical maximum of `used_bytes`.
    pub peak_used_bytes: u64,
    /// Historical maximum of `used + reserved`.
    pub peak_charged_bytes: u64,
    /// Materializations here.
    #[serde(default)]
    pub value_count: u32,
    /// Named reservations here.
    #[serde(default)]
    pub reservation_count: u32,
    /// Sum of use counts of materializations here.
    #[serde(default)]
    pub use_count: u32,
    /// Sum of hold counts.
    #[serde(default)]
    pub hold_count: u32,
    /// Sum of pending event counts.
    #[serde(default)]
    pub pending_event_count: u32,
    /// Device only: best-effort allocator "allocated" sample.
    #[serde(default)]
    pub allocator_allocated_bytes: Option<u64>,
    /// Device only: best-effort allocator "reserved" sample.
    #[serde(default)]
    pub allocator_reserved_bytes: Option<u64>,
}

impl ResidencyLocationSnapshotParts {
    /// A location with `budget` and nothing charged, reserved or counted yet.
    #[must_use]
    pub const fn empty(location: ResidencyLocation, budget_bytes: Option<u64>) -> Self {
        Self {
            location,
            budget_bytes,
            used_bytes: 0,
            reserved_bytes: 0,
            peak_used_bytes: 0,
            peak_charged_bytes: 0,
            value_count: 0,
            reservation_count: 0,
            use_count: 0,
            hold_count: 0,
            pending_event_count: 0,
            allocator_allocated_bytes: None,
            allocator_reserved_bytes: None,
        }
    }
}

/// Accounting at one location (spec 1.11).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    try_from = "ResidencyLocationSnapshotParts",
    into = "ResidencyLocationSnapshotParts"
)]
pub struct ResidencyLocationSnapshot {
    parts: ResidencyLocationSnapshotParts,
}

impl TryFrom<ResidencyLocationSnapshotParts> for ResidencyLocationSnapshot {
    type Error = ModelError;
    fn try_from(p: ResidencyLocationSnapshotParts) -> Result<Self, ModelError> {
        Self::new(p)
    }
}

impl From<ResidencyLocationSnapshot> for ResidencyLocationSnapshotParts {
    fn from(v: ResidencyLocationSnapshot) -> Self {
        v.parts
    }
}

impl ResidencyLocationSnapshot {
    /// A validated location snapshot.
    ///
    /// # Errors
    /// [`ModelError::InvalidLocationSnapshot`] unless `peak_used >= used`,
    /// `peak_charged >= max(peak_used, used + reserved)`, and, when budgeted,
    /// `used + reserved <= budget` and `peak_charged <= budget`.
    pub fn new(parts: ResidencyLocationSnapshotParts) -> Result<Self, ModelError> {
        let invalid = |detail: String| ModelError::InvalidLocationSnapshot {
            location: parts.location,
            detail,
        };
        let charged = parts
            .used_bytes
            .checked_add(parts.reserved_bytes)
            .ok_or_else(|| invalid("used + reserved overflows".to_owned()))?;
        if parts.peak_used_bytes < parts.used_bytes {
            return Err(invalid(format!(
                "peak_used_bytes {} is below used_bytes {}",
                parts.peak_used_bytes, parts.used_bytes
            )));
        }
        if parts.peak_charged_bytes < parts.peak_used_bytes.max(charged) {
            return Err(invalid(format!(
                "peak_charged_bytes {} is below max(peak_used {}, used + reserved {})",
                parts.peak_charged_bytes, parts.peak_used_bytes, charged
            )));
        }
        if let Some(budget) = parts.budget_bytes {
            if charged > budget {
                return Err(invalid(format!(
                    "used {} + reserved {} exceeds budget {budget}",
                    parts.used_bytes, parts.reserved_bytes
                )));
            }
            if parts.peak_charged_bytes > budget {
                return Err(invalid(format!(
                    "peak_charged_bytes {} exceeds budget {budget}",
                    parts.peak_charged_bytes
                )));
            }
        }
        Ok(Self { parts })
    }

    /// The location.
    #[must_use]
    pub const fn location(&self) -> ResidencyLocation {
        self.parts.location
    }
    /// The budget, `None` when unbudgeted.
    #[must_use]
    pub const fn budget_bytes(&self) -> Option<u64> {
        self.parts.budget_bytes
    }
    /// Sum of charges here.
    #[must_use]
    pub const fn used_bytes(&self) -> u64 {
        self.parts.used_bytes
    }
    /// Sum of reservations here.
    #[must_use]
    pub const fn reserved_bytes(&self) -> u64 {
        self.parts.reserved_bytes
    }
    /// `budget - used - reserved`, `None` when unbudgeted.
    #[must_use]
    pub fn remaining_budget_bytes(&self) -> Option<u64> {
        self.parts.budget_bytes.map(|b| {
            b.saturating_sub(
                self.parts
                    .used_bytes
                    .saturating_add(self.parts.reserved_bytes),
            )
        })
    }
    /// Historical maximum of used.
    #[must_use]
    pub const fn peak_used_bytes(&self) -> u64 {
        self.parts.peak_used_bytes
    }
    /// Historical maximum of used + reserved.
    #[must_use]
    pub const fn peak_charged_bytes(&self) -> u64 {
        self.parts.peak_charged_bytes
    }
    /// The validated fields (counts, allocator samples).
    #[must_use]
    pub const fn parts(&self) -> &ResidencyLocationSnapshotParts {
        &self.parts
    }
}

/// The named reservation snapshot is the reservation itself (location, bytes, label).
pub type ResidencyReservationSnapshot = MemoryReservation;

/// The fields of a [`ResidencySnapshot`], validated by [`ResidencySnapshot::new`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResidencySnapshotParts {
    /// The manager's identity.
    pub manager_id: u64,
    /// The manager's `state_version` at capture.
    pub state_version: u64,
    /// Values in handle registration order, discarded ones included.
    pub values: Vec<ResidencyValueSnapshot>,
    /// Locations in registration order.
    pub locations: Vec<ResidencyLocationSnapshot>,
    /// Active named reservations in creation order.
    #[serde(default)]
    pub reservations: Vec<MemoryReservation>,
    /// Capture time (Unix nanoseconds) as given by the runtime; the model never reads a clock.
    #[serde(default)]
    pub captured_at_ns: u64,
    /// The device locations usable in this process; `None` treats every location as
    /// available. Host locations are always available.
    #[serde(default)]
    pub available_devices: Option<Vec<ResidencyLocation>>,
}

/// Handle lookup: `handle_id` -> position.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct IdIndex {
    /// `handle_id` -> position of the first value listed with that id. Keying by the id
    /// (rather than the whole handle) avoids cloning an `Arc` and hashing the type tag per value;
    /// lookups confirm the full handle.
    by_id: FxHashMap<u64, u32>,
    /// Positions of values whose `handle_id` equals an earlier value's but whose handle differs
    /// (another manager or type tag); empty for any snapshot a manager produces.
    id_collisions: Vec<u32>,
}

/// Which values are materialized where.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct PlaceIndex {
    /// Per listed location (same order as `parts.locations`): values (snapshot positions,
    /// ascending) with a materialization there.
    at_location: Vec<Vec<u32>>,
    /// The same, restricted to unprotected materializations (the eviction candidates).
    unprotected_at: Vec<Vec<u32>>,
}

/// Lookup tables derived from the snapshot's data (never serialized, always derivable). Each
/// table is shared (`Arc`) so that a producer taking snapshot after snapshot of a mostly
/// unchanged state ([`ResidencySnapshot::from_trusted_parts_reusing`]) rebuilds only the
/// tables whose inputs changed.
#[derive(Debug, Clone, Default)]
pub(crate) struct SnapshotIndex {
    ids: Arc<IdIndex>,
    /// Location -> position in `parts.locations`.
    location_pos: Arc<FxHashMap<ResidencyLocation, u32>>,
    places: Arc<PlaceIndex>,
}

impl SnapshotIndex {
    fn location_pos(&self, location: ResidencyLocation) -> Option<usize> {
        self.location_pos.get(&location).map(|p| *p as usize)
    }
    /// Same tables (content, not sharing).
    fn same_tables(&self, other: &Self) -> bool {
        self.ids == other.ids
            && self.location_pos == other.location_pos
            && self.places == other.places
    }
}

impl PartialEq for SnapshotIndex {
    fn eq(&self, _: &Self) -> bool {
        true // derived from the data, which is compared separately
    }
}
impl Eq for SnapshotIndex {}

/// One atomic, value-free observation of a whole manager (spec 1.11), indexed for planning.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "ResidencySnapshotParts", into = "ResidencySnapshotParts")]
pub struct ResidencySnapshot {
    parts: ResidencySnapshotParts,
    index: SnapshotIndex,
}

impl TryFrom<ResidencySnapshotParts> for ResidencySnapshot {
    type Error = ModelError;
    fn try_from(p: ResidencySnapshotParts) -> Result<Self, ModelError> {
        Self::new(p)
    }
}

impl From<ResidencySnapshot> for ResidencySnapshotParts {
    fn from(v: ResidencySnapshot) -> Self {
        v.parts
    }
}

/// Per-location sums recomputed from the materializations and reservations.
#[derive(Default, Clone, Copy)]
struct Sums {
    used: u64,
    reserved: u64,
    values: u32,
    reservations: u32,
    uses: u32,
    holds: u32,
    pending: u32,
}

fn invalid_snapshot(detail: String) -> ModelError {
    ModelError::InvalidSnapshot { detail }
}

/// Location -> position; a location listed twice is an error.
fn location_table(
    parts: &ResidencySnapshotParts,
) -> Result<FxHashMap<ResidencyLocation, u32>, ModelError> {
    let mut location_pos = FxHashMap::with_capacity_and_hasher(
        parts.locations.len(),
        std::hash::BuildHasherDefault::default(),
    );
    for (i, l) in parts.locations.iter().enumerate() {
        if location_pos
            .insert(l.location(), u32::try_from(i).unwrap_or(u32::MAX))
            .is_some()
        {
            return Err(invalid_snapshot(format!(
                "location {} is listed twice",
                l.location()
            )));
        }
    }
    Ok(location_pos)
}

/// The position of `l` among the listed locations (locations are few: a linear scan over a
/// compact array beats hashing per materialization).
fn position_of(
    locs: &[ResidencyLocation],
    location_pos: &FxHashMap<ResidencyLocation, u32>,
    l: ResidencyLocation,
    what: &str,
) -> Result<usize, ModelError> {
    let found = if locs.len() <= 16 {
        locs.iter().position(|x| *x == l)
    } else {
        location_pos.get(&l).map(|p| *p as usize)
    };
    found.ok_or_else(|| invalid_snapshot(format!("{what} at {l}, which is not a listed location")))
}

/// Adds `values[from..]` to the handle table; a handle listed twice is an error.
fn extend_ids(
    ids: &mut IdIndex,
    values: &[ResidencyValueSnapshot],
    from: usize,
) -> Result<(), ModelError> {
    for (i, v) in values.iter().enumerate().skip(from) {
        let vi = u32::try_from(i).map_err(|_| invalid_snapshot("too many values".to_owned()))?;
        let h = v.handle();
        match ids.by_id.entry(h.handle_id()) {
            Entry::Vacant(e) => {
                e.insert(vi);
            }
            Entry::Occupied(e) => {
                // The map keeps the first position; this one goes to the collision list
                // unless it repeats a handle already listed.
                let dup = values[*e.get() as usize].handle() == h
                    || ids
                        .id_collisions
                        .iter()
                        .any(|c| values[*c as usize].handle() == h);
                if dup {
                    return Err(invalid_snapshot(format!("handle {h} is listed twice")));
                }
                ids.id_collisions.push(vi);
            }
        }
    }
    Ok(())
}

/// The placement tables; a source or materialization at an unlisted location is an error.
fn place_table(
    parts: &ResidencySnapshotParts,
    location_pos: &FxHashMap<ResidencyLocation, u32>,
) -> Result<PlaceIndex, ModelError> {
    let locs: Vec<ResidencyLocation> = parts
        .locations
        .iter()
        .map(ResidencyLocationSnapshot::location)
        .collect();
    let nvalues = parts.values.len();
    let capacity = |l: &ResidencyLocationSnapshot| (l.parts().value_count as usize).min(nvalues);
    let mut at_location: Vec<Vec<u32>> = parts
        .locations
        .iter()
        .map(|l| Vec::with_capacity(capacity(l)))
        .collect();
    let mut unprotected_at: Vec<Vec<u32>> = vec![Vec::new(); locs.len()];
    for (i, v) in parts.values.iter().enumerate() {
        let vi = u32::try_from(i).map_err(|_| invalid_snapshot("too many values".to_owned()))?;
        if let Some(s) = v.source_location() {
            position_of(&locs, location_pos, s, "a source")?;
        }
        for m in v.materializations() {
            let p = position_of(&locs, location_pos, m.location(), "a materialization")?;
            at_location[p].push(vi);
            if !m.is_protected() {
                unprotected_at[p].push(vi);
            }
        }
    }
    Ok(PlaceIndex {
        at_location,
        unprotected_at,
    })
}

/// The placement tables of `parts` from those of a previous snapshot over the same location
/// list, updated for the values at the `changed` positions only (each list stays ascending).
fn patch_places(
    old: &PlaceIndex,
    old_values: &[ResidencyValueSnapshot],
    parts: &ResidencySnapshotParts,
    location_pos: &FxHashMap<ResidencyLocation, u32>,
    changed: &[usize],
) -> Result<PlaceIndex, ModelError> {
    let locs: Vec<ResidencyLocation> = parts
        .locations
        .iter()
        .map(ResidencyLocationSnapshot::location)
        .collect();
    let mut places = old.clone();
    let remove = |list: &mut Vec<u32>, vi: u32| {
        if let Ok(k) = list.binary_search(&vi) {
            list.remove(k);
        }
    };
    let insert = |list: &mut Vec<u32>, vi: u32| {
        if let Err(k) = list.binary_search(&vi) {
            list.insert(k, vi);
        }
    };
    for &i in changed {
        let vi = u32::try_from(i).map_err(|_| invalid_snapshot("too many values".to_owned()))?;
        if let Some(v) = old_values.get(i) {
            for m in v.materializations() {
                let p = position_of(&locs, location_pos, m.location(), "a materialization")?;
                remove(&mut places.at_location[p], vi);
                remove(&mut places.unprotected_at[p], vi);
            }
        }
        let v = &parts.values[i];
        if let Some(s) = v.source_location() {
            position_of(&locs, location_pos, s, "a source")?;
        }
        for m in v.materializations() {
            let p = position_of(&locs, location_pos, m.location(), "a materialization")?;
            insert(&mut places.at_location[p], vi);
            if !m.is_protected() {
                insert(&mut places.unprotected_at[p], vi);
            }
        }
    }
    Ok(places)
}

fn check_reservations(
    parts: &ResidencySnapshotParts,
    location_pos: &FxHashMap<ResidencyLocation, u32>,
) -> Result<(), ModelError> {
    for r in &parts.reservations {
        if !location_pos.contains_key(&r.location()) {
            return Err(invalid_snapshot(format!(
                "a reservation at {}, which is not a listed location",
                r.location()
            )));
        }
    }
    Ok(())
}

/// The cross-checks only [`ResidencySnapshot::new`] runs: manager ids, stable keys, and every
/// location's used/reserved bytes and counts against the sums over its materializations and
/// reservations.
fn validate_sums(
    parts: &ResidencySnapshotParts,
    location_pos: &FxHashMap<ResidencyLocation, u32>,
) -> Result<(), ModelError> {
    let mut sums = vec![Sums::default(); parts.locations.len()];
    let mut keys: FxHashSet<&str> = FxHashSet::default();
    for v in &parts.values {
        let h = v.handle();
        if h.manager_id() != parts.manager_id {
            return Err(invalid_snapshot(format!(
                "value {} belongs to manager {}, not {}",
                h,
                h.manager_id(),
                parts.manager_id
            )));
        }
        if let Some(k) = v.policy_metadata().stable_key() {
            if !keys.insert(k) {
                return Err(invalid_snapshot(format!(
                    "stable_key {k:?} is used by two values"
                )));
            }
        }
        for m in v.materializations() {
            let Some(p) = location_pos.get(&m.location()) else {
                continue; // reported by the placement table
            };
            let s = &mut sums[*p as usize];
            s.used = s.used.saturating_add(m.charged_nbytes());
            s.values = s.values.saturating_add(1);
            s.uses = s.uses.saturating_add(m.use_count());
            s.holds = s.holds.saturating_add(m.hold_count());
            s.pending = s.pending.saturating_add(m.pending_event_count());
        }
    }
    for r in &parts.reservations {
        if let Some(p) = location_pos.get(&r.location()) {
            let s = &mut sums[*p as usize];
            s.reserved = s.reserved.saturating_add(r.nbytes());
            s.reservations = s.reservations.saturating_add(1);
        }
    }
    for (l, s) in parts.locations.iter().zip(&sums) {
        let p = l.parts();
        let got = (
            p.used_bytes,
            p.reserved_bytes,
            p.value_count,
            p.reservation_count,
            p.use_count,
            p.hold_count,
            p.pending_event_count,
        );
        let want = (
            s.used,
            s.reserved,
            s.values,
            s.reservations,
            s.uses,
            s.holds,
            s.pending,
        );
        if got != want {
            return Err(invalid_snapshot(format!(
                "location {}: (used, reserved, values, reservations, uses, holds, pending) = {got:?}, but the materializations and reservations sum to {want:?}",
                l.location()
            )));
        }
    }
    Ok(())
}

impl ResidencySnapshot {
    /// A validated, indexed snapshot. O(values + materializations).
    ///
    /// # Errors
    /// [`ModelError::InvalidSnapshot`] for: duplicate handles or locations; a handle of another
    /// manager; a materialization, source or reservation at a location that is not listed;
    /// a location whose `used_bytes`, `reserved_bytes` or counts differ from the sums over its
    /// materializations and reservations; a stable key used by two values; a host location in
    /// `available_devices`.
    pub fn new(parts: ResidencySnapshotParts) -> Result<Self, ModelError> {
        Self::build(parts, true)
    }

    /// An indexed snapshot from parts whose invariants the producer already guarantees (the
    /// runtime's manager, which maintains them under its lock). It skips the cross-checks of
    /// [`Self::new`] (manager ids, stable keys, per-location sums, `available_devices`) and
    /// builds the same index; values should come from
    /// [`ResidencyValueSnapshot::from_trusted_parts`] or [`ResidencyValueSnapshot::new`].
    ///
    /// Deserialization and user code should use [`Self::new`]. Builds with debug assertions
    /// (tests) run the full validation instead, so a producer that breaks an invariant fails
    /// there.
    ///
    /// # Errors
    /// [`ModelError::InvalidSnapshot`] when the index cannot be built: a location listed twice,
    /// a handle listed twice, or a materialization, source or reservation at a location that is
    /// not listed. With debug assertions, every error of [`Self::new`].
    pub fn from_trusted_parts(parts: ResidencySnapshotParts) -> Result<Self, ModelError> {
        Self::build(parts, cfg!(debug_assertions))
    }

    /// [`Self::from_trusted_parts`] for a producer that took `previous` from the same state
    /// a moment ago: the tables of `previous`'s index whose inputs did not change are shared
    /// instead of rebuilt, so a snapshot of a mostly unchanged state costs little more than
    /// cloning its value list (value snapshots are reference counted).
    ///
    /// The producer guarantees (as for [`Self::from_trusted_parts`]) that `parts` is
    /// consistent, and in addition that the first `previous.values().len()` values of `parts`
    /// carry the same handles, in the same order, as `previous` (values are only ever
    /// appended). Under that guarantee the result equals [`Self::from_trusted_parts`]`(parts)`.
    /// Reuse rules: the handle table is shared when no value was appended (extended otherwise);
    /// the location table when the location list is unchanged; the placement tables when, in
    /// addition, every value snapshot is shared with `previous`
    /// ([`ResidencyValueSnapshot::shares_parts_with`]), and patched for the values that are not
    /// when those are at most 1/16 of all.
    ///
    /// Builds with debug assertions also build the index from scratch and compare.
    ///
    /// # Errors
    /// Those of [`Self::from_trusted_parts`]; with debug assertions also
    /// [`ModelError::InvalidSnapshot`] when the reused index differs from a fresh one (the
    /// producer broke the guarantee).
    pub fn from_trusted_parts_reusing(
        parts: ResidencySnapshotParts,
        previous: &Self,
    ) -> Result<Self, ModelError> {
        let n0 = previous.parts.values.len();
        if n0 > parts.values.len() {
            return Self::from_trusted_parts(parts);
        }
        let same_locations = parts.locations.len() == previous.parts.locations.len()
            && parts
                .locations
                .iter()
                .zip(&previous.parts.locations)
                .all(|(a, b)| a.location() == b.location());
        let location_pos = if same_locations {
            Arc::clone(&previous.index.location_pos)
        } else {
            Arc::new(location_table(&parts)?)
        };
        let mut ids = Arc::clone(&previous.index.ids);
        if parts.values.len() > n0 {
            extend_ids(Arc::make_mut(&mut ids), &parts.values, n0)?;
        }
        let places = if same_locations {
            // Positions whose value snapshot is not shared with `previous` (changed or new).
            let changed: Vec<usize> = parts
                .values
                .iter()
                .enumerate()
                .filter(|(i, v)| {
                    previous
                        .parts
                        .values
                        .get(*i)
                        .is_none_or(|p| !v.shares_parts_with(p))
                })
                .map(|(i, _)| i)
                .collect();
            if changed.is_empty() {
                Arc::clone(&previous.index.places)
            } else if changed.len() <= parts.values.len() / 16 {
                Arc::new(patch_places(
                    &previous.index.places,
                    &previous.parts.values,
                    &parts,
                    &location_pos,
                    &changed,
                )?)
            } else {
                Arc::new(place_table(&parts, &location_pos)?)
            }
        } else {
            Arc::new(place_table(&parts, &location_pos)?)
        };
        check_reservations(&parts, &location_pos)?;
        let index = SnapshotIndex {
            ids,
            location_pos,
            places,
        };
        if cfg!(debug_assertions) {
            let fresh = Self::build(parts, true)?;
            if !fresh.index.same_tables(&index) {
                return Err(ModelError::InvalidSnapshot {
                    detail: "the reused index differs from a fresh one: the producer changed \
                             handles that the previous snapshot listed"
                        .to_owned(),
                });
            }
            return Ok(Self {
                parts: fresh.parts,
                index,
            });
        }
        Ok(Self { parts, index })
    }

    fn build(parts: ResidencySnapshotParts, validate: bool) -> Result<Self, ModelError> {
        let invalid = |detail: String| ModelError::InvalidSnapshot { detail };
        let location_pos = location_table(&parts)?;
        if validate {
            if let Some(devs) = &parts.available_devices {
                if let Some(h) = devs.iter().find(|l| l.is_host()) {
                    return Err(invalid(format!(
                        "available_devices lists host location {h}"
                    )));
                }
            }
        }
        let mut ids = IdIndex {
            by_id: FxHashMap::with_capacity_and_hasher(
                parts.values.len(),
                std::hash::BuildHasherDefault::default(),
            ),
            id_collisions: Vec::new(),
        };
        extend_ids(&mut ids, &parts.values, 0)?;
        let places = place_table(&parts, &location_pos)?;
        check_reservations(&parts, &location_pos)?;
        if validate {
            validate_sums(&parts, &location_pos)?;
        }
        let index = SnapshotIndex {
            ids: Arc::new(ids),
            location_pos: Arc::new(location_pos),
            places: Arc::new(places),
        };
        Ok(Self { parts, index })
    }

    /// The manager's identity.
    #[must_use]
    pub const fn manager_id(&self) -> u64 {
        self.parts.manager_id
    }
    /// The manager's state version at capture.
    #[must_use]
    pub const fn state_version(&self) -> u64 {
        self.parts.state_version
    }
    /// Values in registration order.
    #[must_use]
    pub fn values(&self) -> &[ResidencyValueSnapshot] {
        &self.parts.values
    }
    /// Locations in registration order.
    #[must_use]
    pub fn locations(&self) -> &[ResidencyLocationSnapshot] {
        &self.parts.locations
    }
    /// Active named reservations in creation order.
    #[must_use]
    pub fn reservations(&self) -> &[MemoryReservation] {
        &self.parts.reservations
    }
    /// Capture time as given by the runtime.
    #[must_use]
    pub const fn captured_at_ns(&self) -> u64 {
        self.parts.captured_at_ns
    }
    /// The validated fields.
    #[must_use]
    pub const fn parts(&self) -> &ResidencySnapshotParts {
        &self.parts
    }
    /// The value snapshot of `handle` (O(1)).
    #[must_use]
    pub fn value(&self, handle: &ResidencyHandle) -> Option<&ResidencyValueSnapshot> {
        self.value_index(handle).map(|i| &self.parts.values[i])
    }
    /// The registration index of `handle` (its position in [`Self::values`]).
    #[must_use]
    pub fn value_index(&self, handle: &ResidencyHandle) -> Option<usize> {
        let values = &self.parts.values;
        let first = *self.index.ids.by_id.get(&handle.handle_id())? as usize;
        if values[first].handle() == handle {
            return Some(first);
        }
        self.index
            .ids
            .id_collisions
            .iter()
            .map(|c| *c as usize)
            .find(|c| values[*c].handle() == handle)
    }
    /// The accounting of `location`, if registered.
    #[must_use]
    pub fn location(&self, location: ResidencyLocation) -> Option<&ResidencyLocationSnapshot> {
        self.index
            .location_pos(location)
            .map(|p| &self.parts.locations[p])
    }
    /// Registration indices of the values materialized at `location`, ascending.
    #[must_use]
    pub fn values_at(&self, location: ResidencyLocation) -> &[u32] {
        self.index
            .location_pos(location)
            .map_or(&[], |p| self.index.places.at_location[p].as_slice())
    }
    /// Registration indices of the values with an unprotected materialization at `location`
    /// (no lease, hold or pending event), ascending.
    #[must_use]
    pub fn unprotected_values_at(&self, location: ResidencyLocation) -> &[u32] {
        self.index
            .location_pos(location)
            .map_or(&[], |p| self.index.places.unprotected_at[p].as_slice())
    }
    /// Whether `location` is usable: host locations always are; device locations are when
    /// `available_devices` is `None` or lists them.
    #[must_use]
    pub fn is_available(&self, location: ResidencyLocation) -> bool {
        location.is_host()
            || self
                .parts
                .available_devices
                .as_ref()
                .is_none_or(|d| d.contains(&location))
    }
}

/// Builds a consistent [`ResidencySnapshot`] from budgets, values and reservations, deriving
/// every location's used/reserved bytes and counts (peaks = current). Locations are registered
/// in FHElium's order: budget keys first, then each location in order of first use by a value
/// (materializations, then source) or a reservation.
#[derive(Debug, Clone, Default)]
pub struct ResidencySnapshotBuilder {
    manager_id: u64,
    state_version: u64,
    budgets: Vec<(ResidencyLocation, Option<u64>)>,
    values: Vec<ResidencyValueSnapshot>,
    reservations: Vec<MemoryReservation>,
    available_devices: Option<Vec<ResidencyLocation>>,
}

impl ResidencySnapshotBuilder {
    /// An empty builder.
    #[must_use]
    pub fn new(manager_id: u64, state_version: u64) -> Self {
        Self {
            manager_id,
            state_version,
            ..Self::default()
        }
    }
    /// Registers `location` with a budget (in call order).
    #[must_use]
    pub fn budget(mut self, location: ResidencyLocation, bytes: u64) -> Self {
        self.budgets.push((location, Some(bytes)));
        self
    }
    /// Registers `location` unbudgeted (in call order).
    #[must_use]
    pub fn location(mut self, location: ResidencyLocation) -> Self {
        self.budgets.push((location, None));
        self
    }
    /// Appends a value (registration order = call order).
    #[must_use]
    pub fn value(mut self, value: ResidencyValueSnapshot) -> Self {
        self.values.push(value);
        self
    }
    /// Appends an active reservation.
    #[must_use]
    pub fn reservation(mut self, reservation: MemoryReservation) -> Self {
        self.reservations.push(reservation);
        self
    }
    /// Sets the available device locations.
    #[must_use]
    pub fn available_devices(mut self, devices: Vec<ResidencyLocation>) -> Self {
        self.available_devices = Some(devices);
        self
    }
    /// Builds and validates the snapshot.
    ///
    /// # Errors
    /// [`ModelError::InvalidLocationSnapshot`] when a location is over its budget, and the
    /// errors of [`ResidencySnapshot::new`].
    pub fn build(self) -> Result<ResidencySnapshot, ModelError> {
        let mut order: Vec<(ResidencyLocation, Option<u64>)> = Vec::new();
        let mut push = |l: ResidencyLocation, b: Option<u64>| {
            if !order.iter().any(|(o, _)| *o == l) {
                order.push((l, b));
            }
        };
        for (l, b) in &self.budgets {
            push(*l, *b);
        }
        for v in &self.values {
            for m in v.materializations() {
                push(m.location(), None);
            }
            if let Some(s) = v.source_location() {
                push(s, None);
            }
        }
        for r in &self.reservations {
            push(r.location(), None);
        }
        let mut locations = Vec::with_capacity(order.len());
        for (l, budget) in order {
            let mut p = ResidencyLocationSnapshotParts::empty(l, budget);
            for m in self
                .values
                .iter()
                .flat_map(ResidencyValueSnapshot::materializations)
                .filter(|m| m.location() == l)
            {
                p.used_bytes = p.used_bytes.saturating_add(m.charged_nbytes());
                p.value_count = p.value_count.saturating_add(1);
                p.use_count = p.use_count.saturating_add(m.use_count());
                p.hold_count = p.hold_count.saturating_add(m.hold_count());
                p.pending_event_count = p
                    .pending_event_count
                    .saturating_add(m.pending_event_count());
            }
            for r in self.reservations.iter().filter(|r| r.location() == l) {
                p.reserved_bytes = p.reserved_bytes.saturating_add(r.nbytes());
                p.reservation_count = p.reservation_count.saturating_add(1);
            }
            p.peak_used_bytes = p.used_bytes;
            p.peak_charged_bytes = p.used_bytes.saturating_add(p.reserved_bytes);
            locations.push(ResidencyLocationSnapshot::new(p)?);
        }
        ResidencySnapshot::new(ResidencySnapshotParts {
            manager_id: self.manager_id,
            state_version: self.state_version,
            values: self.values,
            locations,
            reservations: self.reservations,
            captured_at_ns: 0,
            available_devices: self.available_devices,
        })
    }
}
