//! Values and keys from their portable forms ([`crate::serial`]), checked against the engine.

use super::{valid_scale, CpuEngine};
use crate::error::CkksError;
use crate::keys::{KeySwitchKey, PublicKey, RelinearizationKey, RotationKey};
use crate::serial::{
    CiphertextData, PlaintextData, PublicKeyData, SwitchKeyData, SwitchKeyKind, FORMAT,
};
use crate::storage::{first_non_canonical, Words};
use crate::values::{Ciphertext, Domain, ModulusBasis, Plaintext, PlaintextRepresentation};

fn invalid(what: &'static str, reason: String) -> CkksError {
    CkksError::InvalidData { what, reason }
}

impl CpuEngine {
    /// Format version, context and ring degree of `what`'s data.
    fn check_header(
        &self,
        what: &'static str,
        format: u32,
        context_id: u64,
        n: usize,
    ) -> Result<(), CkksError> {
        if format != FORMAT {
            return Err(invalid(
                what,
                format!("format {format}, this build reads format {FORMAT}"),
            ));
        }
        self.check_ctx(what, context_id)?;
        if n != self.n_() {
            return Err(invalid(
                what,
                format!("ring degree {n}, the engine's is {}", self.n_()),
            ));
        }
        Ok(())
    }

    /// `words` is `blocks` blocks of one N-word row per id of `ids`, each word canonical
    /// modulo its row's prime.
    fn check_rows(
        &self,
        what: &'static str,
        ids: &[usize],
        blocks: usize,
        words: &[u64],
    ) -> Result<(), CkksError> {
        let n = self.n_();
        let want = blocks * ids.len() * n;
        if words.len() != want {
            return Err(invalid(
                what,
                format!("{} words, the shape needs {want}", words.len()),
            ));
        }
        match first_non_canonical(words, n, ids, |id| self.ctx.modulus(id).value()) {
            Some(bad) => Err(invalid(
                what,
                format!(
                    "word {} (row {}, prime id {}) is {} >= q = {}",
                    bad.index,
                    bad.index / n,
                    bad.prime_id,
                    bad.word,
                    bad.modulus
                ),
            )),
            None => Ok(()),
        }
    }

    /// Level and prime ids of a value at `level` in `basis`.
    fn check_ids(
        &self,
        what: &'static str,
        level: usize,
        basis: ModulusBasis,
        ids: &[usize],
    ) -> Result<(), CkksError> {
        self.check_level(what, level)?;
        let want = self.ids(level, basis);
        if ids != want.as_slice() {
            return Err(invalid(
                what,
                format!("prime ids {ids:?}, level {level} in basis {basis} has {want:?}"),
            ));
        }
        Ok(())
    }

    /// A ciphertext of this engine from its portable form, at the engine's location.
    ///
    /// # Errors
    /// [`CkksError::InvalidData`] (format, ring degree, components, prime ids, shape, a word
    /// not below its prime), [`CkksError::ContextMismatch`], [`CkksError::InvalidLevel`],
    /// [`CkksError::InvalidScale`], [`CkksError::Memory`].
    pub fn ciphertext_from_data(&self, d: &CiphertextData) -> Result<Ciphertext, CkksError> {
        const WHAT: &str = "ciphertext_from_data";
        self.check_header(WHAT, d.format, d.context_id, d.n)?;
        if !(2..=3).contains(&d.components) {
            return Err(invalid(
                WHAT,
                format!("{} components, a ciphertext has 2 or 3", d.components),
            ));
        }
        self.check_ids(WHAT, d.level, d.basis, &d.prime_ids)?;
        let scale = valid_scale(WHAT, d.scale)?;
        self.check_rows(WHAT, &d.prime_ids, d.components, &d.words)?;
        Ok(Ciphertext {
            words: Words::alloc_copy(&self.memory, self.location, &d.words)?,
            context: self.ctx.id,
            n: d.n,
            level: d.level,
            scale,
            domain: d.domain,
            basis: d.basis,
            components: d.components,
            prime_ids: d.prime_ids.clone(),
        })
    }

    /// A plaintext of this engine from its portable form: RNS rows (canonical, the prime ids
    /// of its level and basis), integer coefficients (N words, coefficient domain, basis Q)
    /// or approximate coefficients (N finite f64 bit patterns, likewise).
    ///
    /// # Errors
    /// As [`CpuEngine::ciphertext_from_data`].
    pub fn plaintext_from_data(&self, d: &PlaintextData) -> Result<Plaintext, CkksError> {
        const WHAT: &str = "plaintext_from_data";
        self.check_header(WHAT, d.format, d.context_id, d.n)?;
        let scale = valid_scale(WHAT, d.scale)?;
        if d.representation == PlaintextRepresentation::Rns {
            self.check_ids(WHAT, d.level, d.basis, &d.prime_ids)?;
            self.check_rows(WHAT, &d.prime_ids, 1, &d.words)?;
        } else {
            self.check_level(WHAT, d.level)?;
            let shape = (d.domain, d.basis, d.prime_ids.len(), d.words.len());
            if shape != (Domain::Coefficient, ModulusBasis::Q, 0, d.n) {
                return Err(invalid(
                    WHAT,
                    format!(
                        "{} plaintext in the {} domain, basis {}, {} prime ids, {} words: it \
                         has N = {} words, coefficient domain, basis Q, no prime ids",
                        d.representation.name(),
                        d.domain,
                        d.basis,
                        d.prime_ids.len(),
                        d.words.len(),
                        d.n
                    ),
                ));
            }
            let approx = d.representation == PlaintextRepresentation::ApproximateCoefficients;
            if approx {
                if let Some(k) = d.words.iter().position(|&w| !f64::from_bits(w).is_finite()) {
                    return Err(invalid(
                        WHAT,
                        format!("approximate coefficient {k} is not finite"),
                    ));
                }
            }
        }
        Ok(Plaintext {
            words: Words::alloc_copy(&self.memory, self.location, &d.words)?,
            context: self.ctx.id,
            n: d.n,
            level: d.level,
            scale,
            domain: d.domain,
            basis: d.basis,
            representation: d.representation,
            prime_ids: d.prime_ids.clone(),
        })
    }

    /// A public key of this engine's parameters from its portable form.
    ///
    /// # Errors
    /// [`CkksError::InvalidData`], [`CkksError::ContextMismatch`], [`CkksError::Memory`].
    pub fn public_key_from_data(&self, d: &PublicKeyData) -> Result<PublicKey, CkksError> {
        const WHAT: &str = "public_key_from_data";
        self.check_header(WHAT, d.format, d.context_id, d.n)?;
        let ids: Vec<usize> = (0..self.ctx.nq).collect();
        self.check_rows(WHAT, &ids, 2, &d.words)?;
        Ok(PublicKey {
            words: Words::alloc_copy(&self.memory, self.location, &d.words)?,
            context: self.ctx.id,
            key_id: d.key_id,
            n: d.n,
        })
    }

    fn switch_key_from_data(
        &self,
        what: &'static str,
        d: &SwitchKeyData,
    ) -> Result<KeySwitchKey, CkksError> {
        self.check_header(what, d.format, d.context_id, d.n)?;
        let (digits, rows) = (self.ctx.digits.len(), self.ctx.nq + self.ctx.np);
        if (d.digits, d.rows) != (digits, rows) {
            return Err(invalid(
                what,
                format!(
                    "{} digits x {} rows, the engine's keys have {digits} x {rows}",
                    d.digits, d.rows
                ),
            ));
        }
        let ids: Vec<usize> = (0..rows).collect();
        self.check_rows(what, &ids, 2 * digits, &d.words)?;
        Ok(KeySwitchKey {
            words: Words::alloc_copy(&self.memory, self.location, &d.words)?,
            context: self.ctx.id,
            key_id: d.key_id,
            n: d.n,
            digits,
            rows,
        })
    }

    /// A rotation or conjugation key from its portable form; its Galois element must be the
    /// one of its step (or 2N − 1).
    ///
    /// # Errors
    /// As [`CpuEngine::public_key_from_data`]; a relinearization key's data is
    /// [`CkksError::InvalidData`].
    pub fn rotation_key_from_data(&self, d: &SwitchKeyData) -> Result<RotationKey, CkksError> {
        const WHAT: &str = "rotation_key_from_data";
        let (step, galois_element) = match d.kind {
            SwitchKeyKind::Rotation {
                step,
                galois_element,
            } => {
                let (canonical, g) = self.galois_element_for_step(step);
                if canonical != step || canonical == 0 || g != galois_element {
                    return Err(invalid(
                        WHAT,
                        format!(
                            "step {step} with Galois element {galois_element}: the canonical \
                             nonzero step and its element are {canonical} and {g}"
                        ),
                    ));
                }
                (Some(step), g)
            }
            SwitchKeyKind::Conjugation { galois_element } => {
                let g = 2 * self.n_() as u64 - 1;
                if galois_element != g {
                    return Err(invalid(
                        WHAT,
                        format!("conjugation with Galois element {galois_element}, not {g}"),
                    ));
                }
                (None, g)
            }
            SwitchKeyKind::Relinearization => {
                return Err(invalid(
                    WHAT,
                    "a relinearization key is not a rotation key".into(),
                ))
            }
        };
        Ok(RotationKey {
            ksk: self.switch_key_from_data(WHAT, d)?,
            step,
            galois_element,
        })
    }

    /// A relinearization key from its portable form.
    ///
    /// # Errors
    /// As [`CpuEngine::public_key_from_data`]; a rotation key's data is
    /// [`CkksError::InvalidData`].
    pub fn relinearization_key_from_data(
        &self,
        d: &SwitchKeyData,
    ) -> Result<RelinearizationKey, CkksError> {
        const WHAT: &str = "relinearization_key_from_data";
        if d.kind != SwitchKeyKind::Relinearization {
            return Err(invalid(
                WHAT,
                format!("{:?} is not a relinearization key", d.kind),
            ));
        }
        Ok(RelinearizationKey {
            ksk: self.switch_key_from_data(WHAT, d)?,
        })
    }
}
