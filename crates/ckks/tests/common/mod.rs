//! Helpers shared by the GPU test binaries (`gpu_ops`, `gpu_encrypt`).

#![allow(dead_code)] // each test binary uses its own subset

use fhelium_ckks::{Ciphertext, Plaintext};

/// Asserts that `got` (a GPU result brought back to the host) equals `want` (the CPU engine's)
/// in shape, exact scale and every word; names the first differing word.
pub fn assert_same_words(what: &str, got: &Ciphertext, want: &Ciphertext) {
    assert_eq!(got.level(), want.level(), "{what}: level");
    assert_eq!(got.domain(), want.domain(), "{what}: domain");
    assert_eq!(got.components(), want.components(), "{what}: components");
    assert_eq!(got.prime_ids(), want.prime_ids(), "{what}: prime ids");
    assert_eq!(
        got.scale().to_bits(),
        want.scale().to_bits(),
        "{what}: scale"
    );
    same_words(what, got.words(), want.words());
}

/// [`assert_same_words`] for plaintexts (level, domain, basis, prime ids, exact scale, words).
pub fn assert_same_plaintext(what: &str, got: &Plaintext, want: &Plaintext) {
    assert_eq!(got.level(), want.level(), "{what}: level");
    assert_eq!(got.domain(), want.domain(), "{what}: domain");
    assert_eq!(got.basis(), want.basis(), "{what}: basis");
    assert_eq!(got.prime_ids(), want.prime_ids(), "{what}: prime ids");
    assert_eq!(
        got.scale().to_bits(),
        want.scale().to_bits(),
        "{what}: scale"
    );
    same_words(what, got.words(), want.words());
}

fn same_words(what: &str, g: &[u64], c: &[u64]) {
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
