//! Spec section 5 scenarios E (plans, explain, execute, scopes) and transactional plan steps.
#![allow(clippy::unwrap_used, clippy::redundant_closure_for_method_calls)]

mod common;

use common::*;
use fhelium_residency::{
    MemoryReservation, ResidencyAction, ResidencyHandle, ResidencyLocation, ResidencyPlan,
};
use fhelium_runtime::{PlanPhase, ResidencyErrorKind, RuntimeError, TransferStreams};

fn ensure(h: &ResidencyHandle, l: ResidencyLocation) -> ResidencyAction {
    ResidencyAction::EnsureResident {
        handle: h.clone(),
        location: l,
    }
}
fn drop_(h: &ResidencyHandle, l: ResidencyLocation) -> ResidencyAction {
    ResidencyAction::DropResident {
        handle: h.clone(),
        location: l,
    }
}
fn move_(
    h: &ResidencyHandle,
    to: ResidencyLocation,
    from: Option<ResidencyLocation>,
) -> ResidencyAction {
    ResidencyAction::MoveResident {
        handle: h.clone(),
        to,
        from,
    }
}
fn res(l: ResidencyLocation, n: u64, label: &str) -> MemoryReservation {
    MemoryReservation::new(l, n, label).unwrap()
}
fn none() -> TransferStreams {
    TransferStreams::new()
}

#[test]
fn a3_scope_from_positional_plan() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let (h, _) = sourced(&m, P, 1, 0);
    let plan = ResidencyPlan::new("x")
        .unwrap()
        .with_enter([ensure(&h, P)])
        .with_exit([drop_(&h, P)])
        .with_reservations([res(P, 8, "ws")]);
    let scope = m.enter_scope(&plan, &none(), None).unwrap();
    assert_eq!(locs(&m, &h), vec![P]);
    assert_eq!(reserved(&m, P), 8);
    let report = scope.close().unwrap();
    assert_eq!(report.transitions().len(), 2);
    assert!(locs(&m, &h).is_empty());
    assert_eq!(reserved(&m, P), 0);
}

#[test]
fn e39_reclaim_before_reservation() {
    let mem = memory();
    let m = manager(&mem, &[(P, 2 * NB)]);
    let (first, _) = sourced(&m, P, 1, 0);
    let (second, _) = sourced(&m, P, 2, 0);
    m.ensure(&first, P, None).unwrap();
    let plan = ResidencyPlan::new("reclaim-first")
        .unwrap()
        .with_reclaim([drop_(&first, P)])
        .with_enter([ensure(&second, P)])
        .with_exit([drop_(&second, P)])
        .with_reservations([res(P, NB, "ws")]);
    let ex = m.explain(&plan, None).unwrap();
    assert!(ex.feasible, "{:?}", ex.reason);
    let kinds: Vec<_> = ex.actions.iter().map(|a| a.action.kind_name()).collect();
    assert_eq!(kinds, ["DropResident", "EnsureResident", "DropResident"]);
    assert_eq!(ex.predicted_peak(P), Some(2 * NB));
    let scope = m.enter_scope(&plan, &none(), None).unwrap();
    assert_eq!((used(&m, P), reserved(&m, P)), (NB, NB));
    assert!(locs(&m, &first).is_empty());
    assert_eq!(locs(&m, &second), vec![P]);
    let report = scope.close().unwrap();
    let kinds: Vec<_> = report
        .transitions()
        .iter()
        .map(|t| t.action().kind_name())
        .collect();
    assert_eq!(kinds, ["DropResident", "EnsureResident", "DropResident"]);
    assert!(report.completed_at_ns() >= report.started_at_ns());
}

#[test]
fn e41_explicit_source_preflight_for_unloaded_value() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let (h, loads) = sourced(&m, P, 1, 0);
    let plan = ResidencyPlan::new("x")
        .unwrap()
        .with_enter([move_(&h, P, Some(P))]);
    let ex = m.explain(&plan, None).unwrap();
    assert!(!ex.feasible);
    assert_eq!(
        ex.actions[0].reason.as_deref(),
        Some("explicit source pageable-host is not resident")
    );
    let v = m.state_version().unwrap();
    let e = m
        .execute_actions("x", plan.enter(), &none(), None)
        .unwrap_err();
    assert!(
        e.is_plan_error() && e.to_string().contains("explicit source"),
        "{e}"
    );
    let plan = plan.with_reservations([res(P, 1, "one")]);
    let e = m.enter_scope(&plan, &none(), None).unwrap_err();
    assert!(matches!(e, RuntimeError::Plan { .. }));
    assert_eq!(m.state_version().unwrap(), v);
    assert!(m.snapshot().unwrap().reservations().is_empty());
    assert_eq!(loads.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn e43_runtime_failure_in_execute_actions() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let (first, _) = sourced(&m, P, 1, 0);
    let (second, _) = sourced(&m, P, 2, 1);
    let actions = [ensure(&first, N), ensure(&second, N)];
    let e = m
        .execute_actions("exec", &actions, &none(), None)
        .unwrap_err();
    assert!(!e.is_plan_error());
    assert_eq!(e.kind(), ResidencyErrorKind::PlanExecution);
    let f = e.plan_execution().unwrap();
    assert_eq!(
        (f.plan_name.as_str(), f.phase, f.failed_action_index),
        ("exec", PlanPhase::Execute, Some(1))
    );
    assert_eq!(f.failed_action.as_ref(), Some(&actions[1]));
    assert!(matches!(f.source, RuntimeError::Source { .. }));
    assert_eq!(f.partial_report.transitions().len(), 1);
    assert!(e.to_string().contains("EnsureResident #1"), "{e}");
    assert_eq!(locs(&m, &first), vec![N]);
    assert!(locs(&m, &second).is_empty());
}

#[test]
fn e45_failure_in_the_reclaim_phase() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let (first, _) = sourced(&m, P, 1, 0);
    let (second, _) = sourced(&m, P, 2, 1);
    m.ensure(&first, P, None).unwrap();
    let plan = ResidencyPlan::new("rc")
        .unwrap()
        .with_reclaim([drop_(&first, P), move_(&second, N, None)]);
    let e = m.enter_scope(&plan, &none(), None).unwrap_err();
    let f = e.plan_execution().unwrap();
    assert_eq!(
        (f.phase, f.failed_action_index),
        (PlanPhase::Reclaim, Some(1))
    );
    assert_eq!(f.partial_report.transitions().len(), 1);
    assert!(locs(&m, &first).is_empty());
}

#[test]
fn e47_failure_at_exit_releases_reservations() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let (a, _) = sourced(&m, P, 1, 0);
    let (b, _) = sourced(&m, P, 2, 0);
    let plan = ResidencyPlan::new("exit")
        .unwrap()
        .with_enter([ensure(&a, N), ensure(&b, N)])
        .with_exit([drop_(&a, N), drop_(&b, N)])
        .with_reservations([res(N, 5, "ws")]);
    let scope = m.enter_scope(&plan, &none(), None).unwrap();
    let hold = m.hold(&[&b], N).unwrap();
    let e = scope.close().unwrap_err();
    let f = e.plan_execution().unwrap();
    assert_eq!((f.phase, f.failed_action_index), (PlanPhase::Exit, Some(1)));
    assert!(matches!(f.source, RuntimeError::InUse { .. }));
    let kinds: Vec<_> = f
        .partial_report
        .transitions()
        .iter()
        .map(|t| t.action().kind_name())
        .collect();
    assert_eq!(kinds, ["EnsureResident", "EnsureResident", "DropResident"]);
    assert_eq!(f.partial_report.plan_name(), "exit");
    assert!(locs(&m, &a).is_empty());
    assert_eq!(locs(&m, &b), vec![N]);
    assert_eq!(reserved(&m, N), 0);
    hold.release().unwrap();
}

#[test]
fn e49_nested_scopes_stack_reservations() {
    let mem = memory();
    let m = manager(&mem, &[(P, 64)]);
    let outer = m
        .enter_scope(
            &ResidencyPlan::new("outer")
                .unwrap()
                .with_reservations([res(P, 17, "o")]),
            &none(),
            None,
        )
        .unwrap();
    assert_eq!(reserved(&m, P), 17);
    let inner = m
        .enter_scope(
            &ResidencyPlan::new("inner")
                .unwrap()
                .with_reservations([res(P, 11, "i")]),
            &none(),
            None,
        )
        .unwrap();
    assert_eq!(reserved(&m, P), 28);
    inner.close().unwrap();
    assert_eq!(reserved(&m, P), 17);
    outer.close().unwrap();
    assert_eq!(reserved(&m, P), 0);
    assert_eq!(
        m.snapshot()
            .unwrap()
            .location(P)
            .unwrap()
            .peak_charged_bytes(),
        28
    );
}

#[test]
fn e51_prepared_versions_are_checked_first() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let (h, _) = sourced(&m, P, 1, 0);
    let prepared = m.snapshot().unwrap().state_version();
    m.reserve(P, 0, "bump").unwrap().release().unwrap();
    let plan = ResidencyPlan::new("p").unwrap().with_enter([ensure(&h, P)]);
    let e = m.explain(&plan, Some(prepared)).unwrap_err();
    let now = m.state_version().unwrap();
    assert!(
        matches!(e, RuntimeError::StaleState { expected_version, actual_version } if expected_version == prepared && actual_version == now)
    );
    assert!(e.is_plan_error());
    assert!(matches!(
        m.enter_scope(&plan, &none(), Some(prepared)).unwrap_err(),
        RuntimeError::StaleState { .. }
    ));
    assert!(matches!(
        m.execute_actions("p", plan.enter(), &none(), Some(prepared))
            .unwrap_err(),
        RuntimeError::StaleState { .. }
    ));
    assert!(locs(&m, &h).is_empty());
    // abandoned scope releases its reservations, runs no exit actions
    {
        let _s = m
            .enter_scope(
                &ResidencyPlan::new("a")
                    .unwrap()
                    .with_enter([ensure(&h, P)])
                    .with_exit([drop_(&h, P)])
                    .with_reservations([res(P, 3, "r")]),
                &none(),
                Some(now),
            )
            .unwrap();
        assert_eq!(reserved(&m, P), 3);
    }
    assert_eq!(reserved(&m, P), 0);
    assert_eq!(locs(&m, &h), vec![P]);
}

#[test]
fn reservation_failure_at_entry_releases_admitted_ones() {
    let mem = memory();
    let m = manager(&mem, &[(N, 10)]);
    let plan = ResidencyPlan::new("r")
        .unwrap()
        .with_reservations([res(N, 4, "a"), res(N, 4, "b")]);
    let scope = m.enter_scope(&plan, &none(), None).unwrap();
    // preflight passes with 2 free bytes? No: it is infeasible and nothing changes.
    let e = m.enter_scope(&plan, &none(), None).unwrap_err();
    assert!(
        e.is_plan_error() && e.to_string().contains("exceeds budget"),
        "{e}"
    );
    assert_eq!(reserved(&m, N), 8);
    scope.close().unwrap();
}

#[test]
fn transfer_streams_are_validated_and_honoured() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let h = repl(&m, 1);
    let mut bad = TransferStreams::new();
    bad.insert(N, mem.stream(&S0).unwrap());
    let plan = ResidencyPlan::new("t")
        .unwrap()
        .with_enter([ensure(&h, S0)]);
    let v = m.state_version().unwrap();
    assert!(matches!(
        m.enter_scope(&plan, &bad, None).unwrap_err(),
        RuntimeError::Stream { .. }
    ));
    let mut wrong = TransferStreams::new();
    wrong.insert(S0, mem.stream(&S1).unwrap());
    assert!(m.execute_actions("t", plan.enter(), &wrong, None).is_err());
    assert_eq!(m.state_version().unwrap(), v);
    let transfer = mem.stream(&S0).unwrap();
    transfer.hold().unwrap();
    let mut streams = TransferStreams::new();
    streams.insert(S0, transfer.clone());
    let scope = m.enter_scope(&plan, &streams, Some(v)).unwrap();
    // the copy was enqueued on the held transfer stream: its event is still pending
    let probe = transfer.record_event().unwrap();
    assert!(!probe.query().unwrap());
    transfer.release_hold().unwrap();
    scope.close().unwrap();
    assert_eq!(locs(&m, &h), vec![P, S0]);
}

#[test]
fn injected_failures_in_plans_leave_the_failing_step_unapplied() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let a = repl(&m, 1);
    let b = repl(&m, 2);
    let c = repl(&m, 3);
    mem.sim_faults(&S0).unwrap().fail_next_copies(1);
    let before_b = locs(&m, &b);
    // step 0 succeeds (to N), step 1 fails (copy into sim:0), step 2 never runs
    let actions = [ensure(&a, N), move_(&b, S0, None), ensure(&c, N)];
    let e = m.execute_actions("f", &actions, &none(), None).unwrap_err();
    let f = e.plan_execution().unwrap();
    assert_eq!(f.failed_action_index, Some(1));
    assert!(matches!(f.source, RuntimeError::Memory { .. }));
    assert_eq!(locs(&m, &a), vec![P, N]);
    assert_eq!(locs(&m, &b), before_b); // the move's source is intact
    assert_eq!(locs(&m, &c), vec![P]);
    let s = m.snapshot().unwrap();
    assert_eq!(s.location(S0).map_or(0, |l| l.used_bytes()), 0);
}

/// A runtime failure in a scope's enter phase is a PlanExecution in phase `enter` naming the
/// failing action; the reclaim and enter steps before it stay committed and the reservations
/// admitted before it are released.
#[test]
fn failure_in_the_enter_phase_releases_the_reservations() {
    let mem = memory();
    let m = manager(&mem, &[]);
    let (gone, _) = sourced(&m, P, 1, 0);
    let (first, _) = sourced(&m, P, 2, 0);
    let (second, _) = sourced(&m, P, 3, 1);
    m.ensure(&gone, N, None).unwrap();
    let plan = ResidencyPlan::new("en")
        .unwrap()
        .with_reclaim([drop_(&gone, N)])
        .with_enter([ensure(&first, N), ensure(&second, N)])
        .with_reservations([res(N, 5, "ws"), res(P, 7, "ws2")]);
    let e = m.enter_scope(&plan, &none(), None).unwrap_err();
    assert!(!e.is_plan_error());
    assert_eq!(e.kind(), ResidencyErrorKind::PlanExecution);
    let f = e.plan_execution().unwrap();
    assert_eq!(
        (f.plan_name.as_str(), f.phase, f.failed_action_index),
        ("en", PlanPhase::Enter, Some(1))
    );
    assert_eq!(f.failed_action.as_ref(), Some(&plan.enter()[1]));
    assert!(f.failed_reservation.is_none() && f.failed_reservation_index.is_none());
    assert!(
        matches!(&f.source, RuntimeError::Source { handle, location: P, .. } if handle == &*second),
        "{}",
        f.source
    );
    let kinds: Vec<_> = f
        .partial_report
        .transitions()
        .iter()
        .map(|t| t.action().kind_name())
        .collect();
    assert_eq!(kinds, ["DropResident", "EnsureResident"]);
    assert!(
        e.to_string().contains("during enter at EnsureResident #1"),
        "{e}"
    );
    assert_eq!((reserved(&m, N), reserved(&m, P)), (0, 0));
    assert!(m.snapshot().unwrap().reservations().is_empty());
    assert!(locs(&m, &gone).is_empty());
    assert_eq!(locs(&m, &first), vec![N]);
    assert!(locs(&m, &second).is_empty());
}
