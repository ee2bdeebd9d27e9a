//! `Tensors`: a generic [`Resident`] made of buffer views, the value type of the runtime tests.

use std::sync::Arc;

use fhelium_residency::ResidencyLocation;

use crate::buffer::{Buffer, StorageKey};
use crate::error::MemoryError;
use crate::memory::Memory;
use crate::resident::{common_placement, distinct_storages, Materialized, Resident};
use crate::stream::{Event, Stream};

/// A window `start .. start + len` (in words) of a shared buffer. Several views may alias one
/// buffer, and a view may be smaller than its buffer.
#[derive(Debug, Clone)]
pub struct TensorView {
    buffer: Arc<Buffer>,
    start: usize,
    len: usize,
}

impl TensorView {
    /// A view of `len` words from `start`.
    ///
    /// # Errors
    /// [`MemoryError::RangeOutOfBounds`] when the range does not fit the buffer.
    pub fn new(buffer: Arc<Buffer>, start: usize, len: usize) -> Result<Self, MemoryError> {
        if start
            .checked_add(len)
            .is_none_or(|end| end > buffer.words())
        {
            return Err(MemoryError::RangeOutOfBounds {
                op: "TensorView::new",
                location: buffer.location(),
                start,
                len,
                words: buffer.words(),
            });
        }
        Ok(Self { buffer, start, len })
    }

    /// A view of a whole buffer.
    #[must_use]
    pub fn whole(buffer: Arc<Buffer>) -> Self {
        let len = buffer.words();
        Self {
            buffer,
            start: 0,
            len,
        }
    }

    /// The underlying buffer.
    #[must_use]
    pub fn buffer(&self) -> &Arc<Buffer> {
        &self.buffer
    }

    /// First word of the view in its buffer.
    #[must_use]
    pub fn start(&self) -> usize {
        self.start
    }

    /// Length in words.
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length view.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Payload bytes of the view.
    #[must_use]
    pub fn nbytes(&self) -> u64 {
        self.len as u64 * 8
    }

    /// The viewed words, when host-accessible.
    #[must_use]
    pub fn host_slice(&self) -> Option<&[u64]> {
        self.buffer
            .host_slice()
            .map(|s| &s[self.start..self.start + self.len])
    }

    /// Reads the viewed words (synchronously, from any location).
    ///
    /// # Errors
    /// As [`Buffer::to_vec`].
    pub fn to_vec(&self, mem: &Memory) -> Result<Vec<u64>, MemoryError> {
        if let Some(s) = self.host_slice() {
            return Ok(s.to_vec());
        }
        let all = self.buffer.to_vec(mem)?;
        Ok(all[self.start..self.start + self.len].to_vec())
    }
}

/// A value made of an ordered list of [`TensorView`]s that move together.
#[derive(Debug, Clone, Default)]
pub struct Tensors {
    views: Vec<TensorView>,
}

impl Tensors {
    /// A value of the given views (in order).
    #[must_use]
    pub fn new(views: Vec<TensorView>) -> Self {
        Self { views }
    }

    /// One whole-buffer view per buffer.
    #[must_use]
    pub fn from_buffers(buffers: Vec<Buffer>) -> Self {
        Self::new(
            buffers
                .into_iter()
                .map(|b| TensorView::whole(Arc::new(b)))
                .collect(),
        )
    }

    /// Allocates one buffer per part at `loc`, filled with that part's words. The event marks
    /// the last upload complete (all ran on one stream).
    ///
    /// # Errors
    /// As [`Memory::alloc_from`]; on error the buffers made so far are freed.
    pub fn upload(
        mem: &Memory,
        loc: &ResidencyLocation,
        parts: &[&[u64]],
        stream: Option<&Stream>,
    ) -> Result<Materialized<Self>, MemoryError> {
        let mut buffers = Vec::with_capacity(parts.len());
        let mut ready = None;
        for p in parts {
            let (b, ev) = mem.alloc_from(loc, p, stream)?;
            buffers.push(b);
            ready = ev.or(ready);
        }
        Ok(Materialized {
            value: Self::from_buffers(buffers),
            ready,
        })
    }

    /// The views, in order.
    #[must_use]
    pub fn views(&self) -> &[TensorView] {
        &self.views
    }

    /// Number of views.
    #[must_use]
    pub fn len(&self) -> usize {
        self.views.len()
    }

    /// True without views.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.views.is_empty()
    }

    /// Reads every view's words (synchronously).
    ///
    /// # Errors
    /// As [`TensorView::to_vec`].
    pub fn to_vecs(&self, mem: &Memory) -> Result<Vec<Vec<u64>>, MemoryError> {
        self.views.iter().map(|v| v.to_vec(mem)).collect()
    }
}

impl Resident for Tensors {
    fn type_tag(&self) -> &'static str {
        "Tensors"
    }

    fn placement(&self) -> Result<ResidencyLocation, MemoryError> {
        common_placement(
            self.type_tag(),
            self.views.iter().map(|v| v.buffer.location()),
        )
    }

    fn nbytes(&self) -> u64 {
        self.views.iter().map(TensorView::nbytes).sum()
    }

    fn storage_nbytes(&self) -> u64 {
        distinct_storages(
            self.views
                .iter()
                .map(|v| (v.buffer.storage_key(), v.buffer.storage_nbytes())),
        )
        .values()
        .sum()
    }

    fn storage_keys(&self) -> Vec<StorageKey> {
        distinct_storages(
            self.views
                .iter()
                .map(|v| (v.buffer.storage_key(), v.buffer.storage_nbytes())),
        )
        .into_keys()
        .collect()
    }

    fn pending_events(&self) -> Result<Vec<Event>, MemoryError> {
        let mut events: Vec<Event> = Vec::new();
        for v in &self.views {
            for ev in v.buffer.pending_events()? {
                if !events.iter().any(|e| e.id() == ev.id()) {
                    events.push(ev);
                }
            }
        }
        Ok(events)
    }

    /// Copies every view into its own fresh buffer at `to` (compaction: aliases become
    /// independent buffers, views shrink to their length). All copies run on one stream, so
    /// `ready` is the last copy's event.
    fn materialize(
        &self,
        mem: &Memory,
        to: &ResidencyLocation,
        stream: Option<&Stream>,
    ) -> Result<Materialized<Self>, MemoryError> {
        self.placement()?;
        mem.check_available("materialize", to)?;
        let mut views = Vec::with_capacity(self.views.len());
        let mut ready: Option<Event> = None;
        for v in &self.views {
            let (b, ev) = v.buffer.copy_range_to(mem, to, v.start, v.len, stream)?;
            views.push(TensorView::whole(Arc::new(b)));
            ready = ev.or(ready);
        }
        Ok(Materialized {
            value: Self { views },
            ready,
        })
    }
}
