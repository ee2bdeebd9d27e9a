//! The CUDA kernels of `kernels/ckks.cu` and `kernels/encode.cu`, run on the CPU by the host
//! emulators (`kernels/emu/ckks_emu.cpp`, `kernels/emu/encode_emu.cpp`: one OS thread per CUDA
//! thread, `__syncthreads` as a barrier, the blocks of a limb side by side), checked word for
//! word against plain reference code, against each other (the one-launch, cluster, two-pass,
//! work-queue and key-switch kernels) and, for the encoder and the sampler, against the CPU
//! engine's own outputs (vectors written by this test). This is how a machine without a GPU
//! (CI) tests the kernel source itself; the same kernels run for real in `gpu_ops` and
//! `gpu_encrypt` on a GPU.
//!
//! Needs a C++20 compiler (`c++`, or the one in `CXX`) and up to 4096 threads; without them the
//! test says so and passes without checking anything. Where the compiler can build with
//! AddressSanitizer the emulator runs under it, so that a kernel (or a check) reading or
//! writing outside its buffers fails here instead of corrupting words now and then: the
//! seventeenth session's paired-kernel counters overran the emulator's counter array, which
//! showed only as occasional wrong words and hangs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use fhelium_ckks::arith::Modulus;
use fhelium_ckks::encoding::Encoder;
use fhelium_ckks::kernels::automorphism_ntt_index_map;
use fhelium_ckks::sampling::{self, Csprng, EncryptionSamples};
use fhelium_ckks::{CkksConfig, Preset};
use num_complex::Complex64;

fn compiler() -> Option<String> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    let found = Command::new(&cxx)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    found.then_some(cxx)
}

/// Builds `kernels/emu/<name>.cpp` with `extra` flags (with AddressSanitizer where the
/// compiler has it) and runs it with `args`: its output and whether it ran sanitized, or
/// `None` when the machine refused the emulator's threads (the kernels were not checked,
/// which is not their fault).
fn build_and_run(cxx: &str, name: &str, extra: &[&str], args: &[&Path]) -> Option<(Output, bool)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let source = root.join(format!("kernels/emu/{name}.cpp"));
    let binary = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let build = |flags: &[&str]| {
        Command::new(cxx)
            .args(["-std=c++20", "-pthread"])
            .args(extra)
            .args(flags)
            .arg(&source)
            .arg("-o")
            .arg(&binary)
            .output()
            .expect("run the C++ compiler")
    };
    let mut built = build(&["-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"]);
    let sanitized = built.status.success();
    if !sanitized {
        eprintln!("kernel_emulator: {cxx} cannot build with AddressSanitizer; plain build");
        built = build(&["-O2"]);
    }
    assert!(
        built.status.success(),
        "{cxx} could not build {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    let run = Command::new(&binary)
        .args(args)
        .env("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0")
        .output()
        .expect("run the emulator");
    let stderr = String::from_utf8_lossy(&run.stderr);
    if !run.status.success() && stderr.contains("Resource temporarily unavailable") {
        eprintln!("kernel_emulator: the machine refused the emulator's threads: {stderr}");
        return None;
    }
    assert!(
        !stderr.contains("AddressSanitizer"),
        "{name} (sanitized: {sanitized}) touched memory outside its buffers:\n{stderr}"
    );
    Some((run, sanitized))
}

#[test]
fn kernels_pass_the_host_emulator() {
    let Some(cxx) = compiler() else {
        eprintln!("kernel_emulator: no C++ compiler (c++ or $CXX): kernels not checked here");
        return;
    };
    // -ffp-contract=off: the paired NTT kernels' binary64 butterflies (LooseF) must not fuse
    // into FMAs other than their own (decision 0511).
    let Some((run, _)) = build_and_run(&cxx, "ckks_emu", &["-ffp-contract=off"], &[]) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    let failures: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(
        run.status.success() && failures.is_empty(),
        "emulator exit {:?}; failures:\n{}\n{stderr}",
        run.status.code(),
        failures.join("\n"),
    );
    // Every kernel family reported, not just an early exit with status 0.
    for check in [
        "forward NTT 2 x 3 limbs (global exchange)",
        "forward NTT of signed rows shared by every limb (cluster)",
        "forward NTT of signed rows shared by every limb (global exchange)",
        "forward NTT of signed rows shared by every limb (two-pass)",
        "forward NTT 2 x 3 limbs (paired blocks)",
        "inverse NTT round trip (paired blocks)",
        "exchange across 30 launches",
        "xch_take waits for late words",
        "ModUp as a work queue (global exchange)",
        "key inner product + inverse NTT (global exchange)",
        "relinearize inner product, rows added times P (global exchange)",
        "rotate key switch (g = 3, L = 2, cluster kernels)",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("ok") && l.contains(check)),
            "the emulator did not report `{check}` as ok:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("emulator: all checks passed"),
        "no summary line:\n{stdout}"
    );
}

fn put_u64(out: &mut Vec<u8>, xs: impl IntoIterator<Item = u64>) {
    for x in xs {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn put_f64(out: &mut Vec<u8>, xs: impl IntoIterator<Item = f64>) {
    put_u64(out, xs.into_iter().map(f64::to_bits));
}

/// The reference vectors of `encode_emu.cpp`, from the CPU engine, as raw little-endian words:
/// the keyed encryption samples, the encoder's tables, real and complex messages with their
/// encodings, and a decryption phase with its decoded slots.
fn encode_vectors() -> Vec<u8> {
    let n = 16384usize;
    let s = n / 2;
    let rng = Csprng::from_seed([42; 32], 3.19);
    let key: [u8; 32] = std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(11));
    let samples = EncryptionSamples::from_key(&key, rng.cdt(), n);
    let enc = Encoder::new(n).expect("encoder");
    let mut out = Vec::new();
    put_u64(&mut out, [n as u64]);
    out.extend_from_slice(&key);
    put_u64(&mut out, rng.cdt().iter().copied());
    for x in [&samples.v, &samples.e0, &samples.e1] {
        put_u64(&mut out, x.iter().map(|&c| c as u64));
    }
    put_u64(&mut out, enc.exponents().iter().copied());
    put_f64(&mut out, enc.roots().iter().flat_map(|z| [z.re, z.im]));
    put_f64(&mut out, enc.twist().iter().flat_map(|z| [z.re, z.im]));
    // Real and complex messages, full and short (zero padding), encoded at 2^40: the round
    // count, then per round its slot count, whether it is complex, the message (real slots,
    // or (re, im) pairs), the scale and the coefficients.
    let scale = 2f64.powi(40);
    let msg: Vec<Complex64> = (0..s)
        .map(|j| {
            let j = j as f64;
            Complex64::new(
                (j * 0.37).sin() * 3.0 - 0.25,
                (j * 0.11).cos() * 1.5 + 0.125,
            )
        })
        .collect();
    let rounds = [(s, false), (100, false), (s, true), (77, true)];
    put_u64(&mut out, [rounds.len() as u64]);
    for (len, complex) in rounds {
        let m: Vec<Complex64> = msg[..len]
            .iter()
            .map(|z| {
                if complex {
                    *z
                } else {
                    Complex64::new(z.re, 0.0)
                }
            })
            .collect();
        let p = enc.encode(&m, scale).expect("fits");
        put_u64(&mut out, [len as u64, u64::from(complex)]);
        if complex {
            put_f64(&mut out, m.iter().flat_map(|z| [z.re, z.im]));
        } else {
            put_f64(&mut out, m.iter().map(|z| z.re));
        }
        put_f64(&mut out, [scale]);
        put_u64(&mut out, p.iter().map(|&c| c as u64));
    }
    // Decode of integer-valued approximate coefficients (what decrypt produces); the decoded
    // slots as (re, im) pairs (the real decode keeps the re parts).
    let coeffs: Vec<f64> = (0..n)
        .map(|k| (((k as f64) * 1.3).cos() * 1e11).round() + (k % 7) as f64)
        .collect();
    let dscale = 2f64.powi(40) * 1.000_001;
    let slots = enc.decode(&coeffs, dscale).expect("n coefficients");
    put_f64(&mut out, coeffs);
    put_f64(&mut out, [dscale]);
    put_f64(&mut out, slots.iter().flat_map(|z| [z.re, z.im]));
    // Key generation (decision 0531): a key's sampling key, D digits x R rows of the seed
    // preset's primes (three Q primes and the 60-bit P prime), the CPU's uniform rows
    // ([D][R][N]) and digit errors ([D][N]), then a Galois element with the CPU's NTT-domain
    // automorphism map (`ksk_finish` reads sigma_g(s) through it).
    let cfg = CkksConfig::from_preset(Preset::Slots8192Scale40Levels7Int64).expect("preset");
    let primes = [
        cfg.q_primes[0],
        cfg.q_primes[3],
        cfg.q_primes[cfg.q_primes.len() - 1],
        cfg.p_primes[0],
    ];
    let (digits, rows) = (3u64, primes.len() as u64);
    let kkey = sampling::switch_key_sampling_key(&[9; 32], 0x1234_5678, 27);
    out.extend_from_slice(&*kkey);
    put_u64(&mut out, [digits, rows]);
    put_u64(&mut out, primes);
    for d in 0..digits {
        for (r, &q) in (0u64..).zip(&primes) {
            let m = Modulus::new(q).expect("modulus");
            put_u64(
                &mut out,
                sampling::switch_key_uniform_row(&kkey, d * rows + r, &m, n),
            );
        }
    }
    for d in 0..digits {
        let e = sampling::switch_key_error(&kkey, d, rng.cdt(), n);
        put_u64(&mut out, e.iter().map(|&c| c as u64));
    }
    let g = 27u64; // 3^3 mod 2N: the Galois element of step 3
    put_u64(&mut out, [g]);
    put_u64(
        &mut out,
        automorphism_ntt_index_map(14, g)
            .iter()
            .map(|&j| u64::from(j)),
    );
    out
}

#[test]
fn encode_and_sampler_kernels_match_the_cpu_engine_in_the_host_emulator() {
    let Some(cxx) = compiler() else {
        eprintln!("kernel_emulator: no C++ compiler (c++ or $CXX): kernels not checked here");
        return;
    };
    let vectors = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("encode_vectors.bin");
    std::fs::write(&vectors, encode_vectors()).expect("write the vectors");
    // -ffp-contract=off: the kernels' f64 operations must not fuse into FMAs (decision 0521).
    let Some((run, _)) = build_and_run(
        &cxx,
        "encode_emu",
        &["-ffp-contract=off"],
        &[vectors.as_path()],
    ) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success() && stdout.contains("all passed"),
        "encode emulator exit {:?}:\n{stdout}\n{}",
        run.status.code(),
        String::from_utf8_lossy(&run.stderr)
    );
    for check in [
        "chacha20_block",
        "sampler v (lifted, 2 limbs) == CPU EncryptionSamples::from_key v",
        "enc_lift = p mod q per row",
        "encode of 8192 real slots == CPU Encoder::encode (bit-exact)",
        "encode of 100 real slots == CPU Encoder::encode (bit-exact)",
        "encode of 8192 complex slots == CPU Encoder::encode (bit-exact)",
        "encode of 77 complex slots == CPU Encoder::encode (bit-exact)",
        "decode (phase -> centred -> FFT -> slots) == CPU Encoder::decode (bit-exact)",
        "decode to complex slots == CPU Encoder::decode (bit-exact)",
        "ksk_sample: uniform a == CPU switch_key_uniform_row (3 x 4 rows)",
        "ksk_sample: digit errors == CPU switch_key_error",
        "e_uniform == (hi 2^64 + lo) mod q (__int128)",
        "ksk_finish (rotation, g = 27) == b - a s + P sigma_g(s) on the digit's rows",
        "ksk_finish (relinearization) == b - a s + P s^2 on the digit's rows",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.contains(check) && l.trim_end().ends_with("ok")),
            "the encode emulator did not report `{check}` as ok:\n{stdout}"
        );
    }
}
