//! Producing the model's snapshot types from the manager's state (spec 1.11).

use fhelium_residency::{
    MaterializationSnapshot, MemoryReservation, ResidencyLocationSnapshot,
    ResidencyLocationSnapshotParts, ResidencySnapshot, ResidencySnapshotParts, ResidencySource,
    ResidencyValueSnapshot, ResidencyValueSnapshotParts,
};

use crate::error::Result;
use crate::manager::now_ns;
use crate::state::State;

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Controller-side facts recorded in the value entries of a snapshot.
#[derive(Debug, Default, Clone)]
pub(crate) struct PolicyFacts {
    pub metadata: std::collections::HashMap<
        fhelium_residency::ResidencyHandle,
        fhelium_residency::ResidencyPolicyMetadata,
    >,
    pub recency: fhelium_residency::ResidencyRecency,
}

/// One atomic observation of the state. Never reaps, never mutates.
pub(crate) fn capture(
    st: &State,
    manager_id: u64,
    memory: &fhelium_cuda::Memory,
    available_devices: Vec<fhelium_residency::ResidencyLocation>,
    policy: Option<&PolicyFacts>,
) -> Result<ResidencySnapshot> {
    // Per-location counts, gathered in the same single pass over the values (locations are
    // few: a linear scan over a compact array finds a materialization's slot).
    let locs: Vec<fhelium_residency::ResidencyLocation> =
        st.locations.iter().map(|l| l.location).collect();
    let mut counts = vec![[0u32; 4]; locs.len()];
    let mut values = Vec::with_capacity(st.values.len());
    for rec in &st.values {
        let mut parts = ResidencyValueSnapshotParts::new(rec.handle.clone(), rec.spec.clone());
        parts.discarded = rec.discarded;
        if let Some(p) = policy {
            if let Some(m) = p.metadata.get(&rec.handle) {
                parts.policy_metadata = m.clone();
            }
            parts.last_access_epoch = p.recency.get(&rec.handle);
        }
        parts.source = rec.source_location.map(ResidencySource::new);
        let mut mats = Vec::with_capacity(rec.mats.len());
        for m in &rec.mats {
            let (uses, holds, pending) = (
                count(m.uses.len()),
                count(m.holds.len()),
                count(m.pending.len()),
            );
            if let Some(c) = locs
                .iter()
                .position(|l| *l == m.location)
                .and_then(|i| counts.get_mut(i))
            {
                c[0] += 1;
                c[1] += uses;
                c[2] += holds;
                c[3] += pending;
            }
            mats.push(
                MaterializationSnapshot::new(
                    m.location,
                    rec.spec.logical_nbytes(),
                    m.storage_nbytes,
                    m.charged_nbytes,
                )?
                .with_protection(uses, holds, pending),
            );
        }
        parts.materializations = mats;
        // The manager maintains the value invariants under its lock (debug builds re-check).
        values.push(ResidencyValueSnapshot::from_trusted_parts(parts)?);
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
    // The manager keeps the sums, ids and keys consistent under its lock (debug builds
    // re-check everything).
    Ok(ResidencySnapshot::from_trusted_parts(
        ResidencySnapshotParts {
            manager_id,
            state_version: st.version,
            values,
            locations,
            reservations,
            captured_at_ns: now_ns(),
            available_devices: Some(available_devices),
        },
    )?)
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
        let st = self.inner.open("snapshot")?;
        capture(
            &st,
            self.inner.id,
            &self.inner.memory,
            self.device_locations(),
            None,
        )
    }

    /// A snapshot carrying the controller's policy facts.
    pub(crate) fn snapshot_with(&self, facts: &PolicyFacts) -> Result<ResidencySnapshot> {
        let st = self.inner.open("snapshot")?;
        capture(
            &st,
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
