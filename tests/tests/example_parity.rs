//! The automatic-residency example (FHElium example 14) on the simulated device `sim:0`
//! against FHElium's printed output on the H200 (`tests/fixtures/ex14.txt`): decision, reclaim
//! evidence, predicted peaks, transitions, final accounting, budgets and the error bound. The
//! only allowed difference is the device name (`sim:0` where FHElium printed `cuda:0`) and the
//! handle ids (random per manager).
#![allow(clippy::unwrap_used)]

use fhelium_examples::{run_automatic, AutomaticOptions, AutomaticOutcome, Timeline, MAX_ERROR};
use fhelium_residency::{ResidencyAction, ResidencyLocation, PAGEABLE_HOST, PINNED_HOST};
use fhelium_tests::{field, parse_bytes, summary, table_after, EX14};

const SIM0: ResidencyLocation = ResidencyLocation::Sim(0);

fn reference_location(s: &str) -> ResidencyLocation {
    // FHElium ran on cuda:0; our device is sim:0.
    if s == "cuda:0" {
        SIM0
    } else {
        s.parse().unwrap()
    }
}

fn outcome() -> (AutomaticOutcome, Timeline) {
    let timeline = Timeline::enabled();
    let o = run_automatic(&AutomaticOptions::default(), &timeline).unwrap();
    (o, timeline)
}

#[test]
fn example_14_matches_fhelium() {
    let (o, timeline) = outcome();
    let d = &o.decision;

    // Decision line.
    let line = summary(EX14, "Decision: ");
    assert_eq!(field(&line, "policy"), Some(d.policy_name()));
    assert_eq!(
        field(&line, "state_version").unwrap(),
        d.expected_state_version().to_string()
    );
    assert_eq!(d.expected_state_version(), o.state_version_before_decide);
    assert_eq!(
        field(&line, "search_states").unwrap(),
        d.explored_states().to_string()
    );
    assert_eq!(
        field(&line, "reclaim").unwrap(),
        d.plan().reclaim().len().to_string()
    );
    assert_eq!(
        field(&line, "enter").unwrap(),
        d.plan().enter().len().to_string()
    );
    assert!(d.plan().exit().is_empty());

    // Reclaim evidence: the cold device replica, dropped.
    let rows = table_after(EX14, "");
    assert_eq!(rows.len(), d.evictions().len());
    for (row, e) in rows.iter().zip(d.evictions()) {
        assert_eq!(row[0], e.rank.to_string());
        assert_eq!(row[1], e.action.kind_name());
        assert_eq!(*e.action.handle(), o.handles.cold);
        assert_eq!(row[2].len(), e.action.handle().short_id().len());
        assert_eq!(reference_location(&row[3]), e.released_location);
        assert_eq!(parse_bytes(&row[4]), Some(e.released_nbytes));
        assert_eq!(row[5], e.reason.to_string());
    }

    // Predicted peaks, in order.
    let peaks: Vec<(ResidencyLocation, u64)> = table_after(EX14, "Predicted managed peaks:")
        .iter()
        .map(|r| (reference_location(&r[0]), parse_bytes(&r[1]).unwrap()))
        .collect();
    assert_eq!(d.explanation().predicted_peak_bytes, peaks);

    // Final cached residency, in order.
    let rows = table_after(EX14, "Final cached residency:");
    let locs = o.final_snapshot.locations();
    assert_eq!(rows.len(), locs.len());
    for (row, l) in rows.iter().zip(locs) {
        assert_eq!(reference_location(&row[0]), l.location());
        assert_eq!(
            parse_bytes(&row[1]),
            l.budget_bytes(),
            "budget at {}",
            row[0]
        );
        assert_eq!(
            parse_bytes(&row[2]),
            Some(l.used_bytes()),
            "used at {}",
            row[0]
        );
        assert_eq!(parse_bytes(&row[3]), Some(l.reserved_bytes()));
        assert_eq!(parse_bytes(&row[4]), Some(l.parts().peak_charged_bytes));
        assert_eq!(row[5], l.parts().value_count.to_string());
        assert_eq!(row[6], l.parts().pending_event_count.to_string());
    }

    // Summary line: budget, cold charge, workspace, transitions; the error bound.
    let s = summary(EX14, "Managed ");
    assert_eq!(
        parse_bytes(field(&s, "CUDA budget").unwrap()),
        Some(o.charges.device_budget)
    );
    assert_eq!(
        parse_bytes(field(&s, "cold charge").unwrap()),
        Some(o.charges.cold)
    );
    assert_eq!(
        parse_bytes(field(&s, "workspace reservation").unwrap()),
        Some(o.charges.workspace)
    );
    assert_eq!(
        field(&s, "transitions").unwrap(),
        o.report.transitions().len().to_string()
    );
    assert_eq!(o.charges.workspace, 3 * o.charges.source);
    assert_eq!(o.charges.pinned_budget, o.charges.source);
    assert_eq!(
        o.charges.device_budget,
        o.charges.weight + o.charges.key + o.charges.source + o.charges.workspace
    );
    assert!(
        o.error.max_abs <= MAX_ERROR,
        "max error {}",
        o.error.max_abs
    );
    assert!(o.error.max_abs > 0.0, "a CKKS result is never exact");
    assert!(o.closed);

    // The printed text equals FHElium's apart from the device name, the handle id and the
    // error digits.
    let norm = |t: &str, handle: &str| -> Vec<Vec<String>> {
        t.lines()
            .map(|l| {
                l.split_whitespace()
                    .map(|w| {
                        let w = w.replace("sim:0", "cuda:0").replace(handle, "HANDLE");
                        if w.len() == 9 && w.contains('e') && w.parse::<f64>().is_ok() {
                            "ERROR".to_owned()
                        } else {
                            w
                        }
                    })
                    .collect()
            })
            .collect()
    };
    let ours = o.render();
    let theirs_handle = table_after(EX14, "")[0][2].clone();
    assert_eq!(
        norm(&ours, &o.handles.cold.short_id()),
        norm(EX14, &theirs_handle)
    );

    // Transitions: reclaim drop, then the placement in request order.
    let kinds: Vec<(&str, Option<ResidencyLocation>, Option<ResidencyLocation>)> = o
        .report
        .transitions()
        .iter()
        .map(|t| {
            (
                t.action().kind_name(),
                t.parts().source,
                t.parts().destination,
            )
        })
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("DropResident", Some(SIM0), None),
            ("MoveResident", Some(PINNED_HOST), Some(SIM0)),
            ("EnsureResident", Some(PAGEABLE_HOST), Some(SIM0)),
            ("EnsureResident", Some(PAGEABLE_HOST), Some(SIM0)),
        ]
    );
    let handles: Vec<_> = o
        .report
        .transitions()
        .iter()
        .map(|t| t.action().handle().clone())
        .collect();
    assert_eq!(
        handles,
        vec![
            o.handles.cold.clone(),
            o.handles.source.clone(),
            o.handles.key.clone(),
            o.handles.weight.clone()
        ]
    );
    assert!(matches!(
        o.report.transitions()[0].action(),
        ResidencyAction::DropResident { location, .. } if *location == SIM0
    ));

    // The timeline saw the same run: the replayed scope-entry counters agree with the
    // snapshot, the device never exceeds its budget, and the peak equals the admitted one.
    assert!(
        timeline.replay_mismatches().is_empty(),
        "{:?}",
        timeline.replay_mismatches()
    );
    let dev: Vec<_> = timeline
        .counters()
        .into_iter()
        .filter(|c| c.location == SIM0)
        .collect();
    let peak = dev.iter().map(|c| c.used + c.reserved).max().unwrap();
    assert_eq!(peak, o.charges.device_budget);
    assert!(dev
        .iter()
        .all(|c| c.used + c.reserved <= o.charges.device_budget));
    let trace = timeline.chrome_trace();
    let events = trace["traceEvents"].as_array().unwrap();
    for cat in ["transition", "kernel", "lease", "reservation"] {
        assert!(
            events.iter().any(|e| e["cat"] == cat),
            "no {cat} event in the trace"
        );
    }
    assert!(events.iter().any(|e| e["ph"] == "C"));
}

#[test]
fn the_flow_is_deterministic_in_its_decision_on_another_sim_device() {
    let o = run_automatic(
        &AutomaticOptions {
            device: "sim:1".parse().unwrap(),
            ..AutomaticOptions::default()
        },
        &Timeline::disabled(),
    )
    .unwrap();
    let dev = ResidencyLocation::Sim(1);
    assert_eq!(o.device, dev);
    assert_eq!(
        o.decision.explanation().predicted_peak_bytes,
        vec![
            (PINNED_HOST, 2 << 20),
            (dev, 27 << 20),
            (PAGEABLE_HOST, 20 << 20)
        ]
    );
    assert_eq!(o.report.transitions().len(), 4);
    assert!(o.error.max_abs <= MAX_ERROR);
}

/// Example 13 (explicit plan, device lease) against `tests/fixtures/ex13.txt`: plan peaks,
/// both accounting tables (managed columns; the allocator columns are the memory layer's own
/// figures, not torch's) and the summary line.
#[test]
fn example_13_matches_fhelium() {
    use fhelium_examples::run_explicit;
    use fhelium_tests::EX13;

    let timeline = Timeline::enabled();
    let o = run_explicit(&AutomaticOptions::default(), &timeline).unwrap();
    assert_eq!(
        EX13.lines().next().unwrap(),
        format!("Plan: {}", o.explanation.plan_name)
    );
    let peaks: Vec<(ResidencyLocation, u64)> = table_after(EX13, "")
        .iter()
        .map(|r| (reference_location(&r[0]), parse_bytes(&r[1]).unwrap()))
        .collect();
    assert_eq!(o.explanation.predicted_peak_bytes, peaks);
    for (title, snap) in [
        (
            "Accounting after the CUDA lease was released:",
            &o.released_snapshot,
        ),
        ("Accounting after stage exit:", &o.final_snapshot),
    ] {
        let rows = table_after(EX13, title);
        assert_eq!(rows.len(), snap.locations().len(), "{title}");
        for (row, l) in rows.iter().zip(snap.locations()) {
            let p = l.parts();
            let ours = [
                Some(l.budget_bytes()),
                Some(l.remaining_budget_bytes()),
                Some(Some(l.used_bytes())),
                Some(Some(l.reserved_bytes())),
                Some(Some(p.peak_used_bytes)),
                Some(Some(p.peak_charged_bytes)),
            ];
            assert_eq!(reference_location(&row[0]), l.location(), "{title}");
            for (i, want) in ours.iter().enumerate() {
                assert_eq!(
                    Some(parse_bytes(&row[i + 1])),
                    *want,
                    "{title} {} col {}",
                    row[0],
                    i + 1
                );
            }
            assert_eq!(row[7], p.use_count.to_string(), "{title} uses");
            assert_eq!(row[8], p.pending_event_count.to_string(), "{title} pending");
        }
    }
    let s = summary(EX13, "Source ");
    assert_eq!(
        parse_bytes(field(&s, "logical payload").unwrap()),
        Some(o.source_nbytes)
    );
    assert_eq!(
        parse_bytes(field(&s, "source unique storage").unwrap()),
        Some(o.source_storage_nbytes)
    );
    assert_eq!(
        parse_bytes(field(&s, "managed source charge").unwrap()),
        Some(o.source_charge)
    );
    assert_eq!(
        field(&s, "plan transitions").unwrap(),
        o.report.transitions().len().to_string()
    );
    assert!(o.error.max_abs <= MAX_ERROR);
    assert!(o.closed);
    assert!(
        timeline.replay_mismatches().is_empty(),
        "{:?}",
        timeline.replay_mismatches()
    );
}
