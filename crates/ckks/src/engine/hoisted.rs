//! Hoisted rotations (spec §3.9): several rotations of one ciphertext share the decomposition,
//! ModUp and forward NTTs of `c1`; each key then costs its inner product, two inverse NTTs per
//! QP row and the ModDown (18 of the 90 transforms of a single rotation at level 0).

use super::CpuEngine;
use crate::error::CkksError;
use crate::keys::RotationKey;
use crate::values::{Ciphertext, Domain};

impl CpuEngine {
    /// Rotates (or conjugates) `ct` by every key of `keys` with one shared ModUp + NTT of `c1`.
    /// Result `i` equals `rotate_with_key(ct, keys[i])` (or `conjugate`) word for word.
    /// Input: 2 components, coefficient domain, basis Q; every key is checked before any work.
    #[tracing::instrument(
        name = "ckks.rotate_many_with_keys",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes(), keys = keys.len()),
        err(level = "debug")
    )]
    pub fn rotate_many_with_keys(
        &self,
        ct: &Ciphertext,
        keys: &[&RotationKey],
    ) -> Result<Vec<Ciphertext>, CkksError> {
        const OP: &str = "rotate_many_with_keys";
        self.check_keyswitch_input(OP, ct, 2, Domain::Coefficient)?;
        for key in keys {
            self.check_key(OP, &key.ksk)?;
        }
        let keys: Vec<Option<&RotationKey>> = keys.iter().copied().map(Some).collect();
        self.galois_many(ct, &keys)
    }

    /// Rotates `ct` by every step of `steps` with the engine's cached keys (created on first
    /// use), hoisted as [`CpuEngine::rotate_many_with_keys`]; a step ≡ 0 gives a copy. Result
    /// `i` equals `rotate_by_step(ct, steps[i])` word for word.
    #[tracing::instrument(
        name = "ckks.rotate_many_by_steps",
        level = "debug",
        skip_all,
        fields(location = "host", level = ct.level(), bytes = ct.nbytes(), steps = ?steps),
        err(level = "debug")
    )]
    pub fn rotate_many_by_steps(
        &self,
        ct: &Ciphertext,
        steps: &[i64],
    ) -> Result<Vec<Ciphertext>, CkksError> {
        const OP: &str = "rotate_many_by_steps";
        self.check_keyswitch_input(OP, ct, 2, Domain::Coefficient)?;
        // A key that can never fit the key cache fails the call before any key is made.
        for slot in steps.iter().filter_map(|&step| self.rotation_slot(step)) {
            self.check_key_admissible(OP, slot)?;
        }
        let keys = steps
            .iter()
            .map(|&step| {
                if self.galois_element_for_step(step).0 == 0 {
                    Ok(None)
                } else {
                    self.cached_rotation_key(OP, step).map(Some)
                }
            })
            .collect::<Result<Vec<_>, CkksError>>()?;
        let keys: Vec<Option<&RotationKey>> = keys.iter().map(Option::as_deref).collect();
        self.galois_many(ct, &keys)
    }
}
