//! The CUDA backend (feature `cuda`), on `cust` 0.3.2 and its raw driver bindings `cust::sys`.
//!
//! - Devices are opened through their **primary contexts** (`cuDevicePrimaryCtxRetain`, via
//!   `cust::context::Context::new`); every driver call first makes the device's context current
//!   on the calling thread (`cuCtxSetCurrent`, cheap), so buffers, streams and events may be used
//!   from any thread.
//! - Device buffers come from the device's default **stream-ordered memory pool**
//!   (`cuMemAllocAsync` / `cuMemFreeAsync`) with its release threshold raised to `u64::MAX`, so
//!   freed blocks stay in the pool instead of going back to the driver; or, in
//!   [`crate::DeviceAllocMode::Plain`], from `cuMemAlloc` / `cuMemFree`.
//! - Pinned host buffers are page-locked (`cuMemAllocHost`).
//! - PTX modules load once per device and name ([`Memory::load_module`]); kernels are looked up
//!   by name ([`Module::kernel`]) and launched with [`Kernel::launch`], which checks everything
//!   it can (stream device, geometry, buffer devices) before the driver sees the call.
//!
//! All `unsafe` of the crate is in this module, each block with a `// SAFETY:` comment.

use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::fmt;
use std::sync::Arc;

use cust::device::{Device, DeviceAttribute};
use cust::sys as cu;
use fhelium_residency::ResidencyLocation;
use parking_lot::Mutex;

use crate::buffer::{Buffer, Dst, Src, Storage};
use crate::error::MemoryError;
use crate::memory::{DeviceAllocMode, DeviceInfo, Memory};
use crate::peer::{PeerLink, PeerMode, PeerPath};
use crate::stream::{Event, Stream};

/// The driver's name and description of a result code.
fn describe(r: cu::CUresult) -> String {
    let mut text: *const std::os::raw::c_char = std::ptr::null();
    // SAFETY: cuGetErrorString writes a pointer to a static NUL-terminated string (or leaves
    // it null for unknown codes); we only read it when non-null.
    let ok = unsafe { cu::cuGetErrorString(r, &mut text) } == cu::CUresult::CUDA_SUCCESS;
    if ok && !text.is_null() {
        // SAFETY: non-null pointers from cuGetErrorString are static C strings.
        let s = unsafe { CStr::from_ptr(text) }.to_string_lossy();
        format!("{r:?}: {s}")
    } else {
        format!("{r:?}")
    }
}

fn check(
    op: &'static str,
    location: ResidencyLocation,
    r: cu::CUresult,
) -> Result<(), MemoryError> {
    if r == cu::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(MemoryError::Cuda {
            op,
            location,
            message: describe(r),
        })
    }
}

/// One opened device: its primary context and loaded modules.
pub(crate) struct CudaDevice {
    index: u8,
    device: Device,
    ctx: cust::context::Context,
    modules: Mutex<HashMap<String, Module>>,
}

// SAFETY: the primary context handle is usable from any thread once made current there,
// which every method does (`bind`); the module map is behind a mutex.
unsafe impl Send for CudaDevice {}
// SAFETY: see `Send`; no method hands out thread-affine state.
unsafe impl Sync for CudaDevice {}

impl CudaDevice {
    fn location(&self) -> ResidencyLocation {
        ResidencyLocation::Cuda(self.index)
    }

    /// Makes this device's primary context current on the calling thread.
    fn bind(&self, op: &'static str) -> Result<(), MemoryError> {
        // SAFETY: the context is retained for as long as `self` lives.
        let r = unsafe { cu::cuCtxSetCurrent(self.ctx.as_raw()) };
        check(op, self.location(), r)
    }
}

/// The opened CUDA devices.
pub(crate) struct CudaBackend {
    devices: Vec<Arc<CudaDevice>>,
    mode: DeviceAllocMode,
}

impl CudaBackend {
    pub(crate) fn open(mode: DeviceAllocMode) -> Result<Self, MemoryError> {
        let unavailable = |what: &str, e: cust::error::CudaError| MemoryError::CudaUnavailable {
            reason: format!("{what}: {e}"),
        };
        cust::init(cust::CudaFlags::empty()).map_err(|e| unavailable("cuInit", e))?;
        let n = Device::num_devices().map_err(|e| unavailable("cuDeviceGetCount", e))?;
        if n == 0 {
            return Err(MemoryError::CudaUnavailable {
                reason: "the driver reports no CUDA device".to_owned(),
            });
        }
        let n = n.min(u32::from(fhelium_residency::MAX_DEVICE_INDEX) + 1);
        let mut devices = Vec::new();
        for i in 0..n {
            let device = Device::get_device(i).map_err(|e| unavailable("cuDeviceGet", e))?;
            let ctx = cust::context::Context::new(device)
                .map_err(|e| unavailable("cuDevicePrimaryCtxRetain", e))?;
            #[allow(clippy::cast_possible_truncation)]
            let dev = CudaDevice {
                index: i as u8,
                device,
                ctx,
                modules: Mutex::new(HashMap::new()),
            };
            dev.bind("open")?;
            if mode == DeviceAllocMode::Pool {
                let mut pool: cu::CUmemoryPool = std::ptr::null_mut();
                // SAFETY: out-pointer to a local; the device handle is valid.
                let r = unsafe { cu::cuDeviceGetDefaultMemPool(&mut pool, device.as_raw()) };
                check("cuDeviceGetDefaultMemPool", dev.location(), r)?;
                let mut threshold: u64 = u64::MAX;
                // SAFETY: the release threshold attribute takes a pointer to a u64.
                let r = unsafe {
                    cu::cuMemPoolSetAttribute(
                        pool,
                        cu::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                        (&raw mut threshold).cast::<c_void>(),
                    )
                };
                check("cuMemPoolSetAttribute", dev.location(), r)?;
            }
            devices.push(Arc::new(dev));
        }
        Ok(Self { devices, mode })
    }

    /// Queries peer access for every ordered pair of devices and, in [`PeerMode::Auto`],
    /// enables it in both directions where both directions are possible
    /// (`cuDeviceCanAccessPeer`, `cuCtxEnablePeerAccess`; "already enabled" counts as enabled,
    /// since primary contexts are shared by every user in the process). A pair that cannot be
    /// enabled is recorded as staged, not an error. Multicast objects are never created.
    pub(crate) fn open_peers(&self, mode: PeerMode) -> Result<Vec<PeerLink>, MemoryError> {
        let n = self.devices.len();
        let mut can = vec![vec![false; n]; n];
        for (i, a) in self.devices.iter().enumerate() {
            for (j, b) in self.devices.iter().enumerate() {
                let mut flag: std::os::raw::c_int = 0;
                // SAFETY: out-pointer to a local; both device handles are valid.
                let r = unsafe {
                    cu::cuDeviceCanAccessPeer(&mut flag, a.device.as_raw(), b.device.as_raw())
                };
                // An error (e.g. for a device and itself on some drivers) means "no".
                can[i][j] = r == cu::CUresult::CUDA_SUCCESS && flag != 0;
            }
        }
        let mut enabled = vec![vec![false; n]; n];
        if mode == PeerMode::Auto {
            for i in 0..n {
                for j in (i + 1)..n {
                    if !(can[i][j] && can[j][i]) {
                        continue;
                    }
                    let ok = self.enable_peer(i, j) && self.enable_peer(j, i);
                    enabled[i][j] = ok;
                    enabled[j][i] = ok;
                }
            }
        }
        let mut links = Vec::with_capacity(n * n);
        for (i, a) in self.devices.iter().enumerate() {
            for (j, b) in self.devices.iter().enumerate() {
                let path = if i == j {
                    PeerPath::SameDevice
                } else if enabled[i][j] {
                    PeerPath::Direct
                } else {
                    PeerPath::Staged
                };
                links.push(PeerLink {
                    from: a.location(),
                    to: b.location(),
                    // Data moves a -> b: b's context reads or a's writes peer memory.
                    can_access_peer: can[j][i],
                    peer_enabled: enabled[i][j],
                    path,
                });
                tracing::debug!(from = %a.location(), to = %b.location(), %path, "peer link");
            }
        }
        Ok(links)
    }

    /// Lets device `i`'s primary context access device `j`'s memory. True when enabled (or
    /// already enabled).
    fn enable_peer(&self, i: usize, j: usize) -> bool {
        let (a, b) = (&self.devices[i], &self.devices[j]);
        if a.bind("cuCtxEnablePeerAccess").is_err() {
            return false;
        }
        // SAFETY: `a`'s context is current; `b`'s context is retained for the backend's life.
        let r = unsafe { cu::cuCtxEnablePeerAccess(b.ctx.as_raw(), 0) };
        match r {
            cu::CUresult::CUDA_SUCCESS | cu::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {
                true
            }
            other => {
                tracing::warn!(
                    from = %a.location(),
                    to = %b.location(),
                    error = %describe(other),
                    "peer access could not be enabled; copies take the staged path"
                );
                false
            }
        }
    }

    #[allow(clippy::cast_possible_truncation)]
    pub(crate) fn device_count(&self) -> u8 {
        self.devices.len() as u8
    }

    pub(crate) fn pooled(&self) -> bool {
        self.mode == DeviceAllocMode::Pool
    }

    fn device(&self, index: u8) -> Result<&Arc<CudaDevice>, MemoryError> {
        self.devices
            .get(usize::from(index))
            .ok_or_else(|| MemoryError::LocationUnavailable {
                op: "cuda",
                location: ResidencyLocation::Cuda(index),
                reason: format!("{} CUDA device(s) are visible", self.devices.len()),
            })
    }

    pub(crate) fn device_info(&self, index: u8) -> Result<DeviceInfo, MemoryError> {
        let dev = self.device(index)?;
        let loc = dev.location();
        let err = |op: &'static str| {
            move |e: cust::error::CudaError| MemoryError::Cuda {
                op,
                location: loc,
                message: e.to_string(),
            }
        };
        let name = dev.device.name().map_err(err("cuDeviceGetName"))?;
        let total = dev.device.total_memory().map_err(err("cuDeviceTotalMem"))?;
        let major = dev
            .device
            .get_attribute(DeviceAttribute::ComputeCapabilityMajor)
            .map_err(err("cuDeviceGetAttribute"))?;
        let minor = dev
            .device
            .get_attribute(DeviceAttribute::ComputeCapabilityMinor)
            .map_err(err("cuDeviceGetAttribute"))?;
        Ok(DeviceInfo {
            location: loc,
            name,
            total_bytes: total as u64,
            compute_capability: Some((major.unsigned_abs(), minor.unsigned_abs())),
        })
    }

    pub(crate) fn new_stream(&self, index: u8) -> Result<CudaStream, MemoryError> {
        let dev = self.device(index)?;
        dev.bind("cuStreamCreate")?;
        let mut raw: cu::CUstream = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the context is current.
        let r = unsafe {
            cu::cuStreamCreate(&mut raw, cu::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
        };
        check("cuStreamCreate", dev.location(), r)?;
        Ok(CudaStream {
            wrapped: None,
            raw,
            dev: Arc::clone(dev),
        })
    }

    /// Takes over `stream`, a `cust` stream of device `index`'s primary context.
    pub(crate) fn wrap_stream(
        &self,
        index: u8,
        stream: cust::stream::Stream,
    ) -> Result<CudaStream, MemoryError> {
        let dev = self.device(index)?;
        let loc = dev.location();
        dev.bind("cuStreamGetCtx")?;
        let raw = stream.as_inner();
        let mut ctx: cu::CUcontext = std::ptr::null_mut();
        // SAFETY: `raw` is the live handle of `stream`, owned here; out-pointer to a local.
        let r = unsafe { cu::cuStreamGetCtx(raw, &mut ctx) };
        check("cuStreamGetCtx", loc, r)?;
        if ctx != dev.ctx.as_raw() {
            return Err(MemoryError::StreamMismatch {
                op: "wrap_stream",
                stream: loc,
                expected: format!("a stream of {loc}'s primary context"),
            });
        }
        Ok(CudaStream {
            wrapped: Some(stream),
            raw,
            dev: Arc::clone(dev),
        })
    }

    pub(crate) fn alloc_pinned(&self, words: usize) -> Result<PinnedAlloc, MemoryError> {
        let dev = self.device(0)?;
        if words == 0 {
            return Ok(PinnedAlloc {
                ptr: std::ptr::NonNull::dangling().as_ptr(),
                words: 0,
                dev: Arc::clone(dev),
            });
        }
        dev.bind("cuMemAllocHost")?;
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; size is words * 8, checked by the caller.
        let r = unsafe { cu::cuMemAllocHost_v2(&mut p, words * 8) };
        if r == cu::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            return Err(MemoryError::OutOfMemory {
                op: "cuMemAllocHost",
                location: ResidencyLocation::PinnedHost,
                requested_bytes: words as u64 * 8,
                available_bytes: 0,
            });
        }
        check("cuMemAllocHost", ResidencyLocation::PinnedHost, r)?;
        // Page-locked memory from the driver is uninitialised; zero it like the other host
        // locations so `host_slice` never exposes uninitialised words.
        // SAFETY: `p` points to `words * 8` writable bytes just allocated.
        unsafe { std::ptr::write_bytes(p.cast::<u64>(), 0, words) };
        Ok(PinnedAlloc {
            ptr: p.cast::<u64>(),
            words,
            dev: Arc::clone(dev),
        })
    }

    /// A device allocation of `words` words: pooled (ordered on `stream`, then synchronised
    /// when `sync` so the buffer is usable from any stream) or plain.
    pub(crate) fn alloc_device(
        &self,
        index: u8,
        words: usize,
        stream: Option<&Stream>,
        sync: bool,
    ) -> Result<DeviceAlloc, MemoryError> {
        let dev = self.device(index)?;
        let loc = dev.location();
        let bytes = words * 8;
        let pool_stream = if self.pooled() { stream } else { None };
        if words == 0 {
            return Ok(DeviceAlloc {
                ptr: 0,
                dev: Arc::clone(dev),
                free_on: None,
                adopted: false,
            });
        }
        dev.bind("alloc")?;
        let mut ptr: cu::CUdeviceptr = 0;
        let (op, r) = match pool_stream.and_then(Stream::cuda) {
            Some(s) => {
                // SAFETY: out-pointer to a local; the stream belongs to this device's context.
                let r = unsafe { cu::cuMemAllocAsync(&mut ptr, bytes, s.raw) };
                ("cuMemAllocAsync", r)
            }
            None => {
                // SAFETY: out-pointer to a local; the context is current.
                ("cuMemAlloc", unsafe { cu::cuMemAlloc_v2(&mut ptr, bytes) })
            }
        };
        if r == cu::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            let (mut free, mut total) = (0usize, 0usize);
            // SAFETY: out-pointers to locals; best effort.
            let _ = unsafe { cu::cuMemGetInfo_v2(&mut free, &mut total) };
            return Err(MemoryError::OutOfMemory {
                op,
                location: loc,
                requested_bytes: bytes as u64,
                available_bytes: free as u64,
            });
        }
        check(op, loc, r)?;
        let free_on = pool_stream.filter(|s| s.cuda().is_some()).cloned();
        let alloc = DeviceAlloc {
            ptr,
            dev: Arc::clone(dev),
            free_on,
            adopted: false,
        };
        if sync {
            if let Some(s) = alloc.free_on.as_ref().and_then(Stream::cuda) {
                s.synchronize(loc)?;
            }
        }
        Ok(alloc)
    }
}

/// A CUDA stream, destroyed on drop: one this layer created (non-blocking), or a `cust`
/// stream handed over by [`Memory::wrap_stream`] (kept, and destroyed by `cust`).
pub(crate) struct CudaStream {
    // Field order = drop order: a wrapped stream is destroyed while `dev` (and with it the
    // context) is still alive, with the context bound by `Drop::drop`.
    wrapped: Option<cust::stream::Stream>,
    raw: cu::CUstream,
    dev: Arc<CudaDevice>,
}

// SAFETY: CUDA stream handles may be used from any thread (with the context current, which
// every method ensures).
unsafe impl Send for CudaStream {}
// SAFETY: see `Send`; the driver serialises concurrent use of one stream.
unsafe impl Sync for CudaStream {}

impl Drop for CudaStream {
    fn drop(&mut self) {
        // A wrapped `cust` stream is destroyed by its own drop, after this one (with the
        // context bound here still current).
        if self.dev.bind("cuStreamDestroy").is_ok() && self.wrapped.is_none() {
            // SAFETY: the stream was created by us and is destroyed once; pending work
            // still completes (the driver defers the release).
            let _ = unsafe { cu::cuStreamDestroy_v2(self.raw) };
        }
    }
}

impl CudaStream {
    /// The raw stream handle, for launches.
    pub(crate) fn raw(&self) -> cu::CUstream {
        self.raw
    }

    /// The `cust` stream this one wraps, if it was handed over by [`Memory::wrap_stream`].
    pub(crate) fn as_cust(&self) -> Option<&cust::stream::Stream> {
        self.wrapped.as_ref()
    }

    pub(crate) fn record(
        &self,
        loc: ResidencyLocation,
        timing: bool,
    ) -> Result<CudaEvent, MemoryError> {
        self.dev.bind("cuEventCreate")?;
        let flags = if timing {
            cu::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            cu::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        let mut ev: cu::CUevent = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the context is current.
        let r = unsafe { cu::cuEventCreate(&mut ev, flags as u32) };
        check("cuEventCreate", loc, r)?;
        let event = CudaEvent {
            raw: ev,
            dev: Arc::clone(&self.dev),
        };
        // SAFETY: both handles are live and belong to this context.
        let r = unsafe { cu::cuEventRecord(event.raw, self.raw) };
        check("cuEventRecord", loc, r)?;
        Ok(event)
    }

    pub(crate) fn wait(&self, ev: &CudaEvent, loc: ResidencyLocation) -> Result<(), MemoryError> {
        self.dev.bind("cuStreamWaitEvent")?;
        // SAFETY: both handles are live (the event is kept alive by its owner for the call;
        // the driver tracks the dependency after it).
        let r = unsafe { cu::cuStreamWaitEvent(self.raw, ev.raw, 0) };
        check("cuStreamWaitEvent", loc, r)
    }

    pub(crate) fn synchronize(&self, loc: ResidencyLocation) -> Result<(), MemoryError> {
        self.dev.bind("cuStreamSynchronize")?;
        // SAFETY: the stream handle is live.
        let r = unsafe { cu::cuStreamSynchronize(self.raw) };
        check("cuStreamSynchronize", loc, r)
    }
}

/// A CUDA event, destroyed on drop.
pub(crate) struct CudaEvent {
    raw: cu::CUevent,
    dev: Arc<CudaDevice>,
}

// SAFETY: event handles may be queried and waited on from any thread.
unsafe impl Send for CudaEvent {}
// SAFETY: see `Send`.
unsafe impl Sync for CudaEvent {}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        if self.dev.bind("cuEventDestroy").is_ok() {
            // SAFETY: created by us, destroyed once; the driver defers the release of an
            // event still pending.
            let _ = unsafe { cu::cuEventDestroy_v2(self.raw) };
        }
    }
}

impl CudaEvent {
    pub(crate) fn query(&self, loc: ResidencyLocation) -> Result<bool, MemoryError> {
        self.dev.bind("cuEventQuery")?;
        // SAFETY: the event handle is live.
        let r = unsafe { cu::cuEventQuery(self.raw) };
        match r {
            cu::CUresult::CUDA_SUCCESS => Ok(true),
            cu::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
            other => check("cuEventQuery", loc, other).map(|()| false),
        }
    }

    pub(crate) fn synchronize(&self, loc: ResidencyLocation) -> Result<(), MemoryError> {
        self.dev.bind("cuEventSynchronize")?;
        // SAFETY: the event handle is live.
        let r = unsafe { cu::cuEventSynchronize(self.raw) };
        check("cuEventSynchronize", loc, r)
    }

    pub(crate) fn elapsed_ms(
        &self,
        end: &CudaEvent,
        loc: ResidencyLocation,
    ) -> Result<f32, MemoryError> {
        self.dev.bind("cuEventElapsedTime")?;
        let mut ms = 0f32;
        // SAFETY: out-pointer to a local; both events are live.
        let r = unsafe { cu::cuEventElapsedTime(&mut ms, self.raw, end.raw) };
        check("cuEventElapsedTime", loc, r)?;
        Ok(ms)
    }
}

/// Page-locked host memory, freed on drop.
pub(crate) struct PinnedAlloc {
    ptr: *mut u64,
    words: usize,
    dev: Arc<CudaDevice>,
}

// SAFETY: the allocation is plain host memory owned uniquely by this value.
unsafe impl Send for PinnedAlloc {}
// SAFETY: shared access is read-only through `as_slice`.
unsafe impl Sync for PinnedAlloc {}

impl Drop for PinnedAlloc {
    fn drop(&mut self) {
        if self.words > 0 && self.dev.bind("cuMemFreeHost").is_ok() {
            // SAFETY: allocated by cuMemAllocHost, freed once; the owning Buffer has waited
            // for any in-flight copy (its fence) before dropping us.
            let _ = unsafe { cu::cuMemFreeHost(self.ptr.cast::<c_void>()) };
        }
    }
}

impl PinnedAlloc {
    pub(crate) fn as_ptr(&self) -> *const u64 {
        self.ptr
    }

    pub(crate) fn as_slice(&self) -> &[u64] {
        // SAFETY: `ptr` is valid (or dangling with 0 words) for `words` initialised u64s
        // (zeroed at allocation); the owning Buffer fences in-flight copies before lending it.
        unsafe { std::slice::from_raw_parts(self.ptr, self.words) }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [u64] {
        // SAFETY: as `as_slice`, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.words) }
    }
}

/// Device memory, returned to the pool (or freed) on drop.
pub(crate) struct DeviceAlloc {
    ptr: cu::CUdeviceptr,
    dev: Arc<CudaDevice>,
    /// Pool allocations are freed in order on the stream they were allocated on.
    free_on: Option<Stream>,
    /// Adopted memory (`Memory::adopt_device_words`), possibly from a stream-ordered pool on
    /// no stream of ours: the device is synchronised before `cuMemFree`, which would not wait.
    adopted: bool,
}

impl Drop for DeviceAlloc {
    fn drop(&mut self) {
        if self.ptr == 0 || self.dev.bind("free").is_err() {
            return;
        }
        match self.free_on.as_ref().and_then(Stream::cuda) {
            // SAFETY: allocated by cuMemAllocAsync on this stream; freed once, in stream
            // order after the work already enqueued there.
            Some(s) => {
                let _ = unsafe { cu::cuMemFreeAsync(self.ptr, s.raw) };
            }
            None => {
                if self.adopted {
                    // SAFETY: the context is current (bound above); no arguments.
                    let _ = unsafe { cu::cuCtxSynchronize() };
                }
                // SAFETY: allocated by cuMemAlloc (which cuMemFree waits for), or adopted and
                // the device synchronised above; freed once.
                let _ = unsafe { cu::cuMemFree_v2(self.ptr) };
            }
        }
    }
}

impl DeviceAlloc {
    pub(crate) fn ptr(&self) -> u64 {
        self.ptr
    }

    /// Orders the coming free after `fences` (the buffer's pending producers): on the GPU
    /// when the memory is freed in stream order (its stream waits on them), else on the host.
    pub(crate) fn order_free_after(&self, fences: &[Event]) {
        let stream = self.free_on.as_ref().filter(|s| s.cuda().is_some());
        for f in fences {
            let ordered = match stream {
                Some(s) if f.stream_id() == s.id() => true,
                Some(s) => s.wait_event(f).is_ok(),
                None => false,
            };
            if !ordered {
                // Errors leave nothing to do: the context is then broken.
                let _ = f.synchronize();
            }
        }
    }
}

// ------------------------------------------------------------------------------------------
// copies

enum End {
    Host(*const u64),
    HostMut(*mut u64),
    Device(cu::CUdeviceptr, Arc<CudaDevice>),
}

/// A CUDA copy between any host memory (pageable, pinned, simulated) and a CUDA device, or
/// between two CUDA devices. `stream` is a CUDA stream of an endpoint (resolved by the caller).
pub(crate) fn copy(
    mem: &Memory,
    src: Src<'_>,
    mut dst: Dst<'_>,
    len: usize,
    stream: Option<&Stream>,
) -> Result<Option<Event>, MemoryError> {
    let to = match &dst {
        Dst::Buf(b, _) => b.location(),
        Dst::Slice(_) => ResidencyLocation::PageableHost,
    };
    let stream = stream.ok_or(MemoryError::StreamMismatch {
        op: "copy",
        stream: to,
        expected: "a CUDA stream of an endpoint".to_owned(),
    })?;
    let cs = stream.cuda().ok_or(MemoryError::BackendMismatch {
        op: "copy",
        a: stream.location(),
        b: to,
    })?;
    let loc = stream.location();
    let _ = mem;
    // The endpoints' pending events (producers, in-flight copies on page-locked memory) were
    // waited on by `copy_engine`.
    let s = match src {
        Src::Slice(s) => End::Host(s.as_ptr()),
        Src::Buf(b, start) => match &b.storage {
            // SAFETY (pointer arithmetic): `start + len <= words` was checked by the caller.
            Storage::Host(v) => End::Host(unsafe { v.as_ptr().add(start) }),
            // SAFETY: as above.
            Storage::Locked(p) => End::Host(unsafe { p.as_ptr().add(start) }),
            Storage::Device(d) => End::Device(d.ptr + start as u64 * 8, Arc::clone(&d.dev)),
        },
    };
    let pinned_src = matches!(src, Src::Buf(b, _) if matches!(b.storage, Storage::Locked(_)));
    let pinned_dst = matches!(&dst, Dst::Buf(b, _) if matches!(b.storage, Storage::Locked(_)));
    let d = match &mut dst {
        Dst::Slice(s) => End::HostMut(s.as_mut_ptr()),
        Dst::Buf(b, start) => match &mut b.storage {
            // SAFETY (pointer arithmetic): `start + len <= words` was checked by the caller.
            Storage::Host(v) => End::HostMut(unsafe { v.as_mut_ptr().add(*start) }),
            // SAFETY: as above.
            Storage::Locked(p) => End::HostMut(unsafe { p.ptr.add(*start) }),
            Storage::Device(dv) => End::Device(dv.ptr + *start as u64 * 8, Arc::clone(&dv.dev)),
        },
    };
    let bytes = len * 8;
    cs.dev.bind("copy")?;
    let (op, r) = match (s, d) {
        (End::Host(h), End::Device(p, _)) => (
            "cuMemcpyHtoDAsync",
            // SAFETY: `h` is valid for `bytes` bytes for the call; pageable sources are
            // consumed (staged) before the call returns, page-locked sources are kept alive
            // and unmodified by the fence recorded below.
            unsafe { cu::cuMemcpyHtoDAsync_v2(p, h.cast::<c_void>(), bytes, cs.raw) },
        ),
        (End::Device(p, _), End::HostMut(h)) => (
            "cuMemcpyDtoHAsync",
            // SAFETY: `h` is valid and exclusively borrowed for `bytes` bytes; a pageable
            // destination is written before the call returns, a page-locked one is fenced.
            unsafe { cu::cuMemcpyDtoHAsync_v2(h.cast::<c_void>(), p, bytes, cs.raw) },
        ),
        (End::Device(sp, sdev), End::Device(dp, ddev)) => {
            if Arc::ptr_eq(&sdev, &ddev) {
                (
                    "cuMemcpyDtoDAsync",
                    // SAFETY: both ranges are live device memory of `bytes` bytes.
                    unsafe { cu::cuMemcpyDtoDAsync_v2(dp, sp, bytes, cs.raw) },
                )
            } else {
                (
                    "cuMemcpyPeerAsync",
                    // SAFETY: both ranges are live device memory in their contexts.
                    unsafe {
                        cu::cuMemcpyPeerAsync(
                            dp,
                            ddev.ctx.as_raw(),
                            sp,
                            sdev.ctx.as_raw(),
                            bytes,
                            cs.raw,
                        )
                    },
                )
            }
        }
        (End::Host(h), End::HostMut(o)) => {
            // Not reached (host-to-host copies never come here), but correct anyway.
            // SAFETY: distinct live allocations of `len` words (one is `&mut`).
            unsafe { std::ptr::copy_nonoverlapping(h, o, len) };
            ("memcpy", cu::CUresult::CUDA_SUCCESS)
        }
        _ => unreachable_pair(loc)?,
    };
    check(op, loc, r)?;
    let ev = stream.record_event()?;
    if pinned_src {
        if let Src::Buf(b, _) = src {
            b.set_fence(&ev);
        }
    }
    if pinned_dst {
        if let Dst::Buf(b, _) = &dst {
            b.set_fence(&ev);
        }
    }
    Ok(Some(ev))
}

fn unreachable_pair(loc: ResidencyLocation) -> Result<(&'static str, cu::CUresult), MemoryError> {
    Err(MemoryError::Cuda {
        op: "copy",
        location: loc,
        message: "unsupported endpoint pair".to_owned(),
    })
}

// ------------------------------------------------------------------------------------------
// modules and kernels

struct ModuleInner {
    raw: cu::CUmodule,
    name: String,
    ptx_hash: u64,
    dev: Arc<CudaDevice>,
}

// SAFETY: module handles are context-wide and usable from any thread with the context current.
unsafe impl Send for ModuleInner {}
// SAFETY: see `Send`; the module is immutable after loading.
unsafe impl Sync for ModuleInner {}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        if self.dev.bind("cuModuleUnload").is_ok() {
            // SAFETY: loaded by us, unloaded once, after every Kernel (which holds an Arc to
            // us) is gone.
            let _ = unsafe { cu::cuModuleUnload(self.raw) };
        }
    }
}

/// A PTX module loaded on one CUDA device. Cloning shares it.
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Module({:?} on {})", self.inner.name, self.location())
    }
}

fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Memory {
    /// Takes ownership of `words` words of device memory that other code of this process
    /// allocated on CUDA device `loc` (its primary context), without a copy: the returned
    /// buffer counts in `loc`'s [`crate::LocationUsage`] from now on and, when dropped, waits
    /// for the device and frees the memory with `cuMemFree` (which alone does not wait for
    /// stream-ordered pool memory). This is how another library's device results
    /// (the CKKS engine's) become values the residency manager can place.
    ///
    /// # Safety
    /// `ptr` must be the start of a live allocation of at least `words * 8` bytes made on
    /// `loc`'s primary context by `cuMemAlloc`, `cuMemAllocAsync` or
    /// `cuMemAllocFromPoolAsync`, owned by nobody else from now on (the caller must not free
    /// it), and every write to it must have completed (e.g. its stream synchronised), since
    /// other streams may read the buffer at once.
    ///
    /// # Errors
    /// [`MemoryError::LocationUnavailable`] when `loc` is not a CUDA device of this `Memory`,
    /// [`MemoryError::SizeOverflow`], [`MemoryError::InjectedAllocFailure`]. On error the
    /// caller still owns `ptr`.
    pub unsafe fn adopt_device_words(
        &self,
        loc: &ResidencyLocation,
        ptr: u64,
        words: usize,
    ) -> Result<Buffer, MemoryError> {
        const OP: &str = "adopt_device_words";
        let (state, dev, bytes) = self.adoption_target(OP, loc, words)?;
        state.debit_for(bytes, || Ok(()))?;
        let alloc = DeviceAlloc {
            ptr,
            dev,
            free_on: None,
            adopted: true,
        };
        Ok(Buffer::new(
            *loc,
            words,
            Storage::Device(alloc),
            Arc::clone(state),
        ))
    }

    /// What an adoption of `words` words at `loc` needs: the location's accounting, the
    /// device and the bytes; `LocationUnavailable` off this memory's CUDA devices.
    fn adoption_target(
        &self,
        op: &'static str,
        loc: &ResidencyLocation,
        words: usize,
    ) -> Result<(&Arc<crate::memory::LocationState>, Arc<CudaDevice>, u64), MemoryError> {
        let ResidencyLocation::Cuda(index) = *loc else {
            return Err(MemoryError::LocationUnavailable {
                op,
                location: *loc,
                reason: "only CUDA device memory can be adopted".to_owned(),
            });
        };
        let state = self.state(op, loc)?;
        let dev = Arc::clone(self.cuda_backend(*loc)?.device(index)?);
        let bytes = crate::memory::words_to_bytes(op, *loc, words)?;
        Ok((state, dev, bytes))
    }

    /// Takes ownership of `words` words of stream-ordered device memory on CUDA device `loc`
    /// whose contents are still being written by work enqueued on `stream`, without a copy
    /// and without waiting: the stream-ordered counterpart of
    /// [`adopt_device_words`](Self::adopt_device_words). The returned buffer counts in
    /// `loc`'s [`crate::LocationUsage`] from now on; its contents are ordered after an event
    /// recorded on `stream` now ([`Buffer::order_after`]: copies into or out of it, the
    /// residency manager's leases and its copies wait on the GPU, not on the host), and when
    /// dropped it is freed with `cuMemFreeAsync` on `stream`, after every later piece of work
    /// there. This is how a library that computes on `stream` (the CKKS engine, given the
    /// `cust` stream of [`Stream::as_cust`]) hands results to the memory layer without a host
    /// synchronisation.
    ///
    /// # Safety
    /// `ptr` must be the start of a live allocation of at least `words * 8` bytes made on
    /// `loc`'s primary context from a memory pool (`cuMemAllocAsync`,
    /// `cuMemAllocFromPoolAsync`; anything else is refused), owned by nobody else from now
    /// on (the caller must not free it); every write to it must be enqueued on `stream`
    /// before this call (or be complete), and work on other streams that reads it must be
    /// ordered after the buffer's pending events and before its drop, as for any buffer of
    /// this layer freed in stream order.
    ///
    /// # Errors
    /// [`MemoryError::LocationUnavailable`] when `loc` is not a CUDA device of this `Memory`,
    /// [`MemoryError::StreamMismatch`] when `stream` is not a CUDA stream of `loc`,
    /// [`MemoryError::NotStreamOrdered`] when `ptr` is not pool memory,
    /// [`MemoryError::SizeOverflow`], [`MemoryError::InjectedAllocFailure`],
    /// [`MemoryError::Cuda`]. On error the caller still owns `ptr` and nothing changed.
    pub unsafe fn adopt_device_words_on(
        &self,
        loc: &ResidencyLocation,
        ptr: u64,
        words: usize,
        stream: &Stream,
    ) -> Result<Buffer, MemoryError> {
        const OP: &str = "adopt_device_words_on";
        let (state, dev, bytes) = self.adoption_target(OP, loc, words)?;
        if stream.location() != *loc || stream.cuda().is_none() {
            return Err(MemoryError::StreamMismatch {
                op: OP,
                stream: stream.location(),
                expected: format!("a CUDA stream of {loc}"),
            });
        }
        dev.bind(OP)?;
        let mut pool: cu::CUmemoryPool = std::ptr::null_mut();
        // SAFETY: out-pointer to a local of the attribute's type (a pool handle); the driver
        // only reads `ptr` as an address (an unknown address is an error, not a fault).
        let r = unsafe {
            cu::cuPointerGetAttribute(
                (&mut pool as *mut cu::CUmemoryPool).cast::<c_void>(),
                cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE,
                ptr,
            )
        };
        if r != cu::CUresult::CUDA_SUCCESS || pool.is_null() {
            return Err(MemoryError::NotStreamOrdered {
                op: OP,
                location: *loc,
                bytes,
                reason: "the pointer is not an allocation of a memory pool (cuMemAllocAsync)",
            });
        }
        let ready = stream.record_event()?;
        state.debit_for(bytes, || Ok(()))?;
        let alloc = DeviceAlloc {
            ptr,
            dev,
            free_on: Some(stream.clone()),
            adopted: false,
        };
        let buf = Buffer::new(*loc, words, Storage::Device(alloc), Arc::clone(state));
        buf.order_after(&ready)?;
        Ok(buf)
    }

    /// Hands a `cust` stream of CUDA device `loc` (its primary context) to this memory
    /// layer: the returned [`Stream`] runs the memory layer's work (copies, events, waits,
    /// stream-ordered frees) on that very stream, and [`Stream::as_cust`] lends it back to
    /// code that takes `cust` streams (the CKKS engine). Work of both is then in one order
    /// without any event between them. The stream is destroyed when the last clone drops.
    ///
    /// # Errors
    /// [`MemoryError::LocationUnavailable`] when `loc` is not a CUDA device of this `Memory`,
    /// [`MemoryError::StreamMismatch`] when the stream belongs to another context,
    /// [`MemoryError::Cuda`].
    pub fn wrap_stream(
        &self,
        loc: &ResidencyLocation,
        stream: cust::stream::Stream,
    ) -> Result<Stream, MemoryError> {
        const OP: &str = "wrap_stream";
        self.check_available(OP, loc)?;
        let ResidencyLocation::Cuda(index) = *loc else {
            return Err(MemoryError::LocationUnavailable {
                op: OP,
                location: *loc,
                reason: "only a CUDA device's stream can be wrapped".to_owned(),
            });
        };
        let s = self.cuda_backend(*loc)?.wrap_stream(index, stream)?;
        Ok(Stream::new_cuda(*loc, s))
    }

    /// Loads (JIT-compiles) `ptx` as module `name` on CUDA device `loc`, once: later calls
    /// with the same name and text return the loaded module.
    ///
    /// # Errors
    /// [`MemoryError::LocationUnavailable`] off CUDA devices, [`MemoryError::ModuleLoad`] when
    /// the driver rejects the PTX, when it contains a NUL byte, or when another text was
    /// already loaded under `name`.
    pub fn load_module(
        &self,
        loc: &ResidencyLocation,
        name: &str,
        ptx: &str,
    ) -> Result<Module, MemoryError> {
        self.check_available("load_module", loc)?;
        let ResidencyLocation::Cuda(index) = *loc else {
            return Err(MemoryError::LocationUnavailable {
                op: "load_module",
                location: *loc,
                reason: "kernels run only on CUDA devices".to_owned(),
            });
        };
        let dev = self.cuda_backend(*loc)?.device(index)?;
        let hash = fnv1a(ptx);
        let mut modules = dev.modules.lock();
        if let Some(m) = modules.get(name) {
            if m.inner.ptx_hash == hash {
                return Ok(m.clone());
            }
            return Err(MemoryError::ModuleLoad {
                module: name.to_owned(),
                location: *loc,
                message: "a different PTX text is already loaded under this name".to_owned(),
            });
        }
        let text = CString::new(ptx).map_err(|_| MemoryError::ModuleLoad {
            module: name.to_owned(),
            location: *loc,
            message: "PTX text contains a NUL byte".to_owned(),
        })?;
        dev.bind("cuModuleLoadData")?;
        let mut raw: cu::CUmodule = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; `text` is a NUL-terminated image alive for the call.
        let r = unsafe { cu::cuModuleLoadData(&mut raw, text.as_ptr().cast::<c_void>()) };
        if r != cu::CUresult::CUDA_SUCCESS {
            return Err(MemoryError::ModuleLoad {
                module: name.to_owned(),
                location: *loc,
                message: describe(r),
            });
        }
        let m = Module {
            inner: Arc::new(ModuleInner {
                raw,
                name: name.to_owned(),
                ptx_hash: hash,
                dev: Arc::clone(dev),
            }),
        };
        modules.insert(name.to_owned(), m.clone());
        tracing::debug!(module = name, location = %loc, "PTX module loaded");
        Ok(m)
    }
}

impl Module {
    /// The module's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The device it is loaded on.
    #[must_use]
    pub fn location(&self) -> ResidencyLocation {
        self.inner.dev.location()
    }

    /// Looks up a kernel (an `extern "C" __global__` function) by name.
    ///
    /// # Errors
    /// [`MemoryError::KernelNotFound`].
    pub fn kernel(&self, name: &str) -> Result<Kernel, MemoryError> {
        let not_found = || MemoryError::KernelNotFound {
            module: self.inner.name.clone(),
            kernel: name.to_owned(),
            location: self.location(),
        };
        let cname = CString::new(name).map_err(|_| not_found())?;
        self.inner.dev.bind("cuModuleGetFunction")?;
        let mut f: cu::CUfunction = std::ptr::null_mut();
        // SAFETY: out-pointer to a local; the module is live; `cname` is NUL-terminated.
        let r = unsafe { cu::cuModuleGetFunction(&mut f, self.inner.raw, cname.as_ptr()) };
        if r != cu::CUresult::CUDA_SUCCESS {
            return Err(not_found());
        }
        Ok(Kernel {
            raw: f,
            name: name.to_owned(),
            module: Arc::clone(&self.inner),
        })
    }
}

/// A kernel of a loaded [`Module`]; keeps its module loaded.
#[derive(Clone)]
pub struct Kernel {
    raw: cu::CUfunction,
    name: String,
    module: Arc<ModuleInner>,
}

// SAFETY: function handles are context-wide and immutable.
unsafe impl Send for Kernel {}
// SAFETY: see `Send`.
unsafe impl Sync for Kernel {}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Kernel({:?} in {:?} on {})",
            self.name,
            self.module.name,
            self.location()
        )
    }
}

/// Launch geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Grid size in blocks (x, y, z).
    pub grid: (u32, u32, u32),
    /// Block size in threads (x, y, z).
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, bytes.
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// A 1-D launch of `blocks` blocks of `threads` threads, no dynamic shared memory.
    #[must_use]
    pub fn linear(blocks: u32, threads: u32) -> Self {
        Self {
            grid: (blocks, 1, 1),
            block: (threads, 1, 1),
            shared_bytes: 0,
        }
    }
}

/// One kernel argument. Buffers pass their device pointer and must live on the kernel's device.
#[derive(Debug, Clone, Copy)]
pub enum KernelArg<'a> {
    /// A device buffer (passed as its `u64*` device pointer).
    Buffer(&'a Buffer),
    /// A raw device pointer (e.g. an offset into a buffer).
    Ptr(u64),
    /// A `u64` / `unsigned long long`.
    U64(u64),
    /// An `i64` / `long long`.
    I64(i64),
    /// A `u32` / `unsigned int`.
    U32(u32),
    /// An `i32` / `int`.
    I32(i32),
    /// A `double`.
    F64(f64),
}

impl Kernel {
    /// The kernel's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The device it runs on.
    #[must_use]
    pub fn location(&self) -> ResidencyLocation {
        self.module.dev.location()
    }

    /// Enqueues the kernel on `stream` with `args`. Everything checkable is checked first:
    /// the stream is a CUDA stream of the kernel's device, the geometry is non-empty and at
    /// most 1024 threads per block, and every buffer argument lives on the kernel's device.
    ///
    /// # Errors
    /// [`MemoryError::InvalidLaunch`] for the checks above, [`MemoryError::Cuda`] when the
    /// driver refuses the launch.
    ///
    /// # Safety
    /// `args` must match the kernel's parameter list in number, order and type, and the
    /// kernel must access each buffer only within its words. Buffers written by the kernel
    /// must not be read by the host (or dropped while another stream uses them) before the
    /// work is known complete (an event recorded after the launch).
    pub unsafe fn launch(
        &self,
        stream: &Stream,
        config: LaunchConfig,
        args: &[KernelArg<'_>],
    ) -> Result<(), MemoryError> {
        let loc = self.location();
        let invalid = |reason: String| MemoryError::InvalidLaunch {
            kernel: self.name.clone(),
            location: loc,
            reason,
        };
        let Some(cs) = stream.cuda() else {
            return Err(invalid(format!(
                "stream on {} is not a CUDA stream",
                stream.location()
            )));
        };
        if stream.location() != loc {
            return Err(invalid(format!(
                "stream on {} is on another device",
                stream.location()
            )));
        }
        let (g, b) = (config.grid, config.block);
        if [g.0, g.1, g.2, b.0, b.1, b.2].contains(&0) {
            return Err(invalid(format!("empty geometry grid {g:?} block {b:?}")));
        }
        let threads = u64::from(b.0) * u64::from(b.1) * u64::from(b.2);
        if threads > 1024 {
            return Err(invalid(format!("{threads} threads per block exceed 1024")));
        }
        let mut slots: Vec<[u8; 8]> = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            let mut slot = [0u8; 8];
            match *a {
                KernelArg::Buffer(buf) => {
                    if buf.location() != loc {
                        return Err(invalid(format!(
                            "argument {i}: buffer lives at {}, not {loc}",
                            buf.location()
                        )));
                    }
                    let p = buf.device_ptr().unwrap_or(0);
                    slot.copy_from_slice(&p.to_ne_bytes());
                }
                KernelArg::Ptr(v) | KernelArg::U64(v) => slot.copy_from_slice(&v.to_ne_bytes()),
                KernelArg::I64(v) => slot.copy_from_slice(&v.to_ne_bytes()),
                KernelArg::F64(v) => slot.copy_from_slice(&v.to_ne_bytes()),
                KernelArg::U32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
                KernelArg::I32(v) => slot[..4].copy_from_slice(&v.to_ne_bytes()),
            }
            slots.push(slot);
        }
        let mut params: Vec<*mut c_void> = slots
            .iter_mut()
            .map(|s| s.as_mut_ptr().cast::<c_void>())
            .collect();
        self.module.dev.bind("cuLaunchKernel")?;
        let _span = tracing::trace_span!("kernel", name = %self.name, location = %loc).entered();
        // SAFETY: `params` points at `args.len()` live 8-byte slots, each holding one
        // argument in its native layout; the caller guarantees they match the kernel's
        // signature (this function's contract). The stream belongs to the kernel's context.
        let r = unsafe {
            cu::cuLaunchKernel(
                self.raw,
                g.0,
                g.1,
                g.2,
                b.0,
                b.1,
                b.2,
                config.shared_bytes,
                cs.raw(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        check("cuLaunchKernel", loc, r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adopting_memory_off_a_cuda_device_is_refused_naming_the_location() {
        let host = Memory::host_only();
        let sims = Memory::with_sim_devices(1);
        for (mem, loc) in [
            (&host, ResidencyLocation::PageableHost),
            (&host, ResidencyLocation::Cuda(0)),
            (&sims, ResidencyLocation::Sim(0)),
        ] {
            // SAFETY: nothing is adopted: every call is refused before the pointer is used
            // (the test checks that), so no memory changes owner.
            let r = unsafe { mem.adopt_device_words(&loc, 0x1000, 8) };
            let err = r.expect_err("refused");
            assert!(
                matches!(
                    err,
                    MemoryError::LocationUnavailable { location, .. } if location == loc
                ),
                "{loc}: {err}"
            );
            assert!(err.to_string().contains(&loc.to_string()), "{err}");
            // The stream-ordered form refuses the same, whatever the stream.
            let stream = sims.stream(&ResidencyLocation::Sim(0)).expect("sim stream");
            // SAFETY: as above.
            let r = unsafe { mem.adopt_device_words_on(&loc, 0x1000, 8, &stream) };
            let err = r.expect_err("refused");
            assert!(
                matches!(
                    err,
                    MemoryError::LocationUnavailable { op: "adopt_device_words_on", location, .. }
                        if location == loc
                ),
                "{loc}: {err}"
            );
        }
        assert_eq!(
            sims.usage(&ResidencyLocation::Sim(0))
                .expect("usage")
                .allocated_bytes,
            0
        );
    }
}
