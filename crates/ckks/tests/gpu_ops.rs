//! Bit-exactness of the CUDA engine against the CPU engine: every operation on real
//! ciphertexts at several levels, GPU words == CPU words, with the device pool poisoned before
//! each operation so an unwritten output word cannot match by luck.
//!
//! Built only with feature `cuda`. Without a CUDA device each test prints why and passes,
//! unless `FHELIUM_REQUIRE_GPU=1` (set by the GPU bundle's run-all.sh) makes that a failure.
#![cfg(feature = "cuda")]

mod capture;
mod common;

use std::sync::Arc;

use fhelium_ckks::cuda::{CudaBackendError, CudaEngine, GpuCiphertext, GpuSwitchKey, NttKernels};
use fhelium_ckks::{
    CachedKey, Ciphertext, CkksError, CpuEngine, Domain, ModulusBasis, Preset, RelinearizationKey,
    RotationKey,
};

use num_complex::Complex64;

const SEED: [u8; 32] = [7; 32];

// Field order = drop order: the stream goes before the engine releases the context.
struct Fixture {
    stream: cust::stream::Stream,
    gpu: CudaEngine,
    cpu: CpuEngine,
}

fn fixture() -> Option<Fixture> {
    fixture_with(Preset::Slots8192Scale40Levels7Int64)
}

/// [`fixture`] for another preset.
fn fixture_with(preset: Preset) -> Option<Fixture> {
    let required = std::env::var("FHELIUM_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let cpu = CpuEngine::with_seed(preset, SEED).expect("cpu engine");
    match CudaEngine::new(cpu.context(), 0) {
        Ok(gpu) => {
            let stream = gpu.stream().expect("stream");
            Some(Fixture { stream, gpu, cpu })
        }
        Err(e) => {
            assert!(!required, "FHELIUM_REQUIRE_GPU=1 but no CUDA engine: {e}");
            eprintln!("skipped: no CUDA device available ({e})");
            None
        }
    }
}

impl Fixture {
    /// A relinearization key from the CPU engine's secret key, and its upload.
    fn relinearization_keys(&self) -> (RelinearizationKey, GpuSwitchKey) {
        let rlk = self
            .cpu
            .create_relinearization_key(self.cpu.secret_key())
            .expect("rlk");
        let drlk = self
            .gpu
            .upload_relinearization_key(&rlk, &self.stream)
            .expect("upload rlk");
        (rlk, drlk)
    }
}

/// Runs `body` once per NTT kernel choice (two-pass, the cluster kernels with and without
/// preloaded twiddles, and the default one-launch kernels without clusters), with a label for each; checks
/// that the driver accepted the cluster launches (a refused one would turn the engine to
/// two-pass and test that path again).
fn on_both_kernel_paths(fx: &Fixture, mut body: impl FnMut(&str)) {
    for kernels in [
        NttKernels::Cluster,
        NttKernels::TwoPass,
        NttKernels::ClusterPreload,
        NttKernels::GlobalSync,
    ] {
        fx.gpu.set_ntt_kernels(kernels);
        body(&format!("{kernels:?}"));
        assert_eq!(
            fx.gpu.ntt_kernels(),
            kernels,
            "the driver refused a cluster kernel launch"
        );
    }
}

/// A CPU engine of the fixture's context and secret key (same seed), shared as a key cache's
/// source.
fn source_engine() -> Arc<CpuEngine> {
    Arc::new(
        CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, SEED).expect("source engine"),
    )
}

/// Deterministic, non-trivial message for seed `k`.
fn message(cpu: &CpuEngine, k: u64) -> Vec<f64> {
    (0..cpu.num_slots())
        .map(|j| 0.01 * ((0.017 + 0.003 * k as f64) * j as f64 + k as f64).sin())
        .collect()
}

fn fresh(cpu: &CpuEngine, k: u64, level: usize) -> Ciphertext {
    let ct = cpu.encrypt_message(&message(cpu, k)).expect("encrypt");
    cpu.mod_switch_to_level(&ct, level).expect("mod switch")
}

/// What [`Fixture::ntt_and_rotation_case`] makes.
struct NttAndRotation {
    d: GpuCiphertext,
    dkey: GpuSwitchKey,
    want_ntt: Ciphertext,
    want_rot: Ciphertext,
}

impl Fixture {
    /// The CPU rotation key by one slot and its upload on the fixture's stream.
    fn rotation_key_by_one(&self) -> (RotationKey, GpuSwitchKey) {
        let key = self
            .cpu
            .create_rotation_key(1, self.cpu.secret_key())
            .expect("rotation key");
        let dkey = self
            .gpu
            .upload_rotation_key(&key, &self.stream)
            .expect("upload key");
        (key, dkey)
    }

    /// A fresh ciphertext (seed `k`, `level`) on the device with the CPU engine's NTT of it
    /// and its rotation by one slot, and the uploaded key for that rotation.
    fn ntt_and_rotation_case(&self, k: u64, level: usize) -> NttAndRotation {
        let ct = fresh(&self.cpu, k, level);
        let want_ntt = self
            .cpu
            .coefficient_domain_to_ntt_domain(&ct)
            .expect("cpu ntt");
        let (key, dkey) = self.rotation_key_by_one();
        let want_rot = self.cpu.rotate_with_key(&ct, &key).expect("cpu rotate");
        NttAndRotation {
            d: self.up(&ct),
            dkey,
            want_ntt,
            want_rot,
        }
    }

    fn up(&self, ct: &Ciphertext) -> GpuCiphertext {
        self.gpu
            .upload_ciphertext(ct, &self.stream)
            .expect("upload")
    }

    /// Poison the pool with enough words for any result, run `f`, compare with `want`.
    fn check(
        &self,
        what: &str,
        want: &Ciphertext,
        f: impl FnOnce() -> Result<GpuCiphertext, CudaBackendError>,
    ) {
        self.check_poisoned(what, want, 0xFF, f);
    }

    /// [`Fixture::check`] with every poisoned byte set to `byte`.
    fn check_poisoned(
        &self,
        what: &str,
        want: &Ciphertext,
        byte: u8,
        f: impl FnOnce() -> Result<GpuCiphertext, CudaBackendError>,
    ) {
        self.gpu
            .poison_pool_with(4 * 9 * 16384 * 9, byte, &self.stream)
            .expect("poison");
        let got = f().unwrap_or_else(|e| panic!("{what}: {e}"));
        let host = self
            .gpu
            .download_ciphertext(&got, &self.stream)
            .expect("download");
        common::assert_same_words(what, &host, want);
    }
}

#[test]
fn ntt_both_directions_match_cpu_at_several_levels() {
    let Some(fx) = fixture() else { return };
    for level in [0usize, 3, 6] {
        let ct = fresh(&fx.cpu, level as u64, level);
        let want = fx
            .cpu
            .coefficient_domain_to_ntt_domain(&ct)
            .expect("cpu ntt");
        let back = fx
            .cpu
            .ntt_domain_to_coefficient_domain(&want)
            .expect("cpu intt");
        assert_eq!(back.words(), ct.words(), "CPU round trip");
        let d = fx.up(&ct);
        let dn = fx.up(&want);
        on_both_kernel_paths(&fx, |path| {
            // Under GlobalSync a ciphertext's NTTs run the paired-block kernels
            // (ntt_fwd_gp / ntt_inv_gp, which fall back to the *_gs kernels silently when
            // refused): each direction must count one paired launch there, none elsewhere.
            let paired = u64::from(fx.gpu.ntt_kernels() == NttKernels::GlobalSync);
            let before = fx.gpu.paired_ntt_launches();
            fx.check(
                &format!("coefficient_domain_to_ntt_domain L{level} ({path})"),
                &want,
                || fx.gpu.coefficient_domain_to_ntt_domain(&d, &fx.stream),
            );
            assert_eq!(
                fx.gpu.paired_ntt_launches() - before,
                paired,
                "forward NTT L{level} ({path}): paired kernel launches"
            );
            let before = fx.gpu.paired_ntt_launches();
            fx.check(
                &format!("ntt_domain_to_coefficient_domain L{level} ({path})"),
                &back,
                || fx.gpu.ntt_domain_to_coefficient_domain(&dn, &fx.stream),
            );
            assert_eq!(
                fx.gpu.paired_ntt_launches() - before,
                paired,
                "inverse NTT L{level} ({path}): paired kernel launches"
            );
        });
    }
}

/// The paired NTT kernels choose their butterflies per prime (decision 0511): binary64 below
/// 2^41, integer (`Loose`) above. The fixture's chain has one integer prime, its 60-bit base
/// prime, in the two transposed limb rows; a 50-bit chain (`slots8192-scale50-levels5`) has
/// integer primes in every row, and scale primes that are not 60-bit. Both directions at
/// every level equal the CPU engine's words, each direction one paired launch.
#[test]
fn paired_ntts_of_a_50_bit_chain_match_cpu_at_every_level() {
    let Some(fx) = fixture_with(Preset::Slots8192Scale50Levels5Int64) else {
        return;
    };
    let q = &fx.cpu.context().config().q_primes;
    assert!(
        q.iter().all(|&p| p >= 1 << 41) && q.iter().any(|&p| p < 1 << 59),
        "the chain {q:?} is not all integer primes with some below 60 bits"
    );
    fx.gpu.set_ntt_kernels(NttKernels::GlobalSync);
    for level in 0..=fx.cpu.max_level() {
        let ct = fresh(&fx.cpu, level as u64, level);
        let want = fx
            .cpu
            .coefficient_domain_to_ntt_domain(&ct)
            .expect("cpu ntt");
        let (d, dn) = (fx.up(&ct), fx.up(&want));
        let before = fx.gpu.paired_ntt_launches();
        fx.check(
            &format!("forward NTT, 50-bit chain, L{level}"),
            &want,
            || fx.gpu.coefficient_domain_to_ntt_domain(&d, &fx.stream),
        );
        fx.check(&format!("inverse NTT, 50-bit chain, L{level}"), &ct, || {
            fx.gpu.ntt_domain_to_coefficient_domain(&dn, &fx.stream)
        });
        assert_eq!(
            fx.gpu.paired_ntt_launches() - before,
            2,
            "50-bit chain L{level}: paired kernel launches"
        );
    }
}

/// A result freed in stream order is reused by the next allocation of its length on the same
/// stream (not on another stream); outputs written into a recycled buffer are still exact
/// (the recycled buffer is poisoned first); turning recycling off empties the bins.
#[test]
fn freed_results_are_recycled_on_their_stream_only() {
    let Some(fx) = fixture() else { return };
    fx.gpu.set_recycling(true);
    fx.gpu.set_recycling(false); // start from empty bins
    fx.gpu.set_recycling(true);
    let ct = fresh(&fx.cpu, 7, 0);
    let want = fx
        .cpu
        .coefficient_domain_to_ntt_domain(&ct)
        .expect("cpu ntt");
    let d = fx.up(&ct);
    fx.stream.synchronize().expect("sync"); // `other` reads `d` too
    let first = fx
        .gpu
        .coefficient_domain_to_ntt_domain(&d, &fx.stream)
        .expect("ntt");
    first.free_async(&fx.stream).expect("free");
    assert_eq!(
        fx.gpu.recycled_buffers(),
        1,
        "the freed result waits in the bins"
    );
    let other = fx.gpu.stream().expect("stream");
    let elsewhere = fx
        .gpu
        .coefficient_domain_to_ntt_domain(&d, &other)
        .expect("ntt on another stream");
    assert_eq!(
        fx.gpu.recycled_buffers(),
        1,
        "another stream must not take it"
    );
    let host = fx
        .gpu
        .download_ciphertext(&elsewhere, &other)
        .expect("download");
    common::assert_same_words("ntt on another stream", &host, &want);
    elsewhere.free_async(&other).expect("free");
    assert_eq!(fx.gpu.recycled_buffers(), 2);
    // poison_pool poisons the waiting buffer of this stream, so an unwritten word would show.
    fx.check("ntt into a recycled buffer", &want, || {
        let r = fx.gpu.coefficient_domain_to_ntt_domain(&d, &fx.stream);
        assert_eq!(
            fx.gpu.recycled_buffers(),
            1,
            "this stream's buffer was taken"
        );
        r
    });
    other.synchronize().expect("sync");
    fx.gpu.set_recycling(false);
    assert!(!fx.gpu.recycling());
    assert_eq!(fx.gpu.recycled_buffers(), 0, "off empties the bins");
    let r = fx
        .gpu
        .coefficient_domain_to_ntt_domain(&d, &fx.stream)
        .expect("ntt");
    r.free_async(&fx.stream).expect("free");
    assert_eq!(fx.gpu.recycled_buffers(), 0, "off: frees go to the pool");
    fx.gpu.set_recycling(true);
}

/// Chains with full edges (`set_programmatic_launch(false)`, decision 0508): rotate and
/// relinearize still go out as one chain graph each, build no programmatic edge and give the
/// CPU's words; with programmatic launch on again the same operations give the same words
/// from chains of the programmatic form (kept apart from the full-edge ones).
#[test]
fn chains_with_full_edges_change_no_word() {
    let Some(fx) = fixture() else { return };
    fx.gpu.set_ntt_kernels(NttKernels::GlobalSync);
    fx.gpu.set_graph_launches(true);
    assert!(
        fx.gpu.programmatic_launch(),
        "programmatic launch is on by default"
    );
    let (key, dkey) = fx.rotation_key_by_one();
    let (rlk, drlk) = fx.relinearization_keys();
    let ct = fresh(&fx.cpu, 14, 0);
    let want_rot = fx.cpu.rotate_with_key(&ct, &key).expect("cpu rotate");
    let a = fx
        .cpu
        .coefficient_domain_to_ntt_domain(&fresh(&fx.cpu, 15, 2))
        .expect("ntt");
    let prod = fx.cpu.multiply(&a, &a).expect("cpu multiply");
    let want_relin = fx.cpu.relinearize_with_key(&prod, &rlk).expect("cpu relin");
    let (d, dp) = (fx.up(&ct), fx.up(&prod));
    let driver = cust::CudaApiVersion::get().expect("driver version");
    for on in [false, true, false] {
        fx.gpu.set_programmatic_launch(on);
        assert_eq!(fx.gpu.programmatic_launch(), on);
        let label = if on {
            "programmatic edges"
        } else {
            "full edges"
        };
        let (edges, chains) = (fx.gpu.programmatic_edges(), fx.gpu.chain_launches());
        fx.check(&format!("rotate ({label})"), &want_rot, || {
            fx.gpu.rotate_with_key(&d, &dkey, &fx.stream)
        });
        fx.check(&format!("relinearize ({label})"), &want_relin, || {
            fx.gpu.relinearize_with_key(&dp, &drlk, &fx.stream)
        });
        assert_eq!(
            fx.gpu.chain_launches() - chains,
            2,
            "{label}: each operation as one chain graph"
        );
        if !on {
            assert_eq!(
                fx.gpu.programmatic_edges(),
                edges,
                "{label}: no programmatic edge built"
            );
        } else if (driver.major(), driver.minor()) >= (12, 3) {
            assert!(
                fx.gpu.programmatic_edges() > edges,
                "{label}: the chains of this form are new and hang their waiting kernels \
                 by programmatic edges"
            );
        }
    }
    fx.gpu.set_programmatic_launch(true);
}

/// The example-14 stage's plaintext: 0.5 in every slot, prepared for multiplication.
fn half_on_cpu(cpu: &CpuEngine) -> fhelium_ckks::Plaintext {
    cpu.prepare_plaintext_for_multiplication(
        &cpu.encode(&vec![0.5; cpu.num_slots()], 0, None)
            .expect("encode"),
        ModulusBasis::Q,
    )
    .expect("prepare")
}

/// [`half_on_cpu`] and its upload.
fn half_plaintext(fx: &Fixture) -> (fhelium_ckks::Plaintext, fhelium_ckks::cuda::GpuPlaintext) {
    let half = half_on_cpu(&fx.cpu);
    let dhalf = fx.gpu.upload_plaintext(&half, &fx.stream).expect("pt up");
    (half, dhalf)
}

/// Pipelines (decision 0513): the example-14 stage recorded as one pipeline is one chain
/// graph of seven kernels and gives the CPU engine's words, with programmatic and with full
/// edges; a pipeline longer than one chain (three rotations and an NTT: ten launches) goes
/// out as two chains, cut where an operation starts, with the same words as the operations
/// one by one; multiply -> relinearize -> rescale as well. Every intermediate is freed in
/// stream order (no drop waits for the device).
#[test]
fn pipelines_give_the_words_of_the_operations_one_by_one() {
    let Some(fx) = fixture() else { return };
    fx.gpu.set_ntt_kernels(NttKernels::GlobalSync);
    fx.gpu.set_graph_launches(true);
    let (s, g, cpu) = (&fx.stream, &fx.gpu, &fx.cpu);
    let (key, dkey) = fx.rotation_key_by_one();
    let (rlk, drlk) = fx.relinearization_keys();
    let (half, dhalf) = half_plaintext(&fx);
    let ct = fresh(cpu, 21, 0);
    let rot = cpu.rotate_with_key(&ct, &key).expect("cpu rotate");
    let want_stage = cpu
        .rescale_to_next_level(
            &cpu.ntt_domain_to_coefficient_domain(
                &cpu.multiply_plaintext(
                    &cpu.coefficient_domain_to_ntt_domain(&rot).expect("ntt"),
                    &half,
                )
                .expect("mul"),
            )
            .expect("intt"),
        )
        .expect("rescale");
    let d = fx.up(&ct);
    for pdl in [true, false] {
        g.set_programmatic_launch(pdl);
        let chains = g.chain_launches();
        fx.check(&format!("stage pipeline (pdl {pdl})"), &want_stage, || {
            let mut p = g.pipeline(s);
            let x = p.input(&d);
            let r = p.rotate_with_key(x, &dkey)?;
            let r = p.coefficient_domain_to_ntt_domain(r)?;
            let r = p.multiply_plaintext(r, &dhalf)?;
            let r = p.ntt_domain_to_coefficient_domain(r)?;
            let r = p.rescale_to_next_level(r)?;
            assert_eq!((p.launches(), p.chains()), (7, 1));
            assert_eq!(p.level(r)?, 1);
            assert_eq!(p.domain(r)?, Domain::Coefficient);
            let mut out = p.submit()?;
            out.take(r)
        });
        assert_eq!(g.chain_launches() - chains, 1, "pdl {pdl}: one chain graph");
    }
    g.set_programmatic_launch(true);
    // Ten launches: two chains (rotation, rotation, NTT | rotation... cut at an operation).
    let rot3 = cpu
        .rotate_with_key(&cpu.rotate_with_key(&rot, &key).expect("r2"), &key)
        .expect("r3");
    let want_long = cpu.coefficient_domain_to_ntt_domain(&rot3).expect("ntt");
    let chains = g.chain_launches();
    fx.check("three rotations and an NTT", &want_long, || {
        let mut p = g.pipeline(s);
        let x = p.input(&d);
        let r1 = p.rotate_with_key(x, &dkey)?;
        let r2 = p.rotate_with_key(r1, &dkey)?;
        let r3 = p.rotate_with_key(r2, &dkey)?;
        let n = p.coefficient_domain_to_ntt_domain(r3)?;
        assert_eq!((p.launches(), p.chains()), (10, 1));
        let mut out = p.submit()?;
        let got = out.take(n)?;
        // The intermediate rotation is a result too, with the CPU's words.
        let mid = out.take(r2)?;
        let host = g.download_ciphertext(&mid, s).expect("download");
        common::assert_same_words(
            "second rotation",
            &host,
            &cpu.rotate_with_key(&rot, &key).expect("r2"),
        );
        mid.free_async(s)?;
        Ok(got)
    });
    assert_eq!(g.chain_launches() - chains, 1, "ten launches as one chain");
    // multiply -> relinearize -> rescale (6 launches, one chain), two distinct inputs.
    let a = cpu
        .coefficient_domain_to_ntt_domain(&fresh(cpu, 22, 1))
        .expect("ntt a");
    let b = cpu
        .coefficient_domain_to_ntt_domain(&fresh(cpu, 23, 1))
        .expect("ntt b");
    let want_relin = cpu
        .rescale_to_next_level(
            &cpu.relinearize_with_key(&cpu.multiply(&a, &b).expect("mul"), &rlk)
                .expect("relin"),
        )
        .expect("rescale");
    let (da, db) = (fx.up(&a), fx.up(&b));
    fx.check("multiply, relinearize, rescale", &want_relin, || {
        let mut p = g.pipeline(s);
        let (x, y) = (p.input(&da), p.input(&db));
        let m = p.multiply(x, y)?;
        let r = p.relinearize_with_key(m, &drlk)?;
        let r = p.rescale_to_next_level(r)?;
        assert_eq!((p.launches(), p.chains()), (6, 1));
        p.submit()?.take(r)
    });
    // Hoisted rotations by four keys (the shared ModUp, then two launches per key): nine
    // launches, two chains cut between keys; each result is the CPU's rotation.
    let hoisted: Vec<(RotationKey, GpuSwitchKey)> = [1, 2, 3, -5]
        .iter()
        .map(|&step| {
            let key = cpu
                .create_rotation_key(step, cpu.secret_key())
                .expect("rotation key");
            let dk = g.upload_rotation_key(&key, s).expect("upload key");
            (key, dk)
        })
        .collect();
    let dks: Vec<&GpuSwitchKey> = hoisted.iter().map(|(_, k)| k).collect();
    g.poison_pool(4 * 9 * 16384 * 9, s).expect("poison");
    let mut p = g.pipeline(s);
    let x = p.input(&d);
    let rs = p.rotate_many_with_keys(x, &dks).expect("hoisted");
    assert_eq!((p.launches(), p.chains()), (9, 1));
    assert!(p.rotate_many_with_keys(x, &[]).expect("no keys").is_empty());
    assert_eq!(p.launches(), 9, "no keys, no launches");
    let chains = g.chain_launches();
    let mut out = p.submit().expect("submit");
    assert_eq!(g.chain_launches() - chains, 1, "nine launches as one chain");
    for ((key, _), r) in hoisted.iter().zip(rs) {
        let got = out.take(r).expect("take");
        let host = g.download_ciphertext(&got, s).expect("download");
        let want = cpu.rotate_with_key(&ct, key).expect("cpu rotate");
        common::assert_same_words("hoisted rotation in a pipeline", &host, &want);
        got.free_async(s).expect("free");
    }
    drop(out);
    // No drop waits for the device: intermediates, scratch and the result (freed by the
    // caller) all go back in stream order. (`check` drops its results, so this is timed
    // without it.)
    let waited = CudaEngine::waited_drops();
    for _ in 0..3 {
        let mut p = g.pipeline(s);
        let x = p.input(&d);
        let r = p.rotate_with_key(x, &dkey).expect("rotate");
        let r = p.coefficient_domain_to_ntt_domain(r).expect("ntt");
        let r = p.multiply_plaintext(r, &dhalf).expect("mul");
        let r = p.ntt_domain_to_coefficient_domain(r).expect("intt");
        let r = p.rescale_to_next_level(r).expect("rescale");
        let mut out = p.submit().expect("submit");
        out.take(r).expect("take").free_async(s).expect("free");
        out.free_rest().expect("free the rest");
    }
    assert_nothing_waited(
        s,
        waited,
        "pipelines free intermediates and scratch in stream order",
    );
}

/// After the work on `s`: no drop has waited for the device since the count was `since`.
fn assert_nothing_waited(s: &cust::stream::Stream, since: u64, what: &str) {
    s.synchronize().expect("sync");
    assert_eq!(CudaEngine::waited_drops(), since, "{what}");
}

/// Pipeline errors (decision 0513): an operation that fails records nothing and leaves the
/// pipeline as it was; a handle of another pipeline, an input or a result already taken is a
/// typed error naming the handle; a pipeline dropped before submission runs nothing and frees
/// in stream order.
#[test]
fn pipeline_errors_leave_the_pipeline_as_it_was() {
    let Some(fx) = fixture() else { return };
    fx.gpu.set_ntt_kernels(NttKernels::GlobalSync);
    let (s, g, cpu) = (&fx.stream, &fx.gpu, &fx.cpu);
    let (key, dkey) = fx.rotation_key_by_one();
    let (_, drlk) = fx.relinearization_keys();
    let ct = fresh(cpu, 24, 2);
    let want = cpu
        .coefficient_domain_to_ntt_domain(&cpu.rotate_with_key(&ct, &key).expect("rot"))
        .expect("ntt");
    let d = fx.up(&ct);
    let mut other = g.pipeline(s);
    let foreign = other.input(&d);
    fx.check("a pipeline after refused operations", &want, || {
        let mut p = g.pipeline(s);
        let x = p.input(&d);
        let r = p.rotate_with_key(x, &dkey)?;
        let before = (p.launches(), p.chains());
        // The operations' own typed errors, nothing recorded.
        let e = p.ntt_domain_to_coefficient_domain(r).unwrap_err();
        assert!(
            matches!(e, CudaBackendError::Ckks(CkksError::DomainMismatch { .. })),
            "{e:?}"
        );
        let e = p.relinearize_with_key(r, &drlk).unwrap_err();
        assert!(matches!(e, CudaBackendError::Ckks(_)), "{e:?}");
        let e = p.rotate_with_key(r, &drlk).unwrap_err();
        assert!(
            matches!(e, CudaBackendError::Ckks(CkksError::WrongKey { .. })),
            "{e:?}"
        );
        // Another pipeline's handle.
        let e = p.negate(foreign).unwrap_err();
        assert!(
            matches!(
                e,
                CudaBackendError::PipelineValue { op: "negate", pipeline, index: 0, .. }
                    if pipeline == foreign.pipeline()
            ),
            "{e:?}"
        );
        assert!(e.to_string().contains(&format!("not a value of pipeline {}", p.serial())), "{e}");
        assert_eq!((p.launches(), p.chains()), before, "nothing recorded");
        let n = p.coefficient_domain_to_ntt_domain(r)?;
        let mut out = p.submit()?;
        // An input is the caller's; a result goes out once.
        let e = out.take(x).unwrap_err();
        assert!(e.to_string().contains("an input of the pipeline"), "{e}");
        let got = out.take(n)?;
        let e = out.take(n).unwrap_err();
        assert!(
            matches!(e, CudaBackendError::PipelineValue { ref reason, .. } if reason == "already taken"),
            "{e:?}"
        );
        out.free_rest()?;
        Ok(got)
    });
    // Dropped before submission: nothing runs (no chain launched), nothing waits.
    let (chains, waited) = (g.chain_launches(), CudaEngine::waited_drops());
    let y = other.rotate_with_key(foreign, &dkey).expect("recorded");
    assert_eq!(other.launches(), 3);
    let _ = y;
    drop(other);
    assert_eq!(
        g.chain_launches(),
        chains,
        "a dropped pipeline launches nothing"
    );
    assert_nothing_waited(s, waited, "a dropped pipeline waits for nothing");
}

/// Launch graphs (decisions 0505, 0508): with them on, every launch of an operation replays a
/// graph (the key switch's launches one chain graph) and the words are the CPU's at several
/// levels, on two streams, with repeated and changing arguments; with them off no launch goes
/// through a graph and the words are the same.
#[test]
fn graph_launches_replay_every_kernel_and_change_no_word() {
    let Some(fx) = fixture() else { return };
    fx.gpu.set_ntt_kernels(NttKernels::GlobalSync);
    fx.gpu.set_graph_launches(true);
    assert!(fx.gpu.graph_launches(), "the driver refused a launch graph");
    let (key, dkey) = fx.rotation_key_by_one();
    let other = fx.gpu.stream().expect("stream");
    for level in [0usize, 3] {
        let ct = fresh(&fx.cpu, 11, level);
        let want_ntt = fx
            .cpu
            .coefficient_domain_to_ntt_domain(&ct)
            .expect("cpu ntt");
        let want_rot = fx.cpu.rotate_with_key(&ct, &key).expect("cpu rotate");
        let d = fx.up(&ct);
        fx.stream.synchronize().expect("sync"); // `other` reads `d` too
        for (on, label) in [(true, "graphs"), (false, "direct"), (true, "graphs again")] {
            fx.gpu.set_graph_launches(on);
            for _ in 0..2 {
                // The same arguments twice (the second launch needs no update), then the
                // rotation's three kernels.
                let before = fx.gpu.graph_replays();
                fx.check(&format!("ntt L{level} ({label})"), &want_ntt, || {
                    fx.gpu.coefficient_domain_to_ntt_domain(&d, &fx.stream)
                });
                let launched = fx.gpu.graph_replays() - before;
                assert_eq!(
                    launched,
                    u64::from(on),
                    "ntt L{level} ({label}): one launch"
                );
                let (before, chains) = (fx.gpu.graph_replays(), fx.gpu.chain_launches());
                fx.check(&format!("rotate L{level} ({label})"), &want_rot, || {
                    fx.gpu.rotate_with_key(&d, &dkey, &fx.stream)
                });
                assert_eq!(
                    fx.gpu.graph_replays(),
                    before,
                    "rotate L{level} ({label}): no one-node graph"
                );
                assert_eq!(
                    fx.gpu.chain_launches() - chains,
                    u64::from(on),
                    "rotate L{level} ({label}): its three kernels as one chain graph"
                );
            }
            let r = fx
                .gpu
                .rotate_with_key(&d, &dkey, &other)
                .expect("rotate on another stream");
            let host = fx.gpu.download_ciphertext(&r, &other).expect("download");
            common::assert_same_words(
                &format!("rotate L{level} on another stream ({label})"),
                &host,
                &want_rot,
            );
        }
    }
    // The chains hang the kernels that wait on their predecessor (ntt_fwd_gq, ks_inner_gs,
    // ks_moddown) by programmatic edges where the driver has edge data (CUDA >= 12.3).
    let driver = cust::CudaApiVersion::get().expect("driver version");
    if (driver.major(), driver.minor()) >= (12, 3) {
        assert!(
            fx.gpu.programmatic_edges() > 0,
            "driver {}.{}: chain graphs without programmatic edges",
            driver.major(),
            driver.minor()
        );
    }
    // A loop over the same input whose results go back to the recycling bins launches the
    // same arguments every time from the second iteration on: those replay the graph as it is
    // (no new graph), and the words stay exact.
    fx.gpu.set_graph_launches(true);
    fx.gpu.set_recycling(true);
    let ct = fresh(&fx.cpu, 12, 0);
    let want = fx
        .cpu
        .coefficient_domain_to_ntt_domain(&ct)
        .expect("cpu ntt");
    let d = fx.up(&ct);
    let mut graphs_after_two = 0;
    for i in 0..20 {
        let r = fx
            .gpu
            .coefficient_domain_to_ntt_domain(&d, &fx.stream)
            .expect("ntt");
        if i == 19 {
            let host = fx
                .gpu
                .download_ciphertext(&r, &fx.stream)
                .expect("download");
            common::assert_same_words("ntt in a recycling loop", &host, &want);
        }
        r.free_async(&fx.stream).expect("free");
        if i == 1 {
            graphs_after_two = fx.gpu.graph_count();
        }
    }
    assert!(graphs_after_two > 0, "graphs were built");
    assert_eq!(
        fx.gpu.graph_count(),
        graphs_after_two,
        "repeated arguments must replay an existing graph"
    );
}

#[test]
fn add_subtract_negate_match_cpu() {
    let Some(fx) = fixture() else { return };
    for level in [0usize, 5] {
        let a = fresh(&fx.cpu, 1, level);
        let b = fresh(&fx.cpu, 2, level);
        let (da, db) = (fx.up(&a), fx.up(&b));
        let want = fx.cpu.add(&a, &b).expect("add");
        fx.check(&format!("add L{level}"), &want, || {
            fx.gpu.add(&da, &db, &fx.stream)
        });
        let want = fx.cpu.subtract(&a, &b).expect("sub");
        fx.check(&format!("subtract L{level}"), &want, || {
            fx.gpu.subtract(&da, &db, &fx.stream)
        });
        let want = fx.cpu.negate(&a).expect("neg");
        fx.check(&format!("negate L{level}"), &want, || {
            fx.gpu.negate(&da, &fx.stream)
        });
    }
}

#[test]
fn multiply_plaintext_and_add_plaintext_match_cpu() {
    let Some(fx) = fixture() else { return };
    for level in [0usize, 2, 6] {
        let ct = fresh(&fx.cpu, 3, level);
        let ntt = fx.cpu.coefficient_domain_to_ntt_domain(&ct).expect("ntt");
        let enc = fx
            .cpu
            .encode(&message(&fx.cpu, 9), level, None)
            .expect("encode");
        let pt = fx
            .cpu
            .prepare_plaintext_for_multiplication(&enc, ModulusBasis::Q)
            .expect("prepare");
        let want = fx.cpu.multiply_plaintext(&ntt, &pt).expect("cpu mul");
        let (dc, dp) = (
            fx.up(&ntt),
            fx.gpu.upload_plaintext(&pt, &fx.stream).expect("up"),
        );
        fx.check(&format!("multiply_plaintext L{level}"), &want, || {
            fx.gpu.multiply_plaintext(&dc, &dp, &fx.stream)
        });
        let pa = fx
            .cpu
            .prepare_plaintext_for_addition(&enc, ModulusBasis::Q)
            .expect("prepare add");
        let want = fx.cpu.add_plaintext(&ct, &pa).expect("cpu add_plaintext");
        let (dc, dp) = (
            fx.up(&ct),
            fx.gpu.upload_plaintext(&pa, &fx.stream).expect("up"),
        );
        fx.check(&format!("add_plaintext L{level}"), &want, || {
            fx.gpu.add_plaintext(&dc, &dp, &fx.stream)
        });
    }
}

#[test]
fn multiply_and_relinearize_match_cpu() {
    let Some(fx) = fixture() else { return };
    let (rlk, drlk) = fx.relinearization_keys();
    for level in [0usize, 4, 6] {
        let a = fx
            .cpu
            .coefficient_domain_to_ntt_domain(&fresh(&fx.cpu, 4, level))
            .expect("ntt");
        let b = fx
            .cpu
            .coefficient_domain_to_ntt_domain(&fresh(&fx.cpu, 5, level))
            .expect("ntt");
        let prod = fx.cpu.multiply(&a, &b).expect("cpu multiply");
        let (da, db) = (fx.up(&a), fx.up(&b));
        fx.check(&format!("multiply L{level}"), &prod, || {
            fx.gpu.multiply(&da, &db, &fx.stream)
        });
        let want = fx.cpu.relinearize_with_key(&prod, &rlk).expect("cpu relin");
        let dp = fx.up(&prod);
        // The 3-component product through both domain changes: at level 0 its 24 limbs are
        // 192 blocks of the *_gs kernels, more than one per SM.
        let coeff = fx
            .cpu
            .ntt_domain_to_coefficient_domain(&prod)
            .expect("cpu intt of the product");
        let dc = fx.up(&coeff);
        on_both_kernel_paths(&fx, |path| {
            fx.check(&format!("relinearize L{level} ({path})"), &want, || {
                fx.gpu.relinearize_with_key(&dp, &drlk, &fx.stream)
            });
            fx.check(
                &format!("INTT of the product L{level} ({path})"),
                &coeff,
                || fx.gpu.ntt_domain_to_coefficient_domain(&dp, &fx.stream),
            );
            fx.check(
                &format!("NTT of the product L{level} ({path})"),
                &prod,
                || fx.gpu.coefficient_domain_to_ntt_domain(&dc, &fx.stream),
            );
        });
        // On the default kernels relinearize's four launches (d2's inverse NTT and the key
        // switch) go out as one chain graph; on the two-pass kernels (six launches, more than
        // a chain holds) they went out one by one above, with the same words.
        fx.gpu.set_ntt_kernels(NttKernels::GlobalSync);
        let chains = fx.gpu.chain_launches();
        fx.check(&format!("relinearize L{level} (chain)"), &want, || {
            fx.gpu.relinearize_with_key(&dp, &drlk, &fx.stream)
        });
        assert_eq!(
            fx.gpu.chain_launches() - chains,
            u64::from(fx.gpu.graph_launches()),
            "relinearize L{level}: one chain graph when graph launches are on"
        );
    }
}

/// The paired NTT kernels meet on two counter words per limb, one per component (`2y + 1` and
/// `2 (y + 128) + 1` of the stream's barrier state), which no other kernel on the stream may
/// move: paired NTTs in both directions, between the 3-component product's `*_gs` NTTs and
/// relinearize's key switch, on one stream, ten times, every result word for word. A counter
/// that another kernel moved would let one component's blocks pass their barrier before the
/// other blocks' first-phase words are in L2.
#[test]
fn paired_ntts_between_other_synced_kernels_stay_exact() {
    let Some(fx) = fixture() else { return };
    fx.gpu.set_ntt_kernels(NttKernels::GlobalSync);
    let (rlk, drlk) = fx.relinearization_keys();
    let ntt = |ct: &Ciphertext| {
        fx.cpu
            .coefficient_domain_to_ntt_domain(ct)
            .expect("cpu ntt")
    };
    let prod = fx
        .cpu
        .multiply(&ntt(&fresh(&fx.cpu, 40, 0)), &ntt(&fresh(&fx.cpu, 41, 0)))
        .expect("cpu multiply");
    let relin = fx.cpu.relinearize_with_key(&prod, &rlk).expect("cpu relin");
    let prod_coeff = fx
        .cpu
        .ntt_domain_to_coefficient_domain(&prod)
        .expect("cpu intt");
    let ct = fresh(&fx.cpu, 42, 0);
    let ct_ntt = ntt(&ct);
    let (dp, dpc, dct, dctn) = (fx.up(&prod), fx.up(&prod_coeff), fx.up(&ct), fx.up(&ct_ntt));
    let paired = fx.gpu.paired_ntt_launches();
    for round in 0..10 {
        fx.check(&format!("round {round}: paired NTT"), &ct_ntt, || {
            fx.gpu.coefficient_domain_to_ntt_domain(&dct, &fx.stream)
        });
        fx.check(&format!("round {round}: relinearize"), &relin, || {
            fx.gpu.relinearize_with_key(&dp, &drlk, &fx.stream)
        });
        fx.check(
            &format!("round {round}: 3-component INTT"),
            &prod_coeff,
            || fx.gpu.ntt_domain_to_coefficient_domain(&dp, &fx.stream),
        );
        fx.check(&format!("round {round}: paired INTT"), &ct, || {
            fx.gpu.ntt_domain_to_coefficient_domain(&dctn, &fx.stream)
        });
        fx.check(&format!("round {round}: 3-component NTT"), &prod, || {
            fx.gpu.coefficient_domain_to_ntt_domain(&dpc, &fx.stream)
        });
    }
    // Per round: the ciphertext's NTT and INTT (two components) and relinearize's inverse
    // NTT of d2 (one component, one group per block); the 3-component ones run the *_gs
    // kernels.
    assert_eq!(
        fx.gpu.paired_ntt_launches() - paired,
        30,
        "the ciphertext's NTTs and relinearize's d2 ran the paired kernels"
    );
}

/// Decision 0514: the paired NTT kernels exchange tagged words (tags 1-14 in bits 60-63, from
/// the stream's counters) through the stream's exchange scratch and never read the output, so
/// nothing a recycled output holds can pass for an exchanged word. For each poison byte
/// 0x1A..0xEA (every reused word under tag 1..14), 14 consecutive paired NTTs of a level-1
/// ciphertext (a wide and a binary64 limb row) on one stream, alternating direction: every
/// pairing of the output's tag with the launch's tag, exact each time.
#[test]
fn paired_ntts_exact_into_outputs_under_every_tag() {
    let Some(fx) = fixture() else { return };
    fx.gpu.set_ntt_kernels(NttKernels::GlobalSync);
    let ct = fresh(&fx.cpu, 50, 1);
    let ct_ntt = fx
        .cpu
        .coefficient_domain_to_ntt_domain(&ct)
        .expect("cpu ntt");
    let (d, dn) = (fx.up(&ct), fx.up(&ct_ntt));
    let paired = fx.gpu.paired_ntt_launches();
    for tag in 1..=14u8 {
        for j in 0..14 {
            let byte = (tag << 4) | 0x0A;
            let under = format!("{j} into words under tag {tag} (poison {byte:#04x})");
            if j % 2 == 0 {
                fx.check_poisoned(&format!("NTT {under}"), &ct_ntt, byte, || {
                    fx.gpu.coefficient_domain_to_ntt_domain(&d, &fx.stream)
                });
            } else {
                fx.check_poisoned(&format!("INTT {under}"), &ct, byte, || {
                    fx.gpu.ntt_domain_to_coefficient_domain(&dn, &fx.stream)
                });
            }
        }
    }
    assert_eq!(
        fx.gpu.paired_ntt_launches() - paired,
        14 * 14,
        "every NTT ran the paired kernels"
    );
}

/// Decision 0514's scratch across many launches: 40 paired NTTs on one stream (the 4-bit
/// tags wrap almost three times), cycling the level so that one limb row's counter region
/// serves binary64 and wide primes in turn, each exact; the scratch is made once per stream
/// that runs a paired launch (2 N words per prime: `exchange_bytes`), none before.
#[test]
fn paired_ntts_stay_exact_across_tag_wraps_and_levels() {
    let Some(fx) = fixture() else { return };
    fx.gpu.set_ntt_kernels(NttKernels::GlobalSync);
    assert_eq!(
        fx.gpu.exchange_bytes(),
        (0, 0),
        "no scratch before a paired launch"
    );
    let levels = [6usize, 0, 3, 1, 5];
    let cases: Vec<_> = levels
        .iter()
        .map(|&level| {
            let ct = fresh(&fx.cpu, 60 + level as u64, level);
            let ct_ntt = fx
                .cpu
                .coefficient_domain_to_ntt_domain(&ct)
                .expect("cpu ntt");
            (level, fx.up(&ct), fx.up(&ct_ntt), ct, ct_ntt)
        })
        .collect();
    let paired = fx.gpu.paired_ntt_launches();
    for i in 0..40 {
        let (level, d, dn, ct, ct_ntt) = &cases[i % levels.len()];
        if (i / levels.len()).is_multiple_of(2) {
            fx.check(&format!("launch {i}: NTT at level {level}"), ct_ntt, || {
                fx.gpu.coefficient_domain_to_ntt_domain(d, &fx.stream)
            });
        } else {
            fx.check(&format!("launch {i}: INTT at level {level}"), ct, || {
                fx.gpu.ntt_domain_to_coefficient_domain(dn, &fx.stream)
            });
        }
    }
    assert_eq!(fx.gpu.paired_ntt_launches() - paired, 40);
    let per_stream = 2 * 9 * 16384 * 8;
    assert_eq!(
        fx.gpu.exchange_bytes(),
        (1, per_stream),
        "one stream's scratch"
    );
    let other = fx.gpu.stream().expect("stream");
    let (_, d, _, _, want) = &cases[0];
    let got = fx
        .gpu
        .coefficient_domain_to_ntt_domain(d, &other)
        .expect("ntt on another stream");
    let host = fx.gpu.download_ciphertext(&got, &other).expect("download");
    common::assert_same_words("NTT on a second stream", &host, want);
    assert_eq!(
        fx.gpu.exchange_bytes(),
        (2, 2 * per_stream),
        "a scratch per stream"
    );
}

#[test]
fn rotate_with_key_matches_cpu_for_several_steps_and_levels() {
    let Some(fx) = fixture() else { return };
    for step in [1i64, -3] {
        let key = fx
            .cpu
            .create_rotation_key(step, fx.cpu.secret_key())
            .expect("rotation key");
        let dkey = fx
            .gpu
            .upload_rotation_key(&key, &fx.stream)
            .expect("upload key");
        for level in [0usize, 2, 6] {
            let ct = fresh(&fx.cpu, 6, level);
            let want = fx.cpu.rotate_with_key(&ct, &key).expect("cpu rotate");
            let d = fx.up(&ct);
            on_both_kernel_paths(&fx, |path| {
                fx.check(
                    &format!("rotate_with_key step {step} L{level} ({path})"),
                    &want,
                    || fx.gpu.rotate_with_key(&d, &dkey, &fx.stream),
                );
            });
        }
    }
}

#[test]
fn rescale_and_mod_switch_match_cpu_at_every_level() {
    let Some(fx) = fixture() else { return };
    for level in 0..fx.cpu.max_level() {
        let ct = fresh(&fx.cpu, 7, level);
        let d = fx.up(&ct);
        let want = fx.cpu.rescale_to_next_level(&ct).expect("cpu rescale");
        fx.check(&format!("rescale_to_next_level L{level}"), &want, || {
            fx.gpu.rescale_to_next_level(&d, &fx.stream)
        });
        let want = fx
            .cpu
            .mod_switch_to_next_level(&ct)
            .expect("cpu mod switch");
        fx.check(&format!("mod_switch_to_next_level L{level}"), &want, || {
            fx.gpu.mod_switch_to_next_level(&d, &fx.stream)
        });
    }
}

#[test]
fn example14_stage_decrypts_on_the_cpu() {
    let Some(fx) = fixture() else { return };
    let m = message(&fx.cpu, 0);
    let ct = fx.cpu.encrypt_message(&m).expect("encrypt");
    let (_, dkey) = fx.rotation_key_by_one();
    let (_, dhalf) = half_plaintext(&fx);
    let s = &fx.stream;
    let g = &fx.gpu;
    let d = fx.up(&ct);
    let r = g.rotate_with_key(&d, &dkey, s).expect("rotate");
    let r = g.coefficient_domain_to_ntt_domain(&r, s).expect("ntt");
    let r = g.multiply_plaintext(&r, &dhalf, s).expect("mul");
    let r = g.ntt_domain_to_coefficient_domain(&r, s).expect("intt");
    let r = g.rescale_to_next_level(&r, s).expect("rescale");
    let out = g.download_ciphertext(&r, s).expect("download");
    let got = fx.cpu.decrypt_message(&out).expect("decrypt");
    let n = m.len();
    let err = (0..n)
        .map(|j| (got[j] - 0.5 * m[(j + n - 1) % n]).abs())
        .fold(0.0, f64::max);
    eprintln!("example-14 stage on the GPU: max error {err:.3e}");
    assert!(err < 1e-5, "max error {err}");
}

#[test]
fn automorphism_matches_the_cpu_kernel() {
    use fhelium_ckks::kernels::{apply_automorphism_limb, automorphism_index_map};
    let Some(fx) = fixture() else { return };
    let n = fx.cpu.n();
    for (level, g) in [(0usize, 3u64), (3, 10_923), (6, 2 * n as u64 - 1)] {
        let ct = fresh(&fx.cpu, 8, level);
        let map = automorphism_index_map(n, g);
        let rows = ct.num_limbs();
        let mut want = vec![0u64; ct.words().len()];
        for (i, dst) in want.chunks_mut(n).enumerate() {
            let m = fx.cpu.context().ntt_tables()[ct.prime_ids()[i % rows]].modulus();
            apply_automorphism_limb(m, &map, &ct.words()[i * n..(i + 1) * n], dst);
        }
        fx.gpu.poison_pool(2 * 8 * n, &fx.stream).expect("poison");
        let d = fx.up(&ct);
        let got = fx
            .gpu
            .automorphism(&d, g, &fx.stream)
            .expect("automorphism");
        let got = fx.gpu.download_words(&got, &fx.stream).expect("download");
        assert!(
            got == want,
            "automorphism g = {g} L{level} differs from the CPU kernel"
        );
        eprintln!("automorphism g = {g} L{level}: bit-exact");
    }
}

#[test]
fn decrypt_matches_cpu_words_and_encrypt_with_samples_matches_a_cpu_reference() {
    use fhelium_ckks::kernels::mul_assign_limb;
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let (pk, sk) = common::device_keys(&fx.gpu, &fx.cpu, s);
    for level in [0usize, 3, 6] {
        let ct = fresh(&fx.cpu, 10, level);
        let want = fx.cpu.decrypt(&ct).expect("cpu decrypt");
        let got = fx.gpu.decrypt(&fx.up(&ct), &sk, s).expect("gpu decrypt");
        assert!(
            got.words() == want.words(),
            "decrypt L{level}: approximate coefficients differ from the CPU's"
        );
        eprintln!("decrypt L{level}: bit-exact");
    }
    // encrypt with explicit samples vs the spec formula on the CPU's own kernels
    let n = fx.cpu.n();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut small = |r: i64| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % (2 * r as u64 + 1)) as i64 - r
    };
    let v: Vec<i64> = (0..n).map(|_| small(1)).collect();
    let e0: Vec<i64> = (0..n).map(|_| small(20)).collect();
    let e1: Vec<i64> = (0..n).map(|_| small(20)).collect();
    for level in [0usize, 5] {
        let pt = fx
            .cpu
            .encode(&message(&fx.cpu, 11), level, None)
            .expect("encode");
        let p = pt.integer_coefficients().expect("integer plaintext");
        let rows = fx.cpu.context().config().q_primes.len() - level;
        let pkv = fx.cpu.public_key().view().expect("host public key");
        let mut want = vec![0u64; 2 * rows * n];
        for (i, out) in want.chunks_mut(n).enumerate() {
            let (comp, j) = (i / rows, i % rows);
            let id = level + j;
            let t = &fx.cpu.context().ntt_tables()[id];
            let m = t.modulus();
            for (o, &c) in out.iter_mut().zip(&v) {
                *o = m.from_i64(c);
            }
            t.forward(out);
            let krow: Vec<u64> = pkv.slice(ndarray::s![comp, id, ..]).to_vec();
            mul_assign_limb(m, out, &krow);
            t.inverse(out);
            let e = if comp == 0 { &e0 } else { &e1 };
            for (k, o) in out.iter_mut().enumerate() {
                let mut y = m.add(*o, m.from_i64(e[k]));
                if comp == 0 {
                    y = m.add(y, m.from_i64(p[k]));
                }
                *o = y;
            }
        }
        fx.gpu.poison_pool(2 * 8 * n * 4, s).expect("poison");
        let got = fx
            .gpu
            .encrypt_with_samples(&pt, &pk, [&v, &e0, &e1], s)
            .expect("gpu encrypt");
        let words = fx.gpu.download_words(&got, s).expect("download");
        assert!(
            words == want,
            "encrypt L{level} differs from the CPU reference"
        );
        eprintln!("encrypt_with_samples L{level}: bit-exact");
    }
    // and the engine's own sampling decrypts correctly
    let m = message(&fx.cpu, 12);
    let ct = fx.gpu.encrypt_message(&m, &pk, s).expect("encrypt_message");
    let got = fx
        .gpu
        .decrypt_message(&ct, &sk, s)
        .expect("decrypt_message");
    let err = m
        .iter()
        .zip(&got)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f64::max);
    eprintln!("GPU encrypt_message -> GPU decrypt_message: max error {err:.3e}");
    assert!(err < 1e-5, "max error {err}");
}

#[test]
fn results_become_resident_values_on_cuda_and_come_back() {
    use fhelium_cuda::{ResidencyLocation, Resident};
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let mem = fhelium_cuda::Memory::with_cuda().expect("memory layer on CUDA");
    let ct = fresh(&fx.cpu, 13, 1);
    let want = fx
        .cpu
        .coefficient_domain_to_ntt_domain(&ct)
        .expect("cpu ntt");
    let r = fx
        .gpu
        .coefficient_domain_to_ntt_domain(&fx.up(&ct), s)
        .expect("gpu ntt");
    // The device value reports the engine's device (cuda:0 here).
    assert_eq!(r.location(), fx.gpu.location());
    assert_eq!(r.location(), ResidencyLocation::Cuda(0));
    let res = fx
        .gpu
        .to_resident_ciphertext(&r, &mem, s)
        .expect("resident copy");
    assert_eq!(res.location(), ResidencyLocation::Cuda(0));
    assert_eq!(
        res.placement().expect("placement"),
        ResidencyLocation::Cuda(0)
    );
    assert_eq!(Resident::nbytes(&res), want.nbytes());
    let back = fx.up(&res);
    fx.check("resident cuda:0 value uploaded back", &want, || Ok(back));
    drop(res);

    // Without a copy: the memory layer adopts the result's allocation.
    let loc = ResidencyLocation::Cuda(0);
    let usage = |m: &fhelium_cuda::Memory| {
        let u = m.usage(&loc).expect("usage");
        (u.allocated_bytes, u.live_buffers)
    };
    let (bytes0, live0) = usage(&mem);
    let ptr = r.device_ptr();
    let res = fx
        .gpu
        .into_resident_ciphertext(r, &mem, s)
        .expect("adopted");
    assert_eq!(usage(&mem), (bytes0 + want.nbytes(), live0 + 1));
    assert_eq!(res.placement().expect("placement"), loc);
    // Device words have no portable form until they come back to the host.
    assert!(matches!(
        res.to_data(),
        Err(CkksError::NotHostAccessible { location, .. }) if location == loc
    ));
    let view = fx.gpu.borrow_ciphertext(&res).expect("borrow");
    assert_eq!(view.device_ptr(), ptr, "the same device words, not a copy");
    drop(view);
    let host = fx
        .gpu
        .download_ciphertext(&fx.up(&res), s)
        .expect("download");
    common::assert_same_words("adopted result", &host, &want);
    drop(res);
    assert_eq!(usage(&mem), (bytes0, live0), "freed with the value");

    // Refusals give the result back unchanged and account nothing.
    let r = fx
        .gpu
        .coefficient_domain_to_ntt_domain(&fx.up(&ct), s)
        .expect("gpu ntt");
    let host_only = fhelium_cuda::Memory::host_only();
    let err = fx
        .gpu
        .into_resident_ciphertext(r, &host_only, s)
        .expect_err("no CUDA in that memory layer");
    assert!(
        matches!(
            *err.error,
            CudaBackendError::Ckks(CkksError::Memory(
                fhelium_cuda::MemoryError::LocationUnavailable { location, .. }
            )) if location == loc
        ),
        "{err}"
    );
    mem.sim_faults(&loc).expect("faults").fail_next_allocs(1);
    let err = fx
        .gpu
        .into_resident_ciphertext(*err.value, &mem, s)
        .expect_err("injected failure");
    assert!(
        matches!(
            *err.error,
            CudaBackendError::Ckks(CkksError::Memory(
                fhelium_cuda::MemoryError::InjectedAllocFailure { .. }
            ))
        ),
        "{err}"
    );
    assert_eq!(usage(&mem), (bytes0, live0));
    let host = fx.gpu.download_ciphertext(&err.value, s).expect("download");
    common::assert_same_words("result given back", &host, &want);

    // A plaintext encoded on the device becomes a cuda:0 value the same way, and works as
    // an operand when borrowed back.
    let weight = vec![0.25; fx.cpu.num_slots()];
    let q = ModulusBasis::Q;
    let dpt = fx
        .gpu
        .encode_for_multiplication(&weight, 1, None, q, s)
        .expect("encode");
    let err = fx
        .gpu
        .into_resident_plaintext(dpt, &host_only, s)
        .expect_err("no CUDA in that memory layer");
    assert!(matches!(
        *err.error,
        CudaBackendError::Ckks(CkksError::Memory(
            fhelium_cuda::MemoryError::LocationUnavailable { .. }
        ))
    ));
    let ptr = err.value.device_ptr();
    let pt = fx
        .gpu
        .into_resident_plaintext(*err.value, &mem, s)
        .expect("adopted plaintext");
    assert_eq!(pt.placement().expect("placement"), loc);
    assert_eq!(usage(&mem), (bytes0 + pt.nbytes(), live0 + 1));
    let want_pt = fx
        .cpu
        .prepare_plaintext_for_multiplication(&fx.cpu.encode(&weight, 1, None).expect("e"), q)
        .expect("prepare");
    let view = fx.gpu.borrow_plaintext(&pt).expect("borrow plaintext");
    assert_eq!(view.device_ptr(), ptr, "the same device words, not a copy");
    common::assert_same_plaintext(
        "adopted plaintext",
        &fx.gpu.download_plaintext(&view, s).expect("download"),
        &want_pt,
    );
    let ntt1 = fx
        .cpu
        .coefficient_domain_to_ntt_domain(&fresh(&fx.cpu, 14, 1))
        .expect("ntt");
    fx.check(
        "multiply_plaintext by an adopted device-encoded plaintext",
        &fx.cpu.multiply_plaintext(&ntt1, &want_pt).expect("cpu"),
        || fx.gpu.multiply_plaintext(&fx.up(&ntt1), &view, s),
    );
    drop(view);
    drop(pt);
    assert_eq!(usage(&mem), (bytes0, live0), "freed with the plaintext");
}

/// Stream-ordered adoption: a result computed on a `cust` stream handed to the memory layer
/// becomes a `cuda:0` value without any host wait (long work queued before it on the same
/// stream is still running after the adoption and after a drop), a copy of the memory layer
/// on another stream waits for it on the GPU and gives the CPU engine's words, and a result
/// that is not pool memory (an upload) is refused and given back.
#[test]
fn results_adopted_in_stream_order_never_wait_on_the_host() {
    use cust::event::EventStatus;
    use fhelium_cuda::{ResidencyLocation, Resident};
    let Some(fx) = fixture() else { return };
    let mem = fhelium_cuda::Memory::with_cuda().expect("memory layer on CUDA");
    let loc = ResidencyLocation::Cuda(0);
    let ws = fx
        .gpu
        .memory_stream(&mem)
        .expect("a stream of the engine and memory layer");
    let w = ws.as_cust().expect("a wrapped cust stream");
    assert_eq!(ws.location(), loc);
    // A memory layer without this device cannot take the stream.
    assert!(
        matches!(
            fx.gpu.memory_stream(&fhelium_cuda::Memory::host_only()),
            Err(CudaBackendError::Ckks(CkksError::Memory(
                fhelium_cuda::MemoryError::LocationUnavailable { location, .. }
            ))) if location == loc
        ),
        "a host-only memory layer took a CUDA stream"
    );
    let usage = || mem.usage(&loc).expect("usage").allocated_bytes;
    let bytes0 = usage();
    let (_, dkey) = fx.rotation_key_by_one();
    let ct = fresh(&fx.cpu, 6, 0);
    let want = fx
        .cpu
        .coefficient_domain_to_ntt_domain(&ct)
        .expect("cpu ntt");
    let d = fx.gpu.upload_ciphertext(&ct, w).expect("upload");
    w.synchronize().expect("sync");

    let done = queue_long_work(&fx.gpu, &d, &dkey, w, "ordered adoption");
    let r = fx.gpu.coefficient_domain_to_ntt_domain(&d, w).expect("ntt");
    let ptr = r.device_ptr();
    let res = fx
        .gpu
        .into_resident_ciphertext_on(r, &mem, &ws)
        .expect("adopted in stream order");
    assert_eq!(
        done.query().expect("query"),
        EventStatus::NotReady,
        "the adoption waited"
    );
    assert_eq!(res.placement().expect("placement"), loc);
    assert_eq!(res.pending_events().expect("pending").len(), 1);
    assert_eq!(usage(), bytes0 + want.nbytes());
    let view = fx.gpu.borrow_ciphertext(&res).expect("borrow");
    assert_eq!(view.device_ptr(), ptr, "the same device words, not a copy");
    drop(view);
    // The memory layer's copy (its own stream) waits for the NTT on the GPU.
    let host = res
        .materialize(&mem, &ResidencyLocation::PinnedHost, None)
        .expect("copy to pinned host")
        .wait()
        .expect("wait");
    assert_eq!(done.query().expect("query"), EventStatus::Ready);
    common::assert_same_words("adopted in stream order", &host, &want);
    drop(res);

    // A drop enqueues the free on the stream: no wait for the work before it.
    let done = queue_long_work(&fx.gpu, &d, &dkey, w, "ordered drop");
    let r = fx.gpu.coefficient_domain_to_ntt_domain(&d, w).expect("ntt");
    let res = fx
        .gpu
        .into_resident_ciphertext_on(r, &mem, &ws)
        .expect("adopted in stream order");
    drop(res);
    assert_eq!(
        done.query().expect("query"),
        EventStatus::NotReady,
        "the drop waited"
    );
    assert_eq!(usage(), bytes0);
    w.synchronize().expect("sync");

    // A stream of another location (a simulated device) is refused: the result is given
    // back unchanged and nothing is accounted.
    let mixed = fhelium_cuda::Memory::new(&fhelium_cuda::MemoryConfig {
        sim_devices: 1,
        cuda: true,
        ..fhelium_cuda::MemoryConfig::default()
    })
    .expect("memory layer with a simulated device");
    let sim = mixed
        .stream(&ResidencyLocation::Sim(0))
        .expect("sim stream");
    let r = fx.gpu.coefficient_domain_to_ntt_domain(&d, w).expect("ntt");
    let err = fx
        .gpu
        .into_resident_ciphertext_on(r, &mixed, &sim)
        .expect_err("a simulated stream");
    assert!(
        matches!(
            *err.error,
            CudaBackendError::Ckks(CkksError::Memory(
                fhelium_cuda::MemoryError::StreamMismatch { stream, .. }
            )) if stream == ResidencyLocation::Sim(0)
        ),
        "{}",
        err.error
    );
    assert_eq!(mixed.usage(&loc).expect("usage").allocated_bytes, 0);
    let back = fx.gpu.download_ciphertext(&err.value, w).expect("download");
    common::assert_same_words("result given back", &back, &want);
    w.synchronize().expect("sync");
    assert_eq!(usage(), bytes0);
}

#[test]
fn bad_operands_are_typed_errors() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let ct0 = fx.up(&fresh(&fx.cpu, 1, 0));
    let ct1 = fx.up(&fresh(&fx.cpu, 1, 1));
    let ntt = fx
        .gpu
        .coefficient_domain_to_ntt_domain(&ct0, s)
        .expect("ntt");
    assert!(matches!(
        fx.gpu.add(&ct0, &ct1, s),
        Err(CudaBackendError::Ckks(CkksError::LevelMismatch { .. }))
    ));
    assert!(matches!(
        fx.gpu.add(&ct0, &ntt, s),
        Err(CudaBackendError::Ckks(CkksError::DomainMismatch { .. }))
    ));
    assert!(matches!(
        fx.gpu.coefficient_domain_to_ntt_domain(&ntt, s),
        Err(CudaBackendError::Ckks(CkksError::DomainMismatch {
            expected: Domain::Coefficient,
            ..
        }))
    ));
    assert!(matches!(
        fx.gpu.rescale_to_next_level(&ntt, s),
        Err(CudaBackendError::Ckks(CkksError::DomainMismatch { .. }))
    ));
    let last = fx.up(&fresh(&fx.cpu, 1, fx.cpu.max_level()));
    assert!(matches!(
        fx.gpu.rescale_to_next_level(&last, s),
        Err(CudaBackendError::Ckks(CkksError::LevelExhausted { .. }))
    ));
    assert!(matches!(
        fx.gpu.mod_switch_to_next_level(&last, s),
        Err(CudaBackendError::Ckks(CkksError::LevelExhausted { .. }))
    ));
    let key = fx
        .cpu
        .create_rotation_key(1, fx.cpu.secret_key())
        .expect("key");
    let dkey = fx.gpu.upload_rotation_key(&key, s).expect("key up");
    assert!(matches!(
        fx.gpu.rotate_with_key(&ntt, &dkey, s),
        Err(CudaBackendError::Ckks(CkksError::DomainMismatch { .. }))
    ));
    let a = fx
        .gpu
        .coefficient_domain_to_ntt_domain(&ct0, s)
        .expect("ntt");
    let prod = fx.gpu.multiply(&a, &ntt, s).expect("multiply");
    assert!(matches!(
        fx.gpu.relinearize_with_key(&prod, &dkey, s),
        Err(CudaBackendError::Ckks(CkksError::WrongKey { .. }))
    ));
    assert!(matches!(
        fx.gpu.multiply(&prod, &prod, s),
        Err(CudaBackendError::Ckks(CkksError::ComponentMismatch { .. }))
    ));
    assert!(matches!(
        fx.gpu.automorphism(&ct0, 4, s),
        Err(CudaBackendError::Unsupported { .. })
    ));
}

#[test]
fn example14_stage_on_borrowed_cuda_values_is_bit_exact_and_wrong_placements_are_typed_errors() {
    use fhelium_cuda::{ResidencyLocation, Resident};
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let g = &fx.gpu;
    let mem = fhelium_cuda::Memory::with_cuda().expect("memory layer on CUDA");
    let dev = ResidencyLocation::Cuda(0);
    let m = message(&fx.cpu, 3);
    let ct = fx.cpu.encrypt_message(&m).expect("encrypt");
    let key = fx
        .cpu
        .create_rotation_key(1, fx.cpu.secret_key())
        .expect("key");
    let half = half_on_cpu(&fx.cpu);
    // The CPU reference of the stage.
    let want = {
        let c = &fx.cpu;
        let r = c.rotate_with_key(&ct, &key).expect("cpu rotate");
        let r = c.coefficient_domain_to_ntt_domain(&r).expect("cpu ntt");
        let r = c.multiply_plaintext(&r, &half).expect("cpu mul");
        let r = c.ntt_domain_to_coefficient_domain(&r).expect("cpu intt");
        c.rescale_to_next_level(&r).expect("cpu rescale")
    };
    // Host values are refused with a typed error naming both locations.
    assert!(matches!(
        g.borrow_ciphertext(&ct),
        Err(CudaBackendError::NotOnDevice { op: "borrow_ciphertext", expected, actual })
            if expected == dev && actual == ResidencyLocation::PageableHost
    ));
    assert!(matches!(
        g.borrow_plaintext(&half),
        Err(CudaBackendError::NotOnDevice {
            op: "borrow_plaintext",
            ..
        })
    ));
    assert!(matches!(
        g.borrow_rotation_key(&key),
        Err(CudaBackendError::NotOnDevice {
            op: "borrow_rotation_key",
            ..
        })
    ));
    // Place the three values on cuda:0 through the memory layer (what the manager does).
    let dct = ct
        .materialize(&mem, &dev, None)
        .expect("ct")
        .wait()
        .expect("ct");
    let dkey = key
        .materialize(&mem, &dev, None)
        .expect("key")
        .wait()
        .expect("key");
    let dhalf = half
        .materialize(&mem, &dev, None)
        .expect("pt")
        .wait()
        .expect("pt");
    assert_eq!(dct.placement().expect("placement"), dev);
    let vct = g.borrow_ciphertext(&dct).expect("borrow ct");
    let vkey = g.borrow_rotation_key(&dkey).expect("borrow key");
    let vhalf = g.borrow_plaintext(&dhalf).expect("borrow pt");
    assert_eq!(vct.nbytes(), Resident::nbytes(&ct));
    assert_eq!(vkey.galois_element(), Some(key.galois_element()));
    // The borrowed view reads exactly the placed words.
    assert_eq!(
        g.download_ciphertext(&vct, s)
            .expect("download view")
            .words(),
        ct.words()
    );
    fx.check("example-14 stage on borrowed cuda:0 values", &want, || {
        let r = g.rotate_with_key(&vct, &vkey, s)?;
        let r = g.coefficient_domain_to_ntt_domain(&r, s)?;
        let r = g.multiply_plaintext(&r, &vhalf, s)?;
        let r = g.ntt_domain_to_coefficient_domain(&r, s)?;
        g.rescale_to_next_level(&r, s)
    });
    // Dropping the views frees nothing: the placed values stay intact.
    drop((vct, vkey, vhalf));
    s.synchronize().expect("sync");
    let again = g.borrow_ciphertext(&dct).expect("borrow again");
    assert_eq!(
        g.download_ciphertext(&again, s).expect("download").words(),
        ct.words()
    );
    // Result back as a cuda:0 value, decrypted by the CPU engine through a host copy.
    let r = g
        .rescale_to_next_level(
            &g.ntt_domain_to_coefficient_domain(
                &g.multiply_plaintext(
                    &g.coefficient_domain_to_ntt_domain(
                        &g.rotate_with_key(&again, &g.borrow_rotation_key(&dkey).expect("k"), s)
                            .expect("rotate"),
                        s,
                    )
                    .expect("ntt"),
                    &g.borrow_plaintext(&dhalf).expect("pt"),
                    s,
                )
                .expect("mul"),
                s,
            )
            .expect("intt"),
            s,
        )
        .expect("rescale");
    let res = g.to_resident_ciphertext(&r, &mem, s).expect("resident");
    assert_eq!(res.placement().expect("placement"), dev);
    let host = res
        .materialize(&mem, &ResidencyLocation::PageableHost, None)
        .expect("down")
        .wait()
        .expect("down");
    assert_eq!(host.words(), want.words());
}

/// The cluster kernels under many back-to-back launches: the forward and inverse NTT on both
/// cluster paths and rotate (whose inner product and inverse NTT run `ks_inner_cl`), 20 000
/// domain changes and 3 000 rotations per path, each result freed at once so the pool hands the
/// same buffers back. A device fault surfaces as an error at the periodic synchronisation; the
/// last results must still be the CPU engine's words. Background: until the fifteenth session
/// a block announced "done reading the other blocks' tiles" with a relaxed cluster arrive
/// issued before its distributed-shared-memory loads returned, so a block could leave while
/// another still read its tile (Xid 13 "CTA Not Present", `LaunchFailed`: twice in ~35
/// `gpu_oplat` processes, runs 83-84). The race needs a block of a cluster to fall more than a
/// round behind its peers; this loop did not hit it in four runs against those kernels
/// (run 85), so it guards sustained cluster launches in general, not that race in particular.
#[test]
fn cluster_kernels_survive_many_back_to_back_launches() {
    let Some(fx) = fixture() else { return };
    let NttAndRotation {
        d,
        dkey,
        want_ntt: want,
        want_rot,
    } = fx.ntt_and_rotation_case(9, 0);
    for kernels in [NttKernels::Cluster, NttKernels::ClusterPreload] {
        fx.gpu.set_ntt_kernels(kernels);
        for i in 0..10_000 {
            let f = fx
                .gpu
                .coefficient_domain_to_ntt_domain(&d, &fx.stream)
                .unwrap_or_else(|e| panic!("{kernels:?} forward {i}: {e}"));
            let b = fx
                .gpu
                .ntt_domain_to_coefficient_domain(&f, &fx.stream)
                .unwrap_or_else(|e| panic!("{kernels:?} inverse {i}: {e}"));
            f.free_async(&fx.stream).expect("free");
            b.free_async(&fx.stream).expect("free");
            if i % 1000 == 999 {
                fx.stream.synchronize().unwrap_or_else(|e| {
                    panic!("{kernels:?} after {} domain changes: {e}", 2 * (i + 1))
                });
            }
        }
        for i in 0..3_000 {
            let r = fx
                .gpu
                .rotate_with_key(&d, &dkey, &fx.stream)
                .unwrap_or_else(|e| panic!("{kernels:?} rotate {i}: {e}"));
            r.free_async(&fx.stream).expect("free");
            if i % 500 == 499 {
                fx.stream
                    .synchronize()
                    .unwrap_or_else(|e| panic!("{kernels:?} after {} rotations: {e}", i + 1));
            }
        }
        assert_eq!(
            fx.gpu.ntt_kernels(),
            kernels,
            "the driver refused a cluster launch"
        );
        fx.check(
            &format!("forward NTT after the loop ({kernels:?})"),
            &want,
            || fx.gpu.coefficient_domain_to_ntt_domain(&d, &fx.stream),
        );
        fx.check(
            &format!("rotate after the loop ({kernels:?})"),
            &want_rot,
            || fx.gpu.rotate_with_key(&d, &dkey, &fx.stream),
        );
    }
    fx.gpu.set_ntt_kernels(NttKernels::GlobalSync);
}

/// Every stream's launches meet on barrier state of their own, however many streams there
/// are. Until the sixteenth session streams beyond the first 32 took rotating regions of
/// counters and of `ntt_fwd_gq`'s queue state, so the j-th such launch and the (j + 32)-th
/// shared one; had they run at the same time, one launch's blocks would have counted the
/// other's arrivals (passing a limb barrier early) or taken its work items. Here each of 33
/// streams beyond the first 32 runs the same operations (rotate: the ModUp by `ntt_fwd_gq`,
/// plain launch, and the inner product by `ks_inner_gs`, cooperative; then a forward NTT by
/// `ntt_fwd_gp`), so under rotation the first and the last stream's launches shared every
/// region; those two streams wait for the same long piece of work on the fixture's stream, so
/// their launches become ready together (two 2-limb ciphertexts: small grids that fit side by
/// side, on different hardware queues), while the 31 streams between them run theirs at
/// once. Five trials; every result must be the CPU engine's words. Against the rotating
/// regions this did not fail in ten processes (runs 90-91, one under
/// `CUDA_DEVICE_MAX_CONNECTIONS=7`): the pair's launches evidently did not overlap there, so
/// it guards the property rather than reproducing the old race.
#[test]
fn streams_beyond_32_never_share_barrier_state() {
    use cust::event::{Event, EventFlags};
    use cust::stream::StreamWaitEventFlags;
    let Some(fx) = fixture() else { return };
    fx.gpu.set_ntt_kernels(NttKernels::GlobalSync);
    let ct = fresh(&fx.cpu, 31, 6);
    let (key, dkey) = fx.rotation_key_by_one();
    let want_rot = fx.cpu.rotate_with_key(&ct, &key).expect("cpu rotate");
    let want = fx
        .cpu
        .coefficient_domain_to_ntt_domain(&want_rot)
        .expect("cpu ntt");
    let big = fresh(&fx.cpu, 32, 0);
    let dbig = fx.up(&big);
    let d = fx.up(&ct);
    fx.stream.synchronize().expect("sync");
    // The fixture's stream (long work) and 31 fillers take the first 32 streams' places.
    let fillers: Vec<cust::stream::Stream> =
        (0..31).map(|_| fx.gpu.stream().expect("stream")).collect();
    for s in std::iter::once(&fx.stream).chain(&fillers) {
        let r = fx.gpu.rotate_with_key(&d, &dkey, s).expect("filler rotate");
        let f = fx
            .gpu
            .coefficient_domain_to_ntt_domain(&r, s)
            .expect("filler ntt");
        r.free_async(s).expect("free");
        f.free_async(s).expect("free");
    }
    // The driver maps streams to its hardware queues round-robin in creation order (8 by
    // default): a stream made between the 32nd and the 33rd, which launches nothing, puts the
    // first and the last on different queues, so nothing but the barrier state could order
    // their launches.
    let mut streams: Vec<cust::stream::Stream> =
        (0..32).map(|_| fx.gpu.stream().expect("stream")).collect();
    let spacer = fx.gpu.stream().expect("stream");
    streams.push(fx.gpu.stream().expect("stream"));
    for trial in 0..5 {
        // ~2 ms of work on the fixture's stream, then one event per gated stream.
        for _ in 0..40 {
            let r = fx
                .gpu
                .rotate_with_key(&dbig, &dkey, &fx.stream)
                .expect("rotate");
            r.free_async(&fx.stream).expect("free");
        }
        let mut gates = (0..2).map(|_| {
            let e = Event::new(EventFlags::DISABLE_TIMING).expect("event");
            e.record(&fx.stream).expect("record");
            e
        });
        let mut outs = Vec::new();
        for (i, s) in streams.iter().enumerate() {
            if i == 0 || i == 32 {
                s.wait_event(gates.next().expect("gate"), StreamWaitEventFlags::DEFAULT)
                    .expect("wait");
            }
            let r = fx.gpu.rotate_with_key(&d, &dkey, s).expect("rotate");
            let f = fx
                .gpu
                .coefficient_domain_to_ntt_domain(&r, s)
                .expect("forward");
            outs.push((r, f));
        }
        for (i, (s, (r, f))) in streams.iter().zip(outs).enumerate() {
            let got = fx.gpu.download_ciphertext(&r, s).expect("download");
            common::assert_same_words(
                &format!("trial {trial}, stream {i} of 33, rotate"),
                &got,
                &want_rot,
            );
            let got = fx.gpu.download_ciphertext(&f, s).expect("download");
            common::assert_same_words(
                &format!("trial {trial}, stream {i} of 33, rotate + NTT"),
                &got,
                &want,
            );
        }
    }
    drop(streams);
    drop(spacer);
    drop(fillers);
}

/// Streams beyond [`CudaEngine::barrier_stream_limit`] get no barrier state: their NTTs and key
/// switches run the cluster kernels (no paired launch is counted) and give the same words; the
/// streams within the limit each hold state of their own.
#[test]
fn streams_beyond_the_barrier_state_limit_run_the_cluster_kernels() {
    let Some(fx) = fixture() else { return };
    fx.gpu.set_ntt_kernels(NttKernels::GlobalSync);
    let NttAndRotation {
        d,
        dkey,
        want_ntt: want,
        want_rot,
    } = fx.ntt_and_rotation_case(33, 6);
    fx.stream.synchronize().expect("sync");
    let limit = fx.gpu.barrier_stream_limit();
    let have = fx.gpu.barrier_streams();
    let streams: Vec<cust::stream::Stream> = (have..=limit)
        .map(|_| fx.gpu.stream().expect("stream"))
        .collect();
    for (i, s) in streams.iter().enumerate() {
        let before = fx.gpu.paired_ntt_launches();
        let f = fx
            .gpu
            .coefficient_domain_to_ntt_domain(&d, s)
            .expect("forward");
        let last = i + 1 == streams.len();
        assert_eq!(
            fx.gpu.paired_ntt_launches() - before,
            u64::from(!last),
            "stream {} of {}: paired launches",
            have + i + 1,
            limit + 1
        );
        if last || i % 256 == 0 {
            let got = fx.gpu.download_ciphertext(&f, s).expect("download");
            common::assert_same_words(&format!("stream {}, forward", have + i + 1), &got, &want);
        } else {
            f.free_async(s).expect("free");
        }
    }
    assert_eq!(
        fx.gpu.barrier_streams(),
        limit,
        "every stream up to the limit holds state"
    );
    let s = streams.last().expect("a stream");
    let r = fx
        .gpu
        .rotate_with_key(&d, &dkey, s)
        .expect("rotate beyond the limit");
    let got = fx.gpu.download_ciphertext(&r, s).expect("download");
    common::assert_same_words("rotate on a stream beyond the limit", &got, &want_rot);
    // Hoisted there: the shared ModUp runs on the cluster kernels, the fused inner product
    // (ks_inner_gh) has no barrier state, so the switch allocates its own digits and
    // permutes the shared ones into them (aut_ntt + ks_inner_cl).
    let fused = fx.gpu.hoisted_inner_launches();
    let r = fx
        .gpu
        .rotate_many_with_keys(&d, &[&dkey, &dkey], s)
        .expect("hoisted beyond the limit");
    assert_eq!(
        fx.gpu.hoisted_inner_launches(),
        fused,
        "no fused inner product"
    );
    for (i, r) in r.iter().enumerate() {
        let got = fx.gpu.download_ciphertext(r, s).expect("download");
        common::assert_same_words(&format!("hoisted {i} beyond the limit"), &got, &want_rot);
    }
    assert_eq!(
        fx.gpu.ntt_kernels(),
        NttKernels::GlobalSync,
        "the engine's kernel choice is unchanged"
    );
    drop(streams);
}

#[test]
fn hoisted_rotations_and_conjugation_match_cpu_on_every_kernel_path() {
    let Some(fx) = fixture() else { return };
    let sk = fx.cpu.secret_key();
    let keys = [
        fx.cpu.create_rotation_key(1, sk).expect("key 1"),
        fx.cpu.create_rotation_key(-3, sk).expect("key -3"),
        fx.cpu.create_conjugation_key(sk).expect("conjugation key"),
    ];
    let dkeys: Vec<GpuSwitchKey> = keys
        .iter()
        .map(|k| fx.gpu.upload_rotation_key(k, &fx.stream).expect("upload"))
        .collect();
    let drefs: Vec<&GpuSwitchKey> = dkeys.iter().collect();
    for level in [0usize, 3, 6] {
        let ct = fresh(&fx.cpu, 11, level);
        let refs: Vec<&RotationKey> = keys.iter().collect();
        let want = fx
            .cpu
            .rotate_many_with_keys(&ct, &refs)
            .expect("cpu hoisted");
        let want_conj = fx.cpu.conjugate(&ct, &keys[2]).expect("cpu conjugate");
        let d = fx.up(&ct);
        on_both_kernel_paths(&fx, |path| {
            fx.gpu
                .poison_pool(4 * 9 * 16384 * 9, &fx.stream)
                .expect("poison");
            let fused = fx.gpu.hoisted_inner_launches();
            let got = fx
                .gpu
                .rotate_many_with_keys(&d, &drefs, &fx.stream)
                .expect("gpu hoisted");
            assert_eq!(got.len(), 3);
            // GlobalSync reads the shared digits through σ_g in the inner product (one
            // ks_inner_gh per key); the cluster kernels permute them first (aut_ntt).
            let want_fused = if fx.gpu.ntt_kernels() == NttKernels::GlobalSync {
                3
            } else {
                0
            };
            assert_eq!(
                fx.gpu.hoisted_inner_launches() - fused,
                want_fused,
                "{path}"
            );
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                let host = fx.gpu.download_ciphertext(g, &fx.stream).expect("down");
                common::assert_same_words(&format!("hoisted key {i} L{level} ({path})"), &host, w);
            }
            // A second call reuses the launch graphs of the first: same words.
            let again = fx
                .gpu
                .rotate_many_with_keys(&d, &drefs[1..], &fx.stream)
                .expect("gpu hoisted again");
            let host = fx
                .gpu
                .download_ciphertext(&again[0], &fx.stream)
                .expect("down");
            common::assert_same_words(&format!("hoisted again L{level} ({path})"), &host, &want[1]);
            fx.check(&format!("conjugate L{level} ({path})"), &want_conj, || {
                fx.gpu.conjugate(&d, &dkeys[2], &fx.stream)
            });
        });
    }
    let d = fx.up(&fresh(&fx.cpu, 11, 0));
    assert!(fx
        .gpu
        .rotate_many_with_keys(&d, &[], &fx.stream)
        .expect("no keys")
        .is_empty());
}

#[test]
fn hoisting_checks_every_key_and_the_input_before_any_work() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let (_, drlk) = fx.relinearization_keys();
    let (_, dkey) = fx.rotation_key_by_one();
    let ct = fx.up(&fresh(&fx.cpu, 2, 0));
    let launched = (fx.gpu.graph_replays(), fx.gpu.chain_launches());
    let err = fx
        .gpu
        .rotate_many_with_keys(&ct, &[&dkey, &drlk], s)
        .expect_err("a relinearization key among the keys");
    assert!(
        matches!(
            err,
            CudaBackendError::Ckks(CkksError::WrongKey {
                op: "rotate_many_with_keys",
                ..
            })
        ),
        "{err}"
    );
    assert_eq!(
        (fx.gpu.graph_replays(), fx.gpu.chain_launches()),
        launched,
        "nothing was launched"
    );
    let ntt = fx
        .gpu
        .coefficient_domain_to_ntt_domain(&ct, s)
        .expect("ntt");
    assert!(matches!(
        fx.gpu.rotate_many_with_keys(&ntt, &[&dkey], s),
        Err(CudaBackendError::Ckks(CkksError::DomainMismatch { .. }))
    ));
    let err = fx.gpu.conjugate(&ct, &dkey, s).expect_err("rotation key");
    assert!(
        matches!(
            err,
            CudaBackendError::Ckks(CkksError::WrongKey {
                op: "conjugate",
                ..
            })
        ),
        "{err}"
    );
    assert!(err.to_string().contains("Galois element"), "{err}");
    assert!(matches!(
        fx.gpu.conjugate(&ct, &drlk, s),
        Err(CudaBackendError::Ckks(CkksError::WrongKey { .. }))
    ));
}

#[test]
fn mod_switch_to_level_and_multiply_by_integer_match_cpu() {
    let Some(fx) = fixture() else { return };
    let max = fx.cpu.max_level();
    for (from, to) in [
        (0usize, 0usize),
        (0, 1),
        (0, 5),
        (2, max),
        (max - 1, max),
        (max, max),
    ] {
        let ct = fresh(&fx.cpu, 5, from);
        let d = fx.up(&ct);
        let want = fx.cpu.mod_switch_to_level(&ct, to).expect("cpu");
        fx.check(
            &format!("mod_switch_to_level {from} -> {to}"),
            &want,
            || fx.gpu.mod_switch_to_level(&d, to, &fx.stream),
        );
    }
    let d = fx.up(&fresh(&fx.cpu, 5, 3));
    for bad in [2usize, max + 1] {
        let err = fx
            .gpu
            .mod_switch_to_level(&d, bad, &fx.stream)
            .expect_err("invalid level");
        assert!(
            matches!(
                err,
                CudaBackendError::Ckks(CkksError::InvalidLevel { level, current: 3, .. }) if level == bad
            ),
            "{err}"
        );
    }
    for level in [0usize, 4] {
        let ct = fresh(&fx.cpu, 8, level);
        let ntt = fx.cpu.coefficient_domain_to_ntt_domain(&ct).expect("ntt");
        for k in [0i64, 1, -1, 3, -7, 1 << 40, i64::MIN, i64::MAX] {
            for (what, c) in [("coeff", &ct), ("ntt", &ntt)] {
                let want = fx.cpu.multiply_by_integer(c, k).expect("cpu");
                let d = fx.up(c);
                fx.check(
                    &format!("multiply_by_integer {k} L{level} {what}"),
                    &want,
                    || fx.gpu.multiply_by_integer(&d, k, &fx.stream),
                );
            }
        }
    }
}

#[test]
fn plaintext_domain_transitions_match_cpu_in_both_bases() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    for level in [0usize, 5] {
        let enc = fx
            .cpu
            .encode(&message(&fx.cpu, 4), level, None)
            .expect("encode");
        for basis in [ModulusBasis::Q, ModulusBasis::QP] {
            let coeff = fx
                .cpu
                .prepare_plaintext_for_addition(&enc, basis)
                .expect("prepare");
            let want = fx
                .cpu
                .plaintext_coefficient_domain_to_ntt_domain(&coeff)
                .expect("cpu forward");
            fx.gpu.poison_pool(4 * 9 * 16384 * 9, s).expect("poison");
            let dc = fx.gpu.upload_plaintext(&coeff, s).expect("up");
            let dn = fx
                .gpu
                .plaintext_coefficient_domain_to_ntt_domain(&dc, s)
                .expect("gpu forward");
            let got = fx.gpu.download_plaintext(&dn, s).expect("down");
            common::assert_same_plaintext(
                &format!("plaintext forward L{level} {basis:?}"),
                &got,
                &want,
            );
            let back = fx
                .gpu
                .plaintext_ntt_domain_to_coefficient_domain(&dn, s)
                .expect("gpu inverse");
            let got = fx.gpu.download_plaintext(&back, s).expect("down");
            common::assert_same_plaintext(
                &format!("plaintext round trip L{level} {basis:?}"),
                &got,
                &coeff,
            );
            assert!(matches!(
                fx.gpu.plaintext_ntt_domain_to_coefficient_domain(&dc, s),
                Err(CudaBackendError::Ckks(CkksError::DomainMismatch {
                    expected: Domain::Ntt,
                    ..
                }))
            ));
            assert!(matches!(
                fx.gpu.plaintext_coefficient_domain_to_ntt_domain(&dn, s),
                Err(CudaBackendError::Ckks(CkksError::DomainMismatch {
                    expected: Domain::Coefficient,
                    ..
                }))
            ));
        }
    }
}

#[test]
fn cached_keys_rotate_by_step_and_relinearize_as_the_cpu_engine() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    // The cache's source: a CPU engine of the fixture's context and secret key (same seed).
    let src = source_engine();
    let keys = fx.gpu.key_cache(Arc::clone(&src)).expect("key cache");
    assert_eq!(keys.location(), fx.gpu.location());
    assert_eq!((keys.rotation_keys(), keys.nbytes()), (0, 0));
    let slots = src.num_slots() as i64;
    for level in [0usize, 4] {
        let ct = fresh(&src, 21, level);
        let d = fx.up(&ct);
        // 1 and slots + 1 share a key; 0 and slots are copies.
        for step in [1, -3, 0, slots, slots + 1] {
            let want = src.rotate_by_step(&ct, step).expect("cpu rotate_by_step");
            fx.check(&format!("rotate_by_step({step}) L{level}"), &want, || {
                fx.gpu.rotate_by_step(&d, step, &keys, s)
            });
        }
        let steps = [1, 0, -3, slots + 1, 5];
        let want = src.rotate_many_by_steps(&ct, &steps).expect("cpu hoisted");
        fx.gpu.poison_pool(4 * 9 * 16384 * 9, s).expect("poison");
        let got = fx
            .gpu
            .rotate_many_by_steps(&d, &steps, &keys, s)
            .expect("gpu rotate_many_by_steps");
        assert_eq!(got.len(), steps.len());
        for ((g, w), step) in got.iter().zip(&want).zip(steps) {
            let host = fx.gpu.download_ciphertext(g, s).expect("down");
            common::assert_same_words(&format!("rotate_many_by_steps {step} L{level}"), &host, w);
        }
    }
    // Keys for 1, -3 and 5, each uploaded once (slots + 1 found the key of 1).
    let one = fx.gpu.cached_rotation_key(&keys, 1, s).expect("key 1");
    assert_eq!(keys.rotation_keys(), 3);
    assert_eq!(keys.nbytes(), 3 * one.nbytes());
    assert!(Arc::ptr_eq(
        &one,
        &fx.gpu
            .cached_rotation_key(&keys, slots + 1, s)
            .expect("key slots + 1")
    ));
    assert_eq!(one.galois_element(), Some(src.galois_element_for_step(1).1));

    // Relinearization with the cached key, the CPU engine's relinearize word for word.
    assert!(!keys.has_relinearization_key());
    let a = src
        .coefficient_domain_to_ntt_domain(&fresh(&src, 4, 2))
        .expect("ntt");
    let b = src
        .coefficient_domain_to_ntt_domain(&fresh(&src, 5, 2))
        .expect("ntt");
    let prod = src.multiply(&a, &b).expect("cpu multiply");
    let want = src.relinearize(&prod).expect("cpu relinearize");
    let dp = fx.up(&prod);
    for round in 0..2 {
        fx.check(&format!("relinearize, round {round}"), &want, || {
            fx.gpu.relinearize(&dp, &keys, s)
        });
    }
    assert!(keys.has_relinearization_key());
    let rlk = fx.gpu.cached_relinearization_key(&keys, s).expect("rlk");
    assert!(Arc::ptr_eq(
        &rlk,
        &fx.gpu
            .cached_relinearization_key(&keys, s)
            .expect("rlk again")
    ));
    assert_eq!(rlk.galois_element(), None);
    assert_eq!(keys.nbytes(), 4 * one.nbytes());
    drop((one, rlk));

    // Clearing frees every key; the next use makes and uploads it again, same words.
    keys.clear(s).expect("clear");
    assert_eq!(
        (
            keys.rotation_keys(),
            keys.has_relinearization_key(),
            keys.nbytes()
        ),
        (0, false, 0)
    );
    let ct = fresh(&src, 22, 0);
    let want = src.rotate_by_step(&ct, -3).expect("cpu");
    let d = fx.up(&ct);
    fx.check("rotate_by_step(-3) after clear", &want, || {
        fx.gpu.rotate_by_step(&d, -3, &keys, s)
    });
    assert_eq!(keys.rotation_keys(), 1);
}

#[test]
fn cached_key_errors_are_typed_and_make_no_key() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let src = source_engine();
    let keys = fx.gpu.key_cache(Arc::clone(&src)).expect("key cache");
    let ct = fx.up(&fresh(&src, 3, 0));
    // A step ≡ 0 has no key.
    let err = fx
        .gpu
        .cached_rotation_key(&keys, src.num_slots() as i64, s)
        .expect_err("no key for a zero step");
    assert!(
        matches!(
            err,
            CudaBackendError::Ckks(CkksError::WrongKey {
                op: "cached_rotation_key",
                ..
            })
        ),
        "{err}"
    );
    // Bad inputs are refused before any key is made.
    let ntt = fx
        .gpu
        .coefficient_domain_to_ntt_domain(&ct, s)
        .expect("ntt");
    assert!(matches!(
        fx.gpu.rotate_by_step(&ntt, 1, &keys, s),
        Err(CudaBackendError::Ckks(CkksError::DomainMismatch {
            op: "rotate_by_step",
            ..
        }))
    ));
    assert!(matches!(
        fx.gpu.rotate_many_by_steps(&ntt, &[1, 2], &keys, s),
        Err(CudaBackendError::Ckks(CkksError::DomainMismatch {
            op: "rotate_many_by_steps",
            ..
        }))
    ));
    assert!(matches!(
        fx.gpu.relinearize(&ntt, &keys, s),
        Err(CudaBackendError::Ckks(CkksError::ComponentMismatch {
            op: "relinearize",
            expected: 3,
            actual: 2
        }))
    ));
    assert_eq!(
        (keys.rotation_keys(), keys.has_relinearization_key()),
        (0, false),
        "no key was made for a refused input"
    );
    // A source engine of another context: refused when the cache is made.
    let other = Arc::new(
        CpuEngine::with_seed(Preset::Slots8192Scale30Levels9Int64, SEED).expect("other engine"),
    );
    let err = fx
        .gpu
        .key_cache(Arc::clone(&other))
        .expect_err("other context");
    assert!(
        matches!(
            err,
            CudaBackendError::Ckks(CkksError::ContextMismatch {
                op: "key_cache",
                ..
            })
        ),
        "{err}"
    );
    // A cache of this engine used by an engine of the other context: refused before any work.
    let gpu2 = CudaEngine::new(other.context(), 0).expect("second engine");
    let ct2 = gpu2
        .upload_ciphertext(&other.encrypt_message(&[0.5]).expect("encrypt"), s)
        .expect("upload");
    for (what, result) in [
        (
            "rotate_by_step",
            gpu2.rotate_by_step(&ct2, 1, &keys, s).map(drop),
        ),
        (
            "rotate_many_by_steps",
            gpu2.rotate_many_by_steps(&ct2, &[1], &keys, s).map(drop),
        ),
        (
            "cached_relinearization_key",
            gpu2.cached_relinearization_key(&keys, s).map(drop),
        ),
    ] {
        let err = result.expect_err(what);
        assert!(
            matches!(
                &err,
                CudaBackendError::Ckks(CkksError::ContextMismatch { op, expected, actual })
                    if *op == what && *expected == other.context_id() && *actual == src.context_id()
            ),
            "{what}: {err}"
        );
    }
    assert_eq!(
        (keys.rotation_keys(), keys.has_relinearization_key()),
        (0, false)
    );
}

/// A key cache with a capacity (decision 0530): at most that many device bytes, least
/// recently used keys first out, every result still the CPU engine's word for word; a key
/// used only on the evicting call's stream is freed in stream order (no wait), one another
/// stream read is freed after waiting for the device (else the recycled words would be
/// overwritten under the other stream's work); a key larger than the capacity is refused
/// before any key is made.
#[test]
fn a_bounded_key_cache_holds_at_most_its_capacity_on_the_device() {
    use cust::event::EventStatus;
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let g = &fx.gpu;
    let src = source_engine();
    let keys = g.key_cache(Arc::clone(&src)).expect("key cache");
    let kb = src.switch_key_bytes();
    assert!(keys
        .set_capacity(Some(2 * kb), s)
        .expect("capacity")
        .is_empty());
    assert_eq!(keys.capacity(), Some(2 * kb));
    let rot = |step: i64| {
        let (canonical, galois_element) = src.galois_element_for_step(step);
        CachedKey::Rotation {
            galois_element,
            step: canonical,
        }
    };
    let ct = fresh(&src, 31, 1);
    let d = fx.up(&ct);
    g.set_ntt_kernels(NttKernels::GlobalSync);
    // Rotates on `s`, checks the words and frees the result in stream order (a dropped
    // result would wait, and count in `waited_drops`).
    let rotate = |step: i64| {
        g.poison_pool(4 * 9 * 16384 * 9, s).expect("poison");
        let r = g
            .rotate_by_step(&d, step, &keys, s)
            .expect("rotate_by_step");
        let host = g.download_ciphertext(&r, s).expect("down");
        r.free_async(s).expect("free");
        let want = src.rotate_by_step(&ct, step).expect("cpu");
        common::assert_same_words(&format!("bounded rotate_by_step({step})"), &host, &want);
    };
    // 1, 2, 1 again, then 3: the key of 2 leaves, freed in order on `s` without a wait.
    for step in [1, 2, 1] {
        rotate(step);
    }
    let waited = CudaEngine::waited_drops();
    rotate(3);
    assert_eq!(
        CudaEngine::waited_drops(),
        waited,
        "a key used on this stream only is freed in stream order"
    );
    assert_eq!(keys.keys(), vec![rot(1), rot(3)]);
    assert_eq!((keys.nbytes(), keys.rotation_keys()), (2 * kb, 2));

    // Relinearization: the key of 1 leaves for the relinearization key.
    let a = src
        .coefficient_domain_to_ntt_domain(&fresh(&src, 4, 2))
        .expect("ntt");
    let prod = src.multiply(&a, &a).expect("cpu multiply");
    let want = src.relinearize(&prod).expect("cpu relinearize");
    let dp = fx.up(&prod);
    fx.check("bounded relinearize", &want, || {
        g.relinearize(&dp, &keys, s)
    });
    assert_eq!(keys.keys(), vec![rot(3), CachedKey::Relinearization]);
    assert!(keys.has_relinearization_key());

    // The key of 3 read on a second stream by long work, then let go on `s`: freeing it waits
    // for that work; the second stream's own cached rotation is still right.
    let other = g.stream().expect("second stream");
    let k3 = g.cached_rotation_key(&keys, 3, &other).expect("key 3");
    let done = queue_long_work(g, &d, &k3, &other, "key read on a second stream");
    let late = g
        .rotate_by_step(&d, 3, &keys, &other)
        .expect("late rotation");
    drop(k3);
    let waited = CudaEngine::waited_drops();
    // Key of 4 pushes out the relinearization key (no wait), key of 5 the key of 3 (wait).
    rotate(4);
    rotate(5);
    assert_eq!(
        done.query().expect("query"),
        EventStatus::Ready,
        "freeing a key another stream read waited for the device"
    );
    assert_eq!(CudaEngine::waited_drops(), waited + 1);
    let host = g.download_ciphertext(&late, &other).expect("down");
    common::assert_same_words(
        "rotation on the second stream",
        &host,
        &src.rotate_by_step(&ct, 3).expect("cpu"),
    );
    assert_eq!(keys.keys(), vec![rot(4), rot(5)]);

    // Hoisted through the two-key cache: three keys, every result right, the last two kept.
    let steps = [6, 0, -7, 8];
    let want = src.rotate_many_by_steps(&ct, &steps).expect("cpu hoisted");
    let got = g
        .rotate_many_by_steps(&d, &steps, &keys, s)
        .expect("gpu hoisted");
    for ((r, w), step) in got.iter().zip(&want).zip(steps) {
        let host = g.download_ciphertext(r, s).expect("down");
        common::assert_same_words(&format!("bounded hoisted {step}"), &host, w);
    }
    assert_eq!(keys.keys(), vec![rot(-7), rot(8)]);
    assert_eq!(keys.nbytes(), 2 * kb);

    // A lower capacity lets the oldest go (one `ckks.key_cache.evict` span naming it); one
    // below a key refuses every first use.
    let cap = capture::Capture::default();
    let left = cap.during(|| keys.set_capacity(Some(kb), s).expect("lower"));
    assert_eq!(left, vec![rot(-7)]);
    let evict = cap.one("ckks.key_cache.evict");
    assert_eq!(evict.field("location"), g.location().to_string());
    assert_eq!(evict.field("slot"), rot(-7).to_string());
    assert_eq!(evict.field("bytes"), kb.to_string());
    assert_eq!(
        keys.set_capacity(Some(kb - 1), s).expect("lower"),
        vec![rot(8)]
    );
    assert_eq!(keys.nbytes(), 0);
    let made = src.cached_keys();
    let refused = |what: &str, e: CudaBackendError, op: &str, key: CachedKey| {
        let text = e.to_string();
        let CudaBackendError::Ckks(CkksError::KeyCacheCapacity {
            op: o,
            key: k,
            location,
            bytes,
            capacity,
        }) = e
        else {
            panic!("{what}: expected KeyCacheCapacity, got {e:?}");
        };
        assert_eq!(
            (o, k, location, bytes, capacity),
            (op, key, g.location(), kb, kb - 1),
            "{what}: {text}"
        );
        assert!(
            text.contains("cuda:0") && text.contains(&kb.to_string()),
            "{text}"
        );
    };
    refused(
        "rotate_by_step",
        g.rotate_by_step(&d, 9, &keys, s).expect_err("too small"),
        "rotate_by_step",
        rot(9),
    );
    refused(
        "rotate_many_by_steps",
        g.rotate_many_by_steps(&d, &[0, 10], &keys, s)
            .expect_err("too small"),
        "rotate_many_by_steps",
        rot(10),
    );
    refused(
        "relinearize",
        g.relinearize(&dp, &keys, s).expect_err("too small"),
        "relinearize",
        CachedKey::Relinearization,
    );
    refused(
        "cached_rotation_key",
        g.cached_rotation_key(&keys, 11, s).expect_err("too small"),
        "cached_rotation_key",
        rot(11),
    );
    assert_eq!(keys.nbytes(), 0, "nothing was uploaded");
    assert_eq!(src.cached_keys(), made, "the source made no key");
    // Unbounded again: first uses work; clear empties.
    keys.set_capacity(None, s).expect("unbounded");
    rotate(9);
    keys.clear(s).expect("clear");
    assert_eq!((keys.nbytes(), keys.keys()), (0, vec![]));
}

/// Keys made on the device (decision 0531) are the CPU engine's keys word for word, on every
/// NTT kernel path; a miss enqueues the generation without any host wait (long work still
/// runs when it returns); a key made on one stream is used on another only after its making
/// (a stream wait); rotations and relinearization with them equal the CPU engine's.
#[test]
fn keys_made_on_the_device_are_the_cpu_engines_keys() {
    use cust::event::EventStatus;
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let g = &fx.gpu;
    let src = source_engine();
    let keys = g
        .device_key_cache(Arc::clone(&src), s)
        .expect("device key cache");
    assert!(keys.makes_keys_on_device());
    // A source of another context is refused before its secret key goes up.
    let other = Arc::new(
        CpuEngine::with_seed(Preset::Slots8192Scale30Levels9Int64, SEED).expect("other engine"),
    );
    assert!(matches!(
        g.device_key_cache(other, s),
        Err(CudaBackendError::Ckks(CkksError::ContextMismatch {
            op: "device_key_cache",
            ..
        }))
    ));
    let host_words =
        |k: &RotationKey| -> Vec<u64> { k.view().expect("host key").iter().copied().collect() };
    on_both_kernel_paths(&fx, |path| {
        keys.clear(s).expect("clear");
        for step in [1i64, -3, 4096] {
            g.poison_pool(4 * 9 * 16384 * 9, s).expect("poison");
            let dk = g.cached_rotation_key(&keys, step, s).expect("device key");
            let want = src.rotation_key(step).expect("cpu key");
            assert_eq!(dk.galois_element(), Some(want.galois_element()), "{path}");
            assert!(
                g.download_switch_key_words(&dk, s).expect("download") == host_words(&want),
                "{path}: the device's key of step {step} differs from the CPU engine's"
            );
        }
        let rlk = g.cached_relinearization_key(&keys, s).expect("device rlk");
        let want = src.relinearization_key().expect("cpu rlk");
        let want_words: Vec<u64> = want.view().expect("host").iter().copied().collect();
        assert!(
            g.download_switch_key_words(&rlk, s).expect("download") == want_words,
            "{path}: the device's relinearization key differs from the CPU engine's"
        );
    });
    g.set_ntt_kernels(NttKernels::GlobalSync);

    // Results with the device's keys: the CPU engine's, word for word.
    let ct = fresh(&src, 41, 2);
    let d = fx.up(&ct);
    for step in [1, 5] {
        let want = src.rotate_by_step(&ct, step).expect("cpu");
        fx.check(
            &format!("device-made key, rotate_by_step({step})"),
            &want,
            || g.rotate_by_step(&d, step, &keys, s),
        );
    }
    let a = src
        .coefficient_domain_to_ntt_domain(&fresh(&src, 42, 1))
        .expect("ntt");
    let prod = src.multiply(&a, &a).expect("multiply");
    let want = src.relinearize(&prod).expect("cpu relinearize");
    let dp = fx.up(&prod);
    fx.check("device-made key, relinearize", &want, || {
        g.relinearize(&dp, &keys, s)
    });

    // A miss waits for nothing on the host: long work on `s` is still running when it returns.
    let (_, busy_key) = fx.rotation_key_by_one();
    let done = queue_long_work(g, &d, &busy_key, s, "device key generation");
    let waited = CudaEngine::waited_drops();
    let k9 = g.cached_rotation_key(&keys, 9, s).expect("key 9");
    assert_eq!(
        done.query().expect("query"),
        EventStatus::NotReady,
        "making a key on the device must not wait for the stream"
    );
    assert_eq!(CudaEngine::waited_drops(), waited);
    drop(k9);

    // Made on `s` behind the long work, used at once on a second stream: the second stream
    // waits for the making.
    let done = queue_long_work(g, &d, &busy_key, s, "key made behind long work");
    let k11 = g
        .cached_rotation_key(&keys, 11, s)
        .expect("key 11, made on s");
    let other = g.stream().expect("second stream");
    let d2 = g.upload_ciphertext(&ct, &other).expect("upload");
    let r = g
        .rotate_by_step(&d2, 11, &keys, &other)
        .expect("rotate on the second stream");
    drop(k11);
    // Not yet made when the call returned (else the check below would mean nothing).
    assert_eq!(done.query().expect("query"), EventStatus::NotReady);
    let host = g.download_ciphertext(&r, &other).expect("down");
    common::assert_same_words(
        "rotation on a second stream with a key made on the first",
        &host,
        &src.rotate_by_step(&ct, 11).expect("cpu"),
    );
}

#[test]
fn rotations_by_zero_steps_are_copies_without_a_key_switch() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let src = source_engine();
    let keys = fx.gpu.key_cache(Arc::clone(&src)).expect("key cache");
    let ct = fresh(&src, 9, 3);
    let d = fx.up(&ct);
    let slots = src.num_slots() as i64;
    fx.gpu.set_ntt_kernels(NttKernels::GlobalSync);
    let before = (fx.gpu.chain_launches(), fx.gpu.hoisted_inner_launches());
    let replays = fx.gpu.graph_replays();
    let got = fx
        .gpu
        .rotate_many_by_steps(&d, &[0, slots, -slots], &keys, s)
        .expect("zero steps");
    assert_eq!(
        (fx.gpu.chain_launches(), fx.gpu.hoisted_inner_launches()),
        before,
        "no key switch ran"
    );
    // Three copies and nothing else (no shared ModUp).
    assert_eq!(
        fx.gpu.graph_replays() - replays,
        3 * u64::from(fx.gpu.graph_launches())
    );
    assert_eq!(keys.rotation_keys(), 0, "no key was made");
    for (i, g) in got.iter().enumerate() {
        let host = fx.gpu.download_ciphertext(g, s).expect("down");
        common::assert_same_words(&format!("zero step {i}"), &host, &ct);
    }
    assert!(fx
        .gpu
        .rotate_many_by_steps(&d, &[], &keys, s)
        .expect("no steps")
        .is_empty());
}

/// Queues ~200 rotations of `d` by `key` on `stream` (~10 ms on the GPU, enqueued in a
/// fraction of that), results freed in stream order, and returns an event recorded after them;
/// checks that the work is still running (else the caller's check would mean nothing).
fn queue_long_work(
    gpu: &CudaEngine,
    d: &GpuCiphertext,
    key: &GpuSwitchKey,
    stream: &cust::stream::Stream,
    what: &str,
) -> cust::event::Event {
    use cust::event::{Event, EventFlags, EventStatus};
    for _ in 0..200 {
        gpu.rotate_with_key(d, key, stream)
            .expect("rotate")
            .free_async(stream)
            .expect("free");
    }
    let done = Event::new(EventFlags::DEFAULT).expect("event");
    done.record(stream).expect("record");
    assert_eq!(
        done.query().expect("query"),
        EventStatus::NotReady,
        "{what}: the work must still run for the test to mean anything"
    );
    done
}

/// Dropping a value (instead of `free_async`) waits for the device: `cuMemFree` alone does
/// not wait for work still using pool memory, and the pool could hand the words to another
/// stream while that work runs. The same holds for the buffers `set_recycling(false)` frees
/// and for an engine's own buffers when it is dropped. Long work runs on a second stream; once
/// the value is dropped, every launch before the event has completed.
#[test]
fn dropping_values_waits_for_work_on_every_stream() {
    use cust::event::EventStatus;
    let Some(fx) = fixture() else { return };
    let other = fx.gpu.stream().expect("stream");
    let (_, dkey) = fx.rotation_key_by_one();
    let ready = |done: &cust::event::Event, what: &str| {
        assert_eq!(
            done.query().expect("query"),
            EventStatus::Ready,
            "{what}: the drop waited for the device"
        );
    };
    let d = fx.up(&fresh(&fx.cpu, 3, 0));
    fx.stream.synchronize().expect("sync");
    // The ciphertext the work reads.
    let done = queue_long_work(&fx.gpu, &d, &dkey, &other, "ciphertext");
    drop(d);
    ready(&done, "ciphertext");
    // The key the work reads.
    let d = fx.up(&fresh(&fx.cpu, 3, 0));
    let (_, k) = fx.rotation_key_by_one();
    fx.stream.synchronize().expect("sync");
    let done = queue_long_work(&fx.gpu, &d, &k, &other, "rotation key");
    drop(k);
    ready(&done, "rotation key");
    // Keys for encryption and decryption (the secret key is zeroed after the wait).
    for what in ["public key", "secret key"] {
        let done = queue_long_work(&fx.gpu, &d, &dkey, &other, what);
        if what == "public key" {
            drop(fx.gpu.upload_public_key(fx.cpu.public_key(), &fx.stream));
        } else {
            drop(fx.gpu.upload_secret_key(fx.cpu.secret_key(), &fx.stream));
        }
        ready(&done, what);
    }
    // The results the work freed into the recycling bins, freed for good.
    let done = queue_long_work(&fx.gpu, &d, &dkey, &other, "recycling off");
    assert!(fx.gpu.recycled_buffers() > 0);
    fx.gpu.set_recycling(false);
    ready(&done, "recycling off");
    assert_eq!(fx.gpu.recycled_buffers(), 0);
    fx.gpu.set_recycling(true);
    // A second engine dropped while its own work runs (its bins, scratch and tables).
    let gpu2 = CudaEngine::new(fx.cpu.context(), 0).expect("second engine");
    let s2 = gpu2.stream().expect("stream");
    let d2 = gpu2
        .upload_ciphertext(&fresh(&fx.cpu, 3, 0), &s2)
        .expect("upload");
    let k2 = gpu2
        .upload_rotation_key(
            &fx.cpu
                .create_rotation_key(1, fx.cpu.secret_key())
                .expect("key"),
            &s2,
        )
        .expect("upload key");
    s2.synchronize().expect("sync");
    let done = queue_long_work(&gpu2, &d2, &k2, &s2, "engine");
    d2.free_async(&s2).expect("free");
    k2.free_async(&s2).expect("free");
    // Destroying a stream does not wait for its work; dropping the engine does.
    drop(s2);
    drop(gpu2);
    ready(&done, "engine");
}

/// Successful operations never wait for the device in a drop: every scratch buffer goes back
/// in stream order and every result becomes a value (no host synchronisation inside an
/// operation). Each public operation runs once, its results freed with `free_async`; this
/// thread's count of waiting drops must not move. A dropped value then moves it by one.
#[test]
fn successful_operations_never_wait_in_a_drop() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let g = &fx.gpu;
    let src = source_engine();
    let keys = g.key_cache(Arc::clone(&src)).expect("key cache");
    let (_, dkey) = fx.rotation_key_by_one();
    let (_, drlk) = fx.relinearization_keys();
    let (pk, sk) = common::device_keys(g, &fx.cpu, s);
    let half = fx
        .cpu
        .prepare_plaintext_for_multiplication(
            &fx.cpu
                .encode(&vec![0.5; fx.cpu.num_slots()], 0, None)
                .expect("encode"),
            ModulusBasis::Q,
        )
        .expect("prepare");
    let dhalf = g.upload_plaintext(&half, s).expect("pt up");
    let d = fx.up(&fresh(&fx.cpu, 5, 0));
    let ntt = g.coefficient_domain_to_ntt_domain(&d, s).expect("ntt");
    let prod = g.multiply(&ntt, &ntt, s).expect("multiply");
    // Keys made and uploaded before counting (uploads drop nothing either).
    g.cached_rotation_key(&keys, 1, s).expect("key");
    g.cached_relinearization_key(&keys, s).expect("rlk");
    s.synchronize().expect("sync");
    let before = CudaEngine::waited_drops();
    let free = |r: GpuCiphertext| r.free_async(s).expect("free");
    let free_all = |rs: Vec<GpuCiphertext>| rs.into_iter().for_each(free);
    free(g.coefficient_domain_to_ntt_domain(&d, s).expect("ntt"));
    free(g.ntt_domain_to_coefficient_domain(&ntt, s).expect("intt"));
    free(g.add(&d, &d, s).expect("add"));
    free(g.subtract(&d, &d, s).expect("subtract"));
    free(g.negate(&d, s).expect("negate"));
    free(g.multiply_by_integer(&d, -3, s).expect("integer"));
    free(
        g.multiply_plaintext(&ntt, &dhalf, s)
            .expect("multiply_plaintext"),
    );
    free(g.multiply(&ntt, &ntt, s).expect("multiply"));
    free(
        g.relinearize_with_key(&prod, &drlk, s)
            .expect("relinearize_with_key"),
    );
    free(g.relinearize(&prod, &keys, s).expect("relinearize"));
    free(g.rescale_to_next_level(&d, s).expect("rescale"));
    free(g.mod_switch_to_next_level(&d, s).expect("mod switch"));
    free(g.mod_switch_to_level(&d, 3, s).expect("mod switch to 3"));
    free(g.automorphism(&d, 5, s).expect("automorphism"));
    free(g.rotate_with_key(&d, &dkey, s).expect("rotate"));
    free_all(
        g.rotate_many_with_keys(&d, &[&dkey, &dkey], s)
            .expect("hoisted"),
    );
    free(g.rotate_by_step(&d, 1, &keys, s).expect("rotate_by_step"));
    free_all(
        g.rotate_many_by_steps(&d, &[1, 0], &keys, s)
            .expect("by steps"),
    );
    free(
        g.encrypt_message(&message(&fx.cpu, 1), &pk, s)
            .expect("encrypt"),
    );
    let m = g.decrypt_message(&d, &sk, s).expect("decrypt");
    assert_eq!(m.len(), fx.cpu.num_slots());
    let z: Vec<Complex64> = m.iter().map(|&x| Complex64::new(x, -x)).collect();
    free(
        g.encrypt_complex_message(&z, &pk, s)
            .expect("encrypt complex"),
    );
    let back = g
        .decrypt_complex_message(&d, &sk, s)
        .expect("decrypt complex");
    assert_eq!(back.len(), fx.cpu.num_slots());
    for mult in [true, false] {
        let pt = if mult {
            g.encode_for_multiplication(&m, 2, None, ModulusBasis::QP, s)
        } else {
            g.encode_for_addition(&z, 1, None, ModulusBasis::Q, s)
        };
        pt.expect("encode").free_async(s).expect("free");
    }
    free(
        g.upload_ciphertext(&fresh(&fx.cpu, 6, 2), s)
            .expect("upload"),
    );
    s.synchronize().expect("sync");
    assert_eq!(
        CudaEngine::waited_drops(),
        before,
        "an operation dropped a buffer instead of freeing it in stream order"
    );
    let r = g.negate(&d, s).expect("negate");
    drop(r);
    assert_eq!(
        CudaEngine::waited_drops(),
        before + 1,
        "a dropped value waits"
    );
}

#[test]
fn operations_and_their_kernel_launches_are_spanned() {
    let Some(fx) = fixture() else { return };
    let NttAndRotation {
        d, dkey, want_ntt, ..
    } = fx.ntt_and_rotation_case(11, 2);
    let loc = fx.gpu.location().to_string();
    let replays = fx.gpu.graph_replays();
    let cap = capture::Capture::default();
    let (ntt, rotated, err) = cap.during(|| {
        let ntt = fx
            .gpu
            .coefficient_domain_to_ntt_domain(&d, &fx.stream)
            .expect("ntt");
        let rotated = fx
            .gpu
            .rotate_with_key(&d, &dkey, &fx.stream)
            .expect("rotate");
        let err = fx
            .gpu
            .coefficient_domain_to_ntt_domain(&ntt, &fx.stream)
            .expect_err("an NTT-domain input");
        (ntt, rotated, err)
    });
    let replayed = fx.gpu.graph_replays() - replays;
    let host = fx
        .gpu
        .download_ciphertext(&ntt, &fx.stream)
        .expect("download");
    common::assert_same_words("traced ntt", &host, &want_ntt);

    // The operations: where, which stream, the input's level and bytes; two NTT calls.
    let ops = cap.named("ckks.coefficient_domain_to_ntt_domain");
    assert_eq!(ops.len(), 2, "{:?}", cap.spans());
    for op in &ops {
        assert_eq!(op.field("location"), loc);
        assert_eq!(op.field("level"), "2");
        assert!(op.field("stream").starts_with("0x"), "{op:?}");
    }
    assert_eq!(ops[0].field("bytes"), d.nbytes().to_string());
    assert_eq!(ops[1].field("bytes"), ntt.nbytes().to_string());
    let rot = cap.one("ckks.rotate_with_key");
    assert_eq!(rot.field("galois"), format!("{:?}", dkey.galois_element()));
    assert_eq!(rot.field("bytes"), d.nbytes().to_string());
    assert_eq!(rotated.level(), 2);

    // Every kernel launch of the forward NTT is a child span naming the kernel and its path.
    let kernels = cap.named("ckks.kernel");
    let ntt_kernels: Vec<_> = kernels
        .iter()
        .filter(|k| k.parent.as_deref() == Some("ckks.coefficient_domain_to_ntt_domain"))
        .collect();
    assert!(!ntt_kernels.is_empty(), "{:?}", cap.spans());
    for k in &ntt_kernels {
        assert_eq!(k.field("op"), "coefficient_domain_to_ntt_domain");
        assert!(k.field("kernel").starts_with("ntt_fwd"), "{k:?}");
        assert!(k.field("grid").starts_with('('), "{k:?}");
    }
    for k in &kernels {
        assert!(["graph", "direct"].contains(&k.field("via")), "{k:?}");
    }
    // The rotation's launches: one chain span listing its kernels, or kernel spans.
    let in_rot: Vec<_> = cap
        .spans()
        .into_iter()
        .filter(|s| s.parent.as_deref() == Some("ckks.rotate_with_key"))
        .collect();
    assert!(!in_rot.is_empty(), "{:?}", cap.spans());
    for s in &in_rot {
        match s.name.as_str() {
            "ckks.chain" => assert!(s.field("kernels").contains(" -> "), "{s:?}"),
            "ckks.kernel" => assert_eq!(s.field("op"), "rotate_with_key"),
            other => panic!("unexpected span {other} in the rotation"),
        }
    }
    // A span per graph replay: the spans' "via = graph" count is the engine's own.
    let via_graph = kernels.iter().filter(|k| k.field("via") == "graph").count() as u64;
    assert_eq!(via_graph, replayed);

    // The refusal is the one error event, inside the second NTT span.
    let events: Vec<_> = cap
        .events()
        .into_iter()
        .filter(|e| e.fields.contains_key("error"))
        .collect();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        events[0].span.as_deref(),
        Some("ckks.coefficient_domain_to_ntt_domain")
    );
    assert_eq!(events[0].fields["error"], err.to_string());
    assert!(matches!(
        err,
        CudaBackendError::Ckks(CkksError::DomainMismatch { .. })
    ));
}

/// A ciphertext whose words a caller wrote out of range through `view_mut` is refused by the
/// upload with `NonCanonicalWord` (word index, prime, modulus); made canonical again, it
/// uploads, and its NTT equals the CPU engine's word for word.
#[test]
fn uploads_refuse_words_written_out_of_range() {
    let Some(fx) = fixture() else { return };
    let n = fx.cpu.n();
    let mut ct = fresh(&fx.cpu, 2, 0);
    let original = ct.view().expect("view")[[0, 5, 9]];
    ct.view_mut().expect("host words")[[0, 5, 9]] = u64::MAX;
    let e = fx.gpu.upload_ciphertext(&ct, &fx.stream).unwrap_err();
    assert!(
        matches!(
            e,
            CudaBackendError::Ckks(CkksError::NonCanonicalWord {
                index,
                prime_id: 5,
                word: u64::MAX,
                ..
            }) if index == 5 * n + 9
        ),
        "{e}"
    );
    ct.view_mut().expect("host words")[[0, 5, 9]] = original;
    let want = fx
        .cpu
        .coefficient_domain_to_ntt_domain(&ct)
        .expect("cpu ntt");
    fx.check("ntt after the word was restored", &want, || {
        fx.gpu
            .coefficient_domain_to_ntt_domain(&fx.up(&ct), &fx.stream)
    });
}
