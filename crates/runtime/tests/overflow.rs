//! Byte counts near `u64::MAX` (reservations are pure accounting, so a caller can ask for any
//! size) are refused with typed errors and change nothing: the admission test and the
//! accounting must not overflow (a wrapped sum once admitted a `u64::MAX` reservation over a
//! 1 MiB budget in release builds, and panicked in debug builds).
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use fhelium_residency::{
    MemoryReservation, ReplicaMode, ResidencyPlan, ResidencyRequest, ResidencyRequirement,
};
use fhelium_runtime::{ResidencyController, RuntimeError, TransferStreams};

fn accounting(
    m: &fhelium_runtime::ResidencyManager,
    loc: fhelium_residency::ResidencyLocation,
) -> (u64, u64) {
    // (0, 0) where the manager has not registered the location yet.
    let s = m.snapshot().unwrap();
    s.location(loc)
        .map_or((0, 0), |l| (l.used_bytes(), l.reserved_bytes()))
}

#[test]
fn a_reservation_past_u64_on_a_budgeted_location_is_over_budget() {
    let mem = memory();
    let m = manager(&mem, &[(S0, 1 << 20)]);
    let _h = adopt(&m, S0, ReplicaMode::Replicable, 1);
    let before = accounting(&m, S0);
    for nbytes in [u64::MAX, u64::MAX - NB + 1, u64::MAX / 2 + 1] {
        match m.reserve(S0, nbytes, "huge") {
            Err(RuntimeError::Budget {
                location,
                requested_bytes,
                budget_bytes,
                ..
            }) => {
                assert_eq!(
                    (location, requested_bytes, budget_bytes),
                    (S0, nbytes, 1 << 20)
                );
            }
            other => panic!("{nbytes} bytes: {:?}", other.map(|_| ())),
        }
        assert_eq!(accounting(&m, S0), before);
    }
}

#[test]
fn reservations_that_would_overflow_an_unbudgeted_location_are_refused() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let _h = adopt(&m, S1, ReplicaMode::Replicable, 2);
    let big = m.reserve(S1, u64::MAX / 2, "half").unwrap();
    let before = accounting(&m, S1);
    match m.reserve(S1, u64::MAX / 2, "other half") {
        Err(RuntimeError::InvalidArgument { reason }) => {
            assert!(
                reason.contains("sim:1") && reason.contains("overflow"),
                "{reason}"
            );
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert_eq!(accounting(&m, S1), before);
    drop(big);
    assert_eq!(accounting(&m, S1), (NB, 0));
}

#[test]
fn plans_and_requests_with_huge_reservations_are_refused_not_wrapped() {
    let mem = memory();
    let m = manager(&mem, &[(S0, 1 << 20)]);
    let h = adopt(&m, P, ReplicaMode::Replicable, 3);
    let huge = || MemoryReservation::new(S0, u64::MAX, "ws").unwrap();
    // The manager's dry run and its scope entry.
    let plan = ResidencyPlan::new("huge")
        .unwrap()
        .with_reservations([huge(), huge()]);
    let e = m.explain(&plan, None).unwrap();
    assert!(!e.feasible, "{e:?}");
    assert!(m.enter_scope(&plan, &TransferStreams::new(), None).is_err());
    assert_eq!(accounting(&m, S0), (0, 0));
    // The controller: the planner and the manager's check of its decision.
    let c = ResidencyController::new(&m);
    let r = ResidencyRequest::new(
        "huge",
        [ResidencyRequirement::new((*h).clone(), S0)],
        [huge()],
    )
    .unwrap();
    assert!(c.decide(&r).is_err());
    assert_eq!(accounting(&m, S0), (0, 0));
    // Unbudgeted: two reservations whose sum passes u64::MAX cannot both be held.
    let half = || MemoryReservation::new(S1, u64::MAX / 2 + 1, "half").unwrap();
    let plan = ResidencyPlan::new("halves")
        .unwrap()
        .with_reservations([half(), half()]);
    let e = m.explain(&plan, None).unwrap();
    assert!(!e.feasible, "{e:?}");
    match m.enter_scope(&plan, &TransferStreams::new(), None) {
        Err(e) => assert!(e.to_string().contains("overflow"), "{e}"),
        Ok(_) => panic!("two halves past u64::MAX were admitted"),
    }
    assert_eq!(accounting(&m, S1), (0, 0));
    let r = ResidencyRequest::new(
        "halves",
        [ResidencyRequirement::new((*h).clone(), S1)],
        [half(), half()],
    )
    .unwrap();
    assert!(c.decide(&r).is_err());
}
