//! Per-parameter-set tables shared by an engine and its values.

use crate::arith::Modulus;
use crate::encoding::Encoder;
use crate::error::CkksError;
use crate::kernels::MixedRadix;
use crate::ntt::NttTable;
use crate::params::CkksConfig;

/// Everything derived from a [`CkksConfig`]: NTT tables for every QP prime, the encoder,
/// key-switching digits and ModDown constants, and the context id values are tagged with.
#[derive(Debug)]
pub struct Context {
    pub(crate) config: CkksConfig,
    pub(crate) n: usize,
    pub(crate) nq: usize,
    pub(crate) np: usize,
    pub(crate) tables: Vec<NttTable>,
    pub(crate) id: u64,
    pub(crate) encoder: Encoder,
    pub(crate) digits: Vec<Vec<usize>>,
    pub(crate) digit_radix: Vec<MixedRadix>,
    pub(crate) p_radix: MixedRadix,
    /// `P⁻¹ mod q_i` for each Q id.
    pub(crate) p_inv_mod_q: Vec<u64>,
    /// `P mod q_i` for each Q id.
    pub(crate) p_mod_q: Vec<u64>,
}

/// FNV-1a over the parameters that define a context (N, default scale, Q, P, generator).
fn context_id(cfg: &CkksConfig) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |x: u64| {
        for b in x.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    };
    eat(u64::from(cfg.log_n));
    eat(cfg.default_scale().to_bits());
    eat(cfg.q_primes.len() as u64);
    cfg.q_primes.iter().for_each(|&q| eat(q));
    eat(cfg.p_primes.len() as u64);
    cfg.p_primes.iter().for_each(|&q| eat(q));
    eat(cfg.galois_generator);
    h
}

impl Context {
    /// Validates the configuration and builds every table.
    pub fn new(config: CkksConfig) -> Result<Self, CkksError> {
        config.validate()?;
        let n = config.n();
        let nq = config.q_primes.len();
        let np = config.p_primes.len();
        let all: Vec<u64> = config
            .q_primes
            .iter()
            .chain(&config.p_primes)
            .copied()
            .collect();
        let tables: Vec<NttTable> = all
            .iter()
            .map(|&q| {
                NttTable::new(q, config.log_n).ok_or_else(|| CkksError::InvalidConfig {
                    reason: format!("{q} has no primitive 2N-th root"),
                })
            })
            .collect::<Result<_, _>>()?;
        let moduli: Vec<Modulus> = tables.iter().map(|t| *t.modulus()).collect();
        let digits = config.digits();
        let digit_radix = digits
            .iter()
            .map(|d| MixedRadix::new(&d.iter().map(|&i| moduli[i]).collect::<Vec<_>>()))
            .collect();
        let p_radix = MixedRadix::new(&moduli[nq..]);
        let mut p_mod_q = Vec::with_capacity(nq);
        let mut p_inv_mod_q = Vec::with_capacity(nq);
        for m in &moduli[..nq] {
            let p = config
                .p_primes
                .iter()
                .fold(1u64, |acc, &p| m.mul(acc, m.reduce(p)));
            p_mod_q.push(p);
            p_inv_mod_q.push(m.inv(p).ok_or_else(|| CkksError::InvalidConfig {
                reason: "P is not invertible modulo a Q prime".into(),
            })?);
        }
        Ok(Self {
            id: context_id(&config),
            encoder: Encoder::new(n)?,
            config,
            n,
            nq,
            np,
            tables,
            digits,
            digit_radix,
            p_radix,
            p_inv_mod_q,
            p_mod_q,
        })
    }

    /// The parameters.
    #[must_use]
    pub fn config(&self) -> &CkksConfig {
        &self.config
    }

    /// The context id (a hash of N, default scale, Q, P and the generator).
    #[must_use]
    pub fn id(&self) -> u64 {
        self.id
    }

    /// NTT tables of every QP prime, by prime id.
    #[must_use]
    pub fn ntt_tables(&self) -> &[NttTable] {
        &self.tables
    }

    /// The modulus of a prime id.
    pub(crate) fn modulus(&self, id: usize) -> &Modulus {
        self.tables[id].modulus()
    }
}
