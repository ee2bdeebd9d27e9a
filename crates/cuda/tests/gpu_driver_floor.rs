//! The driver's floor under one API call on this machine: what an event pair, a stream-ordered
//! allocation and a kernel launch (plain and cooperative) cost, as the host sees it (submission
//! time) and as CUDA events see it (the stream idle before each sample, as the engine's
//! `oplat` table times its operations). Every CKKS operation pays at least one allocation and
//! one launch, so these rows are the part of its latency no kernel work can remove.
//!
//! Prints a table (and writes `$OUT/driver_floor.txt` when `OUT` is set); checks that every
//! launch it timed computed the right words. Without a device it skips, unless
//! `FHELIUM_REQUIRE_GPU=1`.
#![cfg(feature = "cuda")]

mod common;

use cust::event::{Event, EventFlags};
use cust::function::Function;
use cust::memory::{DeviceBuffer, DevicePointer};
use cust::prelude::*;
use rand::{Rng, SeedableRng};

const WARMUP: usize = 20;
const SAMPLES: usize = 200;
/// Words of one ciphertext of the preset at the top level (2 x 8 x 16384).
const CT_WORDS: usize = 2 * 8 * 16384;

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// (event median, host submission median) of `op` in microseconds; a buffer `op` returns is
/// freed on the stream after the end event (outside both timings).
fn time(stream: &Stream, mut op: impl FnMut() -> Option<DeviceBuffer<u64>>) -> (f64, f64) {
    let mut ev = Vec::with_capacity(SAMPLES);
    let mut host = Vec::with_capacity(SAMPLES);
    for i in 0..WARMUP + SAMPLES {
        stream.synchronize().expect("sync");
        let start = Event::new(EventFlags::DEFAULT).expect("event");
        let end = Event::new(EventFlags::DEFAULT).expect("event");
        start.record(stream).expect("record");
        let t = std::time::Instant::now();
        let keep = op();
        let h = t.elapsed().as_secs_f64() * 1e6;
        end.record(stream).expect("record");
        if let Some(buf) = keep {
            buf.drop_async(stream).expect("free");
        }
        end.synchronize().expect("event sync");
        if i >= WARMUP {
            ev.push(f64::from(end.elapsed_time_f32(&start).expect("elapsed")) * 1000.0);
            host.push(h);
        }
    }
    (median(&mut ev), median(&mut host))
}

/// One launch of `modadd_u64` over `n` words of one limb, `grid` blocks of `block` threads,
/// plain or cooperative.
#[allow(clippy::too_many_arguments)]
fn launch(
    func: &Function<'_>,
    stream: &Stream,
    a: DevicePointer<u64>,
    b: DevicePointer<u64>,
    out: DevicePointer<u64>,
    q: DevicePointer<u64>,
    n: u32,
    grid: u32,
    block: u32,
    cooperative: bool,
) {
    let limbs: u32 = 1;
    let (mut pa, mut pb, mut po, mut pq) = (a.as_raw(), b.as_raw(), out.as_raw(), q.as_raw());
    let (mut pn, mut pl) = (n, limbs);
    let mut args: [*mut std::ffi::c_void; 6] = [
        std::ptr::from_mut(&mut pa).cast(),
        std::ptr::from_mut(&mut pb).cast(),
        std::ptr::from_mut(&mut po).cast(),
        std::ptr::from_mut(&mut pq).cast(),
        std::ptr::from_mut(&mut pn).cast(),
        std::ptr::from_mut(&mut pl).cast(),
    ];
    // SAFETY: the four pointers are live device allocations of at least `n` words (one
    // modulus for `q`), the scalars match the kernel's `uint32_t` parameters, and `args`
    // outlives the call (the driver copies the values at launch).
    #[allow(unsafe_code)]
    let rc = unsafe {
        if cooperative {
            cust::sys::cuLaunchCooperativeKernel(
                func.to_raw(),
                grid,
                1,
                1,
                block,
                1,
                1,
                0,
                stream.as_inner(),
                args.as_mut_ptr(),
            )
        } else {
            cust::sys::cuLaunchKernel(
                func.to_raw(),
                grid,
                1,
                1,
                block,
                1,
                1,
                0,
                stream.as_inner(),
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
    };
    assert_eq!(rc, cust::sys::cudaError_enum::CUDA_SUCCESS, "launch");
}

#[test]
fn driver_floor_of_one_call() {
    let Some(_ctx) = common::device_or_skip() else {
        return;
    };
    let q: u64 = 1_099_510_054_913;
    let n: u32 = 16384;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0xf100);
    let a: Vec<u64> = (0..n).map(|_| rng.random_range(0..q)).collect();
    let b: Vec<u64> = (0..n).map(|_| rng.random_range(0..q)).collect();
    let module = Module::from_ptx(fhelium_cuda::MODADD_PTX, &[]).expect("PTX loads");
    let func = module.get_function("modadd_u64").expect("kernel present");
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).expect("stream");
    let d_a = DeviceBuffer::from_slice(&a).unwrap();
    let d_b = DeviceBuffer::from_slice(&b).unwrap();
    let d_q = DeviceBuffer::from_slice(&[q]).unwrap();
    let poison = vec![u64::MAX; n as usize];
    let mut d_out = DeviceBuffer::from_slice(&poison).unwrap();
    let (pa, pb, po, pq) = (
        d_a.as_device_ptr(),
        d_b.as_device_ptr(),
        d_out.as_device_ptr(),
        d_q.as_device_ptr(),
    );
    let want: Vec<u64> = a.iter().zip(&b).map(|(x, y)| (x + y) % q).collect();
    let mut check = |what: &str| {
        stream.synchronize().expect("sync");
        let mut got = vec![0u64; n as usize];
        d_out.copy_to(&mut got[..]).unwrap();
        assert!(got == want, "{what}: wrong words");
        d_out.copy_from(&poison[..]).unwrap();
    };
    let mut rows: Vec<(&str, f64, f64)> = Vec::new();
    // The engine's setting: the default pool keeps freed memory (no release at synchronisation).
    let mut pool: cust::sys::CUmemoryPool = std::ptr::null_mut();
    let threshold: u64 = u64::MAX;
    // SAFETY: `pool` receives the current device's default pool handle, and the attribute
    // value is a u64 as CU_MEMPOOL_ATTR_RELEASE_THRESHOLD requires; both outlive the calls.
    #[allow(unsafe_code)]
    unsafe {
        let dev = cust::device::Device::get_device(0).expect("device 0");
        assert_eq!(
            cust::sys::cuDeviceGetDefaultMemPool(&mut pool, dev.as_raw()),
            cust::sys::cudaError_enum::CUDA_SUCCESS
        );
        assert_eq!(
            cust::sys::cuMemPoolSetAttribute(
                pool,
                cust::sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                std::ptr::from_ref(&threshold).cast_mut().cast(),
            ),
            cust::sys::cudaError_enum::CUDA_SUCCESS
        );
    }
    rows.push(("events only", time(&stream, || None).0, 0.0));
    for (name, words) in [("alloc+free 1 ct (2 MiB)", CT_WORDS), ("alloc+free 8 B", 1)] {
        let (e, h) = time(&stream, || {
            // SAFETY: the words are never read; the buffer goes back on the same stream.
            #[allow(unsafe_code)]
            let buf =
                unsafe { DeviceBuffer::<u64>::uninitialized_async(words, &stream) }.expect("alloc");
            buf.drop_async(&stream).expect("free");
            None
        });
        rows.push((name, e, h));
    }
    let (e, h) = time(&stream, || {
        // SAFETY: the words are never read; `time` frees the buffer on the same stream.
        #[allow(unsafe_code)]
        let buf =
            unsafe { DeviceBuffer::<u64>::uninitialized_async(CT_WORDS, &stream) }.expect("alloc");
        Some(buf)
    });
    rows.push(("alloc 1 ct (freed outside the timing)", e, h));
    for (name, grid, block, coop) in [
        ("launch 1 x 256", 1, 256, false),
        ("launch 128 x 512", 128, 512, false),
        ("launch 128 x 512 cooperative", 128, 512, true),
    ] {
        let (e, h) = time(&stream, || {
            launch(&func, &stream, pa, pb, po, pq, n, grid, block, coop);
            None
        });
        check(name);
        rows.push((name, e, h));
    }
    let (e, h) = time(&stream, || {
        // SAFETY: the buffer is written by nobody and read by nobody; freed on the stream.
        #[allow(unsafe_code)]
        let buf =
            unsafe { DeviceBuffer::<u64>::uninitialized_async(CT_WORDS, &stream) }.expect("alloc");
        launch(&func, &stream, pa, pb, po, pq, n, 128, 512, true);
        Some(buf)
    });
    check("alloc + cooperative launch");
    rows.push(("alloc 1 ct + launch 128 x 512 coop", e, h));
    let mut text = String::from("what                                   event_us  submit_us\n");
    for (name, e, h) in &rows {
        text.push_str(&format!("{name:<38} {e:>9.2} {h:>10.2}\n"));
    }
    print!("{text}");
    if let Ok(out) = std::env::var("OUT") {
        std::fs::write(std::path::Path::new(&out).join("driver_floor.txt"), &text).ok();
    }
    // Events see at least what the host spent submitting the launch.
    let (_, ev, sub) = rows[rows.len() - 1];
    assert!(
        ev > 0.0 && sub > 0.0,
        "timings must be positive: {ev} {sub}"
    );
}
