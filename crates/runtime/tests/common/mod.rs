//! Shared helpers of the runtime's integration tests.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::redundant_closure_for_method_calls
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use fhelium_cuda::{Memory, Resident, TensorView, Tensors};
use fhelium_residency::{
    Recoverability, ReplicaMode, ResidencyHandle, ResidencyLocation, ResidencyValueSpec,
    PAGEABLE_HOST, PINNED_HOST,
};
use fhelium_runtime::{Handle, ResidencyManager, SourceError};

pub const P: ResidencyLocation = PAGEABLE_HOST;
pub const N: ResidencyLocation = PINNED_HOST;
pub const S0: ResidencyLocation = ResidencyLocation::Sim(0);
pub const S1: ResidencyLocation = ResidencyLocation::Sim(1);
/// Words of one small test value; its charge is `NB` bytes.
pub const W: usize = 8;
pub const NB: u64 = 64;

pub fn memory() -> Memory {
    Memory::with_sim_devices(2)
}

pub fn value_at(mem: &Memory, loc: ResidencyLocation, seed: u64) -> Tensors {
    let words: Vec<u64> = (0..W as u64).map(|i| seed * 1000 + i).collect();
    Tensors::upload(mem, &loc, &[&words], None)
        .unwrap()
        .wait()
        .unwrap()
}

pub fn words(mem: &Memory, t: &Tensors) -> Vec<u64> {
    t.to_vecs(mem).unwrap().concat()
}

pub fn manager(mem: &Memory, budgets: &[(ResidencyLocation, u64)]) -> ResidencyManager {
    let mut b = ResidencyManager::builder(mem.clone());
    for (l, n) in budgets {
        b = b.budget(*l, *n);
    }
    b.build().unwrap()
}

pub fn adopt(
    m: &ResidencyManager,
    at: ResidencyLocation,
    mode: ReplicaMode,
    seed: u64,
) -> Handle<Tensors> {
    let v = value_at(m.memory(), at, seed);
    m.adopt(v, Some(at), mode).unwrap()
}

pub fn repl(m: &ResidencyManager, seed: u64) -> Handle<Tensors> {
    adopt(m, P, ReplicaMode::Replicable, seed)
}

/// A source-backed REPL value at `src` whose loads are counted; `fail_first` makes the first
/// `n` loads fail with an I/O error.
pub fn sourced(
    m: &ResidencyManager,
    src: ResidencyLocation,
    seed: u64,
    fail_first: usize,
) -> (Handle<Tensors>, Arc<AtomicUsize>) {
    let loads = Arc::new(AtomicUsize::new(0));
    let l2 = loads.clone();
    let mem = m.memory().clone();
    let spec = ResidencyValueSpec::new(
        "Tensors",
        NB,
        NB,
        ReplicaMode::Replicable,
        Recoverability::Reconstructible,
    )
    .unwrap();
    let h = m
        .register_source(spec, src, move || -> Result<Tensors, SourceError> {
            let n = l2.fetch_add(1, Ordering::SeqCst);
            if n < fail_first {
                return Err(Box::new(std::io::Error::other("disk read failed")));
            }
            Ok(value_at(&mem, src, seed))
        })
        .unwrap();
    (h, loads)
}

pub fn locs(m: &ResidencyManager, h: &ResidencyHandle) -> Vec<ResidencyLocation> {
    let s = m.snapshot().unwrap();
    s.value(h)
        .unwrap()
        .materializations()
        .iter()
        .map(|x| x.location())
        .collect()
}

pub fn used(m: &ResidencyManager, l: ResidencyLocation) -> u64 {
    m.snapshot()
        .unwrap()
        .location(l)
        .map_or(0, |x| x.used_bytes())
}

pub fn reserved(m: &ResidencyManager, l: ResidencyLocation) -> u64 {
    m.snapshot()
        .unwrap()
        .location(l)
        .map_or(0, |x| x.reserved_bytes())
}

/// A value whose two views alias one buffer (logical 2x, storage 1x).
pub fn aliased(mem: &Memory, loc: ResidencyLocation) -> Tensors {
    let (b, _) = mem.alloc_from(&loc, &[1; W], None).unwrap();
    let b = Arc::new(b);
    Tensors::new(vec![TensorView::whole(b.clone()), TensorView::whole(b)])
}

/// A value viewing `len` words of a `W`-word buffer (logical < storage).
pub fn view(mem: &Memory, loc: ResidencyLocation, len: usize) -> Tensors {
    let (b, _) = mem.alloc_from(&loc, &[7; W], None).unwrap();
    Tensors::new(vec![TensorView::new(Arc::new(b), 0, len).unwrap()])
}

pub fn type_tag<T: Resident>(t: &T) -> &'static str {
    t.type_tag()
}

/// A value without storage, of any type tag and logical size, placed on the pageable host
/// (or nowhere: `placed: false` makes its placement `EmptyValue`): for tests of the type
/// checks and of what `adopt` refuses.
#[derive(Debug, Clone)]
pub struct Stub {
    /// Its type tag.
    pub tag: &'static str,
    /// Its logical bytes.
    pub nbytes: u64,
    /// Whether it names a placement (the pageable host) at all.
    pub placed: bool,
}

impl fhelium_cuda::Resident for Stub {
    fn type_tag(&self) -> &'static str {
        self.tag
    }
    fn placement(&self) -> Result<ResidencyLocation, fhelium_cuda::MemoryError> {
        if self.placed {
            Ok(P)
        } else {
            Err(fhelium_cuda::MemoryError::EmptyValue { type_tag: self.tag })
        }
    }
    fn nbytes(&self) -> u64 {
        self.nbytes
    }
    fn storage_nbytes(&self) -> u64 {
        self.nbytes
    }
    fn storage_keys(&self) -> Vec<fhelium_cuda::StorageKey> {
        Vec::new()
    }
    fn materialize(
        &self,
        _: &fhelium_cuda::Memory,
        _: &ResidencyLocation,
        _: Option<&fhelium_cuda::Stream>,
    ) -> Result<fhelium_cuda::Materialized<Self>, fhelium_cuda::MemoryError> {
        Ok(fhelium_cuda::Materialized {
            value: self.clone(),
            ready: None,
        })
    }
}
