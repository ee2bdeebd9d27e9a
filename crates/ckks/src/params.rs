//! Presets, configurations, prime chains and the security budget (spec §1).

use std::fmt;
use std::str::FromStr;

use crate::arith::is_prime;
use crate::error::CkksError;

/// The exact scale primes q0..q6 of `slots8192-scale40-levels7-int64` (spec §1.2), the first
/// seven entries of FHElium's packaged catalog row `sb=40;N=16384`.
pub const SCALE40_N16384_PRIMES: [u64; 7] = [
    1_099_510_054_913,
    1_099_515_691_009,
    1_099_508_121_601,
    1_099_515_789_313,
    1_099_507_695_617,
    1_099_516_280_833,
    1_099_506_515_969,
];

/// Maximum `ceil(log2(QP))` for 128-bit classical security, ternary secret, sigma = 3.19
/// (spec §1.7), indexed by `log_n`.
pub const SECURITY_BUDGET_128: [(u32, u32); 5] =
    [(13, 214), (14, 430), (15, 868), (16, 1747), (17, 3523)];

/// The standard deviation of the discrete Gaussian error.
pub const DEFAULT_SIGMA: f64 = 3.19;

/// Width of the structural base prime and the special primes in the int64 family.
pub const MESSAGE_PRIME_BITS: u32 = 60;

/// FHElium's maintained int64 presets (spec §1.9). The name counts complex slots: `slots8192`
/// means N = 16384.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Preset {
    /// `slots8192-scale30-levels9-int64`
    Slots8192Scale30Levels9Int64,
    /// `slots8192-scale40-levels7-int64`: the preset of the seed example.
    Slots8192Scale40Levels7Int64,
    /// `slots8192-scale50-levels5-int64`
    Slots8192Scale50Levels5Int64,
    /// `slots16384-scale30-levels21-int64`
    Slots16384Scale30Levels21Int64,
    /// `slots16384-scale40-levels16-int64` (FHElium's engine default)
    Slots16384Scale40Levels16Int64,
    /// `slots16384-scale50-levels12-int64`
    Slots16384Scale50Levels12Int64,
    /// `slots32768-scale30-levels45-int64`
    Slots32768Scale30Levels45Int64,
    /// `slots32768-scale40-levels34-int64`
    Slots32768Scale40Levels34Int64,
    /// `slots32768-scale50-levels27-int64`
    Slots32768Scale50Levels27Int64,
    /// `slots65536-scale30-levels95-int64`
    Slots65536Scale30Levels95Int64,
    /// `slots65536-scale40-levels72-int64`
    Slots65536Scale40Levels72Int64,
    /// `slots65536-scale50-levels58-int64`
    Slots65536Scale50Levels58Int64,
}

impl Preset {
    /// Every preset, in table order.
    pub const ALL: [Preset; 12] = [
        Preset::Slots8192Scale30Levels9Int64,
        Preset::Slots8192Scale40Levels7Int64,
        Preset::Slots8192Scale50Levels5Int64,
        Preset::Slots16384Scale30Levels21Int64,
        Preset::Slots16384Scale40Levels16Int64,
        Preset::Slots16384Scale50Levels12Int64,
        Preset::Slots32768Scale30Levels45Int64,
        Preset::Slots32768Scale40Levels34Int64,
        Preset::Slots32768Scale50Levels27Int64,
        Preset::Slots65536Scale30Levels95Int64,
        Preset::Slots65536Scale40Levels72Int64,
        Preset::Slots65536Scale50Levels58Int64,
    ];

    /// (log_n, scale_bits, levels = num_scale_primes, num_p_primes)
    #[must_use]
    pub const fn shape(self) -> (u32, u32, usize, usize) {
        match self {
            Preset::Slots8192Scale30Levels9Int64 => (14, 30, 9, 1),
            Preset::Slots8192Scale40Levels7Int64 => (14, 40, 7, 1),
            Preset::Slots8192Scale50Levels5Int64 => (14, 50, 5, 1),
            Preset::Slots16384Scale30Levels21Int64 => (15, 30, 21, 2),
            Preset::Slots16384Scale40Levels16Int64 => (15, 40, 16, 2),
            Preset::Slots16384Scale50Levels12Int64 => (15, 50, 12, 2),
            Preset::Slots32768Scale30Levels45Int64 => (16, 30, 45, 4),
            Preset::Slots32768Scale40Levels34Int64 => (16, 40, 34, 4),
            Preset::Slots32768Scale50Levels27Int64 => (16, 50, 27, 4),
            Preset::Slots65536Scale30Levels95Int64 => (17, 30, 95, 6),
            Preset::Slots65536Scale40Levels72Int64 => (17, 40, 72, 6),
            Preset::Slots65536Scale50Levels58Int64 => (17, 50, 58, 6),
        }
    }

    /// The CLI name, e.g. `slots8192-scale40-levels7-int64`.
    #[must_use]
    pub fn name(self) -> String {
        let (log_n, scale, levels, _) = self.shape();
        format!(
            "slots{}-scale{scale}-levels{levels}-int64",
            1u64 << (log_n - 1)
        )
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Preset {
    type Err = CkksError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| CkksError::UnknownPreset { name: s.to_owned() })
    }
}

/// A complete CKKS parameter set. Build it with [`CkksConfig::from_preset`] or
/// [`CkksConfig::generate`]; both validate it ([`CkksConfig::validate`]).
#[derive(Clone, Debug, PartialEq)]
pub struct CkksConfig {
    /// log2 of the ring degree N.
    pub log_n: u32,
    /// Bit width of the scale primes; the default scale is `2^scale_bits`.
    pub scale_bits: u32,
    /// The Q chain in canonical prime-id order: scale primes, then the structural base prime.
    pub q_primes: Vec<u64>,
    /// The special primes P (ids after the Q primes).
    pub p_primes: Vec<u64>,
    /// Standard deviation of the error distribution (must be 3.19 for the budget table).
    pub sigma: f64,
    /// Claimed classical security level in bits (only 128 has a budget table here).
    pub security_bits: u32,
    /// Galois generator of the slot order (3, as FHElium's default).
    pub galois_generator: u64,
    /// Refuse parameters over the security budget (default true; turn off only for small test
    /// rings, which are insecure by construction).
    pub enforce_security_budget: bool,
}

impl CkksConfig {
    /// The configuration of a preset, with its exact primes; refuses parameters over the
    /// security budget.
    pub fn from_preset(preset: Preset) -> Result<Self, CkksError> {
        let (log_n, scale_bits, levels, num_p) = preset.shape();
        Self::generate(log_n, scale_bits, levels, num_p)
    }

    /// Builds a chain of `num_scale_primes` scale primes of `scale_bits` bits, one 60-bit base
    /// prime and `num_p_primes` 60-bit special primes for ring degree `2^log_n`, with the rules
    /// of [`scale_primes`] and [`message_primes`], then validates it.
    pub fn generate(
        log_n: u32,
        scale_bits: u32,
        num_scale_primes: usize,
        num_p_primes: usize,
    ) -> Result<Self, CkksError> {
        Self::generate_with_budget(log_n, scale_bits, num_scale_primes, num_p_primes, true)
    }

    /// As [`CkksConfig::generate`]; `enforce_security_budget = false` allows rings too small
    /// for any security (unit tests of the arithmetic on small N).
    pub fn generate_with_budget(
        log_n: u32,
        scale_bits: u32,
        num_scale_primes: usize,
        num_p_primes: usize,
        enforce_security_budget: bool,
    ) -> Result<Self, CkksError> {
        if !(4..=17).contains(&log_n)
            || !(20..=58).contains(&scale_bits)
            || !(1..=MAX_CHAIN_PRIMES).contains(&num_p_primes)
            || num_scale_primes > MAX_CHAIN_PRIMES
        {
            return Err(CkksError::InvalidConfig {
                reason: format!(
                    "log_n {log_n} (4..=17), scale_bits {scale_bits} (20..=58), num_scale_primes {num_scale_primes} (<= {MAX_CHAIN_PRIMES}), num_p_primes {num_p_primes} (1..={MAX_CHAIN_PRIMES})"
                ),
            });
        }
        let scale = scale_primes(log_n, scale_bits, num_scale_primes)?;
        let msg = message_primes(log_n, MESSAGE_PRIME_BITS, 1 + num_p_primes)?;
        let mut q_primes = scale;
        q_primes.push(msg[0]);
        let cfg = Self {
            log_n,
            scale_bits,
            q_primes,
            p_primes: msg[1..].to_vec(),
            sigma: DEFAULT_SIGMA,
            security_bits: 128,
            galois_generator: 3,
            enforce_security_budget,
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks the structural rules (distinct primes, q ≡ 1 mod 2N, q prime, 4q < 2^62... here
    /// q < 2^62) and the security budget of spec §1.7.
    pub fn validate(&self) -> Result<(), CkksError> {
        // The fields are public: a hand-built config reaches here unchecked, and 2N must fit
        // a u64 (the ring code also needs N >= 16, as `generate` asks).
        if !(4..=17).contains(&self.log_n) || !(1..=62).contains(&self.scale_bits) {
            return Err(CkksError::InvalidConfig {
                reason: format!(
                    "log_n {} (4..=17), scale_bits {} (1..=62)",
                    self.log_n, self.scale_bits
                ),
            });
        }
        let two_n = 2u64 << self.log_n;
        let all: Vec<u64> = self
            .q_primes
            .iter()
            .chain(&self.p_primes)
            .copied()
            .collect();
        if self.q_primes.len() < 2 || self.p_primes.is_empty() {
            return Err(CkksError::InvalidConfig {
                reason: format!(
                    "need at least 2 Q primes and 1 P prime, got {} and {}",
                    self.q_primes.len(),
                    self.p_primes.len()
                ),
            });
        }
        for (i, &q) in all.iter().enumerate() {
            if q >= 1 << 62 || !is_prime(q) || q % two_n != 1 {
                return Err(CkksError::InvalidConfig {
                    reason: format!("prime id {i} = {q} is not a prime ≡ 1 mod 2N below 2^62"),
                });
            }
            if all[..i].contains(&q) {
                return Err(CkksError::InvalidConfig {
                    reason: format!("duplicate prime {q}"),
                });
            }
        }
        if self.galois_generator != 3 {
            return Err(CkksError::InvalidConfig {
                reason: format!(
                    "galois generator {} (only 3 is supported)",
                    self.galois_generator
                ),
            });
        }
        if self.sigma != DEFAULT_SIGMA || self.security_bits != 128 {
            return Err(CkksError::InvalidConfig {
                reason: format!(
                    "the budget table covers sigma = 3.19 at 128 bits only (got sigma {}, {} bits)",
                    self.sigma, self.security_bits
                ),
            });
        }
        let total = self.total_modulus_bits();
        let budget = SECURITY_BUDGET_128
            .iter()
            .find(|(l, _)| *l == self.log_n)
            .map(|(_, b)| *b);
        match budget {
            _ if !self.enforce_security_budget => Ok(()),
            Some(b) if total <= b => Ok(()),
            _ => Err(CkksError::SecurityBudgetExceeded {
                log_n: self.log_n,
                total_modulus_bits: total,
                budget_bits: budget,
                security_bits: self.security_bits,
            }),
        }
    }

    /// Ring degree N.
    #[must_use]
    pub const fn n(&self) -> usize {
        // A hand-built config may name any log_n: 0 rather than an overflowing shift
        // (`validate` refuses it).
        match 1usize.checked_shl(self.log_n) {
            Some(n) => n,
            None => 0,
        }
    }

    /// Number of complex slots N/2.
    #[must_use]
    pub const fn slots(&self) -> usize {
        self.n() / 2
    }

    /// The default scale `2^scale_bits`.
    #[must_use]
    pub fn default_scale(&self) -> f64 {
        2f64.powi(self.scale_bits as i32)
    }

    /// Number of public levels (= number of scale primes); levels are `0..num_levels()`.
    #[must_use]
    pub fn num_levels(&self) -> usize {
        self.q_primes.len().saturating_sub(1)
    }

    /// The last public level (`num_levels() - 1`).
    #[must_use]
    pub fn max_level(&self) -> usize {
        self.num_levels().saturating_sub(1)
    }

    /// `ceil(log2(Q * P))`.
    #[must_use]
    pub fn total_modulus_bits(&self) -> u32 {
        let bits: f64 = self
            .q_primes
            .iter()
            .chain(&self.p_primes)
            .map(|&q| (q as f64).log2())
            .sum();
        bits.ceil() as u32
    }

    /// Active Q bits `ceil(log2(Q_level))` at a level.
    #[must_use]
    pub fn q_bits_at_level(&self, level: usize) -> u32 {
        let bits: f64 = self
            .q_primes
            .iter()
            .skip(level)
            .map(|&q| (q as f64).log2())
            .sum();
        bits.ceil() as u32
    }

    /// Key-switching digits at level 0 as lists of Q prime ids: the scale primes in consecutive
    /// chunks of `num_p_primes`, then the base prime as its own digit (spec §1.5).
    #[must_use]
    pub fn digits(&self) -> Vec<Vec<usize>> {
        let nscale = self.num_levels();
        // One digit per special prime's worth of scale primes (a hand-built config without
        // special primes, which `validate` refuses, gets one prime per digit).
        let w = self.p_primes.len().max(1);
        let mut d: Vec<Vec<usize>> = (0..nscale)
            .collect::<Vec<_>>()
            .chunks(w)
            .map(<[usize]>::to_vec)
            .collect();
        d.push(vec![nscale]);
        d
    }
}

/// The most primes of one kind ([`scale_primes`], [`message_primes`]) a chain may ask for: far
/// beyond what the security budget allows at the largest ring (N = 2^17: ~3,500 bits), and
/// small enough that a request is answered quickly or refused.
pub const MAX_CHAIN_PRIMES: usize = 256;

/// The ranges in which the prime searches compute without overflow: 1 <= `log_n` <= 30 (2N
/// fits), 2N < 2^(`bits` - 1) <= 2^61 (candidates of `bits` bits exist and `2^(bits + 1)` fits),
/// `count` <= [`MAX_CHAIN_PRIMES`].
fn check_prime_search(what: &str, log_n: u32, bits: u32, count: usize) -> Result<(), CkksError> {
    if (1..=30).contains(&log_n) && log_n + 2 < bits && bits <= 62 && count <= MAX_CHAIN_PRIMES {
        Ok(())
    } else {
        Err(CkksError::InvalidConfig {
            reason: format!(
                "{what}: log_n {log_n} (1..=30), bits {bits} (log_n + 3..=62), count {count} (<= {MAX_CHAIN_PRIMES})"
            ),
        })
    }
}

/// NTT-friendly primes of `bits` bits closest to `2^bits`, alternating below / above (decision
/// 0401). For (log_n 14, 40 bits) it returns FHElium's exact catalog primes
/// [`SCALE40_N16384_PRIMES`]; for other rows our own rule: the first prime is taken on the side
/// opposite the nearest candidate, then the sides alternate, each taking its next unused prime.
pub fn scale_primes(log_n: u32, bits: u32, count: usize) -> Result<Vec<u64>, CkksError> {
    check_prime_search("scale_primes", log_n, bits, count)?;
    if log_n == 14 && bits == 40 && count <= SCALE40_N16384_PRIMES.len() {
        return Ok(SCALE40_N16384_PRIMES[..count].to_vec());
    }
    let two_n = 2u64 << log_n;
    let center = 1u64 << bits;
    let lo_limit = 1u64 << (bits - 1);
    let hi_limit = 1u64 << (bits + 1);
    let mut below = (center / two_n) * two_n + 1;
    if below >= center {
        below -= two_n;
    }
    let mut above = (center / two_n + 1) * two_n + 1;
    let next_below = |from: &mut u64| -> Option<u64> {
        while *from > lo_limit {
            let c = *from;
            *from -= two_n;
            if is_prime(c) {
                return Some(c);
            }
        }
        None
    };
    let next_above = |from: &mut u64| -> Option<u64> {
        while *from < hi_limit {
            let c = *from;
            *from += two_n;
            if is_prime(c) {
                return Some(c);
            }
        }
        None
    };
    let exhausted = || CkksError::InvalidConfig {
        reason: format!("not enough {bits}-bit NTT primes for N = 2^{log_n}"),
    };
    let mut out = Vec::with_capacity(count);
    if count == 0 {
        return Ok(out);
    }
    let (mut b0, mut a0) = (below, above);
    let first_below = next_below(&mut b0).ok_or_else(exhausted)?;
    let first_above = next_above(&mut a0).ok_or_else(exhausted)?;
    let mut take_below = center - first_below > first_above - center;
    while out.len() < count {
        let p = if take_below {
            next_below(&mut below)
        } else {
            next_above(&mut above)
        };
        out.push(p.ok_or_else(exhausted)?);
        take_below = !take_below;
    }
    Ok(out)
}

/// The `count` largest NTT-friendly primes (`q ≡ 1 mod 2N`) below `2^bits`, descending (the rule
/// of FHElium's message-prime catalog: the base prime first, then the special primes).
pub fn message_primes(log_n: u32, bits: u32, count: usize) -> Result<Vec<u64>, CkksError> {
    check_prime_search("message_primes", log_n, bits, count)?;
    let two_n = 2u64 << log_n;
    let mut c = ((1u64 << bits) - 1) / two_n * two_n + 1;
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        if c <= 1u64 << (bits - 1) {
            return Err(CkksError::InvalidConfig {
                reason: format!("not enough {bits}-bit NTT primes for N = 2^{log_n}"),
            });
        }
        if is_prime(c) {
            out.push(c);
        }
        c -= two_n;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-built config (public fields) with a ring degree or scale out of range is a typed
    /// error, not a panic: `2 << log_n` overflowed for log_n >= 63 and N = 1 broke the encoder.
    #[test]
    fn hand_built_configs_out_of_range_are_refused() {
        let base = CkksConfig::from_preset(Preset::Slots8192Scale40Levels7Int64).expect("preset");
        for (log_n, scale_bits) in [
            (0, 40),
            (3, 40),
            (18, 40),
            (63, 40),
            (64, 40),
            (200, 40),
            (14, 0),
            (14, 63),
        ] {
            let c = CkksConfig {
                log_n,
                scale_bits,
                enforce_security_budget: false,
                ..base.clone()
            };
            match c.validate() {
                Err(CkksError::InvalidConfig { reason }) => assert!(
                    reason.contains(&format!("log_n {log_n} "))
                        && reason.contains(&format!("scale_bits {scale_bits} ")),
                    "{reason}"
                ),
                other => panic!("log_n {log_n}, scale_bits {scale_bits}: {other:?}"),
            }
            assert!(crate::CpuEngine::from_config(c, Some([1; 32])).is_err());
        }
        assert_eq!(base.validate(), Ok(()));
    }

    #[test]
    fn seed_preset_has_the_exact_nine_primes() {
        let p: Preset = "slots8192-scale40-levels7-int64"
            .parse()
            .expect("known preset");
        assert_eq!(p, Preset::Slots8192Scale40Levels7Int64);
        assert_eq!(p.to_string(), "slots8192-scale40-levels7-int64");
        let c = CkksConfig::from_preset(p).expect("valid");
        assert_eq!(c.n(), 16384);
        assert_eq!(
            c.q_primes,
            [
                1_099_510_054_913,
                1_099_515_691_009,
                1_099_508_121_601,
                1_099_515_789_313,
                1_099_507_695_617,
                1_099_516_280_833,
                1_099_506_515_969,
                1_152_921_504_606_748_673
            ]
        );
        assert_eq!(c.p_primes, [1_152_921_504_606_683_137]);
        assert_eq!(c.total_modulus_bits(), 400);
        assert_eq!(c.num_levels(), 7);
        let per_level: Vec<u32> = (0..7).map(|l| c.q_bits_at_level(l)).collect();
        assert_eq!(per_level, [340, 301, 260, 220, 180, 140, 100]);
        assert_eq!(c.digits().len(), 8);
        assert_eq!(c.digits()[7], vec![7]);
    }

    #[test]
    fn every_preset_parses_prints_and_meets_the_budget() {
        for p in Preset::ALL {
            let back: Preset = p.to_string().parse().expect("round trip");
            assert_eq!(back, p);
        }
        // building the large ones costs prime searches; the N <= 2^15 ones are quick
        for p in &Preset::ALL[..6] {
            let c = CkksConfig::from_preset(*p).expect("budget met");
            let (_, _, levels, nump) = p.shape();
            assert_eq!(c.q_primes.len(), levels + 1);
            assert_eq!(c.p_primes.len(), nump);
            assert_eq!(c.digits().len(), levels.div_ceil(nump) + 1, "{p}");
        }
        assert!(matches!(
            "slots8192-scale40-levels8-int64".parse::<Preset>(),
            Err(CkksError::UnknownPreset { .. })
        ));
    }

    #[test]
    fn over_budget_is_refused_with_a_typed_error() {
        let err = CkksConfig::generate(14, 50, 8, 1).expect_err("8*50+120 > 430");
        assert!(matches!(
            err,
            CkksError::SecurityBudgetExceeded {
                log_n: 14,
                budget_bits: Some(430),
                ..
            }
        ));
        let mut c = CkksConfig::from_preset(Preset::Slots8192Scale40Levels7Int64).expect("valid");
        c.q_primes[1] = c.q_primes[0];
        assert!(matches!(c.validate(), Err(CkksError::InvalidConfig { .. })));
        let mut c = CkksConfig::from_preset(Preset::Slots8192Scale40Levels7Int64).expect("valid");
        c.q_primes[0] += 2 * 16384; // no longer prime
        assert!(matches!(c.validate(), Err(CkksError::InvalidConfig { .. })));
    }

    /// Every structural refusal of `generate_with_budget` and `validate` is `InvalidConfig`
    /// with the exact reason, and an engine built from a hand-made bad config gives the same
    /// error.
    #[test]
    fn structural_refusals_give_their_exact_reasons() {
        let invalid = |reason: &str| {
            Err::<CkksConfig, _>(CkksError::InvalidConfig {
                reason: reason.to_owned(),
            })
        };
        let range = "(4..=17), scale_bits";
        let m = MAX_CHAIN_PRIMES;
        for (log_n, bits, nums, nump) in [
            (3, 30, 2, 1),
            (18, 30, 2, 1),
            (12, 19, 2, 1),
            (12, 59, 2, 1),
            (12, 30, 2, 0),
            // Chains beyond MAX_CHAIN_PRIMES (usize::MAX used to overflow the allocation and
            // `1 + num_p_primes`).
            (12, 30, m + 1, 1),
            (12, 30, usize::MAX, 1),
            (12, 30, 2, m + 1),
            (12, 30, 2, usize::MAX),
        ] {
            assert_eq!(
                CkksConfig::generate_with_budget(log_n, bits, nums, nump, false),
                invalid(&format!(
                    "log_n {log_n} {range} {bits} (20..=58), num_scale_primes {nums} (<= {m}), num_p_primes {nump} (1..={m})"
                ))
            );
        }
        // The prime searches refuse what they cannot compute instead of overflowing.
        for (log_n, bits, count) in [
            (0, 40, 1),
            (31, 62, 1),
            (63, 40, 1),
            (14, 0, 1),
            (14, 16, 1),
            (14, 63, 1),
            (14, 40, m + 1),
        ] {
            for r in [
                scale_primes(log_n, bits, count),
                message_primes(log_n, bits, count),
            ] {
                assert!(
                    matches!(&r, Err(CkksError::InvalidConfig { reason }) if reason.contains(&format!("log_n {log_n} (1..=30), bits {bits}"))),
                    "{log_n} {bits} {count}: {r:?}"
                );
            }
        }
        // Accessors of a hand-built config that `validate` refuses answer without panicking.
        let broken = CkksConfig {
            log_n: 70,
            q_primes: Vec::new(),
            p_primes: Vec::new(),
            ..CkksConfig::from_preset(Preset::Slots8192Scale40Levels7Int64).expect("preset")
        };
        assert_eq!((broken.n(), broken.slots()), (0, 0));
        assert_eq!((broken.num_levels(), broken.max_level()), (0, 0));
        assert_eq!(broken.digits(), vec![vec![0]]);
        assert!(matches!(
            broken.validate(),
            Err(CkksError::InvalidConfig { .. })
        ));
        assert_eq!(
            CkksConfig::generate_with_budget(12, 30, 0, 1, false),
            invalid("need at least 2 Q primes and 1 P prime, got 1 and 1")
        );
        // Between 2^19 and 2^21 there are five candidates = 1 mod 2^18, too few for ten.
        assert_eq!(
            CkksConfig::generate_with_budget(17, 20, 10, 1, false),
            invalid("not enough 20-bit NTT primes for N = 2^17")
        );

        let base = CkksConfig::from_preset(Preset::Slots8192Scale40Levels7Int64).expect("preset");
        let (q0, q1) = (base.q_primes[0], base.q_primes[1]);
        let bad = |f: &dyn Fn(&mut CkksConfig)| {
            let mut c = base.clone();
            f(&mut c);
            c
        };
        for (cfg, reason) in [
            (
                bad(&|c| c.p_primes.clear()),
                "need at least 2 Q primes and 1 P prime, got 8 and 0".to_owned(),
            ),
            (
                bad(&|c| c.q_primes.truncate(1)),
                "need at least 2 Q primes and 1 P prime, got 1 and 1".to_owned(),
            ),
            (
                bad(&|c| c.q_primes[2] = 7),
                "prime id 2 = 7 is not a prime ≡ 1 mod 2N below 2^62".to_owned(),
            ),
            (
                bad(&|c| c.p_primes[0] = 1 << 62),
                format!(
                    "prime id 8 = {} is not a prime ≡ 1 mod 2N below 2^62",
                    1u64 << 62
                ),
            ),
            (
                bad(&|c| c.q_primes[1] = q0),
                format!("duplicate prime {q0}"),
            ),
            (
                bad(&|c| c.p_primes[0] = q1),
                format!("duplicate prime {q1}"),
            ),
            (
                bad(&|c| c.galois_generator = 5),
                "galois generator 5 (only 3 is supported)".to_owned(),
            ),
            (
                bad(&|c| c.sigma = 3.2),
                "the budget table covers sigma = 3.19 at 128 bits only (got sigma 3.2, 128 bits)"
                    .to_owned(),
            ),
            (
                bad(&|c| c.security_bits = 192),
                "the budget table covers sigma = 3.19 at 128 bits only (got sigma 3.19, 192 bits)"
                    .to_owned(),
            ),
        ] {
            let want = CkksError::InvalidConfig { reason };
            assert_eq!(cfg.validate(), Err(want.clone()));
            assert_eq!(
                crate::CpuEngine::from_config(cfg, Some([1; 32])).map(|_| ()),
                Err(want)
            );
        }
    }

    /// Over the budget, or at a ring degree the table has no row for, is
    /// `SecurityBudgetExceeded` with the exact figures; an unknown preset name is named.
    #[test]
    fn budget_and_preset_refusals_carry_their_figures() {
        let total = |log_n, bits, levels| {
            CkksConfig::generate_with_budget(log_n, bits, levels, 1, false)
                .expect("without the budget")
                .total_modulus_bits()
        };
        assert_eq!(
            CkksConfig::generate(14, 50, 8, 1),
            Err(CkksError::SecurityBudgetExceeded {
                log_n: 14,
                total_modulus_bits: total(14, 50, 8),
                budget_bits: Some(430),
                security_bits: 128,
            })
        );
        assert!(total(14, 50, 8) > 430);
        // No table row below N = 2^13: nothing is secure there.
        assert_eq!(
            CkksConfig::generate(12, 30, 2, 1),
            Err(CkksError::SecurityBudgetExceeded {
                log_n: 12,
                total_modulus_bits: total(12, 30, 2),
                budget_bits: None,
                security_bits: 128,
            })
        );
        assert_eq!(
            "slots8192-scale40-levels7".parse::<Preset>(),
            Err(CkksError::UnknownPreset {
                name: "slots8192-scale40-levels7".to_owned()
            })
        );
    }

    #[test]
    fn generated_primes_follow_the_rule() {
        let qs = scale_primes(12, 30, 6).expect("enough");
        for &q in &qs {
            assert!(is_prime(q) && q % (1 << 13) == 1);
        }
        for w in qs.windows(2) {
            assert_ne!(w[0] < 1 << 30, w[1] < 1 << 30, "sides alternate: {qs:?}");
        }
        let m = message_primes(14, 60, 2).expect("enough");
        assert_eq!(m, [1_152_921_504_606_748_673, 1_152_921_504_606_683_137]);
    }
}
