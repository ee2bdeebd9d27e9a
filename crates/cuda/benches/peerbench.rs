//! Device-to-device copy benchmark (feature `cuda`, run on the GPU machine).
//!
//! For every ordered pair of CUDA devices (including a device and itself), copies of 2, 18 and
//! 256 MiB through `fhelium_cuda::Buffer::copy_from` (the pair's recorded path: same-device
//! `cuMemcpyDtoDAsync` or direct `cuMemcpyPeerAsync`) against a bare driver copy of the same
//! size on a `cust` stream in the same run (`cuMemcpyDtoDAsync` / `cuMemcpyPeerAsync` on buffers
//! allocated by `cust`), plus the staged fallback (`Buffer::copy_from_staged`: device -> pinned
//! -> device, two async copies ordered by an event) for contrast.
//!
//! Timing: CUDA events around a batch of copies on the destination device's stream, after a
//! warm-up; median of 9 interleaved trials (ours, bare, staged, ...). GB/s counts the bytes
//! copied once (not read + written). Every path's result is checked word by word once per
//! size. NVLink multicast is never used (no multicast objects are created). Without a CUDA
//! device it prints why and exits 0.
//!
//! Run: `target/gpu-cuda/bin/peerbench` from `bash crates/cuda/scripts/gpu-bundle.sh`.
#![allow(unsafe_code, clippy::unwrap_used)]

use cust::context::Context as CuContext;
use cust::device::Device;
use cust::memory::{CopyDestination, DeviceBuffer};
use cust::prelude::{Stream as CuStream, StreamFlags};
use cust::sys as cu;
use fhelium_cuda::{Buffer, Memory, ResidencyLocation as L};

mod common;
use common::{median, random_words, time_bare, time_ours, MIB, TRIALS};

fn reps_for(bytes: usize) -> usize {
    (1024 * MIB / bytes).clamp(4, 128)
}

struct Bare {
    ctx: CuContext,
    stream: CuStream,
}

fn bare_device(index: u32) -> Bare {
    let ctx = CuContext::new(Device::get_device(index).unwrap()).unwrap();
    let stream = CuStream::new(StreamFlags::NON_BLOCKING, None).unwrap();
    Bare { ctx, stream }
}

fn bind(ctx: &CuContext) {
    // SAFETY: the primary context is retained by `ctx`.
    let r = unsafe { cu::cuCtxSetCurrent(ctx.as_raw()) };
    assert_eq!(r, cu::CUresult::CUDA_SUCCESS);
}

fn check(mem: &Memory, b: &Buffer, data: &[u64], what: &str) {
    let got = b.to_vec(mem).unwrap();
    assert!(got == data, "{what}: data differs");
}

#[allow(clippy::too_many_lines)]
fn main() {
    let mem = match Memory::with_cuda() {
        Ok(m) => m,
        Err(e) => {
            println!("peerbench: skipped: no CUDA device available ({e})");
            return;
        }
    };
    let n = mem.cuda_device_count();
    let info = mem.device_info(&L::Cuda(0)).unwrap();
    println!(
        "peerbench on {n} x {} ({:?}); NVLink multicast unused",
        info.name, info.compute_capability
    );
    for l in mem.peer_links() {
        println!(
            "link {} -> {}: can_access_peer={} peer_enabled={} path={}",
            l.from, l.to, l.can_access_peer, l.peer_enabled, l.path
        );
    }
    let bare: Vec<Bare> = (0..u32::from(n)).map(bare_device).collect();
    println!();
    println!(
        "{:<18} {:<12} {:>8} {:>5} {:>10} {:>10} {:>7} {:>11} {:>7}",
        "pair", "path", "size", "reps", "ours GB/s", "bare GB/s", "ratio", "staged GB/s", ">=95%"
    );
    let mut all_ok = true;
    for i in 0..n {
        for j in 0..n {
            let (from, to) = (L::Cuda(i), L::Cuda(j));
            let path = mem.peer_link(&from, &to).unwrap().path;
            let s = mem.stream(&to).unwrap();
            for size_mib in [2usize, 18, 256] {
                let bytes = size_mib * MIB;
                let words = bytes / 8;
                let reps = reps_for(bytes);
                let data = random_words(words, (size_mib as u64) << 8 | u64::from(i * 16 + j));
                let (src, up) = mem.alloc_from(&from, &data, None).unwrap();
                // The upload runs on another stream than the copies: complete it first.
                if let Some(up) = up {
                    up.synchronize().unwrap();
                }
                let mut dst = mem.alloc(&to, words, Some(&s)).unwrap();
                let mut staged_dst = mem.alloc(&to, words, Some(&s)).unwrap();
                // Bare buffers in the devices' primary contexts.
                let (bi, bj) = (&bare[usize::from(i)], &bare[usize::from(j)]);
                bind(&bi.ctx);
                let bare_src = DeviceBuffer::from_slice(&data).unwrap();
                bind(&bj.ctx);
                // SAFETY: written by the warm-up copy before any read.
                let bare_dst = unsafe { DeviceBuffer::<u64>::uninitialized(words) }.unwrap();
                let (sp, dp) = (
                    bare_src.as_device_ptr().as_raw(),
                    bare_dst.as_device_ptr().as_raw(),
                );
                let bare_copy = || {
                    bind(&bj.ctx);
                    // SAFETY: both buffers hold `bytes` bytes and live until after the
                    // stream is synchronised (time_bare / the warm-up below).
                    let r = unsafe {
                        if i == j {
                            cu::cuMemcpyDtoDAsync_v2(dp, sp, bytes, bj.stream.as_inner())
                        } else {
                            cu::cuMemcpyPeerAsync(
                                dp,
                                bj.ctx.as_raw(),
                                sp,
                                bi.ctx.as_raw(),
                                bytes,
                                bj.stream.as_inner(),
                            )
                        }
                    };
                    assert_eq!(r, cu::CUresult::CUDA_SUCCESS);
                };

                // Warm-up and correctness of every path.
                dst.copy_from(&mem, &src, Some(&s)).unwrap();
                staged_dst.copy_from_staged(&mem, &src, Some(&s)).unwrap();
                s.synchronize().unwrap();
                check(&mem, &dst, &data, "ours");
                check(&mem, &staged_dst, &data, "staged");
                bare_copy();
                bj.stream.synchronize().unwrap();
                let mut back = vec![0u64; words];
                bind(&bj.ctx);
                bare_dst.copy_to(&mut back[..]).unwrap();
                assert!(back == data, "bare: data differs");

                let (mut ours, mut bares, mut staged) = (Vec::new(), Vec::new(), Vec::new());
                for _ in 0..TRIALS {
                    ours.push(time_ours(&s, bytes, reps, || {
                        dst.copy_from(&mem, &src, Some(&s)).unwrap();
                    }));
                    bind(&bj.ctx);
                    bares.push(time_bare(&bj.stream, bytes, reps, bare_copy));
                    staged.push(time_ours(&s, bytes, reps, || {
                        staged_dst.copy_from_staged(&mem, &src, Some(&s)).unwrap();
                    }));
                }
                s.synchronize().unwrap();
                check(&mem, &dst, &data, "ours (after timing)");
                check(&mem, &staged_dst, &data, "staged (after timing)");
                let (o, b, st) = (median(ours), median(bares), median(staged));
                let ratio = o / b;
                let ok = ratio >= 0.95;
                all_ok &= ok;
                println!(
                    "{:<18} {:<12} {:>4} MiB {reps:>5} {o:>10.1} {b:>10.1} {:>6.1}% {st:>11.1} {:>7}",
                    format!("{from} -> {to}"),
                    path.name(),
                    size_mib,
                    ratio * 100.0,
                    if ok { "yes" } else { "NO" }
                );
                drop((bare_src, bare_dst));
                mem.trim_staging();
            }
        }
    }
    if n < 2 {
        println!(
            "\nonly {n} CUDA device: the cross-device rows need a machine with 2 or more GPUs"
        );
    }
    println!(
        "\npeerbench: {}",
        if all_ok {
            "ours within 5% of the bare copy everywhere"
        } else {
            "some rows MISSED 95%"
        }
    );
}
