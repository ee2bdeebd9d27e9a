//! Property tests of the planner: determinism, feasibility within budgets, last-copy safety,
//! protection safety, and satisfied requirements.
#![allow(clippy::unwrap_used)]
mod common;
use std::collections::BTreeMap;

use common::*;
use fhelium_residency::*;
use proptest::prelude::*;

const UNIT: u64 = 4;
const LOCS: [ResidencyLocation; 3] = [P, N, C0];

#[derive(Debug, Clone)]
struct ValueGen {
    kind: u8,         // 0 adopted REPL, 1 adopted EXCL, 2 sourced REPL
    units: u64,       // charge in UNITs
    at: [bool; 3],    // materialized at P, N, C0
    protect: [u8; 3], // 0 none, 1 lease, 2 hold, 3 pending
    source: usize,    // source location index
    epoch: Option<u64>,
    priority: i64,
}

fn value_gen() -> impl Strategy<Value = ValueGen> {
    (
        0u8..3,
        1u64..4,
        any::<[bool; 3]>(),
        prop::array::uniform3(
            prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8), 1 => Just(3u8)],
        ),
        0usize..3,
        prop::option::of(0u64..5),
        -1i64..2,
    )
        .prop_map(
            |(kind, units, at, protect, source, epoch, priority)| ValueGen {
                kind,
                units,
                at,
                protect,
                source,
                epoch,
                priority,
            },
        )
}

#[derive(Debug, Clone)]
struct Case {
    values: Vec<ValueGen>,
    slack: [Option<u64>; 3],
    reqs: Vec<(usize, usize)>,
    reserve: Option<(usize, u64)>,
    tiers: bool,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(value_gen(), 1..8),
        prop::array::uniform3(prop::option::of(0u64..4)),
        prop::collection::vec((0usize..8, 0usize..3), 1..5),
        prop::option::of((0usize..3, 0u64..3)),
        any::<bool>(),
    )
        .prop_map(|(values, slack, reqs, reserve, tiers)| Case {
            values,
            slack,
            reqs,
            reserve,
            tiers,
        })
}

fn build(c: &Case) -> Option<(ResidencySnapshot, ResidencyRequest, DeterministicTieredLRU)> {
    let mut used = [0u64; 3];
    let mut values = Vec::new();
    for (i, g) in c.values.iter().enumerate() {
        let n = g.units * UNIT;
        let (mode, rec) = match g.kind {
            0 => (ReplicaMode::Replicable, Recoverability::MustPreserve),
            1 => (ReplicaMode::Exclusive, Recoverability::MustPreserve),
            _ => (ReplicaMode::Replicable, Recoverability::Reconstructible),
        };
        let mut p =
            ResidencyValueSnapshotParts::new(handle(i as u64, "T"), spec("T", n, mode, rec))
                .with_metadata(ResidencyPolicyMetadata::new(g.priority, None).unwrap());
        if let Some(e) = g.epoch {
            p = p.with_last_access(e);
        }
        let mut at: Vec<usize> = (0..3).filter(|k| g.at[*k]).collect();
        if mode == ReplicaMode::Exclusive {
            at.truncate(1);
        }
        if rec == Recoverability::MustPreserve && at.is_empty() {
            at.push(i % 3);
        }
        if rec == Recoverability::Reconstructible {
            p = p.with_source(LOCS[g.source]);
        }
        for k in at {
            let (u, h, pe) = match g.protect[k] {
                1 => (1, 0, 0),
                2 => (0, 1, 0),
                3 => (0, 0, 1),
                _ => (0, 0, 0),
            };
            p = p.at_protected(LOCS[k], u, h, pe);
            used[k] += n;
        }
        values.push(p.build().unwrap());
    }
    let mut b = ResidencySnapshotBuilder::new(MANAGER, 11);
    for k in 0..3 {
        match c.slack[k] {
            Some(s) => b = b.budget(LOCS[k], used[k] + s * UNIT),
            None => b = b.location(LOCS[k]),
        }
    }
    for v in values {
        b = b.value(v);
    }
    let snapshot = b.build().unwrap();
    let mut reqs: Vec<ResidencyRequirement> = Vec::new();
    for (v, k) in &c.reqs {
        let v = v % c.values.len();
        let r = ResidencyRequirement::new(handle(v as u64, "T"), LOCS[*k]);
        if !reqs.contains(&r) {
            reqs.push(r);
        }
    }
    let reservations: Vec<MemoryReservation> = c
        .reserve
        .iter()
        .map(|(k, u)| reservation(LOCS[*k], u * UNIT, "ws"))
        .collect();
    let request = ResidencyRequest::new("prop", reqs, reservations).ok()?;
    let policy = if c.tiers {
        DeterministicTieredLRU::with_fallback_tiers([(C0, vec![N, P]), (N, vec![P])]).unwrap()
    } else {
        DeterministicTieredLRU::new()
    };
    Some((snapshot, request, policy))
}

/// An independent replay of a plan's placement effects: value -> locations.
fn replay(
    snapshot: &ResidencySnapshot,
    plan: &ResidencyPlan,
) -> Result<BTreeMap<ResidencyHandle, Vec<ResidencyLocation>>, String> {
    let mut at: BTreeMap<ResidencyHandle, Vec<ResidencyLocation>> = snapshot
        .values()
        .iter()
        .map(|v| {
            (
                v.handle().clone(),
                v.materializations()
                    .iter()
                    .map(MaterializationSnapshot::location)
                    .collect(),
            )
        })
        .collect();
    for a in plan.actions() {
        let h = a.handle().clone();
        let value = snapshot.value(&h).unwrap();
        let set = at.get_mut(&h).unwrap();
        match a {
            ResidencyAction::EnsureResident { location, .. } => {
                if !set.contains(location) {
                    set.push(*location);
                }
            }
            ResidencyAction::MoveResident { to, from, .. } => {
                let source = from.or_else(|| set.iter().filter(|l| *l != to).min().copied());
                if !set.contains(to) {
                    set.push(*to);
                }
                if let Some(s) = source {
                    if s != *to {
                        set.retain(|l| *l != s);
                    }
                }
            }
            ResidencyAction::DropResident { location, .. } => set.retain(|l| l != location),
            ResidencyAction::DiscardValue { .. } => {
                return Err("the planner emitted DiscardValue".into())
            }
        }
        if set.is_empty() && value.spec().recoverability() == Recoverability::MustPreserve {
            return Err(format!(
                "{a} removed the last copy of a MUST_PRESERVE value"
            ));
        }
    }
    Ok(at)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn planner_properties(c in case()) {
        let Some((snapshot, request, policy)) = build(&c) else { return Ok(()); };
        let first = decide(&snapshot, &request, &policy, None);
        let second = decide(&snapshot, &request, &policy, None);
        prop_assert_eq!(&first, &second, "decide is deterministic");
        let Ok(d) = first else { return Ok(()); };

        // The plan's dry run is feasible and stays within every budget.
        let e = explain(&snapshot, d.plan());
        prop_assert!(e.feasible, "{:?}", e.reason);
        prop_assert_eq!(&e, d.explanation());
        for (l, peak) in &e.predicted_peak_bytes {
            if let Some(b) = snapshot.location(*l).and_then(ResidencyLocationSnapshot::budget_bytes) {
                prop_assert!(*peak <= b, "peak {} over budget {} at {}", peak, b, l);
            }
        }
        prop_assert!(d.explored_states() >= 1);
        prop_assert_eq!(d.expected_state_version(), snapshot.state_version());

        // No MUST_PRESERVE value loses its last copy; every requirement holds afterwards.
        let placed = replay(&snapshot, d.plan()).map_err(TestCaseError::fail)?;
        for r in request.requirements() {
            prop_assert!(placed[&r.handle].contains(&r.location), "{} not at {}", r.handle, r.location);
        }

        // The decision's listing and JSON read back to the same decision; so does the snapshot.
        prop_assert_eq!(&parse_decision(&d.to_string()).unwrap(), &d);
        prop_assert_eq!(&parse_plan(&d.plan().to_string()).unwrap(), d.plan());
        let json = serde_json::to_string(&d).unwrap();
        prop_assert_eq!(&serde_json::from_str::<ResidencyDecision>(&json).unwrap(), &d);
        let json = serde_json::to_string(&snapshot).unwrap();
        prop_assert_eq!(&serde_json::from_str::<ResidencySnapshot>(&json).unwrap(), &snapshot);

        // Evictions never touch a leased, held or pending replica.
        for ev in d.evictions() {
            let value = snapshot.value(ev.action.handle()).unwrap();
            if let Some(m) = value.materialization(ev.released_location) {
                prop_assert!(!m.is_protected(), "evicted a protected replica: {}", ev.action);
            }
        }
    }
}

/// The generator reaches the interesting cases: decisions with reclaim steps (drops and
/// moves), proven infeasible requests, and rejected requests.
#[test]
fn generator_covers_reclaims_and_failures() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = case();
    let (mut ok, mut drops, mut moves, mut infeasible, mut rejected) = (0, 0, 0, 0, 0);
    for _ in 0..400 {
        let c = strategy.new_tree(&mut runner).unwrap().current();
        let Some((snapshot, request, policy)) = build(&c) else {
            continue;
        };
        match decide(&snapshot, &request, &policy, None) {
            Ok(d) => {
                ok += 1;
                for a in d.plan().reclaim() {
                    match a {
                        ResidencyAction::DropResident { .. } => drops += 1,
                        _ => moves += 1,
                    }
                }
            }
            Err(ModelError::Infeasible { .. }) => infeasible += 1,
            Err(_) => rejected += 1,
        }
    }
    println!("ok={ok} drops={drops} moves={moves} infeasible={infeasible} rejected={rejected}");
    assert!(ok >= 100 && drops >= 20 && moves >= 5 && infeasible >= 20 && rejected >= 1);
}
