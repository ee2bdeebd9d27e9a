//! Keys made on first use, kept on the device: the CUDA engine's side of the CPU engine's key
//! cache (`rotate_by_step`, `rotate_many_by_steps`, `relinearize` without a key argument).
//!
//! The device engine holds no secret key: keys are made on the host. A [`GpuKeyCache`] binds
//! a [`CpuEngine`] (whose secret key makes the keys, through its own cache) to one device.
//! The first use of a step (or of relinearization) asks the CPU engine for its cached key
//! (made then if it is new: tens of milliseconds of host work) and copies it (18 MiB at the
//! seed preset) to the device on the caller's stream; later uses find it there. The keys
//! are therefore the very keys the CPU engine's `rotate_by_step` and `relinearize` use, and
//! the results equal the CPU engine's word for word (decision 0510).
//!
//! ```no_run
//! use std::sync::Arc;
//! use fhelium_ckks::cuda::CudaEngine;
//! use fhelium_ckks::{CpuEngine, Preset};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let cpu = Arc::new(CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [1; 32])?);
//! let gpu = CudaEngine::new(cpu.context(), 0)?;
//! let s = gpu.stream()?;
//! let keys = gpu.key_cache(Arc::clone(&cpu))?;
//! let m: Vec<f64> = (0..cpu.num_slots()).map(|j| j as f64 / 8192.0).collect();
//! let ct = gpu.upload_ciphertext(&cpu.encrypt_message(&m)?, &s)?;
//! // First use of step 5: the CPU engine makes the key, the cache uploads it (18 MiB).
//! let r5 = gpu.rotate_by_step(&ct, 5, &keys, &s)?;
//! // Hoisted: one shared ModUp; the key of 5 is found on the device, step 0 is a copy.
//! let rs = gpu.rotate_many_by_steps(&ct, &[5, 0, -1], &keys, &s)?;
//! assert_eq!(keys.rotation_keys(), 2);
//! // The same words as the CPU engine's rotate_by_step with the same keys.
//! let want = cpu.rotate_by_step(&cpu.encrypt_message(&m)?, 5)?;
//! let got = gpu.download_ciphertext(&r5, &s)?;
//! assert_eq!(got.level(), want.level());
//! # let _ = rs;
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use cust::stream::Stream;
use fhelium_residency::ResidencyLocation;
use parking_lot::Mutex;

use super::{
    cuda_location, CkksError, CudaBackendError, CudaEngine, GpuCiphertext, GpuSwitchKey, Result,
};
use crate::engine::CpuEngine;

/// Rotation and relinearization keys of one secret key (a [`CpuEngine`]'s) on one device,
/// made and uploaded on first use (see the module docs). Made by [`CudaEngine::key_cache`];
/// used by [`CudaEngine::rotate_by_step`], [`CudaEngine::rotate_many_by_steps`] and
/// [`CudaEngine::relinearize`]. Rotation keys are found by Galois element, so steps that
/// are equal modulo the slot count share one key. Dropping the cache frees the device keys
/// nobody else holds; [`GpuKeyCache::clear`] frees them in stream order.
#[derive(Debug)]
pub struct GpuKeyCache {
    source: Arc<CpuEngine>,
    device: u32,
    rotation: Mutex<HashMap<u64, Arc<GpuSwitchKey>>>,
    relinearization: Mutex<Option<Arc<GpuSwitchKey>>>,
}

impl GpuKeyCache {
    /// The CPU engine whose secret key makes the keys.
    #[must_use]
    pub fn source(&self) -> &Arc<CpuEngine> {
        &self.source
    }

    /// The device the keys live on (`cuda:N`).
    #[must_use]
    pub fn location(&self) -> ResidencyLocation {
        cuda_location(self.device)
    }

    /// Rotation keys held (relinearization not counted).
    #[must_use]
    pub fn rotation_keys(&self) -> usize {
        self.rotation.lock().len()
    }

    /// Whether the relinearization key has been uploaded.
    #[must_use]
    pub fn has_relinearization_key(&self) -> bool {
        self.relinearization.lock().is_some()
    }

    /// Device bytes of every key held (18 MiB per key at the seed preset).
    #[must_use]
    pub fn nbytes(&self) -> u64 {
        let rot: u64 = self.rotation.lock().values().map(|k| k.nbytes()).sum();
        rot + self
            .relinearization
            .lock()
            .as_ref()
            .map_or(0, |k| k.nbytes())
    }

    /// Lets go of every key: the device memory of keys no caller still holds goes back in
    /// order on `stream` (work already enqueued that reads them finishes first); a key a
    /// caller still holds (from `CudaEngine::cached_*_key`) is freed when that caller drops
    /// it. The CPU engine keeps its own host copies. The cache is empty afterwards even when a
    /// free fails; the first driver error is returned.
    pub fn clear(&self, stream: &Stream) -> Result<()> {
        let rotation: Vec<Arc<GpuSwitchKey>> =
            self.rotation.lock().drain().map(|(_, k)| k).collect();
        let relinearization = self.relinearization.lock().take();
        let mut first = Ok(());
        for key in rotation.into_iter().chain(relinearization) {
            let freed = free_if_last(key, stream);
            if first.is_ok() {
                first = freed;
            }
        }
        first
    }
}

/// Frees `key` in stream order when this is its last holder.
fn free_if_last(key: Arc<GpuSwitchKey>, stream: &Stream) -> Result<()> {
    match Arc::try_unwrap(key) {
        Ok(k) => k.free_async(stream),
        Err(_) => Ok(()),
    }
}

/// Whether a cache of `cache_context` on `cache_device` serves an engine of `context` on
/// `device`: a context mismatch is the CPU rule's error, another device
/// [`CudaBackendError::NotOnDevice`].
fn check_cache_fits(
    op: &'static str,
    device: u32,
    context: u64,
    cache_device: u32,
    cache_context: u64,
) -> Result<()> {
    if cache_context != context {
        return Err(CkksError::ContextMismatch {
            op,
            expected: context,
            actual: cache_context,
        }
        .into());
    }
    if cache_device != device {
        return Err(CudaBackendError::NotOnDevice {
            op,
            expected: cuda_location(device),
            actual: cuda_location(cache_device),
        });
    }
    Ok(())
}

impl CudaEngine {
    /// A key cache on this engine's device whose keys `source`'s secret key makes (the CPU
    /// engine's own cached keys, uploaded on first use). `source` must be of this engine's
    /// context ([`CkksError::ContextMismatch`] otherwise).
    pub fn key_cache(&self, source: Arc<CpuEngine>) -> Result<GpuKeyCache> {
        self.check_context("key_cache", source.context_id())?;
        Ok(GpuKeyCache {
            source,
            device: self.device,
            rotation: Mutex::new(HashMap::new()),
            relinearization: Mutex::new(None),
        })
    }

    fn check_cache(&self, op: &'static str, keys: &GpuKeyCache) -> Result<()> {
        check_cache_fits(
            op,
            self.device,
            self.context_id,
            keys.device,
            keys.source.context_id(),
        )
    }

    /// The rotation key for `step` from `keys`: made by the CPU engine and copied to the
    /// device on `stream` on first use (the cache's lock is held meanwhile, so each key is
    /// made and uploaded once). Steps are taken modulo the slot count; a step ≡ 0 has no key
    /// ([`CkksError::WrongKey`]).
    #[tracing::instrument(
        name = "ckks.cached_rotation_key",
        level = "debug",
        skip_all,
        fields(location = %self.location(), step = step, stream = ?stream.as_inner()),
        err(level = "debug")
    )]
    pub fn cached_rotation_key(
        &self,
        keys: &GpuKeyCache,
        step: i64,
        stream: &Stream,
    ) -> Result<Arc<GpuSwitchKey>> {
        const OP: &str = "cached_rotation_key";
        self.check_cache(OP, keys)?;
        self.cached_rotation(OP, keys, step, stream)
    }

    fn cached_rotation(
        &self,
        op: &'static str,
        keys: &GpuKeyCache,
        step: i64,
        stream: &Stream,
    ) -> Result<Arc<GpuSwitchKey>> {
        let (canonical, g) = keys.source.galois_element_for_step(step);
        if canonical == 0 {
            return Err(CkksError::WrongKey {
                op,
                reason: format!("step {step} is a multiple of the slot count: no rotation key"),
            }
            .into());
        }
        let mut map = keys.rotation.lock();
        if let Some(c) = map.get(&g) {
            return Ok(Arc::clone(c));
        }
        // The source engine keeps its key (for its lifetime, which the cache's `Arc`
        // outlasts), so the copy never outlives what it reads.
        let host = keys.source.rotation_key(canonical)?;
        let device = Arc::new(self.upload_ksk(op, &host.ksk, Some(g), stream)?);
        map.insert(g, Arc::clone(&device));
        Ok(device)
    }

    /// The relinearization key from `keys`: made by the CPU engine and copied to the device
    /// on `stream` on first use.
    #[tracing::instrument(
        name = "ckks.cached_relinearization_key",
        level = "debug",
        skip_all,
        fields(location = %self.location(), stream = ?stream.as_inner()),
        err(level = "debug")
    )]
    pub fn cached_relinearization_key(
        &self,
        keys: &GpuKeyCache,
        stream: &Stream,
    ) -> Result<Arc<GpuSwitchKey>> {
        const OP: &str = "cached_relinearization_key";
        self.check_cache(OP, keys)?;
        self.cached_relinearization(OP, keys, stream)
    }

    fn cached_relinearization(
        &self,
        op: &'static str,
        keys: &GpuKeyCache,
        stream: &Stream,
    ) -> Result<Arc<GpuSwitchKey>> {
        let mut slot = keys.relinearization.lock();
        if let Some(c) = slot.as_ref() {
            return Ok(Arc::clone(c));
        }
        let host = keys.source.relinearization_key()?;
        let device = Arc::new(self.upload_ksk(op, &host.ksk, None, stream)?);
        *slot = Some(Arc::clone(&device));
        Ok(device)
    }

    /// Rotation by `step` with the cached key of `keys` (made and uploaded on first use), as
    /// the CPU engine's [`rotate_by_step`](CpuEngine::rotate_by_step): a step ≡ 0 (modulo the
    /// slot count) gives a copy. Equal to the CPU engine's result word for word when `keys`'
    /// source is that engine. The input is checked before any key is made.
    #[tracing::instrument(
        name = "ckks.rotate_by_step",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = ct.level(),
            bytes = ct.nbytes(),
            step = step,
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn rotate_by_step(
        &self,
        ct: &GpuCiphertext,
        step: i64,
        keys: &GpuKeyCache,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "rotate_by_step";
        self.check_cache(OP, keys)?;
        self.check_rotation_input(OP, ct)?;
        if keys.source.galois_element_for_step(step).0 == 0 {
            return self.drop_rows(OP, ct, 0, stream);
        }
        let key = self.cached_rotation(OP, keys, step, stream)?;
        let g = self.rotation_element(OP, &key)?;
        self.galois_switch(OP, ct, &key, g, None, stream)
    }

    /// Rotations of `ct` by every step of `steps` with the cached keys of `keys`, hoisted as
    /// [`CudaEngine::rotate_many_with_keys`] (one shared ModUp of `c1`); a step ≡ 0 gives a
    /// copy. Result `i` equals `rotate_by_step(ct, steps[i])` (and the CPU engine's
    /// [`rotate_many_by_steps`](CpuEngine::rotate_many_by_steps)) word for word. Every key
    /// is made and uploaded before any rotation is enqueued.
    #[tracing::instrument(
        name = "ckks.rotate_many_by_steps",
        level = "debug",
        skip_all,
        fields(
            location = %self.location(),
            level = ct.level(),
            bytes = ct.nbytes(),
            steps = ?steps,
            stream = ?stream.as_inner(),
        ),
        err(level = "debug")
    )]
    pub fn rotate_many_by_steps(
        &self,
        ct: &GpuCiphertext,
        steps: &[i64],
        keys: &GpuKeyCache,
        stream: &Stream,
    ) -> Result<Vec<GpuCiphertext>> {
        const OP: &str = "rotate_many_by_steps";
        self.check_cache(OP, keys)?;
        self.check_rotation_input(OP, ct)?;
        let held = steps
            .iter()
            .map(|&step| {
                if keys.source.galois_element_for_step(step).0 == 0 {
                    Ok(None)
                } else {
                    self.cached_rotation(OP, keys, step, stream).map(Some)
                }
            })
            .collect::<Result<Vec<Option<Arc<GpuSwitchKey>>>>>()?;
        let refs: Vec<Option<&GpuSwitchKey>> = held.iter().map(Option::as_deref).collect();
        self.rotate_many(OP, ct, &refs, stream)
    }

    /// Relinearization of a 3-component NTT-domain product with the cached relinearization
    /// key of `keys` (made and uploaded on first use), as the CPU engine's
    /// [`relinearize`](CpuEngine::relinearize). The input is checked before the key is made.
    #[tracing::instrument(
        name = "ckks.relinearize",
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
    pub fn relinearize(
        &self,
        ct: &GpuCiphertext,
        keys: &GpuKeyCache,
        stream: &Stream,
    ) -> Result<GpuCiphertext> {
        const OP: &str = "relinearize";
        self.check_cache(OP, keys)?;
        self.check_relinearize_input(OP, ct)?;
        let key = self.cached_relinearization(OP, keys, stream)?;
        self.relinearize_with_key(ct, &key, stream)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_of_another_context_or_device_is_a_typed_error_naming_both() {
        assert!(check_cache_fits("op", 0, 7, 0, 7).is_ok());
        let e = check_cache_fits("rotate_by_step", 0, 7, 0, 9).expect_err("context");
        assert!(
            matches!(
                e,
                CudaBackendError::Ckks(CkksError::ContextMismatch {
                    op: "rotate_by_step",
                    expected: 7,
                    actual: 9
                })
            ),
            "{e}"
        );
        let e = check_cache_fits("relinearize", 0, 7, 1, 7).expect_err("device");
        assert!(
            matches!(
                e,
                CudaBackendError::NotOnDevice {
                    op: "relinearize",
                    expected: ResidencyLocation::Cuda(0),
                    actual: ResidencyLocation::Cuda(1)
                }
            ),
            "{e}"
        );
        let text = e.to_string();
        assert!(text.contains("cuda:1") && text.contains("cuda:0"), "{text}");
    }
}
