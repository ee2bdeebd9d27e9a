//! Transfer cost estimates between locations and the cost-ranked fallback policy
//! [`CostAwareTieredLRU`] (an extension of spec 1.13: docs/decisions/0102).
//!
//! FHElium's policy takes fallback tiers exactly as configured and never infers them. With
//! several devices, where a sole copy should go when its device is full depends on the links:
//! a peer device over NVLink is usually far cheaper than the host over PCIe, unless the two
//! devices have no peer access (then a device-to-device copy is staged through pinned host
//! memory and costs both hops). [`TransferCostModel`] estimates one copy from link bandwidth
//! and latency; [`CostAwareTieredLRU`] orders each configured tier list by that estimate and
//! explains every move it makes a decision take ([`CostAwareTieredLRU::explain_decision`]).
//!
//! The estimates are pure numbers supplied by the caller (or the defaults below); the model
//! never measures anything, so a decision stays deterministic.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::decision::{EvictionReason, ResidencyDecision};
use crate::error::ModelError;
use crate::location::ResidencyLocation;
use crate::model::{ResidencyAction, ResidencyHandle};
use crate::policy::{
    DeterministicTieredLRU, PolicyConfig, ResidencyEvictionCandidate, ResidencyPolicy,
};
use crate::text::format_bytes;

/// The link a copy between two locations travels over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TransferLink {
    /// Source and destination are the same location: nothing moves.
    SameLocation,
    /// Host to host (pageable and pinned, either way): a memory copy.
    HostToHost,
    /// Between a device and page-locked host memory (either direction).
    DevicePinnedHost,
    /// Between a device and pageable host memory (either direction; the driver stages it).
    DevicePageableHost,
    /// Device to another device with peer access (NVLink or PCIe peer-to-peer).
    PeerDevice,
    /// Device to another device without peer access: two hops through pinned host memory.
    StagedThroughHost,
}

impl TransferLink {
    /// The stable diagnostic name (`same-location`, `host-to-host`, `device-pinned-host`,
    /// `device-pageable-host`, `peer-device`, `staged-through-host`).
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::SameLocation => "same-location",
            Self::HostToHost => "host-to-host",
            Self::DevicePinnedHost => "device-pinned-host",
            Self::DevicePageableHost => "device-pageable-host",
            Self::PeerDevice => "peer-device",
            Self::StagedThroughHost => "staged-through-host",
        }
    }
}

impl fmt::Display for TransferLink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Bandwidth and fixed latency of one link kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "LinkCostRepr")]
pub struct LinkCost {
    bytes_per_second: u64,
    latency_ns: u64,
}

#[derive(Deserialize)]
struct LinkCostRepr {
    bytes_per_second: u64,
    latency_ns: u64,
}

impl TryFrom<LinkCostRepr> for LinkCost {
    type Error = ModelError;
    fn try_from(r: LinkCostRepr) -> Result<Self, ModelError> {
        Self::new(r.bytes_per_second, r.latency_ns)
    }
}

impl LinkCost {
    /// A link moving `bytes_per_second` after a fixed `latency_ns` per copy.
    ///
    /// # Errors
    /// [`ModelError::InvalidCostModel`] when `bytes_per_second` is 0.
    pub fn new(bytes_per_second: u64, latency_ns: u64) -> Result<Self, ModelError> {
        if bytes_per_second == 0 {
            return Err(ModelError::InvalidCostModel {
                detail: "a link's bandwidth must be greater than 0 bytes per second".to_owned(),
            });
        }
        Ok(Self {
            bytes_per_second,
            latency_ns,
        })
    }
    /// Bandwidth in bytes per second.
    #[must_use]
    pub const fn bytes_per_second(&self) -> u64 {
        self.bytes_per_second
    }
    /// Fixed latency per copy in nanoseconds.
    #[must_use]
    pub const fn latency_ns(&self) -> u64 {
        self.latency_ns
    }
    /// `latency + nbytes / bandwidth`, in nanoseconds (rounded up, saturating).
    #[must_use]
    pub fn nanoseconds(&self, nbytes: u64) -> u64 {
        let transfer =
            (u128::from(nbytes) * 1_000_000_000).div_ceil(u128::from(self.bytes_per_second));
        u64::try_from(transfer)
            .unwrap_or(u64::MAX)
            .saturating_add(self.latency_ns)
    }
}

const GB: u64 = 1_000_000_000;

/// Copy-time estimates between locations, from one [`LinkCost`] per link kind plus the device
/// pairs that lack peer access.
///
/// Two devices are peers when they are of the same kind (`cuda:a`/`cuda:b`, `sim:a`/`sim:b`)
/// and the pair was not marked with [`Self::without_peer_access`]; a CUDA device and a
/// simulated one never are. A copy between devices that are not peers is staged through pinned
/// host memory and costs a device-to-pinned hop plus a pinned-to-device hop.
///
/// Defaults (estimates for an H200 host, to be replaced by measured figures where they exist):
/// host-to-host 10 GB/s + 1 us; device/pinned 50 GB/s + 10 us; device/pageable 12 GB/s + 20 us;
/// peer device 300 GB/s + 10 us.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TransferCostModel {
    host_to_host: LinkCost,
    device_pinned_host: LinkCost,
    device_pageable_host: LinkCost,
    peer_device: LinkCost,
    /// Unordered device pairs without peer access, each stored (smaller, larger).
    #[serde(default)]
    no_peer_access: Vec<(ResidencyLocation, ResidencyLocation)>,
}

impl Default for TransferCostModel {
    fn default() -> Self {
        let link = |bps, latency_ns| LinkCost {
            bytes_per_second: bps,
            latency_ns,
        };
        Self {
            host_to_host: link(10 * GB, 1_000),
            device_pinned_host: link(50 * GB, 10_000),
            device_pageable_host: link(12 * GB, 20_000),
            peer_device: link(300 * GB, 10_000),
            no_peer_access: Vec::new(),
        }
    }
}

impl TransferCostModel {
    /// The default estimates (see the type's documentation).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The same model with `link`'s cost replaced.
    ///
    /// # Errors
    /// [`ModelError::InvalidCostModel`] for [`TransferLink::SameLocation`] (free by definition)
    /// and [`TransferLink::StagedThroughHost`] (derived from the two hops).
    pub fn with_link(mut self, link: TransferLink, cost: LinkCost) -> Result<Self, ModelError> {
        let slot = match link {
            TransferLink::HostToHost => &mut self.host_to_host,
            TransferLink::DevicePinnedHost => &mut self.device_pinned_host,
            TransferLink::DevicePageableHost => &mut self.device_pageable_host,
            TransferLink::PeerDevice => &mut self.peer_device,
            TransferLink::SameLocation | TransferLink::StagedThroughHost => {
                return Err(ModelError::InvalidCostModel {
                    detail: format!("the cost of link {link} is derived, not configured"),
                })
            }
        };
        *slot = cost;
        Ok(self)
    }

    /// The same model with devices `a` and `b` marked as having no peer access (copies between
    /// them are staged through pinned host memory).
    ///
    /// # Errors
    /// [`ModelError::InvalidCostModel`] unless `a` and `b` are two different device locations.
    pub fn without_peer_access(
        mut self,
        a: ResidencyLocation,
        b: ResidencyLocation,
    ) -> Result<Self, ModelError> {
        if !a.is_device() || !b.is_device() || a == b {
            return Err(ModelError::InvalidCostModel {
                detail: format!(
                    "peer access is a property of two different devices, not of {a} and {b}"
                ),
            });
        }
        let pair = (a.min(b), a.max(b));
        if !self.no_peer_access.contains(&pair) {
            self.no_peer_access.push(pair);
            self.no_peer_access.sort_unstable();
        }
        Ok(self)
    }

    /// The configured cost of `link` (`None` for the derived links).
    #[must_use]
    pub const fn link_cost(&self, link: TransferLink) -> Option<LinkCost> {
        match link {
            TransferLink::HostToHost => Some(self.host_to_host),
            TransferLink::DevicePinnedHost => Some(self.device_pinned_host),
            TransferLink::DevicePageableHost => Some(self.device_pageable_host),
            TransferLink::PeerDevice => Some(self.peer_device),
            TransferLink::SameLocation | TransferLink::StagedThroughHost => None,
        }
    }

    /// True when `a` and `b` are different devices of one kind not marked otherwise.
    #[must_use]
    pub fn peers(&self, a: ResidencyLocation, b: ResidencyLocation) -> bool {
        a != b
            && a.is_device()
            && b.is_device()
            && a.kind() == b.kind()
            && !self.no_peer_access.contains(&(a.min(b), a.max(b)))
    }

    /// The link a copy from `from` to `to` uses.
    #[must_use]
    pub fn link(&self, from: ResidencyLocation, to: ResidencyLocation) -> TransferLink {
        use ResidencyLocation::{PageableHost, PinnedHost};
        if from == to {
            return TransferLink::SameLocation;
        }
        match (from.is_device(), to.is_device()) {
            (false, false) => TransferLink::HostToHost,
            (true, true) if self.peers(from, to) => TransferLink::PeerDevice,
            (true, true) => TransferLink::StagedThroughHost,
            _ => {
                let host = if from.is_host() { from } else { to };
                match host {
                    PinnedHost => TransferLink::DevicePinnedHost,
                    PageableHost | ResidencyLocation::Cuda(_) | ResidencyLocation::Sim(_) => {
                        TransferLink::DevicePageableHost
                    }
                }
            }
        }
    }

    /// The estimated time of one copy of `nbytes` from `from` to `to`.
    #[must_use]
    pub fn estimate(
        &self,
        from: ResidencyLocation,
        to: ResidencyLocation,
        nbytes: u64,
    ) -> TransferEstimate {
        let link = self.link(from, to);
        let nanoseconds = match link {
            TransferLink::SameLocation => 0,
            TransferLink::StagedThroughHost => {
                let hop = self.device_pinned_host.nanoseconds(nbytes);
                hop.saturating_add(hop)
            }
            TransferLink::HostToHost => self.host_to_host.nanoseconds(nbytes),
            TransferLink::DevicePinnedHost => self.device_pinned_host.nanoseconds(nbytes),
            TransferLink::DevicePageableHost => self.device_pageable_host.nanoseconds(nbytes),
            TransferLink::PeerDevice => self.peer_device.nanoseconds(nbytes),
        };
        TransferEstimate {
            from,
            to,
            nbytes,
            link,
            nanoseconds,
        }
    }

    /// `(key, value)` pairs identifying the configuration (recorded in decisions).
    fn identity(&self) -> String {
        let l = |c: &LinkCost| format!("{}B/s+{}ns", c.bytes_per_second, c.latency_ns);
        let pairs: Vec<String> = self
            .no_peer_access
            .iter()
            .map(|(a, b)| format!("{a}/{b}"))
            .collect();
        format!(
            "host-to-host={};device-pinned-host={};device-pageable-host={};peer-device={};no-peer-access={}",
            l(&self.host_to_host),
            l(&self.device_pinned_host),
            l(&self.device_pageable_host),
            l(&self.peer_device),
            pairs.join(",")
        )
    }
}

/// One estimated copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TransferEstimate {
    /// Where the copy starts.
    pub from: ResidencyLocation,
    /// Where it lands.
    pub to: ResidencyLocation,
    /// Bytes moved (the value's charge).
    pub nbytes: u64,
    /// The link it uses.
    pub link: TransferLink,
    /// Estimated duration in nanoseconds.
    pub nanoseconds: u64,
}

impl fmt::Display for TransferEstimate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} -> {} {} over {}: {}",
            self.from,
            self.to,
            format_bytes(self.nbytes),
            self.link,
            format_ns(self.nanoseconds)
        )
    }
}

fn format_ns(ns: u64) -> String {
    if ns >= 1_000_000 {
        format!("{:.2} ms", ns as f64 / 1e6)
    } else {
        format!("{:.1} us", ns as f64 / 1e3)
    }
}

/// [`DeterministicTieredLRU`]'s candidate order with each location's fallback tiers ranked by
/// a [`TransferCostModel`] (cheapest copy first, ties in configured order).
///
/// The tiers name the *allowed* destinations per source location, as for
/// [`DeterministicTieredLRU`] (never inferred); the cost model only orders them. The order is
/// fixed at construction for `reference_nbytes` (the trait hands the planner one list per
/// location, not one per value size); [`Self::explain_decision`] re-estimates each move at the
/// value's own size and says when that size would have ranked the tiers differently.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(
    try_from = "CostAwareTieredLRUConfig",
    into = "CostAwareTieredLRUConfig"
)]
pub struct CostAwareTieredLRU {
    config: CostAwareTieredLRUConfig,
    /// Per source: the destinations ranked by estimated cost at `reference_nbytes`.
    ranked: Vec<(ResidencyLocation, Vec<ResidencyLocation>)>,
}

/// The serde/config form of [`CostAwareTieredLRU`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CostAwareTieredLRUConfig {
    /// `(source, allowed destinations)` in insertion order (as configured, before ranking).
    pub fallback_tiers: Vec<(ResidencyLocation, Vec<ResidencyLocation>)>,
    /// The link estimates.
    pub costs: TransferCostModel,
    /// The copy size the tiers are ranked at.
    pub reference_nbytes: u64,
}

impl TryFrom<CostAwareTieredLRUConfig> for CostAwareTieredLRU {
    type Error = ModelError;
    fn try_from(c: CostAwareTieredLRUConfig) -> Result<Self, ModelError> {
        Self::new(c.fallback_tiers, c.costs, c.reference_nbytes)
    }
}

impl From<CostAwareTieredLRU> for CostAwareTieredLRUConfig {
    fn from(p: CostAwareTieredLRU) -> Self {
        p.config
    }
}

/// Ranks `dests` for copies of `nbytes` from `source`: cheapest first, ties in given order.
fn rank(
    costs: &TransferCostModel,
    source: ResidencyLocation,
    dests: &[ResidencyLocation],
    nbytes: u64,
) -> Vec<TransferEstimate> {
    let mut est: Vec<(usize, TransferEstimate)> = dests
        .iter()
        .map(|d| costs.estimate(source, *d, nbytes))
        .enumerate()
        .collect();
    est.sort_by_key(|(i, e)| (e.nanoseconds, *i));
    est.into_iter().map(|(_, e)| e).collect()
}

impl CostAwareTieredLRU {
    /// The policy name.
    pub const NAME: &'static str = "cost-aware-tiered-lru";

    /// A policy with allowed fallback destinations per source location, ranked by `costs` at
    /// `reference_nbytes`, e.g. `[(cuda:0, vec![pinned-host, cuda:1])]` ranks `cuda:1` first
    /// when the two devices are peers.
    ///
    /// # Errors
    /// The tier errors of [`DeterministicTieredLRU::with_fallback_tiers`]
    /// ([`ModelError::TierContainsSource`], [`ModelError::DuplicateTierDestination`],
    /// [`ModelError::DuplicateTierSource`]); [`ModelError::InvalidCostModel`] when
    /// `reference_nbytes` is 0.
    pub fn new(
        tiers: impl IntoIterator<Item = (ResidencyLocation, Vec<ResidencyLocation>)>,
        costs: TransferCostModel,
        reference_nbytes: u64,
    ) -> Result<Self, ModelError> {
        let checked = DeterministicTieredLRU::with_fallback_tiers(tiers)?;
        if reference_nbytes == 0 {
            return Err(ModelError::InvalidCostModel {
                detail: "reference_nbytes must be greater than 0".to_owned(),
            });
        }
        let fallback_tiers = checked.fallback_tiers().to_vec();
        let ranked = fallback_tiers
            .iter()
            .map(|(s, ds)| {
                let order = rank(&costs, *s, ds, reference_nbytes);
                (*s, order.into_iter().map(|e| e.to).collect())
            })
            .collect();
        Ok(Self {
            config: CostAwareTieredLRUConfig {
                fallback_tiers,
                costs,
                reference_nbytes,
            },
            ranked,
        })
    }

    /// The configuration (tiers as configured, costs, reference size).
    #[must_use]
    pub const fn config(&self) -> &CostAwareTieredLRUConfig {
        &self.config
    }

    /// The cost model.
    #[must_use]
    pub const fn costs(&self) -> &TransferCostModel {
        &self.config.costs
    }

    /// Every allowed destination for a copy of `nbytes` from `source` with its estimate,
    /// cheapest first (ties in configured order); empty when `source` has no tiers.
    #[must_use]
    pub fn ranked_fallbacks(
        &self,
        source: ResidencyLocation,
        nbytes: u64,
    ) -> Vec<TransferEstimate> {
        let dests = self
            .config
            .fallback_tiers
            .iter()
            .find(|(s, _)| *s == source)
            .map_or(&[][..], |(_, d)| d.as_slice());
        rank(&self.config.costs, source, dests, nbytes)
    }

    /// Why each move of `decision` went where it went: one entry per reclaim or enter action
    /// that moves a value between locations, with the chosen copy's estimate and every
    /// alternative the tiers allowed. Drops are not listed (they copy nothing).
    #[must_use]
    pub fn explain_decision(&self, decision: &ResidencyDecision) -> Vec<MoveExplanation> {
        let mut out = Vec::new();
        let reclaim = decision
            .evictions()
            .iter()
            .map(|e| (&e.action, Some(e.reason)));
        let enter = decision.plan().enter().iter().map(|a| (a, None));
        for (action, reason) in reclaim.chain(enter) {
            let ResidencyAction::MoveResident {
                handle,
                to: location,
                from: Some(from),
            } = action
            else {
                continue;
            };
            let nbytes = decision
                .explanation()
                .actions
                .iter()
                .find(|e| e.action == *action)
                .map_or(0, |e| e.logical_nbytes.max(e.storage_nbytes));
            let alternatives = self.ranked_fallbacks(*from, nbytes);
            let kind = match reason {
                None => MoveKind::Requested,
                Some(_) if alternatives.iter().any(|e| e.to == *location) => MoveKind::Fallback,
                Some(_) => MoveKind::RequestedDestination,
            };
            let reference_order: Vec<ResidencyLocation> = self.fallback_locations(*from).to_vec();
            let size_order: Vec<ResidencyLocation> = alternatives.iter().map(|e| e.to).collect();
            out.push(MoveExplanation {
                handle: handle.clone(),
                from: *from,
                chosen: self.config.costs.estimate(*from, *location, nbytes),
                kind,
                alternatives,
                ranked_differently_at_this_size: reference_order != size_order,
            });
        }
        out
    }
}

impl ResidencyPolicy for CostAwareTieredLRU {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn config_identity(&self) -> PolicyConfig {
        let tiers = self
            .ranked
            .iter()
            .map(|(s, ds)| {
                let ds: Vec<String> = ds.iter().map(ToString::to_string).collect();
                format!("{s}=>{}", ds.join(","))
            })
            .collect::<Vec<_>>()
            .join(";");
        vec![
            ("fallback_tiers".to_owned(), tiers),
            ("costs".to_owned(), self.config.costs.identity()),
            (
                "reference_nbytes".to_owned(),
                self.config.reference_nbytes.to_string(),
            ),
        ]
    }

    fn fallback_locations(&self, location: ResidencyLocation) -> &[ResidencyLocation] {
        self.ranked
            .iter()
            .find(|(s, _)| *s == location)
            .map_or(&[], |(_, d)| d.as_slice())
    }

    fn order_candidates(&self, candidates: &[ResidencyEvictionCandidate<'_>]) -> Vec<usize> {
        DeterministicTieredLRU::new().order_candidates(candidates)
    }

    fn orders_by_candidate_key(&self) -> bool {
        true
    }
}

/// Why a move went where it went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MoveKind {
    /// An enter action: the request itself asks for the value at the destination.
    Requested,
    /// A reclaim move to another location the request requires for the same value (spec 3.7
    /// 4.1(a), tried before any tier).
    RequestedDestination,
    /// A reclaim move to one of the policy's (cost-ranked) fallback tiers.
    Fallback,
}

/// One move of a decision with its cost evidence ([`CostAwareTieredLRU::explain_decision`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveExplanation {
    /// The moved value.
    pub handle: ResidencyHandle,
    /// Where it came from.
    pub from: ResidencyLocation,
    /// The chosen copy.
    pub chosen: TransferEstimate,
    /// Why this destination.
    pub kind: MoveKind,
    /// Every destination the tiers allow from `from`, cheapest first, at the value's size.
    pub alternatives: Vec<TransferEstimate>,
    /// True when ranking at this value's size orders the tiers differently from the reference
    /// size the planner used.
    pub ranked_differently_at_this_size: bool,
}

impl fmt::Display for MoveExplanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.kind {
            MoveKind::Requested => "requested by the request",
            MoveKind::RequestedDestination => "another location the request requires for it",
            MoveKind::Fallback => "cheapest fallback tier with room",
        };
        write!(f, "move {} {} ({why})", self.handle, self.chosen)?;
        if !self.alternatives.is_empty() {
            let alts: Vec<String> = self
                .alternatives
                .iter()
                .map(|e| format!("{} {}", e.to, format_ns(e.nanoseconds)))
                .collect();
            write!(f, "; tiers by cost: {}", alts.join(", "))?;
        }
        if self.ranked_differently_at_this_size {
            f.write_str("; note: at this size the tiers would rank differently")?;
        }
        Ok(())
    }
}

impl MoveExplanation {
    /// The eviction reason FHElium's wording gives this move, when it is a reclaim move.
    #[must_use]
    pub const fn reason(&self) -> Option<EvictionReason> {
        match self.kind {
            MoveKind::Requested => None,
            MoveKind::RequestedDestination | MoveKind::Fallback => {
                Some(EvictionReason::SoleMaterializationMoved {
                    destination: self.chosen.to,
                })
            }
        }
    }
}
