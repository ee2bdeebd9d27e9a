//! Producing the model's snapshot types from the manager's state (spec 1.11).

use fhelium_residency::{
    MaterializationSnapshot, MemoryReservation, ResidencyLocationSnapshot,
    ResidencyLocationSnapshotParts, ResidencyPolicyMetadata, ResidencySnapshot,
    ResidencySnapshotParts, ResidencySource, ResidencyValueSnapshot, ResidencyValueSnapshotParts,
};

use crate::error::Result;
use crate::manager::now_ns;
use crate::state::{State, ValueRecord};

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Controller-side facts recorded in the value entries of a snapshot.
///
/// Changes go through [`PolicyFacts::set_metadata`] and [`PolicyFacts::record_access`], which
/// log the handle; a capture with these facts consumes the log to know which values' facts
/// changed since its previous capture with the same facts ([`SnapshotCache`]).
#[derive(Debug)]
pub(crate) struct PolicyFacts {
    pub metadata: std::collections::HashMap<
        fhelium_residency::ResidencyHandle,
        fhelium_residency::ResidencyPolicyMetadata,
    >,
    pub recency: fhelium_residency::ResidencyRecency,
    /// Unique per facts table (per controller).
    id: u64,
    /// Handles whose facts changed since the last capture that consumed the log.
    changed: Vec<fhelium_residency::ResidencyHandle>,
    /// The log outgrew [`CHANGE_LOG_CAP`] and was cut: the next capture compares everything.
    overflowed: bool,
}

/// Longest facts change log kept between captures (a controller that records accesses without
/// deciding would otherwise grow it without bound).
const CHANGE_LOG_CAP: usize = 4096;

impl PolicyFacts {
    pub fn new() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Self {
            metadata: std::collections::HashMap::new(),
            recency: fhelium_residency::ResidencyRecency::new(),
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            changed: Vec::new(),
            overflowed: false,
        }
    }

    fn log(&mut self, handle: &fhelium_residency::ResidencyHandle) {
        if self.changed.len() >= CHANGE_LOG_CAP {
            self.changed.clear();
            self.overflowed = true;
        }
        if !self.overflowed {
            self.changed.push(handle.clone());
        }
    }

    pub fn set_metadata(
        &mut self,
        handle: fhelium_residency::ResidencyHandle,
        metadata: ResidencyPolicyMetadata,
    ) {
        self.log(&handle);
        self.metadata.insert(handle, metadata);
    }

    pub fn record_access(&mut self, handle: &fhelium_residency::ResidencyHandle, epoch: u64) {
        self.log(handle);
        self.recency.record(handle.clone(), epoch);
    }
}

/// The last snapshot the manager built of each flavour (plain, and carrying the controller's
/// policy facts), which later captures reuse: value snapshots are reference counted and
/// immutable, so an unchanged value costs one reference-count increment instead of a rebuild,
/// and the snapshot index shares every table whose inputs did not change
/// ([`ResidencySnapshot::from_trusted_parts_reusing`]).
///
/// What a value snapshot says is always derived from the record:
/// - a plain capture at the **same** `state_version` reuses the cached values as they are:
///   every change a snapshot can show bumps the version (spec 2.2);
/// - a plain capture at a new version rebuilds the records stamped changed since the cached
///   capture ([`State::touch`], [`ValueRecord::changed_at`]) and reuses the others without
///   reading them;
/// - a capture with policy facts (the controller's, which change without a version bump)
///   whose cached snapshot was taken with the same facts table rebuilds the records stamped
///   changed and the values whose facts changed since ([`PolicyFacts`] logs them); with another
///   facts table (another controller) it compares every record and its facts with the cached
///   snapshot and rebuilds the ones that differ.
///
/// Debug builds (all tests) check every reuse against the record, so a mutation path that
/// forgot its stamp fails there.
#[derive(Default)]
pub(crate) struct SnapshotCache {
    plain: Option<Cached>,
    with_facts: Option<Cached>,
}

/// A cached snapshot, [`State::edits`] when it was captured, and the facts table it carries.
struct Cached {
    snapshot: ResidencySnapshot,
    edits: u64,
    facts_id: Option<u64>,
}

/// The materialization snapshots of `rec`, in installation order (no allocation).
fn mat_snapshots(rec: &ValueRecord) -> impl Iterator<Item = Result<MaterializationSnapshot>> + '_ {
    rec.mats.iter().map(move |m| {
        Ok(MaterializationSnapshot::new(
            m.location,
            rec.spec.logical_nbytes(),
            m.storage_nbytes,
            m.charged_nbytes,
        )?
        .with_protection(
            count(m.uses.len()),
            count(m.holds.len()),
            count(m.pending.len()),
        ))
    })
}

/// True when `cached` describes `rec` (and the policy facts) exactly as a rebuild would. A
/// record's handle and spec never change, so only the mutable facts are compared.
fn still_valid(
    cached: &ResidencyValueSnapshot,
    rec: &ValueRecord,
    metadata: Option<&ResidencyPolicyMetadata>,
    last_access: Option<u64>,
) -> bool {
    debug_assert!(cached.handle() == &rec.handle && cached.spec() == &rec.spec);
    let default_metadata = ResidencyPolicyMetadata::default();
    cached.discarded() == rec.discarded
        && cached.source_location() == rec.source_location
        && cached.last_access_epoch() == last_access
        && cached.policy_metadata() == metadata.unwrap_or(&default_metadata)
        && cached.materializations().len() == rec.mats.len()
        && cached
            .materializations()
            .iter()
            .zip(mat_snapshots(rec))
            .all(|(c, m)| m.is_ok_and(|m| *c == m))
}

fn build_value(
    rec: &ValueRecord,
    metadata: Option<&ResidencyPolicyMetadata>,
    last_access: Option<u64>,
) -> Result<ResidencyValueSnapshot> {
    let mut parts = ResidencyValueSnapshotParts::new(rec.handle.clone(), rec.spec.clone());
    parts.discarded = rec.discarded;
    if let Some(m) = metadata {
        parts.policy_metadata = m.clone();
    }
    parts.last_access_epoch = last_access;
    parts.source = rec.source_location.map(ResidencySource::new);
    parts.materializations = mat_snapshots(rec).collect::<Result<Vec<_>>>()?;
    // The manager maintains the value invariants under its lock (debug builds re-check).
    Ok(ResidencyValueSnapshot::from_trusted_parts(parts)?)
}

/// Per-location counts: materializations, uses, holds, pending events.
type Counts = [u32; 4];

/// Adds (`add`) or removes the materializations of one value to or from the counts.
fn count_mats(
    counts: &mut [Counts],
    locs: &[fhelium_residency::ResidencyLocation],
    mats: &[MaterializationSnapshot],
    add: bool,
) {
    for m in mats {
        if let Some(c) = locs
            .iter()
            .position(|l| *l == m.location())
            .and_then(|i| counts.get_mut(i))
        {
            let d = [1, m.use_count(), m.hold_count(), m.pending_event_count()];
            for (c, d) in c.iter_mut().zip(d) {
                *c = if add {
                    c.saturating_add(d)
                } else {
                    c.saturating_sub(d)
                };
            }
        }
    }
}

/// The counts recorded in a snapshot's locations (a prefix of the current locations: locations
/// are only ever appended), zero for locations registered since.
fn counts_of(previous: &ResidencySnapshot, nloc: usize) -> Vec<Counts> {
    let mut counts: Vec<Counts> = previous
        .locations()
        .iter()
        .map(|l| {
            let q = l.parts();
            [
                q.value_count,
                q.use_count,
                q.hold_count,
                q.pending_event_count,
            ]
        })
        .collect();
    counts.resize(nloc, [0; 4]);
    counts
}

/// The value snapshots of the current state, reusing `previous` where nothing changed, and
/// the per-location counts over their materializations.
fn current_values(
    st: &State,
    previous: Option<&Cached>,
    policy: Option<&PolicyFacts>,
) -> Result<(Vec<ResidencyValueSnapshot>, Vec<Counts>)> {
    let locs: Vec<fhelium_residency::ResidencyLocation> =
        st.locations.iter().map(|l| l.location).collect();
    let cached = previous.map_or(&[][..], |p| p.snapshot.values());
    let facts_of = |rec: &ValueRecord| match policy {
        Some(p) => (p.metadata.get(&rec.handle), p.recency.get(&rec.handle)),
        None => (None, None),
    };
    let mut values = Vec::with_capacity(st.values.len());
    // A cached capture with the same facts table (or none, plain): only records stamped since
    // then, and values whose facts changed since then, are read.
    let same_facts = previous
        .filter(|p| p.facts_id == policy.map(|f| f.id) && !policy.is_some_and(|f| f.overflowed));
    if let Some(prev) = same_facts {
        let mut facts_changed = vec![false; st.values.len()];
        for h in policy.map_or(&[][..], |p| p.changed.as_slice()) {
            if let Some(&vi) = st.index.get(&h.handle_id()) {
                if let Some(c) = facts_changed.get_mut(vi) {
                    *c = true;
                }
            }
        }
        let mut counts = counts_of(&prev.snapshot, locs.len());
        for (i, rec) in st.values.iter().enumerate() {
            match cached.get(i) {
                Some(c) if rec.changed_at <= prev.edits && !facts_changed[i] => {
                    if cfg!(debug_assertions) {
                        let (metadata, last_access) = facts_of(rec);
                        debug_assert!(
                            still_valid(c, rec, metadata, last_access),
                            "value {} changed without a stamp",
                            rec.handle
                        );
                    }
                    values.push(c.clone());
                }
                old => {
                    let (metadata, last_access) = facts_of(rec);
                    let v = build_value(rec, metadata, last_access)?;
                    if let Some(c) = old {
                        count_mats(&mut counts, &locs, c.materializations(), false);
                    }
                    count_mats(&mut counts, &locs, v.materializations(), true);
                    values.push(v);
                }
            }
        }
        return Ok((values, counts));
    }
    let mut counts = vec![[0u32; 4]; locs.len()];
    for (i, rec) in st.values.iter().enumerate() {
        let (metadata, last_access) = facts_of(rec);
        let v = match cached.get(i) {
            Some(c) if still_valid(c, rec, metadata, last_access) => c.clone(),
            _ => build_value(rec, metadata, last_access)?,
        };
        count_mats(&mut counts, &locs, v.materializations(), true);
        values.push(v);
    }
    Ok((values, counts))
}

/// One atomic observation of the state. Never reaps and never changes anything observable
/// (it only refreshes the manager's private [`SnapshotCache`]).
pub(crate) fn capture(
    st: &mut State,
    manager_id: u64,
    memory: &fhelium_cuda::Memory,
    available_devices: Vec<fhelium_residency::ResidencyLocation>,
    mut facts: Option<&mut PolicyFacts>,
) -> Result<ResidencySnapshot> {
    let policy = facts.as_deref();
    let previous = if policy.is_some() {
        st.snapshot_cache.with_facts.take()
    } else {
        st.snapshot_cache.plain.take()
    };
    // Same state version, plain flavour: nothing a snapshot shows has changed.
    let same_version = policy.is_none()
        && previous
            .as_ref()
            .is_some_and(|p| p.snapshot.state_version() == st.version);
    let (values, counts) = match &previous {
        Some(p) if same_version && !cfg!(debug_assertions) => (
            p.snapshot.values().to_vec(),
            counts_of(&p.snapshot, st.locations.len()),
        ),
        _ => current_values(st, previous.as_ref(), policy)?,
    };
    if cfg!(debug_assertions) && same_version {
        // Debug builds check the claim the release fast path relies on.
        let reused = previous.as_ref().map_or(&[][..], |p| p.snapshot.values());
        debug_assert!(
            values.len() == reused.len()
                && values
                    .iter()
                    .zip(reused)
                    .all(|(a, b)| a.shares_parts_with(b)),
            "a value changed without a state_version bump"
        );
    }
    let allocated = |l: fhelium_residency::ResidencyLocation| {
        if l.is_device() {
            memory.usage(&l).map(|u| u.allocated_bytes)
        } else {
            None
        }
    };
    let mut locations = Vec::with_capacity(st.locations.len());
    for (l, c) in st.locations.iter().zip(&counts) {
        let p = ResidencyLocationSnapshotParts {
            location: l.location,
            budget_bytes: l.budget,
            used_bytes: l.used,
            reserved_bytes: l.reserved,
            peak_used_bytes: l.peak_used,
            peak_charged_bytes: l.peak_charged,
            value_count: c[0],
            reservation_count: count(
                st.reservations
                    .values()
                    .filter(|r| r.location == l.location)
                    .count(),
            ),
            use_count: c[1],
            hold_count: c[2],
            pending_event_count: c[3],
            allocator_allocated_bytes: allocated(l.location),
            allocator_reserved_bytes: None,
        };
        locations.push(ResidencyLocationSnapshot::new(p)?);
    }
    let reservations = st
        .reservations
        .values()
        .map(|r| MemoryReservation::new(r.location, r.nbytes, &r.label))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let parts = ResidencySnapshotParts {
        manager_id,
        state_version: st.version,
        values,
        locations,
        reservations,
        captured_at_ns: now_ns(),
        available_devices: Some(available_devices),
    };
    // The manager keeps the sums, ids and keys consistent under its lock, and only ever
    // appends values (debug builds re-check everything).
    let snapshot = match &previous {
        Some(p) => ResidencySnapshot::from_trusted_parts_reusing(parts, &p.snapshot)?,
        None => ResidencySnapshot::from_trusted_parts(parts)?,
    };
    // Keep the newest snapshot for the next capture; at an unchanged version the previous one
    // serves as well and costs nothing to keep.
    let keep = match previous {
        Some(p) if same_version => p,
        _ => Cached {
            snapshot: snapshot.clone(),
            edits: st.edits,
            facts_id: policy.map(|f| f.id),
        },
    };
    // The cached snapshot now reflects every logged facts change.
    if let Some(f) = facts.as_deref_mut() {
        f.changed.clear();
        f.overflowed = false;
    }
    if facts.is_some() {
        st.snapshot_cache.with_facts = Some(keep);
    } else {
        st.snapshot_cache.plain = Some(keep);
    }
    Ok(snapshot)
}

impl crate::ResidencyManager {
    /// One atomic, value-free observation of the manager (spec 1.11): values in registration
    /// order (discarded ones included), locations in registration order with budget, used,
    /// reserved, peaks and counts, and reservations in creation order.
    ///
    /// Taking a snapshot has **no side effect**: completed consumer events are not reaped, so
    /// `pending_event_count` counts every released device lease not yet reaped by
    /// [`crate::ResidencyManager::poll`] or a mutating call (docs/decisions/0201).
    ///
    /// # Errors
    /// [`crate::RuntimeError::Closed`], [`crate::RuntimeError::Reentrancy`].
    pub fn snapshot(&self) -> Result<ResidencySnapshot> {
        let mut st = self.inner.open("snapshot")?;
        capture(
            &mut st,
            self.inner.id,
            &self.inner.memory,
            self.device_locations(),
            None,
        )
    }

    /// A snapshot carrying the controller's policy facts.
    pub(crate) fn snapshot_with(&self, facts: &mut PolicyFacts) -> Result<ResidencySnapshot> {
        let mut st = self.inner.open("snapshot")?;
        capture(
            &mut st,
            self.inner.id,
            &self.inner.memory,
            self.device_locations(),
            Some(facts),
        )
    }

    pub(crate) fn device_locations(&self) -> Vec<fhelium_residency::ResidencyLocation> {
        self.inner
            .memory
            .locations()
            .into_iter()
            .filter(|l| l.is_device())
            .collect()
    }
}
