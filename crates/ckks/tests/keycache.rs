//! The CPU engine's key cache with a byte capacity (decision 0530): least recently used keys
//! leave first, the held bytes are exact and never above the capacity, a key larger than the
//! capacity is a typed error that changes nothing (not even the random stream), and a key a
//! caller holds outlives its eviction. Key generation is counter-based (decision 0531): a key
//! is a function of the engine's seed, the secret key and the Galois element only. A small
//! ring (N = 2^12) keeps the keys cheap.

mod capture;

use std::sync::Arc;

use capture::Capture;
use fhelium_ckks::{CachedKey, Ciphertext, CkksConfig, CkksError, CpuEngine};
use fhelium_residency::ResidencyLocation;
use num_complex::Complex64;

fn small_engine(seed: u8) -> CpuEngine {
    // N = 2^12 is insecure; the budget check is off (as in tests/engine.rs).
    let cfg = CkksConfig::generate_with_budget(12, 30, 4, 2, false).expect("config");
    CpuEngine::from_config(cfg, Some([seed; 32])).expect("engine")
}

fn message(e: &CpuEngine) -> Vec<Complex64> {
    (0..e.num_slots())
        .map(|j| Complex64::new(0.01 * (0.031 * j as f64).sin(), 0.004 * (j % 7) as f64))
        .collect()
}

fn roll(m: &[Complex64], r: i64) -> Vec<Complex64> {
    let n = m.len() as i64;
    (0..n).map(|j| m[(j - r).rem_euclid(n) as usize]).collect()
}

fn assert_rotated(e: &CpuEngine, got: &Ciphertext, m: &[Complex64], step: i64) {
    let dec = e.decrypt_complex_message(got).expect("decrypt");
    let want = roll(m, step);
    let err = dec
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).norm())
        .fold(0.0, f64::max);
    assert!(err < 1e-3, "rotation by {step}: error {err}");
}

fn rot(e: &CpuEngine, step: i64) -> CachedKey {
    let (canonical, galois_element) = e.galois_element_for_step(step);
    CachedKey::Rotation {
        galois_element,
        step: canonical,
    }
}

#[test]
fn a_bounded_cache_keeps_the_most_recently_used_keys_within_its_bytes() {
    let e = small_engine(1);
    let kb = e.switch_key_bytes();
    let m = message(&e);
    let ct = e.encrypt_complex_message(&m).expect("encrypt");
    assert_eq!(e.key_cache_capacity(), None);
    assert!(e.set_key_cache_capacity(Some(2 * kb)).is_empty());
    assert_eq!(e.key_cache_capacity(), Some(2 * kb));

    for step in [1, 2] {
        assert_rotated(&e, &e.rotate_by_step(&ct, step).expect("rotate"), &m, step);
    }
    assert_eq!(e.cached_keys(), vec![rot(&e, 1), rot(&e, 2)]);
    assert_eq!(e.key_cache_bytes(), 2 * kb);
    // The key's bytes are what the engine says a key costs.
    assert_eq!(e.rotation_key(1).expect("cached").nbytes(), kb);

    // Step 1 was just used (rotation_key counts), so step 2 is the oldest and leaves for 3.
    assert_rotated(&e, &e.rotate_by_step(&ct, 3).expect("rotate"), &m, 3);
    assert_eq!(e.cached_keys(), vec![rot(&e, 1), rot(&e, 3)]);
    assert_eq!(e.key_cache_bytes(), 2 * kb);

    // A step equal to 1 modulo the slots finds step 1's key and makes it the newest.
    let slots = e.num_slots() as i64;
    assert_rotated(
        &e,
        &e.rotate_by_step(&ct, 1 + slots).expect("rotate"),
        &m,
        1,
    );
    assert_eq!(e.cached_keys(), vec![rot(&e, 3), rot(&e, 1)]);

    // The relinearization key is a key like the others: step 3's key leaves for it.
    let n = e.coefficient_domain_to_ntt_domain(&ct).expect("ntt");
    let sq = e
        .relinearize(&e.multiply(&n, &n).expect("multiply"))
        .expect("relinearize");
    assert_eq!(sq.components(), 2);
    assert_eq!(
        e.cached_keys(),
        vec![rot(&e, 1), CachedKey::Relinearization]
    );
    assert_eq!(e.key_cache_bytes(), 2 * kb);

    // Hoisted rotations: three keys through a two-key cache; every result is right and the
    // cache ends with the last two.
    let many = e
        .rotate_many_by_steps(&ct, &[4, 0, 5, -6])
        .expect("hoisted");
    for (r, step) in many.iter().zip([4, 0, 5, -6]) {
        assert_rotated(&e, r, &m, step);
    }
    assert_eq!(e.cached_keys(), vec![rot(&e, 5), rot(&e, -6)]);
    assert_eq!(e.key_cache_bytes(), 2 * kb);

    // Lowering the capacity lets the oldest go at once; raising it keeps what is held.
    assert_eq!(e.set_key_cache_capacity(Some(kb)), vec![rot(&e, 5)]);
    assert_eq!(e.key_cache_bytes(), kb);
    assert!(e.set_key_cache_capacity(None).is_empty());
    assert_eq!(e.cached_keys(), vec![rot(&e, -6)]);
    assert_eq!(e.clear_key_cache(), vec![rot(&e, -6)]);
    assert_eq!((e.key_cache_bytes(), e.cached_keys()), (0, vec![]));
}

#[test]
fn a_key_a_caller_holds_outlives_its_eviction() {
    let e = small_engine(2);
    let m = message(&e);
    let ct = e.encrypt_complex_message(&m).expect("encrypt");
    e.set_key_cache_capacity(Some(e.switch_key_bytes()));
    let k7 = e.rotation_key(7).expect("key 7");
    assert_eq!(Arc::strong_count(&k7), 2, "the cache and the caller");
    // Step 8's key pushes step 7's out of the cache; the caller's key still rotates.
    let _ = e.rotation_key(8).expect("key 8");
    assert_eq!(e.cached_keys(), vec![rot(&e, 8)]);
    assert_eq!(Arc::strong_count(&k7), 1, "only the caller");
    assert_rotated(&e, &e.rotate_with_key(&ct, &k7).expect("rotate"), &m, 7);
    // Asked again, step 7 gets a key made again: the same words (key generation is
    // counter-based, decision 0531), so eviction is invisible in every result.
    let k7b = e.rotation_key(7).expect("key 7 again");
    assert!(!Arc::ptr_eq(&k7, &k7b));
    assert_eq!(k7.view(), k7b.view());
    assert_rotated(&e, &e.rotate_by_step(&ct, 7).expect("rotate"), &m, 7);
}

#[test]
fn a_key_larger_than_the_capacity_is_refused_and_changes_nothing() {
    let e = small_engine(3);
    let twin = small_engine(3);
    let kb = e.switch_key_bytes();
    let ct = e.encrypt_complex_message(&message(&e)).expect("encrypt");
    let ct_twin = twin
        .encrypt_complex_message(&message(&twin))
        .expect("encrypt");
    assert_eq!(ct.words(), ct_twin.words(), "twins");

    // One key held, then a capacity of one key less a byte lets it go.
    let _ = e.rotation_key(2).expect("key 2");
    let _ = twin.rotation_key(2).expect("key 2");
    assert_eq!(e.set_key_cache_capacity(Some(kb - 1)), vec![rot(&e, 2)]);

    let check = |err: CkksError, op: &str, key: CachedKey| {
        let text = err.to_string();
        match err {
            CkksError::KeyCacheCapacity {
                op: o,
                key: k,
                location,
                bytes,
                capacity,
            } => {
                assert_eq!(
                    (o, k, location, bytes, capacity),
                    (op, key, ResidencyLocation::PageableHost, kb, kb - 1),
                    "{text}"
                );
            }
            other => panic!("{op}: expected KeyCacheCapacity, got {other:?}"),
        }
        assert!(
            text.contains(&kb.to_string())
                && text.contains(&(kb - 1).to_string())
                && text.contains("pageable-host")
                && text.contains(op),
            "{text}"
        );
    };
    check(
        e.rotate_by_step(&ct, 1).expect_err("rotate"),
        "rotate_by_step",
        rot(&e, 1),
    );
    check(
        e.rotate_many_by_steps(&ct, &[0, 3, 1])
            .expect_err("hoisted"),
        "rotate_many_by_steps",
        rot(&e, 3),
    );
    check(
        e.rotation_key(-4).expect_err("key"),
        "rotation_key",
        rot(&e, -4),
    );
    let n = e.coefficient_domain_to_ntt_domain(&ct).expect("ntt");
    let prod = e.multiply(&n, &n).expect("multiply");
    check(
        e.relinearize(&prod).expect_err("relinearize"),
        "relinearize",
        CachedKey::Relinearization,
    );
    check(
        e.relinearization_key().expect_err("key"),
        "relinearization_key",
        CachedKey::Relinearization,
    );
    // A step ≡ 0 needs no key, so a hoisted call of zeros succeeds.
    assert_eq!(e.rotate_many_by_steps(&ct, &[0]).expect("copy").len(), 1);

    // Nothing changed: no key is held and no random word was drawn, so the next key equals
    // the twin's (whose engine never saw a refusal).
    assert_eq!((e.key_cache_bytes(), e.cached_keys()), (0, vec![]));
    e.set_key_cache_capacity(None);
    let k = e.rotation_key(5).expect("key 5");
    let k_twin = twin.rotation_key(5).expect("key 5");
    assert_eq!(k.view(), k_twin.view());
    // A step ≡ 0 is not a key.
    assert!(matches!(
        e.rotation_key(0),
        Err(CkksError::InvalidRotation {
            op: "rotation_key",
            ..
        })
    ));
}

#[test]
fn threads_asking_for_the_same_key_get_one_key_made_once() {
    let e = small_engine(4);
    e.set_key_cache_capacity(Some(4 * e.switch_key_bytes()));
    let cap = Capture::default();
    let start = std::sync::Barrier::new(4);
    let keys: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    cap.during(|| e.rotation_key(3).expect("key"))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    assert!(keys.iter().all(|k| Arc::ptr_eq(k, &keys[0])));
    // One thread made it; the others waited at the key's gate and found it in the cache.
    let made = cap
        .spans()
        .iter()
        .filter(|s| s.name == "ckks.create_rotation_key")
        .count();
    assert_eq!(made, 1, "the key was made {made} times");
    assert_eq!(e.cached_keys(), vec![rot(&e, 3)]);
    assert_eq!(e.key_cache_bytes(), e.switch_key_bytes());
}

#[test]
fn keys_depend_on_the_seed_and_the_galois_element_only() {
    let a = small_engine(5);
    let b = small_engine(5);
    // Made in opposite orders, with an encryption in between on one side.
    let a1 = a.rotation_key(1).expect("a 1");
    let a2 = a.rotation_key(-2).expect("a -2");
    let ar = a.relinearization_key().expect("a rlk");
    let _ = b.encrypt_complex_message(&message(&b)).expect("encrypt");
    let br = b.relinearization_key().expect("b rlk");
    let b2 = b.rotation_key(-2).expect("b -2");
    let b1 = b.create_rotation_key(1, b.secret_key()).expect("b 1");
    assert_eq!(a1.view(), b1.view());
    assert_eq!(a2.view(), b2.view());
    assert_eq!(ar.view(), br.view());
    let ac = a.create_conjugation_key(a.secret_key()).expect("a conj");
    let bc = b.create_conjugation_key(b.secret_key()).expect("b conj");
    assert_eq!(ac.view(), bc.view());
    // Different elements, kinds and seeds give different words.
    assert_ne!(a1.view(), a2.view());
    assert_ne!(a1.view(), ac.view());
    let c = small_engine(6);
    assert_ne!(c.rotation_key(1).expect("c 1").view(), a1.view());
    // Still keys: the rotation decrypts to roll(m, 1).
    let m = message(&b);
    let ct = b.encrypt_complex_message(&m).expect("encrypt");
    assert_rotated(&b, &b.rotate_with_key(&ct, &a1).expect("rotate"), &m, 1);
}

/// Calls that use the key cache and are refused for their input (wrong domain, components,
/// context or a step with no key) give the exact error and leave the cache as it was: the
/// same keys in the same order, the same bytes, no key made.
#[test]
fn refused_inputs_leave_the_key_cache_as_it_was() {
    let e = small_engine(7);
    let slots = e.num_slots() as i64;
    let m = message(&e);
    let ct = e.encrypt_complex_message(&m).expect("encrypt");
    let _ = e.rotation_key(2).expect("key 2");
    let _ = e.rotation_key(-1).expect("key -1");
    let held = (e.cached_keys(), e.key_cache_bytes());
    assert_eq!(
        held,
        (vec![rot(&e, 2), rot(&e, -1)], 2 * e.switch_key_bytes())
    );
    let ntt = e.coefficient_domain_to_ntt_domain(&ct).expect("ntt");
    let prod = e.multiply(&ntt, &ntt).expect("multiply");
    let other = CpuEngine::from_config(
        CkksConfig::generate_with_budget(12, 30, 3, 1, false).expect("config"),
        Some([7; 32]),
    )
    .expect("engine");
    let alien = other
        .encrypt_complex_message(&message(&other))
        .expect("enc");
    let refusals = [
        (
            e.rotate_by_step(&ntt, 3).map(|_| ()),
            CkksError::DomainMismatch {
                op: "rotate_by_step",
                expected: fhelium_ckks::Domain::Coefficient,
                actual: fhelium_ckks::Domain::Ntt,
            },
        ),
        (
            e.rotate_many_by_steps(&prod, &[3, 4]).map(|_| ()),
            CkksError::ComponentMismatch {
                op: "rotate_many_by_steps",
                expected: 2,
                actual: 3,
            },
        ),
        (
            e.relinearize(&ntt).map(|_| ()),
            CkksError::ComponentMismatch {
                op: "relinearize",
                expected: 3,
                actual: 2,
            },
        ),
        (
            e.rotate_by_step(&alien, 3).map(|_| ()),
            CkksError::ContextMismatch {
                op: "rotate_by_step",
                expected: e.context_id(),
                actual: other.context_id(),
            },
        ),
        (
            e.rotation_key(-2 * slots).map(|_| ()),
            CkksError::InvalidRotation {
                op: "rotation_key",
                reason: format!(
                    "step {} is a multiple of the slot count: no rotation key",
                    -2 * slots
                ),
            },
        ),
        (
            e.create_rotation_key(slots, e.secret_key()).map(|_| ()),
            CkksError::InvalidRotation {
                op: "create_rotation_key",
                reason: format!("step {slots} is the identity"),
            },
        ),
    ];
    for (got, want) in refusals {
        assert_eq!(got.unwrap_err(), want);
        assert_eq!((e.cached_keys(), e.key_cache_bytes()), held);
    }
    // Key 2 is still the older: the refusals counted as no use.
    let _ = e.rotation_key(5).expect("key 5");
    e.set_key_cache_capacity(Some(2 * e.switch_key_bytes()));
    assert_eq!(e.cached_keys(), vec![rot(&e, -1), rot(&e, 5)]);
}

/// A key whose storage cannot be allocated (a fault armed on the engine's memory) fails the
/// call with the memory layer's exact error and leaves the cache unchanged; the next call makes
/// the same key a twin engine makes.
#[test]
fn a_key_that_cannot_be_allocated_fails_the_call_and_changes_nothing() {
    let cfg = CkksConfig::generate_with_budget(12, 30, 4, 2, false).expect("config");
    let memory = fhelium_cuda::Memory::host_only();
    let e = CpuEngine::from_config_in(cfg, Some([8; 32]), memory.clone()).expect("engine");
    let twin = small_engine(8);
    let kb = e.switch_key_bytes();
    let ct = e.encrypt_complex_message(&message(&e)).expect("encrypt");
    let _ = e.rotation_key(1).expect("key 1");
    let held = (e.cached_keys(), e.key_cache_bytes());
    let host = ResidencyLocation::PageableHost;
    let used = memory.usage(&host).expect("usage");
    let faults = memory.sim_faults(&host).expect("faults");
    let no_room = CkksError::Memory(fhelium_cuda::MemoryError::InjectedAllocFailure {
        location: host,
        bytes: kb,
    });
    faults.fail_next_allocs(1);
    assert_eq!(e.rotate_by_step(&ct, 3).unwrap_err(), no_room);
    faults.fail_next_allocs(1);
    assert_eq!(e.rotate_many_by_steps(&ct, &[1, 3]).unwrap_err(), no_room);
    let n = e.coefficient_domain_to_ntt_domain(&ct).expect("ntt");
    let prod = e.multiply(&n, &n).expect("multiply");
    let used_prod = memory.usage(&host).expect("usage");
    faults.fail_next_allocs(1);
    assert_eq!(e.relinearize(&prod).unwrap_err(), no_room);
    faults.fail_next_allocs(1);
    assert_eq!(e.relinearization_key().unwrap_err(), no_room);
    assert_eq!((e.cached_keys(), e.key_cache_bytes()), held);
    assert_eq!(
        memory.usage(&host).expect("usage").allocated_bytes,
        used_prod.allocated_bytes
    );
    assert!(used_prod.allocated_bytes > used.allocated_bytes);
    assert_eq!(faults.pending_alloc_failures(), 0);
    // Nothing left armed: the key is made, equal to the twin's.
    let k3 = e.rotation_key(3).expect("key 3");
    assert_eq!(k3.view(), twin.rotation_key(3).expect("twin key 3").view());
    assert_eq!(e.cached_keys(), vec![rot(&e, 1), rot(&e, 3)]);
}
