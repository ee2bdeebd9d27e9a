//! The dry-run simulator (spec 2.12.1, 3.10): every per-action rule and the predictions.
#![allow(clippy::unwrap_used, non_upper_case_globals)]
mod common;
use common::*;
use fhelium_residency::*;
use ReplicaMode::{Exclusive as EXCL, Replicable as REPL};

const n: u64 = 8;

fn snap(
    b: ResidencySnapshotBuilder,
    values: Vec<ResidencyValueSnapshotParts>,
) -> ResidencySnapshot {
    values
        .into_iter()
        .fold(b, |b, v| b.value(v.build().unwrap()))
        .build()
        .unwrap()
}

fn plan(enter: Vec<ResidencyAction>) -> ResidencyPlan {
    ResidencyPlan::new("p").unwrap().with_enter(enter)
}

/// The single action's explanation and the plan's verdict.
fn one(
    s: &ResidencySnapshot,
    a: ResidencyAction,
) -> (ResidencyActionExplanation, ResidencyPlanExplanation) {
    let e = explain(s, &plan(vec![a]));
    (e.actions[0].clone(), e)
}

#[test]
fn source_backed_ensure_with_reservation_predicts_two_charges() {
    let s = snap(
        ResidencySnapshotBuilder::new(MANAGER, 1),
        vec![sourced(0, n, P, &[])],
    );
    let p = plan(vec![ensure(&handle(0, "T"), P)]).with_reservations([reservation(P, n, "ws")]);
    let e = explain(&s, &p);
    assert!(e.feasible, "{e:?}");
    assert_eq!(e.predicted_peak(P), Some(2 * n));
    assert_eq!(e.actions[0].source, Some(P));
    assert_eq!(e.actions[0].destination, Some(P));
    assert_eq!(e.reservations, p.reservations());
}

#[test]
fn reclaim_runs_before_reservations_and_actions_are_in_order() {
    // Scenario 39: P budget 2n, first and second source-backed, first at P.
    let s = snap(
        ResidencySnapshotBuilder::new(MANAGER, 1).budget(P, 2 * n),
        vec![sourced(0, n, P, &[P]), sourced(1, n, P, &[])],
    );
    let (first, second) = (handle(0, "T"), handle(1, "T"));
    let p = ResidencyPlan::new("39")
        .unwrap()
        .with_reclaim([drop_(&first, P)])
        .with_enter([ensure(&second, P)])
        .with_exit([drop_(&second, P)])
        .with_reservations([reservation(P, n, "ws")]);
    let e = explain(&s, &p);
    assert!(e.feasible, "{:?}", e.reason);
    let order: Vec<&ResidencyAction> = e.actions.iter().map(|a| &a.action).collect();
    assert_eq!(order, p.actions().collect::<Vec<_>>());
    assert_eq!(e.predicted_peak(P), Some(2 * n));
    // Without the reclaim the reservation plus the load exceeds the budget.
    let p2 = p.clone().with_reclaim([]);
    let e = explain(&s, &p2);
    assert!(!e.feasible);
    assert!(e
        .reason
        .as_deref()
        .unwrap()
        .contains("exceeds budget at pageable-host"));
}

#[test]
fn reservation_over_budget_stops_the_simulation() {
    let s = snap(
        ResidencySnapshotBuilder::new(MANAGER, 1).budget(N, n),
        vec![adopted(0, n, REPL, &[P])],
    );
    let p =
        plan(vec![ensure(&handle(0, "T"), N)]).with_reservations([reservation(N, 2 * n, "big")]);
    let e = explain(&s, &p);
    assert!(!e.feasible);
    assert!(e.actions.is_empty());
    assert!(e
        .reason
        .clone()
        .unwrap()
        .starts_with("Reservation 'big' exceeds budget at pinned-host"));
    assert_eq!(e.predicted_peak(N), Some(2 * n));
    // A reservation-only plan is admitted after zero actions.
    let e = explain(
        &s,
        &ResidencyPlan::new("r")
            .unwrap()
            .with_reservations([reservation(N, n, "ok")]),
    );
    assert!(e.feasible);
    assert_eq!(e.predicted_peak(N), Some(n));
}

#[test]
fn first_unregistered_location_is_appended_to_the_peaks() {
    let s = snap(
        ResidencySnapshotBuilder::new(MANAGER, 1),
        vec![adopted(0, n, REPL, &[P])],
    );
    let (a, e) = one(&s, ensure(&handle(0, "T"), N));
    assert!(a.executable && !a.no_op);
    assert_eq!(e.predicted_peak_bytes, vec![(P, n), (N, n)]);
    assert_eq!((a.logical_nbytes, a.storage_nbytes), (n, n));
}

#[test]
fn handle_errors_make_actions_not_executable() {
    let s = snap(
        ResidencySnapshotBuilder::new(MANAGER, 1),
        vec![
            adopted(0, n, REPL, &[P]),
            adopted(1, n, REPL, &[P]).discarded(),
        ],
    );
    let foreign = ResidencyHandle::new(9, 0, "T").unwrap();
    let (a, e) = one(&s, ensure(&foreign, P));
    assert!(!a.executable && !e.feasible);
    assert!(a.reason.unwrap().contains("belongs to manager 9, not 1"));
    assert_eq!((a.logical_nbytes, a.storage_nbytes), (0, 0));
    let (a, _) = one(&s, ensure(&handle(5, "T"), P));
    assert!(a.reason.unwrap().contains("unknown"));
    let (a, _) = one(&s, ensure(&handle(1, "T"), P));
    assert!(a.reason.unwrap().contains("has been discarded"));
    // Discarded earlier in this plan.
    let h = handle(0, "T");
    let e = explain(
        &s,
        &plan(vec![
            ResidencyAction::DiscardValue { handle: h.clone() },
            ensure(&h, N),
        ]),
    );
    assert!(!e.feasible);
    assert_eq!(e.actions.len(), 2);
    assert!(e.actions[1]
        .reason
        .as_deref()
        .unwrap()
        .contains("is discarded"));
}

#[test]
fn unavailable_device_locations_fail_with_their_reason() {
    let s = snap(
        ResidencySnapshotBuilder::new(MANAGER, 1).available_devices(vec![C0]),
        vec![adopted(0, n, REPL, &[P])],
    );
    let (a, e) = one(&s, ensure(&handle(0, "T"), C1));
    assert!(!a.executable);
    assert!(e.reason.unwrap().contains("not available"));
    assert_eq!(e.predicted_peak_bytes, vec![(P, n)]);
    let s = snap(
        ResidencySnapshotBuilder::new(MANAGER, 1).available_devices(vec![]),
        vec![adopted(0, n, REPL, &[P])],
    );
    let (a, _) = one(&s, ensure(&handle(0, "T"), C0));
    assert!(a.reason.unwrap().contains("require available"));
    let (a, _) = one(&s, ensure(&handle(0, "T"), C0));
    assert!(!a.executable);
}

#[test]
fn ensure_rules() {
    let s = snap(
        ResidencySnapshotBuilder::new(MANAGER, 1),
        vec![
            adopted(0, n, REPL, &[P]),
            adopted(1, n, EXCL, &[P]),
            sourced(2, n, N, &[]),
        ],
    );
    let (a, _) = one(&s, ensure(&handle(0, "T"), P));
    assert!(a.executable && a.no_op);
    assert_eq!(a.reason.as_deref(), Some("destination already resident"));
    assert_eq!(a.source, None);
    let (a, _) = one(&s, ensure(&handle(1, "T"), N));
    assert!(!a.executable);
    assert!(a.reason.unwrap().contains("use MoveResident"));
    // Reconstruction: temporary charge at the source location, then the destination.
    let (a, e) = one(&s, ensure(&handle(2, "T"), C0));
    assert!(a.executable);
    assert_eq!((a.source, a.destination), (Some(N), Some(C0)));
    assert_eq!(e.predicted_peak(N), Some(n));
    assert_eq!(e.predicted_peak(C0), Some(n));
}

#[test]
fn move_rules() {
    let s = snap(
        ResidencySnapshotBuilder::new(MANAGER, 1),
        vec![
            adopted(0, n, REPL, &[P, N]),
            sourced(1, n, P, &[]),
            adopted(2, n, EXCL, &[]).at_protected(P, 0, 1, 0),
            adopted(3, n, EXCL, &[P]),
        ],
    );
    let (h0, h1, h2, h3) = (
        handle(0, "T"),
        handle(1, "T"),
        handle(2, "T"),
        handle(3, "T"),
    );
    // Scenario 41: explicit source of an unloaded value.
    let (a, e) = one(&s, move_(&h1, P, Some(P)));
    assert_eq!(
        a.reason.as_deref(),
        Some("explicit source pageable-host is not resident")
    );
    assert!(!e.feasible);
    // `to` already resident: no-op when the source is `to` or absent...
    let (a, _) = one(&s, move_(&h0, N, Some(N)));
    assert!(a.no_op && a.executable);
    assert_eq!(
        a.reason.as_deref(),
        Some("destination already owns the selected replica")
    );
    // ...otherwise it removes the other replica (not a no-op).
    let e = explain(&s, &plan(vec![move_(&h0, N, None), drop_(&h0, N)]));
    assert!(!e.actions[0].no_op && e.actions[0].executable);
    assert_eq!(e.actions[0].source, Some(P));
    assert!(e.actions[1]
        .reason
        .as_deref()
        .unwrap()
        .contains("final MUST_PRESERVE"));
    // Protected source.
    let (a, _) = one(&s, move_(&h2, N, None));
    assert_eq!(
        a.reason.as_deref(),
        Some("source pageable-host is protected")
    );
    // Reconstruction move.
    let (a, e) = one(&s, move_(&h1, N, None));
    assert!(a.executable);
    assert_eq!(a.source, Some(P));
    // P holds h0, h2 and h3 (3n); the temporary load adds n.
    assert_eq!(e.predicted_peak(P), Some(4 * n));
    // Plain move frees the source.
    let e = explain(&s, &plan(vec![move_(&h3, N, None), move_(&h3, P, None)]));
    assert!(e.feasible, "{:?}", e.reason);
    assert!(e.actions[1].executable && !e.actions[1].no_op);
    assert_eq!(e.actions[1].source, Some(N));
}

#[test]
fn move_of_a_value_with_nothing_to_move_fails() {
    let s = snap(
        ResidencySnapshotBuilder::new(MANAGER, 1),
        vec![adopted(0, n, REPL, &[P])],
    );
    let h = handle(0, "T");
    // Drop the only copy is refused; discard then move reports the discard.
    let e = explain(
        &s,
        &plan(vec![
            ResidencyAction::DiscardValue { handle: h.clone() },
            move_(&h, N, None),
        ]),
    );
    assert!(e.actions[1]
        .reason
        .as_deref()
        .unwrap()
        .contains("discarded"));
}

#[test]
fn drop_and_discard_rules() {
    let s = snap(
        ResidencySnapshotBuilder::new(MANAGER, 1).budget(N, 4 * n),
        vec![
            adopted(0, n, REPL, &[P]).at_protected(N, 1, 0, 0),
            adopted(1, n, REPL, &[P]),
            sourced(2, n, P, &[N]),
            adopted(3, n, REPL, &[P]).at_protected(N, 0, 0, 2),
        ],
    );
    let (h0, h1, h2, h3) = (
        handle(0, "T"),
        handle(1, "T"),
        handle(2, "T"),
        handle(3, "T"),
    );
    let (a, _) = one(&s, drop_(&h1, N));
    assert!(a.no_op && a.executable);
    assert_eq!(a.reason.as_deref(), Some("materialization already absent"));
    assert_eq!(a.source, Some(N));
    let (a, _) = one(&s, drop_(&h0, N));
    assert_eq!(
        a.reason.as_deref(),
        Some("materialization at pinned-host is protected")
    );
    let (a, _) = one(&s, drop_(&h1, P));
    assert_eq!(
        a.reason.as_deref(),
        Some("cannot drop final MUST_PRESERVE materialization")
    );
    // A source-backed sole copy may be dropped.
    let (a, _) = one(&s, drop_(&h2, N));
    assert!(a.executable && !a.no_op);
    let (a, _) = one(&s, ResidencyAction::DiscardValue { handle: h3.clone() });
    assert_eq!(
        a.reason.as_deref(),
        Some("discarded value has protected locations [pinned-host]")
    );
    let (a, _) = one(&s, ResidencyAction::DiscardValue { handle: h1.clone() });
    assert!(a.executable && a.source.is_none() && a.destination.is_none());
    // A replica created by the plan is never protected, even where a protected one was.
    let e = explain(
        &s,
        &plan(vec![drop_(&h2, N), ensure(&h2, N), drop_(&h2, N)]),
    );
    assert!(e.feasible, "{:?}", e.reason);
}

#[test]
fn budget_exceeded_names_the_location_and_stops() {
    let s = snap(
        ResidencySnapshotBuilder::new(MANAGER, 1).budget(N, n),
        vec![adopted(0, n, REPL, &[P]), adopted(1, n, REPL, &[P])],
    );
    let e = explain(
        &s,
        &plan(vec![
            ensure(&handle(0, "T"), N),
            ensure(&handle(1, "T"), N),
            drop_(&handle(0, "T"), N),
        ]),
    );
    assert!(!e.feasible);
    assert_eq!(e.actions.len(), 2, "later actions are absent");
    let reason = e.reason.clone().unwrap();
    assert!(
        reason.starts_with("Transition exceeds budget at pinned-host"),
        "{reason}"
    );
    assert_eq!(e.predicted_peak(N), Some(2 * n));
}

#[test]
fn explain_is_pure() {
    let (snapshot, request, policy, _) = seed();
    let before = snapshot.clone();
    let d = decide(&snapshot, &request, &policy, None).unwrap();
    let e1 = explain(&snapshot, d.plan());
    let e2 = explain(&snapshot, d.plan());
    assert_eq!(e1, e2);
    assert_eq!(&e1, d.explanation());
    assert_eq!(snapshot, before);
}
