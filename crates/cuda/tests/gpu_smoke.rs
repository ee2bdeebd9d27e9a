//! GPU smoke test: context, PTX load, a launch on random data, every output checked on the CPU.
//!
//! Built only with feature `cuda`. Without a CUDA device it prints why and passes, unless
//! `FHELIUM_REQUIRE_GPU=1` (set by the GPU bundle's run-all.sh) makes a missing device a failure.
#![cfg(feature = "cuda")]

mod common;

use cust::prelude::*;
use rand::{Rng, SeedableRng};

#[test]
fn modadd_kernel_matches_cpu_on_random_limbs() {
    let Some(_ctx) = common::device_or_skip() else {
        return;
    };
    let moduli: [u64; 3] = [
        1_099_510_054_913,
        1_099_515_691_009,
        1_152_921_504_606_748_673,
    ];
    let n: u32 = 16384;
    let limbs = moduli.len() as u32;
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(0x5eed);
    let total = (n * limbs) as usize;
    let a: Vec<u64> = (0..total)
        .map(|i| rng.random_range(0..moduli[i / n as usize]))
        .collect();
    let b: Vec<u64> = (0..total)
        .map(|i| rng.random_range(0..moduli[i / n as usize]))
        .collect();
    let module = Module::from_ptx(fhelium_cuda::MODADD_PTX, &[]).expect("PTX loads");
    let stream = Stream::new(StreamFlags::NON_BLOCKING, None).expect("stream");
    let d_a = DeviceBuffer::from_slice(&a).unwrap();
    let d_b = DeviceBuffer::from_slice(&b).unwrap();
    let d_q = DeviceBuffer::from_slice(&moduli).unwrap();
    // Poison the output so an unwritten word fails the check.
    let d_out = DeviceBuffer::from_slice(&vec![u64::MAX; total]).unwrap();
    let func = module.get_function("modadd_u64").expect("kernel present");
    // SAFETY: the four buffers hold `total` (or `limbs`) u64 words, matching the kernel's
    // contract; the stream is synchronised before any buffer is read or dropped.
    #[allow(unsafe_code)]
    unsafe {
        launch!(func<<<128, 256, 0, stream>>>(
            d_a.as_device_ptr(),
            d_b.as_device_ptr(),
            d_out.as_device_ptr(),
            d_q.as_device_ptr(),
            n,
            limbs
        ))
        .expect("launch");
    }
    stream.synchronize().expect("sync");
    let mut out = vec![0u64; total];
    d_out.copy_to(&mut out[..]).unwrap();
    for i in 0..total {
        let q = moduli[i / n as usize];
        assert_eq!(out[i], (a[i] + b[i]) % q, "word {i}");
    }
    eprintln!("modadd_u64: {total} words checked on the GPU");
}
