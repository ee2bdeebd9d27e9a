//! Program forecasts (`forecast`): each step decided on the state the steps before it leave,
//! with the leases of the open use, the held reservations and the recorded access order.
#![allow(clippy::unwrap_used)]
#![allow(non_upper_case_globals)]
mod common;
use common::*;
use fhelium_residency::*;

const n: u64 = 8;
use ReplicaMode::{Exclusive as EXCL, Replicable as REPL};

/// `count` replicable values of n bytes at pageable host, with `budget` at N.
fn at_pageable(count: u64, budget: u64) -> ResidencySnapshot {
    build(
        ResidencySnapshotBuilder::new(MANAGER, 3).budget(N, budget),
        (0..count).map(|i| adopted(i, n, REPL, &[P])).collect(),
    )
}

fn lru_policy() -> DeterministicTieredLRU {
    DeterministicTieredLRU::with_fallback_tiers([(N, vec![P])]).unwrap()
}

fn run(
    snap: &ResidencySnapshot,
    program: &[ResidencyProgramStep],
) -> Result<ResidencyForecast, ModelError> {
    forecast(
        snap,
        program,
        &lru_policy(),
        None,
        DEFAULT_SEARCH_STATE_LIMIT,
    )
}

fn use_(name: &str, hs: &[&ResidencyHandle], res: Vec<MemoryReservation>) -> ResidencyProgramStep {
    let reqs: Vec<_> = hs.iter().map(|h| (*h, N)).collect();
    ResidencyProgramStep::used(req(name, &reqs, res))
}

fn prefetch(name: &str, hs: &[&ResidencyHandle]) -> ResidencyProgramStep {
    let reqs: Vec<_> = hs.iter().map(|h| (*h, N)).collect();
    ResidencyProgramStep::prefetched(req(name, &reqs, Vec::new()))
}

/// Four values streamed through a budget of two: each use's value stays leased while the
/// next one is prefetched, so the prefetch reclaims the one before; the uses then enter
/// nothing. Every value is copied once and the peak is the budget.
#[test]
fn a_streamed_program_reclaims_the_value_before_the_leased_one() {
    let snap = at_pageable(4, 2 * n);
    let h: Vec<_> = (0..4).map(|i| handle(i, "T")).collect();
    let mut program = vec![use_("u0", &[&h[0]], Vec::new())];
    for (i, hi) in h.iter().enumerate().skip(1) {
        program.push(prefetch(&format!("p{i}"), &[hi]));
        program.push(use_(&format!("u{i}"), &[hi], Vec::new()));
    }
    let f = run(&snap, &program).unwrap();
    assert_eq!(f.steps.len(), 7);
    assert_eq!(f.steps[0].decision.plan().enter(), &[ensure(&h[0], N)]);
    #[allow(clippy::needless_range_loop)] // i names both a step pair and a value
    for i in 1..4 {
        let p = &f.steps[2 * i - 1];
        assert_eq!(p.kind, ResidencyStepKind::Prefetch);
        assert_eq!(p.decision.plan().enter(), &[ensure(&h[i], N)]);
        let want: Vec<ResidencyAction> = if i >= 2 {
            vec![drop_(&h[i - 2], N)]
        } else {
            Vec::new()
        };
        assert_eq!(p.decision.plan().reclaim(), want.as_slice(), "prefetch {i}");
        let u = &f.steps[2 * i];
        assert!(u.decision.plan().enter().is_empty() && u.decision.plan().reclaim().is_empty());
    }
    assert_eq!(f.copies_into(N).count(), 4);
    assert!(f.copies_into(N).all(|c| c.from == Some(P) && c.bytes == n));
    assert_eq!(f.bytes_into(N), 4 * n);
    assert_eq!(f.peak_charged(N), Some(2 * n));
    // The final state: the last two values at N, no lease, no reservation.
    let last = f.final_snapshot.location(N).unwrap();
    assert_eq!((last.used_bytes(), last.reserved_bytes()), (2 * n, 0));
    assert_eq!(last.parts().use_count, 0);
    for (i, want) in [(0, false), (1, false), (2, true), (3, true)] {
        let at_n = f
            .final_snapshot
            .value(&h[i])
            .unwrap()
            .materialization(N)
            .is_some();
        assert_eq!(at_n, want, "value {i}");
    }
    // The input snapshot is untouched.
    assert_eq!(snap.location(N).unwrap().used_bytes(), 0);
}

/// The open use's lease protects its value: with one slot left, a prefetch that needs the
/// leased value's room is infeasible, and the error names the step; the same program with
/// the prefetch after the next use fits.
#[test]
fn the_open_use_is_leased_until_the_next_use() {
    let snap = at_pageable(2, n);
    let h: Vec<_> = (0..2).map(|i| handle(i, "T")).collect();
    let e = run(
        &snap,
        &[use_("u0", &[&h[0]], Vec::new()), prefetch("p1", &[&h[1]])],
    )
    .unwrap_err();
    match e {
        ModelError::ForecastStep {
            step,
            ref request,
            ref source,
        } => {
            assert_eq!((step, request.as_str()), (1, "p1"));
            assert!(
                matches!(**source, ModelError::Infeasible { .. }),
                "{source}"
            );
        }
        other => panic!("expected ForecastStep, found {other}"),
    }
    let f = run(
        &snap,
        &[
            use_("u0", &[&h[0]], Vec::new()),
            use_("u1", &[&h[1]], Vec::new()),
        ],
    )
    .unwrap();
    assert_eq!(f.steps[1].decision.plan().reclaim(), &[drop_(&h[0], N)]);
}

/// A use's reservations are held until the next use: a prefetch in between sees them, the
/// next use does not. A prefetch with a reservation is refused with the step, the bytes and
/// the location.
#[test]
fn reservations_are_held_until_the_next_use() {
    let snap = at_pageable(3, 3 * n);
    let h: Vec<_> = (0..3).map(|i| handle(i, "T")).collect();
    let ws = || vec![reservation(N, n, "ws")];
    // u0 holds h0 (n) + ws (n); p1 adds h1 (n): full; the program peaks at 3n.
    let f = run(
        &snap,
        &[
            use_("u0", &[&h[0]], ws()),
            prefetch("p1", &[&h[1]]),
            use_("u1", &[&h[1]], ws()),
        ],
    )
    .unwrap();
    assert_eq!(f.peak_charged(N), Some(3 * n));
    assert!(f.steps[1].decision.plan().reclaim().is_empty());
    // u1: h0 (unleased now) + h1 + the new ws = 3n: no reclaim needed either.
    assert!(f.steps[2].decision.plan().reclaim().is_empty());
    // A second prefetch while u0 still holds h0 + ws: the budget is full with h1, the only
    // unleased value, so the prefetch of h2 reclaims h1.
    let f = run(
        &snap,
        &[
            use_("u0", &[&h[0]], ws()),
            prefetch("p1", &[&h[1]]),
            prefetch("p2", &[&h[2]]),
        ],
    )
    .unwrap();
    assert_eq!(f.steps[2].decision.plan().reclaim(), &[drop_(&h[1], N)]);
    let e = run(
        &snap,
        &[ResidencyProgramStep::prefetched(req(
            "held",
            &[(&h[0], N)],
            ws(),
        ))],
    )
    .unwrap_err();
    assert_eq!(
        e,
        ModelError::PrefetchReservation {
            step: 0,
            request: "held".to_owned(),
            location: N,
            bytes: n
        }
    );
    assert!(
        e.to_string().contains("reserves 8 bytes at pinned-host"),
        "{e}"
    );
}

/// The access order evolves with the program: a value used early is reclaimed before one
/// prefetched later, whatever their order in the snapshot. Exclusive values move instead of
/// being dropped (their only replica), and the move is a copy into N.
#[test]
fn recency_follows_the_program_and_exclusive_values_move() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 3).budget(N, 2 * n),
        vec![
            adopted(0, n, EXCL, &[N]).with_last_access(5),
            adopted(1, n, REPL, &[P, N]).with_last_access(1),
            adopted(2, n, REPL, &[P]),
        ],
    );
    let h: Vec<_> = (0..3).map(|i| handle(i, "T")).collect();
    // Touch h1 last, then ask for h2: h0 (epoch 5, older than the program's) must go, and
    // being exclusive it moves to pageable host.
    let f = run(
        &snap,
        &[
            use_("touch", &[&h[1]], Vec::new()),
            use_("want", &[&h[2]], Vec::new()),
        ],
    )
    .unwrap();
    assert_eq!(
        f.steps[1].decision.plan().reclaim(),
        &[move_(&h[0], P, Some(N))]
    );
    let moved: Vec<_> = f.steps[1]
        .copies
        .iter()
        .map(|c| (c.handle.clone(), c.from, c.to))
        .collect();
    assert_eq!(
        moved,
        vec![(h[0].clone(), Some(N), P), (h[2].clone(), Some(P), N)]
    );
    assert!(f
        .final_snapshot
        .value(&h[0])
        .unwrap()
        .materialization(N)
        .is_none());
}

/// Three rounds over four values through room for three: LRU evicts exactly the value needed
/// next, so every use after the first fill copies (12 copies); next-use priorities (Belady's
/// order) keep what is needed soonest (6 copies, counted by hand in the comments).
#[test]
fn next_use_priorities_beat_lru_on_a_cyclic_program() {
    let snap = at_pageable(4, 3 * n);
    let h: Vec<_> = (0..4).map(|i| handle(i, "T")).collect();
    let program: Vec<_> = (0..12)
        .map(|i| use_(&format!("u{i}"), &[&h[i % 4]], Vec::new()))
        .collect();
    // At step 5 the next uses are v1 at 5, v2 at 6, v3 at 7, v0 at 8; at step 11 only v3 is
    // used again, so the others fall back to 0.
    let p5 = next_use_priorities(&program, 5);
    let want: Vec<_> = [8, 5, 6, 7]
        .iter()
        .enumerate()
        .map(|(j, i)| (h[j].clone(), NEXT_USE_BASE - i))
        .collect();
    assert_eq!(p5, want);
    let p11 = next_use_priorities(&program, 11);
    assert_eq!(
        p11,
        vec![
            (h[0].clone(), 0),
            (h[1].clone(), 0),
            (h[2].clone(), 0),
            (h[3].clone(), NEXT_USE_BASE - 11)
        ]
    );

    let lru = run(&snap, &program).unwrap();
    assert_eq!(lru.copies_into(N).count(), 12);
    let belady = forecast_next_use(
        &snap,
        &program,
        &lru_policy(),
        None,
        DEFAULT_SEARCH_STATE_LIMIT,
    )
    .unwrap();
    // A use ends the previous use's lease, so every resident value is a candidate. Copies:
    // v0 v1 v2 (fill); at step 3, v3 evicting v2 (next use 6, after v0 at 4 and v1 at 5); at
    // step 6, v2 evicting v1 (9, after v3 at 7 and v0 at 8); at step 9, v1 evicting v0 (never
    // used again). Six copies, the minimum (Belady's MIN on 0123 0123 0123 with three slots).
    assert_eq!(belady.copies_into(N).count(), 6);
    let evicted: Vec<_> = belady
        .steps
        .iter()
        .flat_map(|s| {
            s.decision
                .plan()
                .reclaim()
                .iter()
                .map(|a| a.handle().clone())
        })
        .collect();
    assert_eq!(evicted, vec![h[2].clone(), h[1].clone(), h[0].clone()]);
    assert_eq!(belady.peak_charged(N), Some(3 * n));
}

/// The smallest budget of a streamed program (each use keeps its value leased while the next
/// is prefetched, with a reservation of n held by each use) is 3n: the leased value, the
/// prefetched one and the reservation. A program that cannot fit even at the maximum fails
/// with the forecast's error; an unknown location is an invalid snapshot.
#[test]
fn the_minimum_budget_is_found_by_forecasting() {
    let snap = at_pageable(4, 100 * n);
    let h: Vec<_> = (0..4).map(|i| handle(i, "T")).collect();
    let mut program = vec![use_("u0", &[&h[0]], vec![reservation(N, n, "ws")])];
    for (i, hi) in h.iter().enumerate().skip(1) {
        program.push(prefetch(&format!("p{i}"), &[hi]));
        program.push(use_(&format!("u{i}"), &[hi], vec![reservation(N, n, "ws")]));
    }
    let min = |next_use| {
        minimum_budget(
            &snap,
            &program,
            &lru_policy(),
            None,
            DEFAULT_SEARCH_STATE_LIMIT,
            next_use,
            N,
            100 * n,
        )
    };
    assert_eq!(min(false).unwrap(), 3 * n);
    assert_eq!(min(true).unwrap(), 3 * n);
    // One byte less does not fit; the minimum itself does.
    let at = |budget: u64| {
        let s = at_pageable(4, budget);
        run(&s, &program)
    };
    assert!(at(3 * n).is_ok());
    assert!(matches!(
        at(3 * n - 1),
        Err(ModelError::ForecastStep { .. })
    ));
    // Too little even at the maximum: the forecast's error.
    let e = minimum_budget(
        &snap,
        &program,
        &lru_policy(),
        None,
        DEFAULT_SEARCH_STATE_LIMIT,
        false,
        N,
        2 * n,
    )
    .unwrap_err();
    assert!(matches!(e, ModelError::ForecastStep { .. }), "{e}");
    let e = minimum_budget(
        &snap,
        &program,
        &lru_policy(),
        None,
        DEFAULT_SEARCH_STATE_LIMIT,
        false,
        C1,
        2 * n,
    )
    .unwrap_err();
    assert!(matches!(e, ModelError::InvalidSnapshot { .. }), "{e}");
}

/// A handle error in a later step of a next-use forecast names that step, its request and the
/// exact handle error (unknown, foreign, discarded), as the plain forecast does; it was once
/// reported at step 0 as an unknown handle of step 0's request.
#[test]
fn next_use_forecast_handle_errors_name_the_step_that_uses_the_handle() {
    let snap = build(
        ResidencySnapshotBuilder::new(MANAGER, 3).budget(N, 8 * n),
        vec![
            adopted(0, n, REPL, &[P]),
            adopted(1, n, REPL, &[]).discarded(),
        ],
    );
    let known = handle(0, "T");
    let unknown = handle(77, "T");
    let foreign = ResidencyHandle::new(MANAGER + 1, 0, "T").unwrap();
    let discarded = handle(1, "T");
    for bad in [&unknown, &foreign, &discarded] {
        let program = [
            use_("s0", &[&known], Vec::new()),
            use_("s1", &[&known], Vec::new()),
            use_("s2", &[bad], Vec::new()),
        ];
        let plain = run(&snap, &program).unwrap_err();
        let next = forecast_next_use(
            &snap,
            &program,
            &lru_policy(),
            None,
            DEFAULT_SEARCH_STATE_LIMIT,
        )
        .unwrap_err();
        assert_eq!(next, plain, "{bad}");
        let ModelError::ForecastStep {
            step,
            ref request,
            ref source,
        } = next
        else {
            panic!("expected ForecastStep, found {next}");
        };
        assert_eq!((step, request.as_str()), (2, "s2"));
        let named = match &**source {
            ModelError::UnknownHandle { request, handle }
            | ModelError::ForeignHandle {
                request, handle, ..
            }
            | ModelError::DiscardedHandle { request, handle } => (request.as_str(), handle),
            other => panic!("expected a handle error, found {other}"),
        };
        assert_eq!(named, ("s2", bad));
        let expected_foreign = bad == &foreign;
        assert_eq!(
            matches!(
                **source,
                ModelError::ForeignHandle {
                    manager_id: MANAGER,
                    ..
                }
            ),
            expected_foreign,
            "{source}"
        );
    }
}
