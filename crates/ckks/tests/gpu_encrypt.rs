//! Device encode / sampling / decode (kernels/encode.cu) against the CPU engine, word for
//! word: GPU `encrypt_message_with_sampling_key` and `encrypt_with_sampling_key` vs the CPU's
//! `encrypt_with_sampling_key` (ciphertext words), GPU `decrypt_message` vs the CPU's
//! `decrypt_message` (f64 bit patterns of every slot), GPU `encode_for_multiplication` /
//! `encode_for_addition` vs the CPU's prepared plaintexts, the device pool poisoned first so
//! an unwritten word cannot match by luck.
//!
//! Built only with feature `cuda`. Without a CUDA device each test prints why and passes,
//! unless `FHELIUM_REQUIRE_GPU=1` makes that a failure.
#![cfg(feature = "cuda")]

mod common;
use common::{assert_same_plaintext, assert_same_words};

use fhelium_ckks::cuda::{
    CudaBackendError, CudaEngine, GpuCiphertext, GpuPublicKey, GpuSecretKey, NttKernels, SlotValues,
};
use fhelium_ckks::{Ciphertext, CkksError, CpuEngine, ModulusBasis, Plaintext, Preset};
use num_complex::Complex64;

const SEED: [u8; 32] = [21; 32];
const POISON_WORDS: usize = 4 * 9 * 16384 * 9;

// Field order = drop order: the stream goes before the engine releases the context.
struct Fixture {
    stream: cust::stream::Stream,
    gpu: CudaEngine,
    cpu: CpuEngine,
}

fn fixture() -> Option<Fixture> {
    let required = std::env::var("FHELIUM_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let cpu = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, SEED).expect("cpu engine");
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

fn message(len: usize, k: u64) -> Vec<f64> {
    (0..len)
        .map(|j| 0.5 * ((0.013 + 0.002 * k as f64) * j as f64 + k as f64).sin() - 0.1)
        .collect()
}

fn key(k: u8) -> [u8; 32] {
    std::array::from_fn(|i| (i as u8).wrapping_mul(29).wrapping_add(k))
}

impl Fixture {
    /// The CPU engine's public and secret keys, uploaded on the fixture's stream.
    fn device_keys(&self) -> (GpuPublicKey, GpuSecretKey) {
        common::device_keys(&self.gpu, &self.cpu, &self.stream)
    }

    /// The CPU engine's encryption of `pt` with sampling key `k`, checked word for word
    /// against `gpu()` run on a poisoned pool; returns the CPU's ciphertext.
    fn check_encrypt(
        &self,
        what: &str,
        pt: &Plaintext,
        k: &[u8; 32],
        gpu: impl FnOnce() -> Result<GpuCiphertext, CudaBackendError>,
    ) -> Ciphertext {
        let want = self
            .cpu
            .encrypt_with_sampling_key(pt, k)
            .expect("cpu encrypt");
        self.gpu
            .poison_pool(POISON_WORDS, &self.stream)
            .expect("poison");
        let got = gpu().unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_same_words(what, &self.down(&got), &want);
        want
    }

    fn down(&self, ct: &GpuCiphertext) -> Ciphertext {
        self.gpu
            .download_ciphertext(ct, &self.stream)
            .expect("download")
    }
}

#[test]
fn encrypt_message_on_the_device_matches_the_cpu_word_for_word() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let pk = fx.device_keys().0;
    let slots = fx.cpu.num_slots();
    // full, short (zero padding), empty, and one whose bound sends encode to the host
    let big = vec![5.0e6; slots];
    let cases: Vec<(String, Vec<f64>)> = vec![
        ("full".into(), message(slots, 1)),
        ("100 slots".into(), message(100, 2)),
        ("empty".into(), Vec::new()),
        ("host-encode fallback".into(), big),
    ];
    // With launch graphs the launches after the upload go out as one chain graph (decision
    // 0508), without them one by one: the same words either way.
    for graphs in [true, false] {
        fx.gpu.set_graph_launches(graphs);
        for (i, (what, m)) in cases.iter().enumerate() {
            let k = key(i as u8);
            let pt = fx.cpu.encode(m, 0, None).expect("cpu encode");
            let want = fx
                .cpu
                .encrypt_with_sampling_key(&pt, &k)
                .expect("cpu encrypt");
            fx.gpu.poison_pool(POISON_WORDS, s).expect("poison");
            let chains = fx.gpu.chain_launches();
            let paired = fx.gpu.paired_ntt_launches();
            let got = fx
                .gpu
                .encrypt_message_with_sampling_key(m, &pk, &k, s)
                .expect("gpu encrypt_message");
            let what = format!("encrypt_message ({what}, graphs {graphs})");
            assert_same_words(&what, &fx.down(&got), &want);
            // v's forward NTT (one component, one group per block) and the inverse NTT of
            // both components run the paired kernels on the default kernel path.
            assert_eq!(
                fx.gpu.paired_ntt_launches() - paired,
                2 * u64::from(fx.gpu.ntt_kernels() == NttKernels::GlobalSync),
                "{what}: paired NTT launches"
            );
            assert_eq!(
                fx.gpu.chain_launches() - chains,
                u64::from(fx.gpu.graph_launches()),
                "{what}: one chain graph with graph launches, none without"
            );
        }
    }
    fx.gpu.set_graph_launches(true);
}

#[test]
fn complex_messages_match_the_cpu_both_ways() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let (pk, sk) = fx.device_keys();
    let slots = fx.cpu.num_slots();
    let m: Vec<Complex64> = (0..slots)
        .map(|j| {
            let t = j as f64;
            Complex64::new(0.3 * (0.011 * t).sin(), -0.2 * (0.017 * t + 1.0).cos())
        })
        .collect();
    // Encoded on the device (full, short, empty; graphs on and off), and one whose bound
    // sends the encoding to the host (|re| + |im| summed over the slots is too large for the
    // device's no-overflow guarantee, yet every coefficient fits).
    let big = vec![Complex64::new(3.0e6, -2.0e6); slots];
    let cases: Vec<(&str, &[Complex64])> = vec![
        ("full", &m),
        ("77 slots", &m[..77]),
        ("empty", &[]),
        ("host-encode fallback", &big),
    ];
    for graphs in [true, false] {
        fx.gpu.set_graph_launches(graphs);
        for (i, (what, msg)) in cases.iter().enumerate() {
            let k = key(90 + i as u8);
            let pt = fx.cpu.encode_complex(msg, 0, None).expect("cpu encode");
            fx.check_encrypt(
                &format!("encrypt_complex_message ({what}, graphs {graphs})"),
                &pt,
                &k,
                || {
                    fx.gpu
                        .encrypt_complex_message_with_sampling_key(msg, &pk, &k, s)
                },
            );
        }
    }
    fx.gpu.set_graph_launches(true);
    let k = key(77);
    let pt = fx.cpu.encode_complex(&m, 0, None).expect("cpu encode");
    let want = fx.check_encrypt("encrypt_complex_message", &pt, &k, || {
        fx.gpu
            .encrypt_complex_message_with_sampling_key(&m, &pk, &k, s)
    });
    let rescaled = fx.cpu.rescale_to_next_level(&want).expect("rescale");
    for (what, ct) in [("L0", &want), ("L1 rescaled", &rescaled)] {
        let expect = fx.cpu.decrypt_complex_message(ct).expect("cpu decrypt");
        let dev = fx.gpu.upload_ciphertext(ct, s).expect("upload");
        let slots_got = fx
            .gpu
            .decrypt_complex_message(&dev, &sk, s)
            .expect("gpu decrypt_complex_message");
        assert_eq!(slots_got.len(), expect.len(), "{what}: slot count");
        let bad = (0..expect.len())
            .filter(|&i| {
                slots_got[i].re.to_bits() != expect[i].re.to_bits()
                    || slots_got[i].im.to_bits() != expect[i].im.to_bits()
            })
            .count();
        assert_eq!(bad, 0, "decrypt_complex_message {what}: {bad} slots differ");
    }
    // The engine's own sampling keys: two encryptions differ, both decrypt to m.
    let a = fx.gpu.encrypt_complex_message(&m, &pk, s).expect("a");
    let b = fx.gpu.encrypt_complex_message(&m, &pk, s).expect("b");
    assert_ne!(
        fx.down(&a).words(),
        fx.down(&b).words(),
        "fresh randomness per call"
    );
    let back = fx.gpu.decrypt_complex_message(&a, &sk, s).expect("decrypt");
    let err = back
        .iter()
        .zip(&m)
        .map(|(x, y)| (x - y).norm())
        .fold(0.0, f64::max);
    assert!(err < 5e-7, "round trip error {err:e}");
    let long = vec![Complex64::new(0.0, 0.0); slots + 1];
    assert!(matches!(
        fx.gpu.encrypt_complex_message(&long, &pk, s),
        Err(CudaBackendError::Ckks(CkksError::MessageTooLong { .. }))
    ));
    // A NaN imaginary part or a coefficient beyond int64: the CPU engine's error.
    for bad in [
        vec![Complex64::new(0.5, f64::NAN); 4],
        vec![Complex64::new(0.0, 1e300); 4],
    ] {
        assert!(matches!(
            fx.gpu.encrypt_complex_message(&bad, &pk, s),
            Err(CudaBackendError::Ckks(
                CkksError::CoefficientOutOfRange { .. }
            ))
        ));
    }
    // Decoding takes a 2-component coefficient-domain ciphertext, as for real slots.
    let ntt = fx.cpu.coefficient_domain_to_ntt_domain(&want).expect("ntt");
    let dev = fx.gpu.upload_ciphertext(&ntt, s).expect("upload");
    assert!(matches!(
        fx.gpu.decrypt_complex_message(&dev, &sk, s),
        Err(CudaBackendError::Ckks(CkksError::DomainMismatch { .. }))
    ));
}

#[test]
fn encrypt_of_a_host_plaintext_samples_on_the_device_like_the_cpu() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let pk = fx.device_keys().0;
    for level in [0usize, 3, 6] {
        let k = key(40 + level as u8);
        let pt = fx
            .cpu
            .encode(&message(fx.cpu.num_slots(), 7), level, Some(2f64.powi(30)))
            .expect("encode");
        fx.check_encrypt(&format!("encrypt L{level}"), &pt, &k, || {
            fx.gpu.encrypt_with_sampling_key(&pt, &pk, &k, s)
        });
    }
}

#[test]
fn decrypt_message_on_the_device_matches_the_cpu_bit_for_bit() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let sk = fx.device_keys().1;
    let ct0 = fx
        .cpu
        .encrypt_message(&message(fx.cpu.num_slots(), 3))
        .expect("encrypt");
    let rescaled = fx.cpu.rescale_to_next_level(&ct0).expect("rescale");
    let cases = [
        (
            "L0".to_string(),
            fx.cpu.mod_switch_to_level(&ct0, 0).expect("ms"),
        ),
        ("L1 rescaled".to_string(), rescaled),
        (
            "L3".to_string(),
            fx.cpu.mod_switch_to_level(&ct0, 3).expect("ms"),
        ),
        (
            "L6".to_string(),
            fx.cpu.mod_switch_to_level(&ct0, 6).expect("ms"),
        ),
    ];
    for (what, ct) in &cases {
        let want = fx.cpu.decrypt_message(ct).expect("cpu decrypt");
        let dev = fx.gpu.upload_ciphertext(ct, s).expect("upload");
        fx.gpu.poison_pool(POISON_WORDS, s).expect("poison");
        let chains = fx.gpu.chain_launches();
        let paired = fx.gpu.paired_ntt_launches();
        let got = fx.gpu.decrypt_message(&dev, &sk, s).expect("gpu decrypt");
        assert_eq!(
            fx.gpu.chain_launches() - chains,
            u64::from(fx.gpu.graph_launches()),
            "decrypt_message {what}: its five launches as one chain graph"
        );
        // The two tail rows' forward and inverse NTTs: one component each, on the paired
        // kernels with one group per block (the default kernel path).
        assert_eq!(
            fx.gpu.paired_ntt_launches() - paired,
            2 * u64::from(fx.gpu.ntt_kernels() == NttKernels::GlobalSync),
            "decrypt_message {what}: paired NTT launches"
        );
        assert_eq!(got.len(), want.len(), "{what}: slot count");
        if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
            let bad = (0..got.len())
                .filter(|&i| got[i].to_bits() != want[i].to_bits())
                .count();
            panic!(
                "decrypt_message {what}: {bad} slots differ, first {i}: gpu {:e} cpu {:e}",
                got[i], want[i]
            );
        }
        eprintln!("decrypt_message {what}: {} slots bit-exact", got.len());
    }
}

#[test]
fn device_round_trip_keeps_the_seed_precision_and_keys_differ_per_call() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let (pk, sk) = fx.device_keys();
    let m = message(fx.cpu.num_slots(), 9);
    let a = fx.gpu.encrypt_message(&m, &pk, s).expect("encrypt");
    let b = fx.gpu.encrypt_message(&m, &pk, s).expect("encrypt");
    assert_ne!(
        fx.down(&a).words(),
        fx.down(&b).words(),
        "two encryptions drew the same sampling key"
    );
    for ct in [&a, &b] {
        let got = fx.gpu.decrypt_message(ct, &sk, s).expect("decrypt");
        let err = m
            .iter()
            .zip(&got)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f64::max);
        eprintln!("device encrypt_message -> decrypt_message: max error {err:.3e}");
        assert!(err < 5e-7, "max error {err}");
    }
}

#[test]
fn device_encrypt_and_decrypt_refuse_bad_input_with_typed_errors() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let (pk, sk) = fx.device_keys();
    let long = vec![0.0; fx.cpu.num_slots() + 1];
    assert!(matches!(
        fx.gpu.encrypt_message(&long, &pk, s),
        Err(CudaBackendError::Ckks(CkksError::MessageTooLong { .. }))
    ));
    let nan = vec![f64::NAN; 4];
    assert!(matches!(
        fx.gpu.encrypt_message(&nan, &pk, s),
        Err(CudaBackendError::Ckks(
            CkksError::CoefficientOutOfRange { .. }
        ))
    ));
    let huge = vec![1e300; 4];
    assert!(matches!(
        fx.gpu.encrypt_message(&huge, &pk, s),
        Err(CudaBackendError::Ckks(
            CkksError::CoefficientOutOfRange { .. }
        ))
    ));
    let pt = fx
        .cpu
        .prepare_plaintext_for_addition(
            &fx.cpu.encode(&[1.0], 0, None).expect("encode"),
            fhelium_ckks::ModulusBasis::Q,
        )
        .expect("rns");
    assert!(matches!(
        fx.gpu.encrypt(&pt, &pk, s),
        Err(CudaBackendError::Ckks(
            CkksError::RepresentationMismatch { .. }
        ))
    ));
    let ct = fx.cpu.encrypt_message(&[1.0]).expect("encrypt");
    let ntt = fx.cpu.coefficient_domain_to_ntt_domain(&ct).expect("ntt");
    let dev = fx.gpu.upload_ciphertext(&ntt, s).expect("upload");
    assert!(matches!(
        fx.gpu.decrypt_message(&dev, &sk, s),
        Err(CudaBackendError::Ckks(CkksError::DomainMismatch { .. }))
    ));
}

#[test]
fn plaintexts_encoded_on_the_device_equal_the_cpu_prepared_ones() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let slots = fx.cpu.num_slots();
    let real = message(slots, 5);
    let short = message(77, 6);
    let complex: Vec<Complex64> = (0..slots)
        .map(|j| {
            Complex64::new(
                0.2 * (0.01 * j as f64).cos(),
                -0.3 * (0.02 * j as f64).sin(),
            )
        })
        .collect();
    // Constant slots whose bound sends the encoding to the host although every coefficient
    // fits (as in the encrypt tests).
    let big = vec![5.0e6; slots];
    let messages: Vec<(&str, SlotValues<'_>)> = vec![
        ("real", (&real).into()),
        ("77 real slots", short.as_slice().into()),
        ("complex", (&complex).into()),
        ("empty", SlotValues::Real(&[])),
        ("host-encode fallback", (&big).into()),
    ];
    for (what, m) in &messages {
        let cplx: Vec<Complex64> = match m {
            SlotValues::Real(r) => r.iter().map(|&x| Complex64::new(x, 0.0)).collect(),
            SlotValues::Complex(c) => c.to_vec(),
        };
        for (level, scale) in [(0, None), (3, Some(2f64.powi(30))), (6, None)] {
            let pt = fx
                .cpu
                .encode_complex(&cplx, level, scale)
                .expect("cpu encode");
            for basis in [ModulusBasis::Q, ModulusBasis::QP] {
                let case = format!("{what} L{level} {basis}");
                for mult in [true, false] {
                    let want = if mult {
                        fx.cpu.prepare_plaintext_for_multiplication(&pt, basis)
                    } else {
                        fx.cpu.prepare_plaintext_for_addition(&pt, basis)
                    }
                    .expect("cpu prepare");
                    fx.gpu.poison_pool(POISON_WORDS, s).expect("poison");
                    let got = if mult {
                        fx.gpu.encode_for_multiplication(*m, level, scale, basis, s)
                    } else {
                        fx.gpu.encode_for_addition(*m, level, scale, basis, s)
                    }
                    .unwrap_or_else(|e| panic!("{case}: {e}"));
                    let host = fx.gpu.download_plaintext(&got, s).expect("download");
                    assert_same_plaintext(&format!("{case} (multiplication {mult})"), &host, &want);
                }
            }
        }
    }
    // In use: multiply_plaintext and add_plaintext with them equal the CPU engine's.
    let ct = fx.cpu.encrypt_message(&message(slots, 8)).expect("encrypt");
    let ntt = fx.cpu.coefficient_domain_to_ntt_domain(&ct).expect("ntt");
    let mul = fx
        .gpu
        .encode_for_multiplication(&real, 0, None, ModulusBasis::Q, s)
        .expect("encode");
    let add = fx
        .gpu
        .encode_for_addition(&complex, 0, None, ModulusBasis::Q, s)
        .expect("encode");
    let pt_mul = fx
        .cpu
        .prepare_plaintext_for_multiplication(
            &fx.cpu.encode(&real, 0, None).expect("e"),
            ModulusBasis::Q,
        )
        .expect("prepare");
    let pt_add = fx
        .cpu
        .prepare_plaintext_for_addition(
            &fx.cpu.encode_complex(&complex, 0, None).expect("e"),
            ModulusBasis::Q,
        )
        .expect("prepare");
    let dn = fx.gpu.upload_ciphertext(&ntt, s).expect("upload");
    let dc = fx.gpu.upload_ciphertext(&ct, s).expect("upload");
    assert_same_words(
        "multiply_plaintext with a device-encoded plaintext",
        &fx.down(&fx.gpu.multiply_plaintext(&dn, &mul, s).expect("mul")),
        &fx.cpu.multiply_plaintext(&ntt, &pt_mul).expect("cpu mul"),
    );
    assert_same_words(
        "add_plaintext with a device-encoded plaintext",
        &fx.down(&fx.gpu.add_plaintext(&dc, &add, s).expect("add")),
        &fx.cpu.add_plaintext(&ct, &pt_add).expect("cpu add"),
    );
}

#[test]
fn device_encoding_refuses_what_the_cpu_engine_refuses() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let q = ModulusBasis::Q;
    let max = fx.cpu.max_level();
    let cases: Vec<(&str, Vec<f64>, usize, Option<f64>)> = vec![
        ("level past the last", vec![1.0], max + 1, None),
        ("NaN scale", vec![1.0], 0, Some(f64::NAN)),
        ("negative scale", vec![1.0], 0, Some(-1.0)),
        ("too many slots", vec![0.0; fx.cpu.num_slots() + 1], 0, None),
        ("NaN slot", vec![f64::NAN; 3], 0, None),
        ("coefficient beyond int64", vec![1e300; 3], 0, None),
    ];
    for (what, m, level, scale) in &cases {
        let want = fx
            .cpu
            .encode(m, *level, *scale)
            .and_then(|pt| fx.cpu.prepare_plaintext_for_multiplication(&pt, q))
            .expect_err(what);
        for mult in [true, false] {
            let got = if mult {
                fx.gpu.encode_for_multiplication(m, *level, *scale, q, s)
            } else {
                fx.gpu.encode_for_addition(m, *level, *scale, q, s)
            };
            match got {
                Err(CudaBackendError::Ckks(e)) => assert_eq!(
                    std::mem::discriminant(&e),
                    std::mem::discriminant(&want),
                    "{what}: {e} vs the CPU's {want}"
                ),
                other => panic!("{what}: expected the CPU's {want}, got {other:?}"),
            }
        }
    }
}

/// An encryption refused for its input draws no key from the engine's stream: after four
/// refusals (too long, NaN, a plaintext of the wrong representation, a complex message too
/// long) the engine's next `encrypt_message` and `encrypt` equal, word for word, the first
/// two of a twin engine with the same seed that was never refused.
#[test]
fn refused_device_encryptions_leave_the_random_stream_where_it_was() {
    let Some(fx) = fixture() else { return };
    let s = &fx.stream;
    let ctx = fx.cpu.context();
    let seed = Some([77u8; 32]);
    let gpu = CudaEngine::with_seed(ctx, 0, seed).expect("engine");
    let twin = CudaEngine::with_seed(ctx, 0, seed).expect("twin");
    let (pk, _) = common::device_keys(&gpu, &fx.cpu, s);
    let long = vec![0.0; fx.cpu.num_slots() + 1];
    assert!(matches!(
        gpu.encrypt_message(&long, &pk, s),
        Err(CudaBackendError::Ckks(CkksError::MessageTooLong { .. }))
    ));
    assert!(matches!(
        gpu.encrypt_message(&[f64::NAN], &pk, s),
        Err(CudaBackendError::Ckks(
            CkksError::CoefficientOutOfRange { .. }
        ))
    ));
    let clong = vec![Complex64::new(0.0, 0.0); fx.cpu.num_slots() + 1];
    assert!(matches!(
        gpu.encrypt_complex_message(&clong, &pk, s),
        Err(CudaBackendError::Ckks(CkksError::MessageTooLong { .. }))
    ));
    let pt = fx.cpu.encode(&[0.5, -0.25], 2, None).expect("encode");
    let rns = fx
        .cpu
        .prepare_plaintext_for_addition(&pt, ModulusBasis::Q)
        .expect("rns");
    assert!(matches!(
        gpu.encrypt(&rns, &pk, s),
        Err(CudaBackendError::Ckks(
            CkksError::RepresentationMismatch { .. }
        ))
    ));
    let m = message(fx.cpu.num_slots(), 5);
    let got = [
        gpu.encrypt_message(&m, &pk, s).expect("encrypt_message"),
        gpu.encrypt(&pt, &pk, s).expect("encrypt"),
    ];
    let want = [
        twin.encrypt_message(&m, &pk, s)
            .expect("twin encrypt_message"),
        twin.encrypt(&pt, &pk, s).expect("twin encrypt"),
    ];
    for (what, (g, w)) in ["encrypt_message", "encrypt"]
        .into_iter()
        .zip(got.iter().zip(&want))
    {
        assert_same_words(what, &fx.down(g), &fx.down(w));
    }
}
