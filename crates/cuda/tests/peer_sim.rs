//! Device-to-device copies on simulated devices: peer links, the direct path, the staged
//! fallback through pinned host (forced by `PeerMode::Staged` or `copy_from_staged`), event
//! ordering under holds, staging-buffer reuse, fault injection and the typed errors.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use fhelium_cuda::{
    Buffer, Memory, MemoryConfig, MemoryError, PeerMode, PeerPath, ResidencyLocation as L,
    Resident, TensorView, Tensors,
};
use rand::{Rng, SeedableRng};

const POISON: u64 = 0xDEAD_BEEF_0BAD_F00D;

fn random_words(seed: u64, n: usize) -> Vec<u64> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.random::<u64>()).collect()
}

fn sim(n: u8, peer: PeerMode) -> Memory {
    Memory::new(&MemoryConfig {
        sim_devices: n,
        peer,
        ..MemoryConfig::default()
    })
    .unwrap()
}

fn filled(mem: &Memory, loc: L, data: &[u64]) -> Buffer {
    mem.alloc_from(&loc, data, None).unwrap().0
}

fn pinned_bytes(mem: &Memory) -> u64 {
    mem.usage(&L::PinnedHost).unwrap().allocated_bytes
}

#[test]
fn links_record_every_pair() {
    for (mode, cross) in [
        (PeerMode::Auto, PeerPath::Direct),
        (PeerMode::Staged, PeerPath::Staged),
    ] {
        let mem = sim(3, mode);
        assert_eq!(mem.peer_mode(), mode);
        let links = mem.peer_links();
        assert_eq!(
            links.len(),
            6,
            "3 devices, 6 ordered pairs of distinct devices"
        );
        for l in &links {
            assert_ne!(l.from, l.to);
            assert_eq!(l.path, cross);
            assert!(l.can_access_peer, "simulated pairs are peers");
            assert_eq!(l.peer_enabled, mode == PeerMode::Auto);
            assert_eq!(mem.peer_link(&l.from, &l.to).unwrap(), *l);
        }
        let same = mem.peer_link(&L::Sim(1), &L::Sim(1)).unwrap();
        assert_eq!(same.path, PeerPath::SameDevice);
        assert!(!same.can_access_peer && !same.peer_enabled);
        assert!(!mem.can_access_peer(&L::Sim(2), &L::Sim(2)));
        assert!(mem.can_access_peer(&L::Sim(0), &L::Sim(2)));
    }
}

#[test]
fn link_errors_name_the_pair() {
    let mem = sim(2, PeerMode::Auto);
    let e = mem.peer_link(&L::PinnedHost, &L::Sim(0)).unwrap_err();
    assert!(
        matches!(
            e,
            MemoryError::NotAPeerPair {
                op: "peer_link",
                from: L::PinnedHost,
                to: L::Sim(0),
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("pinned-host -> sim:0"), "{e}");
    let e = mem.peer_link(&L::Sim(0), &L::Sim(2)).unwrap_err();
    assert!(
        matches!(
            e,
            MemoryError::LocationUnavailable {
                location: L::Sim(2),
                ..
            }
        ),
        "{e}"
    );
    assert!(!mem.can_access_peer(&L::Sim(0), &L::PageableHost));
    assert!(!mem.can_access_peer(&L::Sim(0), &L::Cuda(0)));
}

#[test]
fn direct_copies_between_devices_are_exact_and_counted() {
    let mem = sim(2, PeerMode::Auto);
    let data = random_words(1, 4096);
    let src = filled(&mem, L::Sim(0), &data);
    let (dst, ev) = src.copy_to(&mem, &L::Sim(1), None).unwrap();
    let ev = ev.expect("device copies return an event");
    assert_eq!(ev.location(), L::Sim(1), "destination's default stream");
    assert!(ev.query().unwrap());
    assert_eq!(dst.host_slice().unwrap(), &data[..]);
    let st = mem.peer_copy_stats();
    assert_eq!((st.direct_copies, st.direct_bytes), (1, 4096 * 8));
    assert_eq!((st.staged_copies, st.staging_allocations), (0, 0));
    assert_eq!(mem.staging_buffers(), 0);
    assert_eq!(pinned_bytes(&mem), 0, "no staging on the direct path");
    // Same device: counted as such.
    let (_same, _) = src.copy_to(&mem, &L::Sim(0), None).unwrap();
    let st = mem.peer_copy_stats();
    assert_eq!((st.same_device_copies, st.same_device_bytes), (1, 4096 * 8));
    // Host endpoints are not peer copies.
    let _ = src.copy_to(&mem, &L::PinnedHost, None).unwrap();
    assert_eq!(mem.peer_copy_stats(), st);
}

#[test]
fn staged_copies_are_exact_counted_and_reuse_staging() {
    let mem = sim(2, PeerMode::Staged);
    let words = 3000;
    for (k, (from, to)) in [(0u8, 1u8), (1, 0), (0, 1)].into_iter().enumerate() {
        let data = random_words(10 + k as u64, words);
        let src = filled(&mem, L::Sim(from), &data);
        let mut dst = filled(&mem, L::Sim(to), &vec![POISON; words]);
        let ev = dst.copy_from(&mem, &src, None).unwrap().unwrap();
        assert_eq!(ev.location(), L::Sim(to));
        assert!(ev.query().unwrap());
        assert_eq!(dst.host_slice().unwrap(), &data[..], "copy {k}");
    }
    let st = mem.peer_copy_stats();
    assert_eq!(st.staged_copies, 3);
    assert_eq!(st.staged_bytes, 3 * words as u64 * 8);
    assert_eq!(st.direct_copies, 0);
    assert_eq!(
        st.staging_allocations, 1,
        "completed staging buffers are reused"
    );
    assert_eq!(mem.staging_buffers(), 1);
    assert_eq!(
        pinned_bytes(&mem),
        words as u64 * 8,
        "staging counts at pinned-host"
    );
    // A smaller copy reuses the larger idle buffer; a larger one needs a new one.
    let small = filled(&mem, L::Sim(0), &random_words(3, 100));
    let (d, _) = small.copy_to(&mem, &L::Sim(1), None).unwrap();
    assert_eq!(d.to_vec(&mem).unwrap(), small.to_vec(&mem).unwrap());
    assert_eq!(mem.peer_copy_stats().staging_allocations, 1);
    let big = filled(&mem, L::Sim(1), &random_words(4, words + 1));
    let (d, _) = big.copy_to(&mem, &L::Sim(0), None).unwrap();
    assert_eq!(d.to_vec(&mem).unwrap(), big.to_vec(&mem).unwrap());
    assert_eq!(mem.peer_copy_stats().staging_allocations, 2);
    assert_eq!(mem.trim_staging(), 2);
    assert_eq!(mem.staging_buffers(), 0);
    assert_eq!(pinned_bytes(&mem), 0);
}

#[test]
fn staged_ranges_and_same_device_fallback() {
    let mem = sim(2, PeerMode::Auto);
    let data = random_words(5, 1000);
    let src = filled(&mem, L::Sim(0), &data);
    // copy_from_staged forces the fallback even where a direct path exists, and on one device.
    for to in [L::Sim(1), L::Sim(0)] {
        let mut dst = filled(&mem, to, &vec![POISON; 1000]);
        let before = mem.peer_copy_stats().staged_copies;
        dst.copy_from_staged(&mem, &src, None).unwrap();
        assert_eq!(dst.host_slice().unwrap(), &data[..]);
        assert_eq!(mem.peer_copy_stats().staged_copies, before + 1);
    }
    // A staged range copy.
    let staged = sim(2, PeerMode::Staged);
    let src = filled(&staged, L::Sim(1), &data);
    let (part, _) = src
        .copy_range_to(&staged, &L::Sim(0), 100, 250, None)
        .unwrap();
    assert_eq!(part.host_slice().unwrap(), &data[100..350]);
}

#[test]
fn staged_copy_is_ordered_by_events_not_host_waits() {
    let mem = sim(2, PeerMode::Staged);
    let data = random_words(6, 512);
    let src = filled(&mem, L::Sim(0), &data);
    let s0 = mem.stream(&L::Sim(0)).unwrap();
    // Work pending on the source device's stream: the copy's event stays pending behind it.
    s0.hold().unwrap();
    let (dst, ev) = src.copy_to(&mem, &L::Sim(1), Some(&s0)).unwrap();
    let ev = ev.unwrap();
    assert_eq!(
        ev.location(),
        L::Sim(1),
        "second hop on the destination device"
    );
    assert!(!ev.query().unwrap(), "ordered after the held first hop");
    // The staging buffer is in flight: another copy cannot reuse it. That copy's second hop
    // runs on sim:1's default stream, which now waits on the held first copy, like CUDA.
    let (_d2, ev2) = src.copy_to(&mem, &L::Sim(1), None).unwrap();
    let ev2 = ev2.unwrap();
    assert!(!ev2.query().unwrap(), "in order behind the first copy");
    assert_eq!(mem.peer_copy_stats().staging_allocations, 2);
    assert_eq!(mem.trim_staging(), 0, "buffers in flight are never freed");
    assert_eq!(mem.staging_buffers(), 2);
    s0.release_hold().unwrap();
    assert!(ev.query().unwrap() && ev2.query().unwrap());
    assert_eq!(dst.host_slice().unwrap(), &data[..]);
    assert_eq!(mem.trim_staging(), 2);

    // A held destination stream given to the copy: the first hop waits on it.
    let s1 = mem.stream(&L::Sim(1)).unwrap();
    s1.hold().unwrap();
    let (_d3, ev3) = src.copy_to(&mem, &L::Sim(1), Some(&s1)).unwrap();
    assert!(!ev3.as_ref().unwrap().query().unwrap());
    s1.release_hold().unwrap();
    assert!(ev3.unwrap().query().unwrap());
}

#[test]
fn faults_fail_the_copy_and_change_nothing() {
    for mode in [PeerMode::Auto, PeerMode::Staged] {
        let mem = sim(2, mode);
        let data = random_words(7, 256);
        let src = filled(&mem, L::Sim(0), &data);
        let at1 = mem.usage(&L::Sim(1)).unwrap();
        // A fault armed at the destination.
        mem.sim_faults(&L::Sim(1)).unwrap().fail_next_copies(1);
        let e = src.copy_to(&mem, &L::Sim(1), None).unwrap_err();
        assert_eq!(
            e,
            MemoryError::InjectedCopyFailure {
                from: L::Sim(0),
                to: L::Sim(1),
                bytes: 2048
            }
        );
        assert_eq!(
            mem.usage(&L::Sim(1)).unwrap().allocated_bytes,
            at1.allocated_bytes,
            "{mode:?}: the failed copy_to allocated nothing"
        );
        let mut dst = filled(&mem, L::Sim(1), &vec![POISON; 256]);
        mem.sim_faults(&L::Sim(1)).unwrap().fail_next_copies(1);
        assert!(dst.copy_from(&mem, &src, None).is_err());
        assert!(dst.host_slice().unwrap().iter().all(|w| *w == POISON));
        let st = mem.peer_copy_stats();
        assert_eq!(
            st.direct_copies + st.staged_copies,
            0,
            "{mode:?}: nothing counted"
        );
        // The next copy succeeds.
        dst.copy_from(&mem, &src, None).unwrap();
        assert_eq!(dst.host_slice().unwrap(), &data[..]);
    }
}

#[test]
fn staged_hop_failures_name_the_hop() {
    let mem = sim(2, PeerMode::Staged);
    let data = random_words(8, 128);
    let src = filled(&mem, L::Sim(1), &data);
    let mut dst = filled(&mem, L::Sim(0), &vec![POISON; 128]);
    // The first hop (into pinned staging) fails.
    mem.sim_faults(&L::PinnedHost).unwrap().fail_next_copies(1);
    let e = dst.copy_from(&mem, &src, None).unwrap_err();
    match &e {
        MemoryError::PeerCopy {
            from,
            to,
            bytes,
            path,
            stage,
            cause,
        } => {
            assert_eq!((*from, *to, *bytes), (L::Sim(1), L::Sim(0), 1024));
            assert_eq!(*path, PeerPath::Staged);
            assert_eq!(*stage, "device to pinned host");
            assert_eq!(
                **cause,
                MemoryError::InjectedCopyFailure {
                    from: L::Sim(1),
                    to: L::PinnedHost,
                    bytes: 1024
                }
            );
        }
        other => panic!("unexpected {other}"),
    }
    let text = e.to_string();
    assert!(
        text.contains("sim:1 -> sim:0") && text.contains("1024 bytes"),
        "{text}"
    );
    assert!(dst.host_slice().unwrap().iter().all(|w| *w == POISON));
    assert_eq!(mem.peer_copy_stats().staged_copies, 0);
    // The staging allocation fails.
    mem.trim_staging();
    mem.sim_faults(&L::PinnedHost).unwrap().fail_next_allocs(1);
    let e = dst.copy_from(&mem, &src, None).unwrap_err();
    assert!(
        matches!(
            e,
            MemoryError::PeerCopy {
                stage: "staging alloc",
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(pinned_bytes(&mem), 0);
    // Recovered.
    dst.copy_from(&mem, &src, None).unwrap();
    assert_eq!(dst.host_slice().unwrap(), &data[..]);
}

#[test]
fn staged_api_errors() {
    let mem = sim(3, PeerMode::Auto);
    let src = filled(&mem, L::Sim(0), &[1, 2, 3]);
    let mut host = filled(&mem, L::PageableHost, &[0; 3]);
    let e = host.copy_from_staged(&mem, &src, None).unwrap_err();
    assert!(
        matches!(
            e,
            MemoryError::NotAPeerPair {
                op: "copy_from_staged",
                from: L::Sim(0),
                to: L::PageableHost,
                ..
            }
        ),
        "{e}"
    );
    let mut short = filled(&mem, L::Sim(1), &[0; 2]);
    let e = short.copy_from_staged(&mem, &src, None).unwrap_err();
    assert!(
        matches!(
            e,
            MemoryError::SizeMismatch {
                from_bytes: 24,
                to_bytes: 16,
                ..
            }
        ),
        "{e}"
    );
    // A stream of a third device is refused.
    let mut dst = filled(&mem, L::Sim(1), &[0; 3]);
    let s2 = mem.stream(&L::Sim(2)).unwrap();
    let e = dst.copy_from_staged(&mem, &src, Some(&s2)).unwrap_err();
    assert!(
        matches!(
            e,
            MemoryError::StreamMismatch {
                stream: L::Sim(2),
                ..
            }
        ),
        "{e}"
    );
    // Faults at the destination apply to forced staging too.
    mem.sim_faults(&L::Sim(1)).unwrap().fail_next_copies(1);
    let e = dst.copy_from_staged(&mem, &src, None).unwrap_err();
    assert!(matches!(
        e,
        MemoryError::InjectedCopyFailure { bytes: 24, .. }
    ));
    assert_eq!(dst.host_slice().unwrap(), &[0, 0, 0]);
    assert_eq!(mem.peer_copy_stats().staged_copies, 0);
}

#[test]
fn values_materialize_on_another_device_on_both_paths() {
    for mode in [PeerMode::Auto, PeerMode::Staged] {
        let mem = sim(2, mode);
        let data = random_words(9, 2048);
        let buf = Arc::new(filled(&mem, L::Sim(0), &data));
        // Two aliasing views and one smaller window.
        let t = Tensors::new(vec![
            TensorView::new(Arc::clone(&buf), 0, 1024).unwrap(),
            TensorView::new(Arc::clone(&buf), 512, 1024).unwrap(),
            TensorView::whole(Arc::clone(&buf)),
        ]);
        let m = t.materialize(&mem, &L::Sim(1), None).unwrap();
        assert!(m.ready.is_some());
        let moved = m.wait().unwrap();
        assert_eq!(moved.placement().unwrap(), L::Sim(1));
        let vecs = moved.to_vecs(&mem).unwrap();
        assert_eq!(vecs[0], &data[..1024]);
        assert_eq!(vecs[1], &data[512..1536]);
        assert_eq!(vecs[2], data);
        let st = mem.peer_copy_stats();
        let copies = if mode == PeerMode::Auto {
            st.direct_copies
        } else {
            st.staged_copies
        };
        assert_eq!(copies, 3, "{mode:?}: one copy per view");
        assert_eq!(
            st.direct_bytes + st.staged_bytes,
            (1024 + 1024 + 2048) * 8,
            "{mode:?}"
        );
    }
}

#[test]
fn cost_models_learn_which_pairs_lack_peer_access() {
    use fhelium_residency::TransferCostModel;
    let auto = sim(3, PeerMode::Auto).cost_model_with_peer_links(TransferCostModel::new());
    assert!(auto.peers(L::Sim(0), L::Sim(1)) && auto.peers(L::Sim(2), L::Sim(0)));
    assert_eq!(
        auto,
        TransferCostModel::new(),
        "every pair direct: nothing marked"
    );
    let staged = sim(3, PeerMode::Staged).cost_model_with_peer_links(TransferCostModel::new());
    for (a, b) in [(0, 1), (0, 2), (1, 2)] {
        assert!(!staged.peers(L::Sim(a), L::Sim(b)), "sim:{a} sim:{b}");
        assert!(!staged.peers(L::Sim(b), L::Sim(a)), "sim:{b} sim:{a}");
    }
    // A staged pair costs more than a direct one for the same bytes.
    let bytes = 64 << 20;
    assert!(
        staged.estimate(L::Sim(0), L::Sim(1), bytes).nanoseconds
            > auto.estimate(L::Sim(0), L::Sim(1), bytes).nanoseconds
    );
}

/// Every refusal of `copy_from_staged` and `peer_link` names all its fields (operation, both
/// ends, bytes, the stream, the reason), and none writes the destination, counts a copy or
/// keeps a staging buffer.
#[test]
fn staged_and_link_refusals_name_every_field_and_change_nothing() {
    let mem = sim(3, PeerMode::Auto);
    let src = filled(&mem, L::Sim(0), &[1, 2, 3]);
    let mut host = filled(&mem, L::PageableHost, &[0; 3]);
    assert_eq!(
        host.copy_from_staged(&mem, &src, None).unwrap_err(),
        MemoryError::NotAPeerPair {
            op: "copy_from_staged",
            from: L::Sim(0),
            to: L::PageableHost,
            reason: "sim:0 -> pageable-host has a host endpoint; peer copies connect two devices"
                .to_owned(),
        }
    );
    assert_eq!(
        mem.peer_link(&L::PinnedHost, &L::Sim(2)).unwrap_err(),
        MemoryError::NotAPeerPair {
            op: "peer_link",
            from: L::PinnedHost,
            to: L::Sim(2),
            reason: "pinned-host -> sim:2 has a host endpoint; peer copies connect two devices"
                .to_owned(),
        }
    );
    assert_eq!(
        mem.peer_link(&L::Sim(0), &L::Sim(3)).unwrap_err(),
        MemoryError::LocationUnavailable {
            op: "peer_link",
            location: L::Sim(3),
            reason: "this memory has 3 simulated device(s)".to_owned(),
        }
    );
    let mut short = filled(&mem, L::Sim(1), &[POISON; 2]);
    assert_eq!(
        short.copy_from_staged(&mem, &src, None).unwrap_err(),
        MemoryError::SizeMismatch {
            op: "copy_from_staged",
            from: L::Sim(0),
            to: L::Sim(1),
            from_bytes: 24,
            to_bytes: 16,
        }
    );
    let mut dst = filled(&mem, L::Sim(1), &[POISON; 3]);
    let s2 = mem.stream(&L::Sim(2)).unwrap();
    assert_eq!(
        dst.copy_from_staged(&mem, &src, Some(&s2)).unwrap_err(),
        MemoryError::StreamMismatch {
            op: "copy_from_staged",
            stream: L::Sim(2),
            expected: "a stream of a device endpoint of the copy sim:0 -> sim:1".to_owned(),
        }
    );
    mem.sim_faults(&L::Sim(1)).unwrap().fail_next_copies(1);
    assert_eq!(
        dst.copy_from_staged(&mem, &src, None).unwrap_err(),
        MemoryError::InjectedCopyFailure {
            from: L::Sim(0),
            to: L::Sim(1),
            bytes: 24
        }
    );
    // A buffer of a memory with more devices than this one.
    let bigger = sim(4, PeerMode::Auto);
    let far = filled(&bigger, L::Sim(3), &[4, 5, 6]);
    assert_eq!(
        dst.copy_from_staged(&mem, &far, None).unwrap_err(),
        MemoryError::LocationUnavailable {
            op: "copy_from_staged",
            location: L::Sim(3),
            reason: "this memory has 3 simulated device(s)".to_owned(),
        }
    );
    // The staging allocation fails: the hop and its cause are named in full.
    mem.sim_faults(&L::PinnedHost).unwrap().fail_next_allocs(1);
    assert_eq!(
        dst.copy_from_staged(&mem, &src, None).unwrap_err(),
        MemoryError::PeerCopy {
            from: L::Sim(0),
            to: L::Sim(1),
            bytes: 24,
            path: PeerPath::Staged,
            stage: "staging alloc",
            cause: Box::new(MemoryError::InjectedAllocFailure {
                location: L::PinnedHost,
                bytes: 24
            }),
        }
    );
    assert_eq!(dst.host_slice().unwrap(), &[POISON; 3]);
    assert_eq!(short.host_slice().unwrap(), &[POISON; 2]);
    assert_eq!(host.host_slice().unwrap(), &[0; 3]);
    assert_eq!(
        mem.peer_copy_stats(),
        fhelium_cuda::PeerCopyStats::default()
    );
    assert_eq!((mem.staging_buffers(), pinned_bytes(&mem)), (0, 0));
    // Nothing is left armed: the same copy now succeeds.
    dst.copy_from_staged(&mem, &src, None).unwrap();
    assert_eq!(dst.host_slice().unwrap(), &[1, 2, 3]);
}
