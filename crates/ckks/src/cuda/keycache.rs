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

use std::sync::Arc;

use cust::stream::Stream;
use fhelium_residency::ResidencyLocation;
use parking_lot::Mutex;

use super::{
    cuda_location, drv, stream_key, CkksError, CudaBackendError, CudaEngine, GpuCiphertext,
    GpuSecretKey, GpuSwitchKey, Result,
};
use crate::engine::CpuEngine;
use crate::keycache::{trace_evictions, traced_admission, CachedKey, KeyLru};

/// Rotation and relinearization keys of one secret key (a [`CpuEngine`]'s) on one device,
/// made and uploaded on first use (see the module docs). Made by [`CudaEngine::key_cache`];
/// used by [`CudaEngine::rotate_by_step`], [`CudaEngine::rotate_many_by_steps`] and
/// [`CudaEngine::relinearize`]. Rotation keys are found by Galois element, so steps that
/// are equal modulo the slot count share one key.
///
/// **Capacity.** Unbounded by default; [`GpuKeyCache::set_capacity`] bounds the device bytes
/// it holds. A first use then lets the least recently used keys go until the new key fits,
/// and a key larger than the whole capacity is [`CkksError::KeyCacheCapacity`] before any
/// key is made (decision 0530). The source engine's host cache has its own capacity
/// ([`CpuEngine::set_key_cache_capacity`]).
///
/// **Freeing.** A key that leaves (eviction, [`GpuKeyCache::clear`], a lower capacity) and
/// that no caller still holds is freed in stream order on the stream of the call that let it
/// go when every use of it was on that stream; when it was also used on another stream, or
/// handed to a caller by `CudaEngine::cached_*_key` (who may use it anywhere), freeing it
/// waits for the device first (the cache does not know how far other streams are). A key a
/// caller still holds is freed when that caller drops it; so is one that leaves while the same call still needs it (hoisted rotations
/// through a cache smaller than their keys), after waiting for the device at the end of the
/// call. Dropping the cache frees the keys nobody else holds, after waiting for the device.
#[derive(Debug)]
pub struct GpuKeyCache {
    source: Arc<CpuEngine>,
    device: u32,
    keys: Mutex<KeyLru<DeviceKey>>,
    /// The source's secret key on the device when keys are made there
    /// ([`CudaEngine::device_key_cache`]); `None`: the source's host keys are uploaded.
    secret: Option<GpuSecretKey>,
}

/// A CUDA event recorded after the work that made a key. Raw, because cust's `Event` lends
/// its handle to `cuStreamWaitEvent` only by value (once), and a key may be waited for by
/// several streams.
#[derive(Debug)]
struct ReadyEvent(cust::sys::CUevent);

// SAFETY: a CUDA event handle is a plain driver handle, usable from any thread of the process
// (calls after its context is gone return an error, which `Drop` ignores).
unsafe impl Send for ReadyEvent {}
// SAFETY: as for `Send`; the driver serialises calls on one event.
unsafe impl Sync for ReadyEvent {}

/// A driver call's result as the engine's error.
fn raw(op: &'static str, what: &str, rc: cust::sys::CUresult) -> Result<()> {
    if rc == cust::sys::cudaError_enum::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(CudaBackendError::Unsupported {
            op,
            reason: format!("{what} failed: {rc:?}"),
        })
    }
}

impl ReadyEvent {
    /// An event recorded on `stream` now.
    fn record_on(op: &'static str, stream: &Stream) -> Result<Self> {
        let mut ev: cust::sys::CUevent = std::ptr::null_mut();
        // SAFETY: `ev` is a valid out-pointer; the flag is a valid event flag.
        let rc = unsafe {
            cust::sys::cuEventCreate(
                &mut ev,
                cust::sys::CUevent_flags_enum::CU_EVENT_DISABLE_TIMING as u32,
            )
        };
        raw(op, "cuEventCreate", rc)?;
        let event = Self(ev);
        // SAFETY: `event.0` was just created; `stream` is live for the call.
        let rc = unsafe { cust::sys::cuEventRecord(event.0, stream.as_inner()) };
        raw(op, "cuEventRecord", rc)?;
        Ok(event)
    }

    /// Makes `stream`'s later work wait for the event (a stream wait; the host does not block).
    fn wait_on(&self, op: &'static str, stream: &Stream) -> Result<()> {
        // SAFETY: both handles are live (`stream` borrowed for the call, the event owned by
        // `self`); the wait only orders `stream`'s later work after the event.
        let rc = unsafe { cust::sys::cuStreamWaitEvent(stream.as_inner(), self.0, 0) };
        raw(op, "cuStreamWaitEvent", rc)
    }
}

impl Drop for ReadyEvent {
    fn drop(&mut self) {
        // SAFETY: the handle was created by `record_on` and is destroyed once; pending waits on
        // it stay valid (the driver releases the event when they complete).
        let _ = unsafe { cust::sys::cuEventDestroy_v2(self.0) };
    }
}

/// One key on the device, the event recorded after the work that made it, and the streams it
/// was handed out on.
#[derive(Debug)]
struct DeviceKey {
    key: Arc<GpuSwitchKey>,
    /// Recorded on the making stream after the upload or the generation.
    ready: ReadyEvent,
    /// Handles of the streams of the calls that used the key (a handful at most), the making
    /// stream first.
    streams: Vec<usize>,
}

impl DeviceKey {
    /// A key just made on `stream` (the upload or the generation enqueued there).
    fn made_on(op: &'static str, key: GpuSwitchKey, stream: &Stream) -> Result<Self> {
        Ok(Self {
            ready: ReadyEvent::record_on(op, stream)?,
            key: Arc::new(key),
            streams: vec![stream_key(stream)],
        })
    }

    /// The key's device bytes.
    fn nbytes(&self) -> u64 {
        self.key.nbytes()
    }

    /// The key, for a use on `stream`. The first use on a stream other than the making one
    /// makes that stream wait for the key's making (a stream wait, not a host wait): a copy
    /// from pageable memory or a generation may still run when the making call returns.
    fn use_on(&mut self, op: &'static str, stream: &Stream) -> Result<Arc<GpuSwitchKey>> {
        let s = stream_key(stream);
        if !self.streams.contains(&s) {
            self.ready.wait_on(op, stream)?;
            self.streams.push(s);
        }
        Ok(Arc::clone(&self.key))
    }
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
        self.keys.lock().rotation_keys()
    }

    /// Whether the relinearization key is held.
    #[must_use]
    pub fn has_relinearization_key(&self) -> bool {
        self.keys.lock().contains(&CachedKey::Relinearization)
    }

    /// Device bytes of every key held (18 MiB per key at the seed preset); never more than
    /// the capacity. Keys that left and that a caller still holds are the caller's; the
    /// secret key a [`CudaEngine::device_key_cache`] keeps on the device (1.1 MiB at the seed
    /// preset) is not a cached key and is not counted.
    #[must_use]
    pub fn nbytes(&self) -> u64 {
        self.keys.lock().bytes()
    }

    /// The keys held, least recently used first (the order they would leave in).
    #[must_use]
    pub fn keys(&self) -> Vec<CachedKey> {
        self.keys.lock().keys_by_age()
    }

    /// Whether the cache makes its keys on the device ([`CudaEngine::device_key_cache`])
    /// rather than uploading the source engine's host keys ([`CudaEngine::key_cache`]).
    #[must_use]
    pub fn makes_keys_on_device(&self) -> bool {
        self.secret.is_some()
    }

    /// The capacity in device bytes (`None`: unbounded, the default).
    #[must_use]
    pub fn capacity(&self) -> Option<u64> {
        self.keys.lock().capacity()
    }

    /// Bounds the device bytes the cache holds (`None`: unbounded). The least recently used
    /// keys leave until the rest fit, freed as the type's docs say (in order on `stream`
    /// where that is safe). Returns the keys that left, least recently used first; on a
    /// driver error the capacity is set and the keys have left all the same, and the first
    /// error is returned.
    pub fn set_capacity(&self, capacity: Option<u64>, stream: &Stream) -> Result<Vec<CachedKey>> {
        let gone = self.keys.lock().set_capacity(capacity);
        trace_evictions(&self.location(), &gone, DeviceKey::nbytes);
        release(gone, stream)
    }

    /// Lets go of every key, freed as the type's docs say (in order on `stream` where that is
    /// safe: work already enqueued on it that reads them finishes first). The CPU engine
    /// keeps its own host copies. The cache is empty afterwards even when a free fails; the
    /// first driver error is returned.
    pub fn clear(&self, stream: &Stream) -> Result<()> {
        let gone = self.keys.lock().clear();
        trace_evictions(&self.location(), &gone, DeviceKey::nbytes);
        release(gone, stream).map(drop)
    }
}

/// The stream mark of a key handed to a caller (`cached_*_key`): the caller may use it on any
/// stream, so freeing it always waits for the device.
const ANY_STREAM: usize = usize::MAX;

impl GpuKeyCache {
    /// Marks `key` (just returned by `cached_*_key`) as handed out: the caller may enqueue
    /// work reading it on any stream and drop its handle before that work ends, so when the
    /// cache lets it go later, freeing it waits for the device.
    fn handed_out(&self, key: &Arc<GpuSwitchKey>) {
        let mut cache = self.keys.lock();
        if let Some(held) = cache.find_mut(|h| Arc::ptr_eq(&h.key, key)) {
            if !held.streams.contains(&ANY_STREAM) {
                held.streams.push(ANY_STREAM);
            }
        }
    }
}

/// Frees the keys that left a cache during a call on `stream` (see [`GpuKeyCache`]'s docs):
/// in stream order when `stream` is the only stream that used a key, after waiting for the
/// device when another one did, not at all when a caller still holds it. Returns the keys,
/// or the first driver error after freeing all it can.
fn release(gone: Vec<(CachedKey, DeviceKey)>, stream: &Stream) -> Result<Vec<CachedKey>> {
    let own = stream_key(stream);
    let mut first = Ok(());
    let mut keys = Vec::with_capacity(gone.len());
    for (slot, held) in gone {
        keys.push(slot);
        let Ok(key) = Arc::try_unwrap(held.key) else {
            continue;
        };
        if held.streams.iter().all(|&s| s == own) {
            let freed = key.free_async(stream);
            if first.is_ok() {
                first = freed;
            }
        } else {
            // Another stream read it: dropping waits for the device, then frees.
            drop(key);
        }
    }
    first.map(|()| keys)
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
            keys: Mutex::new(KeyLru::default()),
            secret: None,
        })
    }

    /// A key cache like [`CudaEngine::key_cache`] whose keys are made **on the device**
    /// (decision 0531): the source engine's secret key is copied to the device once (1.1 MiB
    /// at the seed preset, on `stream`; zeroed when the cache is dropped), and a first use makes
    /// the key with three launches in one chain graph instead of tens of milliseconds of host
    /// work and an 18 MiB upload. The keys are the source engine's keys word for word (its
    /// key-generation seed gives each key's sampling key), so results equal the CPU engine's
    /// `rotate_by_step` and `relinearize`; the source's own host cache is not used. The
    /// capacity rules are [`GpuKeyCache`]'s.
    pub fn device_key_cache(&self, source: Arc<CpuEngine>, stream: &Stream) -> Result<GpuKeyCache> {
        self.check_context("device_key_cache", source.context_id())?;
        let secret = self.upload_secret_key(source.secret_key(), stream)?;
        // Keys may be made on other streams: the copy (from pageable memory) must be done.
        drv("device_key_cache", stream.synchronize())?;
        Ok(GpuKeyCache {
            source,
            device: self.device,
            keys: Mutex::new(KeyLru::default()),
            secret: Some(secret),
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
        let key = self.cached_rotation(OP, keys, step, stream)?;
        keys.handed_out(&key);
        Ok(key)
    }

    fn cached_rotation(
        &self,
        op: &'static str,
        keys: &GpuKeyCache,
        step: i64,
        stream: &Stream,
    ) -> Result<Arc<GpuSwitchKey>> {
        let Some(
            slot @ CachedKey::Rotation {
                galois_element: g,
                step: canonical,
            },
        ) = keys.source.rotation_slot(step)
        else {
            return Err(CkksError::WrongKey {
                op,
                reason: format!("step {step} is a multiple of the slot count: no rotation key"),
            }
            .into());
        };
        self.cached_key(op, keys, slot, stream, || match &keys.secret {
            Some(sk) => {
                let sampling = keys.source.switch_key_sampling_key(g);
                self.generate_switch_key(op, sk, g, &sampling, stream)
            }
            None => {
                let host = keys.source.cached_rotation_key(op, canonical)?;
                self.upload_ksk(op, &host.ksk, Some(g), stream)
            }
        })
    }

    /// Fails with [`CkksError::KeyCacheCapacity`] when `slot` is not held by `cache` and a
    /// key cannot fit its capacity at all. Changes nothing.
    fn check_admissible(
        &self,
        op: &'static str,
        keys: &GpuKeyCache,
        cache: &KeyLru<DeviceKey>,
        slot: CachedKey,
    ) -> Result<()> {
        if cache.contains(&slot) {
            return Ok(());
        }
        let bytes = keys.source.switch_key_bytes();
        cache.check_fits(bytes).map_err(|capacity| {
            CkksError::KeyCacheCapacity {
                op,
                key: slot,
                location: self.location(),
                bytes,
                capacity,
            }
            .into()
        })
    }

    /// The key of `slot` in `keys` for a use on `stream`, or a new one from `make` (made on
    /// the device, or the source engine's host key uploaded, on `stream`) admitted to the
    /// cache. The cache's lock is held throughout, so each key is made once. Keys that leave
    /// to make room are freed as [`GpuKeyCache`]'s docs say.
    fn cached_key(
        &self,
        op: &'static str,
        keys: &GpuKeyCache,
        slot: CachedKey,
        stream: &Stream,
        make: impl FnOnce() -> Result<GpuSwitchKey>,
    ) -> Result<Arc<GpuSwitchKey>> {
        let mut cache = keys.keys.lock();
        if let Some(held) = cache.get_mut(&slot) {
            return held.use_on(op, stream);
        }
        self.check_admissible(op, keys, &cache, slot)?;
        let held = DeviceKey::made_on(op, make()?, stream)?;
        let key = Arc::clone(&held.key);
        let gone = traced_admission(
            self.location(),
            slot,
            key.nbytes(),
            DeviceKey::nbytes,
            || {
                let gone = cache.insert(slot, held, key.nbytes());
                (gone, cache.bytes())
            },
        );
        drop(cache);
        release(gone, stream)?;
        Ok(key)
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
        let key = self.cached_relinearization(OP, keys, stream)?;
        keys.handed_out(&key);
        Ok(key)
    }

    fn cached_relinearization(
        &self,
        op: &'static str,
        keys: &GpuKeyCache,
        stream: &Stream,
    ) -> Result<Arc<GpuSwitchKey>> {
        self.cached_key(
            op,
            keys,
            CachedKey::Relinearization,
            stream,
            || match &keys.secret {
                Some(sk) => {
                    let sampling = keys.source.switch_key_sampling_key(0);
                    self.generate_switch_key(op, sk, 0, &sampling, stream)
                }
                None => {
                    let host = keys.source.cached_relinearization_key(op)?;
                    self.upload_ksk(op, &host.ksk, None, stream)
                }
            },
        )
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
        // A key that can never fit the cache fails the call before any key is made.
        {
            let cache = keys.keys.lock();
            for slot in steps
                .iter()
                .filter_map(|&step| keys.source.rotation_slot(step))
            {
                self.check_admissible(OP, keys, &cache, slot)?;
            }
        }
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
