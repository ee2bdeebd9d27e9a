//! Planner rules (spec 3) and the worked examples of spec 3.14, reproduced exactly.
#![allow(clippy::unwrap_used)]
#![allow(non_upper_case_globals)]
mod common;
use common::*;
use fhelium_residency::*;

const n: u64 = 8;
use ReplicaMode::{Exclusive as EXCL, Replicable as REPL};

fn lru() -> DeterministicTieredLRU {
    DeterministicTieredLRU::new()
}

fn tiers(t: Vec<(ResidencyLocation, Vec<ResidencyLocation>)>) -> DeterministicTieredLRU {
    DeterministicTieredLRU::with_fallback_tiers(t).unwrap()
}

#[test]
fn a_lru_drops_the_oldest_cached_replica() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 3).budget(N, 2 * n),
        vec![
            adopted(0, n, REPL, &[P, N]).with_last_access(1),
            adopted(1, n, REPL, &[P, N]).with_last_access(2),
            adopted(2, n, REPL, &[P]),
        ],
    );
    let (h0, h2) = (handle(0, "T"), handle(2, "T"));
    let r = req("a", &[(&h2, N)], vec![]);
    let d = decide(&snap, &r, &lru(), None).unwrap();
    assert_eq!(d.plan().reclaim(), &[drop_(&h0, N)]);
    assert_eq!(d.plan().enter(), &[ensure(&h2, N)]);
    assert_eq!(d.explored_states(), 2);
    let e = &d.evictions()[0];
    assert_eq!((e.rank, e.released_location, e.released_nbytes), (0, N, n));
    assert_eq!(e.reason, EvictionReason::AnotherMaterialization);
    assert!(!d
        .plan()
        .actions()
        .any(|a| matches!(a, ResidencyAction::DiscardValue { .. })));

    // Priority 10 on h0 retains it: h1 is dropped instead.
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 3).budget(N, 2 * n),
        vec![
            adopted(0, n, REPL, &[P, N])
                .with_last_access(1)
                .with_metadata(ResidencyPolicyMetadata::new(10, None).unwrap()),
            adopted(1, n, REPL, &[P, N]).with_last_access(2),
            adopted(2, n, REPL, &[P]),
        ],
    );
    let d = decide(&snap, &r, &lru(), None).unwrap();
    assert_eq!(d.plan().reclaim(), &[drop_(&handle(1, "T"), N)]);
}

#[test]
fn recency_argument_overrides_snapshot_epochs() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 3).budget(N, 2 * n),
        vec![
            adopted(0, n, REPL, &[P, N]).with_last_access(1),
            adopted(1, n, REPL, &[P, N]).with_last_access(2),
            adopted(2, n, REPL, &[P]),
        ],
    );
    let r = req("a", &[(&handle(2, "T"), N)], vec![]);
    let mut recency = ResidencyRecency::new();
    recency.record(handle(0, "T"), 9);
    recency.record(handle(1, "T"), 4);
    let d = decide(&snap, &r, &lru(), Some(&recency)).unwrap();
    assert_eq!(d.plan().reclaim(), &[drop_(&handle(1, "T"), N)]);
    // Never accessed (absent from the table) goes first.
    let recency = ResidencyRecency::from(vec![(handle(1, "T"), 4)]);
    let d = decide(&snap, &r, &lru(), Some(&recency)).unwrap();
    assert_eq!(d.plan().reclaim(), &[drop_(&handle(0, "T"), N)]);
}

#[test]
fn b_backtracks_from_a_dead_end_move() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 9)
            .budget(N, 2 * n)
            .budget(P, 2 * n),
        vec![
            adopted(0, n, EXCL, &[N]), // first
            sourced(1, n, N, &[N]),    // second
            adopted(2, n, EXCL, &[P]), // prot
            sourced(3, n, P, &[]),     // req
        ],
    );
    let (second, prot, reqh) = (handle(1, "T"), handle(2, "T"), handle(3, "T"));
    let r = req("b", &[(&prot, P), (&reqh, N)], vec![]);
    let d = decide(&snap, &r, &tiers(vec![(N, vec![P])]), None).unwrap();
    assert_eq!(d.plan().reclaim(), &[drop_(&second, N)]);
    assert_eq!(d.plan().enter(), &[ensure(&reqh, N)]);
    assert_eq!(d.evictions()[0].rank, 1);
    assert_eq!(d.evictions()[0].reason, EvictionReason::SourceReconstructs);
    // root, the abandoned move of `first`, the drop of `second`
    assert_eq!(d.explored_states(), 3);
}

#[test]
fn c_scratch_reclaim_and_restore() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 9)
            .budget(N, 2 * n)
            .budget(P, n),
        vec![
            sourced(0, n, N, &[N]),    // a
            adopted(1, n, EXCL, &[N]), // b
            adopted(2, n, EXCL, &[P]), // c
        ],
    );
    let (a, b, c) = (handle(0, "T"), handle(1, "T"), handle(2, "T"));
    let r = req("c", &[(&c, N), (&b, P), (&a, N)], vec![]);
    let d = decide(&snap, &r, &lru(), None).unwrap();
    assert_eq!(
        d.plan().reclaim(),
        &[drop_(&a, N), move_(&c, N, Some(P)), move_(&b, P, Some(N))]
    );
    assert_eq!(d.plan().enter(), &[ensure(&a, N)]);
    let reasons: Vec<String> = d.evictions().iter().map(|e| e.reason.to_string()).collect();
    assert_eq!(
        reasons,
        [
            "registered source can reconstruct the logical value",
            "sole materialization moved to requested destination pinned-host instead of reconstructing it later",
            "sole materialization moved to requested destination pageable-host instead of reconstructing it later",
        ]
    );
    // b is ordinary at N (rank 0); c is the only candidate at P; a the only one at N.
    assert!(d.evictions().iter().all(|e| e.rank == 0));
    assert_eq!(d.explored_states(), 4);
    // The single-charge reconstruction at N peaks at the budget.
    assert_eq!(d.explanation().predicted_peak(N), Some(2 * n));
}

#[test]
fn d_moves_a_source_backed_value_when_its_drop_dead_ends() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1)
            .budget(P, n)
            .budget(N, n),
        vec![sourced(0, n, P, &[P])],
    );
    let h = handle(0, "T");
    let r = req("d", &[(&h, N)], vec![reservation(P, n, "ws")]);
    let d = decide(&snap, &r, &lru(), None).unwrap();
    assert_eq!(d.plan().reclaim(), &[move_(&h, N, Some(P))]);
    assert!(d.plan().enter().is_empty());
    assert_eq!(
        d.evictions()[0].reason,
        EvictionReason::SoleMaterializationMoved { destination: N }
    );
    assert_eq!(d.explored_states(), 3);
}

#[test]
fn e_reservation_driven_reclaim() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1).budget(N, 2 * n),
        vec![adopted(0, n, REPL, &[P, N]), adopted(1, n, REPL, &[P])],
    );
    let (first, second) = (handle(0, "T"), handle(1, "T"));
    let r = req("e", &[(&second, N)], vec![reservation(N, n, "ws")]);
    let d = decide(&snap, &r, &lru(), None).unwrap();
    assert_eq!(d.plan().reclaim(), &[drop_(&first, N)]);
    assert_eq!(d.plan().enter(), &[ensure(&second, N)]);
    assert_eq!(d.explanation().predicted_peak(N), Some(2 * n));
}

#[test]
fn f_ordered_exclusive_swap_needs_no_reclaim() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1)
            .budget(P, 2 * n)
            .budget(N, n),
        vec![adopted(0, n, EXCL, &[N]), adopted(1, n, EXCL, &[P])],
    );
    let (first, second) = (handle(0, "T"), handle(1, "T"));
    let r = req("f", &[(&first, P), (&second, N)], vec![]);
    let d = decide(&snap, &r, &lru(), None).unwrap();
    assert!(d.plan().reclaim().is_empty());
    assert_eq!(
        d.plan().enter(),
        &[move_(&first, P, Some(N)), move_(&second, N, Some(P))]
    );
    assert_eq!(d.explored_states(), 1);
}

#[test]
fn fitting_request_explores_exactly_one_state_and_second_decide_is_empty() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 4).budget(N, n),
        vec![adopted(0, n, REPL, &[P])],
    );
    let h = handle(0, "T");
    let r = req("fit", &[(&h, N)], vec![]);
    let d = decide(&snap, &r, &lru(), None).unwrap();
    assert_eq!(d.explored_states(), 1);
    assert_eq!(d.expected_state_version(), 4);
    assert!(d.plan().reclaim().is_empty() && d.evictions().is_empty());
    assert_eq!(d.plan().enter(), &[ensure(&h, N)]);
    // Once placed, the same request needs nothing.
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 5).budget(N, n),
        vec![adopted(0, n, REPL, &[P, N])],
    );
    let d = decide(&snap, &r, &lru(), None).unwrap();
    assert!(d.plan().reclaim().is_empty() && d.plan().enter().is_empty());
}

#[test]
fn extra_replica_of_a_requested_handle_is_reclaimable() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1).budget(N, n),
        vec![adopted(0, n, REPL, &[P, N]), adopted(1, n, REPL, &[P])],
    );
    let (retained, incoming) = (handle(0, "T"), handle(1, "T"));
    let r = req("57", &[(&retained, P), (&incoming, N)], vec![]);
    let d = decide(&snap, &r, &lru(), None).unwrap();
    assert_eq!(d.plan().reclaim(), &[drop_(&retained, N)]);
}

#[test]
fn replicable_value_may_be_required_at_two_locations() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1).budget(N, n),
        vec![adopted(0, n, REPL, &[P])],
    );
    let h = handle(0, "T");
    let d = decide(&snap, &req("59", &[(&h, P), (&h, N)], vec![]), &lru(), None).unwrap();
    assert_eq!(d.plan().enter(), &[ensure(&h, N)]);
    assert_eq!(d.explored_states(), 1);
}

#[test]
fn sole_must_preserve_copy_moves_along_a_fallback_tier() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1)
            .budget(P, 2 * n)
            .budget(N, n),
        vec![adopted(0, n, EXCL, &[N]), adopted(1, n, REPL, &[P])],
    );
    let (first, second) = (handle(0, "T"), handle(1, "T"));
    let r = req("61", &[(&second, N)], vec![]);
    let d = decide(&snap, &r, &tiers(vec![(N, vec![P])]), None).unwrap();
    assert_eq!(d.plan().reclaim(), &[move_(&first, P, Some(N))]);
    assert_eq!(d.explored_states(), 2);
    // Without tiers the sole copy is pinned against automation.
    let err = decide(&snap, &r, &lru(), None).unwrap_err();
    assert!(
        err.to_string().contains("no legal drop or fallback"),
        "{err}"
    );
    assert!(
        err.to_string().contains("no invariant-valid victim"),
        "{err}"
    );
}

#[test]
fn fallback_with_a_full_destination_fails() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1)
            .budget(P, n)
            .budget(N, n),
        vec![adopted(0, n, EXCL, &[N]), adopted(1, n, REPL, &[P])],
    );
    let r = req("63", &[(&handle(1, "T"), N)], vec![]);
    let err = decide(&snap, &r, &tiers(vec![(N, vec![P])]), None).unwrap_err();
    assert!(matches!(err, ModelError::Infeasible { .. }));
    assert!(err.to_string().contains("fallback"), "{err}");
}

fn nine_replicas() -> (ResidencySnapshot, ResidencyRequest) {
    let values = (0..9).map(|i| adopted(i, n, REPL, &[P, N])).collect();
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1).budget(N, 9 * n),
        values,
    );
    let r = req(
        "65",
        &[(&handle(0, "T"), P)],
        vec![reservation(N, 10 * n, "too big")],
    );
    (snap, r)
}

#[test]
fn impossible_search_is_memoized_to_exactly_512_states() {
    let (snap, r) = nine_replicas();
    let err = decide_with_limit(&snap, &r, &lru(), None, 512).unwrap_err();
    assert!(matches!(err, ModelError::Infeasible { .. }), "{err}");
    assert!(err.to_string().contains("no invariant-valid victim"));
    assert!(!err.to_string().contains("inconclusive"));
    // Exactly 512 states are counted: one fewer allowed makes it inconclusive.
    let err = decide_with_limit(&snap, &r, &lru(), None, 511).unwrap_err();
    match &err {
        ModelError::SearchLimit {
            state_limit,
            explored_states,
            ..
        } => {
            assert_eq!((*state_limit, *explored_states), (511, 511));
        }
        other => panic!("expected a search-limit error, got {other}"),
    }
}

#[test]
fn limit_one_is_inconclusive_not_infeasible() {
    let (snapshot, request, policy, _) = seed();
    let err = decide_with_limit(&snapshot, &request, &policy, None, 1).unwrap_err();
    let text = err.to_string();
    assert!(matches!(
        err,
        ModelError::SearchLimit {
            explored_states: 1,
            state_limit: 1,
            ..
        }
    ));
    assert!(
        text.contains("inconclusive") && !text.contains("infeasible"),
        "{text}"
    );
    assert!(text.contains("exceeded its deterministic state limit during ordered request"));
    assert_eq!(
        decide_with_limit(&snapshot, &request, &policy, None, 0).unwrap_err(),
        ModelError::ZeroSearchLimit
    );
}

#[test]
fn protected_materialization_is_never_a_victim() {
    for (u, h, p) in [(1, 0, 0), (0, 1, 0), (0, 0, 1)] {
        let snap = build(
            ResidencySnapshotBuilder::new(MANAGER, 1).budget(N, n),
            vec![
                adopted(0, n, REPL, &[P]).at_protected(N, u, h, p),
                adopted(1, n, REPL, &[P]),
            ],
        );
        let r = req("67", &[(&handle(1, "T"), N)], vec![]);
        let err = decide(&snap, &r, &lru(), None).unwrap_err();
        assert!(
            err.to_string().contains("no invariant-valid victim"),
            "{err}"
        );
    }
}

#[test]
fn unprotected_source_is_projected_with_its_counts() {
    // A held replica at P is copied to N; the projection inherits the hold, so when the
    // next requirement needs room at N it is not a victim (spec 7.1.7).
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1).budget(N, n),
        vec![
            adopted(0, n, REPL, &[]).at_protected(P, 0, 1, 0),
            adopted(1, n, REPL, &[P]),
        ],
    );
    let r = req(
        "proj",
        &[(&handle(0, "T"), N), (&handle(1, "T"), N)],
        vec![],
    );
    let err = decide(&snap, &r, &lru(), None).unwrap_err();
    assert!(
        err.to_string().contains("no invariant-valid victim"),
        "{err}"
    );
}

#[test]
fn deterministic_tie_breaking() {
    let values = vec![
        adopted(0, n, REPL, &[P, N]),
        adopted(1, n, REPL, &[P, N]),
        adopted(2, n, REPL, &[P, N]),
        adopted(3, n, REPL, &[P]),
    ];
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1).budget(N, 3 * n),
        values,
    );
    let r = req("75", &[(&handle(3, "T"), N)], vec![]);
    let d = decide(&snap, &r, &lru(), None).unwrap();
    assert_eq!(d.plan().reclaim(), &[drop_(&handle(0, "T"), N)]);

    let key = |k: &str| ResidencyPolicyMetadata::new(0, Some(k)).unwrap();
    let values = vec![
        adopted(0, n, REPL, &[P, N]).with_metadata(key("b")),
        adopted(1, n, REPL, &[P, N]).with_metadata(key("a")),
        adopted(2, n, REPL, &[P, N]),
        adopted(3, n, REPL, &[P]),
    ];
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1).budget(N, 3 * n),
        values,
    );
    let d = decide(&snap, &r, &lru(), None).unwrap();
    assert_eq!(d.plan().reclaim(), &[drop_(&handle(1, "T"), N)]);
    // The policy's full order: keyed (lexicographic) before un-keyed.
    let metas = [key("b"), key("a"), ResidencyPolicyMetadata::default()];
    let hs = [handle(0, "T"), handle(1, "T"), handle(2, "T")];
    let cands: Vec<ResidencyEvictionCandidate<'_>> = (0..3)
        .map(|i| ResidencyEvictionCandidate {
            handle: &hs[i],
            location: N,
            charged_nbytes: n,
            registration_index: i as u64,
            last_access_epoch: None,
            metadata: &metas[i],
        })
        .collect();
    assert_eq!(lru().order_candidates(&cands), vec![1, 0, 2]);
}

#[test]
fn required_endpoints_are_ordered_after_ordinary_candidates() {
    // h0 at N is a required endpoint (and oldest); h1 at N is ordinary: h1 goes first.
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1).budget(N, 2 * n),
        vec![
            adopted(0, n, REPL, &[P, N]),
            adopted(1, n, REPL, &[P, N]).with_last_access(5),
            adopted(2, n, REPL, &[P]),
        ],
    );
    let r = req("req", &[(&handle(0, "T"), N), (&handle(2, "T"), N)], vec![]);
    let d = decide(&snap, &r, &lru(), None).unwrap();
    assert_eq!(d.plan().reclaim(), &[drop_(&handle(1, "T"), N)]);
}

#[test]
fn request_validation_errors() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1),
        vec![
            adopted(0, n, EXCL, &[P]),
            adopted(1, n, REPL, &[P]).discarded(),
        ],
    );
    let foreign = ResidencyHandle::new(2, 0, "T").unwrap();
    let err = decide(&snap, &req("x", &[(&foreign, N)], vec![]), &lru(), None).unwrap_err();
    assert!(matches!(err, ModelError::ForeignHandle { .. }));
    assert!(err.to_string().contains("another manager"));
    let err = decide(
        &snap,
        &req("x", &[(&handle(7, "T"), N)], vec![]),
        &lru(),
        None,
    )
    .unwrap_err();
    assert!(matches!(err, ModelError::UnknownHandle { .. }) && err.to_string().contains("unknown"));
    let err = decide(
        &snap,
        &req("x", &[(&handle(1, "T"), N)], vec![]),
        &lru(),
        None,
    )
    .unwrap_err();
    assert!(
        matches!(err, ModelError::DiscardedHandle { .. }) && err.to_string().contains("discarded")
    );
    let h = handle(0, "T");
    let err = decide(&snap, &req("x", &[(&h, N), (&h, P)], vec![]), &lru(), None).unwrap_err();
    assert_eq!(
        err,
        ModelError::ExclusiveAtMultipleLocations {
            handle: h,
            locations: vec![N, P]
        }
    );
    assert!(err.to_string().contains("EXCLUSIVE"));
}

#[test]
fn unavailable_device_surfaces_as_infeasible_explanation() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1).available_devices(vec![C0]),
        vec![adopted(0, n, REPL, &[P])],
    );
    let r = req("dev", &[(&handle(0, "T"), C1)], vec![]);
    let err = decide(&snap, &r, &lru(), None).unwrap_err();
    assert!(matches!(err, ModelError::Infeasible { .. }));
    assert!(err.to_string().contains("not available"), "{err}");
}

#[test]
fn protected_source_of_an_exclusive_move_is_caught_by_the_final_dry_run() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1),
        vec![adopted(0, n, EXCL, &[]).at_protected(P, 1, 0, 0)],
    );
    let r = req("excl", &[(&handle(0, "T"), N)], vec![]);
    let err = decide(&snap, &r, &lru(), None).unwrap_err();
    assert!(
        err.to_string()
            .contains("source pageable-host is protected"),
        "{err}"
    );
}

struct BrokenPolicy;
impl ResidencyPolicy for BrokenPolicy {
    fn name(&self) -> &str {
        "broken"
    }
    fn config_identity(&self) -> PolicyConfig {
        Vec::new()
    }
    fn fallback_locations(&self, _: ResidencyLocation) -> &[ResidencyLocation] {
        &[]
    }
    fn order_candidates(&self, c: &[ResidencyEvictionCandidate<'_>]) -> Vec<usize> {
        vec![0; c.len()]
    }
}

/// A general (non-key) policy: the reverse of registration order, evaluated per node.
struct NewestFirst;
impl ResidencyPolicy for NewestFirst {
    fn name(&self) -> &str {
        "newest-first"
    }
    fn config_identity(&self) -> PolicyConfig {
        vec![("order".into(), "newest".into())]
    }
    fn fallback_locations(&self, _: ResidencyLocation) -> &[ResidencyLocation] {
        &[]
    }
    fn order_candidates(&self, c: &[ResidencyEvictionCandidate<'_>]) -> Vec<usize> {
        (0..c.len()).rev().collect()
    }
}

#[test]
fn custom_policies_are_honoured_and_checked() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1).budget(N, 2 * n),
        vec![
            adopted(0, n, REPL, &[P, N]),
            adopted(1, n, REPL, &[P, N]),
            adopted(2, n, REPL, &[P]),
        ],
    );
    let r = req("p", &[(&handle(2, "T"), N)], vec![]);
    let err = decide(&snap, &r, &BrokenPolicy, None).unwrap_err();
    assert!(matches!(err, ModelError::PolicyNotPermutation { .. }));
    assert!(err.to_string().contains("exactly once"));
    let d = decide(&snap, &r, &NewestFirst, None).unwrap();
    assert_eq!(d.plan().reclaim(), &[drop_(&handle(1, "T"), N)]);
    assert_eq!(d.policy_name(), "newest-first");
    let dyn_policy: &dyn ResidencyPolicy = &NewestFirst;
    assert_eq!(decide(&snap, &r, dyn_policy, None).unwrap(), d);
}

#[test]
fn decision_records_policy_identity() {
    let (snapshot, request, policy, _) = seed();
    let d = decide(&snapshot, &request, &policy, None).unwrap();
    assert_eq!(
        d.policy_config(),
        &vec![(
            "fallback_tiers".to_owned(),
            "cuda:0=>pinned-host,pageable-host".to_owned()
        )]
    );
    assert_eq!(d.manager_id(), MANAGER);
    assert_eq!(d.plan().name(), request.name());
}

#[test]
fn cyclic_fallback_moves_are_cut_not_recursed_forever() {
    // Tiers N -> P and P -> N let the search move y back and forth between N and P; FHElium
    // recurses without end here. The cycle is cut (docs/decisions/0100) and the request, which
    // needs 4n in 3n of budget, is proven infeasible.
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1)
            .budget(N, n)
            .budget(P, 2 * n)
            .location(C0),
        vec![
            adopted(0, n, EXCL, &[N]),
            adopted(1, n, REPL, &[P]),
            adopted(2, n, REPL, &[C0]),
            adopted(3, n, REPL, &[C0]),
        ],
    );
    let r = req(
        "cycle",
        &[(&handle(2, "T"), N), (&handle(3, "T"), P)],
        vec![],
    );
    let policy = tiers(vec![(N, vec![P]), (P, vec![N])]);
    let err = decide(&snap, &r, &policy, None).unwrap_err();
    assert!(matches!(err, ModelError::Infeasible { .. }), "{err}");
    assert!(err.to_string().contains("already being explored"), "{err}");
    // Same input, same answer.
    assert_eq!(decide(&snap, &r, &policy, None).unwrap_err(), err);
}

#[test]
fn deep_searches_end_as_inconclusive_not_as_a_stack_overflow() {
    // 300 cached replicas, each needing its own eviction: the DFS nests one level per drop.
    let count = u64::from(MAX_SEARCH_DEPTH) + 44;
    let mut values: Vec<ResidencyValueSnapshotParts> =
        (0..count).map(|i| adopted(i, n, REPL, &[P, N])).collect();
    values.extend((count..2 * count).map(|i| adopted(i, n, REPL, &[P])));
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 1).budget(N, count * n),
        values,
    );
    let hs: Vec<ResidencyHandle> = (count..2 * count).map(|i| handle(i, "T")).collect();
    let reqs: Vec<(&ResidencyHandle, ResidencyLocation)> = hs.iter().map(|h| (h, N)).collect();
    let r = req("deep", &reqs, vec![]);
    let err = decide(&snap, &r, &lru(), None).unwrap_err();
    assert!(err.to_string().contains("maximum nesting depth"), "{err}");
    assert!(matches!(err, ModelError::SearchLimit { .. }));
    // Within the depth the same shape succeeds with one eviction per requirement.
    let r = req("shallow", &reqs[..100], vec![]);
    let d = decide(&snap, &r, &lru(), None).unwrap();
    assert_eq!(d.evictions().len(), 100);
    assert_eq!(d.explored_states(), 101);
}
