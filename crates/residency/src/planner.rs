//! The planner: [`decide`] (spec 3).
//!
//! A deterministic, bounded depth-first search with backtracking over tensor-free planning
//! states. Each search node re-simulates the whole ordered request (§3.4); on a capacity
//! failure it tries the policy-ordered legal reclaim transitions of every candidate (§3.6,
//! §3.7), resolving room at move destinations recursively (§3.8). Failed request states and
//! failed capacity resolutions are memoized by an exact signature of placement and accounting
//! (§3.9), and the expanded nodes are counted against the search-state limit.
//!
//! The lazy generators of the reference are continuation-passing functions here: a producer
//! hands each successor state to a callback, which answers `Break` to stop the enumeration.
//! That reproduces the reference's exact `explored_states`.
//!
//! Cost: a planning state is the snapshot plus a small overlay of changed materializations, so
//! cloning a state or computing its signature costs O(path length), never O(values).
//! Candidates at a location come from the snapshot's per-location index; with a policy that
//! orders by a per-candidate key they are ordered once per decision and filtered per node.

use crate::hash::{FxHashMap, FxHashSet};
use std::ops::ControlFlow;
use std::rc::Rc;

use crate::decision::{
    EvictionReason, ResidencyDecision, ResidencyDecisionParts, ResidencyEviction,
};
use crate::error::ModelError;
use crate::explain::explain;
use crate::location::ResidencyLocation;
use crate::model::{ReplicaMode, ResidencyAction};
use crate::plan::{ResidencyPlan, ResidencyRequest};
use crate::policy::{ResidencyEvictionCandidate, ResidencyPolicy, ResidencyRecency};
use crate::snapshot::{MaterializationSnapshot, ResidencySnapshot};

/// FHElium's default `search_state_limit`.
pub const DEFAULT_SEARCH_STATE_LIMIT: u64 = 100_000;

/// The deepest nesting of expanded search and capacity nodes; deeper searches end as
/// inconclusive ([`ModelError::SearchLimit`]) instead of exhausting the stack.
pub const MAX_SEARCH_DEPTH: u32 = 256;

/// Decides a plan for `request` on `snapshot` with [`DEFAULT_SEARCH_STATE_LIMIT`].
///
/// `recency` supplies the controller's last-access epochs; when `None`, each value's
/// `last_access_epoch` in the snapshot is used. The function is pure: the same inputs always
/// give the same decision.
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
/// - [`ModelError::ZeroSearchLimit`] for a limit of 0;
/// - [`ModelError::ForeignHandle`], [`ModelError::UnknownHandle`],
///   [`ModelError::DiscardedHandle`], [`ModelError::ExclusiveAtMultipleLocations`] from request
///   validation (§3.2);
/// - [`ModelError::SearchLimit`] when the limit is reached ("inconclusive");
/// - [`ModelError::Infeasible`] when the search is exhausted (proven infeasible) or the
///   chosen plan's dry run is infeasible (e.g. an unavailable device);
/// - [`ModelError::PolicyNotPermutation`] for a policy breaking its contract;
/// - [`ModelError::Unavailable`] for a requirement with neither materialization nor source.
pub fn decide_with_limit<P: ResidencyPolicy + ?Sized>(
    snapshot: &ResidencySnapshot,
    request: &ResidencyRequest,
    policy: &P,
    recency: Option<&ResidencyRecency>,
    search_state_limit: u64,
) -> Result<ResidencyDecision, ModelError> {
    if search_state_limit == 0 {
        return Err(ModelError::ZeroSearchLimit);
    }
    let requirements = validate_request(snapshot, request)?;
    let mut planner = Planner {
        snap: snapshot,
        request,
        policy,
        recency,
        requirements,
        limit: search_state_limit,
        explored: 0,
        failed_requests: FxHashSet::default(),
        failed_capacities: FxHashSet::default(),
        searching: FxHashSet::default(),
        resolving: FxHashSet::default(),
        cuts: 0,
        depth: 0,
        order_cache: FxHashMap::default(),
    };
    let initial = State::new(snapshot);
    let (state, enter) = match planner.search(initial) {
        Ok(found) => found,
        Err(SearchError::Planning(detail)) => {
            return Err(ModelError::Infeasible {
                request: request.name().to_owned(),
                detail,
            })
        }
        Err(SearchError::Fatal(e)) => return Err(e),
    };
    let evictions = state.evictions();
    let plan = ResidencyPlan::new(request.name())?
        .with_reclaim(evictions.iter().map(|e| e.action.clone()))
        .with_enter(enter)
        .with_reservations(request.reservations().iter().cloned());
    let explanation = explain(snapshot, &plan);
    if !explanation.feasible {
        return Err(ModelError::Infeasible {
            request: request.name().to_owned(),
            detail: explanation.reason.unwrap_or_default(),
        });
    }
    ResidencyDecision::new(ResidencyDecisionParts {
        manager_id: snapshot.manager_id(),
        expected_state_version: snapshot.state_version(),
        explored_states: planner.explored,
        request: request.clone(),
        plan,
        policy_name: policy.name().to_owned(),
        policy_config: policy.config_identity(),
        evictions,
        explanation,
    })
}

/// §3.2: every handle is live and from this manager; EXCLUSIVE values at one location only.
/// Returns the requirements as (value position, location).
fn validate_request(
    snap: &ResidencySnapshot,
    request: &ResidencyRequest,
) -> Result<Vec<(u32, ResidencyLocation)>, ModelError> {
    let mut out = Vec::with_capacity(request.requirements().len());
    for r in request.requirements() {
        if r.handle.manager_id() != snap.manager_id() {
            return Err(ModelError::ForeignHandle {
                request: request.name().to_owned(),
                handle: r.handle.clone(),
                manager_id: snap.manager_id(),
            });
        }
        let v = snap
            .value_index(&r.handle)
            .ok_or_else(|| ModelError::UnknownHandle {
                request: request.name().to_owned(),
                handle: r.handle.clone(),
            })?;
        if snap.values()[v].discarded() {
            return Err(ModelError::DiscardedHandle {
                request: request.name().to_owned(),
                handle: r.handle.clone(),
            });
        }
        out.push((index_u32(v), r.location));
    }
    for (i, (v, _)) in out.iter().enumerate() {
        let value = &snap.values()[*v as usize];
        if value.spec().replica_mode() != ReplicaMode::Exclusive {
            continue;
        }
        let locations: Vec<ResidencyLocation> = out
            .iter()
            .filter(|(w, _)| w == v)
            .map(|(_, l)| *l)
            .collect();
        let first = out.iter().position(|(w, _)| w == v) == Some(i);
        if first && locations.len() > 1 {
            return Err(ModelError::ExclusiveAtMultipleLocations {
                handle: value.handle().clone(),
                locations,
            });
        }
    }
    Ok(out)
}

fn index_u32(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

const LOC_MIN: ResidencyLocation = ResidencyLocation::PageableHost;
const LOC_MAX: ResidencyLocation = ResidencyLocation::Sim(u8::MAX);

/// Accounting of one location in a planning state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Acc {
    location: ResidencyLocation,
    budget: Option<u64>,
    used: u64,
    reserved: u64,
}

/// A planning state (§3.3): the snapshot plus an overlay of changed materializations.
#[derive(Debug, Clone)]
struct State {
    /// `Some` = a materialization projected by the planner, `None` = a snapshot one removed.
    /// Sorted by key; a handful of entries (one per reclaim step and projection).
    overlay: Vec<((u32, ResidencyLocation), Option<MaterializationSnapshot>)>,
    acc: Vec<Acc>,
    /// The chosen reclaim steps, newest first, shared between a state and its successors.
    path: Option<Rc<PathNode>>,
}

/// The exact memo signature (§3.9): placement differences from the snapshot (which is fixed
/// for one decision, so this is equivalent to the full placement) and per-location accounting.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Signature {
    placement: Vec<(u32, ResidencyLocation, bool)>,
    accounting: Vec<(ResidencyLocation, u64, u64)>,
}

/// One chosen reclaim step in a persistent (shared-tail) list.
#[derive(Debug)]
struct PathNode {
    eviction: ResidencyEviction,
    parent: Option<Rc<PathNode>>,
}

impl State {
    fn ov_find(&self, v: u32, l: ResidencyLocation) -> Result<usize, usize> {
        self.overlay.binary_search_by(|(k, _)| k.cmp(&(v, l)))
    }

    fn ov_get(&self, v: u32, l: ResidencyLocation) -> Option<&Option<MaterializationSnapshot>> {
        self.ov_find(v, l).ok().map(|i| &self.overlay[i].1)
    }

    fn ov_set(&mut self, v: u32, l: ResidencyLocation, m: Option<MaterializationSnapshot>) {
        match self.ov_find(v, l) {
            Ok(i) => self.overlay[i].1 = m,
            Err(i) => self.overlay.insert(i, ((v, l), m)),
        }
    }

    fn push_eviction(&mut self, eviction: ResidencyEviction) {
        self.path = Some(Rc::new(PathNode {
            eviction,
            parent: self.path.take(),
        }));
    }

    /// The evictions in order (oldest first).
    fn evictions(&self) -> Vec<ResidencyEviction> {
        let mut out = Vec::new();
        let mut node = self.path.as_deref();
        while let Some(n) = node {
            out.push(n.eviction.clone());
            node = n.parent.as_deref();
        }
        out.reverse();
        out
    }

    fn new(snap: &ResidencySnapshot) -> Self {
        Self {
            overlay: Vec::new(),
            acc: snap
                .locations()
                .iter()
                .map(|l| Acc {
                    location: l.location(),
                    budget: l.budget_bytes(),
                    used: l.used_bytes(),
                    reserved: l.reserved_bytes(),
                })
                .collect(),
            path: None,
        }
    }

    fn mat(
        &self,
        snap: &ResidencySnapshot,
        v: u32,
        l: ResidencyLocation,
    ) -> Option<MaterializationSnapshot> {
        match self.ov_get(v, l) {
            Some(entry) => *entry,
            None => snap.values()[v as usize].materialization(l).copied(),
        }
    }

    /// The value's materialized locations in canonical order.
    fn locations_of(&self, snap: &ResidencySnapshot, v: u32) -> Vec<ResidencyLocation> {
        let mut out: Vec<ResidencyLocation> = snap.values()[v as usize]
            .materializations()
            .iter()
            .map(MaterializationSnapshot::location)
            .filter(|l| !matches!(self.ov_get(v, *l), Some(None)))
            .collect();
        let lo = self.overlay.partition_point(|(k, _)| *k < (v, LOC_MIN));
        let hi = self.overlay.partition_point(|(k, _)| *k <= (v, LOC_MAX));
        for ((_, l), m) in &self.overlay[lo..hi] {
            if m.is_some() && !out.contains(l) {
                out.push(*l);
            }
        }
        out.sort_unstable();
        out
    }

    fn acc_mut(&mut self, l: ResidencyLocation) -> &mut Acc {
        let i = match self.acc.iter().position(|a| a.location == l) {
            Some(i) => i,
            None => {
                self.acc.push(Acc {
                    location: l,
                    budget: None,
                    used: 0,
                    reserved: 0,
                });
                self.acc.len() - 1
            }
        };
        &mut self.acc[i]
    }

    fn acc(&self, l: ResidencyLocation) -> Acc {
        self.acc
            .iter()
            .find(|a| a.location == l)
            .copied()
            .unwrap_or(Acc {
                location: l,
                budget: None,
                used: 0,
                reserved: 0,
            })
    }

    fn fits(&self, l: ResidencyLocation, x: u64) -> bool {
        let a = self.acc(l);
        a.budget
            .is_none_or(|b| a.used.saturating_add(a.reserved).saturating_add(x) <= b)
    }

    fn remove(&mut self, snap: &ResidencySnapshot, v: u32, l: ResidencyLocation, charge: u64) {
        if snap.values()[v as usize].materialization(l).is_some() {
            self.ov_set(v, l, None);
        } else if let Ok(i) = self.ov_find(v, l) {
            self.overlay.remove(i);
        }
        let a = self.acc_mut(l);
        a.used = a.used.saturating_sub(charge);
    }

    fn project(&mut self, v: u32, m: MaterializationSnapshot) {
        self.ov_set(v, m.location(), Some(m));
        let a = self.acc_mut(m.location());
        a.used = a.used.saturating_add(m.charged_nbytes());
    }

    fn has_projection_at(&self, l: ResidencyLocation) -> bool {
        self.overlay
            .iter()
            .any(|((_, ml), m)| *ml == l && m.is_some())
    }

    fn signature(&self, snap: &ResidencySnapshot) -> Signature {
        let placement = self
            .overlay
            .iter()
            .filter(|((v, l), m)| {
                m.is_some() != snap.values()[*v as usize].materialization(*l).is_some()
            })
            .map(|((v, l), m)| (*v, *l, m.is_some()))
            .collect();
        let mut accounting: Vec<(ResidencyLocation, u64, u64)> = self
            .acc
            .iter()
            .map(|a| (a.location, a.used, a.reserved))
            .collect();
        accounting.sort_unstable();
        Signature {
            placement,
            accounting,
        }
    }
}

/// A capacity failure during request simulation (§3.3).
#[derive(Debug, Clone)]
struct CapacityFailure {
    location: ResidencyLocation,
    amount: u64,
    stage: Stage,
    budget: u64,
    used: u64,
    reserved: u64,
}

/// Which step of the request simulation failed; formatted only when a message is built.
#[derive(Debug, Clone, Copy)]
enum Stage {
    /// The request's reservation at this index.
    Reservation(usize),
    /// The temporary source charge of this value.
    Source(u32),
    /// The materialization of this value.
    Materialization(u32),
}

impl CapacityFailure {
    fn text(&self, snap: &ResidencySnapshot, request: &ResidencyRequest) -> String {
        let stage = match self.stage {
            Stage::Reservation(i) => format!("reservation '{}'", request.reservations()[i].label()),
            Stage::Source(v) => format!(
                "source reconstruction for '{}'",
                snap.values()[v as usize].handle()
            ),
            Stage::Materialization(v) => {
                format!(
                    "materialization of '{}'",
                    snap.values()[v as usize].handle()
                )
            }
        };
        format!(
            "location {} cannot admit {} bytes during {stage}",
            self.location, self.amount
        )
    }
}

enum SimError {
    Capacity(CapacityFailure),
    Fatal(ModelError),
}

enum SearchError {
    /// A planning failure: recorded by the parent, the search continues.
    Planning(String),
    /// Stops the whole search (limit, policy contract, unavailable value).
    Fatal(ModelError),
}

/// What stops an enumeration early.
enum Stop {
    Found(State, Vec<ResidencyAction>),
    Fatal(ModelError),
}

type Flow = ControlFlow<Stop>;

/// One eviction candidate: (value position, location, charge, rank).
#[derive(Debug, Clone, Copy)]
struct Cand {
    v: u32,
    location: ResidencyLocation,
    charge: u64,
}

/// The ordered candidates at one location.
enum Candidates {
    /// A key-ordered policy's cached order of the snapshot's candidates, filtered lazily
    /// (removed or blocked values are skipped), so a node that succeeds with its first
    /// candidate does not pay for the rest.
    Cached(Rc<[u32]>, ResidencyLocation),
    /// Ordered for this node.
    Owned(Vec<Cand>),
}

impl Candidates {
    fn iter<'s>(
        &'s self,
        snap: &'s ResidencySnapshot,
        state: &'s State,
        blocked: &'s [u32],
    ) -> Box<dyn Iterator<Item = Cand> + 's> {
        match self {
            Self::Owned(v) => Box::new(v.iter().copied()),
            Self::Cached(order, l) => {
                let l = *l;
                Box::new(
                    order
                        .iter()
                        .filter(move |v| {
                            !blocked.contains(v) && !matches!(state.ov_get(**v, l), Some(None))
                        })
                        .map(move |v| Cand {
                            v: *v,
                            location: l,
                            charge: snap.values()[*v as usize].spec().charge(),
                        }),
                )
            }
        }
    }
}

type CapacityKey = (
    Signature,
    ResidencyLocation,
    u64,
    Vec<u32>,
    Vec<(u32, ResidencyLocation)>,
);

struct Planner<'a, P: ?Sized> {
    snap: &'a ResidencySnapshot,
    request: &'a ResidencyRequest,
    policy: &'a P,
    recency: Option<&'a ResidencyRecency>,
    requirements: Vec<(u32, ResidencyLocation)>,
    limit: u64,
    explored: u64,
    failed_requests: FxHashSet<Signature>,
    failed_capacities: FxHashSet<CapacityKey>,
    /// Request signatures on the current DFS path (a revisit is a cycle).
    searching: FxHashSet<Signature>,
    /// Capacity resolutions on the current DFS path.
    resolving: FxHashSet<CapacityKey>,
    /// Cycle cuts so far: results shaped by a cut are not memoized.
    cuts: u64,
    /// Current nesting of expanded search and capacity nodes.
    depth: u32,
    /// Key-ordered policies: each location's snapshot candidates in eviction order.
    order_cache: FxHashMap<ResidencyLocation, Rc<[u32]>>,
}

impl<P: ResidencyPolicy + ?Sized> Planner<'_, P> {
    /// Enters one nested expansion, or fails as inconclusive beyond [`MAX_SEARCH_DEPTH`].
    fn descend(&mut self, objective: &str) -> Result<(), ModelError> {
        if self.depth >= MAX_SEARCH_DEPTH {
            return Err(ModelError::SearchLimit {
                request: self.request.name().to_owned(),
                state_limit: self.limit,
                explored_states: self.explored,
                detail: format!(
                    "The search exceeded its maximum nesting depth of {MAX_SEARCH_DEPTH} during {objective}."
                ),
            });
        }
        self.depth += 1;
        Ok(())
    }

    /// Counts one explored state, or fails at the limit (checked before incrementing).
    fn count(&mut self, objective: &str) -> Result<(), ModelError> {
        if self.explored >= self.limit {
            return Err(ModelError::SearchLimit {
                request: self.request.name().to_owned(),
                state_limit: self.limit,
                explored_states: self.explored,
                detail: format!(
                    "The search exceeded its deterministic state limit during {objective}."
                ),
            });
        }
        self.explored += 1;
        Ok(())
    }

    /// §3.4: simulates the whole ordered request on (a scratch copy of) `state`.
    fn simulate(&self, state: &State) -> Result<Vec<ResidencyAction>, SimError> {
        let snap = self.snap;
        let mut acc = state.acc.clone();
        let acc_of = |acc: &mut Vec<Acc>, l: ResidencyLocation| -> usize {
            acc.iter().position(|a| a.location == l).unwrap_or_else(|| {
                acc.push(Acc {
                    location: l,
                    budget: None,
                    used: 0,
                    reserved: 0,
                });
                acc.len() - 1
            })
        };
        let require = |acc: &mut Vec<Acc>, l: ResidencyLocation, x: u64, stage: Stage| {
            let i = acc_of(acc, l);
            let a = acc[i];
            match a.budget {
                Some(b) if a.used.saturating_add(a.reserved).saturating_add(x) > b => {
                    Err(SimError::Capacity(CapacityFailure {
                        location: l,
                        amount: x,
                        stage,
                        budget: b,
                        used: a.used,
                        reserved: a.reserved,
                    }))
                }
                _ => Ok(i),
            }
        };
        for (k, r) in self.request.reservations().iter().enumerate() {
            let i = require(&mut acc, r.location(), r.nbytes(), Stage::Reservation(k))?;
            acc[i].reserved = acc[i].reserved.saturating_add(r.nbytes());
        }
        let mut placed: Vec<(u32, Vec<ResidencyLocation>)> = Vec::new();
        let mut actions = Vec::with_capacity(self.requirements.len());
        for &(v, l) in &self.requirements {
            let value = &snap.values()[v as usize];
            let h = value.handle();
            let slot = match placed.iter().position(|(w, _)| *w == v) {
                Some(i) => i,
                None => {
                    placed.push((v, state.locations_of(snap, v)));
                    placed.len() - 1
                }
            };
            if placed[slot].1.contains(&l) {
                continue;
            }
            let charge = value.spec().charge();
            let resident = placed[slot].1.first().copied();
            let (source, temporary) = match resident {
                Some(s) => (s, false),
                None => {
                    let s = value.source_location().ok_or_else(|| {
                        SimError::Fatal(ModelError::Unavailable { handle: h.clone() })
                    })?;
                    let i = require(&mut acc, s, charge, Stage::Source(v))?;
                    acc[i].reserved = acc[i].reserved.saturating_add(charge);
                    (s, true)
                }
            };
            if temporary && source == l {
                let i = acc_of(&mut acc, source);
                acc[i].reserved = acc[i].reserved.saturating_sub(charge);
            }
            let i = require(&mut acc, l, charge, Stage::Materialization(v))?;
            acc[i].used = acc[i].used.saturating_add(charge);
            placed[slot].1.push(l);
            if temporary && source != l {
                let i = acc_of(&mut acc, source);
                acc[i].reserved = acc[i].reserved.saturating_sub(charge);
            }
            if value.spec().replica_mode() == ReplicaMode::Exclusive {
                actions.push(ResidencyAction::MoveResident {
                    handle: h.clone(),
                    to: l,
                    from: (!temporary).then_some(source),
                });
                if !temporary {
                    placed[slot].1.retain(|x| *x != source);
                    let i = acc_of(&mut acc, source);
                    acc[i].used = acc[i].used.saturating_sub(charge);
                }
            } else {
                actions.push(ResidencyAction::EnsureResident {
                    handle: h.clone(),
                    location: l,
                });
            }
            placed[slot].1.sort_unstable();
        }
        Ok(actions)
    }

    /// §3.5: the depth-first search.
    fn search(&mut self, state: State) -> Result<(State, Vec<ResidencyAction>), SearchError> {
        let sig = state.signature(self.snap);
        if self.failed_requests.contains(&sig) {
            return Err(SearchError::Planning(
                "equivalent ordered-request state is already exhausted".to_owned(),
            ));
        }
        if self.searching.contains(&sig) {
            self.cuts += 1;
            return Err(SearchError::Planning(
                "equivalent ordered-request state is already being explored on this search path"
                    .to_owned(),
            ));
        }
        self.count("ordered request").map_err(SearchError::Fatal)?;
        let failure = match self.simulate(&state) {
            Ok(actions) => return Ok((state, actions)),
            Err(SimError::Fatal(e)) => return Err(SearchError::Fatal(e)),
            Err(SimError::Capacity(f)) => f,
        };
        self.descend("ordered request")
            .map_err(SearchError::Fatal)?;
        self.searching.insert(sig.clone());
        let result = self.expand(&state, sig.clone(), &failure);
        self.searching.remove(&sig);
        self.depth -= 1;
        result
    }

    /// Resolves a capacity failure of the request at `state` (§3.5 step 4).
    fn expand(
        &mut self,
        state: &State,
        sig: Signature,
        failure: &CapacityFailure,
    ) -> Result<(State, Vec<ResidencyAction>), SearchError> {
        let cuts_before = self.cuts;
        let cands = self
            .ordered_candidates(state, failure.location, &[])
            .map_err(SearchError::Fatal)?;
        let mut messages: Vec<String> = Vec::new();
        for (rank, c) in cands.iter(self.snap, state, &[]).enumerate() {
            let mut produced = false;
            let flow = self.reclaim_states(state, c, rank, &[], &[], &mut |p, trial| {
                produced = true;
                match p.search(trial) {
                    Ok((s, a)) => ControlFlow::Break(Stop::Found(s, a)),
                    Err(SearchError::Fatal(e)) => ControlFlow::Break(Stop::Fatal(e)),
                    Err(SearchError::Planning(m)) => {
                        messages.push(format!("candidate {}: {m}", c.v));
                        ControlFlow::Continue(())
                    }
                }
            });
            match flow {
                ControlFlow::Break(Stop::Found(s, a)) => return Ok((s, a)),
                ControlFlow::Break(Stop::Fatal(e)) => return Err(SearchError::Fatal(e)),
                ControlFlow::Continue(()) => {}
            }
            if !produced {
                messages.push(format!(
                    "candidate {}: no legal drop or fallback transition",
                    c.v
                ));
            }
        }
        if self.cuts == cuts_before {
            // A result shaped by a cycle cut is path-dependent: only memoize exact failures.
            self.failed_requests.insert(sig);
        }
        let mut detail = format!(
            "{}; budget={}, used={}, reserved={}, but no invariant-valid victim sequence satisfies the complete ordered request",
            failure.text(self.snap, self.request),
            failure.budget,
            failure.used,
            failure.reserved
        );
        if !messages.is_empty() {
            detail.push_str(" (");
            detail.push_str(&messages.join("; "));
            detail.push(')');
        }
        Err(SearchError::Planning(detail))
    }

    /// §3.6: the unprotected, unblocked candidates at `l`, ordinary ones first, each group in
    /// policy order.
    fn ordered_candidates(
        &mut self,
        state: &State,
        l: ResidencyLocation,
        blocked: &[u32],
    ) -> Result<Candidates, ModelError> {
        let snap = self.snap;
        if self.policy.orders_by_candidate_key() && !state.has_projection_at(l) {
            if let Some(order) = self.order_cache.get(&l) {
                return Ok(Candidates::Cached(Rc::clone(order), l));
            }
            let order: Rc<[u32]> = self.policy_order(snap.unprotected_values_at(l), l)?.into();
            self.order_cache.insert(l, Rc::clone(&order));
            return Ok(Candidates::Cached(order, l));
        }
        let mut vs: Vec<u32> = snap.values_at(l).to_vec();
        vs.extend(
            state
                .overlay
                .iter()
                .filter(|((_, ml), m)| *ml == l && m.is_some())
                .map(|((v, _), _)| *v),
        );
        vs.sort_unstable();
        vs.dedup();
        let present: Vec<u32> = vs
            .into_iter()
            .filter(|v| !blocked.contains(v))
            .filter(|v| state.mat(snap, *v, l).is_some_and(|m| !m.is_protected()))
            .collect();
        Ok(Candidates::Owned(
            self.policy_order(&present, l)?
                .into_iter()
                .map(|v| Cand {
                    v,
                    location: l,
                    charge: snap.values()[v as usize].spec().charge(),
                })
                .collect(),
        ))
    }

    /// Orders the values materialized at `l` with the policy: ordinary candidates, then
    /// required endpoints. Input is in planning (registration) order. Every materialization of
    /// a value is charged the spec's charge (validated by the snapshot; projections copy it).
    fn policy_order(&self, present: &[u32], l: ResidencyLocation) -> Result<Vec<u32>, ModelError> {
        let snap = self.snap;
        let mut groups: [(Vec<u32>, Vec<ResidencyEvictionCandidate<'_>>); 2] = [
            (
                Vec::with_capacity(present.len()),
                Vec::with_capacity(present.len()),
            ),
            (Vec::new(), Vec::new()),
        ];
        let required_here: Vec<u32> = self
            .requirements
            .iter()
            .filter(|(_, rl)| *rl == l)
            .map(|(v, _)| *v)
            .collect();
        for v in present {
            let value = &snap.values()[*v as usize];
            let epoch = match self.recency {
                Some(r) => r.get(value.handle()),
                None => value.last_access_epoch(),
            };
            let g = &mut groups[usize::from(required_here.contains(v))];
            g.0.push(*v);
            g.1.push(ResidencyEvictionCandidate {
                handle: value.handle(),
                location: l,
                charged_nbytes: value.spec().charge(),
                registration_index: u64::from(*v),
                last_access_epoch: epoch,
                metadata: value.policy_metadata(),
            });
        }
        let mut out = Vec::with_capacity(present.len());
        for (vs, cands) in &groups {
            let order = self.policy.order_candidates(cands);
            let mut seen = vec![false; cands.len()];
            let permutation = order.len() == cands.len()
                && order
                    .iter()
                    .all(|i| *i < seen.len() && !std::mem::replace(&mut seen[*i], true));
            if !permutation {
                return Err(ModelError::PolicyNotPermutation {
                    policy: self.policy.name().to_owned(),
                    given: cands.len(),
                    returned: order.len(),
                });
            }
            out.extend(order.into_iter().map(|i| vs[i]));
        }
        Ok(out)
    }

    /// §3.7: the legal reclaim transitions of candidate `c`, handed to `k` one by one.
    fn reclaim_states(
        &mut self,
        state: &State,
        c: Cand,
        rank: usize,
        blocked: &[u32],
        active: &[(u32, ResidencyLocation)],
        k: &mut dyn FnMut(&mut Self, State) -> Flow,
    ) -> Flow {
        let snap = self.snap;
        let (v, s) = (c.v, c.location);
        if active.contains(&(v, s)) {
            return ControlFlow::Continue(());
        }
        let value = &snap.values()[v as usize];
        let h = value.handle();
        let alternatives = state.locations_of(snap, v).iter().any(|l| *l != s);
        let rank = u32::try_from(rank).unwrap_or(u32::MAX);
        if alternatives || value.has_source() {
            let mut trial = state.clone();
            let action = ResidencyAction::DropResident {
                handle: h.clone(),
                location: s,
            };
            trial.push_eviction(ResidencyEviction {
                action,
                rank,
                released_location: s,
                released_nbytes: c.charge,
                reason: if alternatives {
                    EvictionReason::AnotherMaterialization
                } else {
                    EvictionReason::SourceReconstructs
                },
            });
            trial.remove(snap, v, s, c.charge);
            k(self, trial)?;
            if alternatives {
                return ControlFlow::Continue(());
            }
        }
        let mut destinations: Vec<ResidencyLocation> = self
            .requirements
            .iter()
            .filter(|(w, l)| *w == v && *l != s)
            .map(|(_, l)| *l)
            .collect();
        destinations.sort_unstable();
        for d in self.policy.fallback_locations(s) {
            destinations.push(*d);
        }
        let mut unique: Vec<ResidencyLocation> = Vec::with_capacity(destinations.len());
        for d in destinations {
            if !unique.contains(&d) {
                unique.push(d);
            }
        }
        let mut blocked2 = blocked.to_vec();
        if !blocked2.contains(&v) {
            blocked2.push(v);
            blocked2.sort_unstable();
        }
        let mut active2 = active.to_vec();
        active2.push((v, s));
        active2.sort_unstable();
        for d in unique {
            self.capacity_states(
                state.clone(),
                d,
                c.charge,
                &blocked2,
                &active2,
                &mut |p, mut t| {
                    let Some(m) = t.mat(p.snap, v, s) else {
                        return ControlFlow::Continue(());
                    };
                    t.project(v, m.relocated(d));
                    let action = ResidencyAction::MoveResident {
                        handle: h.clone(),
                        to: d,
                        from: Some(s),
                    };
                    t.push_eviction(ResidencyEviction {
                        action,
                        rank,
                        released_location: s,
                        released_nbytes: c.charge,
                        reason: EvictionReason::SoleMaterializationMoved { destination: d },
                    });
                    t.remove(p.snap, v, s, c.charge);
                    k(p, t)
                },
            )?;
        }
        ControlFlow::Continue(())
    }

    /// §3.8: states in which `l` can admit `x` more bytes, handed to `k` one by one.
    fn capacity_states(
        &mut self,
        state: State,
        l: ResidencyLocation,
        x: u64,
        blocked: &[u32],
        active: &[(u32, ResidencyLocation)],
        k: &mut dyn FnMut(&mut Self, State) -> Flow,
    ) -> Flow {
        if state.fits(l, x) {
            return k(self, state);
        }
        let key: CapacityKey = (
            state.signature(self.snap),
            l,
            x,
            blocked.to_vec(),
            active.to_vec(),
        );
        if self.failed_capacities.contains(&key) {
            return ControlFlow::Continue(());
        }
        if self.resolving.contains(&key) {
            self.cuts += 1;
            return ControlFlow::Continue(());
        }
        let objective = format!("capacity at {l}");
        if let Err(e) = self.count(&objective) {
            return ControlFlow::Break(Stop::Fatal(e));
        }
        if let Err(e) = self.descend(&objective) {
            return ControlFlow::Break(Stop::Fatal(e));
        }
        let cuts_before = self.cuts;
        self.resolving.insert(key.clone());
        let flow = self.resolve_capacity(&state, l, x, blocked, active, k);
        self.resolving.remove(&key);
        self.depth -= 1;
        match flow {
            ControlFlow::Continue(false) if self.cuts == cuts_before => {
                self.failed_capacities.insert(key);
                ControlFlow::Continue(())
            }
            ControlFlow::Continue(_) => ControlFlow::Continue(()),
            ControlFlow::Break(stop) => ControlFlow::Break(stop),
        }
    }

    /// §3.8 step 4: tries every candidate at `l`; `Continue(produced)`.
    fn resolve_capacity(
        &mut self,
        state: &State,
        l: ResidencyLocation,
        x: u64,
        blocked: &[u32],
        active: &[(u32, ResidencyLocation)],
        k: &mut dyn FnMut(&mut Self, State) -> Flow,
    ) -> ControlFlow<Stop, bool> {
        let cands = match self.ordered_candidates(state, l, blocked) {
            Ok(c) => c,
            Err(e) => return ControlFlow::Break(Stop::Fatal(e)),
        };
        let mut produced = false;
        for (rank, c) in cands.iter(self.snap, state, blocked).enumerate() {
            if active.contains(&(c.v, l)) {
                continue;
            }
            if let ControlFlow::Break(stop) =
                self.reclaim_states(state, c, rank, blocked, active, &mut |p, reclaimed| {
                    p.capacity_states(reclaimed, l, x, blocked, active, &mut |p, result| {
                        produced = true;
                        k(p, result)
                    })
                })
            {
                return ControlFlow::Break(stop);
            }
        }
        ControlFlow::Continue(produced)
    }
}
