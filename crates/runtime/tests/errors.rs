//! Error paths not covered by the scenario files: materialization validation of source output,
//! unavailable locations, argument errors, the policy contract, close accounting, re-entrant
//! close, and a lease released with wait from another thread (scenario 35).
#![allow(clippy::unwrap_used, clippy::redundant_closure_for_method_calls)]

mod common;

use common::*;
use fhelium_cuda::Tensors;
use fhelium_residency::{
    MemoryReservation, PolicyConfig, Recoverability, ReplicaMode, ResidencyEvictionCandidate,
    ResidencyLocation, ResidencyPlan, ResidencyPolicy, ResidencyRequest, ResidencyRequirement,
    ResidencyValueSpec,
};
use fhelium_runtime::{
    ResidencyController, ResidencyErrorKind, ResidencyManager, RuntimeError, TransferStreams,
};

fn spec(logical: u64, charge: u64) -> ResidencyValueSpec {
    ResidencyValueSpec::new(
        "Tensors",
        logical,
        charge,
        ReplicaMode::Replicable,
        Recoverability::Reconstructible,
    )
    .unwrap()
}

#[test]
fn source_output_is_validated_and_the_temporary_charge_undone() {
    let mem = memory();
    let m = manager(&mem, &[(P, 4 * NB)]);
    // wrong placement: the source claims pageable-host, returns a pinned value
    let mem2 = mem.clone();
    let wrong_place = m
        .register_source(spec(NB, NB), P, move || Ok(value_at(&mem2, N, 1)))
        .unwrap();
    let e = m.ensure(&wrong_place, P, None).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::Materialization { location: P, .. }),
        "{e}"
    );
    assert!(e.to_string().contains("does not match"));
    // wrong logical size
    let mem2 = mem.clone();
    let wrong_size = m
        .register_source(spec(2 * NB, 2 * NB), P, move || Ok(value_at(&mem2, P, 1)))
        .unwrap();
    let e = m.ensure(&wrong_size, N, None).unwrap_err();
    assert!(
        e.to_string().contains("Logical payload size mismatch"),
        "{e}"
    );
    // storage over the registered charge: a view of a W-word buffer, logical 4 words
    let mem2 = mem.clone();
    let over = m
        .register_source(spec(32, 32), P, move || Ok(view(&mem2, P, 4)))
        .unwrap();
    let e = m.ensure(&over, P, None).unwrap_err();
    assert!(e.to_string().contains("charge exceeded"), "{e}");
    assert_eq!(e.kind(), ResidencyErrorKind::Materialization);
    // wrong type tag
    let mem2 = mem.clone();
    let tagged = ResidencyValueSpec::new(
        "Plaintext",
        NB,
        NB,
        ReplicaMode::Replicable,
        Recoverability::Reconstructible,
    )
    .unwrap();
    let wrong_type = m
        .register_source::<Tensors, _>(tagged, P, move || Ok(value_at(&mem2, P, 1)))
        .unwrap();
    let e = m.ensure(&wrong_type, P, None).unwrap_err();
    assert!(
        e.to_string().contains("Expected Plaintext, got Tensors"),
        "{e}"
    );
    let s = m.snapshot().unwrap();
    let p = s.location(P).unwrap();
    assert_eq!((p.used_bytes(), p.reserved_bytes()), (0, 0));
}

#[test]
fn unavailable_locations_and_argument_errors() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    let far = ResidencyLocation::Sim(7);
    let v = m.state_version().unwrap();
    assert!(
        matches!(m.ensure(&h, far, None).unwrap_err(), RuntimeError::LocationUnavailable { location } if location == far)
    );
    assert!(matches!(
        m.move_to(&h, P, Some(far), None).unwrap_err(),
        RuntimeError::LocationUnavailable { .. }
    ));
    assert!(matches!(
        m.reserve(far, 1, "x").unwrap_err(),
        RuntimeError::LocationUnavailable { .. }
    ));
    assert!(matches!(
        m.hold(&[&h], far).unwrap_err(),
        RuntimeError::LocationUnavailable { .. }
    ));
    let e = m
        .register_source::<Tensors, _>(spec(NB, NB), far, || unreachable!())
        .unwrap_err();
    assert!(matches!(e, RuntimeError::LocationUnavailable { .. }));
    let cuda = ResidencyLocation::Cuda(0);
    assert!(matches!(
        m.ensure(&h, cuda, None).unwrap_err(),
        RuntimeError::LocationUnavailable { .. }
    ));
    let ex = m
        .explain(
            &ResidencyPlan::new("far").unwrap().with_enter([
                fhelium_residency::ResidencyAction::EnsureResident {
                    handle: (*h).clone(),
                    location: far,
                },
            ]),
            None,
        )
        .unwrap();
    assert!(!ex.feasible && ex.reason.unwrap().contains("not available"));
    let e = m
        .execute_actions(" ", &[], &TransferStreams::new(), None)
        .unwrap_err();
    assert!(e.to_string().contains("plan name must be non-empty"));
    assert!(m
        .execute_actions("empty", &[], &TransferStreams::new(), None)
        .unwrap()
        .transitions()
        .is_empty());
    assert_eq!(m.state_version().unwrap(), v);
    assert!(!m.locations().unwrap().contains(&far));
}

#[test]
fn close_counts_holds_and_reservations_and_rejects_reentry() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    let hold = m.hold(&[&h], P).unwrap();
    let res = m.reserve(N, 5, "r").unwrap();
    let e = m.close(true, false).unwrap_err();
    assert!(
        matches!(
            e,
            RuntimeError::ManagerInUse {
                active_leases: 0,
                pending_leases: 0,
                holds: 1,
                reservations: 1,
                reserved_bytes: 5
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("holds=1"));
    hold.release().unwrap();
    res.release().unwrap();
    // close from inside a source callback is a re-entrancy error
    let m2 = m.clone();
    let mem2 = mem.clone();
    let seen = std::sync::Arc::new(parking_lot::Mutex::new(None));
    let seen2 = seen.clone();
    let g = m
        .register_source(spec(NB, NB), P, move || {
            *seen2.lock() = Some(m2.close(true, true).map_err(|e| e.kind()));
            Ok(value_at(&mem2, P, 2))
        })
        .unwrap();
    m.ensure(&g, P, None).unwrap();
    assert_eq!(*seen.lock(), Some(Err(ResidencyErrorKind::Reentrancy)));
    m.close(true, false).unwrap();
    // a dropped scope after close is harmless
    assert!(matches!(
        m.reserve(P, 1, "late").unwrap_err(),
        RuntimeError::Closed { .. }
    ));
}

#[test]
fn d35_release_with_wait_from_another_thread() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    m.ensure(&h, S0, None).unwrap();
    let stream = mem.stream(&S0).unwrap();
    let lease = m.acquire(&[&h], S0, Some(&stream)).unwrap();
    let work = stream.record_event().unwrap();
    std::thread::spawn(move || lease.release_and_wait().unwrap())
        .join()
        .unwrap();
    assert!(work.query().unwrap());
    let s = m.snapshot().unwrap();
    let l = s.location(S0).unwrap().parts();
    assert_eq!((l.use_count, l.pending_event_count), (0, 0));
    m.drop_at(&h, S0).unwrap();
}

/// A policy that breaks its contract: it returns no candidates.
struct Broken;
impl ResidencyPolicy for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    fn config_identity(&self) -> PolicyConfig {
        Vec::new()
    }
    fn fallback_locations(&self, _: ResidencyLocation) -> &[ResidencyLocation] {
        &[]
    }
    fn order_candidates(&self, _: &[ResidencyEvictionCandidate<'_>]) -> Vec<usize> {
        Vec::new()
    }
}

#[test]
fn a_policy_that_is_not_a_permutation_is_rejected() {
    let mem = memory();
    let m = manager(&mem, &[(N, NB)]);
    let a = repl(&m, 1);
    m.ensure(&a, N, None).unwrap();
    let b = repl(&m, 2);
    let c = ResidencyController::with_policy(&m, Broken);
    let r = ResidencyRequest::new(
        "b",
        [ResidencyRequirement::new((*b).clone(), N)],
        Vec::<MemoryReservation>::new(),
    )
    .unwrap();
    let e = c.decide(&r).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::PolicyContract { policy } if policy == "broken"),
        "{e}"
    );
    assert!(e.to_string().contains("exactly once"));
}

#[test]
fn builder_rejects_unknown_manager_state_and_closed_decisions() {
    let mem = memory();
    let m = ResidencyManager::new(mem.clone());
    let h = repl(&m, 1);
    let c = ResidencyController::new(&m);
    let r = ResidencyRequest::new(
        "r",
        [ResidencyRequirement::new((*h).clone(), N)],
        Vec::<MemoryReservation>::new(),
    )
    .unwrap();
    let d = c.decide(&r).unwrap();
    m.close(true, false).unwrap();
    assert!(matches!(
        c.decide(&r).unwrap_err(),
        RuntimeError::Closed { .. }
    ));
    assert!(matches!(
        c.scope(&d, &TransferStreams::new()).unwrap_err(),
        RuntimeError::Closed { .. }
    ));
    assert!(matches!(
        c.set_policy_metadata(&h, 1, None).unwrap_err(),
        RuntimeError::Closed { .. }
    ));
}
