//! Spec section 5 scenarios F (controller), the ResidencyUse flow (3.13) and the seed flow.
#![allow(clippy::unwrap_used, clippy::redundant_closure_for_method_calls)]

mod common;

use common::*;
use fhelium_cuda::Tensors;
use fhelium_residency::{
    DeterministicTieredLRU, EvictionReason, MemoryReservation, ReplicaMode, ResidencyAction,
    ResidencyDecision, ResidencyDecisionParts, ResidencyHandle, ResidencyLocation, ResidencyPlan,
    ResidencyPolicy, ResidencyRequest, ResidencyRequirement,
};
use fhelium_runtime::{
    ConsumerStreams, ResidencyController, ResidencyErrorKind, RuntimeError, TransferStreams,
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
/// The plan's reclaim of a single drop of `h` at N.
fn drop_at_n(h: &ResidencyHandle) -> [ResidencyAction; 1] {
    [ResidencyAction::DropResident {
        handle: h.clone(),
        location: N,
    }]
}
fn none() -> TransferStreams {
    TransferStreams::new()
}
fn no_consumers() -> ConsumerStreams {
    ConsumerStreams::new()
}

#[test]
fn f53_decide_use_cache() {
    let mem = memory();
    let m = manager(&mem, &[(N, NB)]);
    let h = repl(&m, 1);
    let c = ResidencyController::new(&m);
    let r = req("one", &[(&h, N)], &[]);
    let d = c.decide(&r).unwrap();
    assert_eq!(d.expected_state_version(), m.state_version().unwrap());
    assert_eq!(d.explored_states(), 1);
    assert!(d.plan().reclaim().is_empty() && d.evictions().is_empty());
    assert_eq!(d.plan().enter().len(), 1);
    assert!(d.explanation().feasible);
    let u = c.use_request(&r, &no_consumers(), &none()).unwrap();
    let v: &Tensors = u.value(&h, N).unwrap();
    assert_eq!(fhelium_cuda::Resident::placement(v).unwrap(), N);
    assert_eq!(u.decision().request().name(), "one");
    let report = u.close().unwrap();
    assert_eq!(report.transitions().len(), 1);
    assert_eq!(locs(&m, &h), vec![P, N]);
    let d2 = c.decide(&r).unwrap();
    assert!(d2.plan().reclaim().is_empty() && d2.plan().enter().is_empty());
}

#[test]
fn f55_lru_victim_and_priority() {
    for prioritise_h0 in [false, true] {
        let mem = memory();
        let m = manager(&mem, &[(N, 2 * NB)]);
        let h: Vec<_> = (0..3).map(|i| repl(&m, i)).collect();
        let c = ResidencyController::new(&m);
        c.use_request(&req("u0", &[(&h[0], N)], &[]), &no_consumers(), &none())
            .unwrap()
            .close()
            .unwrap();
        c.use_request(&req("u1", &[(&h[1], N)], &[]), &no_consumers(), &none())
            .unwrap()
            .close()
            .unwrap();
        assert_eq!(
            (c.last_access_epoch(&h[0]), c.last_access_epoch(&h[1])),
            (Some(1), Some(2))
        );
        if prioritise_h0 {
            c.set_policy_metadata(&h[0], 10, None).unwrap();
        }
        let d = c.decide(&req("u2", &[(&h[2], N)], &[])).unwrap();
        let victim = if prioritise_h0 { &h[1] } else { &h[0] };
        assert_eq!(
            d.plan().reclaim(),
            &[ResidencyAction::DropResident {
                handle: (**victim).clone(),
                location: N
            }]
        );
        let e = &d.evictions()[0];
        assert_eq!(
            (e.rank, e.released_location, e.released_nbytes, e.reason),
            (0, N, NB, EvictionReason::AnotherMaterialization)
        );
        assert_eq!(d.explored_states(), 2);
        assert!(!d
            .plan()
            .actions()
            .any(|a| matches!(a, ResidencyAction::DiscardValue { .. })));
        c.scope(&d, &none()).unwrap().close().unwrap();
        assert!(!locs(&m, victim).contains(&N));
        assert!(locs(&m, &h[2]).contains(&N));
    }
}

#[test]
fn f57_extra_replica_of_requested_handle_is_reclaimable() {
    let mem = memory();
    let m = manager(&mem, &[(N, NB)]);
    let retained = repl(&m, 1);
    m.ensure(&retained, N, None).unwrap();
    let incoming = repl(&m, 2);
    let c = ResidencyController::new(&m);
    let d = c
        .decide(&req("r", &[(&retained, P), (&incoming, N)], &[]))
        .unwrap();
    assert_eq!(d.plan().reclaim(), &drop_at_n(&retained));
    c.scope(&d, &none()).unwrap().close().unwrap();
    assert_eq!(locs(&m, &retained), vec![P]);
    assert_eq!(locs(&m, &incoming), vec![P, N]);
}

#[test]
fn f59_multi_location_repl_request() {
    let mem = memory();
    let m = manager(&mem, &[(N, NB)]);
    let h = repl(&m, 1);
    let c = ResidencyController::new(&m);
    let u = c
        .use_request(
            &req("two", &[(&h, P), (&h, N)], &[]),
            &no_consumers(),
            &none(),
        )
        .unwrap();
    assert_eq!(u.requirements().len(), 2);
    let at_p = u.value(&h, P).unwrap();
    let at_n = u.value(&h, N).unwrap();
    assert_eq!(fhelium_cuda::Resident::placement(at_p).unwrap(), P);
    assert_eq!(fhelium_cuda::Resident::placement(at_n).unwrap(), N);
    assert!(!std::ptr::eq(at_p, at_n));
    assert!(matches!(
        u.value(&h, S0).unwrap_err(),
        RuntimeError::NotCovered { .. }
    ));
    u.close().unwrap();
    // EXCLUSIVE at two locations is an ownership error
    let x = adopt(&m, P, ReplicaMode::Exclusive, 2);
    let e = c.decide(&req("x", &[(&x, P), (&x, N)], &[])).unwrap_err();
    assert_eq!(e.kind(), ResidencyErrorKind::Ownership);
    assert!(e.to_string().contains("EXCLUSIVE"));
}

#[test]
fn f61_sole_copy_moves_along_fallback_and_f63_full_fallback_fails() {
    let mem = memory();
    let m = manager(&mem, &[(P, 2 * NB), (N, NB)]);
    let first = adopt(&m, N, ReplicaMode::Exclusive, 1);
    let second = adopt(&m, P, ReplicaMode::Exclusive, 2);
    let policy = DeterministicTieredLRU::with_fallback_tiers([(N, vec![P])]).unwrap();
    let c = ResidencyController::with_policy(&m, policy.clone());
    let d = c.decide(&req("f", &[(&second, N)], &[])).unwrap();
    assert_eq!(
        d.plan().reclaim(),
        &[ResidencyAction::MoveResident {
            handle: (*first).clone(),
            to: P,
            from: Some(N)
        }]
    );
    c.scope(&d, &none()).unwrap().close().unwrap();
    assert_eq!(locs(&m, &first), vec![P]);
    assert_eq!(locs(&m, &second), vec![N]);

    let m = manager(&mem, &[(P, NB), (N, NB)]);
    let second = adopt(&m, P, ReplicaMode::Exclusive, 2);
    let first = adopt(&m, N, ReplicaMode::Exclusive, 1);
    let c = ResidencyController::with_policy(&m, policy);
    let v = m.state_version().unwrap();
    let e = c.decide(&req("f", &[(&second, N)], &[])).unwrap_err();
    assert!(
        e.is_plan_error() && e.to_string().contains("fallback"),
        "{e}"
    );
    assert_eq!(m.state_version().unwrap(), v);
    assert_eq!(locs(&m, &first), vec![N]);
}

#[test]
fn f65_impossible_search_is_memoized_not_limited() {
    let mem = memory();
    let m = manager(&mem, &[(N, 9 * NB)]);
    let hs: Vec<_> = (0..9).map(|i| repl(&m, i)).collect();
    for h in &hs {
        m.ensure(h, N, None).unwrap();
    }
    let c = ResidencyController::new(&m)
        .search_state_limit(512)
        .unwrap();
    let e = c
        .decide(&req("imp", &[(&hs[0], P)], &[(N, 10 * NB)]))
        .unwrap_err();
    assert!(matches!(e, RuntimeError::Plan { .. }), "{e}");
    let c1 = ResidencyController::new(&m).search_state_limit(1).unwrap();
    let e = c1
        .decide(&req("imp", &[(&hs[0], P)], &[(N, NB)]))
        .unwrap_err();
    assert!(
        matches!(
            e,
            RuntimeError::SearchLimit {
                explored_states: 1,
                state_limit: 1,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("inconclusive") && !e.to_string().contains("infeasible"));
    assert!(ResidencyController::new(&m).search_state_limit(0).is_err());
}

#[test]
fn f67_protected_materialization_is_never_a_victim() {
    let mem = memory();
    let m = manager(&mem, &[(N, NB)]);
    let first = repl(&m, 1);
    m.ensure(&first, N, None).unwrap();
    let second = repl(&m, 2);
    let hold = m.hold(&[&first], N).unwrap();
    let c = ResidencyController::new(&m);
    let e = c.decide(&req("p", &[(&second, N)], &[])).unwrap_err();
    assert!(e.to_string().contains("no invariant-valid victim"), "{e}");
    assert_eq!(locs(&m, &first), vec![P, N]);
    hold.release().unwrap();
}

#[test]
fn f69_decide_is_tensor_free() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let (h, loads) = sourced(&m, P, 1, 0);
    let c = ResidencyController::new(&m);
    let d = c.decide(&req("s", &[(&h, N)], &[])).unwrap();
    assert_eq!(loads.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert!(d.explanation().feasible);
    c.scope(&d, &none()).unwrap().close().unwrap();
    assert_eq!(loads.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn f71_controller_rejections_and_staleness() {
    let mem = memory();
    let m = manager(&mem, &[(N, NB)]);
    let other = manager(&mem, &[]);
    let h = repl(&m, 1);
    let foreign = repl(&other, 1);
    let c = ResidencyController::new(&m);
    let e = c.decide(&req("f", &[(&foreign, N)], &[])).unwrap_err();
    assert!(matches!(e, RuntimeError::ForeignHandle { .. }));
    let unknown = ResidencyHandle::new(m.manager_id(), 99, "Tensors").unwrap();
    assert!(c
        .decide(&req("u", &[(&unknown, N)], &[]))
        .unwrap_err()
        .to_string()
        .contains("unknown"));
    let d = c.decide(&req("d", &[(&h, N)], &[])).unwrap();
    // another policy configuration
    let tiered = ResidencyController::with_policy(
        &m,
        DeterministicTieredLRU::with_fallback_tiers([(N, vec![P])]).unwrap(),
    );
    let e = tiered.scope(&d, &none()).unwrap_err();
    assert!(
        e.is_plan_error() && e.to_string().contains("another policy"),
        "{e}"
    );
    // another manager
    let oc = ResidencyController::new(&other);
    assert_eq!(
        oc.scope(&d, &none()).unwrap_err().kind(),
        ResidencyErrorKind::Handle
    );
    // any intervening mutation makes it stale: no silent replanning
    m.reserve(P, 0, "elsewhere").unwrap().release().unwrap();
    let e = c.scope(&d, &none()).unwrap_err();
    assert!(matches!(e, RuntimeError::StaleState { .. }));
    assert_eq!(locs(&m, &h), vec![P]);
    // metadata rules
    let g = repl(&m, 2);
    c.set_policy_metadata(&h, 0, Some("k")).unwrap();
    assert_eq!(
        c.set_policy_metadata(&g, 0, Some("k")).unwrap_err().kind(),
        ResidencyErrorKind::InvalidArgument
    );
    c.set_policy_metadata(&h, 5, Some("k")).unwrap();
    assert!(c.set_policy_metadata(&foreign, 0, None).is_err());
    m.discard(&g).unwrap();
    assert!(c
        .set_policy_metadata(&g, 0, None)
        .unwrap_err()
        .to_string()
        .contains("discarded"));
    assert!(c.set_policy_metadata(&h, 0, Some(" ")).is_err());
}

#[test]
fn decision_is_not_stale_when_a_consumer_event_completes() {
    let mem = memory();
    let m = manager(&mem, &[(S0, NB)]);
    let h = repl(&m, 1);
    let g = repl(&m, 2);
    m.ensure(&h, S0, None).unwrap();
    let s0 = mem.stream(&S0).unwrap();
    s0.hold().unwrap();
    m.acquire(&[&h], S0, Some(&s0)).unwrap().release().unwrap();
    s0.release_hold().unwrap();
    // the completed-but-unreaped event still protects h in the snapshot: no victim yet
    let c = ResidencyController::new(&m);
    let e = c.decide(&req("g", &[(&g, S0)], &[])).unwrap_err();
    assert!(e.is_plan_error());
    m.poll().unwrap();
    let d = c.decide(&req("g", &[(&g, S0)], &[])).unwrap();
    // a completed event elsewhere does not make the decision stale at entry
    c.scope(&d, &none()).unwrap().close().unwrap();
    assert_eq!(locs(&m, &g), vec![P, S0]);
}

#[test]
fn use_stream_coverage_and_device_flow() {
    let mem = memory();
    let m = manager(&mem, &[(S0, 2 * NB)]);
    let a = repl(&m, 1);
    let b = repl(&m, 2);
    let c = ResidencyController::new(&m);
    let r = req("dev", &[(&a, S0), (&b, S0)], &[(S0, 0)]);
    let v = m.state_version().unwrap();
    let e = c.use_request(&r, &no_consumers(), &none()).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::StreamCoverage { missing, .. } if missing == &vec![S0]),
        "{e}"
    );
    let mut extra = ConsumerStreams::new();
    extra.insert(S0, mem.stream(&S0).unwrap());
    extra.insert(S1, mem.stream(&S1).unwrap());
    assert!(matches!(
        c.use_request(&r, &extra, &none()).unwrap_err(),
        RuntimeError::StreamCoverage { .. }
    ));
    let mut host = ConsumerStreams::new();
    host.insert(P, mem.stream(&S0).unwrap());
    assert!(matches!(
        c.use_request(&r, &host, &none()).unwrap_err(),
        RuntimeError::Stream { .. }
    ));
    assert_eq!(m.state_version().unwrap(), v);
    let compute = mem.stream(&S0).unwrap();
    let mut consumers = ConsumerStreams::new();
    consumers.insert(S0, compute.clone());
    let u = c.use_request(&r, &consumers, &none()).unwrap();
    assert_eq!(
        words(&mem, u.value(&a, S0).unwrap()),
        words(&mem, &value_at(&mem, P, 1))
    );
    assert_eq!(u.lease(S0).unwrap().handles().len(), 2);
    compute.hold().unwrap();
    u.close().unwrap();
    // leases released without waiting: pending until the compute stream finishes
    assert_eq!(
        m.snapshot()
            .unwrap()
            .location(S0)
            .unwrap()
            .parts()
            .pending_event_count,
        2
    );
    compute.release_hold().unwrap();
    m.poll().unwrap();
    assert_eq!(
        m.snapshot()
            .unwrap()
            .location(S0)
            .unwrap()
            .parts()
            .pending_event_count,
        0
    );
}

#[test]
fn f73_failure_inside_use_unwinds_and_keeps_the_decision() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    let c = ResidencyController::new(&m);
    let r = req("fail", &[(&h, S0)], &[(S0, 8)]);
    let mut consumers = ConsumerStreams::new();
    consumers.insert(S0, mem.stream(&S0).unwrap());
    mem.sim_faults(&S0).unwrap().fail_next_copies(1);
    let e = c.use_request(&r, &consumers, &none()).unwrap_err();
    let RuntimeError::UseFailed(f) = &e else {
        panic!("{e}")
    };
    assert_eq!(f.decision.request().name(), "fail");
    assert!(f.report.is_none() && f.exit_error.is_none());
    assert_eq!(
        f.source.plan_execution().unwrap().failed_action_index,
        Some(0)
    );
    assert_eq!(e.kind(), ResidencyErrorKind::PlanExecution);
    assert_eq!(reserved(&m, S0), 0);
    assert_eq!(locs(&m, &h), vec![P]);
    // the retry succeeds, and the endpoint stays cached after exit
    let u = c.use_request(&r, &consumers, &none()).unwrap();
    let report = u.close().unwrap();
    assert_eq!(report.transitions().len(), 1);
    assert_eq!(locs(&m, &h), vec![P, S0]);
}

#[test]
fn f75_deterministic_tie_breaking() {
    let mem = memory();
    let m = manager(&mem, &[(N, 3 * NB)]);
    let hs: Vec<_> = (0..3).map(|i| repl(&m, i)).collect();
    for h in &hs {
        m.ensure(h, N, None).unwrap();
    }
    let extra = repl(&m, 9);
    let c = ResidencyController::new(&m);
    let d = c.decide(&req("t", &[(&extra, N)], &[])).unwrap();
    assert_eq!(d.evictions()[0].action.handle(), &*hs[0]);
    c.set_policy_metadata(&hs[0], 0, Some("b")).unwrap();
    c.set_policy_metadata(&hs[1], 0, Some("a")).unwrap();
    let d = c.decide(&req("t", &[(&extra, N)], &[])).unwrap();
    assert_eq!(d.evictions()[0].action.handle(), &*hs[1]);
}

#[test]
fn hand_built_decision_admits_through_the_controller() {
    let mem = memory();
    let m = manager(&mem, &[(N, NB)]);
    let cold = repl(&m, 1);
    m.ensure(&cold, N, None).unwrap();
    let hot = repl(&m, 2);
    let policy = DeterministicTieredLRU::new();
    let request = req("hand", &[(&hot, N)], &[]);
    let plan = ResidencyPlan::new("hand")
        .unwrap()
        .with_reclaim([ResidencyAction::DropResident {
            handle: (*cold).clone(),
            location: N,
        }])
        .with_enter([ResidencyAction::EnsureResident {
            handle: (*hot).clone(),
            location: N,
        }]);
    let parts = ResidencyDecisionParts {
        manager_id: m.manager_id(),
        expected_state_version: m.state_version().unwrap(),
        explored_states: 1,
        request,
        plan: plan.clone(),
        policy_name: policy.name().to_owned(),
        policy_config: policy.config_identity(),
        evictions: vec![fhelium_residency::ResidencyEviction {
            action: plan.reclaim()[0].clone(),
            rank: 0,
            released_location: N,
            released_nbytes: NB,
            reason: EvictionReason::AnotherMaterialization,
        }],
        explanation: m.explain(&plan, None).unwrap(),
    };
    let d = ResidencyDecision::new(parts).unwrap();
    let c = ResidencyController::new(&m);
    let scope = c.scope(&d, &none()).unwrap();
    assert_eq!(scope.entry_transitions().len(), 2);
    scope.close().unwrap();
    assert_eq!(locs(&m, &cold), vec![P]);
    assert_eq!(locs(&m, &hot), vec![P, N]);
}

const MIB: u64 = 1 << 20;

fn sized(mem: &fhelium_cuda::Memory, at: ResidencyLocation, bytes: u64, fill: u64) -> Tensors {
    let words = vec![fill; usize::try_from(bytes / 8).unwrap()];
    Tensors::upload(mem, &at, &[&words], None)
        .unwrap()
        .wait()
        .unwrap()
}

/// The seed example's flow (ex14) on sim:0: the decision and the accounting tables match
/// FHElium's printed ones.
#[test]
fn seed_flow_reproduces_example_14() {
    let mem = memory();
    let dev = S0;
    let (weight_charge, cold_charge, key_charge, source_charge) = (MIB, MIB, 18 * MIB, 2 * MIB);
    let workspace = 3 * source_charge;
    let budget = weight_charge + key_charge + source_charge + workspace;
    let m = manager(&mem, &[(N, source_charge), (dev, budget)]);
    let cold = m
        .adopt(
            sized(&mem, P, cold_charge, 1),
            Some(P),
            ReplicaMode::Replicable,
        )
        .unwrap();
    let weight = m
        .adopt(
            sized(&mem, P, weight_charge, 2),
            Some(P),
            ReplicaMode::Replicable,
        )
        .unwrap();
    let key = m
        .adopt(
            sized(&mem, P, key_charge, 3),
            Some(P),
            ReplicaMode::Replicable,
        )
        .unwrap();
    let source = m
        .adopt(
            sized(&mem, N, source_charge, 4),
            Some(N),
            ReplicaMode::Exclusive,
        )
        .unwrap();
    let transfer = mem.stream(&dev).unwrap();
    let compute = mem.stream(&dev).unwrap();
    m.ensure(&cold, dev, Some(&transfer)).unwrap();
    let policy = DeterministicTieredLRU::with_fallback_tiers([(dev, vec![N, P])]).unwrap();
    let c = ResidencyController::with_policy(&m, policy);
    let request = ResidencyRequest::new(
        "automatic/rotate-scale/tile-0",
        [
            ResidencyRequirement::new((*source).clone(), dev),
            ResidencyRequirement::new((*key).clone(), dev),
            ResidencyRequirement::new((*weight).clone(), dev),
        ],
        [
            MemoryReservation::new(dev, workspace, "rotate/multiply outputs and workspace")
                .unwrap(),
        ],
    )
    .unwrap();
    let d = c.decide(&request).unwrap();
    assert_eq!(d.expected_state_version(), 6);
    assert_eq!(d.expected_state_version(), m.state_version().unwrap());
    assert_eq!(
        (
            d.explored_states(),
            d.plan().reclaim().len(),
            d.plan().enter().len()
        ),
        (2, 1, 3)
    );
    let e = &d.evictions()[0];
    assert_eq!(
        (
            e.rank,
            e.action.kind_name(),
            e.action.handle(),
            e.released_location,
            e.released_nbytes
        ),
        (0, "DropResident", &*cold, dev, MIB)
    );
    assert_eq!(
        d.explanation().predicted_peak_bytes,
        vec![(N, 2 * MIB), (dev, 27 * MIB), (P, 20 * MIB)]
    );
    let mut streams = TransferStreams::new();
    streams.insert(dev, transfer);
    let scope = c.scope(&d, &streams).unwrap();
    let lease = m
        .acquire(&[&source, &key, &weight], dev, Some(&compute))
        .unwrap();
    assert_eq!(
        lease.get(&key).unwrap().views()[0].len(),
        usize::try_from(key_charge / 8).unwrap()
    );
    lease.release().unwrap();
    compute.synchronize().unwrap();
    let report = scope.close().unwrap();
    assert_eq!(report.transitions().len(), 4);
    m.poll().unwrap();
    let s = m.snapshot().unwrap();
    let row = |l: ResidencyLocation| {
        let x = s.location(l).unwrap();
        (
            x.budget_bytes(),
            x.used_bytes(),
            x.reserved_bytes(),
            x.peak_charged_bytes(),
            x.parts().value_count,
            x.parts().pending_event_count,
        )
    };
    assert_eq!(row(N), (Some(2 * MIB), 0, 0, 2 * MIB, 0, 0));
    assert_eq!(row(dev), (Some(27 * MIB), 21 * MIB, 0, 27 * MIB, 3, 0));
    assert_eq!(row(P), (None, 20 * MIB, 0, 20 * MIB, 3, 0));
    assert_eq!(locs(&m, &cold), vec![P]);
    for h in [&*source, &*key, &*weight] {
        assert!(locs(&m, h).contains(&dev));
    }
    for h in [&*source, &*key, &*weight, &*cold] {
        m.discard(h).unwrap();
    }
    m.close(true, false).unwrap();
}

/// Decisions see the controller's current facts although snapshots are shared and rebuilt
/// incrementally: two controllers with different metadata on one manager, decisions between
/// metadata changes, and a facts change log that overflowed (issue 4's snapshot cache).
#[test]
fn decisions_follow_each_controllers_current_facts() {
    let mem = memory();
    let m = manager(&mem, &[(N, 2 * NB)]);
    let h: Vec<_> = (0..3).map(|i| repl(&m, i)).collect();
    m.ensure(&h[0], N, None).unwrap();
    m.ensure(&h[1], N, None).unwrap();
    let (a, b) = (ResidencyController::new(&m), ResidencyController::new(&m));
    let r = req("h2", &[(&h[2], N)], &[]);
    let victim = |c: &ResidencyController| match &c.decide(&r).unwrap().plan().reclaim()[0] {
        ResidencyAction::DropResident { handle, .. } => handle.clone(),
        other => panic!("{other:?}"),
    };
    // Equal facts: registration order picks h0 for both.
    assert_eq!(victim(&a), *h[0]);
    assert_eq!(victim(&b), *h[0]);
    // `a` retains h0, `b` retains h1; alternate decisions see their own controller's facts.
    a.set_policy_metadata(&h[0], 5, None).unwrap();
    b.set_policy_metadata(&h[1], 5, None).unwrap();
    for _ in 0..2 {
        assert_eq!(victim(&a), *h[1]);
        assert_eq!(victim(&b), *h[0]);
    }
    // Stable keys travel in the snapshot too (the decision records the snapshot's metadata).
    a.set_policy_metadata(&h[0], 0, Some("k0")).unwrap();
    assert_eq!(victim(&a), *h[0]);
    // Many accesses without a decision overflow the change log; the next decision compares
    // every value and still sees the newest facts.
    for _ in 0..5000 {
        b.record_access([&*h[0]]);
    }
    b.set_policy_metadata(&h[1], 0, None).unwrap();
    assert_eq!(victim(&b), *h[1], "h0 was accessed last");
    // A state change between decisions (a hold on h1) is seen as well.
    let hold = m.hold(&[&h[1]], N).unwrap();
    assert_eq!(victim(&b), *h[0], "h1 is protected");
    drop(hold);
    assert_eq!(victim(&b), *h[1]);
}

/// A prefetch places the endpoints and closes its scope: the values stay cached, the later
/// use of the same request enters nothing, and the prefetched values count as the most
/// recently used, so the next decision under pressure reclaims an older value instead.
#[test]
fn prefetch_places_ahead_and_counts_as_the_latest_access() {
    let mem = memory();
    let m = manager(&mem, &[(N, 2 * NB)]);
    let h: Vec<_> = (0..3).map(|i| repl(&m, i)).collect();
    let c = ResidencyController::new(&m);
    c.use_request(&req("u0", &[(&h[0], N)], &[]), &no_consumers(), &none())
        .unwrap()
        .close()
        .unwrap();
    let p = c
        .prefetch(&req("ahead", &[(&h[1], N)], &[]), &none())
        .unwrap();
    assert_eq!(p.decision.request().name(), "ahead");
    assert_eq!(p.decision.plan().enter().len(), 1);
    assert_eq!(p.report.transitions().len(), 1);
    assert_eq!(locs(&m, &h[1]), vec![P, N]);
    assert_eq!(
        (c.last_access_epoch(&h[0]), c.last_access_epoch(&h[1])),
        (Some(1), Some(2))
    );
    // The use of the prefetched value enters nothing.
    let u = c
        .use_request(&req("use", &[(&h[1], N)], &[]), &no_consumers(), &none())
        .unwrap();
    assert!(u.decision().plan().enter().is_empty() && u.decision().plan().reclaim().is_empty());
    u.close().unwrap();
    // Under pressure the older h0 goes, not the prefetched h1.
    let d = c.decide(&req("h2", &[(&h[2], N)], &[])).unwrap();
    assert_eq!(d.plan().reclaim(), &drop_at_n(&h[0]));
}

/// Without the recorded access the prefetched value would have been the LRU victim: a value
/// placed by a bare decide + scope (no access recorded) is reclaimed before an older used one.
#[test]
fn a_bare_scope_records_no_access_unlike_a_prefetch() {
    let mem = memory();
    let m = manager(&mem, &[(N, 2 * NB)]);
    let h: Vec<_> = (0..3).map(|i| repl(&m, i)).collect();
    let c = ResidencyController::new(&m);
    c.use_request(&req("u0", &[(&h[0], N)], &[]), &no_consumers(), &none())
        .unwrap()
        .close()
        .unwrap();
    let d = c.decide(&req("bare", &[(&h[1], N)], &[])).unwrap();
    c.scope(&d, &none()).unwrap().close().unwrap();
    assert_eq!(c.last_access_epoch(&h[1]), None);
    let d = c.decide(&req("h2", &[(&h[2], N)], &[])).unwrap();
    assert_eq!(d.plan().reclaim(), &drop_at_n(&h[1]));
}

/// A prefetch with a reservation is refused before anything happens, naming the request,
/// the bytes and the location; an infeasible prefetch fails at its decision and changes
/// nothing either.
#[test]
fn prefetch_errors_change_nothing() {
    let mem = memory();
    let m = manager(&mem, &[(N, NB)]);
    let h: Vec<_> = (0..2).map(|i| repl(&m, i)).collect();
    let c = ResidencyController::new(&m);
    let v = m.state_version().unwrap();
    let e = c
        .prefetch(&req("held", &[(&h[0], N)], &[(N, 8)]), &none())
        .unwrap_err();
    match &e {
        RuntimeError::InvalidArgument { reason } => {
            assert!(
                reason.contains("'held'")
                    && reason.contains("8 bytes")
                    && reason.contains(&N.to_string()),
                "{reason}"
            );
        }
        other => panic!("expected InvalidArgument, found {other}"),
    }
    assert_eq!(e.kind(), ResidencyErrorKind::InvalidArgument);
    assert_eq!(m.state_version().unwrap(), v);
    assert_eq!(c.last_access_epoch(&h[0]), None);
    // Two values into a budget of one.
    let e = c
        .prefetch(&req("both", &[(&h[0], N), (&h[1], N)], &[]), &none())
        .unwrap_err();
    assert!(
        matches!(e, RuntimeError::Plan { ref plan_name, .. } if plan_name == "both"),
        "{e}"
    );
    assert_eq!(m.state_version().unwrap(), v);
    assert_eq!(locs(&m, &h[0]), vec![P]);
    assert_eq!(c.last_access_epoch(&h[0]), None);
}

/// A forecast changes nothing, and its every decision, copy and peak is what running the
/// same program through `use_request` and `prefetch` then does.
#[test]
fn a_forecast_predicts_the_run_decision_for_decision() {
    use fhelium_residency::ResidencyProgramStep;
    let mem = memory();
    let m = manager(&mem, &[(N, 3 * NB)]);
    let h: Vec<_> = (0..5).map(|i| repl(&m, i)).collect();
    let policy = DeterministicTieredLRU::with_fallback_tiers([(N, vec![P])]).unwrap();
    let c = ResidencyController::with_policy(&m, policy);
    let step = |i: usize| req(&format!("use-{i}"), &[(&h[i], N)], &[(N, NB)]);
    let ahead = |i: usize| req(&format!("prefetch-{i}"), &[(&h[i], N)], &[]);
    let mut program = Vec::new();
    for i in 0..5 {
        program.push(ResidencyProgramStep::used(step(i)));
        if i + 1 < 5 {
            program.push(ResidencyProgramStep::prefetched(ahead(i + 1)));
        }
    }
    let v = m.state_version().unwrap();
    let f = c.forecast(&program).unwrap();
    assert_eq!(m.state_version().unwrap(), v, "a forecast changes nothing");
    assert!(h.iter().all(|x| c.last_access_epoch(x).is_none()));
    assert_eq!(f.steps.len(), program.len());

    // The run.
    let mut real = Vec::new();
    let mut open = None;
    for i in 0..5 {
        if let Some(u) = open.take() {
            let u: fhelium_runtime::ResidencyUse = u;
            u.close().unwrap();
        }
        let u = c.use_request(&step(i), &no_consumers(), &none()).unwrap();
        real.push(u.decision().clone());
        open = Some(u);
        if i + 1 < 5 {
            real.push(c.prefetch(&ahead(i + 1), &none()).unwrap().decision);
        }
    }
    open.unwrap().close().unwrap();
    for (k, (f, r)) in f.steps.iter().zip(&real).enumerate() {
        assert_eq!(f.decision.plan().reclaim(), r.plan().reclaim(), "step {k}");
        assert_eq!(f.decision.plan().enter(), r.plan().enter(), "step {k}");
        assert_eq!(
            f.decision.explanation().predicted_peak_bytes,
            r.explanation().predicted_peak_bytes,
            "step {k}"
        );
    }
    let snap = m.snapshot().unwrap();
    let at = snap.location(N).unwrap();
    assert_eq!(f.peak_charged(N), Some(at.peak_charged_bytes()));
    assert_eq!(f.bytes_into(N), 5 * NB);
    assert_eq!(
        f.final_snapshot.location(N).unwrap().used_bytes(),
        at.used_bytes()
    );
    // Some steps reclaimed: the program streams 5 values through room for 2 (+ the workspace).
    assert!(real.iter().any(|d| !d.plan().reclaim().is_empty()));
}

/// A step that cannot be decided fails the forecast with its index and the planner's reason,
/// as `decide` would give it; a prefetch with a reservation is an invalid argument; the
/// manager is unchanged either way.
#[test]
fn forecast_errors_name_the_step_and_change_nothing() {
    use fhelium_residency::ResidencyProgramStep;
    let mem = memory();
    let m = manager(&mem, &[(N, NB)]);
    let h: Vec<_> = (0..2).map(|i| repl(&m, i)).collect();
    let c = ResidencyController::new(&m);
    let v = m.state_version().unwrap();
    let e = c
        .forecast(&[
            ResidencyProgramStep::used(req("one", &[(&h[0], N)], &[])),
            ResidencyProgramStep::prefetched(req("two", &[(&h[1], N)], &[])),
        ])
        .unwrap_err();
    match &e {
        RuntimeError::Forecast {
            step,
            request,
            source,
        } => {
            assert_eq!((*step, request.as_str()), (1, "two"));
            assert!(
                matches!(**source, RuntimeError::Plan { ref plan_name, .. } if plan_name == "two")
            );
        }
        other => panic!("expected Forecast, found {other}"),
    }
    assert_eq!(e.kind(), ResidencyErrorKind::Plan);
    let e = c
        .forecast(&[ResidencyProgramStep::prefetched(req(
            "held",
            &[(&h[0], N)],
            &[(N, 8)],
        ))])
        .unwrap_err();
    assert!(
        matches!(e, RuntimeError::InvalidArgument { ref reason } if reason.contains("held") && reason.contains("8 bytes")),
        "{e}"
    );
    assert_eq!(m.state_version().unwrap(), v);
}

/// Three rounds over four values through room for three. Run with `apply_next_use` before
/// every step, the controller evicts in Belady's order: each decision is the one
/// `forecast_next_use` predicted, and the run copies 6 values where plain LRU copies 12.
/// Stable keys survive the priorities.
#[test]
fn next_use_priorities_halve_the_copies_of_a_cyclic_program() {
    use fhelium_residency::ResidencyProgramStep;
    let mem = memory();
    let copies_of = |next_use: bool| {
        let m = manager(&mem, &[(N, 3 * NB)]);
        let h: Vec<_> = (0..4).map(|i| repl(&m, i)).collect();
        let policy = DeterministicTieredLRU::with_fallback_tiers([(N, vec![P])]).unwrap();
        let c = ResidencyController::with_policy(&m, policy);
        c.set_policy_metadata(&h[0], 0, Some("v0")).unwrap();
        let program: Vec<_> = (0..12)
            .map(|i| ResidencyProgramStep::used(req(&format!("u{i}"), &[(&h[i % 4], N)], &[])))
            .collect();
        let f = if next_use {
            c.forecast_next_use(&program).unwrap()
        } else {
            c.forecast(&program).unwrap()
        };
        let mut copies = 0;
        for (i, step) in program.iter().enumerate() {
            if next_use {
                c.apply_next_use(&program, i).unwrap();
            }
            let u = c
                .use_request(&step.request, &no_consumers(), &none())
                .unwrap();
            assert_eq!(
                u.decision().plan().reclaim(),
                f.steps[i].decision.plan().reclaim(),
                "step {i}"
            );
            assert_eq!(
                u.decision().plan().enter(),
                f.steps[i].decision.plan().enter(),
                "step {i}"
            );
            copies += u.decision().plan().enter().len();
            u.close().unwrap();
        }
        assert_eq!(copies, f.copies_into(N).count());
        if next_use {
            // The priorities kept h0's stable key: another value cannot take it.
            let e = c.set_policy_metadata(&h[1], 0, Some("v0")).unwrap_err();
            assert!(matches!(e, RuntimeError::InvalidArgument { .. }), "{e}");
        }
        copies
    };
    assert_eq!(copies_of(false), 12);
    assert_eq!(copies_of(true), 6);
}

/// `apply_next_use` with a handle the manager does not know fails with that handle before
/// changing any priority: a value it would have demoted to 0 keeps its priority 7 and survives
/// an eviction it would otherwise lose by age.
#[test]
fn apply_next_use_rejects_a_foreign_program_before_changing_anything() {
    use fhelium_residency::ResidencyProgramStep;
    let mem = memory();
    let m = manager(&mem, &[(N, 2 * NB)]);
    let other = manager(&mem, &[(N, 3 * NB)]);
    let (mine, x, y) = (repl(&m, 0), repl(&m, 1), repl(&m, 2));
    let theirs = repl(&other, 3);
    let c = ResidencyController::new(&m);
    for h in [&mine, &x] {
        c.use_request(&req("fill", &[(h, N)], &[]), &no_consumers(), &none())
            .unwrap()
            .close()
            .unwrap();
    }
    c.set_policy_metadata(&mine, 7, None).unwrap();
    // At step 1, `mine` (used only at step 0) would drop to priority 0.
    let program = vec![
        ResidencyProgramStep::used(req("first", &[(&mine, N)], &[])),
        ResidencyProgramStep::used(req("then", &[(&theirs, N)], &[])),
    ];
    let e = c.apply_next_use(&program, 1).unwrap_err();
    match e {
        RuntimeError::ForeignHandle { ref handle, .. } => assert_eq!(handle, &*theirs),
        other => panic!("expected ForeignHandle, found {other}"),
    }
    let d = c.decide(&req("probe", &[(&y, N)], &[])).unwrap();
    assert_eq!(d.plan().reclaim(), &drop_at_n(&x), "mine kept priority 7");
}

/// `run_program` forecasts, then runs: each use's body sees its values leased and the
/// following prefetch already placed; the run goes as forecast, with one decision and one
/// report per step.
#[test]
fn run_program_admits_prefetches_before_the_body() {
    use fhelium_residency::ResidencyProgramStep;
    use fhelium_runtime::ProgramEviction;
    let mem = memory();
    let m = manager(&mem, &[(N, 2 * NB)]);
    let h: Vec<_> = (0..4).map(|i| repl(&m, i)).collect();
    let policy = DeterministicTieredLRU::with_fallback_tiers([(N, vec![P])]).unwrap();
    let c = ResidencyController::with_policy(&m, policy);
    let mut program = Vec::new();
    for i in 0..4 {
        program.push(ResidencyProgramStep::used(req(
            &format!("u{i}"),
            &[(&h[i], N)],
            &[],
        )));
        if i + 1 < 4 {
            program.push(ResidencyProgramStep::prefetched(req(
                &format!("p{}", i + 1),
                &[(&h[i + 1], N)],
                &[],
            )));
        }
    }
    let mut seen = Vec::new();
    let run = c
        .run_program(
            &program,
            ProgramEviction::Policy,
            &no_consumers(),
            &none(),
            |step, u| {
                let k = step / 2;
                let v: &Tensors = u.value(&h[k], N)?;
                assert_eq!(words(&mem, v)[0], k as u64 * 1000);
                if k + 1 < 4 {
                    assert!(
                        locs(&m, &h[k + 1]).contains(&N),
                        "prefetched before the body"
                    );
                }
                seen.push(step);
                Ok::<(), RuntimeError>(())
            },
        )
        .unwrap();
    assert_eq!(seen, vec![0, 2, 4, 6]);
    assert!(run.went_as_forecast());
    assert_eq!((run.decisions.len(), run.reports.len()), (7, 7));
    let snap = m.snapshot().unwrap();
    assert_eq!(
        snap.location(N).unwrap().parts().use_count,
        0,
        "every lease released"
    );
}

/// A body error stops the program at its step with every lease released; a program whose
/// forecast fails never calls the body and moves nothing.
#[test]
fn run_program_stops_at_a_body_error_or_before_an_infeasible_step() {
    use fhelium_residency::ResidencyProgramStep;
    use fhelium_runtime::{ProgramError, ProgramEviction};
    let mem = memory();
    let m = manager(&mem, &[(N, NB)]);
    let h: Vec<_> = (0..2).map(|i| repl(&m, i)).collect();
    let c = ResidencyController::new(&m);
    let program: Vec<_> = (0..2)
        .map(|i| ResidencyProgramStep::used(req(&format!("u{i}"), &[(&h[i], N)], &[])))
        .collect();
    let e = c
        .run_program(
            &program,
            ProgramEviction::Policy,
            &no_consumers(),
            &none(),
            |step, _| {
                if step == 1 {
                    Err("the body failed")
                } else {
                    Ok(())
                }
            },
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            ProgramError::Body {
                step: 1,
                error: "the body failed"
            }
        ),
        "{e}"
    );
    assert_eq!(
        m.snapshot().unwrap().location(N).unwrap().parts().use_count,
        0
    );

    let v = m.state_version().unwrap();
    let both = vec![ResidencyProgramStep::used(req(
        "both",
        &[(&h[0], N), (&h[1], N)],
        &[],
    ))];
    let mut called = false;
    let e = c
        .run_program(
            &both,
            ProgramEviction::Policy,
            &no_consumers(),
            &none(),
            |_, _| {
                called = true;
                Ok::<(), RuntimeError>(())
            },
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            ProgramError::Residency(RuntimeError::Forecast { step: 0, .. })
        ),
        "{e}"
    );
    assert!(!called);
    assert_eq!(m.state_version().unwrap(), v);
}

/// With next-use eviction the cyclic program of three rounds over four values makes 6 copies
/// through `run_program`, as its forecast says.
#[test]
fn run_program_with_next_use_evicts_by_the_future() {
    use fhelium_residency::ResidencyProgramStep;
    use fhelium_runtime::ProgramEviction;
    let mem = memory();
    let m = manager(&mem, &[(N, 3 * NB)]);
    let h: Vec<_> = (0..4).map(|i| repl(&m, i)).collect();
    let c = ResidencyController::with_policy(
        &m,
        DeterministicTieredLRU::with_fallback_tiers([(N, vec![P])]).unwrap(),
    );
    let program: Vec<_> = (0..12)
        .map(|i| ResidencyProgramStep::used(req(&format!("u{i}"), &[(&h[i % 4], N)], &[])))
        .collect();
    let run = c
        .run_program(
            &program,
            ProgramEviction::NextUse,
            &no_consumers(),
            &none(),
            |_, _| Ok::<(), RuntimeError>(()),
        )
        .unwrap();
    assert!(run.went_as_forecast());
    let copies: usize = run.decisions.iter().map(|d| d.plan().enter().len()).sum();
    assert_eq!(copies, 6);
}

/// `minimum_budget` searches the manager's current state by forecasting: a stream of four
/// values, each use holding a workspace of NB while the next value is prefetched, needs 3 NB
/// at N; the manager is unchanged, and a location the manager does not have is an error.
#[test]
fn minimum_budget_of_a_streamed_program() {
    use fhelium_residency::ResidencyProgramStep;
    use fhelium_runtime::ProgramEviction;
    let mem = memory();
    let m = manager(&mem, &[(N, 10 * NB)]);
    let h: Vec<_> = (0..4).map(|i| repl(&m, i)).collect();
    let c = ResidencyController::new(&m);
    let mut program = vec![ResidencyProgramStep::used(req(
        "u0",
        &[(&h[0], N)],
        &[(N, NB)],
    ))];
    for (i, hi) in h.iter().enumerate().skip(1) {
        program.push(ResidencyProgramStep::prefetched(req(
            &format!("p{i}"),
            &[(hi, N)],
            &[],
        )));
        program.push(ResidencyProgramStep::used(req(
            &format!("u{i}"),
            &[(hi, N)],
            &[(N, NB)],
        )));
    }
    let v = m.state_version().unwrap();
    assert_eq!(
        c.minimum_budget(&program, ProgramEviction::Policy, N, 10 * NB)
            .unwrap(),
        3 * NB
    );
    assert_eq!(m.state_version().unwrap(), v);
    let e = c
        .minimum_budget(&program, ProgramEviction::Policy, N, 2 * NB)
        .unwrap_err();
    assert!(matches!(e, RuntimeError::Forecast { .. }), "{e}");
    let e = c
        .minimum_budget(
            &program,
            ProgramEviction::Policy,
            ResidencyLocation::Cuda(5),
            2 * NB,
        )
        .unwrap_err();
    assert!(matches!(e, RuntimeError::Model(_)), "{e}");
}

/// A decision issued by another manager is ForeignDecision naming both manager ids, is not a
/// plan error, and changes neither manager.
#[test]
fn a_foreign_decision_names_both_managers_and_changes_nothing() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let other = manager(&mem, &[]);
    let h = repl(&m, 1);
    let _o = repl(&other, 2);
    let d = ResidencyController::new(&m)
        .decide(&req("d", &[(&h, N)], &[(N, 8)]))
        .unwrap();
    let versions = (m.state_version().unwrap(), other.state_version().unwrap());
    let e = ResidencyController::new(&other)
        .scope(&d, &none())
        .unwrap_err();
    match &e {
        RuntimeError::ForeignDecision {
            decision_manager,
            manager,
        } => assert_eq!(
            (*decision_manager, *manager),
            (m.manager_id(), other.manager_id())
        ),
        other => panic!("expected ForeignDecision, found {other}"),
    }
    assert_eq!(e.kind(), ResidencyErrorKind::Handle);
    assert!(!e.is_plan_error());
    assert!(
        e.to_string()
            .contains(&format!("{:016x}", other.manager_id())),
        "{e}"
    );
    assert_eq!(
        (m.state_version().unwrap(), other.state_version().unwrap()),
        versions
    );
    assert_eq!((reserved(&m, N), reserved(&other, N)), (0, 0));
    assert_eq!(locs(&m, &h), vec![P]);
}

/// An EXCLUSIVE value required at two locations is an Ownership error naming the handle, the
/// first required location and the value's charge, from `decide` and (under its step) from
/// `forecast`; nothing changes.
#[test]
fn exclusive_at_two_locations_names_handle_location_and_charge() {
    use fhelium_residency::ResidencyProgramStep;
    let mem = memory();
    let m = manager(&mem, &[]);
    let x = adopt(&m, P, ReplicaMode::Exclusive, 1);
    let c = ResidencyController::new(&m);
    let v = m.state_version().unwrap();
    let check = |e: &RuntimeError| match e {
        RuntimeError::Ownership {
            handle,
            location,
            charged_nbytes,
            violation,
        } => assert_eq!(
            (handle, *location, *charged_nbytes, *violation),
            (
                &*x,
                Some(N),
                NB,
                fhelium_runtime::OwnershipViolation::ExclusiveMultiLocation
            )
        ),
        other => panic!("expected Ownership, found {other}"),
    };
    let both = || req("both", &[(&x, N), (&x, P)], &[]);
    let e = c.decide(&both()).unwrap_err();
    check(&e);
    assert!(e.to_string().contains(&format!("{NB} bytes")), "{e}");
    let e = c
        .forecast(&[
            ResidencyProgramStep::used(req("one", &[(&x, P)], &[])),
            ResidencyProgramStep::used(both()),
        ])
        .unwrap_err();
    match &e {
        RuntimeError::Forecast {
            step,
            request,
            source,
        } => {
            assert_eq!((*step, request.as_str()), (1, "both"));
            check(source);
        }
        other => panic!("expected Forecast, found {other}"),
    }
    assert_eq!(e.kind(), ResidencyErrorKind::Ownership);
    assert_eq!(m.state_version().unwrap(), v);
    assert_eq!(locs(&m, &x), vec![P]);
}

/// Stale-state and search-limit errors are plan errors of their own kinds, with the versions
/// and limit they name; a closed manager's error is of kind Closed and not a plan error.
#[test]
fn stale_search_limit_and_closed_errors_have_their_kinds() {
    let mem = memory();
    let m = manager(&mem, &[(N, NB)]);
    let a = repl(&m, 1);
    m.ensure(&a, N, None).unwrap();
    let b = repl(&m, 2);
    let c = ResidencyController::new(&m);
    let d = c.decide(&req("b", &[(&b, N)], &[])).unwrap();
    m.reserve(P, 0, "bump").unwrap().release().unwrap();
    let v = m.state_version().unwrap();
    let e = c.scope(&d, &none()).unwrap_err();
    assert!(
        matches!(
            e,
            RuntimeError::StaleState {
                expected_version,
                actual_version
            } if expected_version == d.expected_state_version() && actual_version == v
        ),
        "{e}"
    );
    assert_eq!(
        (e.kind(), e.is_plan_error()),
        (ResidencyErrorKind::StaleState, true)
    );
    assert_eq!(m.state_version().unwrap(), v);
    assert_eq!(locs(&m, &a), vec![P, N]);
    let e = ResidencyController::new(&m)
        .search_state_limit(1)
        .unwrap()
        .decide(&req("b", &[(&b, N)], &[(N, NB)]))
        .unwrap_err();
    assert!(
        matches!(
            e,
            RuntimeError::SearchLimit {
                ref request_name,
                state_limit: 1,
                ..
            } if request_name == "b"
        ),
        "{e}"
    );
    assert_eq!(
        (e.kind(), e.is_plan_error()),
        (ResidencyErrorKind::SearchLimit, true)
    );
    assert_eq!(m.state_version().unwrap(), v);
    m.close(true, false).unwrap();
    let e = c.decide(&req("b", &[(&b, N)], &[])).unwrap_err();
    assert!(matches!(e, RuntimeError::Closed { .. }), "{e}");
    assert_eq!(
        (e.kind(), e.is_plan_error()),
        (ResidencyErrorKind::Closed, false)
    );
}
