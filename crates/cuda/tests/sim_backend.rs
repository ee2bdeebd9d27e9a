//! The host backend: pageable, simulated pinned and simulated devices `sim:N`.
//! Every copy is checked word by word against random data written over a poisoned destination.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use fhelium_cuda::{
    Buffer, Memory, MemoryError, ResidencyLocation as L, Resident, Stream, TensorView, Tensors,
};
use rand::{Rng, SeedableRng};

const POISON: u64 = 0xDEAD_BEEF_DEAD_BEEF;

fn random_words(seed: u64, n: usize) -> Vec<u64> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.random::<u64>()).collect()
}

fn all_locations() -> [L; 4] {
    [L::PageableHost, L::PinnedHost, L::Sim(0), L::Sim(1)]
}

fn poisoned(mem: &Memory, loc: L, words: usize) -> Buffer {
    let (b, ev) = mem
        .alloc_from(&loc, &vec![POISON; words], None)
        .expect("poisoned buffer");
    if let Some(ev) = ev {
        assert!(ev.query().unwrap());
    }
    b
}

#[test]
fn availability_follows_the_inventory() {
    let host = Memory::host_only();
    assert!(host.is_available(&L::PageableHost));
    assert!(host.is_available(&L::PinnedHost));
    assert!(!host.is_available(&L::Sim(0)));
    assert!(!host.is_available(&L::Cuda(0)));
    assert!(!host.pinned_is_page_locked());
    assert_eq!(host.locations(), vec![L::PageableHost, L::PinnedHost]);

    let mem = Memory::with_sim_devices(2);
    assert!(mem.is_available(&L::Sim(1)));
    assert!(!mem.is_available(&L::Sim(2)));
    assert_eq!(mem.sim_device_count(), 2);
    assert_eq!(mem.cuda_device_count(), 0);
    let err = mem.check_available("probe", &L::Sim(2)).unwrap_err();
    assert!(
        matches!(
            err,
            MemoryError::LocationUnavailable {
                location: L::Sim(2),
                op: "probe",
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("2 simulated device"), "{err}");
    let err = mem.alloc(&L::Cuda(0), 4, None).unwrap_err();
    assert!(err.to_string().contains("require available CUDA"), "{err}");
    // Nothing was debited anywhere by the refusals.
    for loc in mem.locations() {
        assert_eq!(mem.usage(&loc).unwrap().allocated_bytes, 0);
    }
}

#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_without_the_feature_is_a_typed_error() {
    let err = Memory::with_cuda().unwrap_err();
    assert!(matches!(err, MemoryError::CudaUnavailable { .. }), "{err}");
    assert!(err.to_string().contains("feature `cuda`"));
}

#[test]
fn allocation_accounting_and_drop() {
    let mem = Memory::with_sim_devices(1);
    let a = mem.alloc(&L::Sim(0), 100, None).unwrap();
    let b = mem.alloc(&L::Sim(0), 28, None).unwrap();
    assert_eq!(a.nbytes(), 800);
    assert_eq!(a.storage_nbytes(), 800);
    assert_eq!(a.location(), L::Sim(0));
    assert_ne!(a.storage_key(), b.storage_key());
    let u = mem.usage(&L::Sim(0)).unwrap();
    assert_eq!((u.allocated_bytes, u.live_buffers), (1024, 2));
    drop(a);
    let u = mem.usage(&L::Sim(0)).unwrap();
    assert_eq!(
        (u.allocated_bytes, u.peak_bytes, u.live_buffers),
        (224, 1024, 1)
    );
    drop(b);
    assert_eq!(mem.usage(&L::Sim(0)).unwrap().allocated_bytes, 0);
    assert!(mem.usage(&L::Sim(1)).is_none());
    let p = mem.alloc(&L::PinnedHost, 3, None).unwrap();
    assert!(p.is_pinned() && p.is_host_accessible());
    assert_eq!(p.device_ptr(), None);
}

#[test]
fn size_overflow_is_refused() {
    let mem = Memory::host_only();
    let err = mem.alloc(&L::PageableHost, usize::MAX, None).unwrap_err();
    assert!(matches!(err, MemoryError::SizeOverflow { .. }), "{err}");
    assert_eq!(mem.usage(&L::PageableHost).unwrap().allocated_bytes, 0);
}

#[test]
fn copies_in_every_direction_check_every_word() {
    let mem = Memory::with_sim_devices(2);
    let words = 4099;
    for (i, from) in all_locations().into_iter().enumerate() {
        for (j, to) in all_locations().into_iter().enumerate() {
            let data = random_words((i * 10 + j) as u64, words);
            let (src, _) = mem.alloc_from(&from, &data, None).unwrap();
            assert_eq!(src.host_slice().unwrap(), &data[..]);

            // copy_to: a fresh buffer.
            let (dst, ev) = src.copy_to(&mem, &to, None).unwrap();
            assert_eq!(dst.location(), to);
            assert_ne!(dst.storage_key(), src.storage_key());
            assert_eq!(
                ev.is_some(),
                from.is_device() || to.is_device(),
                "{from}->{to}"
            );
            if let Some(ev) = &ev {
                assert!(ev.query().unwrap());
                ev.synchronize().unwrap();
            }
            assert_eq!(dst.to_vec(&mem).unwrap(), data, "{from} -> {to}");

            // copy_from into a poisoned destination.
            let mut dst = poisoned(&mem, to, words);
            dst.copy_from(&mem, &src, None).unwrap();
            let got = dst.host_slice().unwrap();
            for (k, (g, d)) in got.iter().zip(&data).enumerate() {
                assert_eq!(g, d, "{from} -> {to}: word {k}");
            }

            // A range copy compacts exactly the range.
            let (part, _) = src.copy_range_to(&mem, &to, 17, 1000, None).unwrap();
            assert_eq!(part.words(), 1000);
            assert_eq!(part.to_vec(&mem).unwrap(), data[17..1017].to_vec());
        }
    }
}

#[test]
fn copy_errors_change_nothing() {
    let mem = Memory::with_sim_devices(2);
    let data = random_words(7, 64);
    let (src, _) = mem.alloc_from(&L::Sim(0), &data, None).unwrap();
    let before = mem.usage(&L::Sim(1)).unwrap();

    let err = src
        .copy_range_to(&mem, &L::Sim(1), 60, 5, None)
        .unwrap_err();
    assert!(
        matches!(
            err,
            MemoryError::RangeOutOfBounds {
                start: 60,
                len: 5,
                words: 64,
                ..
            }
        ),
        "{err}"
    );
    let err = src.copy_to(&mem, &L::Sim(2), None).unwrap_err();
    assert!(
        matches!(err, MemoryError::LocationUnavailable { .. }),
        "{err}"
    );

    let mut small = mem.alloc(&L::Sim(1), 63, None).unwrap();
    let err = small.copy_from(&mem, &src, None).unwrap_err();
    assert!(
        matches!(
            err,
            MemoryError::SizeMismatch {
                from_bytes: 512,
                to_bytes: 504,
                ..
            }
        ),
        "{err}"
    );
    assert!(small.host_slice().unwrap().iter().all(|w| *w == 0));
    let err = small.write(&mem, &data, None).unwrap_err();
    assert!(matches!(err, MemoryError::SizeMismatch { .. }), "{err}");
    drop(small);
    let after = mem.usage(&L::Sim(1)).unwrap();
    assert_eq!(after.allocated_bytes, before.allocated_bytes);
    assert_eq!(after.live_buffers, before.live_buffers);
    assert_eq!(src.host_slice().unwrap(), &data[..]);
}

#[test]
fn stream_rules() {
    let mem = Memory::with_sim_devices(2);
    let err = mem.stream(&L::PinnedHost).unwrap_err();
    assert!(matches!(err, MemoryError::StreamOnHost { .. }), "{err}");
    let err = mem.stream(&L::Sim(5)).unwrap_err();
    assert!(
        matches!(err, MemoryError::LocationUnavailable { .. }),
        "{err}"
    );

    let s0 = mem.stream(&L::Sim(0)).unwrap();
    let s1 = mem.stream(&L::Sim(1)).unwrap();
    assert_eq!(s0.location(), L::Sim(0));
    assert!(s0.is_simulated());
    assert_ne!(s0, mem.stream(&L::Sim(0)).unwrap());
    assert_eq!(s0, s0.clone());
    assert_eq!(
        mem.default_stream(&L::Sim(0)).unwrap(),
        mem.default_stream(&L::Sim(0)).unwrap()
    );

    let (host, _) = mem.alloc_from(&L::PageableHost, &[1, 2, 3], None).unwrap();
    // Host-to-host copies take no stream.
    let err = host.copy_to(&mem, &L::PinnedHost, Some(&s0)).unwrap_err();
    assert!(
        matches!(
            err,
            MemoryError::StreamMismatch {
                stream: L::Sim(0),
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("synchronous"));
    // A stream of an unrelated device is refused.
    let err = host.copy_to(&mem, &L::Sim(0), Some(&s1)).unwrap_err();
    assert!(matches!(err, MemoryError::StreamMismatch { .. }), "{err}");
    // Either endpoint's stream is accepted.
    let (d0, ev) = host.copy_to(&mem, &L::Sim(0), Some(&s0)).unwrap();
    assert!(ev.unwrap().query().unwrap());
    let (_d1, ev) = d0.copy_to(&mem, &L::Sim(1), Some(&s0)).unwrap();
    let ev = ev.unwrap();
    assert_eq!(ev.location(), L::Sim(0));
    assert_eq!(ev.stream_id(), s0.id());
    assert!(format!("{ev:?} {s0:?}").contains("sim:0"));
    let err = mem.alloc(&L::Sim(1), 4, Some(&s0)).unwrap_err();
    assert!(matches!(err, MemoryError::StreamMismatch { .. }), "{err}");
    let err = mem.alloc(&L::PageableHost, 4, Some(&s0)).unwrap_err();
    assert!(matches!(err, MemoryError::StreamMismatch { .. }), "{err}");
    assert_eq!(mem.usage(&L::Sim(1)).unwrap().allocated_bytes, 8 * 3);
}

#[test]
fn held_events_stay_pending_until_released() {
    let mem = Memory::with_sim_devices(1);
    let s = mem.stream(&L::Sim(0)).unwrap();
    let before = s.record_event().unwrap();
    s.hold().unwrap();
    s.hold().unwrap(); // idempotent
    assert!(s.is_held());
    let data = random_words(1, 256);
    let (dev, ev) = mem.alloc_from(&L::Sim(0), &data, Some(&s)).unwrap();
    let ev = ev.unwrap();
    // The copy ran (simulated memory is host memory) but its event is pending.
    assert_eq!(dev.host_slice().unwrap(), &data[..]);
    assert!(before.query().unwrap(), "recorded before the hold");
    assert!(!ev.query().unwrap());
    assert!(!s.record_event().unwrap().query().unwrap());
    s.release_hold().unwrap();
    assert!(!s.is_held());
    assert!(ev.query().unwrap());
    ev.synchronize().unwrap();
    s.synchronize().unwrap();
    s.release_hold().unwrap(); // releasing an unheld stream changes nothing
    assert!(s.record_event().unwrap().query().unwrap());
}

#[test]
fn stream_waits_inherit_pending_events() {
    let mem = Memory::with_sim_devices(2);
    let a = mem.stream(&L::Sim(0)).unwrap();
    let b = mem.stream(&L::Sim(1)).unwrap();
    a.hold().unwrap();
    let ea = a.record_event().unwrap();
    let b_before = b.record_event().unwrap();
    b.wait_event(&ea).unwrap();
    b.wait_event(&ea).unwrap();
    let eb = b.record_event().unwrap();
    assert!(b_before.query().unwrap());
    assert!(!eb.query().unwrap(), "b waits on a's pending event");
    a.release_hold().unwrap();
    assert!(eb.query().unwrap());
    // A wait on a complete event adds nothing.
    b.wait_event(&ea).unwrap();
    assert!(b.record_event().unwrap().query().unwrap());
}

/// `wait_for(&earlier)`: the work enqueued on `earlier` so far, not what comes later.
#[test]
fn a_stream_waits_for_another_streams_work_so_far() {
    let mem = Memory::with_sim_devices(1);
    let (a, b) = (
        mem.stream(&L::Sim(0)).unwrap(),
        mem.stream(&L::Sim(0)).unwrap(),
    );
    a.hold().unwrap();
    b.wait_for(&a).unwrap();
    let eb = b.record_event().unwrap();
    assert!(!eb.query().unwrap(), "b waits for a's held work");
    a.release_hold().unwrap();
    assert!(eb.query().unwrap());
    // Work held on `a` after the wait does not hold `b`.
    a.hold().unwrap();
    assert!(b.record_event().unwrap().query().unwrap());
    a.release_hold().unwrap();
}

#[test]
fn synchronize_blocks_until_another_thread_releases() {
    let mem = Memory::with_sim_devices(1);
    let s = mem.stream(&L::Sim(0)).unwrap();
    s.hold().unwrap();
    let ev = s.record_event().unwrap();
    let releaser: Stream = s.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(50));
        releaser.release_hold().unwrap();
    });
    let start = std::time::Instant::now();
    ev.synchronize().unwrap();
    assert!(start.elapsed() >= Duration::from_millis(40));
    assert!(ev.query().unwrap());
    t.join().unwrap();
}

#[test]
fn injected_alloc_faults_fire_n_times() {
    let mem = Memory::with_sim_devices(1);
    let f = mem.sim_faults(&L::Sim(0)).unwrap();
    assert_eq!(f.location(), L::Sim(0));
    assert!(mem.sim_faults(&L::Sim(1)).is_none());
    f.fail_next_allocs(2);
    for _ in 0..2 {
        let err = mem.alloc(&L::Sim(0), 16, None).unwrap_err();
        assert_eq!(
            err,
            MemoryError::InjectedAllocFailure {
                location: L::Sim(0),
                bytes: 128
            }
        );
    }
    assert_eq!(f.pending_alloc_failures(), 0);
    assert_eq!(mem.usage(&L::Sim(0)).unwrap().allocated_bytes, 0);
    let ok = mem.alloc(&L::Sim(0), 16, None).unwrap();
    assert_eq!(ok.nbytes(), 128);
    f.fail_next_allocs(3);
    f.clear();
    assert_eq!(f.pending_alloc_failures(), 0);
    mem.alloc(&L::Sim(0), 1, None).unwrap();
    // Pinned allocation can fail too (spec: pinned memory may be unavailable).
    let pf = mem.sim_faults(&L::PinnedHost).unwrap();
    pf.fail_next_allocs(1);
    let (host, _) = mem.alloc_from(&L::PageableHost, &[5; 8], None).unwrap();
    let err = host.copy_to(&mem, &L::PinnedHost, None).unwrap_err();
    assert!(matches!(
        err,
        MemoryError::InjectedAllocFailure {
            location: L::PinnedHost,
            ..
        }
    ));
}

#[test]
fn injected_copy_faults_leave_source_and_accounting_intact() {
    let mem = Memory::with_sim_devices(1);
    let data = random_words(3, 512);
    let (src, _) = mem.alloc_from(&L::PinnedHost, &data, None).unwrap();
    let f = mem.sim_faults(&L::Sim(0)).unwrap();
    f.fail_next_copies(1);
    assert_eq!(f.pending_copy_failures(), 1);
    let err = src.copy_to(&mem, &L::Sim(0), None).unwrap_err();
    assert_eq!(
        err,
        MemoryError::InjectedCopyFailure {
            from: L::PinnedHost,
            to: L::Sim(0),
            bytes: 4096
        }
    );
    assert_eq!(mem.usage(&L::Sim(0)).unwrap().allocated_bytes, 0);
    assert_eq!(mem.usage(&L::Sim(0)).unwrap().live_buffers, 0);
    assert_eq!(src.host_slice().unwrap(), &data[..]);
    let (dst, _) = src.copy_to(&mem, &L::Sim(0), None).unwrap();
    assert_eq!(dst.host_slice().unwrap(), &data[..]);
    assert!(format!("{f:?}").contains("copies=0"));
}

#[test]
fn simulated_capacity_gives_out_of_memory() {
    let mem = Memory::with_sim_devices_capacity(1, 1024);
    let _a = mem.alloc(&L::Sim(0), 100, None).unwrap();
    let err = mem.alloc(&L::Sim(0), 100, None).unwrap_err();
    assert_eq!(
        err,
        MemoryError::OutOfMemory {
            op: "alloc",
            location: L::Sim(0),
            requested_bytes: 800,
            available_bytes: 224
        }
    );
    let _b = mem.alloc(&L::Sim(0), 28, None).unwrap();
    let info = mem.device_info(&L::Sim(0)).unwrap();
    assert_eq!(info.total_bytes, 1024);
    assert_eq!(info.compute_capability, None);
    let err = mem.device_info(&L::PageableHost).unwrap_err();
    assert!(err.to_string().contains("not a device"), "{err}");
}

fn shared(mem: &Memory, loc: L, data: &[u64]) -> Arc<Buffer> {
    Arc::new(mem.alloc_from(&loc, data, None).unwrap().0)
}

#[test]
fn tensors_byte_accounting_aliases_and_views() {
    let mem = Memory::with_sim_devices(2);
    let data = random_words(11, 8);
    let buf = shared(&mem, L::Sim(0), &data);
    // Two fields aliasing one buffer: nbytes is twice the storage.
    let aliased = Tensors::new(vec![
        TensorView::whole(Arc::clone(&buf)),
        TensorView::whole(Arc::clone(&buf)),
    ]);
    assert_eq!(aliased.nbytes(), 128);
    assert_eq!(aliased.storage_nbytes(), 64);
    assert_eq!(aliased.charge_nbytes(), 128);
    assert_eq!(aliased.storage_keys(), vec![buf.storage_key()]);
    // A view smaller than its buffer: storage is larger than nbytes.
    let view = Tensors::new(vec![TensorView::new(Arc::clone(&buf), 2, 4).unwrap()]);
    assert_eq!(view.nbytes(), 32);
    assert_eq!(view.storage_nbytes(), 64);
    assert_eq!(view.charge_nbytes(), 64);
    assert_eq!(view.placement().unwrap(), L::Sim(0));
    assert_eq!(view.type_tag(), "Tensors");
    // Zero-size storages are skipped.
    let empty = shared(&mem, L::Sim(0), &[]);
    let with_empty = Tensors::new(vec![TensorView::whole(empty), TensorView::whole(buf)]);
    assert_eq!(with_empty.storage_keys().len(), 1);
    assert_eq!(with_empty.storage_nbytes(), 64);

    // Materialize compacts: aliases become independent, views shrink to their length.
    for to in all_locations() {
        let m = aliased.materialize(&mem, &to, None).unwrap();
        let v = m.value;
        assert_eq!(v.placement().unwrap(), to);
        assert_eq!(v.nbytes(), 128);
        assert_eq!(v.storage_nbytes(), 128);
        assert_eq!(v.storage_keys().len(), 2);
        assert_eq!(v.to_vecs(&mem).unwrap(), vec![data.clone(), data.clone()]);
        let m = view.materialize(&mem, &to, None).unwrap();
        assert!(
            m.ready.is_some(),
            "the source is on sim:0, so a stream was used"
        );
        let v = m.wait().unwrap();
        assert_eq!((v.nbytes(), v.storage_nbytes()), (32, 32));
        assert_eq!(v.to_vecs(&mem).unwrap(), vec![data[2..6].to_vec()]);
        assert!(v
            .storage_keys()
            .iter()
            .all(|k| !view.storage_keys().contains(k)));
    }
}

#[test]
fn tensors_placement_errors() {
    let mem = Memory::with_sim_devices(2);
    let err = Tensors::default().placement().unwrap_err();
    assert_eq!(
        err,
        MemoryError::EmptyValue {
            type_tag: "Tensors"
        }
    );
    let mixed = Tensors::new(vec![
        TensorView::whole(shared(&mem, L::PageableHost, &[1])),
        TensorView::whole(shared(&mem, L::PinnedHost, &[2])),
    ]);
    let err = mixed.placement().unwrap_err();
    assert_eq!(
        err,
        MemoryError::MixedPinning {
            type_tag: "Tensors"
        }
    );
    assert!(err.to_string().contains("mixes pageable and pinned"));
    let before = mem.usage(&L::Sim(0)).unwrap();
    let err = mixed.materialize(&mem, &L::Sim(0), None).unwrap_err();
    assert!(matches!(err, MemoryError::MixedPinning { .. }));
    assert_eq!(mem.usage(&L::Sim(0)).unwrap(), before);
    let split = Tensors::new(vec![
        TensorView::whole(shared(&mem, L::Sim(0), &[1])),
        TensorView::whole(shared(&mem, L::Sim(1), &[2])),
    ]);
    let err = split.placement().unwrap_err();
    assert_eq!(
        err,
        MemoryError::PlacementDisagrees {
            type_tag: "Tensors",
            first: L::Sim(0),
            other: L::Sim(1)
        }
    );
    let ok = Tensors::new(vec![TensorView::whole(shared(&mem, L::Sim(0), &[1]))]);
    let err = ok.materialize(&mem, &L::Sim(3), None).unwrap_err();
    assert!(
        matches!(err, MemoryError::LocationUnavailable { .. }),
        "{err}"
    );
    let err = TensorView::new(shared(&mem, L::Sim(0), &[1, 2]), 1, 2).unwrap_err();
    assert!(matches!(err, MemoryError::RangeOutOfBounds { .. }), "{err}");
}

#[test]
fn tensors_materialize_failing_midway_frees_partial_work() {
    // Room for the first view (300 words) only.
    let mem = Memory::with_sim_devices_capacity(1, 300 * 8 + 100);
    let a = random_words(20, 300);
    let b = random_words(21, 200);
    let t = Tensors::upload(&mem, &L::PageableHost, &[&a, &b], None)
        .unwrap()
        .value;
    assert_eq!(t.len(), 2);
    assert!(!t.is_empty());
    let s = mem.stream(&L::Sim(0)).unwrap();
    let err = t.materialize(&mem, &L::Sim(0), Some(&s)).unwrap_err();
    assert!(
        matches!(
            err,
            MemoryError::OutOfMemory {
                requested_bytes: 1600,
                available_bytes: 100,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(mem.usage(&L::Sim(0)).unwrap().allocated_bytes, 0);
    // A copy fault fires on the first view; nothing stays allocated either.
    let f = mem.sim_faults(&L::Sim(0)).unwrap();
    f.fail_next_copies(1);
    let one = Tensors::new(vec![t.views()[0].clone()]);
    let err = one.materialize(&mem, &L::Sim(0), Some(&s)).unwrap_err();
    assert!(
        matches!(err, MemoryError::InjectedCopyFailure { .. }),
        "{err}"
    );
    assert_eq!(mem.usage(&L::Sim(0)).unwrap().allocated_bytes, 0);
    let m = one.materialize(&mem, &L::Sim(0), Some(&s)).unwrap();
    assert_eq!(m.value.to_vecs(&mem).unwrap(), vec![a]);
}

#[test]
fn bounded_waits_on_held_events_time_out_with_a_typed_error() {
    let mem = Memory::with_sim_devices(1);
    let s = mem.stream(&L::Sim(0)).unwrap();
    s.hold().unwrap();
    let ev = s.record_event().unwrap();
    let err = ev
        .synchronize_within(Duration::from_millis(30))
        .unwrap_err();
    assert_eq!(
        err,
        MemoryError::HoldTimeout {
            op: "event synchronize",
            location: L::Sim(0),
            millis: 30
        }
    );
    assert!(err.to_string().contains("released"), "{err}");
    assert!(!ev.query().unwrap(), "a timed-out wait changes nothing");
    s.release_hold().unwrap();
    ev.synchronize_within(Duration::from_millis(30)).unwrap();
}

/// Streams refused on host locations and a stream of another device given to `alloc` name the
/// operation, the location and what was expected, and debit nothing.
#[test]
fn stream_refusals_name_every_field_and_debit_nothing() {
    let mem = Memory::with_sim_devices(2);
    for loc in [L::PageableHost, L::PinnedHost] {
        let want = MemoryError::StreamOnHost {
            op: "stream",
            location: loc,
        };
        assert_eq!(mem.stream(&loc).unwrap_err(), want);
        assert_eq!(mem.default_stream(&loc).unwrap_err(), want);
    }
    let s0 = mem.stream(&L::Sim(0)).unwrap();
    for loc in [L::Sim(1), L::PageableHost, L::PinnedHost] {
        assert_eq!(
            mem.alloc(&loc, 4, Some(&s0)).unwrap_err(),
            MemoryError::StreamMismatch {
                op: "alloc",
                stream: L::Sim(0),
                expected: format!("a stream of {loc}"),
            }
        );
    }
    let (host, _) = mem.alloc_from(&L::PageableHost, &[1, 2, 3], None).unwrap();
    assert_eq!(
        host.copy_to(&mem, &L::PinnedHost, Some(&s0)).unwrap_err(),
        MemoryError::StreamMismatch {
            op: "copy",
            stream: L::Sim(0),
            expected:
                "no stream: the host-to-host copy pageable-host -> pinned-host is synchronous"
                    .to_owned(),
        }
    );
    let s1 = mem.stream(&L::Sim(1)).unwrap();
    assert_eq!(
        host.copy_to(&mem, &L::Sim(0), Some(&s1)).unwrap_err(),
        MemoryError::StreamMismatch {
            op: "copy",
            stream: L::Sim(1),
            expected: "a stream of a device endpoint of the copy pageable-host -> sim:0".to_owned(),
        }
    );
    let mut dst = poisoned(&mem, L::Sim(0), 3);
    assert_eq!(
        dst.write(&mem, &[7, 8, 9], Some(&s1)).unwrap_err(),
        MemoryError::StreamMismatch {
            op: "write",
            stream: L::Sim(1),
            expected: "a stream of a device endpoint of the copy pageable-host -> sim:0".to_owned(),
        }
    );
    assert_eq!(dst.host_slice().unwrap(), &[POISON; 3]);
    // Only the three-word source and the poisoned destination are allocated.
    assert_eq!(mem.usage(&L::Sim(0)).unwrap().allocated_bytes, 24);
    for loc in [L::Sim(1), L::PinnedHost] {
        let u = mem.usage(&loc).unwrap();
        assert_eq!((u.allocated_bytes, u.live_buffers), (0, 0), "{loc}");
    }
}

/// A word count whose byte count overflows u64 or isize is `SizeOverflow` naming the words and
/// the location, with nothing debited.
#[test]
fn size_overflow_names_the_words_and_the_location() {
    let mem = Memory::with_sim_devices(1);
    let past_isize = (isize::MAX as usize) / 8 + 1;
    for (loc, words) in [
        (L::PageableHost, usize::MAX),
        (L::PinnedHost, usize::MAX / 8 + 1),
        (L::Sim(0), past_isize),
    ] {
        assert_eq!(
            mem.alloc(&loc, words, None).unwrap_err(),
            MemoryError::SizeOverflow {
                op: "alloc",
                location: loc,
                words
            }
        );
        let u = mem.usage(&loc).unwrap();
        assert_eq!((u.allocated_bytes, u.live_buffers), (0, 0), "{loc}");
    }
}

/// A host allocation the system cannot satisfy (4 EiB) is `OutOfMemory` with nothing available,
/// and the location's bytes and live buffers are restored; the next allocation works.
#[test]
fn a_host_allocation_the_system_refuses_is_out_of_memory_and_undone() {
    let mem = Memory::with_sim_devices(1);
    let words = 1usize << 59;
    for loc in [L::PageableHost, L::PinnedHost, L::Sim(0)] {
        assert_eq!(
            mem.alloc(&loc, words, None).unwrap_err(),
            MemoryError::OutOfMemory {
                op: "alloc",
                location: loc,
                requested_bytes: 1 << 62,
                available_bytes: 0,
            }
        );
        let u = mem.usage(&loc).unwrap();
        // The refused bytes were never allocated, so they are no peak either.
        assert_eq!(
            (u.allocated_bytes, u.live_buffers, u.peak_bytes),
            (0, 0, 0),
            "{loc}"
        );
        let ok = mem.alloc(&loc, 16, None).unwrap();
        let u = mem.usage(&loc).unwrap();
        assert_eq!((u.allocated_bytes, u.peak_bytes), (128, 128), "{loc}");
        drop(ok);
    }
}

/// `write` and `copy_from` with a source of another size name both ends and both byte counts,
/// and leave the destination as it was.
#[test]
fn size_mismatches_name_both_ends_and_leave_the_destination() {
    let mem = Memory::with_sim_devices(2);
    let mut dst = poisoned(&mem, L::Sim(1), 8);
    assert_eq!(
        dst.write(&mem, &[1; 9], None).unwrap_err(),
        MemoryError::SizeMismatch {
            op: "write",
            from: L::PageableHost,
            to: L::Sim(1),
            from_bytes: 72,
            to_bytes: 64,
        }
    );
    let (src, _) = mem.alloc_from(&L::Sim(0), &[5; 7], None).unwrap();
    assert_eq!(
        dst.copy_from(&mem, &src, None).unwrap_err(),
        MemoryError::SizeMismatch {
            op: "copy_from",
            from: L::Sim(0),
            to: L::Sim(1),
            from_bytes: 56,
            to_bytes: 64,
        }
    );
    assert_eq!(dst.host_slice().unwrap(), &[POISON; 8]);
    assert_eq!(src.host_slice().unwrap(), &[5; 7]);
}

/// Ranges past the end of a buffer, including ranges whose end overflows `usize`, are
/// `RangeOutOfBounds` naming the buffer's location and words (no panic, nothing allocated).
#[test]
fn out_of_range_and_overflowing_ranges_are_refused_with_every_field() {
    let mem = Memory::with_sim_devices(2);
    let data = random_words(12, 64);
    let src = shared(&mem, L::Sim(0), &data);
    for (start, len) in [(usize::MAX, 2), (1, usize::MAX), (65, 0), (0, 65)] {
        assert_eq!(
            src.copy_range_to(&mem, &L::Sim(1), start, len, None)
                .unwrap_err(),
            MemoryError::RangeOutOfBounds {
                op: "copy",
                location: L::Sim(0),
                start,
                len,
                words: 64,
            }
        );
        assert_eq!(
            TensorView::new(Arc::clone(&src), start, len).unwrap_err(),
            MemoryError::RangeOutOfBounds {
                op: "TensorView::new",
                location: L::Sim(0),
                start,
                len,
                words: 64,
            }
        );
    }
    let u = mem.usage(&L::Sim(1)).unwrap();
    assert_eq!((u.allocated_bytes, u.live_buffers), (0, 0));
    assert_eq!(src.host_slice().unwrap(), &data[..]);
    // The last word and an empty range at the end are in bounds.
    let (last, _) = src.copy_range_to(&mem, &L::Sim(1), 63, 1, None).unwrap();
    assert_eq!(last.host_slice().unwrap(), &data[63..]);
    assert!(TensorView::new(src, 64, 0).unwrap().is_empty());
}

/// Locations this memory does not have (another memory's device, CUDA without CUDA) and host
/// locations asked for device facts are `LocationUnavailable` naming the operation, the
/// location and why; the buffers involved are unchanged.
#[test]
fn unavailable_locations_name_the_operation_and_the_reason() {
    let mem = Memory::host_only();
    assert_eq!(
        mem.device_info(&L::PinnedHost).unwrap_err(),
        MemoryError::LocationUnavailable {
            op: "device_info",
            location: L::PinnedHost,
            reason: "not a device location".to_owned(),
        }
    );
    assert_eq!(
        mem.device_info(&L::Sim(0)).unwrap_err(),
        MemoryError::LocationUnavailable {
            op: "device_info",
            location: L::Sim(0),
            reason: "this memory has 0 simulated device(s)".to_owned(),
        }
    );
    for (op, err) in [
        ("stream", mem.stream(&L::Cuda(0)).unwrap_err()),
        ("alloc", mem.alloc(&L::Cuda(3), 1, None).unwrap_err()),
        ("device_info", mem.device_info(&L::Cuda(0)).unwrap_err()),
    ] {
        match err {
            MemoryError::LocationUnavailable {
                op: o,
                location: L::Cuda(_),
                reason,
            } => {
                assert_eq!(o, op);
                assert!(reason.contains("require available CUDA"), "{reason}");
            }
            other => panic!("{op}: {other:?}"),
        }
    }

    // Buffers of a memory with two simulated devices, used with the host-only memory.
    let other = Memory::with_sim_devices(2);
    let data = random_words(13, 16);
    let (src, _) = other.alloc_from(&L::Sim(1), &data, None).unwrap();
    let missing = |op: &'static str| MemoryError::LocationUnavailable {
        op,
        location: L::Sim(1),
        reason: "this memory has 0 simulated device(s)".to_owned(),
    };
    assert_eq!(
        src.copy_to(&mem, &L::PageableHost, None).unwrap_err(),
        missing("copy")
    );
    let mut host = mem.alloc(&L::PageableHost, 16, None).unwrap();
    assert_eq!(
        host.copy_from(&mem, &src, None).unwrap_err(),
        missing("copy_from")
    );
    let mut dev = poisoned(&other, L::Sim(1), 16);
    assert_eq!(dev.write(&mem, &data, None).unwrap_err(), missing("write"));
    let t = Tensors::new(vec![TensorView::whole(Arc::new(src))]);
    assert_eq!(
        t.materialize(&other, &L::Sim(2), None).unwrap_err(),
        MemoryError::LocationUnavailable {
            op: "materialize",
            location: L::Sim(2),
            reason: "this memory has 2 simulated device(s)".to_owned(),
        }
    );
    assert!(host.host_slice().unwrap().iter().all(|w| *w == 0));
    assert_eq!(dev.host_slice().unwrap(), &[POISON; 16]);
    assert_eq!(t.to_vecs(&other).unwrap(), vec![data]);
    assert_eq!(mem.usage(&L::PageableHost).unwrap().live_buffers, 1);
}

/// The unbounded waits (`Stream::synchronize`, `Event::synchronize`) on a hold never released
/// give up after [`fhelium_cuda::SIM_HOLD_TIMEOUT`] (30 s) with `HoldTimeout` naming the wait
/// and the device, and leave the event pending.
#[test]
fn unbounded_waits_on_a_hold_never_released_time_out_after_the_default_limit() {
    let mem = Memory::with_sim_devices(1);
    let s = mem.stream(&L::Sim(0)).unwrap();
    s.hold().unwrap();
    let ev = s.record_event().unwrap();
    let millis = u64::try_from(fhelium_cuda::SIM_HOLD_TIMEOUT.as_millis()).unwrap();
    let (stream_err, event_err) = std::thread::scope(|scope| {
        let a = scope.spawn(|| s.synchronize().unwrap_err());
        let b = scope.spawn(|| ev.synchronize().unwrap_err());
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!(
        stream_err,
        MemoryError::HoldTimeout {
            op: "stream synchronize",
            location: L::Sim(0),
            millis
        }
    );
    assert_eq!(
        event_err,
        MemoryError::HoldTimeout {
            op: "event synchronize",
            location: L::Sim(0),
            millis
        }
    );
    assert!(!ev.query().unwrap() && s.is_held());
    s.release_hold().unwrap();
    s.synchronize().unwrap();
    ev.synchronize().unwrap();
}
