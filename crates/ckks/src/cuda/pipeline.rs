//! Pipelines: several operations recorded on the host and submitted as chain graphs
//! (decision 0513).
//!
//! Each operation of the engine that launches more than one kernel (rotate, relinearize)
//! already goes out as one chain graph. Between two operations there is a graph boundary,
//! and each submission costs host time that a call on an idle stream waits for. A
//! [`Pipeline`] records the launches of several operations on one stream and submits them as
//! chain graphs of up to sixteen kernels, cut only where an operation starts or where an
//! operation inside would have begun a chain of its own (the hoisted rotations' per-key
//! chains): the example-14 stage (rotate, NTT, plaintext multiply, inverse NTT, rescale: seven
//! launches) is one graph, and so are two stages or four hoisted rotations.
//!
//! Nothing runs until [`Pipeline::submit`], so the values a pipeline makes are handles
//! ([`PipeValue`]) until then, usable only as operands of later operations of the same
//! pipeline; [`PipelineOutputs::take`] hands out the ones the caller wants, and the rest are
//! freed in stream order. Inputs, plaintexts and keys are borrowed for the pipeline's
//! lifetime, so nothing a recorded kernel reads can be freed before it runs. The scratch the
//! operations recycle while recording is kept until the chains are enqueued (a stream-ordered
//! free enqueued earlier would come before the kernels that use the words).
//!
//! ```no_run
//! use fhelium_ckks::cuda::CudaEngine;
//! use fhelium_ckks::{CpuEngine, ModulusBasis, Preset};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let cpu = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [1; 32])?;
//! let gpu = CudaEngine::new(cpu.context(), 0)?;
//! let s = gpu.stream()?;
//! let m = vec![0.25; cpu.num_slots()];
//! let ct = gpu.upload_ciphertext(&cpu.encrypt_message(&m)?, &s)?;
//! let key = gpu.upload_rotation_key(&cpu.create_rotation_key(1, cpu.secret_key())?, &s)?;
//! let half = cpu.prepare_plaintext_for_multiplication(
//!     &cpu.encode(&vec![0.5; cpu.num_slots()], 0, None)?,
//!     ModulusBasis::Q,
//! )?;
//! let half = gpu.upload_plaintext(&half, &s)?;
//! // The example-14 stage as one chain graph of seven kernels.
//! let mut p = gpu.pipeline(&s);
//! let x = p.input(&ct);
//! let r = p.rotate_with_key(x, &key)?;
//! let r = p.coefficient_domain_to_ntt_domain(r)?;
//! let r = p.multiply_plaintext(r, &half)?;
//! let r = p.ntt_domain_to_coefficient_domain(r)?;
//! let r = p.rescale_to_next_level(r)?;
//! let mut out = p.submit()?;
//! let result = out.take(r)?; // the other values are freed in stream order
//! # let _ = result;
//! # Ok(())
//! # }
//! ```

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use cust::memory::DeviceBuffer;
use cust::stream::Stream;

use super::{
    graphs, recycle_into, CudaBackendError, CudaEngine, Domain, GpuCiphertext, GpuPlaintext,
    GpuSwitchKey, Result,
};

thread_local! {
    // The scratch buffers the operations of the pipeline recording on this thread recycled:
    // kept until its chains are enqueued (`Some` only while a pipeline operation runs).
    static DEFERRED: RefCell<Option<Vec<DeviceBuffer<u64>>>> = const { RefCell::new(None) };
}

/// Keeps `buf` for the pipeline recording on this thread (`Ok`), or gives it back when no
/// pipeline records (the caller frees it now).
pub(super) fn defer(buf: DeviceBuffer<u64>) -> std::result::Result<(), DeviceBuffer<u64>> {
    DEFERRED.with(|d| match d.borrow_mut().as_mut() {
        Some(list) => {
            list.push(buf);
            Ok(())
        }
        None => Err(buf),
    })
}

/// While alive, the scratch this thread recycles goes to the pipeline's deferred list (moved
/// into the thread-local slot); dropped, also on a panic, the list goes back to the pipeline.
struct Deferring<'p>(&'p mut Vec<DeviceBuffer<u64>>);

impl<'p> Deferring<'p> {
    fn start(list: &'p mut Vec<DeviceBuffer<u64>>) -> Self {
        let taken = std::mem::take(list);
        DEFERRED.with(|d| *d.borrow_mut() = Some(taken));
        Self(list)
    }
}

impl Drop for Deferring<'_> {
    fn drop(&mut self) {
        *self.0 = DEFERRED.with(|d| d.borrow_mut().take()).unwrap_or_default();
    }
}

/// Serial numbers of pipelines, so that a value handle of one is refused by another.
static SERIAL: AtomicU64 = AtomicU64::new(1);

/// A value of a [`Pipeline`]: one of its inputs, or the result of one of its operations
/// (computed when the pipeline is submitted). Copy it freely; it names the value, it does not
/// own it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PipeValue {
    pipeline: u64,
    index: usize,
}

impl PipeValue {
    /// The serial number of the pipeline the value belongs to.
    #[must_use]
    pub fn pipeline(&self) -> u64 {
        self.pipeline
    }

    /// The value's index in its pipeline (inputs and results, in the order they came).
    #[must_use]
    pub fn index(&self) -> usize {
        self.index
    }
}

/// A pipeline value: borrowed from the caller, or made by one of its operations (`None` once
/// taken by the caller after submission).
#[derive(Debug)]
enum Slot<'a> {
    Input(&'a GpuCiphertext),
    Made(Option<GpuCiphertext>),
}

/// Operations recorded on one stream and submitted together as chain graphs (see the module
/// docs). Made by [`CudaEngine::pipeline`]. Not `Send`: it records on the thread that made it.
///
/// **Errors.** An operation that fails (a typed error of the operation itself, as its
/// engine method would return) records nothing and leaves the pipeline as it was, so the
/// caller may go on or submit what came before. A handle of another pipeline is
/// [`CudaBackendError::PipelineValue`].
///
/// **Dropped without [`Pipeline::submit`]**, nothing runs; the values it made are freed in
/// stream order.
#[derive(Debug)]
pub struct Pipeline<'a> {
    engine: &'a CudaEngine,
    stream: &'a Stream,
    serial: u64,
    values: Vec<Slot<'a>>,
    // The launches recorded so far, not yet enqueued.
    nodes: Vec<graphs::Node>,
    // Where the chains may be cut: each recorded operation's first launch, and where an
    // operation inside began a chain of its own (`graphs::mark_cut`).
    starts: Vec<usize>,
    // Scratch the operations recycled while recording.
    deferred: Vec<DeviceBuffer<u64>>,
}

impl CudaEngine {
    /// A new, empty [`Pipeline`] on `stream`: operations recorded now, submitted together as
    /// chain graphs by [`Pipeline::submit`].
    #[must_use]
    pub fn pipeline<'a>(&'a self, stream: &'a Stream) -> Pipeline<'a> {
        Pipeline {
            engine: self,
            stream,
            serial: SERIAL.fetch_add(1, Ordering::Relaxed),
            values: Vec::new(),
            nodes: Vec::new(),
            starts: Vec::new(),
            deferred: Vec::new(),
        }
    }
}

/// Pipeline methods that record the engine method of their name: of two ciphertexts
/// (`name(a, b)`), one (`name(a)`), or one and another argument (`name(a; arg: Type)`).
macro_rules! ops {
    ($($(#[$doc:meta])* $name:ident($a:ident $(, $b:ident)? $(; $arg:ident: $ty:ty)?);)*) => {
        $(
            $(#[$doc])*
            pub fn $name(
                &mut self,
                $a: PipeValue,
                $($b: PipeValue,)?
                $($arg: $ty,)?
            ) -> Result<PipeValue> {
                self.record(stringify!($name), &[$a $(, $b)?], |e, v, s| {
                    let mut v = v.iter().copied();
                    let $a = v.next().expect("an operand per handle");
                    $(let $b = v.next().expect("an operand per handle");)?
                    e.$name($a, $($b,)? $($arg,)? s)
                })
            }
        )*
    };
}

impl<'a> Pipeline<'a> {
    /// The pipeline's serial number (every [`PipeValue`] of it carries it).
    #[must_use]
    pub fn serial(&self) -> u64 {
        self.serial
    }

    /// How many kernel launches the pipeline holds, not yet enqueued.
    #[must_use]
    pub fn launches(&self) -> usize {
        self.nodes.len()
    }

    /// How many chain graphs [`Pipeline::submit`] will enqueue (at most sixteen launches
    /// each, cut where an operation starts or began a chain of its own inside).
    #[must_use]
    pub fn chains(&self) -> usize {
        graphs::chain_groups(&self.starts, self.nodes.len(), graphs::MAX_CHAIN).len()
    }

    /// Makes `ct` an input of the pipeline. It stays borrowed until the pipeline is
    /// submitted or dropped, so it outlives every recorded kernel that reads it.
    pub fn input(&mut self, ct: &'a GpuCiphertext) -> PipeValue {
        self.values.push(Slot::Input(ct));
        self.handle(self.values.len() - 1)
    }

    fn handle(&self, index: usize) -> PipeValue {
        PipeValue {
            pipeline: self.serial,
            index,
        }
    }

    /// The value `v` names, with its level, scale and domain as its operation made them (its
    /// words are written when the pipeline runs).
    fn get(&self, op: &'static str, v: PipeValue) -> Result<&GpuCiphertext> {
        value_of(&self.values, self.serial, op, v)
    }

    /// The level of value `v` (0 = full Q chain).
    pub fn level(&self, v: PipeValue) -> Result<usize> {
        self.get("Pipeline::level", v).map(GpuCiphertext::level)
    }

    /// The exact binary64 scale of value `v`.
    pub fn scale(&self, v: PipeValue) -> Result<f64> {
        self.get("Pipeline::scale", v).map(GpuCiphertext::scale)
    }

    /// The domain of value `v`.
    pub fn domain(&self, v: PipeValue) -> Result<Domain> {
        self.get("Pipeline::domain", v).map(GpuCiphertext::domain)
    }

    /// Records one operation: `f` runs the engine's method on the operands while this thread
    /// records, its launches join the pipeline's, and its result becomes a new value. On an
    /// error the operation's launches (if any) are dropped and the pipeline is unchanged.
    fn record(
        &mut self,
        op: &'static str,
        operands: &[PipeValue],
        f: impl FnOnce(&CudaEngine, &[&GpuCiphertext], &Stream) -> Result<GpuCiphertext>,
    ) -> Result<PipeValue> {
        let made = self.record_many(op, operands, |e, v, s| f(e, v, s).map(std::iter::once))?;
        Ok(self.handle(made.start))
    }

    /// [`Pipeline::record`] for an operation of any number of results: the indices of the
    /// new values.
    fn record_many<R: IntoIterator<Item = GpuCiphertext>>(
        &mut self,
        op: &'static str,
        operands: &[PipeValue],
        f: impl FnOnce(&CudaEngine, &[&GpuCiphertext], &Stream) -> Result<R>,
    ) -> Result<std::ops::Range<usize>> {
        let mut refs = Vec::with_capacity(operands.len());
        for &v in operands {
            refs.push(value_of(&self.values, self.serial, op, v)?);
        }
        let start = self.nodes.len();
        let Some(rec) = graphs::Recording::resume(std::mem::take(&mut self.nodes)) else {
            return Err(CudaBackendError::Unsupported {
                op,
                reason: "this thread is already recording launches".into(),
            });
        };
        let out = {
            let _deferring = Deferring::start(&mut self.deferred);
            f(self.engine, &refs, self.stream)
        };
        let (mut nodes, cuts) = rec.finish_with_cuts();
        match out {
            Ok(cts) => {
                if nodes.len() > start {
                    // The operation's first launch, and where its own chains began inside it
                    // (the hoisted rotations' per-key chains).
                    self.starts.push(start);
                    self.starts.extend(cuts.into_iter().filter(|&c| c > start));
                }
                self.nodes = nodes;
                let first = self.values.len();
                self.values
                    .extend(cts.into_iter().map(|ct| Slot::Made(Some(ct))));
                Ok(first..self.values.len())
            }
            Err(e) => {
                nodes.truncate(start);
                self.nodes = nodes;
                Err(e)
            }
        }
    }

    ops! {
        /// `a + b` ([`CudaEngine::add`]).
        add(a, b);
        /// `a - b` ([`CudaEngine::subtract`]).
        subtract(a, b);
        /// `a * b` without relinearization ([`CudaEngine::multiply`]).
        multiply(a, b);
        /// `-a` ([`CudaEngine::negate`]).
        negate(a);
        /// Coefficient domain -> NTT domain ([`CudaEngine::coefficient_domain_to_ntt_domain`]).
        coefficient_domain_to_ntt_domain(a);
        /// NTT domain -> coefficient domain ([`CudaEngine::ntt_domain_to_coefficient_domain`]).
        ntt_domain_to_coefficient_domain(a);
        /// Divides by the last prime and drops it ([`CudaEngine::rescale_to_next_level`]).
        rescale_to_next_level(a);
        /// Drops the last prime without dividing ([`CudaEngine::mod_switch_to_next_level`]).
        mod_switch_to_next_level(a);
        /// `ct + pt` ([`CudaEngine::add_plaintext`]).
        add_plaintext(a; pt: &'a GpuPlaintext);
        /// `ct * pt` ([`CudaEngine::multiply_plaintext`]).
        multiply_plaintext(a; pt: &'a GpuPlaintext);
        /// `σ_g` on every component ([`CudaEngine::automorphism`]).
        automorphism(a; galois_element: u64);
        /// Rotation by `key` ([`CudaEngine::rotate_with_key`]). Its ModDown reads the rotated
        /// `c0` before waiting for its predecessor only when the rotation is the pipeline's
        /// first launch (its input then was written before the chain; decision 0508).
        rotate_with_key(a; key: &'a GpuSwitchKey);
        /// Relinearization by `key` ([`CudaEngine::relinearize_with_key`]).
        relinearize_with_key(a; key: &'a GpuSwitchKey);
    }

    /// Rotations of `ct` by every key of `keys` with one shared ModUp
    /// ([`CudaEngine::rotate_many_with_keys`]): one value per key, in order. Inside the
    /// pipeline every key's inner product and ModDown may be cut from the next key's into
    /// another chain graph, never from each other. No keys: no values, no launches.
    pub fn rotate_many_with_keys(
        &mut self,
        ct: PipeValue,
        keys: &[&'a GpuSwitchKey],
    ) -> Result<Vec<PipeValue>> {
        let made = self.record_many("rotate_many_with_keys", &[ct], |e, v, s| {
            e.rotate_many_with_keys(v[0], keys, s)
        })?;
        Ok(made.map(|i| self.handle(i)).collect())
    }

    /// Enqueues every recorded launch on the pipeline's stream, as chain graphs of at most
    /// sixteen kernels cut as [`Pipeline::chains`] counts them (one by one where the engine's
    /// chains are off or refused), then frees the operations' scratch in stream order. No host
    /// synchronisation. The outputs hand out the values the caller keeps.
    ///
    /// On a driver error, the launches already enqueued may still run: the pipeline's scratch
    /// and values are freed after waiting for the device, and the error is returned.
    pub fn submit(mut self) -> Result<PipelineOutputs<'a>> {
        let nodes = std::mem::take(&mut self.nodes);
        let groups = graphs::chain_groups(&self.starts, nodes.len(), graphs::MAX_CHAIN);
        let _span = tracing::debug_span!(
            "ckks.pipeline",
            launches = nodes.len(),
            chains = groups.len(),
            stream = ?self.stream.as_inner(),
        )
        .entered();
        for g in groups {
            if let Err(e) = self.engine.submit_nodes("pipeline", &nodes[g], self.stream) {
                // Work already enqueued may read any of them: wait, then free (the values'
                // drops wait too).
                let _ = cust::context::CurrentContext::synchronize();
                self.deferred.clear();
                self.values.clear();
                return Err(e);
            }
        }
        self.release_scratch()?;
        Ok(PipelineOutputs {
            stream: self.stream,
            serial: self.serial,
            values: std::mem::take(&mut self.values),
        })
    }

    /// Frees the deferred scratch in stream order (after everything enqueued so far).
    fn release_scratch(&mut self) -> Result<()> {
        let mut first = Ok(());
        for b in self.deferred.drain(..) {
            let r = recycle_into(&self.engine.recycler, b, self.stream);
            if first.is_ok() {
                first = r.map_err(|source| CudaBackendError::Driver {
                    op: "pipeline",
                    source,
                });
            }
        }
        first
    }
}

impl Drop for Pipeline<'_> {
    fn drop(&mut self) {
        // Not submitted (or submitted: then both lists are empty): nothing recorded ran, so
        // the words go back in stream order; errors leave nothing better to do.
        let _ = self.release_scratch();
        let _ = free_made(&mut self.values, self.stream);
    }
}

/// Frees the values `values` made and still holds, in stream order on `stream` (inputs are
/// the caller's); the first driver error, if any.
fn free_made(values: &mut Vec<Slot<'_>>, stream: &Stream) -> Result<()> {
    let mut first = Ok(());
    for slot in values.drain(..) {
        if let Slot::Made(Some(v)) = slot {
            let r = v.free_async(stream);
            if first.is_ok() {
                first = r;
            }
        }
    }
    first
}

/// The value `v` of `values` (a pipeline's, serial number `serial`), or the typed error
/// naming the handle.
fn value_of<'v>(
    values: &'v [Slot<'_>],
    serial: u64,
    op: &'static str,
    v: PipeValue,
) -> Result<&'v GpuCiphertext> {
    let error = |reason: String| CudaBackendError::PipelineValue {
        op,
        pipeline: v.pipeline,
        index: v.index,
        reason,
    };
    if v.pipeline != serial {
        return Err(error(format!("not a value of pipeline {serial}")));
    }
    match values.get(v.index) {
        Some(Slot::Input(ct)) => Ok(ct),
        Some(Slot::Made(Some(ct))) => Ok(ct),
        Some(Slot::Made(None)) => Err(error("already taken".into())),
        None => Err(error(format!(
            "not a value of pipeline {serial}, which holds {}",
            values.len()
        ))),
    }
}

/// The values of a submitted [`Pipeline`]: [`PipelineOutputs::take`] hands out the results
/// the caller keeps; dropped, the others are freed in stream order after the pipeline's work.
#[derive(Debug)]
pub struct PipelineOutputs<'a> {
    stream: &'a Stream,
    serial: u64,
    values: Vec<Slot<'a>>,
}

impl PipelineOutputs<'_> {
    /// The result `v` (enqueued on the pipeline's stream: use it on that stream, or after
    /// synchronising it). A handle of another pipeline, an input (the caller owns it) or a
    /// result already taken is [`CudaBackendError::PipelineValue`], and nothing changes.
    pub fn take(&mut self, v: PipeValue) -> Result<GpuCiphertext> {
        const OP: &str = "PipelineOutputs::take";
        // Refuses other pipelines' handles and results already taken.
        value_of(&self.values, self.serial, OP, v)?;
        if let Slot::Made(made) = &mut self.values[v.index] {
            if let Some(ct) = made.take() {
                return Ok(ct);
            }
        }
        Err(CudaBackendError::PipelineValue {
            op: OP,
            pipeline: v.pipeline,
            index: v.index,
            reason: "an input of the pipeline, owned by the caller".into(),
        })
    }

    /// Frees the results not taken, in stream order; the first driver error, if any.
    pub fn free_rest(mut self) -> Result<()> {
        free_made(&mut self.values, self.stream)
    }
}

impl Drop for PipelineOutputs<'_> {
    fn drop(&mut self) {
        let _ = free_made(&mut self.values, self.stream);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_is_deferred_only_while_a_pipeline_operation_runs() {
        // No pipeline: the buffer comes back for the caller to free now. A `DeviceBuffer`
        // needs a device, so the check runs on the thread-local list itself.
        assert!(DEFERRED.with(|d| d.borrow().is_none()));
        let mut list = Vec::new();
        {
            let _g = Deferring::start(&mut list);
            assert!(DEFERRED.with(|d| d.borrow().is_some()));
        }
        assert!(DEFERRED.with(|d| d.borrow().is_none()));
        assert!(list.is_empty());
    }

    #[test]
    fn foreign_and_unknown_handles_are_typed_errors_naming_the_handle() {
        let values: Vec<Slot<'_>> = vec![Slot::Made(None)];
        let foreign = PipeValue {
            pipeline: 9,
            index: 0,
        };
        let e = value_of(&values, 4, "add", foreign).unwrap_err();
        assert!(
            matches!(
                e,
                CudaBackendError::PipelineValue {
                    op: "add",
                    pipeline: 9,
                    index: 0,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "add: value 0 of pipeline 9: not a value of pipeline 4"
        );
        for (op, index, want) in [
            (
                "negate",
                3,
                "negate: value 3 of pipeline 4: not a value of pipeline 4, which holds 1",
            ),
            (
                "PipelineOutputs::take",
                0,
                "PipelineOutputs::take: value 0 of pipeline 4: already taken",
            ),
        ] {
            let v = PipeValue { pipeline: 4, index };
            assert_eq!(value_of(&values, 4, op, v).unwrap_err().to_string(), want);
        }
    }
}
