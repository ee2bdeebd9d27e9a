//! Portable forms (`fhelium_ckks::serial`): every value and key type survives a serde round trip
//! (JSON here) word for word and works afterwards; bad data is refused with typed errors that
//! name what is wrong, before anything is allocated.
#![allow(clippy::unwrap_used)]

use fhelium_ckks::serial::{CiphertextData, PlaintextData, SwitchKeyData, SwitchKeyKind, FORMAT};
use fhelium_ckks::{CkksConfig, CkksError, CpuEngine, ModulusBasis, PlaintextRepresentation};
use num_complex::Complex64;

/// A small ring (N = 2^12, insecure, budget check off) with two special primes, so keys and
/// JSON stay small.
fn engine(seed: u8) -> CpuEngine {
    let cfg = CkksConfig::generate_with_budget(12, 30, 4, 2, false).unwrap();
    CpuEngine::from_config(cfg, Some([seed; 32])).unwrap()
}

fn message(e: &CpuEngine) -> Vec<Complex64> {
    (0..e.num_slots())
        .map(|j| Complex64::new((0.01 * j as f64).sin() * 0.3, (0.02 * j as f64).cos() * 0.2))
        .collect()
}

fn json<T: serde::Serialize + serde::de::DeserializeOwned>(x: &T) -> T {
    serde_json::from_str(&serde_json::to_string(x).unwrap()).unwrap()
}

fn invalid(r: Result<impl std::fmt::Debug, CkksError>, needle: &str) {
    match r {
        Err(CkksError::InvalidData { reason, .. }) => {
            assert!(
                reason.contains(needle),
                "`{reason}` does not mention `{needle}`"
            );
        }
        other => panic!("expected InvalidData about `{needle}`, got {other:?}"),
    }
}

#[test]
fn values_and_keys_round_trip_and_work() {
    let e = engine(1);
    let m = message(&e);
    let ct = e.encrypt_complex_message(&m).unwrap();
    let ntt2 = e
        .coefficient_domain_to_ntt_domain(&e.mod_switch_to_level(&ct, 2).unwrap())
        .unwrap();
    for c in [&ct, &ntt2] {
        let d = json(&c.to_data().unwrap());
        assert_eq!(d.format, FORMAT);
        let back = e.ciphertext_from_data(&d).unwrap();
        assert_eq!(back.words(), c.words());
        assert_eq!(
            (back.level(), back.domain(), back.basis(), back.prime_ids()),
            (c.level(), c.domain(), c.basis(), c.prime_ids())
        );
        assert_eq!(back.scale().to_bits(), c.scale().to_bits());
    }
    let dec = e
        .decrypt_complex_message(
            &e.ciphertext_from_data(&json(&ct.to_data().unwrap()))
                .unwrap(),
        )
        .unwrap();
    assert_eq!(dec, e.decrypt_complex_message(&ct).unwrap());

    // Every plaintext representation.
    let pt = e.encode_complex(&m, 1, Some(2f64.powi(25))).unwrap();
    let rns = e
        .prepare_plaintext_for_multiplication(&pt, ModulusBasis::QP)
        .unwrap();
    let approx = e.decrypt(&ct).unwrap();
    for p in [&pt, &rns, &approx] {
        let back = e.plaintext_from_data(&json(&p.to_data().unwrap())).unwrap();
        assert_eq!(back.words(), p.words());
        assert_eq!(back.representation(), p.representation());
        assert_eq!(back.prime_ids(), p.prime_ids());
    }

    // Keys: a rotation key, the conjugation key and the relinearization key work after the
    // trip, giving the same words as the originals.
    let rk = e.create_rotation_key(-3, e.secret_key()).unwrap();
    let rk2 = e
        .rotation_key_from_data(&json(&rk.to_data().unwrap()))
        .unwrap();
    assert_eq!(
        (rk2.step(), rk2.galois_element()),
        (rk.step(), rk.galois_element())
    );
    assert_eq!(
        e.rotate_with_key(&ct, &rk2).unwrap().words(),
        e.rotate_with_key(&ct, &rk).unwrap().words()
    );
    let ck = e.create_conjugation_key(e.secret_key()).unwrap();
    let ck2 = e
        .rotation_key_from_data(&json(&ck.to_data().unwrap()))
        .unwrap();
    assert_eq!(
        e.conjugate(&ct, &ck2).unwrap().words(),
        e.conjugate(&ct, &ck).unwrap().words()
    );
    let rlk = e.relinearization_key().unwrap();
    let rlk2 = e
        .relinearization_key_from_data(&json(&rlk.to_data().unwrap()))
        .unwrap();
    let n0 = e.coefficient_domain_to_ntt_domain(&ct).unwrap();
    let prod = e.multiply(&n0, &n0).unwrap();
    assert_eq!(
        e.relinearize_with_key(&prod, &rlk2).unwrap().words(),
        e.relinearize(&prod).unwrap().words()
    );
    let pk = json(&e.public_key().to_data().unwrap());
    let pk2 = e.public_key_from_data(&pk).unwrap();
    assert_eq!(pk2.view().unwrap(), e.public_key().view().unwrap());
    assert_eq!(pk2.key_id(), e.public_key().key_id());
}

#[test]
fn bad_ciphertext_data_is_refused_naming_what_is_wrong() {
    let e = engine(2);
    let ct = e.encrypt_complex_message(&message(&e)).unwrap();
    let good = ct.to_data().unwrap();
    let with = |f: &dyn Fn(&mut CiphertextData)| {
        let mut d = good.clone();
        f(&mut d);
        e.ciphertext_from_data(&d)
    };
    invalid(with(&|d| d.format = FORMAT + 1), "format");
    invalid(with(&|d| d.n *= 2), "ring degree");
    invalid(with(&|d| d.components = 4), "components");
    invalid(with(&|d| d.prime_ids.reverse()), "prime ids");
    invalid(with(&|d| d.basis = ModulusBasis::QP), "prime ids");
    invalid(
        with(&|d| {
            d.words.pop();
        }),
        "words",
    );
    invalid(
        with(&|d| d.words[e.n() + 5] = u64::MAX),
        &format!("word {} (row 1", e.n() + 5),
    );
    assert!(matches!(
        with(&|d| d.level = 99),
        Err(CkksError::InvalidLevel { level: 99, .. })
    ));
    assert!(matches!(
        with(&|d| d.scale = f64::NAN),
        Err(CkksError::InvalidScale { .. })
    ));
    // Another parameter set's engine refuses it by context.
    let other = CpuEngine::from_config(
        CkksConfig::generate_with_budget(12, 30, 3, 1, false).unwrap(),
        Some([2; 32]),
    )
    .unwrap();
    assert!(matches!(
        other.ciphertext_from_data(&good),
        Err(CkksError::ContextMismatch { .. })
    ));
    // The good data still reads.
    assert_eq!(e.ciphertext_from_data(&good).unwrap().words(), ct.words());
}

#[test]
fn bad_plaintext_and_key_data_is_refused() {
    let e = engine(3);
    let pt = e.encode(&[0.5, -0.25], 0, None).unwrap();
    let good = pt.to_data().unwrap();
    let with = |f: &dyn Fn(&mut PlaintextData)| {
        let mut d = good.clone();
        f(&mut d);
        e.plaintext_from_data(&d)
    };
    invalid(
        with(&|d| d.domain = fhelium_ckks::Domain::Ntt),
        "coefficient domain",
    );
    invalid(with(&|d| d.words.truncate(5)), "words");
    invalid(
        with(&|d| {
            d.representation = PlaintextRepresentation::ApproximateCoefficients;
            d.words[7] = f64::INFINITY.to_bits();
        }),
        "approximate coefficient 7",
    );
    invalid(
        with(&|d| d.representation = PlaintextRepresentation::Rns),
        "prime ids",
    );

    let pk = e.public_key().to_data().unwrap();
    let mut bad = pk.clone();
    bad.words[0] = u64::MAX;
    invalid(e.public_key_from_data(&bad), "word 0 (row 0, prime id 0)");
    let mut short = pk;
    short.words.truncate(10);
    invalid(e.public_key_from_data(&short), "words");

    let rk = e
        .create_rotation_key(5, e.secret_key())
        .unwrap()
        .to_data()
        .unwrap();
    let rlk = e.relinearization_key().unwrap().to_data().unwrap();
    invalid(
        e.relinearization_key_from_data(&rk),
        "not a relinearization key",
    );
    invalid(e.rotation_key_from_data(&rlk), "not a rotation key");
    let kinded = |kind| SwitchKeyData { kind, ..rk.clone() };
    let SwitchKeyKind::Rotation { galois_element, .. } = rk.kind else {
        panic!("{:?}", rk.kind)
    };
    invalid(
        e.rotation_key_from_data(&kinded(SwitchKeyKind::Rotation {
            step: 6,
            galois_element,
        })),
        "step 6",
    );
    invalid(
        e.rotation_key_from_data(&kinded(SwitchKeyKind::Rotation {
            step: 0,
            galois_element: 1,
        })),
        "step 0",
    );
    invalid(
        e.rotation_key_from_data(&kinded(SwitchKeyKind::Conjugation { galois_element: 3 })),
        "conjugation",
    );
    invalid(
        e.rotation_key_from_data(&SwitchKeyData {
            digits: rk.digits + 1,
            ..rk.clone()
        }),
        "digits",
    );
    let mut noisy = rk.clone();
    let last = noisy.words.len() - 1;
    noisy.words[last] = u64::MAX;
    invalid(e.rotation_key_from_data(&noisy), &format!("word {last}"));
}
