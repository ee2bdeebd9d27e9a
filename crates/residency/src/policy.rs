//! Eviction policy: the [`ResidencyPolicy`] trait and the built-in [`DeterministicTieredLRU`]
//! (spec 1.13 and 3.6).

use crate::hash::FxHashMap;
use std::cmp::Ordering;

use serde::{Deserialize, Serialize};

use crate::error::ModelError;
use crate::location::ResidencyLocation;
use crate::model::ResidencyHandle;

/// Controller-side hints for one handle: higher `priority` means "retain longer"; `stable_key`
/// is an application tie-breaker and diagnostic id (spec 1.13).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "MetadataRepr")]
pub struct ResidencyPolicyMetadata {
    priority: i64,
    stable_key: Option<String>,
}

#[derive(Deserialize)]
struct MetadataRepr {
    #[serde(default)]
    priority: i64,
    #[serde(default)]
    stable_key: Option<String>,
}

impl TryFrom<MetadataRepr> for ResidencyPolicyMetadata {
    type Error = ModelError;
    fn try_from(r: MetadataRepr) -> Result<Self, ModelError> {
        Self::new(r.priority, r.stable_key.as_deref())
    }
}

impl ResidencyPolicyMetadata {
    /// Metadata with a priority and an optional stable key.
    ///
    /// # Errors
    /// [`ModelError::EmptyStableKey`] when the key is empty or blank.
    pub fn new(priority: i64, stable_key: Option<&str>) -> Result<Self, ModelError> {
        if stable_key.is_some_and(|k| k.trim().is_empty()) {
            return Err(ModelError::EmptyStableKey);
        }
        Ok(Self {
            priority,
            stable_key: stable_key.map(str::to_owned),
        })
    }
    /// The retention priority (default 0; lower is evicted first).
    #[must_use]
    pub const fn priority(&self) -> i64 {
        self.priority
    }
    /// The optional stable key.
    #[must_use]
    pub fn stable_key(&self) -> Option<&str> {
        self.stable_key.as_deref()
    }
}

/// One invariant-filtered, unprotected materialization offered to a policy (spec 1.13).
///
/// Borrowed from the snapshot so that offering a thousand candidates copies nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ResidencyEvictionCandidate<'a> {
    /// The value.
    pub handle: &'a ResidencyHandle,
    /// Where the candidate materialization lives.
    pub location: ResidencyLocation,
    /// Its charge.
    pub charged_nbytes: u64,
    /// The value's position among all registered handles (discarded ones included).
    pub registration_index: u64,
    /// The last access epoch, `None` when never accessed.
    pub last_access_epoch: Option<u64>,
    /// The value's policy metadata.
    pub metadata: &'a ResidencyPolicyMetadata,
}

/// A policy's configuration identity: `(key, value)` pairs recorded in decisions.
pub type PolicyConfig = Vec<(String, String)>;

/// An eviction policy: ranks legal candidates and names fallback tiers. It never decides
/// legality; the planner offers only invariant-valid, unprotected candidates.
pub trait ResidencyPolicy {
    /// A stable, non-empty diagnostic name.
    fn name(&self) -> &str;
    /// The configuration identity, recorded in decisions and compared at admission.
    fn config_identity(&self) -> PolicyConfig;
    /// Ordered spill destinations configured for `location` (empty when none).
    fn fallback_locations(&self, location: ResidencyLocation) -> &[ResidencyLocation];
    /// The eviction order as a permutation of `0..candidates.len()` (first = evict first).
    /// Must be deterministic and pure; the planner rejects a non-permutation.
    fn order_candidates(&self, candidates: &[ResidencyEvictionCandidate<'_>]) -> Vec<usize>;
    /// True when the order is a sort by a per-candidate key, so that ordering a subset gives
    /// the same relative order as ordering the whole set. The planner then orders each
    /// location's candidates once per decision and filters, instead of re-ordering at every
    /// search node. The default (`false`) is always correct.
    fn orders_by_candidate_key(&self) -> bool {
        false
    }
}

/// The built-in deterministic policy (spec 1.13).
///
/// Order (evicted first): lower priority; never accessed, then older epoch; stable-keyed before
/// un-keyed; stable key lexicographic; registration order. Fallback tiers are configured per
/// source location and never inferred.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(
    try_from = "DeterministicTieredLRUConfig",
    into = "DeterministicTieredLRUConfig"
)]
pub struct DeterministicTieredLRU {
    tiers: Vec<(ResidencyLocation, Vec<ResidencyLocation>)>,
}

/// The serde/config form of [`DeterministicTieredLRU`]: source location -> ordered
/// destinations, in insertion order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeterministicTieredLRUConfig {
    /// `(source, destinations)` entries in insertion order.
    #[serde(default)]
    pub fallback_tiers: Vec<(ResidencyLocation, Vec<ResidencyLocation>)>,
}

impl TryFrom<DeterministicTieredLRUConfig> for DeterministicTieredLRU {
    type Error = ModelError;
    fn try_from(c: DeterministicTieredLRUConfig) -> Result<Self, ModelError> {
        Self::with_fallback_tiers(c.fallback_tiers)
    }
}

impl From<DeterministicTieredLRU> for DeterministicTieredLRUConfig {
    fn from(p: DeterministicTieredLRU) -> Self {
        Self {
            fallback_tiers: p.tiers,
        }
    }
}

impl DeterministicTieredLRU {
    /// The policy name.
    pub const NAME: &'static str = "deterministic-tiered-lru";

    /// The default policy: no fallback tiers.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A policy with fallback tiers, e.g. `[(cuda:0, vec![pinned-host, pageable-host])]`.
    ///
    /// # Errors
    /// [`ModelError::TierContainsSource`], [`ModelError::DuplicateTierDestination`],
    /// [`ModelError::DuplicateTierSource`].
    pub fn with_fallback_tiers(
        tiers: impl IntoIterator<Item = (ResidencyLocation, Vec<ResidencyLocation>)>,
    ) -> Result<Self, ModelError> {
        let mut out: Vec<(ResidencyLocation, Vec<ResidencyLocation>)> = Vec::new();
        for (source, dests) in tiers {
            if out.iter().any(|(s, _)| *s == source) {
                return Err(ModelError::DuplicateTierSource { location: source });
            }
            for (i, d) in dests.iter().enumerate() {
                if *d == source {
                    return Err(ModelError::TierContainsSource { location: source });
                }
                if dests[..i].contains(d) {
                    return Err(ModelError::DuplicateTierDestination {
                        location: source,
                        destination: *d,
                    });
                }
            }
            out.push((source, dests));
        }
        Ok(Self { tiers: out })
    }

    /// The configured tiers in insertion order.
    #[must_use]
    pub fn fallback_tiers(&self) -> &[(ResidencyLocation, Vec<ResidencyLocation>)] {
        &self.tiers
    }

    /// The policy's sort key for one candidate (ascending = evicted first).
    #[must_use]
    pub fn sort_key<'c>(c: &'c ResidencyEvictionCandidate<'_>) -> (i64, i128, u8, &'c str, u64) {
        (
            c.metadata.priority,
            c.last_access_epoch.map_or(-1, i128::from),
            u8::from(c.metadata.stable_key.is_none()),
            c.metadata.stable_key.as_deref().unwrap_or(""),
            c.registration_index,
        )
    }

    /// The policy's total order on two candidates.
    #[must_use]
    pub fn compare(
        a: &ResidencyEvictionCandidate<'_>,
        b: &ResidencyEvictionCandidate<'_>,
    ) -> Ordering {
        Self::sort_key(a).cmp(&Self::sort_key(b))
    }
}

impl ResidencyPolicy for DeterministicTieredLRU {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn config_identity(&self) -> PolicyConfig {
        let value = self
            .tiers
            .iter()
            .map(|(s, ds)| {
                let ds: Vec<String> = ds.iter().map(ToString::to_string).collect();
                format!("{s}=>{}", ds.join(","))
            })
            .collect::<Vec<_>>()
            .join(";");
        vec![("fallback_tiers".to_owned(), value)]
    }

    fn fallback_locations(&self, location: ResidencyLocation) -> &[ResidencyLocation] {
        self.tiers
            .iter()
            .find(|(s, _)| *s == location)
            .map_or(&[], |(_, d)| d.as_slice())
    }

    fn order_candidates(&self, candidates: &[ResidencyEvictionCandidate<'_>]) -> Vec<usize> {
        // Without stable keys (the common case) the key packs into two integers.
        if candidates.iter().all(|c| c.metadata.stable_key.is_none()) {
            let mut keyed: Vec<(i64, i128, u64, usize)> = Vec::with_capacity(candidates.len());
            keyed.extend(candidates.iter().enumerate().map(|(i, c)| {
                let (p, e, _, _, r) = Self::sort_key(c);
                (p, e, r, i)
            }));
            keyed.sort_unstable();
            return keyed.into_iter().map(|k| k.3).collect();
        }
        let mut keyed: Vec<_> = Vec::with_capacity(candidates.len());
        keyed.extend(
            candidates
                .iter()
                .enumerate()
                .map(|(i, c)| (Self::sort_key(c), i)),
        );
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, i)| i).collect()
    }

    fn orders_by_candidate_key(&self) -> bool {
        true
    }
}

/// The controller's last-access epochs per handle (only a completed `use` records accesses,
/// spec 7.1.2). Passed to [`crate::decide`]; when absent, the epochs recorded in the snapshot's
/// value entries are used.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(
    from = "Vec<(ResidencyHandle, u64)>",
    into = "Vec<(ResidencyHandle, u64)>"
)]
pub struct ResidencyRecency {
    epochs: FxHashMap<ResidencyHandle, u64>,
}

impl From<Vec<(ResidencyHandle, u64)>> for ResidencyRecency {
    fn from(v: Vec<(ResidencyHandle, u64)>) -> Self {
        Self {
            epochs: v.into_iter().collect(),
        }
    }
}

impl From<ResidencyRecency> for Vec<(ResidencyHandle, u64)> {
    fn from(r: ResidencyRecency) -> Self {
        let mut v: Self = r.epochs.into_iter().collect();
        v.sort();
        v
    }
}

impl ResidencyRecency {
    /// No accesses recorded.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }
    /// Records that `handle` was last accessed at `epoch`.
    pub fn record(&mut self, handle: ResidencyHandle, epoch: u64) {
        self.epochs.insert(handle, epoch);
    }
    /// The last access epoch of `handle`, `None` when never accessed.
    #[must_use]
    pub fn get(&self, handle: &ResidencyHandle) -> Option<u64> {
        self.epochs.get(handle).copied()
    }
    /// Number of handles with an epoch.
    #[must_use]
    pub fn len(&self) -> usize {
        self.epochs.len()
    }
    /// True when no access has been recorded.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.epochs.is_empty()
    }
}
