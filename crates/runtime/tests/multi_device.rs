//! Two simulated devices at once (issue 9, item 1): per-device budgets and exact accounting on
//! both, fallback tiers naming the peer device, and the cost-ranked policy moving a sole copy to
//! the peer when that is cheaper than the host (docs/decisions/0102), executed by the manager.
#![allow(clippy::unwrap_used, clippy::redundant_closure_for_method_calls)]

mod common;

use common::*;
use fhelium_cuda::Tensors;
use fhelium_residency::{
    CostAwareTieredLRU, DeterministicTieredLRU, EvictionReason, MemoryReservation, MoveKind,
    ReplicaMode, ResidencyAction, ResidencyHandle, ResidencyLocation, ResidencyRequest,
    ResidencyRequirement, TransferCostModel, TransferLink,
};
use fhelium_runtime::{
    ConsumerStreams, ResidencyController, ResidencyManager, RuntimeError, TransferStreams,
};

fn req(
    name: &str,
    reqs: &[(&ResidencyHandle, ResidencyLocation)],
    res: &[(ResidencyLocation, u64)],
) -> ResidencyRequest {
    ResidencyRequest::new(
        name,
        reqs.iter()
            .map(|(h, l)| ResidencyRequirement::new((*h).clone(), *l)),
        res.iter()
            .map(|(l, n)| MemoryReservation::new(*l, *n, "ws").unwrap()),
    )
    .unwrap()
}

/// The words of `h`'s replica at `at` (through a short lease; released at once).
fn value_words(m: &ResidencyManager, h: &ResidencyHandle, at: ResidencyLocation) -> Vec<u64> {
    let stream = at.is_device().then(|| m.memory().stream(&at).unwrap());
    let lease = m.acquire(&[h], at, stream.as_ref()).unwrap();
    let w = words(m.memory(), lease.value::<Tensors>(h).unwrap());
    lease.release_and_wait().unwrap();
    w
}

/// (used, reserved, peak used, peak charged) at `l`.
fn acct(m: &ResidencyManager, l: ResidencyLocation) -> (u64, u64, u64, u64) {
    let s = m.snapshot().unwrap();
    let x = s.location(l).unwrap();
    (
        x.used_bytes(),
        x.reserved_bytes(),
        x.peak_used_bytes(),
        x.peak_charged_bytes(),
    )
}

/// Both devices budgeted for two values; `a` and `x` (sole copies, adopted on sim:0) fill
/// sim:0; `b` lives on the host and is wanted on sim:0.
struct TwoDevices {
    m: ResidencyManager,
    a: ResidencyHandle,
    x: ResidencyHandle,
    b: ResidencyHandle,
}

fn two_devices() -> TwoDevices {
    let mem = memory();
    let m = manager(&mem, &[(S0, 2 * NB), (S1, 2 * NB), (N, 4 * NB)]);
    let a = adopt(&m, S0, ReplicaMode::Replicable, 1).raw().clone();
    let x = adopt(&m, S0, ReplicaMode::Replicable, 2).raw().clone();
    let b = repl(&m, 3).raw().clone();
    TwoDevices { m, a, x, b }
}

/// A consumer stream on sim:0 (device leases need one).
fn on_s0(m: &ResidencyManager) -> ConsumerStreams {
    let mut c = ConsumerStreams::new();
    c.insert(S0, m.memory().stream(&S0).unwrap());
    c
}

fn cost_policy(costs: TransferCostModel) -> CostAwareTieredLRU {
    CostAwareTieredLRU::new([(S0, vec![P, N, S1]), (S1, vec![P, N, S0])], costs, NB).unwrap()
}

#[test]
fn sole_copy_moves_to_the_cheaper_peer_device_with_exact_accounting() {
    let t = two_devices();
    let c = ResidencyController::with_policy(&t.m, cost_policy(TransferCostModel::new()));
    let r = req("b-on-sim0", &[(&t.b, S0)], &[]);
    let d = c.decide(&r).unwrap();
    // `a` (registered first, never accessed) is the victim; the peer is the cheapest tier.
    assert_eq!(
        d.plan().reclaim(),
        &[ResidencyAction::MoveResident {
            handle: t.a.clone(),
            to: S1,
            from: Some(S0),
        }]
    );
    assert_eq!(
        d.evictions()[0].reason,
        EvictionReason::SoleMaterializationMoved { destination: S1 }
    );
    let why = c.policy().explain_decision(&d);
    assert_eq!(why.len(), 1);
    assert_eq!(
        (why[0].chosen.to, why[0].chosen.link, why[0].kind),
        (S1, TransferLink::PeerDevice, MoveKind::Fallback)
    );
    assert_eq!(why[0].chosen.nbytes, NB);
    let before_a = value_words(&t.m, &t.a, S0);
    let u = c
        .use_request(&r, &on_s0(&t.m), &TransferStreams::new())
        .unwrap();
    let report = u.close().unwrap();
    // reclaim move (sim:0 -> sim:1), then ensure b at sim:0.
    let moves: Vec<_> = report
        .transitions()
        .iter()
        .map(|x| {
            (
                x.parts().source,
                x.parts().destination,
                x.parts().storage_nbytes,
            )
        })
        .collect();
    assert_eq!(
        moves,
        vec![(Some(S0), Some(S1), NB), (Some(P), Some(S0), NB)]
    );
    assert_eq!(locs(&t.m, &t.a), vec![S1]);
    assert_eq!(locs(&t.m, &t.x), vec![S0]);
    assert_eq!(locs(&t.m, &t.b), vec![P, S0]);
    // The moved value's data arrived intact on the peer.
    assert_eq!(value_words(&t.m, &t.a, S1), before_a);
    // Exact accounting on both devices and the host locations.
    assert_eq!(acct(&t.m, S0), (2 * NB, 0, 2 * NB, 2 * NB));
    assert_eq!(acct(&t.m, S1), (NB, 0, NB, NB));
    assert_eq!(acct(&t.m, N), (0, 0, 0, 0));
    assert_eq!(used(&t.m, P), NB);
}

#[test]
fn without_peer_access_the_host_is_cheaper() {
    let t = two_devices();
    let costs = TransferCostModel::new()
        .without_peer_access(S0, S1)
        .unwrap();
    let c = ResidencyController::with_policy(&t.m, cost_policy(costs));
    let r = req("b-on-sim0", &[(&t.b, S0)], &[]);
    let u = c
        .use_request(&r, &on_s0(&t.m), &TransferStreams::new())
        .unwrap();
    assert_eq!(
        u.decision().plan().reclaim(),
        &[ResidencyAction::MoveResident {
            handle: t.a.clone(),
            to: N,
            from: Some(S0),
        }]
    );
    u.close().unwrap();
    assert_eq!(locs(&t.m, &t.a), vec![N]);
    assert_eq!(acct(&t.m, S0), (2 * NB, 0, 2 * NB, 2 * NB));
    assert_eq!(acct(&t.m, N), (NB, 0, NB, NB));
    // sim:1 was never used, so never registered by a change: budgeted, empty.
    assert_eq!(acct(&t.m, S1), (0, 0, 0, 0));
}

#[test]
fn a_full_peer_falls_through_to_the_next_tier_by_cost() {
    let t = two_devices();
    // Fill sim:1 with two leased values: nothing there can be reclaimed.
    let y = adopt(&t.m, S1, ReplicaMode::Replicable, 4).raw().clone();
    let z = adopt(&t.m, S1, ReplicaMode::Replicable, 5).raw().clone();
    let s1 = t.m.memory().stream(&S1).unwrap();
    let lease = t.m.acquire(&[&y, &z], S1, Some(&s1)).unwrap();
    let c = ResidencyController::with_policy(&t.m, cost_policy(TransferCostModel::new()));
    let r = req("b-on-sim0", &[(&t.b, S0)], &[]);
    let d = c.decide(&r).unwrap();
    assert_eq!(
        d.plan().reclaim(),
        &[ResidencyAction::MoveResident {
            handle: t.a.clone(),
            to: N,
            from: Some(S0),
        }]
    );
    let why = &c.policy().explain_decision(&d)[0];
    assert_eq!(why.alternatives[0].to, S1, "ranked first, but full");
    assert_eq!(why.chosen.to, N);
    c.scope(&d, &TransferStreams::new())
        .unwrap()
        .close()
        .unwrap();
    assert_eq!(acct(&t.m, S1), (2 * NB, 0, 2 * NB, 2 * NB));
    assert_eq!(acct(&t.m, N), (NB, 0, NB, NB));
    drop(lease);
}

#[test]
fn configured_tiers_naming_the_peer_device_work_with_the_fhelium_policy() {
    let t = two_devices();
    let lru = DeterministicTieredLRU::with_fallback_tiers([(S0, vec![S1, N])]).unwrap();
    let c = ResidencyController::with_policy(&t.m, lru);
    let r = req("b-on-sim0", &[(&t.b, S0)], &[]);
    c.use_request(&r, &on_s0(&t.m), &TransferStreams::new())
        .unwrap()
        .close()
        .unwrap();
    assert_eq!(locs(&t.m, &t.a), vec![S1]);
    assert_eq!(acct(&t.m, S0), (2 * NB, 0, 2 * NB, 2 * NB));
    assert_eq!(acct(&t.m, S1), (NB, 0, NB, NB));
}

#[test]
fn one_request_across_both_devices_with_per_device_reservations() {
    let mem = memory();
    let m = manager(&mem, &[(S0, 2 * NB), (S1, 2 * NB)]);
    let w = repl(&m, 1);
    let old0 = repl(&m, 2);
    let old1 = repl(&m, 3);
    m.ensure(old0.raw(), S0, None).unwrap();
    m.ensure(old1.raw(), S1, None).unwrap();
    let c = ResidencyController::new(&m);
    let r = req(
        "w-on-both",
        &[(w.raw(), S0), (w.raw(), S1)],
        &[(S0, NB), (S1, NB)],
    );
    let d = c.decide(&r).unwrap();
    // Each device reclaims its own cached replica; nothing crosses devices.
    assert_eq!(
        d.plan().reclaim(),
        &[
            ResidencyAction::DropResident {
                handle: old0.raw().clone(),
                location: S0,
            },
            ResidencyAction::DropResident {
                handle: old1.raw().clone(),
                location: S1,
            },
        ]
    );
    let mut streams = TransferStreams::new();
    streams.insert(S0, mem.stream(&S0).unwrap());
    streams.insert(S1, mem.stream(&S1).unwrap());
    let scope = c.scope(&d, &streams).unwrap();
    // Inside the scope: the value on both devices plus each device's reservation.
    for l in [S0, S1] {
        assert_eq!(acct(&m, l), (NB, NB, NB, 2 * NB), "{l}");
    }
    let report = scope.close().unwrap();
    assert_eq!(report.transitions().len(), 4);
    for l in [S0, S1] {
        assert_eq!(acct(&m, l), (NB, 0, NB, 2 * NB), "{l}");
    }
    assert_eq!(locs(&m, w.raw()), vec![P, S0, S1]);
    assert_eq!(value_words(&m, w.raw(), S1), value_words(&m, w.raw(), P));
}

#[test]
fn budgets_are_per_device() {
    let mem = memory();
    let m = manager(&mem, &[(S0, 2 * NB), (S1, NB)]);
    let hs: Vec<_> = (0..3).map(|i| repl(&m, i)).collect();
    m.ensure(hs[0].raw(), S1, None).unwrap();
    let e = m.ensure(hs[1].raw(), S1, None).unwrap_err();
    match &e {
        RuntimeError::Budget {
            location,
            budget_bytes,
            used_bytes,
            requested_bytes,
            ..
        } => assert_eq!(
            (*location, *budget_bytes, *used_bytes, *requested_bytes),
            (S1, NB, NB, NB)
        ),
        other => panic!("{other:?}"),
    }
    // sim:0 has its own budget: both fit there.
    m.ensure(hs[1].raw(), S0, None).unwrap();
    m.ensure(hs[2].raw(), S0, None).unwrap();
    assert_eq!(used(&m, S0), 2 * NB);
    assert_eq!(used(&m, S1), NB);
    // A device-to-device move needs room at the destination while the source is charged.
    let e = m.move_to(hs[1].raw(), S1, Some(S0), None).unwrap_err();
    assert!(
        matches!(e, RuntimeError::Budget { location: S1, .. }),
        "{e:?}"
    );
    m.drop_at(hs[0].raw(), S1).unwrap();
    m.move_to(hs[1].raw(), S1, Some(S0), None).unwrap();
    assert_eq!((used(&m, S0), used(&m, S1)), (NB, NB));
    assert_eq!(locs(&m, hs[1].raw()), vec![P, S1]);
}
