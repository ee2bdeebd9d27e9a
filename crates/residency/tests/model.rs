//! Construction-time validation of every model type (spec 1.1-1.13), including through serde.
#![allow(clippy::unwrap_used, non_upper_case_globals)]
mod common;
use common::*;
use fhelium_residency::*;
use ReplicaMode::{Exclusive as EXCL, Replicable as REPL};

const n: u64 = 8;

fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap()
}

#[test]
fn request_rules() {
    let h = handle(0, "T");
    let r = |h: &ResidencyHandle, l| ResidencyRequirement::new(h.clone(), l);
    assert_eq!(
        ResidencyRequest::new(" ", [r(&h, P)], []).unwrap_err(),
        ModelError::EmptyName { what: "request" }
    );
    let err = ResidencyRequest::new("x", [], []).unwrap_err();
    assert!(err
        .to_string()
        .contains("at least one ResidencyRequirement"));
    let err = ResidencyRequest::new("x", [r(&h, P), r(&h, N), r(&h, P)], []).unwrap_err();
    assert!(matches!(
        err,
        ModelError::DuplicateRequirement { location: P, .. }
    ));
    assert!(err.to_string().contains("unique (handle, location)"));
    let ok = ResidencyRequest::new("x", [r(&h, P), r(&h, N)], [reservation(N, 1, "w")]).unwrap();
    assert!(ok.requires(&h, N) && !ok.requires(&h, C0));
    let v = json(&ok);
    assert_eq!(
        serde_json::from_value::<ResidencyRequest>(v.clone()).unwrap(),
        ok
    );
    let mut bad = v;
    bad["requirements"] = serde_json::json!([]);
    assert!(serde_json::from_value::<ResidencyRequest>(bad).is_err());
}

#[test]
fn plan_rules() {
    assert_eq!(
        ResidencyPlan::new("").unwrap_err(),
        ModelError::EmptyName { what: "plan" }
    );
    let h = handle(0, "T");
    let p = ResidencyPlan::new("p")
        .unwrap()
        .with_enter([ensure(&h, N)])
        .with_reclaim([drop_(&h, C0)])
        .with_exit([move_(&h, P, None)])
        .with_reservations([reservation(N, 4, "w")]);
    assert_eq!(p.actions().count(), 3);
    assert_eq!(p.actions().next().unwrap(), &drop_(&h, C0));
    let v = json(&p);
    assert_eq!(
        serde_json::from_value::<ResidencyPlan>(v.clone()).unwrap(),
        p
    );
    let mut bad = v;
    bad["name"] = serde_json::json!("  ");
    assert!(serde_json::from_value::<ResidencyPlan>(bad).is_err());
}

#[test]
fn serde_routes_leaf_types_through_their_constructors() {
    let bad_spec = serde_json::json!({"value_type": "T", "logical_nbytes": 9, "storage_nbytes": 8,
        "replica_mode": "exclusive", "recoverability": "must-preserve"});
    let err = serde_json::from_value::<ResidencyValueSpec>(bad_spec).unwrap_err();
    assert!(err.to_string().contains("storage_nbytes"));
    let bad_handle = serde_json::json!({"manager_id": 1, "handle_id": 2, "value_type": ""});
    assert!(serde_json::from_value::<ResidencyHandle>(bad_handle).is_err());
    let bad_res = serde_json::json!({"location": "pinned-host", "nbytes": 1, "label": " "});
    assert!(serde_json::from_value::<MemoryReservation>(bad_res).is_err());
    let bad_loc = serde_json::json!({"location": "cuda:01", "nbytes": 1, "label": "x"});
    assert!(serde_json::from_value::<MemoryReservation>(bad_loc).is_err());
}

#[test]
fn materialization_rules() {
    let err = MaterializationSnapshot::new(P, 8, 4, 7).unwrap_err();
    assert!(matches!(
        err,
        ModelError::ChargeBelowFootprint {
            charged_nbytes: 7,
            ..
        }
    ));
    let err = MaterializationSnapshot::new(P, 4, 8, 7).unwrap_err();
    assert!(err
        .to_string()
        .contains("max(logical_nbytes 4, storage_nbytes 8)"));
    let m = MaterializationSnapshot::new(C0, 4, 2, 8)
        .unwrap()
        .with_protection(0, 0, 1);
    assert!(m.is_protected());
    assert_eq!(
        serde_json::from_value::<MaterializationSnapshot>(json(&m)).unwrap(),
        m
    );
    let mut bad = json(&m);
    bad["charged_nbytes"] = serde_json::json!(3);
    assert!(serde_json::from_value::<MaterializationSnapshot>(bad).is_err());
}

#[test]
fn value_snapshot_rules() {
    let detail = |p: ResidencyValueSnapshotParts| match p.build().unwrap_err() {
        ModelError::InvalidValueSnapshot { detail, .. } => detail,
        other => panic!("unexpected {other}"),
    };
    // handle type vs spec type
    let p = ResidencyValueSnapshotParts::new(
        handle(0, "A"),
        spec("B", n, REPL, Recoverability::MustPreserve),
    )
    .at(P);
    assert!(matches!(
        p.build().unwrap_err(),
        ModelError::ValueTypeMismatch { .. }
    ));
    // duplicate location
    let err = adopted(0, n, REPL, &[P, P]).build().unwrap_err();
    assert!(matches!(
        err,
        ModelError::DuplicateMaterialization { location: P, .. }
    ));
    // bytes differ from the spec
    let mut p = adopted(0, n, REPL, &[]);
    p.materializations
        .push(MaterializationSnapshot::new(P, n, n, n + 1).unwrap());
    assert!(matches!(
        p.build().unwrap_err(),
        ModelError::MaterializationSpecMismatch { .. }
    ));
    // discarded with state
    let mut p = adopted(0, n, REPL, &[P]);
    p.discarded = true;
    assert!(detail(p).contains("discarded"));
    // EXCLUSIVE with two replicas
    assert!(detail(adopted(0, n, EXCL, &[P, N])).contains("EXCLUSIVE"));
    // MUST_PRESERVE with a source / without a copy
    assert!(detail(adopted(0, n, REPL, &[P]).with_source(P)).contains("no registered source"));
    assert!(detail(adopted(0, n, REPL, &[])).contains("at least one"));
    // RECONSTRUCTIBLE without a source
    let mut p = sourced(0, n, P, &[]);
    p.source = None;
    assert!(detail(p).contains("RECONSTRUCTIBLE"));
    // valid ones round-trip; invalid JSON is refused
    let v = sourced(0, n, P, &[N]).with_last_access(3).build().unwrap();
    assert!(v.has_source() && v.source_location() == Some(P));
    assert_eq!(
        serde_json::from_value::<ResidencyValueSnapshot>(json(&v)).unwrap(),
        v
    );
    let mut bad = json(&v);
    bad["source"] = serde_json::Value::Null;
    assert!(serde_json::from_value::<ResidencyValueSnapshot>(bad).is_err());
    assert!(adopted(0, n, REPL, &[])
        .discarded()
        .build()
        .unwrap()
        .discarded());
}

fn loc_parts(budget: Option<u64>, used: u64, reserved: u64) -> ResidencyLocationSnapshotParts {
    ResidencyLocationSnapshotParts {
        used_bytes: used,
        reserved_bytes: reserved,
        peak_used_bytes: used,
        peak_charged_bytes: used.saturating_add(reserved),
        ..ResidencyLocationSnapshotParts::empty(N, budget)
    }
}

#[test]
fn location_snapshot_rules() {
    let ok = ResidencyLocationSnapshot::new(loc_parts(Some(10), 4, 3)).unwrap();
    assert_eq!(ok.remaining_budget_bytes(), Some(3));
    assert_eq!(
        ResidencyLocationSnapshot::new(loc_parts(None, 4, 3))
            .unwrap()
            .remaining_budget_bytes(),
        None
    );
    let mut p = loc_parts(Some(10), 4, 3);
    p.peak_used_bytes = 3;
    assert!(ResidencyLocationSnapshot::new(p)
        .unwrap_err()
        .to_string()
        .contains("peak_used_bytes"));
    let mut p = loc_parts(Some(10), 4, 3);
    p.peak_charged_bytes = 6;
    assert!(ResidencyLocationSnapshot::new(p)
        .unwrap_err()
        .to_string()
        .contains("peak_charged_bytes"));
    let err = ResidencyLocationSnapshot::new(loc_parts(Some(6), 4, 3)).unwrap_err();
    assert!(err.to_string().contains("exceeds budget"));
    let mut p = loc_parts(Some(10), 4, 3);
    p.peak_charged_bytes = 11;
    assert!(ResidencyLocationSnapshot::new(p)
        .unwrap_err()
        .to_string()
        .contains("exceeds budget 10"));
    assert!(ResidencyLocationSnapshot::new(loc_parts(Some(u64::MAX), u64::MAX, 1)).is_err());
    let mut bad = json(&ok);
    bad["used_bytes"] = serde_json::json!(9);
    assert!(serde_json::from_value::<ResidencyLocationSnapshot>(bad).is_err());
}

#[test]
fn snapshot_rules() {
    let v = |p: ResidencyValueSnapshotParts| p.build().unwrap();
    let base = || ResidencySnapshotBuilder::new(MANAGER, 3).budget(N, 4 * n);
    let err = |b: ResidencySnapshotBuilder| match b.build().unwrap_err() {
        ModelError::InvalidSnapshot { detail } => detail,
        other => panic!("unexpected {other}"),
    };
    assert!(err(base()
        .value(v(adopted(0, n, REPL, &[P])))
        .value(v(adopted(0, n, REPL, &[N]))))
    .contains("listed twice"));
    let foreign = ResidencyValueSnapshotParts::new(
        ResidencyHandle::new(2, 0, "T").unwrap(),
        spec("T", n, REPL, Recoverability::MustPreserve),
    )
    .at(P);
    assert!(err(base().value(v(foreign))).contains("belongs to manager 2"));
    let key = ResidencyPolicyMetadata::new(0, Some("k")).unwrap();
    assert!(err(base()
        .value(v(adopted(0, n, REPL, &[P]).with_metadata(key.clone())))
        .value(v(adopted(1, n, REPL, &[P]).with_metadata(key))))
    .contains("stable_key"));
    assert!(err(base().available_devices(vec![P])).contains("host location"));
    // Over budget is caught by the location snapshot.
    let over = base()
        .value(v(adopted(0, 5 * n, REPL, &[N])))
        .build()
        .unwrap_err();
    assert!(matches!(over, ModelError::InvalidLocationSnapshot { .. }));

    let s = base()
        .value(v(adopted(0, n, REPL, &[P, N])))
        .value(v(sourced(1, n, C0, &[])))
        .reservation(reservation(N, n, "w"))
        .build()
        .unwrap();
    assert_eq!(
        s.locations()
            .iter()
            .map(ResidencyLocationSnapshot::location)
            .collect::<Vec<_>>(),
        vec![N, P, C0]
    );
    assert_eq!(s.location(N).unwrap().used_bytes(), n);
    assert_eq!(s.location(N).unwrap().reserved_bytes(), n);
    assert_eq!(s.values_at(N), &[0]);
    assert_eq!(s.value_index(&handle(1, "T")), Some(1));
    // Deserialization validates and rebuilds the index.
    let back: ResidencySnapshot = serde_json::from_value(json(&s)).unwrap();
    assert_eq!(back, s);
    assert_eq!(
        back.value(&handle(1, "T")).unwrap().source_location(),
        Some(C0)
    );

    // Hand-made parts: duplicate location, unlisted location, inconsistent sums.
    let mut parts = s.parts().clone();
    parts.locations.push(parts.locations[0].clone());
    assert!(ResidencySnapshot::new(parts)
        .unwrap_err()
        .to_string()
        .contains("listed twice"));
    let mut parts = s.parts().clone();
    parts.locations.truncate(2);
    assert!(ResidencySnapshot::new(parts)
        .unwrap_err()
        .to_string()
        .contains("not a listed location"));
    let mut parts = s.parts().clone();
    parts.reservations.clear();
    assert!(ResidencySnapshot::new(parts.clone())
        .unwrap_err()
        .to_string()
        .contains("sum to"));
    let mut bad = json(&s);
    bad["reservations"] = serde_json::json!([]);
    assert!(serde_json::from_value::<ResidencySnapshot>(bad).is_err());
}

#[test]
fn policy_rules() {
    let err = DeterministicTieredLRU::with_fallback_tiers([(C0, vec![N, C0])]).unwrap_err();
    assert!(err
        .to_string()
        .contains("cannot contain their source location"));
    let err = DeterministicTieredLRU::with_fallback_tiers([(C0, vec![N, N])]).unwrap_err();
    assert!(matches!(
        err,
        ModelError::DuplicateTierDestination { destination: N, .. }
    ));
    let err =
        DeterministicTieredLRU::with_fallback_tiers([(C0, vec![N]), (C0, vec![P])]).unwrap_err();
    assert!(matches!(
        err,
        ModelError::DuplicateTierSource { location: C0 }
    ));
    assert_eq!(
        ResidencyPolicyMetadata::new(1, Some(" ")).unwrap_err(),
        ModelError::EmptyStableKey
    );
    let p = DeterministicTieredLRU::with_fallback_tiers([(C0, vec![N, P]), (N, vec![P])]).unwrap();
    assert_eq!(p.fallback_locations(C0), &[N, P]);
    assert_eq!(p.fallback_locations(P), &[] as &[ResidencyLocation]);
    assert_eq!(p.name(), "deterministic-tiered-lru");
    assert_eq!(
        p.config_identity(),
        vec![(
            "fallback_tiers".to_owned(),
            "cuda:0=>pinned-host,pageable-host;pinned-host=>pageable-host".to_owned()
        )]
    );
    assert_eq!(DeterministicTieredLRU::new().config_identity()[0].1, "");
    assert_eq!(
        serde_json::from_value::<DeterministicTieredLRU>(json(&p)).unwrap(),
        p
    );
    let bad = serde_json::json!({"fallback_tiers": [["cuda:0", ["cuda:0"]]]});
    assert!(serde_json::from_value::<DeterministicTieredLRU>(bad).is_err());
    let bad = serde_json::json!({"priority": 1, "stable_key": ""});
    assert!(serde_json::from_value::<ResidencyPolicyMetadata>(bad).is_err());
    let mut r = ResidencyRecency::new();
    assert!(r.is_empty());
    r.record(handle(1, "T"), 4);
    r.record(handle(0, "T"), 7);
    assert_eq!((r.len(), r.get(&handle(0, "T"))), (2, Some(7)));
    assert_eq!(
        serde_json::from_value::<ResidencyRecency>(json(&r)).unwrap(),
        r
    );
}

#[test]
fn decision_rules() {
    let (snapshot, request, policy, _) = seed();
    let d = decide(&snapshot, &request, &policy, None).unwrap();
    assert_eq!(
        serde_json::from_value::<ResidencyDecision>(json(&d)).unwrap(),
        d
    );
    let check = |f: &dyn Fn(&mut ResidencyDecisionParts), needle: &str| {
        let mut p = d.parts().clone();
        f(&mut p);
        let err = ResidencyDecision::new(p.clone()).unwrap_err();
        assert!(err.to_string().contains(needle), "{err} lacks {needle}");
        assert!(serde_json::from_value::<ResidencyDecision>(json(&p)).is_err());
    };
    check(&|p| p.explored_states = 0, "explored_states");
    check(&|p| p.plan = ResidencyPlan::new("other").unwrap(), "name");
    check(
        &|p| p.plan = p.plan.clone().with_exit(p.plan.enter().to_vec()),
        "exit",
    );
    check(
        &|p| p.plan = p.plan.clone().with_reservations([]),
        "reservations",
    );
    check(
        &|p| p.plan = p.plan.clone().with_reclaim(p.plan.enter().to_vec()),
        "reclaim actions",
    );
    check(
        &|p| {
            p.evictions.clear();
        },
        "evictions",
    );
    check(&|p| p.policy_name = String::new(), "policy name");
    check(
        &|p| p.policy_config = vec![(String::new(), "x".into())],
        "keys",
    );
    check(
        &|p| p.explanation.plan_name = "x".into(),
        "explanation must name",
    );
    check(&|p| p.explanation.feasible = false, "infeasible");
}

#[test]
fn report_rules() {
    let h = handle(0, "T");
    let parts = ResidencyTransitionReportParts {
        action: ensure(&h, C0),
        no_op: false,
        source: Some(P),
        destination: Some(C0),
        logical_nbytes: 4,
        storage_nbytes: 8,
        started_at_ns: 10,
        completed_at_ns: 20,
        allocator_device: Some(C0),
        allocator_allocated_bytes_before: Some(0),
        allocator_allocated_bytes_after: Some(8),
        allocator_reserved_bytes_before: None,
        allocator_reserved_bytes_after: None,
        reason: None,
    };
    let t = ResidencyTransitionReport::new(parts.clone()).unwrap();
    assert_eq!(t.action(), &ensure(&h, C0));
    assert_eq!(
        serde_json::from_value::<ResidencyTransitionReport>(json(&t)).unwrap(),
        t
    );
    for (f, needle) in [
        (
            Box::new(|p: &mut ResidencyTransitionReportParts| p.storage_nbytes = 3)
                as Box<dyn Fn(&mut _)>,
            "storage_nbytes",
        ),
        (
            Box::new(|p: &mut ResidencyTransitionReportParts| p.completed_at_ns = 9),
            "completed_at_ns",
        ),
        (
            Box::new(|p: &mut ResidencyTransitionReportParts| p.reason = Some(" ".into())),
            "reason",
        ),
        (
            Box::new(|p: &mut ResidencyTransitionReportParts| p.allocator_device = Some(N)),
            "allocator_device",
        ),
    ] {
        let mut p = parts.clone();
        f(&mut p);
        assert!(ResidencyTransitionReport::new(p.clone())
            .unwrap_err()
            .to_string()
            .contains(needle));
        assert!(serde_json::from_value::<ResidencyTransitionReport>(json(&p)).is_err());
    }
    let r = ResidencyPlanReport::new("p", vec![t], 1, 2).unwrap();
    assert_eq!(
        (
            r.plan_name(),
            r.transitions().len(),
            r.started_at_ns(),
            r.completed_at_ns()
        ),
        ("p", 1, 1, 2)
    );
    assert_eq!(
        serde_json::from_value::<ResidencyPlanReport>(json(&r)).unwrap(),
        r
    );
    assert!(ResidencyPlanReport::new("p", vec![], 3, 2).is_err());
    assert_eq!(
        ResidencyPlanReport::new("", vec![], 1, 2).unwrap_err(),
        ModelError::EmptyName { what: "plan" }
    );
}

/// Location parsing and construction fail with the exact variant carrying the rejected text.
#[test]
fn location_errors_carry_the_rejected_text() {
    let parse = |t: &str| t.parse::<ResidencyLocation>().unwrap_err();
    let text = |t: &str| t.to_owned();
    for t in ["gpu:0", "host", "", "cuda-0"] {
        assert_eq!(parse(t), ModelError::UnsupportedLocation { text: text(t) });
    }
    for t in ["cuda", "sim"] {
        assert_eq!(parse(t), ModelError::UnindexedDevice { text: text(t) });
    }
    for t in ["cuda:01", "sim:", "cuda:+1"] {
        assert_eq!(parse(t), ModelError::NonCanonicalIndex { text: text(t) });
    }
    assert_eq!(
        parse("sim:128"),
        ModelError::IndexOutOfRange {
            text: text("sim:128")
        }
    );
    assert_eq!(
        ResidencyLocation::cuda(200).unwrap_err(),
        ModelError::IndexOutOfRange {
            text: text("cuda:200")
        }
    );
    assert_eq!(
        ResidencyLocation::sim(u32::MAX).unwrap_err(),
        ModelError::IndexOutOfRange {
            text: format!("sim:{}", u32::MAX)
        }
    );
    // serde routes through the parser: the message names the rejected text
    let e = serde_json::from_str::<ResidencyLocation>("\"cuda\"").unwrap_err();
    assert!(
        e.to_string()
            .contains("\"cuda\" requires an indexed device"),
        "{e}"
    );
}

/// Requests without requirements, inconsistent reports and blank policy-configuration keys
/// fail with the exact variant and its fields, directly and through serde.
#[test]
fn request_report_and_decision_errors_are_exact() {
    assert_eq!(
        ResidencyRequest::new("empty", [], []).unwrap_err(),
        ModelError::NoRequirements {
            request: "empty".to_owned()
        }
    );
    assert_eq!(
        ResidencyPlanReport::new("p", vec![], 3, 2).unwrap_err(),
        ModelError::InvalidReport {
            detail: "completed_at_ns must not precede started_at_ns".to_owned()
        }
    );
    let bad = serde_json::json!({"plan_name": "p", "transitions": [], "started_at_ns": 3,
        "completed_at_ns": 2});
    let e = serde_json::from_value::<ResidencyPlanReport>(bad).unwrap_err();
    assert!(
        e.to_string().contains("completed_at_ns must not precede"),
        "{e}"
    );
    let h = handle(0, "T");
    let parts = ResidencyTransitionReportParts {
        action: ensure(&h, C0),
        no_op: false,
        source: Some(P),
        destination: Some(C0),
        logical_nbytes: 4,
        storage_nbytes: 8,
        started_at_ns: 10,
        completed_at_ns: 20,
        allocator_device: Some(C0),
        allocator_allocated_bytes_before: None,
        allocator_allocated_bytes_after: None,
        allocator_reserved_bytes_before: None,
        allocator_reserved_bytes_after: None,
        reason: None,
    };
    let invalid = |f: &dyn Fn(&mut ResidencyTransitionReportParts)| {
        let mut p = parts.clone();
        f(&mut p);
        ResidencyTransitionReport::new(p).unwrap_err()
    };
    let detail = |d: &str| ModelError::InvalidReport {
        detail: d.to_owned(),
    };
    assert_eq!(
        invalid(&|p| p.storage_nbytes = 3),
        detail("storage_nbytes must be at least logical_nbytes")
    );
    assert_eq!(
        invalid(&|p| p.started_at_ns = 21),
        detail("completed_at_ns must not precede started_at_ns")
    );
    assert_eq!(
        invalid(&|p| p.reason = Some("\t".into())),
        detail("reason must be non-empty when present")
    );
    assert_eq!(
        invalid(&|p| p.allocator_device = Some(P)),
        detail("allocator_device must be a device location")
    );
    let (snapshot, request, policy, _) = seed();
    let d = decide(&snapshot, &request, &policy, None).unwrap();
    let mut p = d.parts().clone();
    p.policy_config = vec![
        ("fallback_tiers".into(), "x".into()),
        (" ".into(), "y".into()),
    ];
    assert_eq!(
        ResidencyDecision::new(p).unwrap_err(),
        ModelError::EmptyPolicyConfigKey
    );
}

/// The trusted constructors the runtime uses build exactly what the validating ones build, and
/// the index answers every query like a scan of the data.
#[test]
fn trusted_constructors_agree_with_validating_ones() {
    let typed = |id: u64, ty: &str| {
        ResidencyValueSnapshotParts::new(
            handle(id, ty),
            spec(ty, n, REPL, Recoverability::MustPreserve),
        )
    };
    let mut b = ResidencySnapshotBuilder::new(MANAGER, 7).budget(C0, 64 * n);
    let mut all = Vec::new();
    for i in 0..40u64 {
        let mut p = match i % 4 {
            0 => adopted(i, n, REPL, &[P, C0]),
            1 => adopted(i, n, EXCL, &[N]),
            2 => sourced(i, n, C1, &[]),
            _ => adopted(i, n, REPL, &[C0]).discarded(),
        };
        if i % 5 == 0 && !p.materializations.is_empty() {
            let last = p.materializations.len() - 1;
            p.materializations[last] =
                p.materializations[last].with_protection(1, 0, u32::from(i == 0));
        }
        if i % 3 == 0 {
            let key = format!("key{i}");
            p = p
                .with_metadata(ResidencyPolicyMetadata::new(-(i as i64), Some(&key)).unwrap())
                .with_last_access(i);
        }
        all.push(p);
    }
    // Same handle id, other type tag: a different handle, both must be found.
    all.push(typed(3, "U").at(C0));
    for p in &all {
        let checked = ResidencyValueSnapshot::new(p.clone()).unwrap();
        let trusted = ResidencyValueSnapshot::from_trusted_parts(p.clone()).unwrap();
        assert_eq!(checked, trusted);
        b = b.value(checked);
    }
    let s = b.reservation(reservation(C0, n, "w")).build().unwrap();
    let t = ResidencySnapshot::from_trusted_parts(s.parts().clone()).unwrap();
    assert_eq!(t, s);
    let back: ResidencySnapshot = serde_json::from_value(json(&t)).unwrap();
    assert_eq!(back, s);
    for snap in [&s, &t, &back] {
        for (i, v) in snap.values().iter().enumerate() {
            assert_eq!(snap.value_index(v.handle()), Some(i), "{}", v.handle());
            assert_eq!(snap.value(v.handle()), Some(v));
        }
        assert_eq!(snap.value_index(&handle(3, "T")), Some(3));
        assert_eq!(snap.value_index(&handle(3, "U")), Some(40));
        assert_eq!(snap.value_index(&handle(3, "V")), None);
        assert_eq!(snap.value_index(&handle(99, "T")), None);
        assert_eq!(
            snap.value_index(&ResidencyHandle::new(MANAGER + 1, 0, "T").unwrap()),
            None
        );
        for l in [P, N, C0, C1, ResidencyLocation::Cuda(5)] {
            let at: Vec<u32> = (0..snap.values().len() as u32)
                .filter(|i| snap.values()[*i as usize].materialization(l).is_some())
                .collect();
            let free: Vec<u32> = at
                .iter()
                .copied()
                .filter(|i| {
                    !snap.values()[*i as usize]
                        .materialization(l)
                        .unwrap()
                        .is_protected()
                })
                .collect();
            assert_eq!(snap.values_at(l), at.as_slice(), "{l}");
            assert_eq!(snap.unprotected_values_at(l), free.as_slice(), "{l}");
            assert_eq!(
                snap.location(l),
                snap.locations().iter().find(|x| x.location() == l)
            );
        }
    }
    assert!(!s.values_at(C0).is_empty() && !s.unprotected_values_at(C0).is_empty());
    assert!(s.unprotected_values_at(C0).len() < s.values_at(C0).len());

    // Errors the trusted path still reports (it cannot index such parts).
    let mut parts = s.parts().clone();
    parts.values.push(parts.values[1].clone());
    for r in [
        ResidencySnapshot::new(parts.clone()),
        ResidencySnapshot::from_trusted_parts(parts),
    ] {
        assert!(r.unwrap_err().to_string().contains("listed twice"));
    }
    let mut parts = s.parts().clone();
    parts.locations.retain(|l| l.location() != C1);
    for r in [
        ResidencySnapshot::new(parts.clone()),
        ResidencySnapshot::from_trusted_parts(parts),
    ] {
        assert!(r.unwrap_err().to_string().contains("not a listed location"));
    }
    // Invariants only the validating path checks; builds with debug assertions (tests) run the
    // full validation on the trusted path too.
    let mut parts = s.parts().clone();
    parts.reservations.clear();
    assert!(ResidencySnapshot::new(parts.clone()).is_err());
    assert_eq!(
        ResidencySnapshot::from_trusted_parts(parts).is_err(),
        cfg!(debug_assertions)
    );
    let bad = typed(50, "T");
    assert!(ResidencyValueSnapshot::new(bad.clone()).is_err());
    assert_eq!(
        ResidencyValueSnapshot::from_trusted_parts(bad).is_err(),
        cfg!(debug_assertions)
    );
}

/// `from_trusted_parts_reusing` gives the same snapshot, and the same answers to every index
/// query, as building from scratch, whichever tables it shares, patches or rebuilds.
#[test]
fn reusing_constructor_agrees_with_a_fresh_build() {
    // Value `i` of generation `g`: where it lives and how it is protected.
    let value = |i: u64, g: u64| {
        let mut p = match (i + g) % 3 {
            0 => adopted(i, n, REPL, &[P, C0]),
            1 => adopted(i, n, REPL, &[C0]),
            _ => sourced(i, n, N, &[]),
        };
        if (i + g).is_multiple_of(4) && !p.materializations.is_empty() {
            p.materializations[0] = p.materializations[0].with_protection(1, 1, 0);
        }
        ResidencyValueSnapshot::new(p).unwrap()
    };
    let build = |values: Vec<ResidencyValueSnapshot>, extra_location: bool| {
        let mut b = ResidencySnapshotBuilder::new(MANAGER, 1).budget(C0, 1 << 30);
        if extra_location {
            b = b.location(C1);
        }
        for v in values {
            b = b.value(v);
        }
        b.build().unwrap()
    };
    let check = |got: &ResidencySnapshot, want: &ResidencySnapshot| {
        assert_eq!(got, want);
        for (i, v) in want.values().iter().enumerate() {
            assert_eq!(got.value_index(v.handle()), Some(i));
        }
        for l in [P, N, C0, C1] {
            assert_eq!(got.values_at(l), want.values_at(l), "{l}");
            assert_eq!(
                got.unprotected_values_at(l),
                want.unprotected_values_at(l),
                "{l}"
            );
            assert_eq!(got.location(l), want.location(l), "{l}");
        }
    };
    let first: Vec<_> = (0..64).map(|i| value(i, 0)).collect();
    let s0 = build(first.clone(), false);
    // Nothing changed: everything shared.
    let same = ResidencySnapshot::from_trusted_parts_reusing(s0.parts().clone(), &s0).unwrap();
    check(&same, &s0);
    // A few values changed (patched tables), one appended, the rest shared with `s0`.
    let mut next: Vec<_> = s0.values().to_vec();
    for i in [0usize, 5, 33] {
        next[i] = value(i as u64, 1);
    }
    next.push(value(64, 0));
    let want = build(next.clone(), false);
    let mut parts = want.parts().clone();
    parts.values = next.clone();
    let got = ResidencySnapshot::from_trusted_parts_reusing(parts, &s0).unwrap();
    check(&got, &want);
    assert!(got.values()[1].shares_parts_with(&s0.values()[1]));
    assert!(!got.values()[5].shares_parts_with(&s0.values()[5]));
    // Many values changed (rebuilt tables).
    let many: Vec<_> = (0..64).map(|i| value(i, 2)).collect();
    let want = build(many, false);
    let got = ResidencySnapshot::from_trusted_parts_reusing(want.parts().clone(), &s0).unwrap();
    check(&got, &want);
    // A location registered since (rebuilt location and placement tables).
    let want = build(first.clone(), true);
    let got = ResidencySnapshot::from_trusted_parts_reusing(want.parts().clone(), &s0).unwrap();
    check(&got, &want);
    // Fewer values than the previous snapshot: no reuse, a plain trusted build.
    let want = build(first[..10].to_vec(), false);
    let got = ResidencySnapshot::from_trusted_parts_reusing(want.parts().clone(), &s0).unwrap();
    check(&got, &want);
    // A producer that breaks the guarantee (handles reordered): debug builds report it.
    let mut swapped = first.clone();
    swapped.swap(1, 2);
    let bad = build(swapped, false);
    let r = ResidencySnapshot::from_trusted_parts_reusing(bad.parts().clone(), &s0);
    assert_eq!(r.is_err(), cfg!(debug_assertions));
    if let Err(e) = r {
        assert!(e.to_string().contains("reused index differs"), "{e}");
    }
    // Errors the reusing path reports like a fresh build: an unlisted location.
    let mut parts = s0.parts().clone();
    parts
        .values
        .push(ResidencyValueSnapshot::new(adopted(99, n, REPL, &[C1])).unwrap());
    let e = ResidencySnapshot::from_trusted_parts_reusing(parts, &s0).unwrap_err();
    assert!(e.to_string().contains("not a listed location"), "{e}");
}
