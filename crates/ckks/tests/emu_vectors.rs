//! Reference vectors for the host emulator of `kernels/encode.cu` (kernels/emu/encode_emu.cpp):
//! the CPU engine's keyed encryption samples and its encoder's outputs, written as raw
//! little-endian words. Ignored by default; run with
//! `FHELIUM_EMU_VECTORS=/tmp/encode_vectors.bin cargo test -p fhelium-ckks --test emu_vectors -- --ignored`.

use fhelium_ckks::encoding::Encoder;
use fhelium_ckks::sampling::{Csprng, EncryptionSamples};
use num_complex::Complex64;

fn put_u64(out: &mut Vec<u8>, xs: impl IntoIterator<Item = u64>) {
    for x in xs {
        out.extend_from_slice(&x.to_le_bytes());
    }
}

fn put_f64(out: &mut Vec<u8>, xs: impl IntoIterator<Item = f64>) {
    put_u64(out, xs.into_iter().map(f64::to_bits));
}

#[test]
#[ignore = "writes reference vectors for the kernel emulator"]
fn write_encode_emulator_vectors() {
    let Ok(path) = std::env::var("FHELIUM_EMU_VECTORS") else {
        eprintln!("FHELIUM_EMU_VECTORS not set: nothing written");
        return;
    };
    let n = 16384usize;
    let s = n / 2;
    let rng = Csprng::from_seed([42; 32], 3.19);
    let key: [u8; 32] = std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(11));
    let samples = EncryptionSamples::from_key(&key, rng.cdt(), n);
    let enc = Encoder::new(n);
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
    // A full message and a short one (zero padding), encoded at 2^40.
    let scale = 2f64.powi(40);
    let msg: Vec<f64> = (0..s)
        .map(|j| ((j as f64) * 0.37).sin() * 3.0 - 0.25)
        .collect();
    for len in [s, 100] {
        let m: Vec<Complex64> = msg[..len].iter().map(|&x| Complex64::new(x, 0.0)).collect();
        let p = enc.encode(&m, scale).expect("fits");
        put_u64(&mut out, [len as u64]);
        put_f64(&mut out, msg[..len].iter().copied());
        put_f64(&mut out, [scale]);
        put_u64(&mut out, p.iter().map(|&c| c as u64));
    }
    // Decode of integer-valued approximate coefficients (what decrypt produces).
    let coeffs: Vec<f64> = (0..n)
        .map(|k| (((k as f64) * 1.3).cos() * 1e11).round() + (k % 7) as f64)
        .collect();
    let dscale = 2f64.powi(40) * 1.000_001;
    let slots: Vec<f64> = enc.decode(&coeffs, dscale).iter().map(|z| z.re).collect();
    put_f64(&mut out, coeffs);
    put_f64(&mut out, [dscale]);
    put_f64(&mut out, slots);
    std::fs::write(&path, out).expect("write vectors");
    eprintln!("wrote {path}");
}
