//! The text IR: listings, round trips, insta snapshots and every parse error.
#![allow(clippy::unwrap_used)]
mod common;
use common::*;
use fhelium_residency::*;

fn odd_plan() -> ResidencyPlan {
    let a = ResidencyHandle::new(3, 0xdead_beef, "Ciphertext").unwrap();
    let b = ResidencyHandle::new(3, 7, "fhelium_ckks::Rotation Key \"x\"").unwrap();
    ResidencyPlan::new("name with \"quotes\" and \\ # hash")
        .unwrap()
        .with_reclaim([drop_(&a, C0), move_(&b, P, Some(C1))])
        .with_reservations([
            reservation(C0, 6 * MIB, "label # not a comment"),
            reservation(P, 0, "zero"),
        ])
        .with_enter([ensure(&a, N), move_(&b, ResidencyLocation::Sim(3), None)])
        .with_exit([ResidencyAction::DiscardValue { handle: a.clone() }])
}

#[test]
fn plans_round_trip() {
    let p = odd_plan();
    let text = p.to_string();
    assert_eq!(parse_plan(&text).unwrap(), p);
    assert_eq!(text.parse::<ResidencyPlan>().unwrap(), p);
    let empty = ResidencyPlan::new("e").unwrap();
    assert_eq!(parse_plan(&empty.to_string()).unwrap(), empty);
}

#[test]
fn plan_listing_snapshot() {
    insta::assert_snapshot!("odd_plan", odd_plan().to_string());
}

#[test]
fn decisions_round_trip() {
    let (snapshot, request, policy, _) = seed();
    let d = decide(&snapshot, &request, &policy, None).unwrap();
    let text = d.to_string();
    assert_eq!(parse_decision(&text).unwrap(), d);
    assert_eq!(text.parse::<ResidencyDecision>().unwrap(), d);
    insta::assert_snapshot!("seed_decision", text);
    insta::assert_snapshot!("seed_decision_plan", d.plan().to_string());
    insta::assert_snapshot!("seed_eviction_table", eviction_table(&d));
}

#[test]
fn decision_with_moves_round_trips() {
    // Worked example 3.14.c: drops and moves with every reason kind.
    let n = 8;
    let b = ResidencySnapshotBuilder::new(MANAGER, 9)
        .budget(N, 2 * n)
        .budget(P, n);
    let snap = [
        sourced(0, n, N, &[N]),
        adopted(1, n, ReplicaMode::Exclusive, &[N]),
        adopted(2, n, ReplicaMode::Exclusive, &[P]),
    ]
    .into_iter()
    .fold(b, |b, v| b.value(v.build().unwrap()))
    .build()
    .unwrap();
    let (a, bh, c) = (handle(0, "T"), handle(1, "T"), handle(2, "T"));
    let r = req(
        "c",
        &[(&c, N), (&bh, P), (&a, N)],
        vec![reservation(N, 0, "none")],
    );
    let d = decide(&snap, &r, &DeterministicTieredLRU::new(), None).unwrap();
    assert_eq!(parse_decision(&d.to_string()).unwrap(), d);
    insta::assert_snapshot!("example_c_decision", d.to_string());
}

#[test]
fn format_bytes_matches_fhelium_tables() {
    assert_eq!(format_bytes(0), "0 B");
    assert_eq!(format_bytes(1023), "1023 B");
    assert_eq!(format_bytes(1536), "1.50 KiB");
    assert_eq!(format_bytes(27 * MIB), "27.00 MiB");
    assert_eq!(format_bytes(3 << 30), "3.00 GiB");
}

#[test]
fn action_display_is_the_ir_form() {
    let h = ResidencyHandle::new(1, 0x2a, "Ciphertext").unwrap();
    assert_eq!(
        move_(&h, C0, Some(N)).to_string(),
        "move h1.2a:Ciphertext to cuda:0 from pinned-host"
    );
    assert_eq!(
        drop_(&h, P).to_string(),
        "drop h1.2a:Ciphertext at pageable-host"
    );
}

fn parse_err(text: &str) -> (usize, String) {
    match parse_plan(text).unwrap_err() {
        ModelError::Parse { line, message } => (line, message),
        other => panic!("expected a parse error, got {other}"),
    }
}

#[test]
fn plan_parse_errors_name_the_line() {
    let cases: &[(&str, usize, &str)] = &[
        ("", 1, "expected `plan"),
        ("plan \"p\"\n", 1, "expected `end`"),
        ("plan p\nend\n", 1, "quoted name"),
        ("plan \"p\" extra\nend", 1, "unexpected"),
        (
            "plan \"p\"\n  enter teleport h1.2:T at cuda:0\nend",
            2,
            "unknown action",
        ),
        (
            "plan \"p\"\n  enter ensure h1.2:T on cuda:0\nend",
            2,
            "expected \"at\"",
        ),
        (
            "plan \"p\"\n  enter ensure x1.2:T at cuda:0\nend",
            2,
            "expected a handle",
        ),
        (
            "plan \"p\"\n  enter ensure h1.zz:T at cuda:0\nend",
            2,
            "expected a handle",
        ),
        (
            "plan \"p\"\n  enter ensure h1.2: at cuda:0\nend",
            2,
            "non-empty",
        ),
        (
            "plan \"p\"\n  enter ensure h1.2:T at cuda:01\nend",
            2,
            "canonical",
        ),
        ("plan \"p\"\n  enter ensure h1.2:T\nend", 2, "expected at"),
        (
            "plan \"p\"\n  enter ensure h1.2:T at cuda:0 now\nend",
            2,
            "unexpected",
        ),
        (
            "plan \"p\"\n  middle ensure h1.2:T at cuda:0\nend",
            2,
            "unknown plan line",
        ),
        (
            "plan \"p\"\n  reserve cuda:0 many \"x\"\nend",
            2,
            "decimal integer",
        ),
        ("plan \"p\"\n  reserve cuda:0 1 x\nend", 2, "quoted label"),
        ("plan \"p\"\n  reserve cuda:0 1 \" \"\nend", 2, "non-empty"),
        (
            "plan \"p\"\n  reserve cuda:0 1 \"open\nend",
            2,
            "unterminated",
        ),
        (
            "plan \"p\"\n  reserve cuda:0 1 \"a\\qb\"\nend",
            2,
            "bad escape",
        ),
        (
            "plan \"p\"\n  exit drop h1.2:T at pageable-host\nfin",
            3,
            "expected \"end\"",
        ),
        ("plan \" \"\nend", 0, ""),
    ];
    for (text, line, needle) in cases {
        if *line == 0 {
            assert_eq!(
                parse_plan(text).unwrap_err(),
                ModelError::EmptyName { what: "plan" }
            );
            continue;
        }
        let (l, m) = parse_err(text);
        assert_eq!(l, *line, "{text:?}: {m}");
        assert!(m.contains(needle), "{text:?}: {m} lacks {needle:?}");
    }
}

#[test]
fn decision_parse_errors() {
    let (snapshot, request, policy, _) = seed();
    let d = decide(&snapshot, &request, &policy, None).unwrap();
    let text = d.to_string();
    let bad = |from: &str, to: &str| {
        assert!(text.contains(from), "{from}");
        parse_decision(&text.replacen(from, to, 1)).unwrap_err()
    };
    let e = bad("  manager 1\n", "");
    assert!(e.to_string().contains("lacks its manager"), "{e}");
    let e = bad("explain 1", "explain 5");
    assert!(e.to_string().contains("numbered"), "{e}");
    let e = bad("reason=\"another", "reason=\"yet another");
    assert!(e.to_string().contains("unknown eviction reason"), "{e}");
    let e = bad("rank=0", "rank=x");
    assert!(e.to_string().contains("decimal integer"), "{e}");
    let e = bad("rank=0", "place=0");
    assert!(e.to_string().contains("expected rank="), "{e}");
    let e = bad("explain 0 executable", "explain 0 maybe");
    assert!(e.to_string().contains("executable or blocked"), "{e}");
    let e = bad("  policy", "  politics");
    assert!(e.to_string().contains("unknown decision line"), "{e}");
    let e = bad("explored_states 2", "explored_states 0");
    assert!(matches!(e, ModelError::InvalidDecision { .. }), "{e}");
    let e = parse_decision(&format!(
        "{}  explain 4 executable logical=1 storage=1\nend\n",
        text.trim_end().trim_end_matches("end")
    ))
    .unwrap_err();
    assert!(e.to_string().contains("more explain lines"), "{e}");
    let moved = "sole materialization moved to requested destination cuda:9 instead of reconstructing it later";
    let e = bad("another materialization preserves the logical value", moved);
    assert!(
        e.to_string().contains("reason and released location"),
        "{e}"
    );
    let e = bad("released=cuda:0", "released=pinned-host");
    assert!(
        e.to_string().contains("reason and released location"),
        "{e}"
    );
}

/// Mutates `text` at char `at`: drops `cut` chars and inserts `ins`.
fn mutate(text: &str, at: usize, cut: usize, ins: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = at % (chars.len() + 1);
    let end = (at + cut).min(chars.len());
    chars[..at]
        .iter()
        .chain(ins.chars().collect::<Vec<_>>().iter())
        .chain(&chars[end..])
        .collect()
}

/// Tokens that stress a parser: numbers past u64 and i64, quotes and escapes, comments,
/// separators, empty lines and non-ASCII text.
const NASTY: [&str; 14] = [
    "18446744073709551616",
    "99999999999999999999999999",
    "-1",
    "\"",
    "\\",
    "\\\"",
    "#",
    "\n",
    "\n\n",
    ":",
    "@",
    "cuda:4294967296",
    "sim:-3",
    "é\u{1F600}",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    /// Parsing never panics: arbitrary text, and valid plan and decision listings with a
    /// stretch replaced by arbitrary or hostile text, each come back as a value or a typed
    /// error; whatever parses prints back to text that parses to the same value.
    #[test]
    fn parsers_never_panic_and_what_parses_round_trips(
        noise in ".{0,200}",
        at in 0usize..4000,
        cut in 0usize..12,
        pick in 0usize..NASTY.len(),
        use_noise in proptest::bool::ANY,
    ) {
        let (snapshot, request, policy, _) = seed();
        let decision = decide(&snapshot, &request, &policy, None).unwrap().to_string();
        let plan = odd_plan().to_string();
        let ins = if use_noise { noise.as_str() } else { NASTY[pick] };
        for text in [noise.clone(), mutate(&plan, at, cut, ins), mutate(&decision, at, cut, ins)] {
            if let Ok(p) = parse_plan(&text) {
                proptest::prop_assert_eq!(parse_plan(&p.to_string()).unwrap(), p);
            }
            if let Ok(d) = parse_decision(&text) {
                proptest::prop_assert_eq!(parse_decision(&d.to_string()).unwrap(), d);
            }
            let _ = text.trim().parse::<ResidencyLocation>();
        }
    }
}
