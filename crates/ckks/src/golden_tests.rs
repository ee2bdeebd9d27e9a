//! Golden hashes of the CPU engine's output words (the bit-exact contract with the GPU engine).
//!
//! Inputs are deterministic words (ChaCha20 from a fixed seed, reduced modulo each row's prime),
//! never outputs of the samplers, so a change of the encryption sampling leaves these hashes
//! alone; keys are built the same way. The hashes were computed with the engine of commit
//! e66f07b (before the performance work of decisions 0410/0411); any change of any output
//! word of these operations fails the test. `FHELIUM_PRINT_GOLDEN=1` prints the current values.

use fhelium_residency::ResidencyLocation;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::keys::{KeySwitchKey, RelinearizationKey, RotationKey};
use crate::params::{CkksConfig, Preset};
use crate::storage::Words;
use crate::values::{prime_ids, Ciphertext, Domain, ModulusBasis};
use crate::CpuEngine;

/// A word-wise hash (order-sensitive; not cryptographic).
fn hash(words: &[u64]) -> u64 {
    let mut h: u64 = 0x9e37_79b9_7f4a_7c15 ^ words.len() as u64;
    for &w in words {
        h = (h.rotate_left(23) ^ w).wrapping_mul(0xff51_afd7_ed55_8ccd);
    }
    h ^ (h >> 29)
}

struct Fixture {
    e: CpuEngine,
    rng: ChaCha20Rng,
}

impl Fixture {
    fn new(config: CkksConfig, seed: u8) -> Self {
        Self {
            e: CpuEngine::from_config(config, Some([seed; 32])).expect("engine"),
            rng: ChaCha20Rng::from_seed([seed.wrapping_add(100); 32]),
        }
    }

    /// Rows of prime ids `ids`, repeated `reps` times, filled with uniform-ish residues.
    fn rows(&mut self, ids: &[usize], reps: usize) -> Vec<u64> {
        let n = self.e.n();
        let mut out = Vec::with_capacity(reps * ids.len() * n);
        for _ in 0..reps {
            for &id in ids {
                let q = self.e.context().ntt_tables()[id].modulus().value();
                out.extend((0..n).map(|_| self.rng.next_u64() % q));
            }
        }
        out
    }

    fn ct(&mut self, level: usize, components: usize, domain: Domain) -> Ciphertext {
        let ctx = self.e.context();
        let ids = prime_ids(level, ModulusBasis::Q, ctx.nq, ctx.np);
        let words = self.rows(&ids, components);
        Ciphertext {
            words: Words::from_vec(words, ResidencyLocation::PageableHost),
            context: self.e.context_id(),
            n: self.e.n(),
            level,
            scale: self.e.default_scale(),
            domain,
            basis: ModulusBasis::Q,
            components,
            prime_ids: ids,
        }
    }

    fn ksk(&mut self) -> KeySwitchKey {
        let ctx = self.e.context();
        let (digits, rows) = (ctx.digits.len(), ctx.nq + ctx.np);
        let ids: Vec<usize> = (0..rows).collect();
        let words = self.rows(&ids, 2 * digits);
        KeySwitchKey {
            words: Words::from_vec(words, ResidencyLocation::PageableHost),
            context: self.e.context_id(),
            key_id: self.e.secret_key().key_id,
            n: self.e.n(),
            digits,
            rows,
        }
    }

    fn rotation_key(&mut self, step: Option<i64>) -> RotationKey {
        let galois_element = match step {
            Some(s) => self.e.galois_element_for_step(s).1,
            None => 2 * self.e.n() as u64 - 1,
        };
        RotationKey {
            ksk: self.ksk(),
            step,
            galois_element,
        }
    }
}

/// Runs every covered operation on deterministic inputs and returns `(label, hash)` pairs.
fn golden_hashes(config: CkksConfig, seed: u8, levels: &[usize]) -> Vec<(String, u64)> {
    let mut f = Fixture::new(config, seed);
    let mut out = Vec::new();
    let rot1 = f.rotation_key(Some(1));
    let rot_neg = f.rotation_key(Some(-5));
    let conj = f.rotation_key(None);
    let rlk = RelinearizationKey { ksk: f.ksk() };
    for &level in levels {
        let c = f.ct(level, 2, Domain::Coefficient);
        let nt = f.ct(level, 2, Domain::Ntt);
        let nt2 = f.ct(level, 2, Domain::Ntt);
        let d3 = f.ct(level, 3, Domain::Ntt);
        let e = &f.e;
        let mut push = |label: &str, ct: Ciphertext| {
            out.push((format!("{label}@{level}"), hash(ct.words())));
        };
        push("ntt", e.coefficient_domain_to_ntt_domain(&c).expect("ntt"));
        push(
            "intt",
            e.ntt_domain_to_coefficient_domain(&nt).expect("intt"),
        );
        push("rot1", e.rotate_with_key(&c, &rot1).expect("rot"));
        push("rot-5", e.rotate_with_key(&c, &rot_neg).expect("rot"));
        push("conj", e.conjugate(&c, &conj).expect("conj"));
        push("relin", e.relinearize_with_key(&d3, &rlk).expect("relin"));
        push("mul", e.multiply(&nt, &nt2).expect("mul"));
        push("add", e.add(&nt, &nt2).expect("add"));
        if level < e.max_level() {
            push("rescale", e.rescale_to_next_level(&c).expect("rescale"));
        }
    }
    // per-limb transforms in place on every prime
    for id in 0..f.e.context().ntt_tables().len() {
        let a = f.rows(&[id], 1);
        let t = &f.e.context().ntt_tables()[id];
        let (mut fw, mut iv) = (a.clone(), a.clone());
        t.forward(&mut fw);
        t.inverse(&mut iv);
        out.push((format!("fwd-limb{id}"), hash(&fw)));
        out.push((format!("inv-limb{id}"), hash(&iv)));
    }
    out
}

fn check(name: &str, got: &[(String, u64)], want: &[u64]) {
    if std::env::var_os("FHELIUM_PRINT_GOLDEN").is_some() {
        let list: Vec<String> = got.iter().map(|(_, h)| format!("0x{h:016x}")).collect();
        println!("{name}: [{}]", list.join(", "));
        for (label, h) in got {
            println!("  {label}: 0x{h:016x}");
        }
    }
    assert_eq!(got.len(), want.len(), "{name}: number of hashes");
    for ((label, h), w) in got.iter().zip(want) {
        assert_eq!(*h, *w, "{name}: output words of {label} changed");
    }
}

#[test]
fn seed_preset_outputs_are_unchanged() {
    let cfg = CkksConfig::from_preset(Preset::Slots8192Scale40Levels7Int64).expect("cfg");
    let got = golden_hashes(cfg, 11, &[0, 3, 7]);
    check("seed preset", &got, &SEED_PRESET);
}

#[test]
fn small_rings_outputs_are_unchanged() {
    // two P primes (multi-prime digits and ModDown), even log N
    let cfg = CkksConfig::generate_with_budget(12, 30, 4, 2, false).expect("cfg");
    let got = golden_hashes(cfg, 12, &[0, 2]);
    check("N=2^12, two P primes", &got, &SMALL_EVEN);
    // odd log N (an odd NTT stage count)
    let cfg = CkksConfig::generate_with_budget(11, 30, 3, 1, false).expect("cfg");
    let got = golden_hashes(cfg, 13, &[0, 1]);
    check("N=2^11", &got, &SMALL_ODD);
}

const SEED_PRESET: [u64; 44] = [
    0xc498b09a1ba4aeb0,
    0x7c2f89be39281078,
    0x770ef7ed383667a2,
    0x3f4ec1101b266682,
    0xea32f7cc087679f5,
    0x750ac5c41ffd4a9c,
    0x83994865ee363012,
    0x8a66c5a2640166ee,
    0x211b3ce9f2f11643,
    0x8551c203af6ccba5,
    0x30cbdccf8ece100b,
    0x37b3e96e6038f7da,
    0xb48090bf1298f305,
    0x84bba1d72be016d2,
    0x6ace414a3d4a68be,
    0xf2870406a2dfa0a5,
    0xac78f75c550c7707,
    0xc55daf99fb3c75f3,
    0xcb400c1306ace202,
    0x34b2f147c9354e26,
    0x2b8e73596ffade9b,
    0xe42dff2fb08b5077,
    0x63f87e1caa3cc6f8,
    0x32f8ca5c4b28445e,
    0xddd3b7f8c28cf413,
    0x6956ea2ffa76df78,
    0x42ddee4e256d6770,
    0xed2a8f32f7bdaace,
    0x545318f15f2a67f9,
    0xc972a3c37b3f9039,
    0x8edb7bd4b669caaf,
    0xee231397fac9d869,
    0x342a5c265f3430c3,
    0xebbe3ef4b85b2d07,
    0x6ee44114f88a3048,
    0x9921cf4038cc92e2,
    0xe6bc15f79cfaf252,
    0x8982062768a6131f,
    0x33b461fa84cf7a45,
    0x3d79d6390d80a28a,
    0x8d3fbc3870733259,
    0x026908581f41abb5,
    0xf0c8d5696bc5b799,
    0x9c63328c71df5213,
];
const SMALL_EVEN: [u64; 32] = [
    0x246088671324802a,
    0x3c537e66a53cec5f,
    0x8d8f604b64c4ba5e,
    0xce0fbfa0aace486c,
    0xa0a506fac2dfeb93,
    0x41d957d763d4b09e,
    0x64541b2b402f14e0,
    0x90b84084779ee5f5,
    0x36f6475180f027a8,
    0x96affba485e65f4c,
    0xf5213aca42ff3799,
    0xc8c227893c75bb45,
    0x59972b5005066ee0,
    0x5ea059f143467154,
    0x2ef337fa52effa1c,
    0xd7a004a8c7481084,
    0x5c86accfe5fbe30a,
    0x5da74b5d14b1be75,
    0xa0d22c39608dbd47,
    0x71f83d50a8c3a4a1,
    0x354f1f9ba1d4a1c7,
    0xaa8e61f71234b5f5,
    0xa035a36c41d6b3d0,
    0x6c33c4f9a90c2cde,
    0x8a892b405a0eae6e,
    0x068cb6f7eb45e25c,
    0x8c08498f909cd546,
    0x934b662c6974a519,
    0x734c0e70f4b16dd3,
    0x5f5234e1d941f4b2,
    0x911d089b13a95fb0,
    0x19c3370897ed5174,
];
const SMALL_ODD: [u64; 28] = [
    0x5fb248684a6eb25b,
    0xd108063713ec04d8,
    0x87d5ce905cc2177f,
    0xb260b0a3b1dc3b49,
    0x6a44ffc01549602f,
    0x30f5dab68c142d00,
    0xd142a0297b9801fc,
    0x450197d1f26bf5dd,
    0xa09e45a66e8efaed,
    0x13b5ee4732e152ef,
    0xf3b076ba7caf77cd,
    0xa9249a00739c2d38,
    0x844c449026174d62,
    0x8136297d611085a5,
    0xb96ac2035382cc02,
    0x247d6c6154a2262a,
    0xfdf2ed5a9418e416,
    0xf8b26fed1898ab6b,
    0x3c8c843ed699d05b,
    0x95beaa61b391bc6b,
    0x1b814104f87dcf42,
    0x9c41fe4a96f38fb9,
    0xd7068745058421a0,
    0x75732d9e5566b23b,
    0x48705d943648e7de,
    0x39d35a5f9f90d8c2,
    0xfceaec8c0c134cb7,
    0x043ed9e1afc34a67,
];
