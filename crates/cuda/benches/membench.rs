//! Memory-layer benchmark (feature `cuda`, run on the GPU machine): pinned<->device copy
//! bandwidth through `fhelium_cuda::Buffer::copy_from` against a bare `cust` copy of the same
//! size in the same run, and pool allocation + free of a 2 MiB device buffer.
//!
//! Timing: CUDA events around a batch of copies on one stream, after a warm-up; median of
//! interleaved trials (ours, bare, ours, bare, ...). Data is random, and every size's result is
//! checked word by word once. Without a CUDA device it prints why and exits 0.
//!
//! Run: the GPU bundle carries it (`.gpu/bin/membench` or
//! `.gpu/bin/test-fhelium_cuda-bench-membench`, see docs/crates/cuda.md).
#![allow(unsafe_code, clippy::unwrap_used)]

use std::time::Instant;

use cust::memory::{AsyncCopyDestination, DeviceBuffer, LockedBuffer};
use cust::prelude::{Stream as CuStream, StreamFlags};
use fhelium_cuda::{DeviceAllocMode, Memory, MemoryConfig, ResidencyLocation as L};

mod common;
use common::{median, random_words, time_bare, time_ours, MIB, TRIALS};

fn reps_for(bytes: usize) -> usize {
    (512 * MIB / bytes).clamp(2, 64)
}

fn main() {
    let mem = match Memory::new(&MemoryConfig {
        cuda: true,
        device_alloc: DeviceAllocMode::Pool,
        ..MemoryConfig::default()
    }) {
        Ok(m) => m,
        Err(e) => {
            println!("membench: skipped: no CUDA device available ({e})");
            return;
        }
    };
    let dev = L::Cuda(0);
    let info = mem.device_info(&dev).unwrap();
    println!(
        "membench on {} ({:?}), {} GiB",
        info.name,
        info.compute_capability,
        info.total_bytes >> 30
    );
    let s = mem.stream(&dev).unwrap();
    let bare_stream = CuStream::new(StreamFlags::NON_BLOCKING, None).unwrap();

    println!();
    println!(
        "{:<16} {:>8} {:>6} {:>12} {:>12} {:>8} {:>8}",
        "direction", "size", "reps", "ours GB/s", "bare GB/s", "ratio", ">=95%"
    );
    let mut all_ok = true;
    for size_mib in [2usize, 18, 256] {
        let bytes = size_mib * MIB;
        let words = bytes / 8;
        let reps = reps_for(bytes);
        let data = random_words(words, size_mib as u64);

        // Ours: page-locked source and pooled device destination.
        let (pinned, _) = mem.alloc_from(&L::PinnedHost, &data, None).unwrap();
        let mut pinned_back = mem.alloc(&L::PinnedHost, words, None).unwrap();
        let mut device = mem.alloc(&dev, words, Some(&s)).unwrap();
        // Bare cust: same sizes.
        let bare_pinned = LockedBuffer::from_slice(&data).unwrap();
        let mut bare_back = LockedBuffer::new(&0u64, words).unwrap();
        // SAFETY: written by the first copy below before any read.
        let mut bare_dev = unsafe { DeviceBuffer::<u64>::uninitialized(words) }.unwrap();

        // Warm-up and correctness, both paths, every word checked.
        device.copy_from(&mem, &pinned, Some(&s)).unwrap();
        pinned_back.copy_from(&mem, &device, Some(&s)).unwrap();
        s.synchronize().unwrap();
        assert!(
            pinned_back.host_slice().unwrap() == &data[..],
            "ours: round trip differs"
        );
        // SAFETY: buffers of equal length; the stream is synchronised before reads/drops.
        unsafe {
            bare_dev
                .async_copy_from(&*bare_pinned, &bare_stream)
                .unwrap();
            bare_dev
                .async_copy_to(&mut *bare_back, &bare_stream)
                .unwrap();
        }
        bare_stream.synchronize().unwrap();
        assert!(*bare_back == data[..], "bare: round trip differs");

        for dir in ["pinned->device", "device->pinned"] {
            let (mut ours, mut bare) = (Vec::new(), Vec::new());
            for _ in 0..TRIALS {
                ours.push(if dir == "pinned->device" {
                    time_ours(&s, bytes, reps, || {
                        device.copy_from(&mem, &pinned, Some(&s)).unwrap();
                    })
                } else {
                    time_ours(&s, bytes, reps, || {
                        pinned_back.copy_from(&mem, &device, Some(&s)).unwrap();
                    })
                });
                bare.push(if dir == "pinned->device" {
                    time_bare(&bare_stream, bytes, reps, || {
                        // SAFETY: equal lengths; synchronised in time_bare before reuse.
                        unsafe { bare_dev.async_copy_from(&*bare_pinned, &bare_stream) }.unwrap();
                    })
                } else {
                    time_bare(&bare_stream, bytes, reps, || {
                        // SAFETY: as above.
                        unsafe { bare_dev.async_copy_to(&mut *bare_back, &bare_stream) }.unwrap();
                    })
                });
            }
            let (o, b) = (median(ours), median(bare));
            let ratio = o / b;
            let ok = ratio >= 0.95;
            all_ok &= ok;
            println!(
                "{dir:<16} {:>5} MiB {reps:>6} {o:>12.2} {b:>12.2} {:>7.1}% {:>8}",
                size_mib,
                ratio * 100.0,
                if ok { "yes" } else { "NO" }
            );
        }
        s.synchronize().unwrap();
        assert!(
            pinned_back.host_slice().unwrap() == &data[..],
            "ours: final data differs"
        );
    }

    println!();
    println!(
        "{:<40} {:>12} {:>8}",
        "device alloc + free, 2 MiB", "us / pair", "<5 us"
    );
    for (label, mode) in [
        ("pool (cuMemAllocAsync/FreeAsync)", DeviceAllocMode::Pool),
        ("plain (cuMemAlloc/cuMemFree)", DeviceAllocMode::Plain),
    ] {
        let m = if mode == DeviceAllocMode::Pool {
            mem.clone()
        } else {
            Memory::new(&MemoryConfig {
                cuda: true,
                device_alloc: mode,
                ..MemoryConfig::default()
            })
            .unwrap()
        };
        let st = m.stream(&dev).unwrap();
        let n = if mode == DeviceAllocMode::Pool {
            2000
        } else {
            200
        };
        let mut per = Vec::new();
        for trial in 0..=TRIALS {
            let t = Instant::now();
            for _ in 0..n {
                let b = m.alloc(&dev, 2 * MIB / 8, Some(&st)).unwrap();
                drop(b);
            }
            st.synchronize().unwrap();
            if trial > 0 {
                per.push(t.elapsed().as_secs_f64() * 1e6 / f64::from(n));
            }
        }
        let us = median(per);
        let ok = us < 5.0;
        if mode == DeviceAllocMode::Pool {
            all_ok &= ok;
        }
        println!(
            "{label:<40} {us:>12.2} {:>8}",
            if ok { "yes" } else { "NO" }
        );
    }
    println!();
    println!(
        "membench: {}",
        if all_ok {
            "all targets met"
        } else {
            "some targets MISSED"
        }
    );
}
