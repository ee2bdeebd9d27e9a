//! Domain transitions of RNS plaintexts (spec §3.10: "plaintext versions change only the
//! domain"): the same per-row transforms as the ciphertext transitions.

use rayon::prelude::*;

use super::{expect_domain, CpuEngine};
use crate::error::CkksError;
use crate::storage::Words;
use crate::values::{Domain, Plaintext, PlaintextRepresentation};

impl CpuEngine {
    /// Forward NTT of every row of an RNS plaintext (coefficient → NTT). Level, scale, basis
    /// and rows are kept; `prepare_plaintext_for_addition` followed by this gives the words of
    /// `prepare_plaintext_for_multiplication`.
    #[tracing::instrument(
        name = "ckks.plaintext_coefficient_domain_to_ntt_domain",
        level = "debug",
        skip_all,
        fields(location = "host", level = pt.level(), bytes = pt.nbytes()),
        err(level = "debug")
    )]
    pub fn plaintext_coefficient_domain_to_ntt_domain(
        &self,
        pt: &Plaintext,
    ) -> Result<Plaintext, CkksError> {
        self.change_plaintext_domain(
            "plaintext_coefficient_domain_to_ntt_domain",
            pt,
            Domain::Coefficient,
            Domain::Ntt,
        )
    }

    /// Inverse NTT of every row of an RNS plaintext (NTT → coefficient).
    #[tracing::instrument(
        name = "ckks.plaintext_ntt_domain_to_coefficient_domain",
        level = "debug",
        skip_all,
        fields(location = "host", level = pt.level(), bytes = pt.nbytes()),
        err(level = "debug")
    )]
    pub fn plaintext_ntt_domain_to_coefficient_domain(
        &self,
        pt: &Plaintext,
    ) -> Result<Plaintext, CkksError> {
        self.change_plaintext_domain(
            "plaintext_ntt_domain_to_coefficient_domain",
            pt,
            Domain::Ntt,
            Domain::Coefficient,
        )
    }

    fn change_plaintext_domain(
        &self,
        op: &'static str,
        pt: &Plaintext,
        from: Domain,
        to: Domain,
    ) -> Result<Plaintext, CkksError> {
        self.check_pt(op, pt)?;
        if pt.representation != PlaintextRepresentation::Rns {
            return Err(CkksError::RepresentationMismatch {
                op,
                expected: "rns",
                actual: pt.representation.name(),
            });
        }
        expect_domain(op, from, pt.domain)?;
        let n = self.n_();
        let mut words = Words::alloc(&self.memory, pt.location(), pt.words.len())?;
        words
            .as_mut_slice()
            .par_chunks_mut(n)
            .zip(pt.words.as_slice().par_chunks(n))
            .zip(pt.prime_ids.par_iter())
            .for_each(|((dst, src), &id)| {
                let t = &self.ctx.tables[id];
                if to == Domain::Ntt {
                    t.forward_from(src, dst);
                } else {
                    t.inverse_from(src, dst);
                }
            });
        let mut out = pt.with_words(words);
        out.domain = to;
        Ok(out)
    }
}
