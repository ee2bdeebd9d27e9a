//! Helpers shared by the GPU test binaries (`gpu_ops`, `gpu_encrypt`).

#![allow(dead_code)] // each test binary uses its own subset

use fhelium_ckks::cuda::{CudaEngine, GpuPublicKey, GpuSecretKey, Stream};
use fhelium_ckks::{Ciphertext, CpuEngine, Domain, ModulusBasis, Plaintext};

/// `cpu`'s public and secret keys, uploaded to `gpu` on `s`.
pub fn device_keys(gpu: &CudaEngine, cpu: &CpuEngine, s: &Stream) -> (GpuPublicKey, GpuSecretKey) {
    let pk = gpu.upload_public_key(cpu.public_key(), s).expect("pk");
    let sk = gpu.upload_secret_key(cpu.secret_key(), s).expect("sk");
    (pk, sk)
}

/// What a value's comparison looks at: its shape, exact scale and words.
trait Value {
    fn shape(&self) -> (usize, Domain, ModulusBasis, usize, &[usize]);
    fn scale_bits(&self) -> u64;
    fn words(&self) -> &[u64];
}

impl Value for Ciphertext {
    fn shape(&self) -> (usize, Domain, ModulusBasis, usize, &[usize]) {
        (
            self.level(),
            self.domain(),
            self.basis(),
            self.components(),
            self.prime_ids(),
        )
    }
    fn scale_bits(&self) -> u64 {
        self.scale().to_bits()
    }
    fn words(&self) -> &[u64] {
        Ciphertext::words(self)
    }
}

impl Value for Plaintext {
    fn shape(&self) -> (usize, Domain, ModulusBasis, usize, &[usize]) {
        (
            self.level(),
            self.domain(),
            self.basis(),
            1,
            self.prime_ids(),
        )
    }
    fn scale_bits(&self) -> u64 {
        self.scale().to_bits()
    }
    fn words(&self) -> &[u64] {
        Plaintext::words(self)
    }
}

/// Asserts that `got` (a GPU result brought back to the host) equals `want` (the CPU engine's)
/// in shape (level, domain, basis, components, prime ids), exact scale and every word; names
/// the first differing word.
pub fn assert_same_words(what: &str, got: &Ciphertext, want: &Ciphertext) {
    same_value(what, got, want);
}

/// [`assert_same_words`] for plaintexts.
pub fn assert_same_plaintext(what: &str, got: &Plaintext, want: &Plaintext) {
    same_value(what, got, want);
}

fn same_value(what: &str, got: &impl Value, want: &impl Value) {
    assert_eq!(
        got.shape(),
        want.shape(),
        "{what}: level, domain, basis, components, prime ids"
    );
    assert_eq!(got.scale_bits(), want.scale_bits(), "{what}: scale");
    let (g, c) = (got.words(), want.words());
    assert_eq!(g.len(), c.len(), "{what}: word count");
    if let Some(i) = (0..g.len()).find(|&i| g[i] != c[i]) {
        let bad = (0..g.len()).filter(|&i| g[i] != c[i]).count();
        panic!(
            "{what}: {bad} of {} words differ, first at {i} (gpu {:#x}, cpu {:#x})",
            g.len(),
            g[i],
            c[i]
        );
    }
    eprintln!("{what}: {} words bit-exact", g.len());
}
