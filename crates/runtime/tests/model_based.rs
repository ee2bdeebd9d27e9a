//! Randomized model-based test: long seeded sequences of adopt / register_source / ensure /
//! move / drop / discard / reserve / acquire / release / hold / stream holds / plans / controller
//! use, with injected allocation, copy and load failures, checked after every step against a
//! simple reference model.
//!
//! The reference model predicts, for every primitive, the outcome class (ok, no-op, or which
//! error) and the exact `state_version` delta (reaping included). After every step the test
//! checks: used + reserved <= budget everywhere budgeted; used equals the sum of charges of
//! the model's materializations and reserved the sum of its reservations; peaks never
//! decrease; no live MUST_PRESERVE value without a materialization; a replica under a pending
//! consumer event is still installed and its memory still allocated; the version changes
//! exactly as predicted. Bounded: `FHELIUM_MODEL_SEEDS` seeds (default 64) x 250 steps.
#![allow(clippy::unwrap_used, clippy::redundant_closure_for_method_calls)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;
use fhelium_cuda::{Memory, Stream, Tensors};
use fhelium_residency::{
    MemoryReservation, Recoverability, ReplicaMode, ResidencyAction, ResidencyHandle,
    ResidencyLocation, ResidencyRequest, ResidencyRequirement, ResidencySnapshot,
    ResidencyValueSpec,
};
use fhelium_runtime::{
    ConsumerStreams, Handle, ResidencyController, ResidencyErrorKind, ResidencyHold,
    ResidencyLease, ResidencyManager, ResidencyReservation, RuntimeError, TransferStreams,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

static STATS: [AtomicUsize; 17] = [const { AtomicUsize::new(0) }; 17];

const LOCS: [ResidencyLocation; 4] = [P, N, S0, S1];

struct MValue {
    handle: Handle<Tensors>,
    exclusive: bool,
    source: Option<ResidencyLocation>,
    locs: Vec<ResidencyLocation>,
    discarded: bool,
    fails_left: Arc<AtomicUsize>,
}

struct MLease {
    lease: ResidencyLease,
    vis: Vec<usize>,
    loc: ResidencyLocation,
    stream: Option<usize>,
}

struct Pending {
    vis: Vec<usize>,
    loc: ResidencyLocation,
    stream: usize,
    /// The consumer event completed (its stream's hold was released); reaped at the next reap
    /// point even if the stream is held again meanwhile.
    done: bool,
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Expect {
    Ok(u64),
    NoOp,
    Err(ResidencyErrorKind),
}

struct World {
    mem: Memory,
    m: ResidencyManager,
    budgets: BTreeMap<ResidencyLocation, u64>,
    registered: BTreeSet<ResidencyLocation>,
    values: Vec<MValue>,
    leases: Vec<MLease>,
    holds: Vec<(ResidencyHold, Vec<usize>, ResidencyLocation)>,
    reservations: Vec<(ResidencyReservation, ResidencyLocation, u64)>,
    pending: Vec<Pending>,
    streams: Vec<Stream>,
    held: Vec<bool>,
    last: Option<ResidencySnapshot>,
    version: u64,
    seed: u64,
}

fn dev_index(l: ResidencyLocation) -> Option<usize> {
    match l {
        ResidencyLocation::Sim(i) => Some(usize::from(i)),
        _ => None,
    }
}

impl World {
    fn new(rng: &mut ChaCha8Rng) -> Self {
        let mem = Memory::with_sim_devices(2);
        let mut budgets = BTreeMap::new();
        let mut b = ResidencyManager::builder(mem.clone());
        for l in LOCS {
            if rng.random_bool(0.6) {
                let n = rng.random_range(0..5u64) * NB + if rng.random_bool(0.2) { 7 } else { 0 };
                budgets.insert(l, n);
                b = b.budget(l, n);
            }
        }
        let m = b.build().unwrap();
        let streams = vec![mem.stream(&S0).unwrap(), mem.stream(&S1).unwrap()];
        Self {
            registered: budgets.keys().copied().collect(),
            mem,
            m,
            budgets,
            values: Vec::new(),
            leases: Vec::new(),
            holds: Vec::new(),
            reservations: Vec::new(),
            pending: Vec::new(),
            streams,
            held: vec![false, false],
            last: None,
            version: 0,
            seed: 0,
        }
    }

    fn used(&self, l: ResidencyLocation) -> u64 {
        self.values.iter().filter(|v| v.locs.contains(&l)).count() as u64 * NB
    }
    fn reserved(&self, l: ResidencyLocation) -> u64 {
        self.reservations
            .iter()
            .filter(|r| r.1 == l)
            .map(|r| r.2)
            .sum()
    }
    fn fits(&self, l: ResidencyLocation, n: u64) -> bool {
        self.budgets
            .get(&l)
            .is_none_or(|b| self.used(l) + self.reserved(l) + n <= *b)
    }
    fn protected(&self, vi: usize, l: ResidencyLocation) -> bool {
        self.leases
            .iter()
            .any(|x| x.loc == l && x.vis.contains(&vi))
            || self.holds.iter().any(|x| x.2 == l && x.1.contains(&vi))
            || self
                .pending
                .iter()
                .any(|x| x.loc == l && x.vis.contains(&vi))
    }
    /// Reaps pending leases whose consumer event completed; returns the version bumps.
    fn reap(&mut self) -> u64 {
        let before = self.pending.len();
        self.pending.retain(|p| !p.done);
        (before - self.pending.len()) as u64
    }
    fn new_loc(&mut self, l: ResidencyLocation) -> u64 {
        u64::from(self.registered.insert(l))
    }

    /// Copy of data into `to` (fault-injectable) plus install: expected outcome.
    fn predict_copy_in(&self, to: ResidencyLocation, fault: bool) -> Option<Expect> {
        if !self.fits(to, NB) {
            return Some(Expect::Err(ResidencyErrorKind::Budget));
        }
        if fault {
            return Some(Expect::Err(ResidencyErrorKind::Backend));
        }
        None
    }

    /// Predicts a primitive; on success applies it to the model. Returns (expectation, bumps).
    fn predict(&mut self, a: &ResidencyAction, fault: bool) -> Expect {
        let vi = self
            .values
            .iter()
            .position(|v| &*v.handle == a.handle())
            .unwrap();
        if self.values[vi].discarded {
            return Expect::Err(ResidencyErrorKind::Handle);
        }
        let v = &self.values[vi];
        let mut locs = v.locs.clone();
        match a {
            ResidencyAction::EnsureResident { location: to, .. } => {
                let to = *to;
                if locs.contains(&to) {
                    return Expect::NoOp;
                }
                if v.exclusive && !locs.is_empty() {
                    return Expect::Err(ResidencyErrorKind::Ownership);
                }
                if !locs.is_empty() {
                    if let Some(e) = self.predict_copy_in(to, fault) {
                        return e;
                    }
                } else {
                    let s = v.source.unwrap();
                    if !self.fits(s, NB) {
                        return Expect::Err(ResidencyErrorKind::Budget);
                    }
                    if v.fails_left.load(Ordering::SeqCst) > 0 {
                        return Expect::Err(ResidencyErrorKind::Backend);
                    }
                    if s == to {
                        // the temporary charge is released before the install re-checks
                    } else if let Some(e) = self.predict_copy_in(to, fault) {
                        return e;
                    }
                }
                let b = 1 + self.new_loc(to);
                self.values[vi].locs.push(to);
                Expect::Ok(b)
            }
            ResidencyAction::MoveResident { to, from, .. } => {
                let to = *to;
                if let Some(f) = from {
                    if !locs.contains(f) {
                        return Expect::Err(ResidencyErrorKind::Unavailable);
                    }
                }
                let sel = from.or_else(|| locs.iter().filter(|l| **l != to).min().copied());
                if locs.contains(&to) {
                    return match sel {
                        None => Expect::NoOp,
                        Some(s) if s == to => Expect::NoOp,
                        Some(s) if self.protected(vi, s) => Expect::Err(ResidencyErrorKind::InUse),
                        Some(s) => {
                            self.values[vi].locs.retain(|l| *l != s);
                            Expect::Ok(1)
                        }
                    };
                }
                if let Some(s) = sel {
                    if self.protected(vi, s) {
                        return Expect::Err(ResidencyErrorKind::InUse);
                    }
                    if let Some(e) = self.predict_copy_in(to, fault) {
                        return e;
                    }
                    let b = 2 + self.new_loc(to);
                    locs.retain(|l| *l != s);
                    locs.push(to);
                    self.values[vi].locs = locs;
                    return Expect::Ok(b);
                }
                let Some(s) = v.source else {
                    return Expect::Err(ResidencyErrorKind::Unavailable);
                };
                if !self.fits(s, NB) {
                    return Expect::Err(ResidencyErrorKind::Budget);
                }
                if v.fails_left.load(Ordering::SeqCst) > 0 {
                    return Expect::Err(ResidencyErrorKind::Backend);
                }
                if s != to {
                    if let Some(e) = self.predict_copy_in(to, fault) {
                        return e;
                    }
                }
                let b = 1 + self.new_loc(to);
                self.values[vi].locs.push(to);
                Expect::Ok(b)
            }
            ResidencyAction::DropResident { location: at, .. } => {
                if !locs.contains(at) {
                    return Expect::NoOp;
                }
                if self.protected(vi, *at) {
                    return Expect::Err(ResidencyErrorKind::InUse);
                }
                if locs.len() == 1 && v.source.is_none() {
                    return Expect::Err(ResidencyErrorKind::Ownership);
                }
                self.values[vi].locs.retain(|l| l != at);
                Expect::Ok(1)
            }
            ResidencyAction::DiscardValue { .. } => {
                if locs.iter().any(|l| self.protected(vi, *l)) {
                    return Expect::Err(ResidencyErrorKind::InUse);
                }
                let b = locs.len() as u64 + 1;
                let v = &mut self.values[vi];
                v.locs.clear();
                v.source = None;
                v.discarded = true;
                Expect::Ok(b)
            }
        }
    }

    /// Would this action copy into its destination (so an injected copy fault fires)?
    fn copies_into(&self, a: &ResidencyAction) -> Option<ResidencyLocation> {
        let v = self.values.iter().find(|v| &*v.handle == a.handle())?;
        match a {
            ResidencyAction::EnsureResident { location, .. } if !v.locs.contains(location) => {
                (v.locs.is_empty() && v.source != Some(*location) || !v.locs.is_empty())
                    .then_some(*location)
            }
            ResidencyAction::MoveResident { to, .. } if !v.locs.contains(to) => {
                (v.locs.is_empty() && v.source != Some(*to) || !v.locs.is_empty()).then_some(*to)
            }
            _ => None,
        }
    }

    fn resync(&mut self) {
        let s = self.m.snapshot().unwrap();
        for v in &mut self.values {
            let vs = s.value(&v.handle).unwrap();
            v.locs = vs.materializations().iter().map(|x| x.location()).collect();
            v.discarded = vs.discarded();
            if v.discarded {
                v.source = None;
            }
        }
        self.registered = s.locations().iter().map(|l| l.location()).collect();
        self.version = s.state_version();
    }

    fn check(&mut self, step: usize, what: &str) {
        let s = self.m.snapshot().unwrap();
        let ctx = format!("seed {} step {step} ({what})", self.seed);
        assert_eq!(s.state_version(), self.version, "{ctx}: version");
        for l in s.locations() {
            let loc = l.location();
            assert_eq!(l.used_bytes(), self.used(loc), "{ctx}: used at {loc}");
            assert_eq!(
                l.reserved_bytes(),
                self.reserved(loc),
                "{ctx}: reserved at {loc}"
            );
            if let Some(b) = l.budget_bytes() {
                assert!(
                    l.used_bytes() + l.reserved_bytes() <= b,
                    "{ctx}: budget at {loc}"
                );
                assert!(
                    l.peak_charged_bytes() <= b,
                    "{ctx}: peak over budget at {loc}"
                );
            }
            if let Some(prev) = self.last.as_ref().and_then(|p| p.location(loc)) {
                assert!(
                    l.peak_used_bytes() >= prev.peak_used_bytes(),
                    "{ctx}: peak_used fell at {loc}"
                );
                assert!(
                    l.peak_charged_bytes() >= prev.peak_charged_bytes(),
                    "{ctx}: peak_charged fell at {loc}"
                );
            }
            // managed storage is still allocated in the memory layer
            let managed: u64 = s
                .values()
                .iter()
                .filter_map(|v| v.materialization(loc))
                .map(|m| m.storage_nbytes())
                .sum();
            let alloc = self.mem.usage(&loc).map_or(0, |u| u.allocated_bytes);
            assert!(
                alloc >= managed,
                "{ctx}: {alloc} allocated < {managed} managed at {loc}"
            );
        }
        for v in &self.values {
            let vs = s.value(&v.handle).unwrap();
            let got: BTreeSet<_> = vs.materializations().iter().map(|m| m.location()).collect();
            let want: BTreeSet<_> = v.locs.iter().copied().collect();
            assert_eq!(got, want, "{ctx}: placement of {}", v.handle);
            if !v.discarded && v.source.is_none() {
                assert!(
                    !got.is_empty(),
                    "{ctx}: MUST_PRESERVE value lost its last copy"
                );
            }
        }
        for p in &self.pending {
            for vi in &p.vis {
                let m = s
                    .value(&self.values[*vi].handle)
                    .unwrap()
                    .materialization(p.loc)
                    .copied();
                let m =
                    m.unwrap_or_else(|| panic!("{ctx}: replica under a pending event was removed"));
                assert!(m.pending_event_count() >= 1, "{ctx}: pending count");
            }
        }
        self.last = Some(s);
    }
}

fn pick<'a, T>(rng: &mut ChaCha8Rng, xs: &'a [T]) -> Option<&'a T> {
    if xs.is_empty() {
        None
    } else {
        Some(&xs[rng.random_range(0..xs.len())])
    }
}

#[allow(clippy::too_many_lines)]
fn run(seed: u64, steps: usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut w = World::new(&mut rng);
    w.seed = seed;
    let controller = ResidencyController::new(&w.m);
    let mut seq = 0u64;
    for step in 0..steps {
        let op = rng.random_range(0..100u32);
        let what;
        if op < 8 || w.values.is_empty() {
            // adopt
            what = "adopt";
            if w.values.len() >= 10 {
                continue;
            }
            let at = *pick(&mut rng, &LOCS).unwrap();
            let excl = rng.random_bool(0.4);
            seq += 1;
            let r = w.m.adopt(
                value_at(&w.mem, at, seq),
                Some(at),
                if excl {
                    ReplicaMode::Exclusive
                } else {
                    ReplicaMode::Replicable
                },
            );
            let reaped = w.reap();
            let fits = w.fits(at, NB);
            match r {
                Ok(h) => {
                    assert!(fits, "adopt over budget");
                    let b = 1 + w.new_loc(at);
                    w.version += reaped + b;
                    w.values.push(MValue {
                        handle: h,
                        exclusive: excl,
                        source: None,
                        locs: vec![at],
                        discarded: false,
                        fails_left: Arc::new(AtomicUsize::new(0)),
                    });
                }
                Err(e) => {
                    assert!(!fits && e.kind() == ResidencyErrorKind::Budget, "{e}");
                    w.version += reaped;
                }
            }
        } else if op < 14 {
            what = "register_source";
            if w.values.len() >= 10 {
                continue;
            }
            let src = *pick(&mut rng, &LOCS).unwrap();
            let fails = if rng.random_bool(0.3) { 1 } else { 0 };
            seq += 1;
            let mem = w.mem.clone();
            let spec = ResidencyValueSpec::new(
                "Tensors",
                NB,
                NB,
                ReplicaMode::Replicable,
                Recoverability::Reconstructible,
            )
            .unwrap();
            let fails_left = Arc::new(AtomicUsize::new(fails));
            let fl = fails_left.clone();
            let s = seq;
            let h =
                w.m.register_source(spec, src, move || {
                    // the loader consumes the failure budget; the model only reads it
                    if fl
                        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                        .is_ok()
                    {
                        return Err(Box::new(std::io::Error::other("load failed"))
                            as fhelium_runtime::SourceError);
                    }
                    Ok(value_at(&mem, src, s))
                })
                .unwrap();
            let reaped = w.reap();
            let b = 1 + w.new_loc(src);
            w.version += reaped + b;
            w.values.push(MValue {
                handle: h,
                exclusive: false,
                source: Some(src),
                locs: vec![],
                discarded: false,
                fails_left,
            });
        } else if op < 52 {
            // a primitive
            let v = pick(&mut rng, &w.values).unwrap();
            let h: ResidencyHandle = (*v.handle).clone();
            let to = *pick(&mut rng, &LOCS).unwrap();
            let a = match rng.random_range(0..10u32) {
                0..=3 => ResidencyAction::EnsureResident {
                    handle: h,
                    location: to,
                },
                4..=6 => {
                    let from = if rng.random_bool(0.3) {
                        Some(*pick(&mut rng, &LOCS).unwrap())
                    } else {
                        None
                    };
                    ResidencyAction::MoveResident {
                        handle: h,
                        to,
                        from,
                    }
                }
                7..=8 => ResidencyAction::DropResident {
                    handle: h,
                    location: to,
                },
                _ => {
                    if rng.random_bool(0.3) {
                        ResidencyAction::DiscardValue { handle: h }
                    } else {
                        ResidencyAction::DropResident {
                            handle: h,
                            location: to,
                        }
                    }
                }
            };
            what = a.kind_name();
            let reaped = w.reap();
            let fault = w.copies_into(&a).filter(|_| rng.random_bool(0.15));
            if let Some(l) = fault {
                let f = w.mem.sim_faults(&l).unwrap();
                if rng.random_bool(0.5) {
                    f.fail_next_copies(1);
                } else {
                    f.fail_next_allocs(1);
                }
            }
            let expect = w.predict(&a, fault.is_some());
            let r = w.m.apply(&a, None);
            if let Some(l) = fault {
                w.mem.sim_faults(&l).unwrap().clear();
            }
            match (expect, &r) {
                (Expect::Ok(b), Ok(rep)) => {
                    STATS[0].fetch_add(1, Ordering::Relaxed);
                    assert!(!rep.no_op(), "step {step}: {a:?} expected a change");
                    w.version += reaped + b;
                }
                (Expect::NoOp, Ok(rep)) => {
                    STATS[1].fetch_add(1, Ordering::Relaxed);
                    assert!(rep.no_op(), "step {step}: {a:?} expected a no-op");
                    w.version += reaped;
                }
                (Expect::Err(k), Err(e)) => {
                    STATS[2 + k as usize].fetch_add(1, Ordering::Relaxed);
                    assert_eq!(e.kind(), k, "step {step}: {a:?}: {e}");
                    w.version += reaped;
                }
                (x, r) => panic!("step {step} seed {seed}: {a:?}: expected {x:?}, got {r:?}"),
            }
        } else if op < 58 {
            what = "reserve";
            let l = *pick(&mut rng, &LOCS).unwrap();
            let n = rng.random_range(0..3u64) * 16;
            let reaped = w.reap();
            let fits = w.fits(l, n);
            match w.m.reserve(l, n, "ws") {
                Ok(r) => {
                    assert!(fits);
                    let b = 1 + w.new_loc(l);
                    w.version += reaped + b;
                    w.reservations.push((r, l, n));
                }
                Err(e) => {
                    assert!(!fits && matches!(e, RuntimeError::Budget { .. }), "{e}");
                    w.version += reaped;
                }
            }
        } else if op < 63 {
            what = "release reservation";
            if w.reservations.is_empty() {
                continue;
            }
            let i = rng.random_range(0..w.reservations.len());
            let (r, _, _) = w.reservations.remove(i);
            r.release().unwrap();
            w.version += 1 + w.reap();
        } else if op < 72 {
            what = "acquire";
            let l = *pick(&mut rng, &LOCS).unwrap();
            let k = rng.random_range(1..=2usize);
            let vis: Vec<usize> = (0..k)
                .map(|_| rng.random_range(0..w.values.len()))
                .collect();
            let mut uniq = vis.clone();
            uniq.dedup();
            let hs: Vec<&ResidencyHandle> = uniq.iter().map(|i| &*w.values[*i].handle).collect();
            let stream = dev_index(l);
            let st = stream.map(|i| w.streams[i].clone());
            let ok = uniq
                .iter()
                .all(|i| !w.values[*i].discarded && w.values[*i].locs.contains(&l));
            let r = w.m.acquire(&hs, l, st.as_ref());
            let reaped = w.reap();
            match r {
                Ok(lease) => {
                    assert!(ok);
                    let mut vis = uniq.clone();
                    vis.sort_unstable();
                    vis.dedup();
                    w.version += reaped + 1;
                    w.leases.push(MLease {
                        lease,
                        vis,
                        loc: l,
                        stream,
                    });
                }
                Err(e) => {
                    assert!(!ok, "{e}");
                    assert!(
                        matches!(
                            e.kind(),
                            ResidencyErrorKind::Unavailable | ResidencyErrorKind::Handle
                        ),
                        "{e}"
                    );
                    w.version += reaped;
                }
            }
        } else if op < 80 {
            what = "release lease";
            if w.leases.is_empty() {
                continue;
            }
            let i = rng.random_range(0..w.leases.len());
            let x = w.leases.remove(i);
            match x.stream {
                None => {
                    x.lease.release().unwrap();
                    w.version += 1 + w.reap();
                }
                Some(s) if !w.held[s] && rng.random_bool(0.5) => {
                    x.lease.release_and_wait().unwrap();
                    w.version += 2 + w.reap();
                }
                Some(s) => {
                    x.lease.release().unwrap();
                    let done = !w.held[s];
                    w.pending.push(Pending {
                        vis: x.vis,
                        loc: x.loc,
                        stream: s,
                        done,
                    });
                    w.version += 1 + w.reap();
                }
            }
        } else if op < 85 {
            what = "hold";
            let l = *pick(&mut rng, &LOCS).unwrap();
            let vi = rng.random_range(0..w.values.len());
            let ok = !w.values[vi].discarded && w.values[vi].locs.contains(&l);
            let r = w.m.hold(&[&w.values[vi].handle], l);
            let reaped = w.reap();
            match r {
                Ok(h) => {
                    assert!(ok);
                    w.version += reaped + 1;
                    w.holds.push((h, vec![vi], l));
                }
                Err(e) => {
                    assert!(!ok, "{e}");
                    w.version += reaped;
                }
            }
        } else if op < 89 {
            what = "release hold";
            if w.holds.is_empty() {
                continue;
            }
            let i = rng.random_range(0..w.holds.len());
            let (h, _, _) = w.holds.remove(i);
            h.release().unwrap();
            w.version += 1 + w.reap();
        } else if op < 93 {
            what = "stream hold toggle";
            let s = rng.random_range(0..2usize);
            if w.held[s] {
                w.streams[s].release_hold().unwrap();
                w.held[s] = false;
                for p in &mut w.pending {
                    if p.stream == s {
                        p.done = true;
                    }
                }
                // no reaping until someone mutates or polls
                if rng.random_bool(0.5) {
                    let n = w.m.poll().unwrap() as u64;
                    let reaped = w.reap();
                    assert_eq!(n, reaped);
                    w.version += reaped;
                }
            } else {
                w.streams[s].hold().unwrap();
                w.held[s] = true;
            }
        } else if op < 97 {
            what = "execute_actions";
            let k = rng.random_range(1..=3usize);
            let mut acts = Vec::new();
            for _ in 0..k {
                let v = pick(&mut rng, &w.values).unwrap();
                let to = *pick(&mut rng, &LOCS).unwrap();
                acts.push(match rng.random_range(0..3u32) {
                    0 => ResidencyAction::EnsureResident {
                        handle: (*v.handle).clone(),
                        location: to,
                    },
                    1 => ResidencyAction::MoveResident {
                        handle: (*v.handle).clone(),
                        to,
                        from: None,
                    },
                    _ => ResidencyAction::DropResident {
                        handle: (*v.handle).clone(),
                        location: to,
                    },
                });
            }
            let before = w.m.state_version().unwrap();
            let r =
                w.m.execute_actions("random", &acts, &TransferStreams::new(), None);
            if let Err(e) = &r {
                assert!(
                    e.is_plan_error() || e.kind() == ResidencyErrorKind::PlanExecution,
                    "{e}"
                );
            }
            w.reap();
            w.resync();
            assert!(w.version >= before);
        } else {
            what = "controller use";
            let v = pick(&mut rng, &w.values).unwrap();
            if v.discarded {
                continue;
            }
            let l = *pick(&mut rng, &LOCS).unwrap();
            let req = ResidencyRequest::new(
                "rnd",
                [ResidencyRequirement::new((*v.handle).clone(), l)],
                [MemoryReservation::new(l, 8, "ws").unwrap()],
            )
            .unwrap();
            let mut cs = ConsumerStreams::new();
            if let Some(i) = dev_index(l) {
                if w.held[i] {
                    continue;
                }
                cs.insert(l, w.streams[i].clone());
            }
            let before = w.m.state_version().unwrap();
            match controller.use_request(&req, &cs, &TransferStreams::new()) {
                Ok(u) => {
                    u.value(&v.handle, l).unwrap();
                    u.close().unwrap();
                }
                Err(e) => assert!(
                    e.is_plan_error()
                        || matches!(
                            e.kind(),
                            ResidencyErrorKind::PlanExecution | ResidencyErrorKind::Backend
                        ),
                    "{e}"
                ),
            }
            w.reap();
            w.resync();
            assert!(w.version >= before);
        }
        if std::env::var("FHELIUM_MODEL_VERBOSE").is_ok() {
            eprintln!(
                "step {step} {what}: model v{} held {:?} pending {}",
                w.version,
                w.held,
                w.pending.len()
            );
        }
        w.check(step, what);
    }
    // teardown: release everything, then close cleanly
    for s in 0..2 {
        if w.held[s] {
            w.streams[s].release_hold().unwrap();
        }
    }
    for x in w.leases.drain(..) {
        x.lease.release().unwrap();
    }
    for (h, _, _) in w.holds.drain(..) {
        h.release().unwrap();
    }
    for (r, _, _) in w.reservations.drain(..) {
        r.release().unwrap();
    }
    w.m.close(true, false).unwrap();
}

#[test]
fn random_sequences_against_the_reference_model() {
    let seeds: u64 = std::env::var("FHELIUM_MODEL_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64);
    let start = std::time::Instant::now();
    let first: u64 = std::env::var("FHELIUM_MODEL_FIRST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    for seed in first..first + seeds {
        run(seed, 250);
    }
    let stats: Vec<usize> = STATS.iter().map(|a| a.load(Ordering::Relaxed)).collect();
    eprintln!("{seeds} seeds x 250 steps in {:?}; primitive outcomes [ok, no-op, errors by kind...] = {stats:?}", start.elapsed());
    // the sequences exercise successes, no-ops and several error kinds
    assert!(
        stats[0] > 0 && stats[1] > 0 && stats[2..].iter().filter(|n| **n > 0).count() >= 4,
        "{stats:?}"
    );
}
