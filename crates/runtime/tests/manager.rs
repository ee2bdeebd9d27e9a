//! Spec section 5 scenarios B, C, D, G and the primitive rules of sections 2 and 4.
#![allow(clippy::unwrap_used, clippy::redundant_closure_for_method_calls)]

mod common;

use common::*;
use fhelium_cuda::Tensors;
use fhelium_residency::{ReplicaMode, ResidencyAction, ResidencyHandle, ResidencyLocation};
use fhelium_runtime::{OwnershipViolation, ResidencyErrorKind, ResidencyManager, RuntimeError};

/// "Nothing changes": snapshot (minus capture time), version, trace.
fn fingerprint(m: &ResidencyManager) -> (String, u64, usize) {
    let s = m.snapshot().unwrap();
    let mut p = s.parts().clone();
    p.captured_at_ns = 0;
    (
        format!("{p:?}"),
        m.state_version().unwrap(),
        m.trace().unwrap().len(),
    )
}

#[test]
fn b5_constructor_and_registration_strictness() {
    let mem = memory();
    let m = ResidencyManager::builder(mem.clone()).build().unwrap();
    assert!(m.locations().unwrap().is_empty());
    m.close(true, false).unwrap();
    // unavailable device budget, duplicate budget
    let e = ResidencyManager::builder(mem.clone())
        .budget(ResidencyLocation::Sim(5), 1)
        .build()
        .unwrap_err();
    assert!(matches!(
        e,
        RuntimeError::LocationUnavailable {
            location: ResidencyLocation::Sim(5)
        }
    ));
    assert!(e.to_string().contains("not available"));
    let e = ResidencyManager::builder(mem.clone())
        .budget(P, 1)
        .budget(P, 2)
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ResidencyErrorKind::InvalidArgument);
    // register_source with a MUST_PRESERVE spec
    let m = manager(&mem, &[]);
    let spec = fhelium_residency::ResidencyValueSpec::new(
        "Tensors",
        8,
        8,
        ReplicaMode::Replicable,
        fhelium_residency::Recoverability::MustPreserve,
    )
    .unwrap();
    let before = fingerprint(&m);
    let e = m
        .register_source::<Tensors, _>(spec, P, || unreachable!())
        .unwrap_err();
    assert!(e.to_string().contains("RECONSTRUCTIBLE"));
    assert_eq!(fingerprint(&m), before);
    assert!(m.locations().unwrap().is_empty());
}

#[test]
fn b7_adopt_accounting_with_a_view_backed_value() {
    let mem = memory();
    let m = manager(&mem, &[(P, 64)]);
    let v = view(&mem, P, 4); // logical 32 B of a 64 B buffer
    let h = m.adopt(v, None, ReplicaMode::Replicable).unwrap();
    assert_eq!(h.manager_id(), m.manager_id());
    assert_eq!(h.value_type(), "Tensors");
    let s = m.snapshot().unwrap();
    let vs = s.value(&h).unwrap();
    assert_eq!((vs.spec().logical_nbytes(), vs.spec().charge()), (32, 64));
    assert_eq!(
        vs.spec().recoverability(),
        fhelium_residency::Recoverability::MustPreserve
    );
    assert!(!vs.has_source() && !vs.discarded());
    let mat = &vs.materializations()[0];
    assert_eq!(
        (
            mat.location(),
            mat.logical_nbytes(),
            mat.storage_nbytes(),
            mat.charged_nbytes()
        ),
        (P, 32, 64, 64)
    );
    let l = s.location(P).unwrap();
    assert_eq!(
        (
            l.used_bytes(),
            l.remaining_budget_bytes(),
            l.peak_used_bytes(),
            l.peak_charged_bytes()
        ),
        (64, Some(0), 64, 64)
    );
    assert_eq!(l.parts().value_count, 1);
    // a lease hands out the stored object itself, twice the same
    let a = m.acquire(&[&h], P, None).unwrap();
    let b = m.acquire(&[&h], P, None).unwrap();
    assert!(a.same_object(&b, &h));
    assert_eq!(a.get(&h).unwrap().views()[0].len(), 4);
    a.release().unwrap();
    b.release().unwrap();
}

#[test]
fn b9_alias_rejection_uniqueness_and_failed_adopt() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let (buf, _) = mem.alloc_from(&P, &[3; W], None).unwrap();
    let buf = std::sync::Arc::new(buf);
    let first = Tensors::new(vec![
        fhelium_cuda::TensorView::new(buf.clone(), 0, 4).unwrap()
    ]);
    let second = Tensors::new(vec![fhelium_cuda::TensorView::new(buf, 4, 4).unwrap()]);
    let h1 = m.adopt(first, None, ReplicaMode::Exclusive).unwrap();
    let before = fingerprint(&m);
    let e = m
        .adopt(second.clone(), None, ReplicaMode::Exclusive)
        .unwrap_err();
    assert!(
        matches!(
            e,
            RuntimeError::Ownership {
                violation: OwnershipViolation::AliasedStorage,
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("independent backing"));
    assert_eq!(fingerprint(&m), before);
    // a copy of the second works, and a third value
    let copy = fhelium_cuda::Resident::materialize(&second, &mem, &P, None)
        .unwrap()
        .value;
    let h2 = m.adopt(copy, None, ReplicaMode::Exclusive).unwrap();
    let h3 = repl(&m, 3);
    assert!(h1 != h2 && h2 != h3 && h1 != h3);
    assert!(h1.handle_id() != h2.handle_id() && h2.handle_id() != h3.handle_id());
    // failed adopt: placement mismatch leaves nothing
    let before = fingerprint(&m);
    let e = m
        .adopt(value_at(&mem, P, 9), Some(N), ReplicaMode::Replicable)
        .unwrap_err();
    assert_eq!(e.kind(), ResidencyErrorKind::Materialization);
    assert!(e.to_string().contains("does not match"));
    assert_eq!(fingerprint(&m), before);
    assert_eq!(m.snapshot().unwrap().values().len(), 3);
}

#[test]
fn adopt_budget_failure_and_zero_budget() {
    let mem = memory();
    let m = manager(&mem, &[(P, 0), (N, NB)]);
    let e = m
        .adopt(value_at(&mem, P, 1), None, ReplicaMode::Replicable)
        .unwrap_err();
    match &e {
        RuntimeError::Budget {
            location,
            budget_bytes,
            used_bytes,
            reserved_bytes,
            requested_bytes,
            ..
        } => {
            assert_eq!(
                (
                    *location,
                    *budget_bytes,
                    *used_bytes,
                    *reserved_bytes,
                    *requested_bytes
                ),
                (P, 0, 0, 0, NB)
            );
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("exceeds its manager budget"));
    assert!(m.snapshot().unwrap().values().is_empty());
    // zero budget still admits a zero-byte reservation; exactly-at-budget is admitted
    m.reserve(P, 0, "zero").unwrap().release().unwrap();
    let h = m
        .adopt(value_at(&mem, N, 2), None, ReplicaMode::Replicable)
        .unwrap();
    assert_eq!(used(&m, N), NB);
    assert_eq!(m.budget(N).unwrap(), Some(NB));
    assert_eq!(m.budget(ResidencyLocation::Sim(0)).unwrap(), None);
    m.discard(&h).unwrap();
}

#[test]
fn b11_partial_budgets_and_registration_order() {
    let mem = memory();
    let m = manager(&mem, &[(N, NB)]);
    let a = repl(&m, 1);
    let b = repl(&m, 2);
    assert_eq!(m.locations().unwrap(), vec![N, P]);
    let s = m.snapshot().unwrap();
    let order: Vec<_> = s.locations().iter().map(|l| l.location()).collect();
    assert_eq!(order, vec![N, P]);
    assert_eq!(
        (
            s.location(P).unwrap().budget_bytes(),
            s.location(P).unwrap().used_bytes()
        ),
        (None, 2 * NB)
    );
    let r1 = m.reserve(P, 100 * NB, "big").unwrap();
    let r2 = m.reserve(N, NB, "pin").unwrap();
    let e = m.reserve(N, 1, "one").unwrap_err();
    assert!(
        matches!(
            e,
            RuntimeError::Budget {
                budget_bytes: NB,
                used_bytes: 0,
                reserved_bytes: NB,
                requested_bytes: 1,
                ..
            }
        ),
        "{e}"
    );
    let plan = fhelium_residency::ResidencyPlan::new("r")
        .unwrap()
        .with_reservations([fhelium_residency::MemoryReservation::new(N, 1, "x").unwrap()]);
    let ex = m.explain(&plan, None).unwrap();
    assert!(!ex.feasible && ex.reason.as_deref().unwrap().contains("exceeds budget"));
    assert_eq!(m.locations().unwrap(), vec![N, P]);
    assert_eq!(
        m.snapshot()
            .unwrap()
            .location(N)
            .unwrap()
            .remaining_budget_bytes(),
        Some(0)
    );
    r1.release().unwrap();
    r2.release().unwrap();
    m.discard(&a).unwrap();
    m.discard(&b).unwrap();
    assert_eq!(m.locations().unwrap(), vec![N, P]);
}

#[test]
fn b13_failed_copy_preserves_state() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    let before = fingerprint(&m);
    mem.sim_faults(&N).unwrap().fail_next_copies(1);
    let e = m.ensure(&h, N, None).unwrap_err();
    assert!(matches!(e, RuntimeError::Memory { location: N, .. }), "{e}");
    assert_eq!(m.locations().unwrap(), vec![P]);
    assert_eq!(locs(&m, &h), vec![P]);
    assert_eq!(used(&m, P), NB);
    assert_eq!(fingerprint(&m), before);
    // allocation failure on a device
    mem.sim_faults(&S0).unwrap().fail_next_allocs(1);
    assert_eq!(
        m.ensure(&h, S0, None).unwrap_err().kind(),
        ResidencyErrorKind::Backend
    );
    assert_eq!(fingerprint(&m), before);
    m.ensure(&h, S0, None).unwrap();
    assert_eq!(locs(&m, &h), vec![P, S0]);
}

#[test]
fn c15_exclusive_ensure_final_copy_discard() {
    let mem = memory();
    let m = manager(&mem, &[(P, 2 * NB), (N, 2 * NB)]);
    let h = adopt(&m, P, ReplicaMode::Exclusive, 1);
    let e = m.ensure(&h, N, None).unwrap_err();
    assert!(e.to_string().contains("use MoveResident"), "{e}");
    let e = m.drop_at(&h, P).unwrap_err();
    assert!(e.to_string().contains("final MUST_PRESERVE"), "{e}");
    let v = m.state_version().unwrap();
    let r = m.discard(&h).unwrap();
    assert!(matches!(r.action(), ResidencyAction::DiscardValue { .. }));
    assert_eq!(m.state_version().unwrap(), v + 2); // one removal + finalization
    let s = m.snapshot().unwrap();
    let vs = s.value(&h).unwrap();
    assert!(vs.discarded() && !vs.has_source() && vs.materializations().is_empty());
    assert!(m
        .ensure(&h, P, None)
        .unwrap_err()
        .to_string()
        .contains("discarded"));
    let e = m.discard(&h).unwrap_err();
    assert!(matches!(e, RuntimeError::DiscardedHandle { .. }));
    assert_eq!(m.snapshot().unwrap().values().len(), 1);
}

#[test]
fn c17_implicit_source_selection_follows_canonical_order() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    m.ensure(&h, N, None).unwrap();
    let r = m.move_to(&h, S0, None, None).unwrap();
    assert_eq!(r.parts().source, Some(P));
    assert_eq!(locs(&m, &h), vec![N, S0]);
    assert_eq!(used(&m, P), 0);
    let r = m.ensure(&h, P, None).unwrap();
    assert_eq!(r.parts().source, Some(N));
    // the copy carries the original words
    let l = m.acquire(&[&h], P, None).unwrap();
    assert_eq!(
        words(&mem, l.get(&h).unwrap()),
        words(&mem, &value_at(&mem, P, 1))
    );
    l.release().unwrap();
}

#[test]
fn c19_reconstruction_through_a_source() {
    let mem = memory();
    let m = manager(&mem, &[(P, NB)]);
    let (h, loads) = sourced(&m, P, 4, 0);
    let s = m.snapshot().unwrap();
    let vs = s.value(&h).unwrap();
    assert!(vs.has_source() && vs.source_location() == Some(P) && vs.materializations().is_empty());
    let r = m.ensure(&h, P, None).unwrap();
    assert_eq!(
        (r.parts().source, r.parts().destination),
        (Some(P), Some(P))
    );
    assert_eq!(loads.load(std::sync::atomic::Ordering::SeqCst), 1);
    let l = m.acquire(&[&h], P, None).unwrap();
    assert_eq!(
        words(&mem, l.get(&h).unwrap()),
        words(&mem, &value_at(&mem, P, 4))
    );
    l.release().unwrap();
    m.drop_at(&h, P).unwrap();
    assert!(locs(&m, &h).is_empty());
    assert!(m.snapshot().unwrap().value(&h).unwrap().has_source());
    m.ensure(&h, P, None).unwrap();
    assert_eq!(loads.load(std::sync::atomic::Ordering::SeqCst), 2);
    m.close(true, false).unwrap();
}

#[test]
fn c21_explicit_source_for_unloaded_value_fails_purely() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let (h, loads) = sourced(&m, P, 1, 0);
    let before = fingerprint(&m);
    let e = m.move_to(&h, N, Some(P), None).unwrap_err();
    assert!(matches!(
        e,
        RuntimeError::ExplicitSourceNotResident { location: P, .. }
    ));
    assert!(e.to_string().contains("Explicit source"));
    assert_eq!(fingerprint(&m), before);
    assert_eq!(loads.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert!(m.trace().unwrap().is_empty());
}

#[test]
fn c23_source_failure_is_retryable() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let (h, loads) = sourced(&m, P, 1, 1);
    let v = m.state_version().unwrap();
    let e = m.ensure(&h, N, None).unwrap_err();
    assert!(matches!(e, RuntimeError::Source { location: P, .. }), "{e}");
    assert!(std::error::Error::source(&e)
        .unwrap()
        .to_string()
        .contains("disk read failed"));
    assert_eq!(m.state_version().unwrap(), v);
    assert!(locs(&m, &h).is_empty());
    assert_eq!((used(&m, P), reserved(&m, P)), (0, 0));
    m.ensure(&h, N, None).unwrap();
    assert_eq!(loads.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(locs(&m, &h), vec![N]);
    assert_eq!(reserved(&m, P), 0);
    // the temporary charge shows in the source's peak
    assert_eq!(
        m.snapshot()
            .unwrap()
            .location(P)
            .unwrap()
            .peak_charged_bytes(),
        NB
    );
}

#[test]
fn c25_same_location_reconstruction_uses_one_charge_and_source_budget_is_checked_first() {
    let mem = memory();
    let m = manager(&mem, &[(P, NB)]);
    let (h, _) = sourced(&m, P, 1, 0);
    m.ensure(&h, P, None).unwrap();
    let l = m.snapshot().unwrap();
    let l = l.location(P).unwrap();
    assert_eq!(
        (l.used_bytes(), l.reserved_bytes(), l.peak_charged_bytes()),
        (NB, 0, NB)
    );
    // temporary charge at a full source location fails before load()
    let (g, loads) = sourced(&m, P, 2, 0);
    let e = m.ensure(&g, N, None).unwrap_err();
    assert!(
        matches!(
            e,
            RuntimeError::Budget {
                location: P,
                requested_bytes: NB,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(loads.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn c27_stream_on_a_host_path_fails_before_mutation() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    m.ensure(&h, N, None).unwrap();
    let s0 = mem.stream(&S0).unwrap();
    let before = fingerprint(&m);
    let e = m.ensure(&h, P, Some(&s0)).unwrap_err();
    assert!(e.to_string().contains("CUDA residency location"), "{e}");
    let e = m.move_to(&h, N, Some(P), Some(&s0)).unwrap_err();
    assert!(matches!(e, RuntimeError::Stream { .. }));
    let e = m
        .apply(
            &ResidencyAction::DropResident {
                handle: (*h).clone(),
                location: N,
            },
            Some(&s0),
        )
        .unwrap_err();
    assert!(matches!(e, RuntimeError::Stream { .. }));
    // wrong device
    let e = m.ensure(&h, S1, Some(&s0)).unwrap_err();
    assert!(e.to_string().contains("does not match"));
    assert_eq!(fingerprint(&m), before);
}

#[test]
fn move_into_resident_destination_removes_the_other_replica() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    m.ensure(&h, N, None).unwrap();
    let r = m.move_to(&h, N, None, None).unwrap();
    assert!(!r.no_op());
    assert_eq!(locs(&m, &h), vec![N]);
    let v = m.state_version().unwrap();
    let r = m.move_to(&h, N, None, None).unwrap();
    assert!(r.no_op());
    assert_eq!(
        r.parts().reason.as_deref(),
        Some("destination already owns the selected replica")
    );
    let r = m.drop_at(&h, S1).unwrap();
    assert_eq!(
        r.parts().reason.as_deref(),
        Some("materialization already absent")
    );
    let r = m.ensure(&h, N, None).unwrap();
    assert_eq!(
        r.parts().reason.as_deref(),
        Some("destination already resident")
    );
    assert_eq!(m.state_version().unwrap(), v);
    assert!(!m.locations().unwrap().contains(&S1));
    // no-op reports are traced
    assert!(m.trace().unwrap().iter().filter(|t| t.no_op()).count() >= 3);
}

#[test]
fn handle_errors_foreign_unknown() {
    let mem = memory();
    let a = manager(&mem, &[]);
    let b = manager(&mem, &[]);
    let h = repl(&a, 1);
    let e = b.ensure(&h, N, None).unwrap_err();
    assert!(matches!(e, RuntimeError::ForeignHandle { .. }));
    assert!(e.to_string().contains("belongs to manager"));
    let fake = ResidencyHandle::new(a.manager_id(), 12345, "Tensors").unwrap();
    let e = a.acquire(&[&fake], P, None).unwrap_err();
    assert!(e.to_string().contains("unknown"));
    assert_eq!(e.kind(), ResidencyErrorKind::Handle);
    let e = a.hold(&[], P).unwrap_err();
    assert!(e.to_string().contains("at least one handle"));
    let e = a
        .acquire(&[&h], ResidencyLocation::Sim(9), None)
        .unwrap_err();
    assert!(matches!(e, RuntimeError::LocationUnavailable { .. }));
    let e = a.reserve(P, 1, "  ").unwrap_err();
    assert_eq!(e.kind(), ResidencyErrorKind::InvalidArgument);
}

#[test]
fn d29_atomic_multi_handle_acquire_and_hold() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let a = repl(&m, 1);
    let (absent, _) = sourced(&m, P, 2, 0);
    let before = fingerprint(&m);
    let e = m.acquire(&[&a, &absent], P, None).unwrap_err();
    assert!(
        matches!(e, RuntimeError::NotResident { .. }) && e.to_string().contains("not resident")
    );
    let e = m.hold(&[&a, &absent], P).unwrap_err();
    assert_eq!(e.kind(), ResidencyErrorKind::Unavailable);
    assert_eq!(fingerprint(&m), before);
    let s = m.snapshot().unwrap();
    let mat = s.value(&a).unwrap().materializations()[0];
    assert_eq!((mat.use_count(), mat.hold_count()), (0, 0));
}

#[test]
fn d31_hold_semantics() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let a = repl(&m, 1);
    let b = repl(&m, 2);
    let hold = m.hold(&[&a, &b, &a], P).unwrap();
    assert_eq!(hold.handles(), &[(*a).clone(), (*b).clone()]);
    assert_eq!(
        m.snapshot()
            .unwrap()
            .location(P)
            .unwrap()
            .parts()
            .hold_count,
        2
    );
    let e = m.discard(&b).unwrap_err();
    assert!(e.to_string().contains("holds=1"), "{e}");
    assert!(matches!(
        e,
        RuntimeError::InUse {
            holds: 1,
            active_reads: 0,
            pending_events: 0,
            charged_nbytes: NB,
            ..
        }
    ));
    hold.release().unwrap();
    assert_eq!(
        m.snapshot()
            .unwrap()
            .location(P)
            .unwrap()
            .parts()
            .hold_count,
        0
    );
    m.discard(&b).unwrap();
    // a dropped hold releases itself
    {
        let _h = m.hold(&[&a], P).unwrap();
        assert_eq!(
            m.snapshot()
                .unwrap()
                .location(P)
                .unwrap()
                .parts()
                .hold_count,
            1
        );
    }
    assert_eq!(
        m.snapshot()
            .unwrap()
            .location(P)
            .unwrap()
            .parts()
            .hold_count,
        0
    );
}

#[test]
fn d33_device_lease_stream_rules() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    m.ensure(&h, S0, None).unwrap();
    let e = m.acquire(&[&h], S0, None).unwrap_err();
    assert!(e.to_string().contains("explicit consumer_stream"));
    let s1 = mem.stream(&S1).unwrap();
    let e = m.acquire(&[&h], S0, Some(&s1)).unwrap_err();
    assert!(e.to_string().contains("does not match"));
    let s0 = mem.stream(&S0).unwrap();
    let e = m.acquire(&[&h], P, Some(&s0)).unwrap_err();
    assert!(matches!(e, RuntimeError::Stream { .. }));
    let mut lease = m.acquire(&[&h], S0, Some(&s0)).unwrap();
    let e = lease.add_consumer_stream(&s1).unwrap_err();
    assert!(e.to_string().contains("wrong CUDA device"));
    lease
        .add_consumer_stream(&mem.stream(&S0).unwrap())
        .unwrap();
    lease.add_consumer_stream(&s0).unwrap();
    assert_eq!(lease.consumer_streams().len(), 2);
    lease.release().unwrap();
    let mut host = m.acquire(&[&h], P, None).unwrap();
    assert!(host.add_consumer_stream(&s0).is_err());
    host.release().unwrap();
    let e = m.ensure(&h, S1, Some(&s0)).unwrap_err();
    assert_eq!(e.kind(), ResidencyErrorKind::InvalidArgument);
    assert!(!m.locations().unwrap().contains(&S1));
}

#[test]
fn pending_events_protect_until_reaped_and_reads_have_no_side_effects() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    m.ensure(&h, S0, None).unwrap();
    let s0 = mem.stream(&S0).unwrap();
    let lease = m.acquire(&[&h], S0, Some(&s0)).unwrap();
    s0.hold().unwrap(); // consumer work not finished
    let v = m.state_version().unwrap();
    lease.release().unwrap();
    assert_eq!(m.state_version().unwrap(), v + 1); // active -> pending
    let snap = m.snapshot().unwrap();
    assert_eq!(snap.location(S0).unwrap().parts().pending_event_count, 1);
    let e = m.drop_at(&h, S0).unwrap_err();
    assert!(e.to_string().contains("pending_events=1"), "{e}");
    assert_eq!(m.poll().unwrap(), 0);
    s0.release_hold().unwrap();
    // the event completed, but reading has no side effect
    let v = m.state_version().unwrap();
    assert_eq!(m.state_version().unwrap(), v);
    assert_eq!(
        m.snapshot()
            .unwrap()
            .location(S0)
            .unwrap()
            .parts()
            .pending_event_count,
        1
    );
    // explain already treats the completed event as unprotecting
    let plan = fhelium_residency::ResidencyPlan::new("d")
        .unwrap()
        .with_enter([ResidencyAction::DropResident {
            handle: (*h).clone(),
            location: S0,
        }]);
    assert!(m.explain(&plan, Some(v)).unwrap().feasible);
    assert_eq!(m.poll().unwrap(), 1);
    assert_eq!(m.state_version().unwrap(), v + 1);
    m.drop_at(&h, S0).unwrap();
}

#[test]
fn mutating_calls_reap_and_release_and_wait_unprotects() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    m.ensure(&h, S0, None).unwrap();
    let s0 = mem.stream(&S0).unwrap();
    s0.hold().unwrap();
    m.acquire(&[&h], S0, Some(&s0)).unwrap().release().unwrap();
    s0.release_hold().unwrap();
    // the drop reaps first, so it succeeds
    m.drop_at(&h, S0).unwrap();
    m.ensure(&h, S0, None).unwrap();
    let lease = m.acquire(&[&h], S0, Some(&s0)).unwrap();
    let v = m.state_version().unwrap();
    lease.release_and_wait().unwrap();
    assert_eq!(m.state_version().unwrap(), v + 2);
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
fn new_replica_carries_its_transfer_event_and_consumers_wait_on_the_stream() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 5);
    let transfer = mem.stream(&S0).unwrap();
    transfer.hold().unwrap(); // the copy stays in flight
    m.ensure(&h, S0, Some(&transfer)).unwrap(); // returns without waiting
    let compute = mem.stream(&S0).unwrap();
    let lease = m.acquire(&[&h], S0, Some(&compute)).unwrap();
    // the consumer stream waits on the transfer: its own event is not complete yet
    let ev = compute.record_event().unwrap();
    assert!(!ev.query().unwrap());
    transfer.release_hold().unwrap();
    ev.synchronize().unwrap();
    assert_eq!(
        words(&mem, lease.get(&h).unwrap()),
        words(&mem, &value_at(&mem, P, 5))
    );
    lease.release_and_wait().unwrap();
}

#[test]
fn d37_device_budgets_are_independent() {
    let mem = memory();
    let m = manager(&mem, &[(S0, NB), (S1, NB)]);
    let h = repl(&m, 1);
    m.ensure(&h, S0, None).unwrap();
    m.ensure(&h, S1, None).unwrap();
    let s = m.snapshot().unwrap();
    for l in [S0, S1] {
        assert_eq!(
            (
                s.location(l).unwrap().used_bytes(),
                s.location(l).unwrap().remaining_budget_bytes()
            ),
            (NB, Some(0))
        );
    }
    // allocator telemetry: device locations carry the memory layer's allocated bytes
    assert!(
        s.location(S0)
            .unwrap()
            .parts()
            .allocator_allocated_bytes
            .unwrap()
            >= NB
    );
    assert_eq!(
        s.location(P).unwrap().parts().allocator_allocated_bytes,
        None
    );
    let t = m.trace().unwrap();
    let ensure_s1 = t.last().unwrap().parts();
    assert_eq!(ensure_s1.allocator_device, Some(S1));
    assert_eq!(
        ensure_s1.allocator_allocated_bytes_after.unwrap()
            - ensure_s1.allocator_allocated_bytes_before.unwrap(),
        NB
    );
    let st = mem.stream(&S1).unwrap();
    let lease = m.acquire(&[&h], S1, Some(&st)).unwrap();
    assert_eq!(
        fhelium_cuda::Resident::placement(lease.get(&h).unwrap()).unwrap(),
        S1
    );
    lease.release_and_wait().unwrap();
    let e = m.move_to(&h, S1, Some(S0), None).unwrap();
    assert!(!e.no_op());
    let st0 = mem.stream(&S0).unwrap();
    assert!(matches!(
        m.acquire(&[&h], S0, Some(&st0)).unwrap_err(),
        RuntimeError::NotResident { .. }
    ));
}

#[test]
fn state_version_bumps_exactly_on_mutations() {
    let mem = memory();
    let m = manager(&mem, &[]);
    assert_eq!(m.state_version().unwrap(), 0);
    let (h, _) = sourced(&m, P, 1, 0);
    assert_eq!(m.state_version().unwrap(), 2); // new location + registration
    let v = m.snapshot().unwrap().state_version();
    assert_eq!(v, m.state_version().unwrap());
    m.explain(&fhelium_residency::ResidencyPlan::new("x").unwrap(), None)
        .unwrap();
    assert_eq!(m.state_version().unwrap(), v);
    m.ensure(&h, P, None).unwrap();
    assert_eq!(m.state_version().unwrap(), v + 1);
    m.ensure(&h, P, None).unwrap();
    assert_eq!(m.state_version().unwrap(), v + 1);
    m.ensure(&h, N, None).unwrap();
    assert_eq!(m.state_version().unwrap(), v + 3); // new location + install
    let l = m.acquire(&[&h], P, None).unwrap();
    assert_eq!(m.state_version().unwrap(), v + 4);
    l.release().unwrap();
    assert_eq!(m.state_version().unwrap(), v + 5);
    let r = m.reserve(N, 0, "z").unwrap();
    r.release().unwrap();
    assert_eq!(m.state_version().unwrap(), v + 7);
    m.clear_trace().unwrap();
    m.trace().unwrap();
    let _ = m.locations().unwrap();
    assert_eq!(m.state_version().unwrap(), v + 7);
    m.close(true, false).unwrap();
    assert!(matches!(
        m.state_version().unwrap_err(),
        RuntimeError::Closed { .. }
    ));
}

#[test]
fn g77_close_with_active_lease_force_and_pending() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    let lease = m.acquire(&[&h], P, None).unwrap();
    let e = m.close(true, false).unwrap_err();
    assert!(e.to_string().contains("active_leases=1"), "{e}");
    assert!(!m.locations().unwrap().is_empty());
    m.close(true, true).unwrap();
    assert!(matches!(
        lease.get(&h).unwrap_err(),
        RuntimeError::LeaseLost { .. }
    ));
    lease.release().unwrap(); // silent no-op
    assert!(matches!(
        m.snapshot().unwrap_err(),
        RuntimeError::Closed { .. }
    ));
    assert!(matches!(
        m.ensure(&h, P, None).unwrap_err(),
        RuntimeError::Closed { .. }
    ));
    assert!(matches!(
        m.adopt(value_at(&mem, P, 1), None, ReplicaMode::Exclusive)
            .unwrap_err(),
        RuntimeError::Closed { .. }
    ));
    assert_eq!(m.locations().unwrap(), vec![P]);
    m.trace().unwrap();
    m.close(false, false).unwrap(); // idempotent

    // pending lease: blocks close(wait=false), not close(wait=true)
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    m.ensure(&h, S0, None).unwrap();
    let s0 = mem.stream(&S0).unwrap();
    s0.hold().unwrap();
    m.acquire(&[&h], S0, Some(&s0)).unwrap().release().unwrap();
    let e = m.close(false, false).unwrap_err();
    assert!(e.to_string().contains("pending_leases=1"), "{e}");
    s0.release_hold().unwrap();
    m.close(true, false).unwrap();
    // the trace survives close (adopt is not traced; the ensure is)
    assert_eq!(m.trace().unwrap().len(), 1);
}

#[test]
fn g79_callback_guard_rejects_other_threads_and_reentry() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let m2 = m.clone();
    let mem2 = mem.clone();
    let spec = fhelium_residency::ResidencyValueSpec::new(
        "Tensors",
        NB,
        NB,
        ReplicaMode::Replicable,
        fhelium_residency::Recoverability::Reconstructible,
    )
    .unwrap();
    let seen = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    let h = m
        .register_source(spec, P, move || {
            let m3 = m2.clone();
            let other =
                std::thread::spawn(move || m3.snapshot().map(|_| ()).map_err(|e| e.to_string()))
                    .join()
                    .unwrap();
            let same = m2.state_version().map(|_| ()).map_err(|e| e.to_string());
            seen2.lock().push((other, same));
            Ok(value_at(&mem2, P, 1))
        })
        .unwrap();
    m.ensure(&h, P, None).unwrap();
    let seen = seen.lock();
    assert!(seen[0]
        .0
        .as_ref()
        .unwrap_err()
        .contains("source callback is active"));
    assert!(seen[0]
        .1
        .as_ref()
        .unwrap_err()
        .contains("source callback is active"));
    assert_eq!(locs(&m, &h), vec![P]);
}

#[test]
fn trace_is_bounded_and_disabled_at_zero() {
    let mem = memory();
    let m = ResidencyManager::builder(mem.clone())
        .trace_capacity(2)
        .build()
        .unwrap();
    let h = repl(&m, 1);
    m.ensure(&h, N, None).unwrap();
    m.drop_at(&h, N).unwrap();
    let t = m.trace().unwrap();
    assert_eq!(t.len(), 2);
    assert!(matches!(
        t[1].action(),
        ResidencyAction::DropResident { .. }
    ));
    let m = ResidencyManager::builder(mem)
        .trace_capacity(0)
        .build()
        .unwrap();
    let h = repl(&m, 1);
    m.ensure(&h, N, None).unwrap();
    assert!(m.trace().unwrap().is_empty());
}

#[test]
fn typed_lookup_errors() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let a = repl(&m, 1);
    let b = repl(&m, 2);
    let lease = m.acquire(&[&a], P, None).unwrap();
    assert!(matches!(
        lease.value::<Tensors>(&b).unwrap_err(),
        RuntimeError::NotCovered { .. }
    ));
    let other = Stub {
        tag: "Other",
        nbytes: 0,
        placed: true,
    };
    assert!(matches!(
        lease.value::<Stub>(&a).unwrap_err(),
        RuntimeError::TypeMismatch { .. }
    ));
    lease.release().unwrap();
    // one manager holds values of several types; one lease covers handles of both types
    let o = m.adopt(other, None, ReplicaMode::Exclusive).unwrap();
    assert_eq!(o.value_type(), "Other");
    let both = m.acquire(&[&a, &o], P, None).unwrap();
    let _: &Tensors = both.get(&a).unwrap();
    let _: &Stub = both.get(&o).unwrap();
    both.release().unwrap();
}

/// Snapshots reuse what did not change (issue 4's snapshot layout): a second snapshot of an
/// unchanged state shares every value snapshot with the first; after a change only the changed
/// value is rebuilt, and earlier snapshots keep showing the state they captured.
#[test]
fn snapshots_share_unchanged_values_and_stay_immutable() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let hs: Vec<_> = (0..4).map(|i| repl(&m, i)).collect();
    let dev = ResidencyLocation::Sim(0);
    m.ensure(hs[3].raw(), dev, None).unwrap();
    let s1 = m.snapshot().unwrap();
    let s2 = m.snapshot().unwrap();
    assert_eq!(s1.state_version(), s2.state_version());
    assert!(s2.captured_at_ns() >= s1.captured_at_ns());
    let mut p1 = s1.parts().clone();
    let mut p2 = s2.parts().clone();
    p1.captured_at_ns = 0;
    p2.captured_at_ns = 0;
    assert_eq!(p1, p2);
    for (a, b) in s1.values().iter().zip(s2.values()) {
        assert!(a.shares_parts_with(b));
    }
    // A hold changes one value: only it is rebuilt; s2 still shows no hold.
    let hold = m.hold(&[hs[1].raw()], P).unwrap();
    let s3 = m.snapshot().unwrap();
    assert!(s3.state_version() > s2.state_version());
    for (i, (a, b)) in s2.values().iter().zip(s3.values()).enumerate() {
        assert_eq!(a.shares_parts_with(b), i != 1, "value {i}");
    }
    assert_eq!(s3.values()[1].materialization(P).unwrap().hold_count(), 1);
    assert_eq!(s2.values()[1].materialization(P).unwrap().hold_count(), 0);
    assert_eq!(s3.location(P).unwrap().parts().hold_count, 1);
    assert_eq!(s2.location(P).unwrap().parts().hold_count, 0);
    assert!(!s3.unprotected_values_at(P).contains(&1));
    assert!(s2.unprotected_values_at(P).contains(&1));
    drop(hold);
    // A value added and one moved: counts, placement and lookups follow.
    let extra = repl(&m, 9);
    m.ensure(hs[0].raw(), dev, None).unwrap();
    let s4 = m.snapshot().unwrap();
    assert_eq!(s4.values().len(), 5);
    assert_eq!(s4.value_index(extra.raw()), Some(4));
    assert_eq!(s4.values_at(dev), &[0, 3]);
    assert_eq!(s4.location(dev).unwrap().parts().value_count, 2);
    assert_eq!(s4.location(P).unwrap().parts().hold_count, 0);
    assert_eq!(s4.values()[1].materialization(P).unwrap().hold_count(), 0);
    assert!(s4.values()[2].shares_parts_with(&s3.values()[2]));
    // A discard shows at once and the discarded record stays listed.
    m.discard(hs[2].raw()).unwrap();
    let s5 = m.snapshot().unwrap();
    assert!(s5.values()[2].discarded());
    assert!(!s4.values()[2].discarded());
    assert_eq!(s5.location(P).unwrap().parts().value_count, 4);
}

/// EXCLUSIVE replication and the drop of a final MUST_PRESERVE copy are Ownership errors naming
/// the handle, the location and the value's charge, and change nothing.
#[test]
fn exclusive_and_final_copy_errors_name_handle_location_and_bytes() {
    let mem = memory();
    let m = manager(&mem, &[(P, 2 * NB), (N, 2 * NB)]);
    let h = adopt(&m, P, ReplicaMode::Exclusive, 1);
    let ownership = |e: &RuntimeError| match e {
        RuntimeError::Ownership {
            handle,
            location,
            charged_nbytes,
            violation,
        } => (handle.clone(), *location, *charged_nbytes, *violation),
        other => panic!("expected Ownership, found {other}"),
    };
    let before = fingerprint(&m);
    for (to, e) in [
        (N, m.ensure(&h, N, None).unwrap_err()),
        (
            S0,
            m.apply(
                &ResidencyAction::EnsureResident {
                    handle: (*h).clone(),
                    location: S0,
                },
                None,
            )
            .unwrap_err(),
        ),
    ] {
        assert_eq!(
            ownership(&e),
            (
                (*h).clone(),
                Some(to),
                NB,
                OwnershipViolation::ReplicateExclusive
            )
        );
        assert_eq!(e.kind(), ResidencyErrorKind::Ownership);
        assert!(e.to_string().contains(&format!("{NB} bytes")), "{e}");
    }
    assert_eq!(fingerprint(&m), before);
    let e = m.drop_at(&h, P).unwrap_err();
    assert_eq!(
        ownership(&e),
        (
            (*h).clone(),
            Some(P),
            NB,
            OwnershipViolation::FinalMustPreserve
        )
    );
    assert_eq!(fingerprint(&m), before);
    assert_eq!(locs(&m, &h), vec![P]);
}

/// A handle this manager never issued (an unknown id, or a known id with another type tag) is
/// UnknownHandle naming that handle, for every operation, and changes nothing.
#[test]
fn unknown_handles_are_named_and_change_nothing() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    let unknown_id = ResidencyHandle::new(m.manager_id(), h.handle_id() ^ 1, "Tensors").unwrap();
    let retyped = ResidencyHandle::new(m.manager_id(), h.handle_id(), "Plaintext").unwrap();
    let before = fingerprint(&m);
    for fake in [&unknown_id, &retyped] {
        for e in [
            m.ensure(fake, N, None).unwrap_err(),
            m.drop_at(fake, P).unwrap_err(),
            m.discard(fake).unwrap_err(),
            m.hold(&[&h, fake], P).unwrap_err(),
            m.acquire(&[fake], P, None).unwrap_err(),
        ] {
            assert!(
                matches!(&e, RuntimeError::UnknownHandle { handle } if handle == fake),
                "{e}"
            );
            assert_eq!(e.kind(), ResidencyErrorKind::Handle);
            assert!(e.to_string().contains(&fake.to_string()), "{e}");
        }
    }
    assert_eq!(fingerprint(&m), before);
}

/// A device lease without a consumer stream is MissingConsumerStream naming the location, and
/// takes no lease.
#[test]
fn a_device_lease_without_a_stream_names_its_location() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    m.ensure(&h, S0, None).unwrap();
    let before = fingerprint(&m);
    let e = m.acquire(&[&h], S0, None).unwrap_err();
    assert!(
        matches!(e, RuntimeError::MissingConsumerStream { location: S0 }),
        "{e}"
    );
    assert_eq!(e.kind(), ResidencyErrorKind::InvalidArgument);
    assert!(e.to_string().contains("sim:0"), "{e}");
    assert_eq!(fingerprint(&m), before);
}

/// Adopting a value whose type tag is blank is `UntypedValue`: it names the tag, the bytes
/// and the location (the caller's, else the value's own placement where it has one), and
/// registers nothing.
#[test]
fn adopting_a_value_with_a_blank_type_tag_is_untyped_value() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let _h = repl(&m, 1);
    let before = fingerprint(&m);
    let cases = [
        (
            " ",
            None,
            true,
            Some(ResidencyLocation::PageableHost),
            "'pageable-host'",
        ),
        ("", Some(S0), true, Some(S0), "'sim:0'"),
        ("\t", None, false, None, "at no single location"),
    ];
    for (tag, at, placed, want, named) in cases {
        let e = m
            .adopt(
                Stub {
                    tag,
                    nbytes: 8,
                    placed,
                },
                at,
                ReplicaMode::Exclusive,
            )
            .unwrap_err();
        assert!(
            matches!(
                e,
                RuntimeError::UntypedValue { tag: t, location, nbytes: 8 }
                    if t == tag && location == want
            ),
            "{e}"
        );
        assert_eq!(e.kind(), ResidencyErrorKind::InvalidArgument);
        let text = e.to_string();
        assert!(text.contains("8 bytes"), "{text}");
        assert!(text.contains(named), "{text}");
        assert_eq!(fingerprint(&m), before);
        assert_eq!(m.snapshot().unwrap().values().len(), 1);
    }
}

/// `adopt` without a location, of values whose buffers name no single location (sim:0 and
/// pageable host; pageable and pinned host; no buffers), is `Unplaced`: it names the handle
/// the value would have had, its bytes and, through its source, the locations that disagree;
/// it is of kind Materialization and registers nothing.
#[test]
fn adopting_a_value_with_no_single_location_is_unplaced_and_changes_nothing() {
    let mem = memory();
    let m = manager(&mem, &[(S0, 4 * NB)]);
    let _h = repl(&m, 1);
    let views = |locs: &[ResidencyLocation]| {
        let views = locs
            .iter()
            .flat_map(|l| value_at(&mem, *l, 7).views().to_vec())
            .collect();
        Tensors::new(views)
    };
    let before = fingerprint(&m);
    let expect =
        |value: Tensors, nbytes: u64, check: &dyn Fn(&fhelium_cuda::MemoryError) -> bool| {
            let e = m.adopt(value, None, ReplicaMode::Replicable).unwrap_err();
            match &e {
                RuntimeError::Unplaced {
                    handle,
                    nbytes: n,
                    source,
                } => {
                    assert_eq!(handle.value_type(), "Tensors", "{e}");
                    assert!(e.to_string().contains(&handle.to_string()), "{e}");
                    assert_eq!(*n, nbytes, "{e}");
                    assert!(check(source), "{e}");
                }
                other => panic!("expected Unplaced, got {other:?}"),
            }
            assert_eq!(e.kind(), ResidencyErrorKind::Materialization);
            assert!(e.to_string().contains(&format!("({nbytes} bytes)")), "{e}");
            assert_eq!(fingerprint(&m), before);
        };
    expect(views(&[S0, P]), 2 * NB, &|s| {
        matches!(
            s,
            fhelium_cuda::MemoryError::PlacementDisagrees {
                first: S0,
                other: P,
                ..
            }
        )
    });
    expect(views(&[P, N]), 2 * NB, &|s| {
        matches!(s, fhelium_cuda::MemoryError::MixedPinning { .. })
    });
    expect(Tensors::new(Vec::new()), 0, &|s| {
        matches!(s, fhelium_cuda::MemoryError::EmptyValue { .. })
    });
    // Named explicitly, the location is checked against the buffers instead.
    let e = m
        .adopt(views(&[S0, P]), Some(S0), ReplicaMode::Replicable)
        .unwrap_err();
    assert!(
        matches!(e, RuntimeError::Materialization { location: S0, .. }),
        "{e}"
    );
    assert_eq!(fingerprint(&m), before);
    assert_eq!(m.snapshot().unwrap().values().len(), 1);
}
