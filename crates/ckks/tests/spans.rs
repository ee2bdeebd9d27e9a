//! The CPU engine's operations open `tracing` spans (`ckks.<operation>`, debug level) that
//! name where they compute, the input's level and bytes, and their parameters; a failed
//! operation records its error as an event inside its span.
#![allow(clippy::unwrap_used)]

mod capture;

use capture::Capture;
use fhelium_ckks::{CkksError, CpuEngine, Preset};

fn message(slots: usize) -> Vec<f64> {
    (0..slots)
        .map(|j| 0.01 * (0.013 * j as f64).cos())
        .collect()
}

#[test]
fn operations_are_spanned_with_location_level_bytes_and_parameters() {
    let engine = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [3; 32]).unwrap();
    let slots = engine.num_slots();
    let cap = Capture::default();
    let (ct, ntt, rotated, rescaled) = cap.during(|| {
        let ct = engine.encrypt_message(&message(slots)).unwrap();
        let ntt = engine.coefficient_domain_to_ntt_domain(&ct).unwrap();
        let back = engine.ntt_domain_to_coefficient_domain(&ntt).unwrap();
        let rotated = engine.rotate_by_step(&back, -3).unwrap();
        let rescaled = engine.rescale_to_next_level(&rotated).unwrap();
        engine.decrypt_message(&rescaled).unwrap();
        (ct, ntt, rotated, rescaled)
    });

    // Every operation says where it ran.
    for s in cap.spans() {
        assert!(s.name.starts_with("ckks."), "unexpected span {}", s.name);
        assert_eq!(s.field("location"), "host", "{}", s.name);
    }

    // A message's slots, and the steps inside: encode and encrypt are children.
    let enc = cap.one("ckks.encrypt_message");
    assert_eq!(enc.field("slots"), slots.to_string());
    assert_eq!(enc.parent, None);
    let encode = cap.one("ckks.encode");
    assert_eq!(encode.parent.as_deref(), Some("ckks.encrypt_message"));
    assert_eq!(encode.field("level"), "0");
    assert_eq!(encode.field("slots"), slots.to_string());
    let encrypt = cap.one("ckks.encrypt");
    assert_eq!(encrypt.parent.as_deref(), Some("ckks.encrypt_message"));

    // Operations on a ciphertext name the input's level and bytes.
    let fwd = cap.one("ckks.coefficient_domain_to_ntt_domain");
    assert_eq!(fwd.field("level"), ct.level().to_string());
    assert_eq!(fwd.field("bytes"), ct.nbytes().to_string());
    assert_eq!(
        cap.one("ckks.ntt_domain_to_coefficient_domain")
            .field("bytes"),
        ntt.nbytes().to_string()
    );

    // The rotation names its step; its key is made inside it on first use.
    let rot = cap.one("ckks.rotate_by_step");
    assert_eq!(rot.field("step"), "-3");
    let key = cap.one("ckks.create_rotation_key");
    assert_eq!(key.parent.as_deref(), Some("ckks.rotate_by_step"));
    assert_eq!(
        key.field("step"),
        engine.galois_element_for_step(-3).0.to_string()
    );

    // The new key enters the engine's key cache: one admission span, nothing left.
    let admit = cap.one("ckks.key_cache.admit");
    assert_eq!(admit.parent.as_deref(), Some("ckks.rotate_by_step"));
    let (canonical, g) = engine.galois_element_for_step(-3);
    assert_eq!(
        admit.field("slot"),
        format!("rotation key for step {canonical} (Galois element {g})")
    );
    assert_eq!(admit.field("bytes"), engine.switch_key_bytes().to_string());
    assert_eq!(admit.field("held"), engine.switch_key_bytes().to_string());
    assert!(cap.spans().iter().all(|s| s.name != "ckks.key_cache.evict"));

    let rs = cap.one("ckks.rescale_to_next_level");
    assert_eq!(rs.field("level"), rotated.level().to_string());
    let dec = cap.one("ckks.decrypt_message");
    assert_eq!(dec.field("level"), rescaled.level().to_string());
    assert_eq!(dec.field("bytes"), rescaled.nbytes().to_string());
    assert_eq!(
        cap.one("ckks.decrypt").parent.as_deref(),
        Some("ckks.decrypt_message")
    );
    assert_eq!(
        cap.one("ckks.decode_real").parent.as_deref(),
        Some("ckks.decrypt_message")
    );

    // Spans carry shapes and parameters only, never message values or key material.
    for s in cap.spans() {
        for f in s.fields.keys() {
            assert!(
                [
                    "location", "level", "bytes", "slots", "step", "basis", "keys", "k",
                    "to_level", "slot", "held"
                ]
                .contains(&f.as_str()),
                "span {} records field {f}",
                s.name
            );
        }
    }

    // Successful operations record no event.
    assert!(cap.events().is_empty(), "{:?}", cap.events());
}

#[test]
fn a_failed_operation_records_its_error_inside_its_span() {
    let engine = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [4; 32]).unwrap();
    let ct = engine
        .encrypt_message(&message(engine.num_slots()))
        .unwrap();
    let ntt = engine.coefficient_domain_to_ntt_domain(&ct).unwrap();
    let cap = Capture::default();
    let err = cap.during(|| engine.coefficient_domain_to_ntt_domain(&ntt).unwrap_err());
    assert!(matches!(err, CkksError::DomainMismatch { .. }), "{err:?}");

    let span = cap.one("ckks.coefficient_domain_to_ntt_domain");
    assert_eq!(span.field("level"), "0");
    let events = cap.events();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].level, tracing::Level::DEBUG);
    assert_eq!(
        events[0].span.as_deref(),
        Some("ckks.coefficient_domain_to_ntt_domain")
    );
    assert_eq!(events[0].fields["error"], err.to_string());
}

#[test]
fn capturing_spans_does_not_change_results() {
    // The same seed with and without a capture gives the same words: spans only observe.
    let run = || {
        let engine = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [5; 32]).unwrap();
        let ct = engine
            .encrypt_message(&message(engine.num_slots()))
            .unwrap();
        let rotated = engine.rotate_by_step(&ct, 1).unwrap();
        rotated.words().to_vec()
    };
    let plain = run();
    let cap = Capture::default();
    let traced = cap.during(run);
    assert!(!cap.spans().is_empty());
    assert_eq!(plain, traced);
}

#[test]
fn keys_leaving_a_bounded_cache_are_spanned() {
    let engine = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [6; 32]).unwrap();
    let kb = engine.switch_key_bytes();
    engine.set_key_cache_capacity(Some(kb));
    let ct = engine
        .encrypt_message(&message(engine.num_slots()))
        .unwrap();
    let _ = engine.rotate_by_step(&ct, 1).unwrap();
    let cap = Capture::default();
    cap.during(|| {
        let _ = engine.rotate_by_step(&ct, 2).unwrap();
        engine.clear_key_cache();
    });
    let slot = |step: i64| {
        let (canonical, g) = engine.galois_element_for_step(step);
        format!("rotation key for step {canonical} (Galois element {g})")
    };
    // Step 2's key enters, step 1's leaves inside the admission; the clear lets step 2's go.
    let admit = cap.one("ckks.key_cache.admit");
    assert_eq!(admit.field("slot"), slot(2));
    assert_eq!(admit.field("held"), kb.to_string());
    let evicted: Vec<_> = cap
        .spans()
        .into_iter()
        .filter(|s| s.name == "ckks.key_cache.evict")
        .collect();
    assert_eq!(evicted.len(), 2, "{evicted:?}");
    assert_eq!(evicted[0].field("slot"), slot(1));
    assert_eq!(evicted[0].parent.as_deref(), Some("ckks.key_cache.admit"));
    assert_eq!(evicted[1].field("slot"), slot(2));
    assert_eq!(evicted[1].parent, None);
    for e in &evicted {
        assert_eq!(e.field("bytes"), kb.to_string());
        assert_eq!(e.field("location"), "host");
    }
}
