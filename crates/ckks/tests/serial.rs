//! Portable forms (`fhelium_ckks::serial`): every value and key type survives a serde round trip
//! (JSON here) word for word and works afterwards; bad data is refused with typed errors that
//! name what is wrong, before anything is allocated.
#![allow(clippy::unwrap_used)]

use fhelium_ckks::serial::{
    CiphertextData, PlaintextData, PublicKeyData, SwitchKeyData, SwitchKeyKind, FORMAT,
};
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

/// Bytes and live buffers of the engine's pageable memory (where `*_from_data` allocates).
fn host_usage(e: &CpuEngine) -> (u64, u64) {
    let u = e
        .memory()
        .usage(&fhelium_residency::ResidencyLocation::PageableHost)
        .unwrap();
    (u.allocated_bytes, u.live_buffers)
}

/// Every refusal of `ciphertext_from_data` and `plaintext_from_data` is the exact error (the
/// value read, the field, the expected and the found figures), and none allocates anything.
#[test]
fn refused_value_data_names_every_field_and_allocates_nothing() {
    let e = engine(4);
    let other = CpuEngine::from_config(
        CkksConfig::generate_with_budget(12, 30, 3, 1, false).unwrap(),
        Some([4; 32]),
    )
    .unwrap();
    let ct = e.encrypt_complex_message(&message(&e)).unwrap();
    let good = ct.to_data().unwrap();
    let held = host_usage(&e);
    let n = e.n();
    let max_level = e.max_level();
    let q = |id: usize| e.config().q_primes[id];
    let data = |what: &'static str, reason: String| CkksError::InvalidData { what, reason };
    let with = |f: &dyn Fn(&mut CiphertextData)| {
        let mut d = good.clone();
        f(&mut d);
        e.ciphertext_from_data(&d).map(|_| ())
    };
    const CT: &str = "ciphertext_from_data";
    for (got, want) in [
        (
            with(&|d| d.format = FORMAT + 1),
            data(
                CT,
                format!("format {}, this build reads format {FORMAT}", FORMAT + 1),
            ),
        ),
        (
            with(&|d| d.n = 2 * n),
            data(CT, format!("ring degree {}, the engine's is {n}", 2 * n)),
        ),
        (
            with(&|d| d.components = 1),
            data(CT, "1 components, a ciphertext has 2 or 3".to_owned()),
        ),
        (
            with(&|d| d.level = 1),
            data(
                CT,
                "prime ids [0, 1, 2, 3, 4], level 1 in basis Q has [1, 2, 3, 4]".to_owned(),
            ),
        ),
        (
            with(&|d| {
                d.words.pop();
            }),
            data(
                CT,
                format!("{} words, the shape needs {}", 10 * n - 1, 10 * n),
            ),
        ),
        (
            with(&|d| d.words[3 * n + 2] = q(3)),
            data(
                CT,
                format!(
                    "word {} (row 3, prime id 3) is {} >= q = {}",
                    3 * n + 2,
                    q(3),
                    q(3)
                ),
            ),
        ),
        (
            with(&|d| d.level = 99),
            CkksError::InvalidLevel {
                op: CT,
                level: 99,
                current: 99,
                max_level,
            },
        ),
        (
            other.ciphertext_from_data(&good).map(|_| ()),
            CkksError::ContextMismatch {
                op: CT,
                expected: other.context_id(),
                actual: e.context_id(),
            },
        ),
    ] {
        assert_eq!(got.unwrap_err(), want);
    }
    for bad in [0.0, -2.0, f64::MIN_POSITIVE / 4.0, f64::NAN, f64::INFINITY] {
        match with(&|d| d.scale = bad) {
            Err(CkksError::InvalidScale { op: CT, scale }) => {
                assert_eq!(scale.to_bits(), bad.to_bits());
            }
            other => panic!("scale {bad:e}: {other:?}"),
        }
    }

    // Plaintexts: integer coefficients and RNS rows.
    const PT: &str = "plaintext_from_data";
    let ints = e.encode(&[0.5, -0.25], 0, None).unwrap().to_data().unwrap();
    let rns = e
        .prepare_plaintext_for_addition(&e.encode(&[0.5], 1, None).unwrap(), ModulusBasis::QP)
        .unwrap()
        .to_data()
        .unwrap();
    let pt_with = |base: &PlaintextData, f: &dyn Fn(&mut PlaintextData)| {
        let mut d = base.clone();
        f(&mut d);
        e.plaintext_from_data(&d).map(|_| ())
    };
    for (got, want) in [
        (
            pt_with(&ints, &|d| d.level = 99),
            CkksError::InvalidLevel {
                op: PT,
                level: 99,
                current: 99,
                max_level,
            },
        ),
        (
            pt_with(&rns, &|d| d.level = 99),
            CkksError::InvalidLevel {
                op: PT,
                level: 99,
                current: 99,
                max_level,
            },
        ),
        (
            pt_with(&ints, &|d| d.basis = ModulusBasis::QP),
            data(
                PT,
                format!(
                    "integer_coefficients plaintext in the coefficient domain, basis QP, 0 prime \
                     ids, {n} words: it has N = {n} words, coefficient domain, basis Q, no prime \
                     ids"
                ),
            ),
        ),
        (
            pt_with(&rns, &|d| {
                d.prime_ids.pop();
            }),
            data(
                PT,
                "prime ids [1, 2, 3, 4, 5], level 1 in basis QP has [1, 2, 3, 4, 5, 6]".to_owned(),
            ),
        ),
        (
            pt_with(&rns, &|d| d.words[5 * n] = u64::MAX),
            data(
                PT,
                format!(
                    "word {} (row 5, prime id 6) is {} >= q = {}",
                    5 * n,
                    u64::MAX,
                    e.config().p_primes[1]
                ),
            ),
        ),
        (
            other.plaintext_from_data(&ints).map(|_| ()),
            CkksError::ContextMismatch {
                op: PT,
                expected: other.context_id(),
                actual: e.context_id(),
            },
        ),
    ] {
        assert_eq!(got.unwrap_err(), want);
    }
    for bad in [-1.0, f64::NAN, f64::NEG_INFINITY] {
        match pt_with(&ints, &|d| d.scale = bad) {
            Err(CkksError::InvalidScale { op: PT, scale }) => {
                assert_eq!(scale.to_bits(), bad.to_bits());
            }
            other => panic!("scale {bad:e}: {other:?}"),
        }
    }
    assert_eq!(host_usage(&e), held, "no refusal allocated anything");
}

/// Every refusal of the key readers names the key read and the field (format, context, ring
/// degree, digits and rows), and none allocates anything.
#[test]
fn refused_key_data_names_every_field_and_allocates_nothing() {
    let e = engine(5);
    let other = CpuEngine::from_config(
        CkksConfig::generate_with_budget(12, 30, 3, 1, false).unwrap(),
        Some([5; 32]),
    )
    .unwrap();
    let pk = e.public_key().to_data().unwrap();
    let rk = e.rotation_key(2).unwrap().to_data().unwrap();
    let rlk = e.relinearization_key().unwrap().to_data().unwrap();
    let held = host_usage(&e);
    let n = e.n();
    let data = |what: &'static str, reason: String| CkksError::InvalidData { what, reason };
    const PK: &str = "public_key_from_data";
    const RK: &str = "rotation_key_from_data";
    const RLK: &str = "relinearization_key_from_data";
    let context = |op| CkksError::ContextMismatch {
        op,
        expected: other.context_id(),
        actual: e.context_id(),
    };
    let format = format!("format {}, this build reads format {FORMAT}", FORMAT + 2);
    let (digits, rows) = (rk.digits, rk.rows);
    assert_eq!((digits, rows), (3, 7));
    for (got, want) in [
        (other.public_key_from_data(&pk).map(|_| ()), context(PK)),
        (
            e.public_key_from_data(&PublicKeyData {
                format: FORMAT + 2,
                ..pk.clone()
            })
            .map(|_| ()),
            data(PK, format.clone()),
        ),
        (
            e.public_key_from_data(&PublicKeyData {
                n: n / 2,
                ..pk.clone()
            })
            .map(|_| ()),
            data(PK, format!("ring degree {}, the engine's is {n}", n / 2)),
        ),
        (other.rotation_key_from_data(&rk).map(|_| ()), context(RK)),
        (
            other.relinearization_key_from_data(&rlk).map(|_| ()),
            context(RLK),
        ),
        (
            e.relinearization_key_from_data(&SwitchKeyData {
                format: FORMAT + 2,
                ..rlk.clone()
            })
            .map(|_| ()),
            data(RLK, format),
        ),
        (
            e.rotation_key_from_data(&SwitchKeyData {
                rows: rows + 1,
                ..rk.clone()
            })
            .map(|_| ()),
            data(
                RK,
                "3 digits x 8 rows, the engine's keys have 3 x 7".to_owned(),
            ),
        ),
        (
            e.relinearization_key_from_data(&SwitchKeyData {
                words: rlk.words[..rlk.words.len() - n].to_vec(),
                ..rlk.clone()
            })
            .map(|_| ()),
            data(
                RLK,
                format!(
                    "{} words, the shape needs {}",
                    rlk.words.len() - n,
                    rlk.words.len()
                ),
            ),
        ),
    ] {
        assert_eq!(got.unwrap_err(), want);
    }
    assert_eq!(host_usage(&e), held, "no refusal allocated anything");
}

/// A ciphertext in basis QP (read from data, where it is legal) is refused by every operation
/// that needs basis Q or an operand in the same basis, with `BasisMismatch` naming both bases,
/// and no key is made for it.
#[test]
fn a_qp_basis_ciphertext_is_refused_where_basis_q_is_needed() {
    let e = engine(6);
    let n = e.n();
    let rows = e.config().q_primes.len() + e.config().p_primes.len();
    let qp_data = |components: usize, domain| CiphertextData {
        format: FORMAT,
        context_id: e.context_id(),
        n,
        level: 0,
        scale: e.default_scale(),
        domain,
        basis: ModulusBasis::QP,
        components,
        prime_ids: (0..rows).collect(),
        words: vec![1; components * rows * n],
    };
    let qp = e
        .ciphertext_from_data(&qp_data(2, fhelium_ckks::Domain::Coefficient))
        .unwrap();
    let qp3 = e
        .ciphertext_from_data(&qp_data(3, fhelium_ckks::Domain::Ntt))
        .unwrap();
    let q = e.encrypt_complex_message(&message(&e)).unwrap();
    let key = e.create_rotation_key(1, e.secret_key()).unwrap();
    let basis = |op, expected, actual| CkksError::BasisMismatch {
        op,
        expected,
        actual,
    };
    use ModulusBasis::{Q, QP};
    assert_eq!(
        e.rotate_with_key(&qp, &key).unwrap_err(),
        basis("rotate_with_key", Q, QP)
    );
    assert_eq!(
        e.rotate_by_step(&qp, 1).unwrap_err(),
        basis("rotate_by_step", Q, QP)
    );
    assert_eq!(
        e.rotate_many_by_steps(&qp, &[1, 2]).unwrap_err(),
        basis("rotate_many_by_steps", Q, QP)
    );
    assert_eq!(
        e.relinearize(&qp3).unwrap_err(),
        basis("relinearize", Q, QP)
    );
    assert_eq!(e.add(&qp, &q).unwrap_err(), basis("add", QP, Q));
    assert_eq!(e.subtract(&q, &qp).unwrap_err(), basis("subtract", Q, QP));
    let pt = e
        .prepare_plaintext_for_multiplication(&e.encode(&[0.5], 0, None).unwrap(), Q)
        .unwrap();
    let qp_ntt = e.coefficient_domain_to_ntt_domain(&qp).unwrap();
    assert_eq!(
        e.multiply_plaintext(&qp_ntt, &pt).unwrap_err(),
        basis("multiply_plaintext", QP, Q)
    );
    assert!(e.cached_keys().is_empty(), "{:?}", e.cached_keys());
    assert_eq!(qp.words(), &vec![1; 2 * rows * n][..]);
}
