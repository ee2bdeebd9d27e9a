//! The one error enum of this crate.

use fhelium_residency::ResidencyLocation;

/// Every way a memory, stream, copy or kernel operation of this crate can fail.
///
/// Variants name the operation, the location(s) and the byte figures involved. A failed
/// operation changes nothing that the caller can observe (no buffer is half-installed, no
/// accounting is left debited).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    /// The location is not part of this [`crate::Memory`] (spec 2.4: a device location is valid
    /// only when its backend is present and the index is below the device count).
    #[error("{op}: location {location} is not available in this process: {reason}")]
    LocationUnavailable {
        /// The operation that was refused.
        op: &'static str,
        /// The location asked for.
        location: ResidencyLocation,
        /// Why it is not available.
        reason: String,
    },
    /// The CUDA driver or a CUDA device could not be opened.
    #[error("CUDA is unavailable: {reason}")]
    CudaUnavailable {
        /// What the driver said.
        reason: String,
    },
    /// A device's capacity (simulated capacity, or the driver's answer) is exhausted.
    #[error("{op}: out of memory at {location}: requested {requested_bytes} bytes, {available_bytes} bytes available")]
    OutOfMemory {
        /// The operation that failed.
        op: &'static str,
        /// Where the allocation was attempted.
        location: ResidencyLocation,
        /// Bytes requested.
        requested_bytes: u64,
        /// Bytes that were still available (best effort for CUDA).
        available_bytes: u64,
    },
    /// An allocation failed because a test asked for it ([`crate::SimFaults::fail_next_allocs`]).
    #[error("alloc: injected allocation failure at {location} ({bytes} bytes)")]
    InjectedAllocFailure {
        /// Where the allocation was attempted.
        location: ResidencyLocation,
        /// Bytes requested.
        bytes: u64,
    },
    /// A copy failed because a test asked for it ([`crate::SimFaults::fail_next_copies`]).
    #[error("copy: injected copy failure from {from} to {to} ({bytes} bytes)")]
    InjectedCopyFailure {
        /// Source location.
        from: ResidencyLocation,
        /// Destination location (where the fault was armed).
        to: ResidencyLocation,
        /// Bytes that were to be copied.
        bytes: u64,
    },
    /// Streams exist only on device locations.
    #[error("{op}: streams exist only on device locations, not on {location}")]
    StreamOnHost {
        /// The operation.
        op: &'static str,
        /// The host location named.
        location: ResidencyLocation,
    },
    /// A stream was given that belongs to neither endpoint's device.
    #[error("{op}: stream on {stream} does not match {expected}")]
    StreamMismatch {
        /// The operation.
        op: &'static str,
        /// The stream's location.
        stream: ResidencyLocation,
        /// What was expected, in words (e.g. "an endpoint of the copy pageable-host -> sim:0").
        expected: String,
    },
    /// A stream or event of one backend was mixed with another backend's (sim vs cuda).
    #[error("{op}: cannot combine {a} with {b}: different backends")]
    BackendMismatch {
        /// The operation.
        op: &'static str,
        /// The first party's location.
        a: ResidencyLocation,
        /// The second party's location.
        b: ResidencyLocation,
    },
    /// `hold` is a test facility of the simulated backend.
    #[error("{op}: holds exist only on simulated streams, not on {location}")]
    HoldUnsupported {
        /// The operation.
        op: &'static str,
        /// The stream's location.
        location: ResidencyLocation,
    },
    /// A bounded wait on an event timed out (a simulated hold never released, or CUDA work
    /// still running at the limit of [`crate::Event::synchronize_within`]).
    #[error("{op}: event on {location} still pending after {millis} ms (a simulated hold must be released first)")]
    HoldTimeout {
        /// The operation.
        op: &'static str,
        /// The stream's location.
        location: ResidencyLocation,
        /// How long the wait lasted, in milliseconds.
        millis: u64,
    },
    /// Source and destination word counts differ.
    #[error("{op}: size mismatch: source {from_bytes} bytes at {from}, destination {to_bytes} bytes at {to}")]
    SizeMismatch {
        /// The operation.
        op: &'static str,
        /// Source location.
        from: ResidencyLocation,
        /// Destination location.
        to: ResidencyLocation,
        /// Source bytes.
        from_bytes: u64,
        /// Destination bytes.
        to_bytes: u64,
    },
    /// A word range does not fit its buffer.
    #[error("{op}: range {start}..{start}+{len} words out of bounds for a {words}-word buffer at {location}")]
    RangeOutOfBounds {
        /// The operation.
        op: &'static str,
        /// The buffer's location.
        location: ResidencyLocation,
        /// First word of the range.
        start: usize,
        /// Range length in words.
        len: usize,
        /// Buffer length in words.
        words: usize,
    },
    /// A requested size overflows the byte arithmetic.
    #[error("{op}: {words} words at {location} overflow the byte count")]
    SizeOverflow {
        /// The operation.
        op: &'static str,
        /// The location.
        location: ResidencyLocation,
        /// Words requested.
        words: usize,
    },
    /// The buffer's memory is not host-accessible (a CUDA device buffer).
    #[error("{op}: memory at {location} is not host-accessible")]
    NotHostAccessible {
        /// The operation.
        op: &'static str,
        /// The buffer's location.
        location: ResidencyLocation,
    },
    /// The memory is written by the host, not by work on a stream, so it cannot be ordered
    /// after an event ([`crate::Buffer::order_after`]), nor adopted in stream order.
    #[error("{op}: the {bytes} bytes at {location} are not stream-ordered memory: {reason}")]
    NotStreamOrdered {
        /// The operation.
        op: &'static str,
        /// The memory's location.
        location: ResidencyLocation,
        /// The buffer's or allocation's bytes.
        bytes: u64,
        /// Why.
        reason: &'static str,
    },
    /// A value declares no buffers, so it has no placement.
    #[error("{type_tag}: value has no buffers, so it has no placement")]
    EmptyValue {
        /// The value's type tag.
        type_tag: &'static str,
    },
    /// A value's buffers live at different locations.
    #[error("{type_tag}: buffers disagree on placement: {first} vs {other}")]
    PlacementDisagrees {
        /// The value's type tag.
        type_tag: &'static str,
        /// Location of the first buffer.
        first: ResidencyLocation,
        /// Location of the first buffer that disagrees.
        other: ResidencyLocation,
    },
    /// A host value mixes pageable and pinned storage (spec 2.4: non-uniform values are
    /// rejected everywhere).
    #[error("{type_tag}: host materialization mixes pageable and pinned tensor storage")]
    MixedPinning {
        /// The value's type tag.
        type_tag: &'static str,
    },
    /// Two locations that a peer operation needs to be devices of one backend are not.
    #[error("{op}: {from} -> {to} is not a peer pair: {reason}")]
    NotAPeerPair {
        /// The operation.
        op: &'static str,
        /// Source location.
        from: ResidencyLocation,
        /// Destination location.
        to: ResidencyLocation,
        /// Why, in words.
        reason: String,
    },
    /// One hop of a device-to-device copy failed (the staged path's copy to or from pinned
    /// host, its staging allocation or its event ordering). Nothing was written to the
    /// destination unless the failing hop was the last one, which then left it unwritten.
    #[error("peer copy {from} -> {to} ({bytes} bytes, {path}) failed at {stage}: {cause}")]
    PeerCopy {
        /// Source device.
        from: ResidencyLocation,
        /// Destination device.
        to: ResidencyLocation,
        /// Bytes of the copy.
        bytes: u64,
        /// The path the copy took.
        path: crate::peer::PeerPath,
        /// The failing step: "stream", "order", "staging alloc", "device to pinned host",
        /// "pinned host to device".
        stage: &'static str,
        /// The underlying error.
        cause: Box<MemoryError>,
    },
    /// A CUDA driver call failed.
    #[error("{op} at {location}: CUDA error {message}")]
    Cuda {
        /// The operation / driver call.
        op: &'static str,
        /// The location involved.
        location: ResidencyLocation,
        /// The driver's error text.
        message: String,
    },
    /// A PTX module failed to load.
    #[error("loading PTX module {module:?} on {location}: {message}")]
    ModuleLoad {
        /// The module's name.
        module: String,
        /// The device.
        location: ResidencyLocation,
        /// The driver's error text.
        message: String,
    },
    /// A kernel name was not found in its module.
    #[error("kernel {kernel:?} not found in module {module:?} on {location}")]
    KernelNotFound {
        /// The module's name.
        module: String,
        /// The kernel asked for.
        kernel: String,
        /// The device.
        location: ResidencyLocation,
    },
    /// A launch was refused before reaching the driver (bad geometry or arguments).
    #[error("launch of {kernel:?} on {location}: {reason}")]
    InvalidLaunch {
        /// The kernel.
        kernel: String,
        /// The device.
        location: ResidencyLocation,
        /// What is wrong.
        reason: String,
    },
}
