//! Hoisted rotations (`rotate_many_with_keys` / `rotate_many_by_steps`, spec §3.9) against the
//! single rotations word for word, and RNS plaintext domain transitions (spec §3.10).

use fhelium_ckks::{CkksError, CpuEngine, Domain, ModulusBasis, Preset};

fn engine() -> CpuEngine {
    CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [21; 32]).expect("engine")
}

fn message(n: usize) -> Vec<f64> {
    (0..n).map(|j| 0.01 * (0.023 * j as f64).cos()).collect()
}

#[test]
fn hoisted_rotations_equal_single_rotations_word_for_word() {
    let e = engine();
    let ct = e.encrypt_message(&message(e.num_slots())).expect("enc");
    let keys = [
        e.create_rotation_key(1, e.secret_key()).expect("key"),
        e.create_rotation_key(-3, e.secret_key()).expect("key"),
        e.create_conjugation_key(e.secret_key()).expect("key"),
    ];
    for level in [0, 3] {
        let c = e.mod_switch_to_level(&ct, level).expect("level");
        let refs: Vec<_> = keys.iter().collect();
        let many = e.rotate_many_with_keys(&c, &refs).expect("hoisted");
        assert_eq!(many.len(), 3);
        for (i, (got, key)) in many.iter().zip(&keys).enumerate() {
            let want = if i == 2 {
                e.conjugate(&c, key).expect("conj")
            } else {
                e.rotate_with_key(&c, key).expect("rot")
            };
            assert_eq!(got.words(), want.words(), "level {level}, key {i}");
            assert_eq!(got.level(), level);
            assert_eq!(got.domain(), Domain::Coefficient);
            assert_eq!(got.scale().to_bits(), c.scale().to_bits());
        }
        let steps = [0, 2, -1, 0];
        let many = e.rotate_many_by_steps(&c, &steps).expect("hoisted steps");
        for (got, &step) in many.iter().zip(&steps) {
            let want = e.rotate_by_step(&c, step).expect("rot");
            assert_eq!(got.words(), want.words(), "level {level}, step {step}");
        }
    }
    assert!(e.rotate_many_with_keys(&ct, &[]).expect("empty").is_empty());
    assert!(e.rotate_many_by_steps(&ct, &[]).expect("empty").is_empty());
}

#[test]
fn hoisted_rotations_reject_bad_inputs_before_any_work() {
    let e = engine();
    let other = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [22; 32]).expect("e");
    let ct = e.encrypt_message(&message(e.num_slots())).expect("enc");
    let before = ct.words().to_vec();
    let good = e.create_rotation_key(1, e.secret_key()).expect("key");
    let foreign = other
        .create_rotation_key(1, other.secret_key())
        .expect("key");
    assert!(matches!(
        e.rotate_many_with_keys(&ct, &[&good, &foreign]),
        Err(CkksError::WrongKey { .. })
    ));
    let ntt = e.coefficient_domain_to_ntt_domain(&ct).expect("ntt");
    assert!(matches!(
        e.rotate_many_with_keys(&ntt, &[&good]),
        Err(CkksError::DomainMismatch { .. })
    ));
    assert!(matches!(
        e.rotate_many_by_steps(&ntt, &[1]),
        Err(CkksError::DomainMismatch { .. })
    ));
    let ct3 = e.multiply(&ntt, &ntt).expect("mul");
    assert!(matches!(
        e.rotate_many_by_steps(&ct3, &[1]),
        Err(CkksError::ComponentMismatch { .. })
    ));
    assert_eq!(ct.words(), &before[..]);
}

#[test]
fn plaintext_domain_transitions_match_the_prepared_forms() {
    let e = engine();
    let pt = e.encode(&message(e.num_slots()), 2, None).expect("encode");
    for basis in [ModulusBasis::Q, ModulusBasis::QP] {
        let add = e.prepare_plaintext_for_addition(&pt, basis).expect("add");
        let mul = e
            .prepare_plaintext_for_multiplication(&pt, basis)
            .expect("mul");
        let to_ntt = e
            .plaintext_coefficient_domain_to_ntt_domain(&add)
            .expect("to ntt");
        assert_eq!(to_ntt.words(), mul.words());
        assert_eq!(to_ntt.domain(), Domain::Ntt);
        assert_eq!((to_ntt.level(), to_ntt.basis()), (2, basis));
        assert_eq!(to_ntt.scale().to_bits(), add.scale().to_bits());
        assert_eq!(to_ntt.prime_ids(), add.prime_ids());
        let back = e
            .plaintext_ntt_domain_to_coefficient_domain(&mul)
            .expect("to coefficients");
        assert_eq!(back.words(), add.words());
        assert_eq!(back.domain(), Domain::Coefficient);
    }
}

#[test]
fn plaintext_domain_transitions_reject_wrong_states() {
    let e = engine();
    let pt = e.encode(&message(e.num_slots()), 0, None).expect("encode");
    let mul = e
        .prepare_plaintext_for_multiplication(&pt, ModulusBasis::Q)
        .expect("mul");
    let before = mul.words().to_vec();
    assert!(matches!(
        e.plaintext_coefficient_domain_to_ntt_domain(&mul),
        Err(CkksError::DomainMismatch { .. })
    ));
    let add = e
        .prepare_plaintext_for_addition(&pt, ModulusBasis::Q)
        .expect("add");
    assert!(matches!(
        e.plaintext_ntt_domain_to_coefficient_domain(&add),
        Err(CkksError::DomainMismatch { .. })
    ));
    assert!(matches!(
        e.plaintext_coefficient_domain_to_ntt_domain(&pt),
        Err(CkksError::RepresentationMismatch { .. })
    ));
    let other = CpuEngine::new(Preset::Slots8192Scale50Levels5Int64).expect("engine");
    assert!(matches!(
        other.plaintext_ntt_domain_to_coefficient_domain(&mul),
        Err(CkksError::ContextMismatch { .. })
    ));
    assert_eq!(mul.words(), &before[..]);
}

#[test]
fn concurrent_key_switches_share_the_scratch_pool_safely() {
    let e = engine();
    let ct = e.encrypt_message(&message(e.num_slots())).expect("enc");
    let key = e.create_rotation_key(5, e.secret_key()).expect("key");
    let want = e.rotate_with_key(&ct, &key).expect("rot").words().to_vec();
    let ntt = e.coefficient_domain_to_ntt_domain(&ct).expect("ntt");
    let prod = e.multiply(&ntt, &ntt).expect("mul");
    let relin = e.relinearize(&prod).expect("relin").words().to_vec();
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..3)
            .map(|i| {
                let (e, ct, key, prod) = (&e, &ct, &key, &prod);
                s.spawn(move || {
                    if i == 1 {
                        e.relinearize(prod).expect("relin").words().to_vec()
                    } else {
                        e.rotate_with_key(ct, key).expect("rot").words().to_vec()
                    }
                })
            })
            .collect();
        for (i, w) in workers.into_iter().enumerate() {
            let got = w.join().expect("thread");
            assert_eq!(&got, if i == 1 { &relin } else { &want }, "worker {i}");
        }
    });
}
