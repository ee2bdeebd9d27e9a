//! Per-operation latency of the CUDA engine (the `oplat` table of
//! `../shared/reference/fhelium-h200/oplat.txt`, same op names), timed with CUDA events:
//! median / p10 / p90 of 200 calls after 20 warm-ups, the stream idle before each call (as
//! FHElium's method synchronises before each sample), cycling through 4 ciphertexts and 4
//! keys so an 18 MiB key is not served from the 50 MB L2 every time.
//!
//! `cargo xtask bench --device cuda:N` runs it on device N (`FHELIUM_BENCH_DEVICE`, default 0,
//! with `FHELIUM_REQUIRE_GPU=1`). A test binary so that `cargo xtask gpu-bundle`'s run-all.sh
//! also runs it on the GPU machine; it prints the table (and writes `$OUT/oplat_gpu.txt` when
//! `OUT` is set). Without a device it skips, unless `FHELIUM_REQUIRE_GPU=1`.
#![cfg(feature = "cuda")]

use cust::event::{Event, EventFlags};
use cust::stream::Stream;
use fhelium_ckks::cuda::{
    CudaBackendError, CudaEngine, GpuCiphertext, GpuPlaintext, GpuSwitchKey, NttKernels,
};
use fhelium_ckks::{CpuEngine, ModulusBasis, Preset};

/// (median, p10, p90) in microseconds.
type Stats = (f64, f64, f64);
/// Event statistics of one op with its submission / throughput diagnostics.
type Timing = (Stats, Option<Diag>);

const WARMUP: usize = 20;
const SAMPLES: usize = 200;
const SETS: usize = 4;

/// FHElium 0.10 on our H200 (median us), from oplat.txt.
const FHELIUM_US: [(&str, f64); 10] = [
    ("encrypt_message", 1549.5),
    ("rotate_with_key", 1589.7),
    ("coefficient_to_ntt", 179.7),
    ("multiply_plaintext", 218.9),
    ("ntt_to_coefficient", 184.4),
    ("rescale_to_next_level", 262.8),
    ("decrypt_message", 1824.9),
    ("example14_stage", 2452.6),
    ("multiply_ct_ct", 334.0),
    ("relinearize", 1688.5),
];

/// FHElium's medians from the peer's `peer-oplat.txt` (lines `op median p10 p90`) when
/// `FHELIUM_PEER_OPLAT` names one: the same device call's figures for the ratio column.
fn peer_oplat() -> Vec<(String, f64)> {
    let Ok(path) = std::env::var("FHELIUM_PEER_OPLAT") else {
        return Vec::new();
    };
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let name = it.next()?;
            let med: f64 = it.next()?.parse().ok()?;
            FHELIUM_US
                .iter()
                .any(|(n, _)| *n == name)
                .then(|| (name.to_string(), med))
        })
        .collect()
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let idx = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[idx]
}

/// Per-op diagnostics next to the event latency: the host's submission time of one call
/// (median, no synchronisation) and the back-to-back throughput time (`BURST` calls queued
/// without waiting, divided by `BURST`), which approaches the GPU execution time when the
/// host submits faster than the GPU runs.
#[derive(Clone, Copy)]
struct Diag {
    submit_us: f64,
    burst_us: f64,
}

const BURST: usize = 50;

/// A device result that `time_op` frees in stream order after each call.
trait DeviceResult {
    fn free(self, stream: &Stream) -> Result<(), CudaBackendError>;
}

impl DeviceResult for GpuCiphertext {
    fn free(self, stream: &Stream) -> Result<(), CudaBackendError> {
        self.free_async(stream)
    }
}

impl DeviceResult for std::sync::Arc<GpuSwitchKey> {
    /// A cached key: the cache frees it (`clear`), the caller's handle just goes.
    fn free(self, _stream: &Stream) -> Result<(), CudaBackendError> {
        Ok(())
    }
}

impl DeviceResult for GpuPlaintext {
    fn free(self, stream: &Stream) -> Result<(), CudaBackendError> {
        self.free_async(stream)
    }
}

/// Times `op(i)` (i = sample index) with CUDA events; returns (median, p10, p90) in us and the
/// submission / throughput diagnostics.
fn time_op<V: DeviceResult>(
    stream: &Stream,
    mut op: impl FnMut(usize) -> Result<V, CudaBackendError>,
) -> (Stats, Option<Diag>) {
    let mut samples = Vec::with_capacity(SAMPLES);
    let mut submit = Vec::with_capacity(SAMPLES);
    for i in 0..WARMUP + SAMPLES {
        stream.synchronize().expect("sync");
        let start = Event::new(EventFlags::DEFAULT).expect("event");
        let end = Event::new(EventFlags::DEFAULT).expect("event");
        start.record(stream).expect("record");
        let t = std::time::Instant::now();
        let out = op(i).expect("op");
        let host = t.elapsed().as_secs_f64() * 1e6;
        end.record(stream).expect("record");
        out.free(stream).expect("free");
        end.synchronize().expect("event sync");
        if i >= WARMUP {
            let ms = end.elapsed_time_f32(&start).expect("elapsed");
            samples.push(f64::from(ms) * 1000.0);
            submit.push(host);
        }
    }
    samples.sort_by(f64::total_cmp);
    submit.sort_by(f64::total_cmp);
    stream.synchronize().expect("sync");
    let start = Event::new(EventFlags::DEFAULT).expect("event");
    let end = Event::new(EventFlags::DEFAULT).expect("event");
    start.record(stream).expect("record");
    for i in 0..BURST {
        let out = op(i).expect("op");
        out.free(stream).expect("free");
    }
    end.record(stream).expect("record");
    end.synchronize().expect("event sync");
    let burst = f64::from(end.elapsed_time_f32(&start).expect("elapsed")) * 1000.0 / BURST as f64;
    (
        (
            percentile(&samples, 0.5),
            percentile(&samples, 0.1),
            percentile(&samples, 0.9),
        ),
        Some(Diag {
            submit_us: percentile(&submit, 0.5),
            burst_us: burst,
        }),
    )
}

/// Host wall-clock timing of a call that synchronises by itself; (median, p10, p90) in us.
fn time_host(stream: &Stream, mut op: impl FnMut(usize)) -> (Stats, Option<Diag>) {
    let mut samples = Vec::with_capacity(SAMPLES);
    for i in 0..WARMUP + SAMPLES {
        stream.synchronize().expect("sync");
        let t = std::time::Instant::now();
        op(i);
        if i >= WARMUP {
            samples.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    samples.sort_by(f64::total_cmp);
    (
        (
            percentile(&samples, 0.5),
            percentile(&samples, 0.1),
            percentile(&samples, 0.9),
        ),
        None,
    )
}

/// When the engine last created its `ckks.kernel` span (in `launch_args`, right before it looks
/// up the launch graph and calls `cuGraphLaunch`), noted by [`LaunchClock`].
static LAUNCH_AT: std::sync::Mutex<Option<std::time::Instant>> = std::sync::Mutex::new(None);

/// A tracing subscriber that only notes the time of each `ckks.kernel` span's creation and
/// turns every other callsite off (so the engine's other spans cost what they cost without a
/// subscriber): a clock for the host time an op spends before its launch.
struct LaunchClock;

impl LaunchClock {
    fn ours(m: &tracing::Metadata<'_>) -> bool {
        m.name() == "ckks.kernel"
    }
}

impl tracing::Subscriber for LaunchClock {
    fn register_callsite(
        &self,
        m: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if Self::ours(m) {
            tracing::subscriber::Interest::always()
        } else {
            tracing::subscriber::Interest::never()
        }
    }
    fn enabled(&self, m: &tracing::Metadata<'_>) -> bool {
        Self::ours(m)
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let now = std::time::Instant::now();
        *LAUNCH_AT.lock().expect("clock") = Some(now);
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Host time of `op(i)` split at its first launch (median, p10, p90 of SAMPLES calls after
/// WARMUP, the stream idle before each): (from the call to the engine's `ckks.kernel` span,
/// from that span to the call's return), us. The first part is the engine's own work before
/// it reaches the driver (plus the span's creation, ~0.05 us); the second holds the graph
/// lookup, `cuGraphLaunch` and the work after it.
fn host_split<V: DeviceResult>(
    stream: &Stream,
    op: impl FnMut(usize) -> Result<V, CudaBackendError>,
) -> (Stats, Stats) {
    let (mut before, mut after) =
        tracing::subscriber::with_default(LaunchClock, || host_calls(stream, op, true));
    split_stats(&mut before, &mut after)
}

/// Host time of `op(i)` as [`host_split`] takes it, without the subscriber (median, p10, p90,
/// us): the reference that tells what the subscriber itself adds.
fn host_plain<V: DeviceResult>(
    stream: &Stream,
    op: impl FnMut(usize) -> Result<V, CudaBackendError>,
) -> Stats {
    let (mut total, mut none) = host_calls(stream, op, false);
    split_stats(&mut total, &mut none).0
}

/// SAMPLES calls of `op(i)` after WARMUP, the stream idle before each, their results freed in
/// stream order. `split`: (call -> the `ckks.kernel` span noted in `LAUNCH_AT`, span -> return)
/// per call; else (call -> return, nothing), us.
fn host_calls<V: DeviceResult>(
    stream: &Stream,
    mut op: impl FnMut(usize) -> Result<V, CudaBackendError>,
    split: bool,
) -> (Vec<f64>, Vec<f64>) {
    let (mut first, mut second) = (Vec::new(), Vec::new());
    for i in 0..WARMUP + SAMPLES {
        stream.synchronize().expect("sync");
        *LAUNCH_AT.lock().expect("clock") = None;
        let t = std::time::Instant::now();
        let out = op(i).expect("op");
        let end = std::time::Instant::now();
        out.free(stream).expect("free");
        if i < WARMUP {
            continue;
        }
        if split {
            let at = LAUNCH_AT
                .lock()
                .expect("clock")
                .expect("the op made no ckks.kernel span");
            first.push((at - t).as_secs_f64() * 1e6);
            second.push((end - at).as_secs_f64() * 1e6);
        } else {
            first.push((end - t).as_secs_f64() * 1e6);
            second.push(0.0);
        }
    }
    stream.synchronize().expect("sync");
    (first, second)
}

/// (median, p10, p90) of both lists.
fn split_stats(before: &mut [f64], after: &mut [f64]) -> (Stats, Stats) {
    let stats = |v: &mut [f64]| {
        v.sort_by(f64::total_cmp);
        (percentile(v, 0.5), percentile(v, 0.1), percentile(v, 0.9))
    };
    (stats(before), stats(after))
}

/// [`host_split`]'s clock alone: the same three readings around an empty call whose "span"
/// takes the clock as `LaunchClock::new_span` does, so that what the split adds of its own
/// can be taken off its figures.
fn host_split_empty() -> (Stats, Stats) {
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for i in 0..WARMUP + SAMPLES {
        *LAUNCH_AT.lock().expect("clock") = None;
        let t = std::time::Instant::now();
        let now = std::hint::black_box(std::time::Instant::now());
        *LAUNCH_AT.lock().expect("clock") = Some(now);
        let end = std::time::Instant::now();
        let at = LAUNCH_AT.lock().expect("clock").expect("set above");
        if i >= WARMUP {
            before.push((at - t).as_secs_f64() * 1e6);
            after.push((end - at).as_secs_f64() * 1e6);
        }
    }
    split_stats(&mut before, &mut after)
}

#[test]
fn oplat_table_on_the_gpu() {
    let required = std::env::var("FHELIUM_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let cpu = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [3; 32]).expect("cpu");
    // `cargo xtask bench --device cuda:N` names the device.
    let ordinal: u32 = std::env::var("FHELIUM_BENCH_DEVICE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let gpu = match CudaEngine::new(cpu.context(), ordinal) {
        Ok(g) => g,
        Err(e) => {
            assert!(!required, "FHELIUM_REQUIRE_GPU=1 but no CUDA engine: {e}");
            eprintln!("skipped: no CUDA device available ({e})");
            return;
        }
    };
    let s = gpu.stream().expect("stream");
    let slots = cpu.num_slots();
    let cts: Vec<GpuCiphertext> = (0..SETS)
        .map(|k| {
            let m: Vec<f64> = (0..slots)
                .map(|j| 0.01 * (0.017 * j as f64 + k as f64).sin())
                .collect();
            let ct = cpu.encrypt_message(&m).expect("encrypt");
            gpu.upload_ciphertext(&ct, &s).expect("upload")
        })
        .collect();
    let keys: Vec<_> = (1..=SETS as i64)
        .map(|step| {
            let k = cpu
                .create_rotation_key(step, cpu.secret_key())
                .expect("key");
            gpu.upload_rotation_key(&k, &s).expect("upload key")
        })
        .collect();
    let rlks: Vec<_> = (0..SETS)
        .map(|_| {
            let k = cpu
                .create_relinearization_key(cpu.secret_key())
                .expect("rlk");
            gpu.upload_relinearization_key(&k, &s).expect("upload rlk")
        })
        .collect();
    let half = cpu
        .prepare_plaintext_for_multiplication(
            &cpu.encode(&vec![0.5; slots], 0, None).expect("encode"),
            ModulusBasis::Q,
        )
        .expect("prepare");
    let pts: Vec<_> = (0..SETS)
        .map(|_| gpu.upload_plaintext(&half, &s).expect("upload pt"))
        .collect();
    let ntts: Vec<GpuCiphertext> = cts
        .iter()
        .map(|c| gpu.coefficient_domain_to_ntt_domain(c, &s).expect("ntt"))
        .collect();
    let prods: Vec<GpuCiphertext> = (0..SETS)
        .map(|k| {
            gpu.multiply(&ntts[k], &ntts[(k + 1) % SETS], &s)
                .expect("multiply")
        })
        .collect();
    s.synchronize().expect("sync");

    let sk = gpu.upload_secret_key(cpu.secret_key(), &s).expect("sk");
    let pk = gpu.upload_public_key(cpu.public_key(), &s).expect("pk");
    let msg: Vec<f64> = (0..slots)
        .map(|j| 0.01 * (0.017 * j as f64).sin())
        .collect();
    let mut rows: Vec<(&str, Option<Timing>)> = Vec::new();
    // Host encode + host sampling + one upload + 7 launches: events around the whole call
    // (the stream is idle at the start event, so the interval is the call's wall time).
    rows.push((
        "encrypt_message",
        Some(time_op(&s, |_| gpu.encrypt_message(&msg, &pk, &s))),
    ));
    rows.push((
        "rotate_with_key",
        Some(time_op(&s, |i| {
            gpu.rotate_with_key(&cts[i % SETS], &keys[(i / SETS + i) % SETS], &s)
        })),
    ));
    rows.push((
        "coefficient_to_ntt",
        Some(time_op(&s, |i| {
            gpu.coefficient_domain_to_ntt_domain(&cts[i % SETS], &s)
        })),
    ));
    rows.push((
        "multiply_plaintext",
        Some(time_op(&s, |i| {
            gpu.multiply_plaintext(&ntts[i % SETS], &pts[(i + 1) % SETS], &s)
        })),
    ));
    rows.push((
        "ntt_to_coefficient",
        Some(time_op(&s, |i| {
            gpu.ntt_domain_to_coefficient_domain(&ntts[i % SETS], &s)
        })),
    ));
    rows.push((
        "rescale_to_next_level",
        Some(time_op(&s, |i| {
            gpu.rescale_to_next_level(&cts[i % SETS], &s)
        })),
    ));
    // Device phase (5 launches) + synchronise + download 2 rows + host reconstruction and decode:
    // host wall clock, the stream idle before each call.
    rows.push((
        "decrypt_message",
        Some(time_host(&s, |i| {
            let out = gpu
                .decrypt_message(&cts[i % SETS], &sk, &s)
                .expect("decrypt");
            assert_eq!(out.len(), slots);
        })),
    ));
    // Operations as steps of a chained call: each step takes the sample index and the step
    // before's result (None for the first); `chained` frees every result but the last.
    type Step<'a> =
        &'a dyn Fn(usize, Option<&GpuCiphertext>) -> Result<GpuCiphertext, CudaBackendError>;
    let chained = |steps: &[Step<'_>], i: usize| -> Result<GpuCiphertext, CudaBackendError> {
        let (first, rest) = steps.split_first().expect("a row has steps");
        let mut last = first(i, None)?;
        for step in rest {
            let next = step(i, Some(&last))?;
            std::mem::replace(&mut last, next).free_async(&s)?;
        }
        Ok(last)
    };
    let rot = |i: usize, _: Option<&GpuCiphertext>| {
        gpu.rotate_with_key(&cts[i % SETS], &keys[(i / SETS + i) % SETS], &s)
    };
    let relin = |i: usize, _: Option<&GpuCiphertext>| {
        gpu.relinearize_with_key(&prods[i % SETS], &rlks[(i / SETS + i) % SETS], &s)
    };
    // Each op on the step before's result, or on a stored input of the right domain.
    let ntt = |i: usize, c: Option<&GpuCiphertext>| {
        gpu.coefficient_domain_to_ntt_domain(c.unwrap_or(&cts[i % SETS]), &s)
    };
    let mulpt = |i: usize, c: Option<&GpuCiphertext>| {
        gpu.multiply_plaintext(c.unwrap_or(&ntts[i % SETS]), &pts[i % SETS], &s)
    };
    let intt = |i: usize, c: Option<&GpuCiphertext>| {
        gpu.ntt_domain_to_coefficient_domain(c.unwrap_or(&ntts[i % SETS]), &s)
    };
    let rescale = |i: usize, c: Option<&GpuCiphertext>| {
        gpu.rescale_to_next_level(c.unwrap_or(&cts[i % SETS]), &s)
    };
    // The same ops on their stored inputs, whatever came before.
    let ntt_own = |i: usize, _: Option<&GpuCiphertext>| ntt(i, None);
    let ntt_other = |i: usize, _: Option<&GpuCiphertext>| ntt(i + 1, None);
    let mulpt_own = |i: usize, _: Option<&GpuCiphertext>| mulpt(i, None);
    let intt_own = |i: usize, _: Option<&GpuCiphertext>| intt(i, None);
    // rotate -> NTT -> multiply_plaintext -> INTT -> rescale, each on the one before's result.
    let stage: [Step<'_>; 5] = [&rot, &ntt, &mulpt, &intt, &rescale];
    rows.push(("example14_stage", Some(time_op(&s, |i| chained(&stage, i)))));
    // The same stage recorded as one pipeline: one chain graph of seven kernels.
    let stage_pipeline = |i: usize| -> Result<GpuCiphertext, CudaBackendError> {
        let mut p = gpu.pipeline(&s);
        let x = p.input(&cts[i % SETS]);
        let r = p.rotate_with_key(x, &keys[(i / SETS + i) % SETS])?;
        let r = p.coefficient_domain_to_ntt_domain(r)?;
        let r = p.multiply_plaintext(r, &pts[i % SETS])?;
        let r = p.ntt_domain_to_coefficient_domain(r)?;
        let r = p.rescale_to_next_level(r)?;
        p.submit()?.take(r)
    };
    rows.push((
        "example14_stage/pipeline",
        Some(time_op(&s, stage_pipeline)),
    ));
    // Two stages on two ciphertexts as one pipeline: 14 launches, two chain graphs of seven.
    rows.push((
        "example14_stage_x2/pipeline",
        Some(time_op(&s, |i| {
            let mut p = gpu.pipeline(&s);
            let mut last = Vec::with_capacity(2);
            for j in [i, i + 1] {
                let x = p.input(&cts[j % SETS]);
                let r = p.rotate_with_key(x, &keys[(j / SETS + j) % SETS])?;
                let r = p.coefficient_domain_to_ntt_domain(r)?;
                let r = p.multiply_plaintext(r, &pts[j % SETS])?;
                let r = p.ntt_domain_to_coefficient_domain(r)?;
                last.push(p.rescale_to_next_level(r)?);
            }
            p.submit()?.take(last[1])
        })),
    ));
    rows.push((
        "multiply_ct_ct",
        Some(time_op(&s, |i| {
            gpu.multiply(&ntts[i % SETS], &ntts[(i + 1) % SETS], &s)
        })),
    ));
    rows.push((
        "relinearize",
        Some(time_op(&s, |i| {
            gpu.relinearize_with_key(&prods[i % SETS], &rlks[(i / SETS + i) % SETS], &s)
        })),
    ));
    // Hoisted rotations: one ciphertext by all SETS keys with one shared ModUp, against the
    // same rotations one by one in one call (FHElium's table has no hoisted op).
    let all_keys: Vec<&GpuSwitchKey> = keys.iter().collect();
    rows.push((
        "rotate_many_with_keys/4",
        Some(time_op(&s, |i| {
            let mut out = gpu.rotate_many_with_keys(&cts[i % SETS], &all_keys, &s)?;
            let first = out.remove(0);
            for r in out {
                r.free_async(&s)?;
            }
            Ok(first)
        })),
    ));
    rows.push((
        "rotate_many_with_keys/4/pipeline",
        Some(time_op(&s, |i| {
            let mut p = gpu.pipeline(&s);
            let x = p.input(&cts[i % SETS]);
            let rs = p.rotate_many_with_keys(x, &all_keys)?;
            p.submit()?.take(rs[0])
        })),
    ));
    rows.push((
        "rotate_x4_one_by_one",
        Some(time_op(&s, |i| {
            let c = &cts[i % SETS];
            let first = gpu.rotate_with_key(c, all_keys[0], &s)?;
            for k in &all_keys[1..] {
                gpu.rotate_with_key(c, k, &s)?.free_async(&s)?;
            }
            Ok(first)
        })),
    ));
    // Device encoding beyond FHElium's table: a plaintext operand at level 0 from real slots,
    // and complex slots through encryption and decryption.
    rows.push((
        "encode_for_multiplication",
        Some(time_op(&s, |_| {
            gpu.encode_for_multiplication(&msg, 0, None, ModulusBasis::Q, &s)
        })),
    ));
    let zmsg: Vec<num_complex::Complex64> = msg
        .iter()
        .map(|&x| num_complex::Complex64::new(x, -0.5 * x))
        .collect();
    rows.push((
        "encrypt_complex_message",
        Some(time_op(&s, |_| gpu.encrypt_complex_message(&zmsg, &pk, &s))),
    ));
    rows.push((
        "decrypt_complex_message",
        Some(time_host(&s, |i| {
            let out = gpu
                .decrypt_complex_message(&cts[i % SETS], &sk, &s)
                .expect("decrypt");
            assert_eq!(out.len(), slots);
        })),
    ));
    // A rotation key made on the device (decision 0531): a bounded device key cache's miss.
    // Each call lets the previous key go (in order on `s`) and makes the key of step 3 again.
    let source = std::sync::Arc::new(
        CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [3; 32]).expect("cpu"),
    );
    let made = gpu
        .device_key_cache(std::sync::Arc::clone(&source), &s)
        .expect("device key cache");
    rows.push((
        "rotation_key_on_device",
        Some(time_op(&s, |_| {
            made.clear(&s)?;
            gpu.cached_rotation_key(&made, 3, &s)
        })),
    ));
    // The same NTT and key-switch ops on the other kernel choices, for comparison in the same
    // run (see `NttKernels`).
    let default = gpu.ntt_kernels();
    for (names, kernels) in [
        (
            [
                "coefficient_to_ntt/2pass",
                "ntt_to_coefficient/2pass",
                "rotate_with_key/2pass",
                "relinearize/2pass",
            ],
            NttKernels::TwoPass,
        ),
        (
            [
                "coefficient_to_ntt/cl512",
                "ntt_to_coefficient/cl512",
                "rotate_with_key/cl512",
                "relinearize/cl512",
            ],
            NttKernels::Cluster,
        ),
        (
            [
                "coefficient_to_ntt/clpre",
                "ntt_to_coefficient/clpre",
                "rotate_with_key/clpre",
                "relinearize/clpre",
            ],
            NttKernels::ClusterPreload,
        ),
    ] {
        gpu.set_ntt_kernels(kernels);
        let alt = [
            (
                names[0],
                time_op(&s, |i| {
                    gpu.coefficient_domain_to_ntt_domain(&cts[i % SETS], &s)
                }),
            ),
            (
                names[1],
                time_op(&s, |i| {
                    gpu.ntt_domain_to_coefficient_domain(&ntts[i % SETS], &s)
                }),
            ),
            (
                names[2],
                time_op(&s, |i| {
                    gpu.rotate_with_key(&cts[i % SETS], &keys[(i / SETS + i) % SETS], &s)
                }),
            ),
            (
                names[3],
                time_op(&s, |i| {
                    gpu.relinearize_with_key(&prods[i % SETS], &rlks[(i / SETS + i) % SETS], &s)
                }),
            ),
        ];
        assert_eq!(
            gpu.ntt_kernels(),
            kernels,
            "the driver refused a cluster launch"
        );
        for (name, t) in alt {
            rows.push((name, Some(t)));
        }
    }
    gpu.set_ntt_kernels(default);
    // Without the engine's buffer recycling: every result from the stream-ordered pool.
    let recycling = gpu.recycling();
    gpu.set_recycling(false);
    let pool = [
        (
            "coefficient_to_ntt/pool",
            time_op(&s, |i| {
                gpu.coefficient_domain_to_ntt_domain(&cts[i % SETS], &s)
            }),
        ),
        (
            "multiply_plaintext/pool",
            time_op(&s, |i| {
                gpu.multiply_plaintext(&ntts[i % SETS], &pts[(i + 1) % SETS], &s)
            }),
        ),
        (
            "rotate_with_key/pool",
            time_op(&s, |i| {
                gpu.rotate_with_key(&cts[i % SETS], &keys[(i / SETS + i) % SETS], &s)
            }),
        ),
    ];
    gpu.set_recycling(recycling);
    for (name, t) in pool {
        rows.push((name, Some(t)));
    }
    // Without launch graphs: every kernel by cuLaunchKernel / cuLaunchCooperativeKernel.
    let graphs = gpu.graph_launches();
    gpu.set_graph_launches(false);
    let direct = [
        (
            "coefficient_to_ntt/direct",
            time_op(&s, |i| {
                gpu.coefficient_domain_to_ntt_domain(&cts[i % SETS], &s)
            }),
        ),
        (
            "ntt_to_coefficient/direct",
            time_op(&s, |i| {
                gpu.ntt_domain_to_coefficient_domain(&ntts[i % SETS], &s)
            }),
        ),
        (
            "multiply_plaintext/direct",
            time_op(&s, |i| {
                gpu.multiply_plaintext(&ntts[i % SETS], &pts[(i + 1) % SETS], &s)
            }),
        ),
        (
            "rotate_with_key/direct",
            time_op(&s, |i| {
                gpu.rotate_with_key(&cts[i % SETS], &keys[(i / SETS + i) % SETS], &s)
            }),
        ),
    ];
    gpu.set_graph_launches(graphs);
    for (name, t) in direct {
        rows.push((name, Some(t)));
    }
    // The example-14 stage by its boundaries: pairs of its ops (and others next to a key
    // switch) in one call, so their burst against the ops' own bursts shows what each boundary
    // between different ops costs on the GPU.
    let split: [(&str, &[Step<'_>]); 13] = [
        ("stage_split/rot>ntt", &[&rot, &ntt]),
        ("stage_split/ntt>mulpt", &[&ntt, &mulpt]),
        ("stage_split/mulpt>intt", &[&mulpt, &intt]),
        ("stage_split/intt>rescale", &[&intt, &rescale]),
        ("stage_split/rescale>rot", &[&rescale, &rot]),
        ("stage_split/no_rotation", &[&ntt, &mulpt, &intt, &rescale]),
        ("stage_split/rot>mulpt", &[&rot, &mulpt_own]),
        ("stage_split/rot>rescale", &[&rot, &rescale]),
        ("stage_split/rot>intt", &[&rot, &intt_own]),
        ("stage_split/rot>ntt_other", &[&rot, &ntt_other]),
        ("stage_split/ntt>rot", &[&ntt, &rot]),
        ("stage_split/relin>ntt", &[&relin, &ntt_own]),
        ("stage_split/ntt_twice", &[&ntt, &intt]),
    ];
    for (name, steps) in split {
        rows.push((name, Some(time_op(&s, |i| chained(steps, i)))));
    }
    // rot>mulpt as one pipeline (one chain graph): the boundary inside a graph.
    rows.push((
        "stage_split/rot>mulpt/pipeline",
        Some(time_op(&s, |i| {
            let mut p = gpu.pipeline(&s);
            let (x, n) = (p.input(&cts[i % SETS]), p.input(&ntts[i % SETS]));
            p.rotate_with_key(x, &keys[(i / SETS + i) % SETS])?;
            let m = p.multiply_plaintext(n, &pts[i % SETS])?;
            p.submit()?.take(m)
        })),
    ));
    // The chain graphs with full edges instead of programmatic ones (decision 0508): what the
    // programmatic edges give inside a key switch against what its boundaries cost.
    let programmatic = gpu.programmatic_launch();
    gpu.set_programmatic_launch(false);
    let full: [(&str, &[Step<'_>]); 4] = [
        ("rotate_with_key/full_edges", &[&rot]),
        ("relinearize/full_edges", &[&relin]),
        ("example14_stage/full_edges", &stage),
        ("stage_split/rot>mulpt/full_edges", &[&rot, &mulpt_own]),
    ];
    let full = full.map(|(name, steps)| (name, time_op(&s, |i| chained(steps, i))));
    let full_pipeline = time_op(&s, stage_pipeline);
    gpu.set_programmatic_launch(programmatic);
    for (name, t) in full {
        rows.push((name, Some(t)));
    }
    rows.push(("example14_stage/pipeline/full_edges", Some(full_pipeline)));

    let same_call = peer_oplat();
    let mut table = format!(
        "preset=slots8192-scale40-levels7-int64 device=cuda:{ordinal} (fhelium-rs CudaEngine, CUDA events, 200 after 20 warm-ups, 4 keys x 4 ciphertexts)\n",
    );
    table.push_str(if same_call.is_empty() {
        "fhelium_us: FHElium's figures in reference/fhelium-h200/oplat.txt\n"
    } else {
        "fhelium_us: FHElium timed in the same device call (FHELIUM_PEER_OPLAT)\n"
    });
    table.push_str(&format!(
        "{:<24} {:>10} {:>9} {:>9} {:>12} {:>8} {:>10} {:>9}\n",
        "op", "median_us", "p10", "p90", "fhelium_us", "ratio", "submit_us", "burst_us"
    ));
    for (name, r) in &rows {
        let op = name.split('/').next();
        let peer = same_call
            .iter()
            .find(|(n, _)| op == Some(n.as_str()))
            .map(|p| p.1)
            .or_else(|| FHELIUM_US.iter().find(|(n, _)| op == Some(*n)).map(|p| p.1))
            .unwrap_or(f64::NAN);
        match r {
            Some(((med, p10, p90), diag)) => {
                let (sub, burst) = diag.map_or((f64::NAN, f64::NAN), |d| (d.submit_us, d.burst_us));
                table.push_str(&format!(
                    "{name:<24} {med:>10.1} {p10:>9.1} {p90:>9.1} {peer:>12.1} {:>7.1}x {sub:>10.1} {burst:>9.1}\n",
                    peer / med
                ));
            }
            None => table.push_str(&format!(
                "{name:<24} {:>10} {:>9} {:>9} {peer:>12.1} {:>8}\n",
                "host", "-", "-", "-"
            )),
        }
    }
    table.push_str(&format!(
        "(rows without a suffix: NttKernels::{default:?}; /2pass two-pass, /cl512 8 x 512-thread clusters, /clpre the same with twiddles preloaded into registers; /pool without the engine's buffer recycling; /direct without launch graphs; rotate_many_with_keys/4: one ciphertext by 4 keys, hoisted, against rotate_x4_one_by_one: the same 4 rotations one by one in one call; encode_for_multiplication: real slots to a level-0 plaintext operand on the device; encrypt_complex_message, decrypt_complex_message: complex slots; stage_split/A>B: two neighbouring ops of the example-14 stage (or others next to a key switch) in one call, no_rotation: the stage without its rotation; /full_edges: the chain graphs with full edges instead of programmatic ones; /pipeline: the operations recorded as one Pipeline (one chain graph of up to 16 kernels; example14_stage_x2/pipeline: two stages on two ciphertexts); rotation_key_on_device: a device key cache's miss, the key of step 3 made on the device (the host path: ~40 ms of key generation and an 18 MiB upload); no FHElium op for these)\n"
    ));
    table.push_str(&format!(
        "chain graphs launched {}, programmatic edges built {}, graphs held {}\n",
        gpu.chain_launches(),
        gpu.programmatic_edges(),
        gpu.graph_count()
    ));
    let (e0, e1) = host_split_empty();
    table.push_str(&format!(
        "host split of an empty call (the clock's own cost): {:.2} us (p10 {:.2}, p90 {:.2}) and {:.2} us (p10 {:.2}, p90 {:.2})\n",
        e0.0, e0.1, e0.2, e1.0, e1.1, e1.2
    ));
    // The host time of the one-launch NTT ops split at their launch (a scoped subscriber that
    // notes the engine's `ckks.kernel` span): how much of `submit_us` is the engine's own work.
    // Each split sits between two plain timings of the same calls (no subscriber).
    let ct_op = |i: usize| gpu.coefficient_domain_to_ntt_domain(&cts[i % SETS], &s);
    let inv_op = |i: usize| gpu.ntt_domain_to_coefficient_domain(&ntts[i % SETS], &s);
    let pt_op = |i: usize| gpu.multiply_plaintext(&ntts[i % SETS], &pts[(i + 1) % SETS], &s);
    let splits = [
        (
            "coefficient_to_ntt",
            host_plain(&s, ct_op),
            host_split(&s, ct_op),
            host_plain(&s, ct_op),
        ),
        (
            "ntt_to_coefficient",
            host_plain(&s, inv_op),
            host_split(&s, inv_op),
            host_plain(&s, inv_op),
        ),
        (
            "multiply_plaintext",
            host_plain(&s, pt_op),
            host_split(&s, pt_op),
            host_plain(&s, pt_op),
        ),
    ];
    for (name, p0, (before, after), p1) in splits {
        table.push_str(&format!(
            "host split {name}: to the launch span {:.2} us (p10 {:.2}, p90 {:.2}), from it to the return {:.2} us (p10 {:.2}, p90 {:.2}); without the subscriber {:.2} / {:.2} us\n",
            before.0, before.1, before.2, after.0, after.1, after.2, p0.0, p1.0
        ));
        assert!(
            before.0.is_finite() && after.0 > 0.0 && p0.0 > 0.0,
            "{name}: no host split"
        );
    }
    eprintln!("{table}");
    if let Ok(out) = std::env::var("OUT") {
        let _ = std::fs::write(std::path::Path::new(&out).join("oplat_gpu.txt"), &table);
    }
    for (name, r) in &rows {
        if let Some(((med, _, _), _)) = r {
            assert!(med.is_finite() && *med > 0.0, "{name}: no timing");
        }
    }
}
