//! Helpers shared by the GPU copy benchmarks (`membench`, `peerbench`): random data, medians
//! and GB/s timing with our events and with bare `cust` events.
#![allow(dead_code)]

use cust::prelude::Stream as CuStream;
use fhelium_cuda::Stream;

/// One mebibyte.
pub const MIB: usize = 1 << 20;
/// Interleaved trials per measurement (the median is reported).
pub const TRIALS: usize = 9;

/// The median of `v` (upper median for even lengths).
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `n` deterministic, well-mixed words (splitmix64).
pub fn random_words(n: usize, seed: u64) -> Vec<u64> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        })
        .collect()
}

/// GB/s of `reps` runs of `f` bracketed by timing events on `stream`.
pub fn time_ours(stream: &Stream, bytes: usize, reps: usize, mut f: impl FnMut()) -> f64 {
    let start = stream.record_timing_event().unwrap();
    for _ in 0..reps {
        f();
    }
    let end = stream.record_timing_event().unwrap();
    end.synchronize().unwrap();
    let ms = f64::from(start.elapsed_ms(&end).unwrap().unwrap());
    (bytes * reps) as f64 / (ms * 1e6)
}

/// GB/s of `reps` runs of `f` bracketed by cust events on `stream` (its context current).
pub fn time_bare(stream: &CuStream, bytes: usize, reps: usize, mut f: impl FnMut()) -> f64 {
    use cust::event::{Event, EventFlags};
    let start = Event::new(EventFlags::DEFAULT).unwrap();
    let end = Event::new(EventFlags::DEFAULT).unwrap();
    start.record(stream).unwrap();
    for _ in 0..reps {
        f();
    }
    end.record(stream).unwrap();
    end.synchronize().unwrap();
    let ms = f64::from(end.elapsed_time_f32(&start).unwrap());
    (bytes * reps) as f64 / (ms * 1e6)
}
