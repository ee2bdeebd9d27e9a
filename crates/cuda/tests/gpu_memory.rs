//! The CUDA backend on a real device: buffers, pool, every copy direction, events and stream
//! waits, module load and launch.
//!
//! Built only with feature `cuda`. Without a CUDA device each test prints why and passes,
//! unless `FHELIUM_REQUIRE_GPU=1` (set by the GPU bundle's run-all.sh) makes that a failure.
#![cfg(feature = "cuda")]
#![allow(clippy::unwrap_used, unsafe_code)]

use std::sync::Arc;

use fhelium_cuda::{
    Buffer, DeviceAllocMode, KernelArg, LaunchConfig, Memory, MemoryConfig, MemoryError,
    ResidencyLocation as L, Resident, TensorView, Tensors,
};
use rand::{Rng, SeedableRng};

const POISON: u64 = 0xA5A5_5A5A_DEAD_BEEF;

fn memory_or_skip(config: &MemoryConfig) -> Option<Memory> {
    let required = std::env::var("FHELIUM_REQUIRE_GPU").is_ok_and(|v| v == "1");
    match Memory::new(config) {
        Ok(m) => Some(m),
        Err(e) => {
            assert!(!required, "FHELIUM_REQUIRE_GPU=1 but no CUDA device: {e}");
            eprintln!("skipped: no CUDA device available ({e})");
            None
        }
    }
}

fn cuda_config(sim: u8, mode: DeviceAllocMode) -> MemoryConfig {
    MemoryConfig {
        sim_devices: sim,
        cuda: true,
        device_alloc: mode,
        ..MemoryConfig::default()
    }
}

fn random_words(seed: u64, n: usize) -> Vec<u64> {
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    (0..n).map(|_| rng.random::<u64>()).collect()
}

fn poisoned(mem: &Memory, loc: L, words: usize) -> Buffer {
    let (b, ev) = mem.alloc_from(&loc, &vec![POISON; words], None).unwrap();
    if let Some(ev) = ev {
        ev.synchronize().unwrap();
    }
    b
}

fn check_words(got: &[u64], want: &[u64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{what}: word {k}");
    }
}

#[test]
fn device_info_and_inventory() {
    let Some(mem) = memory_or_skip(&cuda_config(0, DeviceAllocMode::Pool)) else {
        return;
    };
    assert!(mem.cuda_device_count() >= 1);
    assert!(mem.is_available(&L::Cuda(0)));
    assert!(!mem.is_available(&L::Cuda(mem.cuda_device_count())));
    assert!(mem.pinned_is_page_locked());
    let info = mem.device_info(&L::Cuda(0)).unwrap();
    assert!(!info.name.is_empty());
    assert!(info.total_bytes > 1 << 30);
    let (major, _) = info.compute_capability.unwrap();
    assert!(major >= 7, "{info:?}");
    eprintln!("cuda:0 = {info:?}");
    let err = mem.stream(&L::Cuda(mem.cuda_device_count())).unwrap_err();
    assert!(
        matches!(err, MemoryError::LocationUnavailable { .. }),
        "{err}"
    );
}

#[test]
fn pooled_and_plain_device_buffers() {
    for mode in [DeviceAllocMode::Pool, DeviceAllocMode::Plain] {
        let Some(mem) = memory_or_skip(&cuda_config(0, mode)) else {
            return;
        };
        let s = mem.stream(&L::Cuda(0)).unwrap();
        let a = mem.alloc(&L::Cuda(0), 1 << 18, Some(&s)).unwrap();
        let b = mem.alloc(&L::Cuda(0), 1 << 18, None).unwrap();
        assert!(!a.is_host_accessible());
        assert!(a.host_slice().is_none());
        assert_ne!(a.device_ptr().unwrap(), b.device_ptr().unwrap());
        assert_eq!(a.storage_key().location, L::Cuda(0));
        assert_eq!(mem.usage(&L::Cuda(0)).unwrap().allocated_bytes, 2 << 21);
        drop((a, b));
        assert_eq!(mem.usage(&L::Cuda(0)).unwrap().allocated_bytes, 0);
        // Many alloc/free rounds on one stream reuse the pool without growing.
        for _ in 0..1000 {
            let x = mem.alloc(&L::Cuda(0), 1 << 18, Some(&s)).unwrap();
            drop(x);
        }
        s.synchronize().unwrap();
        // Zero-word buffers are legal and own no storage.
        let z = mem.alloc(&L::Cuda(0), 0, Some(&s)).unwrap();
        assert_eq!(z.nbytes(), 0);
        // Injected faults work on CUDA locations too.
        mem.sim_faults(&L::Cuda(0)).unwrap().fail_next_allocs(1);
        let err = mem.alloc(&L::Cuda(0), 8, None).unwrap_err();
        assert!(
            matches!(err, MemoryError::InjectedAllocFailure { .. }),
            "{err}"
        );
        // An absurd request is a typed out-of-memory error, not a crash.
        let err = mem.alloc(&L::Cuda(0), 1 << 50, Some(&s)).unwrap_err();
        assert!(
            matches!(
                err,
                MemoryError::OutOfMemory { .. } | MemoryError::Cuda { .. }
            ),
            "{err}"
        );
        assert_eq!(mem.usage(&L::Cuda(0)).unwrap().allocated_bytes, 0);
        eprintln!("{mode:?}: ok");
    }
}

#[test]
fn copies_in_every_direction_check_every_word() {
    let Some(mem) = memory_or_skip(&cuda_config(1, DeviceAllocMode::Pool)) else {
        return;
    };
    let mut locs = vec![L::PageableHost, L::PinnedHost, L::Sim(0)];
    for i in 0..mem.cuda_device_count().min(2) {
        locs.push(L::Cuda(i));
    }
    let words = (1 << 20) + 3; // 8 MiB and an odd tail
    let mut pairs = 0;
    for (i, from) in locs.iter().enumerate() {
        for (j, to) in locs.iter().enumerate() {
            let data = random_words((i * 16 + j) as u64, words);
            let (src, ev) = mem.alloc_from(from, &data, None).unwrap();
            if let Some(ev) = ev {
                ev.synchronize().unwrap();
            }
            // Fresh destination through copy_to, on the default stream.
            let (dst, ev) = src.copy_to(&mem, to, None).unwrap();
            assert_eq!(dst.location(), *to);
            if let Some(ev) = &ev {
                ev.synchronize().unwrap();
                assert!(ev.query().unwrap());
            }
            check_words(
                &dst.to_vec(&mem).unwrap(),
                &data,
                &format!("{from}->{to} copy_to"),
            );

            // Poisoned destination through copy_from, on an explicit stream when one applies.
            let mut dst = poisoned(&mem, *to, words);
            let stream = [*to, *from]
                .into_iter()
                .find(|l| matches!(l, L::Cuda(_)))
                .map(|l| mem.stream(&l).unwrap());
            let ev = dst.copy_from(&mem, &src, stream.as_ref()).unwrap();
            if let Some(ev) = ev {
                ev.synchronize().unwrap();
            }
            check_words(
                &dst.to_vec(&mem).unwrap(),
                &data,
                &format!("{from}->{to} copy_from"),
            );

            // A range copy lands exactly the range.
            let (part, ev) = src.copy_range_to(&mem, to, 5, 4096, None).unwrap();
            if let Some(ev) = ev {
                ev.synchronize().unwrap();
            }
            check_words(
                &part.to_vec(&mem).unwrap(),
                &data[5..4101],
                &format!("{from}->{to} range"),
            );
            pairs += 1;
        }
    }
    eprintln!("{pairs} location pairs checked, {words} words each");
}

#[test]
fn pinned_destinations_are_fenced_until_the_copy_lands() {
    let Some(mem) = memory_or_skip(&cuda_config(0, DeviceAllocMode::Pool)) else {
        return;
    };
    let words = 4 << 20; // 32 MiB, long enough to still be in flight
    let data = random_words(99, words);
    let (dev, ev) = mem.alloc_from(&L::Cuda(0), &data, None).unwrap();
    ev.unwrap().synchronize().unwrap();
    let s = mem.stream(&L::Cuda(0)).unwrap();
    let (pinned, _ev) = dev.copy_to(&mem, &L::PinnedHost, Some(&s)).unwrap();
    // No explicit wait: host_slice waits for the fence itself.
    check_words(pinned.host_slice().unwrap(), &data, "fenced pinned read");
    // And a pinned source is fenced against host writes.
    let mut src = poisoned(&mem, L::PinnedHost, words);
    src.host_slice_mut().unwrap().copy_from_slice(&data);
    let mut dst = poisoned(&mem, L::Cuda(0), words);
    dst.copy_from(&mem, &src, Some(&s)).unwrap();
    src.host_slice_mut().unwrap().fill(0); // waits for the upload first
    check_words(&dst.to_vec(&mem).unwrap(), &data, "upload before overwrite");
}

#[test]
fn events_and_stream_waits_order_work_across_streams() {
    let Some(mem) = memory_or_skip(&cuda_config(1, DeviceAllocMode::Pool)) else {
        return;
    };
    let words = 8 << 20; // 64 MiB
    let data = random_words(5, words);
    let (pinned, _) = mem.alloc_from(&L::PinnedHost, &data, None).unwrap();
    let a = mem.stream(&L::Cuda(0)).unwrap();
    let b = mem.stream(&L::Cuda(0)).unwrap();
    assert_ne!(a, b);
    let start = a.record_timing_event().unwrap();
    let (dev, uploaded) = pinned.copy_to(&mem, &L::Cuda(0), Some(&a)).unwrap();
    let uploaded = uploaded.unwrap();
    let upload_end = a.record_timing_event().unwrap();
    // b reads `dev` only after a's upload: a GPU-side wait, no host sync.
    b.wait_event(&uploaded).unwrap();
    let mut back = poisoned(&mem, L::PinnedHost, words);
    let done = back.copy_from(&mem, &dev, Some(&b)).unwrap().unwrap();
    done.synchronize_within(std::time::Duration::from_secs(10))
        .unwrap();
    assert!(done.query().unwrap() && uploaded.query().unwrap());
    check_words(back.host_slice().unwrap(), &data, "wait-ordered round trip");
    upload_end.synchronize().unwrap();
    let ms = start.elapsed_ms(&upload_end).unwrap().unwrap();
    assert!(ms > 0.0, "{ms}");
    eprintln!(
        "64 MiB pinned->device: {ms:.3} ms ({:.1} GB/s)",
        64.0 * 1.048_576 / ms
    );
    a.synchronize().unwrap();
    b.synchronize().unwrap();
    // Holds are a simulated-backend facility; backends do not mix.
    assert!(matches!(
        a.hold().unwrap_err(),
        MemoryError::HoldUnsupported { .. }
    ));
    assert!(matches!(
        a.release_hold().unwrap_err(),
        MemoryError::HoldUnsupported { .. }
    ));
    let sim_ev = mem.stream(&L::Sim(0)).unwrap().record_event().unwrap();
    assert!(matches!(
        a.wait_event(&sim_ev).unwrap_err(),
        MemoryError::BackendMismatch { .. }
    ));
    assert!(matches!(
        mem.stream(&L::Sim(0))
            .unwrap()
            .wait_event(&uploaded)
            .unwrap_err(),
        MemoryError::BackendMismatch { .. }
    ));
    // A sim stream cannot carry a CUDA copy.
    let s0 = mem.stream(&L::Sim(0)).unwrap();
    let err = pinned.copy_to(&mem, &L::Cuda(0), Some(&s0)).unwrap_err();
    assert!(matches!(err, MemoryError::StreamMismatch { .. }), "{err}");
}

#[test]
fn module_loads_once_and_kernels_launch_checked() {
    let Some(mem) = memory_or_skip(&cuda_config(1, DeviceAllocMode::Pool)) else {
        return;
    };
    let loc = L::Cuda(0);
    let t0 = std::time::Instant::now();
    let m = mem
        .load_module(&loc, "modadd", fhelium_cuda::MODADD_PTX)
        .unwrap();
    let first = t0.elapsed();
    let t1 = std::time::Instant::now();
    let again = mem
        .load_module(&loc, "modadd", fhelium_cuda::MODADD_PTX)
        .unwrap();
    let cached = t1.elapsed();
    assert_eq!(again.name(), "modadd");
    assert_eq!(m.location(), loc);
    eprintln!("module load {first:?}, cached {cached:?}");
    assert!(cached < first);
    let err = mem.load_module(&loc, "modadd", "// other\n").unwrap_err();
    assert!(matches!(err, MemoryError::ModuleLoad { .. }), "{err}");
    let err = mem
        .load_module(&loc, "junk", "this is not PTX")
        .unwrap_err();
    assert!(matches!(err, MemoryError::ModuleLoad { .. }), "{err}");
    let err = mem
        .load_module(&L::Sim(0), "modadd", fhelium_cuda::MODADD_PTX)
        .unwrap_err();
    assert!(
        matches!(err, MemoryError::LocationUnavailable { .. }),
        "{err}"
    );
    let err = m.kernel("no_such_kernel").unwrap_err();
    assert!(matches!(err, MemoryError::KernelNotFound { .. }), "{err}");
    let k = m.kernel("modadd_u64").unwrap();
    assert_eq!(k.name(), "modadd_u64");

    let moduli: [u64; 3] = [
        1_099_510_054_913,
        1_099_515_691_009,
        1_152_921_504_606_748_673,
    ];
    let n: u32 = 1 << 16;
    let total = n as usize * moduli.len();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(42);
    let a: Vec<u64> = (0..total)
        .map(|i| rng.random_range(0..moduli[i / n as usize]))
        .collect();
    let b: Vec<u64> = (0..total)
        .map(|i| rng.random_range(0..moduli[i / n as usize]))
        .collect();
    let s = mem.stream(&loc).unwrap();
    let (da, _) = mem.alloc_from(&loc, &a, Some(&s)).unwrap();
    let (db, _) = mem.alloc_from(&loc, &b, Some(&s)).unwrap();
    let (dq, _) = mem.alloc_from(&loc, &moduli, Some(&s)).unwrap();
    let (dout, _) = mem
        .alloc_from(&loc, &vec![POISON; total], Some(&s))
        .unwrap();
    let args = [
        KernelArg::Buffer(&da),
        KernelArg::Buffer(&db),
        KernelArg::Buffer(&dout),
        KernelArg::Buffer(&dq),
        KernelArg::U32(n),
        KernelArg::U32(moduli.len() as u32),
    ];
    // SAFETY: the arguments match modadd_u64(const u64*, const u64*, u64*, const u64*, u32,
    // u32); every buffer holds `total` (or 3) words; the stream is synchronised before reads.
    unsafe { k.launch(&s, LaunchConfig::linear(256, 256), &args) }.unwrap();
    s.synchronize().unwrap();
    let out = dout.to_vec(&mem).unwrap();
    for i in 0..total {
        assert_eq!(out[i], (a[i] + b[i]) % moduli[i / n as usize], "word {i}");
    }

    // Checked refusals, before the driver sees anything.
    let sim = mem.stream(&L::Sim(0)).unwrap();
    // SAFETY: refused before launch; arguments are the valid ones above.
    let err = unsafe { k.launch(&sim, LaunchConfig::linear(1, 32), &args) }.unwrap_err();
    assert!(matches!(err, MemoryError::InvalidLaunch { .. }), "{err}");
    // SAFETY: as above.
    let err = unsafe { k.launch(&s, LaunchConfig::linear(0, 32), &args) }.unwrap_err();
    assert!(err.to_string().contains("empty geometry"), "{err}");
    // SAFETY: as above.
    let err = unsafe { k.launch(&s, LaunchConfig::linear(1, 2048), &args) }.unwrap_err();
    assert!(err.to_string().contains("exceed 1024"), "{err}");
    let (host, _) = mem.alloc_from(&L::PinnedHost, &a, None).unwrap();
    let bad = [
        KernelArg::Buffer(&host),
        args[1],
        args[2],
        args[3],
        args[4],
        args[5],
    ];
    // SAFETY: refused before launch (buffer 0 is host memory).
    let err = unsafe { k.launch(&s, LaunchConfig::linear(1, 32), &bad) }.unwrap_err();
    assert!(err.to_string().contains("argument 0"), "{err}");
    eprintln!("modadd_u64: {total} words checked");
}

#[test]
fn tensors_materialize_through_cuda_with_compaction() {
    let Some(mem) = memory_or_skip(&cuda_config(1, DeviceAllocMode::Pool)) else {
        return;
    };
    let data = random_words(77, 1 << 16);
    let buf = Arc::new(mem.alloc_from(&L::Sim(0), &data, None).unwrap().0);
    let t = Tensors::new(vec![
        TensorView::new(Arc::clone(&buf), 100, 1000).unwrap(),
        TensorView::whole(Arc::clone(&buf)),
    ]);
    assert_eq!(t.nbytes(), (1000 + (1 << 16)) * 8);
    assert_eq!(t.storage_nbytes(), (1 << 16) * 8);
    let s = mem.stream(&L::Cuda(0)).unwrap();
    let on_gpu = t.materialize(&mem, &L::Cuda(0), Some(&s)).unwrap();
    let ready = on_gpu.ready.clone().unwrap();
    let g = on_gpu.value;
    assert_eq!(g.placement().unwrap(), L::Cuda(0));
    assert_eq!(g.storage_nbytes(), g.nbytes());
    // A consumer on another stream orders itself after the copy without a host wait.
    let consumer = mem.stream(&L::Cuda(0)).unwrap();
    consumer.wait_event(&ready).unwrap();
    let back = g
        .materialize(&mem, &L::PinnedHost, Some(&consumer))
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(back.placement().unwrap(), L::PinnedHost);
    let v = back.to_vecs(&mem).unwrap();
    check_words(&v[0], &data[100..1100], "view");
    check_words(&v[1], &data, "whole");
}

/// A `cust` stream handed to the memory layer, pool memory written on it by `cust` and
/// adopted in stream order: no host wait at adoption, readers on other streams ordered after
/// the producer on the GPU, the free enqueued on the producer's stream; plain `cuMemAlloc`
/// memory is refused and stays the caller's.
#[test]
fn stream_ordered_adoption_of_pool_memory_written_on_a_wrapped_stream() {
    use cust::memory::{AsyncCopyDestination, DeviceBuffer};
    use cust::stream::{Stream as CustStream, StreamFlags};
    let Some(mem) = memory_or_skip(&cuda_config(1, DeviceAllocMode::Pool)) else {
        return;
    };
    let loc = L::Cuda(0);
    // Any call of the memory layer makes the device's primary context current here.
    let other = mem.stream(&loc).unwrap();
    let raw = CustStream::new(StreamFlags::NON_BLOCKING, None).unwrap();
    let handle = raw.as_inner();
    let s = mem.wrap_stream(&loc, raw).unwrap();
    assert_eq!(s.as_cust().unwrap().as_inner(), handle);
    assert!(other.as_cust().is_none());

    let words = random_words(41, 1 << 20);
    let before = mem.usage(&loc).unwrap().allocated_bytes;
    // SAFETY (test): uninitialised pool memory, fully written on `s` before any read.
    let mut dev =
        unsafe { DeviceBuffer::<u64>::uninitialized_async(words.len(), s.as_cust().unwrap()) }
            .unwrap();
    // SAFETY (test): `words` outlives the copy (the stream is synchronised below before
    // `words` is dropped).
    unsafe { dev.async_copy_from(&words[..], s.as_cust().unwrap()) }.unwrap();
    let ptr = dev.as_device_ptr().as_raw();
    // SAFETY: a pool allocation of `words.len()` words on cuda:0, written on `s`; ownership
    // passes to the buffer (the cust handle is forgotten below, on success only).
    let buf = unsafe { mem.adopt_device_words_on(&loc, ptr, words.len(), &s) }.unwrap();
    std::mem::forget(dev);
    assert_eq!(buf.device_ptr(), Some(ptr));
    assert_eq!(
        mem.usage(&loc).unwrap().allocated_bytes,
        before + words.len() as u64 * 8
    );
    // A copy on another stream waits for the producer on the GPU.
    let (copy, ev) = buf.copy_to(&mem, &loc, Some(&other)).unwrap();
    ev.unwrap().synchronize().unwrap();
    check_words(&copy.to_vec(&mem).unwrap(), &words, "ordered copy");
    drop(buf);
    s.synchronize().unwrap();
    assert_eq!(
        mem.usage(&loc).unwrap().allocated_bytes,
        before + words.len() as u64 * 8,
        "only the copy is left"
    );
    // A buffer is ordered only after events of its own backend.
    let sim_event = mem.stream(&L::Sim(0)).unwrap().record_event().unwrap();
    match copy.order_after(&sim_event) {
        Err(MemoryError::BackendMismatch { a, b, .. }) => assert_eq!((a, b), (loc, L::Sim(0))),
        other => panic!("a simulated event on a CUDA buffer: {other:?}"),
    }
    let (sim_buf, _) = mem.alloc_from(&L::Sim(0), &[1, 2, 3], None).unwrap();
    match sim_buf.order_after(&s.record_event().unwrap()) {
        Err(MemoryError::BackendMismatch { a, b, .. }) => assert_eq!((a, b), (L::Sim(0), loc)),
        other => panic!("a CUDA event on a simulated buffer: {other:?}"),
    }
    assert!(copy.pending_events().unwrap().is_empty());
    assert!(sim_buf.pending_events().unwrap().is_empty());
    drop(copy);

    // Plain device memory is refused, naming the location and bytes; the caller keeps it.
    // SAFETY (test): never read.
    let plain = unsafe { DeviceBuffer::<u64>::uninitialized(1024) }.unwrap();
    let ptr = plain.as_device_ptr().as_raw();
    // SAFETY: refused before the pointer is used beyond an attribute query.
    match unsafe { mem.adopt_device_words_on(&loc, ptr, 1024, &s) } {
        Err(MemoryError::NotStreamOrdered {
            location, bytes, ..
        }) => assert_eq!((location, bytes), (loc, 8192)),
        other => panic!("plain memory adopted: {other:?}"),
    }
    drop(plain);
    assert_eq!(mem.usage(&loc).unwrap().allocated_bytes, before);
}
