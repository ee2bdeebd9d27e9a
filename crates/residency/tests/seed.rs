//! The seed situation (FHElium example 14, reference/fhelium-h200/ex14.txt).
#![allow(clippy::unwrap_used)]
mod common;
use common::*;
use fhelium_residency::*;

#[test]
fn seed_decision_matches_fhelium_ex14() {
    let (snapshot, request, policy, [cold, weight, key, source]) = seed();
    let d = decide(&snapshot, &request, &policy, None).unwrap();
    assert_eq!(d.policy_name(), "deterministic-tiered-lru");
    assert_eq!(d.expected_state_version(), 6);
    assert_eq!(d.explored_states(), 2);
    assert_eq!(d.plan().reclaim(), &[drop_(&cold, C0)]);
    assert_eq!(
        d.plan().enter(),
        &[
            move_(&source, C0, Some(N)),
            ensure(&key, C0),
            ensure(&weight, C0)
        ]
    );
    assert_eq!(d.evictions().len(), 1);
    let e = &d.evictions()[0];
    assert_eq!(
        (e.rank, e.released_location, e.released_nbytes),
        (0, C0, MIB)
    );
    assert_eq!(e.action.handle().short_id(), "b7bda0d2");
    assert_eq!(
        e.reason.to_string(),
        "another materialization preserves the logical value"
    );
    assert_eq!(
        d.explanation().predicted_peak_bytes,
        vec![(N, 2 * MIB), (C0, 27 * MIB), (P, 20 * MIB)]
    );
    assert!(d.explanation().feasible);
    assert!(d.plan().exit().is_empty());
    assert_eq!(d.plan().reservations(), request.reservations());
}
