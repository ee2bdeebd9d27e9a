//! Several device locations at once (issue 9, item 1): per-device budgets, fallback tiers that
//! name another device, and the cost-ranked policy that moves a sole copy to a peer device when
//! that is cheaper than the host (docs/decisions/0102).
#![allow(clippy::unwrap_used)]
#![allow(non_upper_case_globals)]
mod common;
use common::*;
use fhelium_residency::*;

const n: u64 = 1 << 20;
const S0: ResidencyLocation = ResidencyLocation::Sim(0);
const S1: ResidencyLocation = ResidencyLocation::Sim(1);
const S2: ResidencyLocation = ResidencyLocation::Sim(2);
use ReplicaMode::Replicable as REPL;

fn cost_policy(
    tiers: Vec<(ResidencyLocation, Vec<ResidencyLocation>)>,
    costs: TransferCostModel,
) -> CostAwareTieredLRU {
    CostAwareTieredLRU::new(tiers, costs, n).unwrap()
}

#[test]
fn link_kinds_and_estimates() {
    let c = TransferCostModel::new();
    assert_eq!(c.link(S0, S0), TransferLink::SameLocation);
    assert_eq!(c.link(S0, S1), TransferLink::PeerDevice);
    assert_eq!(c.link(C0, C1), TransferLink::PeerDevice);
    assert_eq!(c.link(C0, S1), TransferLink::StagedThroughHost);
    assert_eq!(c.link(S0, N), TransferLink::DevicePinnedHost);
    assert_eq!(c.link(P, S0), TransferLink::DevicePageableHost);
    assert_eq!(c.link(P, N), TransferLink::HostToHost);
    assert_eq!(c.estimate(S0, S0, n).nanoseconds, 0);
    // latency + bytes / bandwidth, rounded up.
    let peer = c.link_cost(TransferLink::PeerDevice).unwrap();
    let want = peer.latency_ns() + (n * 1_000_000_000).div_ceil(peer.bytes_per_second());
    assert_eq!(c.estimate(S0, S1, n).nanoseconds, want);
    // Default ranking: peer < pinned < pageable for a device's sole copy.
    let (peer, pinned, pageable) = (
        c.estimate(S0, S1, n).nanoseconds,
        c.estimate(S0, N, n).nanoseconds,
        c.estimate(S0, P, n).nanoseconds,
    );
    assert!(
        peer < pinned && pinned < pageable,
        "{peer} {pinned} {pageable}"
    );
    // Without peer access a device-to-device copy is two pinned hops.
    let staged = c.clone().without_peer_access(S1, S0).unwrap();
    assert_eq!(staged.link(S0, S1), TransferLink::StagedThroughHost);
    assert_eq!(staged.link(S0, S2), TransferLink::PeerDevice);
    assert_eq!(staged.estimate(S0, S1, n).nanoseconds, 2 * pinned);
    // Marking twice is idempotent, in either order.
    assert_eq!(staged.clone().without_peer_access(S0, S1).unwrap(), staged);
    let shown = c.estimate(S0, S1, n).to_string();
    assert!(
        shown.starts_with("sim:0 -> sim:1 1.00 MiB over peer-device: "),
        "{shown}"
    );
}

#[test]
fn cost_model_errors() {
    let e = LinkCost::new(0, 5).unwrap_err();
    assert!(matches!(e, ModelError::InvalidCostModel { .. }));
    assert!(e.to_string().contains("bandwidth must be greater than 0"));
    let c = TransferCostModel::new();
    for bad in [(S0, S0), (S0, N), (P, S1)] {
        let e = c.clone().without_peer_access(bad.0, bad.1).unwrap_err();
        assert!(e.to_string().contains("two different devices"), "{e}");
    }
    for link in [TransferLink::SameLocation, TransferLink::StagedThroughHost] {
        let e = c
            .clone()
            .with_link(link, LinkCost::new(1, 0).unwrap())
            .unwrap_err();
        assert!(e.to_string().contains("derived"), "{e}");
    }
    let e = CostAwareTieredLRU::new([(S0, vec![S1])], c.clone(), 0).unwrap_err();
    assert!(e.to_string().contains("reference_nbytes"), "{e}");
    // The tier rules of DeterministicTieredLRU apply unchanged.
    assert!(matches!(
        CostAwareTieredLRU::new([(S0, vec![S0])], c.clone(), n).unwrap_err(),
        ModelError::TierContainsSource { location: S0 }
    ));
    assert!(matches!(
        CostAwareTieredLRU::new([(S0, vec![S1, S1])], c.clone(), n).unwrap_err(),
        ModelError::DuplicateTierDestination { .. }
    ));
    assert!(matches!(
        CostAwareTieredLRU::new([(S0, vec![S1]), (S0, vec![N])], c, n).unwrap_err(),
        ModelError::DuplicateTierSource { location: S0 }
    ));
    // Serde goes through the validating constructors.
    let bad = serde_json::json!({"bytes_per_second": 0, "latency_ns": 1});
    assert!(serde_json::from_value::<LinkCost>(bad).is_err());
}

#[test]
fn cost_policy_ranks_tiers_and_records_its_configuration() {
    let costs = TransferCostModel::new();
    let p = cost_policy(vec![(S0, vec![P, N, S1]), (S1, vec![N, S0])], costs.clone());
    assert_eq!(p.name(), "cost-aware-tiered-lru");
    assert_eq!(p.fallback_locations(S0), &[S1, N, P]);
    assert_eq!(p.fallback_locations(S1), &[S0, N]);
    assert!(p.fallback_locations(C0).is_empty());
    let id = p.config_identity();
    assert_eq!(
        id[0],
        (
            "fallback_tiers".to_owned(),
            "sim:0=>sim:1,pinned-host,pageable-host;sim:1=>sim:0,pinned-host".to_owned()
        )
    );
    assert_eq!(id[1].0, "costs");
    assert!(
        id[1].1.contains("peer-device=300000000000B/s+10000ns"),
        "{}",
        id[1].1
    );
    assert_eq!(id[2], ("reference_nbytes".to_owned(), n.to_string()));
    // Without peer access the peer costs two pinned hops: the host goes first.
    let staged = cost_policy(
        vec![(S0, vec![P, N, S1])],
        costs.clone().without_peer_access(S0, S1).unwrap(),
    );
    assert_eq!(staged.fallback_locations(S0), &[N, S1, P]);
    assert_ne!(staged.config_identity(), p.config_identity());
    // Equal costs keep the configured order.
    let flat = LinkCost::new(1_000_000_000, 0).unwrap();
    let mut eq = costs;
    for l in [
        TransferLink::DevicePinnedHost,
        TransferLink::DevicePageableHost,
        TransferLink::PeerDevice,
    ] {
        eq = eq.with_link(l, flat).unwrap();
    }
    assert_eq!(
        cost_policy(vec![(S0, vec![P, S1, N])], eq).fallback_locations(S0),
        &[P, S1, N]
    );
    // The config round-trips through serde and the validating constructor.
    let back: CostAwareTieredLRU =
        serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
    assert_eq!(back, p);
    let ranked = p.ranked_fallbacks(S0, 4 * n);
    assert_eq!(
        ranked.iter().map(|e| e.to).collect::<Vec<_>>(),
        vec![S1, N, P]
    );
    assert!(ranked.iter().all(|e| e.nbytes == 4 * n && e.from == S0));
}

/// Two devices with their own budgets: `a` (sole copy, MUST_PRESERVE) fills sim:0, and the
/// request wants `b` there. The planner must move `a` off sim:0; where to depends on the tiers.
fn two_devices(s1_free: bool) -> (ResidencySnapshot, ResidencyRequest) {
    let b = ResidencySnapshotBuilder::new(MANAGER, 9)
        .budget(S0, n)
        .budget(S1, n)
        .budget(N, 4 * n);
    let mut values = vec![
        adopted(0, n, REPL, &[S0]).with_last_access(1),
        adopted(1, n, REPL, &[P]),
    ];
    if !s1_free {
        // sim:1 holds a protected value: nothing there can be reclaimed.
        values.push(adopted(2, n, REPL, &[S1]).at_protected(P, 0, 0, 0));
        let last = values.len() - 1;
        values[last].materializations[0] =
            values[last].materializations[0].with_protection(1, 0, 0);
    }
    let snap = build(b, values);
    let r = req("b-on-sim0", &[(&handle(1, "T"), S0)], vec![]);
    (snap, r)
}

#[test]
fn fallback_tiers_may_name_another_device() {
    let (snap, r) = two_devices(true);
    let (a, b) = (handle(0, "T"), handle(1, "T"));
    // FHElium's policy takes the tiers in configured order: device first when listed first.
    let lru = DeterministicTieredLRU::with_fallback_tiers([(S0, vec![S1, N])]).unwrap();
    let d = decide(&snap, &r, &lru, None).unwrap();
    assert_eq!(d.plan().reclaim(), &[move_(&a, S1, Some(S0))]);
    assert_eq!(d.plan().enter(), &[ensure(&b, S0)]);
    let e = &d.evictions()[0];
    assert_eq!((e.rank, e.released_location, e.released_nbytes), (0, S0, n));
    assert_eq!(
        e.reason,
        EvictionReason::SoleMaterializationMoved { destination: S1 }
    );
    // ... and the host first when listed first.
    let lru = DeterministicTieredLRU::with_fallback_tiers([(S0, vec![N, S1])]).unwrap();
    let d = decide(&snap, &r, &lru, None).unwrap();
    assert_eq!(d.plan().reclaim(), &[move_(&a, N, Some(S0))]);
    // Per-device peaks: the move charges sim:1 while sim:0 still holds `a`.
    let lru = DeterministicTieredLRU::with_fallback_tiers([(S0, vec![S1, N])]).unwrap();
    let d = decide(&snap, &r, &lru, None).unwrap();
    assert_eq!(d.explanation().predicted_peak(S0), Some(n));
    assert_eq!(d.explanation().predicted_peak(S1), Some(n));
    // No tiers at all: nothing can take `a`'s sole copy (spec 3.7: never inferred).
    let e = decide(&snap, &r, &DeterministicTieredLRU::new(), None).unwrap_err();
    assert!(e.to_string().contains("no legal drop or fallback"), "{e}");
}

#[test]
fn cost_policy_moves_to_the_peer_when_cheaper_and_explains_why() {
    let (snap, r) = two_devices(true);
    let (a, b) = (handle(0, "T"), handle(1, "T"));
    // Host listed first, but the peer is cheaper: the peer wins.
    let p = cost_policy(vec![(S0, vec![P, N, S1])], TransferCostModel::new());
    let d = decide(&snap, &r, &p, None).unwrap();
    assert_eq!(d.plan().reclaim(), &[move_(&a, S1, Some(S0))]);
    assert_eq!(d.plan().enter(), &[ensure(&b, S0)]);
    assert_eq!(d.policy_name(), "cost-aware-tiered-lru");
    assert_eq!(d.policy_config(), &p.config_identity());
    let why = p.explain_decision(&d);
    assert_eq!(why.len(), 1);
    let w = &why[0];
    assert_eq!((w.from, w.chosen.to, w.kind), (S0, S1, MoveKind::Fallback));
    assert_eq!(w.chosen.link, TransferLink::PeerDevice);
    assert_eq!(w.chosen.nbytes, n);
    assert_eq!(
        w.alternatives.iter().map(|e| e.to).collect::<Vec<_>>(),
        vec![S1, N, P]
    );
    assert!(w
        .alternatives
        .windows(2)
        .all(|x| x[0].nanoseconds <= x[1].nanoseconds));
    assert!(!w.ranked_differently_at_this_size);
    assert_eq!(w.reason(), Some(d.evictions()[0].reason));
    let text = w.to_string();
    assert!(
        text.starts_with(&format!(
            "move {a} sim:0 -> sim:1 1.00 MiB over peer-device: "
        )),
        "{text}"
    );
    assert!(
        text.contains("(cheapest fallback tier with room); tiers by cost: sim:1 "),
        "{text}"
    );
    // The decision's text IR carries the cost configuration and round-trips.
    let ir = d.to_string();
    assert!(ir.contains("config \"costs\""), "{ir}");
    assert_eq!(parse_decision(&ir).unwrap(), d);

    // Without peer access the staged copy costs more than pinned host: the host wins.
    let staged = TransferCostModel::new()
        .without_peer_access(S0, S1)
        .unwrap();
    let p = cost_policy(vec![(S0, vec![P, N, S1])], staged);
    let d = decide(&snap, &r, &p, None).unwrap();
    assert_eq!(d.plan().reclaim(), &[move_(&a, N, Some(S0))]);
    let w = &p.explain_decision(&d)[0];
    assert_eq!(
        (w.chosen.to, w.chosen.link),
        (N, TransferLink::DevicePinnedHost)
    );

    // The peer is full of protected data: the next tier by cost (pinned host) takes it.
    let (snap, r) = two_devices(false);
    let p = cost_policy(vec![(S0, vec![P, N, S1])], TransferCostModel::new());
    let d = decide(&snap, &r, &p, None).unwrap();
    assert_eq!(d.plan().reclaim(), &[move_(&a, N, Some(S0))]);
    let w = &p.explain_decision(&d)[0];
    assert_eq!(w.chosen.to, N);
    assert_eq!(
        w.alternatives[0].to, S1,
        "the peer ranked first but had no room"
    );
}

#[test]
fn requests_spanning_two_devices_with_their_own_budgets() {
    // `w` is wanted on both devices; each device has room for one value plus a reservation.
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 4)
            .budget(S0, 2 * n)
            .budget(S1, 2 * n),
        vec![
            adopted(0, n, REPL, &[P]),
            adopted(1, n, REPL, &[P, S0]).with_last_access(1),
            adopted(2, n, REPL, &[P, S1]).with_last_access(2),
        ],
    );
    let w = handle(0, "T");
    let r = req(
        "w-on-both",
        &[(&w, S0), (&w, S1)],
        vec![reservation(S0, n, "out0"), reservation(S1, n, "out1")],
    );
    let d = decide(&snap, &r, &DeterministicTieredLRU::new(), None).unwrap();
    // Each device drops its own cached replica; nothing crosses devices.
    assert_eq!(
        d.plan().reclaim(),
        &[drop_(&handle(1, "T"), S0), drop_(&handle(2, "T"), S1)]
    );
    assert_eq!(d.plan().enter(), &[ensure(&w, S0), ensure(&w, S1)]);
    assert_eq!(d.explanation().predicted_peak(S0), Some(2 * n));
    assert_eq!(d.explanation().predicted_peak(S1), Some(2 * n));
    // One device too small for value + reservation: infeasible, named per location.
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 4)
            .budget(S0, 2 * n)
            .budget(S1, n),
        vec![adopted(0, n, REPL, &[P])],
    );
    let e = decide(&snap, &r, &DeterministicTieredLRU::new(), None).unwrap_err();
    assert!(e.to_string().contains("sim:1"), "{e}");
}
