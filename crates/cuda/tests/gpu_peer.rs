//! Device-to-device copies on real CUDA devices: peer links, same-device copies, the staged
//! fallback through page-locked host memory (forced with `copy_from_staged` and
//! `PeerMode::Staged`), and, with two or more GPUs, the real peer copy.
//!
//! Built only with feature `cuda`. Without a CUDA device each test prints why and passes,
//! unless `FHELIUM_REQUIRE_GPU=1` makes that a failure. Tests that need two devices print why
//! they skip on a one-GPU machine, unless `FHELIUM_REQUIRE_GPUS=2` (or more) makes that a
//! failure.
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use fhelium_cuda::{
    Buffer, Memory, MemoryConfig, MemoryError, PeerMode, PeerPath, ResidencyLocation as L,
    Resident, TensorView, Tensors,
};
use rand::{Rng, SeedableRng};

const POISON: u64 = 0xA5A5_5A5A_DEAD_BEEF;
const WORDS: usize = 1 << 20; // 8 MiB

fn memory_or_skip(peer: PeerMode) -> Option<Memory> {
    let required = std::env::var("FHELIUM_REQUIRE_GPU").is_ok_and(|v| v == "1");
    match Memory::new(&MemoryConfig {
        sim_devices: 1,
        cuda: true,
        peer,
        ..MemoryConfig::default()
    }) {
        Ok(m) => Some(m),
        Err(e) => {
            assert!(!required, "FHELIUM_REQUIRE_GPU=1 but no CUDA device: {e}");
            eprintln!("skipped: no CUDA device available ({e})");
            None
        }
    }
}

/// True when the machine has at least two devices; otherwise prints why the caller skips
/// (or fails under `FHELIUM_REQUIRE_GPUS=N`, N >= 2).
fn two_devices(mem: &Memory, test: &str) -> bool {
    let need: u8 = std::env::var("FHELIUM_REQUIRE_GPUS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let have = mem.cuda_device_count();
    assert!(
        have >= need,
        "FHELIUM_REQUIRE_GPUS={need} but the machine has {have} CUDA device(s)"
    );
    if have < 2 {
        eprintln!("{test}: skipped the two-device part: {have} CUDA device(s) visible");
    }
    have >= 2
}

fn random_words(seed: u64, n: usize) -> Vec<u64> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.random::<u64>()).collect()
}

fn uploaded(mem: &Memory, loc: L, data: &[u64]) -> Buffer {
    let (b, ev) = mem.alloc_from(&loc, data, None).unwrap();
    if let Some(ev) = ev {
        ev.synchronize().unwrap();
    }
    b
}

fn check_words(got: &[u64], want: &[u64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(k) = got.iter().zip(want).position(|(g, w)| g != w) {
        panic!("{what}: word {k} differs: {:#x} != {:#x}", got[k], want[k]);
    }
}

#[test]
fn links_record_the_hardware_answer() {
    let Some(mem) = memory_or_skip(PeerMode::Auto) else {
        return;
    };
    let n = mem.cuda_device_count();
    for i in 0..n {
        let same = mem.peer_link(&L::Cuda(i), &L::Cuda(i)).unwrap();
        assert_eq!(same.path, PeerPath::SameDevice);
        assert!(
            !same.can_access_peer && !mem.can_access_peer(&L::Cuda(i), &L::Cuda(i)),
            "a device is not its own peer: {same:?}"
        );
    }
    let links = mem.peer_links();
    let cuda_links: Vec<_> = links
        .iter()
        .filter(|l| matches!(l.from, L::Cuda(_)))
        .collect();
    assert_eq!(
        cuda_links.len(),
        usize::from(n) * usize::from(n).saturating_sub(1)
    );
    for l in &cuda_links {
        assert_eq!(l.path == PeerPath::Direct, l.peer_enabled, "{l:?}");
        assert!(!l.peer_enabled || l.can_access_peer, "{l:?}");
        eprintln!(
            "peer link {} -> {}: can_access_peer={} enabled={} path={}",
            l.from, l.to, l.can_access_peer, l.peer_enabled, l.path
        );
    }
    // sim:N and cuda:M are not peers (a simulated device's memory is host memory).
    let e = mem.peer_link(&L::Sim(0), &L::Cuda(0)).unwrap_err();
    assert!(matches!(e, MemoryError::NotAPeerPair { .. }), "{e}");
    // Staged mode never enables peer access.
    let staged = memory_or_skip(PeerMode::Staged).unwrap();
    assert!(staged
        .peer_links()
        .iter()
        .all(|l| l.path == PeerPath::Staged && !l.peer_enabled));
}

#[test]
fn same_device_copy_and_forced_staged_fallback() {
    let Some(mem) = memory_or_skip(PeerMode::Auto) else {
        return;
    };
    let dev = L::Cuda(0);
    let data = random_words(1, WORDS);
    let src = uploaded(&mem, dev, &data);
    // The same-device path (cuMemcpyDtoDAsync).
    let (copy, ev) = src.copy_to(&mem, &dev, None).unwrap();
    ev.unwrap().synchronize().unwrap();
    check_words(&copy.to_vec(&mem).unwrap(), &data, "same-device copy");
    let st = mem.peer_copy_stats();
    assert_eq!(st.same_device_copies, 1);
    assert_eq!(st.same_device_bytes, WORDS as u64 * 8);

    // The staged fallback, forced: device -> pinned -> device, two async copies + events.
    let s = mem.stream(&dev).unwrap();
    let mut dst = uploaded(&mem, dev, &vec![POISON; WORDS]);
    let pinned_before = mem.usage(&L::PinnedHost).unwrap().allocated_bytes;
    let ev = dst.copy_from_staged(&mem, &src, Some(&s)).unwrap().unwrap();
    assert_eq!(ev.location(), dev);
    ev.synchronize().unwrap();
    check_words(
        &dst.to_vec(&mem).unwrap(),
        &data,
        "staged copy on one device",
    );
    let st = mem.peer_copy_stats();
    assert_eq!((st.staged_copies, st.staged_bytes), (1, WORDS as u64 * 8));
    assert_eq!(st.staging_allocations, 1);
    assert_eq!(
        mem.usage(&L::PinnedHost).unwrap().allocated_bytes,
        pinned_before + WORDS as u64 * 8,
        "the staging buffer is page-locked memory of this Memory"
    );
    // Ordering: a write enqueued on the given stream lands before the staged copy reads.
    let mut src2 = uploaded(&mem, dev, &vec![0; WORDS]);
    let data2 = random_words(2, WORDS);
    let (pinned2, _) = mem.alloc_from(&L::PinnedHost, &data2, None).unwrap();
    src2.copy_from(&mem, &pinned2, Some(&s)).unwrap();
    let ev = dst
        .copy_from_staged(&mem, &src2, Some(&s))
        .unwrap()
        .unwrap();
    ev.synchronize().unwrap();
    check_words(
        &dst.to_vec(&mem).unwrap(),
        &data2,
        "staged copy after a write",
    );
    assert_eq!(
        mem.peer_copy_stats().staging_allocations,
        1,
        "completed staging buffer reused"
    );
    assert_eq!(mem.trim_staging(), 1);
    assert_eq!(
        mem.usage(&L::PinnedHost).unwrap().allocated_bytes,
        pinned_before + WORDS as u64 * 8,
        "only pinned2 remains"
    );
}

#[test]
fn staged_faults_name_the_hop() {
    let Some(mem) = memory_or_skip(PeerMode::Auto) else {
        return;
    };
    let dev = L::Cuda(0);
    let data = random_words(3, 4096);
    let src = uploaded(&mem, dev, &data);
    let mut dst = uploaded(&mem, dev, &vec![POISON; 4096]);
    mem.sim_faults(&L::PinnedHost).unwrap().fail_next_copies(1);
    let e = dst.copy_from_staged(&mem, &src, None).unwrap_err();
    assert!(
        matches!(
            &e,
            MemoryError::PeerCopy { from: L::Cuda(0), to: L::Cuda(0), bytes: 32768, stage: "device to pinned host", cause, .. }
                if matches!(**cause, MemoryError::InjectedCopyFailure { to: L::PinnedHost, .. })
        ),
        "{e}"
    );
    check_words(
        &dst.to_vec(&mem).unwrap(),
        &[POISON; 4096],
        "untouched after a failed hop",
    );
    mem.sim_faults(&dev).unwrap().fail_next_copies(1);
    let e = dst.copy_from_staged(&mem, &src, None).unwrap_err();
    assert_eq!(
        e,
        MemoryError::InjectedCopyFailure {
            from: dev,
            to: dev,
            bytes: 32768
        }
    );
    dst.copy_from_staged(&mem, &src, None)
        .unwrap()
        .unwrap()
        .synchronize()
        .unwrap();
    check_words(&dst.to_vec(&mem).unwrap(), &data, "after recovery");
}

#[test]
fn copies_between_two_devices_on_every_path() {
    for mode in [PeerMode::Auto, PeerMode::Staged] {
        let Some(mem) = memory_or_skip(mode) else {
            return;
        };
        if !two_devices(&mem, "copies_between_two_devices_on_every_path") {
            return;
        }
        let link = mem.peer_link(&L::Cuda(0), &L::Cuda(1)).unwrap();
        let expect = if mode == PeerMode::Staged {
            PeerPath::Staged
        } else {
            link.path
        };
        assert_eq!(link.path, expect);
        let data = random_words(4, WORDS);
        let a = uploaded(&mem, L::Cuda(0), &data);
        // Default streams, then a given stream on the source and on the destination.
        let (b, ev) = a.copy_to(&mem, &L::Cuda(1), None).unwrap();
        ev.unwrap().synchronize().unwrap();
        check_words(&b.to_vec(&mem).unwrap(), &data, "cuda:0 -> cuda:1");
        let s0 = mem.stream(&L::Cuda(0)).unwrap();
        let (c, ev) = b.copy_to(&mem, &L::Cuda(0), Some(&s0)).unwrap();
        ev.unwrap().synchronize().unwrap();
        check_words(&c.to_vec(&mem).unwrap(), &data, "cuda:1 -> cuda:0");
        let s1 = mem.stream(&L::Cuda(1)).unwrap();
        let (d, ev) = c.copy_to(&mem, &L::Cuda(1), Some(&s1)).unwrap();
        ev.unwrap().synchronize().unwrap();
        check_words(&d.to_vec(&mem).unwrap(), &data, "cuda:0 -> cuda:1 on s1");
        let st = mem.peer_copy_stats();
        let n = if expect == PeerPath::Staged {
            st.staged_copies
        } else {
            st.direct_copies
        };
        assert_eq!(n, 3, "{mode:?}: {st:?}");
        // Values move between devices through Resident::materialize.
        let buf = Arc::new(uploaded(&mem, L::Cuda(1), &data));
        let t = Tensors::new(vec![
            TensorView::new(Arc::clone(&buf), 0, WORDS / 2).unwrap(),
            TensorView::whole(buf),
        ]);
        let moved = t
            .materialize(&mem, &L::Cuda(0), None)
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(moved.placement().unwrap(), L::Cuda(0));
        let v = moved.to_vecs(&mem).unwrap();
        check_words(&v[0], &data[..WORDS / 2], "materialized view 0");
        check_words(&v[1], &data, "materialized view 1");
        eprintln!("{mode:?}: cuda:0 <-> cuda:1 via {expect}: {st:?}");
    }
}

#[test]
fn device_values_materialize_on_a_sim_device_and_back() {
    let Some(mem) = memory_or_skip(PeerMode::Auto) else {
        return;
    };
    let data = random_words(5, 10_000);
    let t = Tensors::upload(&mem, &L::Cuda(0), &[&data[..]], None)
        .unwrap()
        .wait()
        .unwrap();
    let on_sim = t
        .materialize(&mem, &L::Sim(0), None)
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(on_sim.to_vecs(&mem).unwrap()[0], data);
    let back = on_sim
        .materialize(&mem, &L::Cuda(0), None)
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(back.to_vecs(&mem).unwrap()[0], data);
    let st = mem.peer_copy_stats();
    assert_eq!(
        st.direct_copies + st.staged_copies,
        0,
        "uploads/downloads are not peer copies"
    );
}
