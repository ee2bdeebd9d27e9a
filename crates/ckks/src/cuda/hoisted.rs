//! Hoisted rotations and conjugation on the device (spec §3.9, as the CPU engine's
//! `rotate_many_with_keys` / `conjugate`).
//!
//! Several rotations of one ciphertext share the ModUp of `c1`: its digits' balanced lift to
//! every target row and their forward NTTs (72 limb NTTs at level 0), made once without `σ_g`.
//! Each key then costs the key inner product with its inverse NTT, reading those extended
//! digits through the NTT-domain permutation `σ_g` (`ks_inner_gh`; on the cluster kernels a
//! pass of `aut_ntt` permutes them first), and the ModDown that adds `σ_g(c0)`: the single
//! rotation's chain without its ModUp (decision 0509). `σ_g` commutes with the balanced lift
//! (q odd), so every result equals [`CudaEngine::rotate_with_key`]'s (and the CPU engine's)
//! word for word.

use cust::stream::Stream;

use super::{
    dev_ptr, CkksError, CudaEngine, GpuCiphertext, GpuSwitchKey, PoolWords, Result, KERNEL_N,
};

impl CudaEngine {
    /// Rotates (or conjugates) `ct` by every key of `keys` with one shared ModUp of `c1`.
    /// Result `i` equals `rotate_with_key(ct, keys[i])` word for word. Input: 2 components,
    /// coefficient domain, basis Q; every key is checked before any work is enqueued (a bad
    /// key is a typed error and nothing runs). No keys: no results, no work. When the engine
    /// cannot run its one-launch ModUp (two-pass kernels), each key runs a whole rotation.
    #[tracing::instrument(
        name = "ckks.rotate_many_with_keys",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = ct.level(),
            bytes = ct.nbytes(),
            keys = keys.len(),
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn rotate_many_with_keys(
        &self,
        ct: &GpuCiphertext,
        keys: &[&GpuSwitchKey],
        stream: &Stream,
    ) -> Result<Vec<GpuCiphertext>> {
        const OP: &str = "rotate_many_with_keys";
        self.check_rotation_input(OP, ct)?;
        let keys: Vec<Option<&GpuSwitchKey>> = keys.iter().copied().map(Some).collect();
        self.rotate_many(OP, ct, &keys, stream)
    }

    /// The hoisted rotations of `ct` (checked by the caller) by `keys`, a copy of `ct` where
    /// a key is `None` (a step ≡ 0). Every key is checked before any work; the shared ModUp
    /// runs only when some key is there.
    pub(super) fn rotate_many(
        &self,
        op: &'static str,
        ct: &GpuCiphertext,
        keys: &[Option<&GpuSwitchKey>],
        stream: &Stream,
    ) -> Result<Vec<GpuCiphertext>> {
        let elements = keys
            .iter()
            .map(|key| key.map(|k| self.rotation_element(op, k)).transpose())
            .collect::<Result<Vec<Option<u64>>>>()?;
        let ext = if elements.iter().any(Option::is_some) {
            self.hoisted_modup(op, ct, stream)?
        } else {
            None
        };
        let hoisted = ext.as_ref().map(dev_ptr);
        let mut out = Vec::with_capacity(keys.len());
        for (key, g) in keys.iter().zip(&elements) {
            out.push(match (key, g) {
                (Some(key), Some(g)) => self.galois_switch(op, ct, key, *g, hoisted, stream)?,
                _ => self.drop_rows(op, ct, 0, stream)?,
            });
        }
        if let Some(ext) = ext {
            self.recycle(op, ext, stream)?;
        }
        Ok(out)
    }

    /// Complex conjugation of every slot with a conjugation key (Galois element 2N - 1);
    /// a rotation key is [`CkksError::WrongKey`]. As [`CudaEngine::rotate_with_key`] otherwise.
    #[tracing::instrument(
        name = "ckks.conjugate",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = ct.level(),
            bytes = ct.nbytes(),
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn conjugate(
        &self,
        ct: &GpuCiphertext,
        key: &GpuSwitchKey,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "conjugate";
        self.check_rotation_input(OP, ct)?;
        let g = self.rotation_element(OP, key)?;
        if g != 2 * KERNEL_N as u64 - 1 {
            return Err(CkksError::WrongKey {
                op: OP,
                reason: format!("a rotation key (Galois element {g}) is not a conjugation key"),
            }
            .into());
        }
        self.galois_switch(OP, ct, key, g, None, stream)
    }

    /// The ModUp of `ct`'s `c1` without `σ` into a new buffer (`[digit][row][N]`, NTT
    /// domain), in one launch; `None` when the engine's kernels cannot run it in one
    /// (nothing enqueued).
    fn hoisted_modup(
        &self,
        op: &'static str,
        ct: &GpuCiphertext,
        stream: &Stream,
    ) -> Result<Option<PoolWords>> {
        let limbs = ct.num_limbs();
        let rows = limbs + 1;
        let ext = self.alloc(op, limbs * rows * KERNEL_N, stream)?;
        let c1 = ct.ptr() + (limbs * KERNEL_N * 8) as u64;
        let args = self.modup_args(c1, dev_ptr(&ext), 0, ct.prime_ids[0], limbs);
        if self.launch_modup(op, rows, limbs, &args, stream)? {
            Ok(Some(ext))
        } else {
            self.recycle(op, ext, stream)?;
            Ok(None)
        }
    }
}
