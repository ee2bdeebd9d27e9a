//! Kernel launches replayed through one-node CUDA graphs (decision 0505).
//!
//! On the H200 VM a direct `cuLaunchKernel` / `cuLaunchCooperativeKernel` costs ~3.1-3.7 us of
//! host time before the GPU sees the kernel; updating the parameters of an instantiated
//! one-node graph and launching it costs ~2.2 us, and launching it again with the same
//! parameters ~1.75 us (`kernels/bench/launch_bench.cu`, run 17). For an operation timed as one
//! call on an idle stream, that host time is latency. So the engine keeps executable graphs per
//! (kernel, grid, block, launch kind, stream), up to `PER_SHAPE` of them, each holding the
//! arguments of one launch: a launch whose arguments one of them holds replays it as it is
//! (the engine's buffer recycling makes the same buffers come back, e.g. in a loop over a
//! pipeline); otherwise a new graph is built while the shape has fewer than `PER_SHAPE`, else
//! the least recently used one gets the new arguments. A graph launch is ordered on its stream
//! exactly as a direct launch (and behind earlier launches of the same graph, which are on the
//! same stream by construction); parameter updates affect only later launches, so updating a
//! graph that is still running is safe.
//! Anything the driver refuses (building, instantiating or updating a graph) sends that launch,
//! and on a build failure every later one, down the direct path, so behaviour never depends on
//! graph support.
//!
//! **Chains** (decision 0508): an operation of several dependent launches (the key switch of
//! rotate and relinearize, encrypt_message after its upload, decrypt_message before its
//! download) records them on its thread ([`Recording`]) instead of enqueueing
//! them, then launches them as one graph of kernel nodes in a line ([`LaunchGraphs::launch_chain`]),
//! kept and updated like the one-node graphs. A node whose kernel starts with
//! `grid_dep_wait` (`griddepcontrol.wait`) hangs on the node before it by a programmatic edge
//! (programmatic dependent launch), so it is launched while its predecessor drains and waits
//! on the device for that predecessor's completion and writes; the others by full edges. On
//! the H200 one graph of three nodes took ~2.3 us less per key switch than three one-node
//! graphs, the programmatic edges ~0.8 us more (run 51). A chain the driver refuses is
//! launched node by node by the caller.

use std::cell::RefCell;
use std::ffi::c_void;
use std::hash::Hasher;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;

use cust::sys as cu;
use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHasher};

use super::{Arg, MAX_ARGS};

/// Most graphs one engine keeps; launches that would need more go direct.
const MAX_GRAPHS: usize = 512;
/// Most graphs per shape (distinct argument lists replayed without an update).
const PER_SHAPE: usize = 8;
/// Most chain graphs per chain shape: a chain's arguments combine those of its kernels (a key
/// switch: ciphertext x key), so it sees more distinct lists than one kernel does.
const PER_CHAIN: usize = 32;

/// What one executable graph launches: everything of a launch but its argument values.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Shape {
    func: usize,
    grid: (u32, u32, u32),
    block: u32,
    cooperative: bool,
    stream: usize,
}

/// One instantiated graph (`N`: its kernel node or nodes) and the arguments (`A`) its nodes
/// hold now.
struct Slot<N, A> {
    graph: cu::CUgraph,
    nodes: N,
    exec: cu::CUgraphExec,
    // `None`: unknown (a failed update), so no launch matches it until it is updated.
    args: Option<A>,
    // When it was last launched (the `Graphs::clock` value): the least recent is updated.
    used: u64,
}

/// The arguments of one launch as words (a `U32` zero-extended: within one shape every position
/// has one type, so equal words are equal arguments), with a hash of them, so that a shape's
/// graphs are told apart by one word each before any argument list is compared: the lookup sits
/// between an operation's call and its `cuGraphLaunch`, where every nanosecond is latency.
#[derive(Clone, Copy, Debug)]
struct LaunchArgs {
    hash: u64,
    len: usize,
    words: [u64; MAX_ARGS],
}

impl LaunchArgs {
    /// The words and hash of `args` (at most `MAX_ARGS`, the caller's check).
    fn new(args: &[Arg]) -> Self {
        let mut words = [0u64; MAX_ARGS];
        let mut h = FxHasher::default();
        for (w, a) in words.iter_mut().zip(args) {
            *w = match *a {
                Arg::U64(v) => v,
                Arg::U32(v) => u64::from(v),
            };
            h.write_u64(*w);
        }
        Self {
            hash: h.finish(),
            len: args.len(),
            words,
        }
    }
}

impl PartialEq for LaunchArgs {
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash
            && self.len == other.len
            && self.words[..self.len] == other.words[..other.len]
    }
}
/// A one-node graph.
type OneSlot = Slot<cu::CUgraphNode, LaunchArgs>;
/// A chain graph.
type ChainSlot = Slot<[cu::CUgraphNode; MAX_CHAIN], ChainArgs>;

// SAFETY: the graph, node and exec handles are driver handles that any thread may use with the
// engine's context; every use goes through the `Mutex` in `LaunchGraphs`, so no two threads
// touch one slot at once.
unsafe impl<N, A> Send for Slot<N, A> {}

/// The graph of `list` (one shape's graphs) to launch with `want`: one that holds `want`
/// already, else a new one from `build` while the shape has fewer than `cap` graphs (and the
/// engine fewer than `MAX_GRAPHS`), else the least recently launched one after `update` gave it
/// `want`. The slot is marked used at `clock`. `None` when the driver refused to build (then
/// `build_refused` is set) or to update, or no graph was there to update: launch otherwise.
#[allow(clippy::too_many_arguments)]
fn pick<'a, N, A: PartialEq>(
    list: &'a mut Vec<Slot<N, A>>,
    want: A,
    cap: usize,
    count: &mut usize,
    clock: u64,
    build: impl FnOnce() -> Option<Slot<N, A>>,
    update: impl FnOnce(&Slot<N, A>) -> bool,
    build_refused: &AtomicBool,
) -> Option<&'a mut Slot<N, A>> {
    let i = if let Some(i) = list.iter().position(|s| s.args.as_ref() == Some(&want)) {
        i
    } else if list.len() < cap && *count < MAX_GRAPHS {
        let Some(slot) = build() else {
            build_refused.store(true, Ordering::Relaxed);
            return None;
        };
        *count += 1;
        list.push(Slot {
            args: Some(want),
            ..slot
        });
        list.len() - 1
    } else {
        let (i, _) = list.iter().enumerate().min_by_key(|(_, s)| s.used)?;
        let ok = update(&list[i]);
        list[i].args = ok.then_some(want);
        if !ok {
            return None;
        }
        i
    };
    let slot = &mut list[i];
    slot.used = clock;
    Some(slot)
}

/// Most launches one chain holds (encrypt_message: six; a pipeline of two example-14 stages:
/// fourteen). Chain shapes are compared and hashed over their used nodes only, so a short
/// chain's lookup does not pay for the longest (run 207).
pub(super) const MAX_CHAIN: usize = 16;

/// The edges of a chain node other than the line's: by default a node hangs on the node
/// recorded before it; `after` makes it hang on an earlier node instead (a branch: the nodes
/// between run beside it), `join` adds a full edge from another earlier node (where a branch
/// comes back). Node indices count from the chain's first node.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub(super) struct Deps {
    pub(super) after: Option<u8>,
    pub(super) join: Option<u8>,
}

/// One recorded launch of a chain.
#[derive(Clone, Copy)]
pub(super) struct Node {
    pub(super) func: cu::CUfunction,
    /// The kernel's name, for errors and for launching the node on its own.
    pub(super) name: &'static str,
    pub(super) grid: (u32, u32, u32),
    pub(super) block: u32,
    pub(super) cooperative: bool,
    pub(super) args: [Arg; MAX_ARGS],
    pub(super) len: usize,
    /// Set by [`record`] from [`next_after`] (launched on their own, nodes go in order, which
    /// every chain's dependencies allow).
    pub(super) deps: Deps,
}

/// The kernels that start with `grid_dep_wait` (kernels/ckks.cu): in a chain graph they hang
/// on the node before them by a programmatic edge. A name here whose kernel touched global
/// memory before its wait would read its predecessor's output early; the test
/// `listed_kernels_wait_before_touching_memory` checks the source (one guarded read is
/// allowed: `ks_moddown`'s addend under `adds_early`, set only for an addend written before
/// the chain). (encrypt_message's and decrypt_message's kernels of kernels/encode.cu keep full
/// edges: with the wait and programmatic edges they were no faster, run 123.)
const GRID_WAIT_KERNELS: [&str; 10] = [
    "ntt_fwd_gs",
    "ntt_inv_gs",
    "ntt_fwd_gq",
    "ks_inner_gs",
    "ks_inner_gh",
    "ks_moddown",
    "ntt_fwd_gp",
    "ntt_inv_gp",
    "ntt_fwd_gpn",
    "ntt_inv_gpn",
];

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("kernel", &self.name)
            .field("grid", &self.grid)
            .field("block", &self.block)
            .field("cooperative", &self.cooperative)
            .finish_non_exhaustive()
    }
}

impl Node {
    /// The kernel starts with `grid_dep_wait`: it may hang on the node before it by a
    /// programmatic edge.
    fn waits(&self) -> bool {
        GRID_WAIT_KERNELS.contains(&self.name)
    }

    fn shape(&self) -> NodeShape {
        NodeShape {
            func: self.func as usize,
            grid: self.grid,
            block: self.block,
            cooperative: self.cooperative,
            waits: self.waits(),
            deps: self.deps,
        }
    }
}

/// This thread's recording: the launches so far, the edges of the next one, and where an
/// operation recorded inside a pipeline began a chain of its own ([`mark_cut`]).
struct Chain {
    nodes: Vec<Node>,
    next: Deps,
    cuts: Vec<usize>,
}

thread_local! {
    // The launches recorded on this thread while a `Recording` is alive.
    static RECORDING: RefCell<Option<Chain>> = const { RefCell::new(None) };
}

/// How many launches this thread's recording holds; `None` when it is not recording.
pub(super) fn recorded() -> Option<usize> {
    RECORDING.with(|r| r.borrow().as_ref().map(|c| c.nodes.len()))
}

/// Notes that the next launch this thread records begins a chain an operation would have
/// submitted on its own (it runs inside a pipeline's recording): a place where the pipeline
/// may cut its launches into chain graphs ([`chain_groups`]). Nothing when not recording.
pub(super) fn mark_cut() {
    RECORDING.with(|r| {
        if let Some(c) = r.borrow_mut().as_mut() {
            let at = c.nodes.len();
            if c.cuts.last() != Some(&at) {
                c.cuts.push(at);
            }
        }
    });
}

/// The next launch this thread records hangs on node `after` instead of the node before it
/// (when given) and also on node `join` (when given). An index that is not an earlier node of
/// the recording is ignored (the line's edge stays), and so is everything when the thread is
/// not recording (launches go in order on their stream).
pub(super) fn next_after(after: Option<usize>, join: Option<usize>) {
    RECORDING.with(|r| {
        if let Some(c) = r.borrow_mut().as_mut() {
            let earlier = |i: usize| (i < c.nodes.len()).then(|| u8::try_from(i).ok()).flatten();
            c.next = Deps {
                after: after.and_then(earlier),
                join: join.and_then(earlier),
            };
        }
    });
}

/// While alive, this thread's kernel launches are recorded for one chain instead of enqueued
/// (see the module docs); not `Send`, so it ends on the thread that started it.
pub(super) struct Recording(PhantomData<*const ()>);

impl Recording {
    /// Starts recording this thread's launches; `None` when a recording is already running
    /// (the launches go to that one).
    pub(super) fn start() -> Option<Self> {
        Self::resume(Vec::with_capacity(MAX_CHAIN))
    }

    /// Goes on recording into `nodes` (the launches a [`super::Pipeline`] recorded before);
    /// `None` when a recording is already running on this thread.
    pub(super) fn resume(nodes: Vec<Node>) -> Option<Self> {
        RECORDING.with(|r| {
            let mut r = r.borrow_mut();
            if r.is_some() {
                return None;
            }
            *r = Some(Chain {
                nodes,
                next: Deps::default(),
                cuts: Vec::new(),
            });
            Some(Self(PhantomData))
        })
    }

    /// Ends the recording: the launches, in order.
    pub(super) fn finish(self) -> Vec<Node> {
        self.finish_with_cuts().0
    }

    /// Ends the recording: the launches, in order, and the node indices [`mark_cut`] noted
    /// since it started or resumed (ascending).
    pub(super) fn finish_with_cuts(self) -> (Vec<Node>, Vec<usize>) {
        RECORDING
            .with(|r| r.borrow_mut().take())
            .map(|c| (c.nodes, c.cuts))
            .unwrap_or_default()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        RECORDING.with(|r| r.borrow_mut().take());
    }
}

/// Records `node` when this thread is recording (`true`); `false` when it is not, and the
/// caller launches it now.
#[cfg(test)]
fn record(node: Node) -> bool {
    record_with(|| node)
}

/// Records the node `make` gives when this thread is recording (`true`; `make` runs only
/// then, so a launch enqueued now builds no node); `false` when it is not, and the caller
/// launches it now.
pub(super) fn record_with(make: impl FnOnce() -> Node) -> bool {
    RECORDING.with(|r| match r.borrow_mut().as_mut() {
        Some(c) => {
            let mut node = make();
            node.deps = std::mem::take(&mut c.next);
            c.nodes.push(node);
            true
        }
        None => false,
    })
}

/// The chain graphs a pipeline's recorded launches go out as: consecutive ranges of
/// `total` nodes, each at most `max` long, cut only where an operation starts (`starts`:
/// the node index of each operation's first launch, ascending) unless one operation alone
/// holds more than `max` (then it is cut every `max` nodes: launched in order, graphs on one
/// stream keep their order). Every node is in exactly one range.
pub(super) fn chain_groups(
    starts: &[usize],
    total: usize,
    max: usize,
) -> Vec<std::ops::Range<usize>> {
    let max = max.max(1);
    let mut out = Vec::new();
    let mut begin = 0;
    while begin < total {
        // The furthest operation start that keeps this range within `max` nodes.
        let limit = (begin + max).min(total);
        let end = if limit == total {
            total
        } else {
            starts
                .iter()
                .copied()
                .filter(|&s| s > begin && s <= limit)
                .max()
                .unwrap_or(limit)
        };
        out.push(begin..end);
        begin = end;
    }
    out
}

/// What one chain node launches, without its argument values.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
struct NodeShape {
    func: usize,
    grid: (u32, u32, u32),
    block: u32,
    cooperative: bool,
    waits: bool,
    deps: Deps,
}

/// What one chain graph launches: its nodes' shapes and the stream. Compared and hashed over
/// its `len` nodes only (the rest are never read), so a short chain's lookup does not pay for
/// `MAX_CHAIN`.
#[derive(Clone, Copy, Debug)]
struct ChainShape {
    nodes: [NodeShape; MAX_CHAIN],
    len: usize,
    stream: usize,
    // Whether the chain's waiting kernels hang by programmatic edges (else full edges).
    pdl: bool,
}

impl ChainShape {
    fn used(&self) -> &[NodeShape] {
        &self.nodes[..self.len.min(MAX_CHAIN)]
    }
}

impl PartialEq for ChainShape {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len
            && self.stream == other.stream
            && self.pdl == other.pdl
            && self.used() == other.used()
    }
}

impl Eq for ChainShape {}

impl std::hash::Hash for ChainShape {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.len.hash(h);
        self.stream.hash(h);
        self.pdl.hash(h);
        self.used().hash(h);
    }
}

/// The argument lists of a chain's nodes.
type ChainArgs = [LaunchArgs; MAX_CHAIN];

/// Every graph, by shape, with a launch clock.
#[derive(Default)]
struct Graphs {
    by_shape: FxHashMap<Shape, Vec<OneSlot>>,
    chains: FxHashMap<ChainShape, Vec<ChainSlot>>,
    count: usize,
    clock: u64,
}

/// The engine's launch graphs (see the module docs).
pub(super) struct LaunchGraphs {
    on: AtomicBool,
    // Programmatic edges for the kernels that wait (else full edges).
    pdl: AtomicBool,
    // Set when the driver refused to build a graph: every launch goes direct from then on.
    broken: AtomicBool,
    // Set when the driver refused to build a chain: chains go node by node from then on.
    chains_broken: AtomicBool,
    graphs: Mutex<Graphs>,
    replays: AtomicU64,
    chain_replays: AtomicU64,
    programmatic_edges: AtomicU64,
}

impl LaunchGraphs {
    /// Graph launches on unless `FHELIUM_CKKS_GRAPHS=0`; programmatic edges on unless
    /// `FHELIUM_CKKS_PDL=0`.
    pub(super) fn from_env() -> Self {
        // A switch is on unless its variable is "0".
        let on = |name: &str| std::env::var(name).map_or(true, |v| v != "0");
        Self {
            on: AtomicBool::new(on("FHELIUM_CKKS_GRAPHS")),
            pdl: AtomicBool::new(on("FHELIUM_CKKS_PDL")),
            broken: AtomicBool::new(false),
            chains_broken: AtomicBool::new(false),
            graphs: Mutex::new(Graphs::default()),
            replays: AtomicU64::new(0),
            chain_replays: AtomicU64::new(0),
            programmatic_edges: AtomicU64::new(0),
        }
    }

    /// Whether operations record their launches as chains: graph launches on and no chain
    /// refused so far.
    pub(super) fn chains_enabled(&self) -> bool {
        self.enabled() && !self.chains_broken.load(Ordering::Relaxed)
    }

    /// Chain graphs launched so far.
    pub(super) fn chain_replays(&self) -> u64 {
        self.chain_replays.load(Ordering::Relaxed)
    }

    /// Programmatic edges in the chain graphs built so far.
    pub(super) fn programmatic_edges(&self) -> u64 {
        self.programmatic_edges.load(Ordering::Relaxed)
    }

    /// Launches `nodes` (node `i`'s argument pointers in `ptrs[i]`, pointing into its `args`)
    /// as one chain graph on `stream`; `false` when chains are off, the chain is longer than
    /// [`MAX_CHAIN`], or the driver refused to build, update or launch it: nothing was
    /// enqueued, and the caller launches the nodes one by one.
    pub(super) fn launch_chain(
        &self,
        nodes: &[Node],
        ptrs: &mut [[*mut c_void; MAX_ARGS]; MAX_CHAIN],
        stream: cu::CUstream,
    ) -> bool {
        if !self.chains_enabled() || nodes.is_empty() || nodes.len() > MAX_CHAIN {
            return false;
        }
        self.try_chain(nodes, ptrs, stream).is_some()
    }

    fn try_chain(
        &self,
        nodes: &[Node],
        ptrs: &mut [[*mut c_void; MAX_ARGS]; MAX_CHAIN],
        stream: cu::CUstream,
    ) -> Option<()> {
        let mut shape = ChainShape {
            nodes: [NodeShape::default(); MAX_CHAIN],
            len: nodes.len(),
            stream: stream as usize,
            pdl: self.programmatic(),
        };
        let mut held: ChainArgs = [LaunchArgs::new(&[]); MAX_CHAIN];
        let mut params = [kernel_params(None); MAX_CHAIN];
        for (i, n) in nodes.iter().enumerate() {
            shape.nodes[i] = n.shape();
            held[i] = LaunchArgs::new(&n.args[..n.len]);
            params[i] = kernel_params(Some((n, &mut ptrs[i])));
        }
        let params = &params[..nodes.len()];
        let mut guard = self.graphs.lock();
        let Graphs {
            chains,
            count,
            clock,
            ..
        } = &mut *guard;
        *clock += 1;
        let slot = pick(
            chains.entry(shape).or_default(),
            held,
            PER_CHAIN,
            count,
            *clock,
            || {
                let (slot, programmatic) = build_chain(params, nodes, shape.pdl)?;
                self.programmatic_edges
                    .fetch_add(programmatic, Ordering::Relaxed);
                Some(slot)
            },
            |slot| update_nodes(slot.exec, &slot.nodes[..params.len()], params),
            &self.chains_broken,
        )?;
        let rc = launch_exec(slot.exec, stream);
        if rc != cu::cudaError_enum::CUDA_SUCCESS {
            // A refused graph launch enqueues nothing; chains stay off from now on.
            self.chains_broken.store(true, Ordering::Relaxed);
            return None;
        }
        self.chain_replays.fetch_add(1, Ordering::Relaxed);
        Some(())
    }

    pub(super) fn set_enabled(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
    }

    /// Programmatic edges (on) or full edges (off) for the chains built or replayed from now
    /// on; chains of either form are kept apart (`ChainShape::pdl`).
    pub(super) fn set_programmatic(&self, on: bool) {
        self.pdl.store(on, Ordering::Relaxed);
    }

    /// Whether chains hang their waiting kernels by programmatic edges.
    pub(super) fn programmatic(&self) -> bool {
        self.pdl.load(Ordering::Relaxed)
    }

    /// Whether launches go through graphs (on, and the driver has not refused one).
    pub(super) fn enabled(&self) -> bool {
        self.on.load(Ordering::Relaxed) && !self.broken.load(Ordering::Relaxed)
    }

    /// Launches that went through a graph so far.
    pub(super) fn replays(&self) -> u64 {
        self.replays.load(Ordering::Relaxed)
    }

    /// Launches `func` through its shape's graph: `None` when the launch must go direct
    /// (graphs off, too many shapes, or the driver refused to build or update the graph;
    /// nothing was enqueued), else the driver's answer to `cuGraphLaunch`. `ptrs` holds
    /// pointers to the values of `args`, in order.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn launch(
        &self,
        func: cu::CUfunction,
        grid: (u32, u32, u32),
        block: u32,
        stream: cu::CUstream,
        ptrs: &mut [*mut c_void; MAX_ARGS],
        args: &[Arg],
        cooperative: bool,
    ) -> Option<cu::CUresult> {
        if !self.enabled() {
            return None;
        }
        let shape = Shape {
            func: func as usize,
            grid,
            block,
            cooperative,
            stream: stream as usize,
        };
        let held = LaunchArgs::new(args);
        let params = node_params(func, grid, block, ptrs.as_mut_ptr());
        let mut guard = self.graphs.lock();
        let Graphs {
            by_shape,
            count,
            clock,
            ..
        } = &mut *guard;
        *clock += 1;
        let slot = pick(
            by_shape.entry(shape).or_default(),
            held,
            PER_SHAPE,
            count,
            *clock,
            || build(&params, cooperative),
            |slot| update_nodes(slot.exec, &[slot.nodes], std::slice::from_ref(&params)),
            &self.broken,
        )?;
        let rc = launch_exec(slot.exec, stream);
        if rc == cu::cudaError_enum::CUDA_SUCCESS {
            self.replays.fetch_add(1, Ordering::Relaxed);
        }
        Some(rc)
    }

    /// Graphs built so far (all shapes).
    pub(super) fn built(&self) -> usize {
        self.graphs.lock().count
    }
}

/// Sets the kernel parameters of `nodes` of the instantiated graph `exec` to `params` (one
/// entry per node); whether the driver took them all (a refusal leaves the graph's arguments
/// unknown to the caller).
fn update_nodes(
    exec: cu::CUgraphExec,
    nodes: &[cu::CUgraphNode],
    params: &[cu::CUDA_KERNEL_NODE_PARAMS],
) -> bool {
    nodes.iter().zip(params).all(|(node, p)| {
        // SAFETY: `exec` and `node` are live handles of one instantiated graph (built by
        // `build` or `build_chain`, destroyed only in `drop`), the node a kernel node of the
        // function, grid and block `p` names (the graph's shape); `p.kernelParams` points to
        // pointers to live argument values matching the kernel's parameters (the callers'
        // contract); the driver copies them, and the update affects only later launches.
        let rc = unsafe { cu::cuGraphExecKernelNodeSetParams(exec, *node, p) };
        rc == cu::cudaError_enum::CUDA_SUCCESS
    })
}

/// Launches the instantiated graph `exec` on `stream`.
fn launch_exec(exec: cu::CUgraphExec, stream: cu::CUstream) -> cu::CUresult {
    // SAFETY: `exec` is a live instantiated graph whose kernel nodes hold the functions, grids,
    // blocks and arguments of this launch (built or updated with them by the caller); `stream`
    // is the caller's live stream of the engine's context.
    unsafe { cu::cuGraphLaunch(exec, stream) }
}

/// The kernel-node parameters of `node` (its argument pointers in `ptrs`), or empty ones.
fn kernel_params(
    node: Option<(&Node, &mut [*mut c_void; MAX_ARGS])>,
) -> cu::CUDA_KERNEL_NODE_PARAMS {
    match node {
        Some((n, ptrs)) => node_params(n.func, n.grid, n.block, ptrs.as_mut_ptr()),
        None => node_params(std::ptr::null_mut(), (0, 0, 0), 0, std::ptr::null_mut()),
    }
}

/// Kernel-node parameters: `func` over `grid` blocks of `block` threads, no dynamic shared
/// memory, the argument pointers at `params`.
fn node_params(
    func: cu::CUfunction,
    grid: (u32, u32, u32),
    block: u32,
    params: *mut *mut c_void,
) -> cu::CUDA_KERNEL_NODE_PARAMS {
    cu::CUDA_KERNEL_NODE_PARAMS {
        func,
        gridDimX: grid.0,
        gridDimY: grid.1,
        gridDimZ: grid.2,
        blockDimX: block,
        blockDimY: 1,
        blockDimZ: 1,
        sharedMemBytes: 0,
        kernelParams: params,
        extra: std::ptr::null_mut(),
    }
}

/// `CUgraphEdgeData` (CUDA 12.3): the edge's output port on the upstream node, input port on
/// the downstream one, dependency type, and reserved zero bytes.
#[repr(C)]
struct EdgeData {
    from_port: u8,
    to_port: u8,
    kind: u8,
    reserved: [u8; 5],
}

/// `cuGraphAddDependencies` with edge data (the CUDA 12.3 ABI, `cuGraphAddDependencies_v2`).
type AddDependencies = unsafe extern "C" fn(
    cu::CUgraph,
    *const cu::CUgraphNode,
    *const cu::CUgraphNode,
    *const EdgeData,
    usize,
) -> cu::CUresult;

/// The driver's `cuGraphAddDependencies` with edge data, looked up once (`None` on a driver
/// older than CUDA 12.3 or on the link stub: chains then use full edges only).
fn add_dependencies() -> Option<AddDependencies> {
    static FOUND: OnceLock<Option<AddDependencies>> = OnceLock::new();
    *FOUND.get_or_init(|| {
        let mut pfn: *mut c_void = std::ptr::null_mut();
        // SAFETY: the symbol is a NUL-terminated string, `pfn` a valid out-pointer; version
        // 12030 asks for the CUDA 12.3 ABI of the function, the one with edge data; flags 0
        // is the default search.
        let rc =
            unsafe { cu::cuGetProcAddress(c"cuGraphAddDependencies".as_ptr(), &mut pfn, 12030, 0) };
        if rc != cu::cudaError_enum::CUDA_SUCCESS || pfn.is_null() {
            return None;
        }
        // SAFETY: the driver returned the CUDA 12.3 ABI of cuGraphAddDependencies, whose
        // signature `AddDependencies` spells out.
        Some(unsafe { std::mem::transmute::<*mut c_void, AddDependencies>(pfn) })
    })
}

/// Sets the cooperative attribute on a kernel node; whether the driver took it.
fn set_cooperative(node: cu::CUgraphNode) -> bool {
    // The attribute value as the driver reads it: a union of up to 64 bytes whose first field
    // is the `cooperative` int (zero-padded so a newer driver's larger union is fully
    // initialised).
    let mut value = [0u64; 8];
    value[0] = 1;
    // SAFETY: `node` is a live kernel node; `value` is 64 bytes, 8-aligned, outlives the call
    // and starts with the `cooperative` int (1, little-endian) as `CUkernelNodeAttrValue` does.
    let rc = unsafe {
        cu::cuGraphKernelNodeSetAttribute(
            node,
            cu::CUkernelNodeAttrID::CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE,
            value.as_ptr().cast(),
        )
    };
    rc == cu::cudaError_enum::CUDA_SUCCESS
}

/// Builds and instantiates a chain graph of `params` (one kernel node per entry, each hanging
/// on the one before it or on its `deps`; `nodes` gives each node's launch kind and edges),
/// and how many of its edges are programmatic (none unless `pdl`); `None` when the driver
/// refuses a step (nothing is left allocated).
fn build_chain(
    params: &[cu::CUDA_KERNEL_NODE_PARAMS],
    nodes: &[Node],
    pdl: bool,
) -> Option<(ChainSlot, u64)> {
    let ok = |rc: cu::CUresult| rc == cu::cudaError_enum::CUDA_SUCCESS;
    let mut graph: cu::CUgraph = std::ptr::null_mut();
    // SAFETY: `graph` is a valid out-pointer; flags 0 is the only defined value.
    if !ok(unsafe { cu::cuGraphCreate(&mut graph, 0) }) {
        return None;
    }
    let fail = |graph: cu::CUgraph| {
        // SAFETY: `graph` was created above and is destroyed once, here, on a failure path
        // (destroying a graph destroys its nodes).
        unsafe { cu::cuGraphDestroy(graph) };
        None
    };
    let mut handles: [cu::CUgraphNode; MAX_CHAIN] = [std::ptr::null_mut(); MAX_CHAIN];
    let mut programmatic = 0;
    for (i, (p, n)) in params.iter().zip(nodes).enumerate() {
        let mut node: cu::CUgraphNode = std::ptr::null_mut();
        // SAFETY: `graph` is live; no dependencies yet (edges are added below); `p` describes
        // a launch whose argument pointers are live for this call (the driver copies them).
        if !ok(unsafe { cu::cuGraphAddKernelNode(&mut node, graph, std::ptr::null(), 0, p) }) {
            return fail(graph);
        }
        if n.cooperative && !set_cooperative(node) {
            return fail(graph);
        }
        if i > 0 {
            let from = handles[n.deps.after.map_or(i - 1, usize::from).min(i - 1)];
            // A programmatic edge: the node may launch once every block of its predecessor
            // has exited (output port CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC = 1, type
            // CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC = 1); its kernel's grid_dep_wait then
            // waits for the predecessor's completion and writes.
            let pdl = pdl
                && n.waits()
                && add_dependencies().is_some_and(|add| {
                    let edge = EdgeData {
                        from_port: 1,
                        to_port: 0,
                        kind: 1,
                        reserved: [0; 5],
                    };
                    // SAFETY: `graph`, `from` and `node` are live; one edge, its data in
                    // `edge` (reserved bytes zero), all outliving the call.
                    ok(unsafe { add(graph, &from, &node, &edge, 1) })
                });
            if pdl {
                programmatic += 1;
            } else {
                // SAFETY: as above, one full (default) edge.
                if !ok(unsafe { cu::cuGraphAddDependencies(graph, &from, &node, 1) }) {
                    return fail(graph);
                }
            }
            if let Some(j) = n.deps.join.map(usize::from).filter(|&j| j < i) {
                // SAFETY: as above; a full edge from the earlier node j (live, in `handles`).
                if !ok(unsafe { cu::cuGraphAddDependencies(graph, &handles[j], &node, 1) }) {
                    return fail(graph);
                }
            }
        }
        handles[i] = node;
    }
    let mut exec: cu::CUgraphExec = std::ptr::null_mut();
    // SAFETY: `graph` is live and complete; `exec` is a valid out-pointer; flags 0.
    if !ok(unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0) }) {
        return fail(graph);
    }
    Some((
        ChainSlot {
            graph,
            nodes: handles,
            exec,
            args: None,
            used: 0,
        },
        programmatic,
    ))
}

/// Builds and instantiates a one-node graph of `params` (cooperative when asked); `None` when
/// the driver refuses any step (nothing is left allocated).
fn build(params: &cu::CUDA_KERNEL_NODE_PARAMS, cooperative: bool) -> Option<OneSlot> {
    let ok = |rc: cu::CUresult| rc == cu::cudaError_enum::CUDA_SUCCESS;
    let mut graph: cu::CUgraph = std::ptr::null_mut();
    // SAFETY: `graph` is a valid out-pointer; flags 0 is the only defined value.
    if !ok(unsafe { cu::cuGraphCreate(&mut graph, 0) }) {
        return None;
    }
    let destroy = |graph: cu::CUgraph| {
        // SAFETY: `graph` was created above and is destroyed once, here, on a failure path.
        unsafe { cu::cuGraphDestroy(graph) };
    };
    let mut node: cu::CUgraphNode = std::ptr::null_mut();
    // SAFETY: `graph` is live; no dependencies (null, 0); `params` describes a launch whose
    // argument pointers are live for this call (the driver copies the values).
    if !ok(unsafe { cu::cuGraphAddKernelNode(&mut node, graph, std::ptr::null(), 0, params) }) {
        destroy(graph);
        return None;
    }
    if cooperative && !set_cooperative(node) {
        destroy(graph);
        return None;
    }
    let mut exec: cu::CUgraphExec = std::ptr::null_mut();
    // SAFETY: `graph` is live and complete; `exec` is a valid out-pointer; flags 0.
    if !ok(unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0) }) {
        destroy(graph);
        return None;
    }
    Some(Slot {
        graph,
        nodes: node,
        exec,
        args: None,
        used: 0,
    })
}

impl Drop for LaunchGraphs {
    fn drop(&mut self) {
        let graphs = self.graphs.get_mut();
        let one = graphs.by_shape.drain().flat_map(|(_, list)| list);
        let chains = graphs.chains.drain().flat_map(|(_, list)| list);
        for (exec, graph) in one
            .map(|s| (s.exec, s.graph))
            .chain(chains.map(|s| (s.exec, s.graph)))
        {
            // SAFETY: each handle was created by `build` or `build_chain` and is destroyed
            // once, here; the driver finishes any launch still in flight before it frees the
            // executable graph.
            unsafe {
                cu::cuGraphExecDestroy(exec);
                cu::cuGraphDestroy(graph);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &'static str, first_arg: u64) -> Node {
        let mut args = [Arg::U32(0); MAX_ARGS];
        args[0] = Arg::U64(first_arg);
        Node {
            func: std::ptr::null_mut(),
            name,
            grid: (8, 1, 1),
            block: 256,
            cooperative: false,
            args,
            len: 1,
            deps: Deps::default(),
        }
    }

    #[test]
    fn recorded_edges_go_to_the_next_launch_only_and_name_earlier_nodes() {
        assert_eq!(recorded(), None, "not recording");
        next_after(Some(0), Some(0)); // not recording: nothing to set, nothing breaks
        let rec = Recording::start().expect("no recording runs");
        assert!(record(node("a", 0)));
        assert!(record(node("b", 1)));
        assert_eq!(recorded(), Some(2));
        next_after(Some(0), None);
        assert!(record(node("c", 2)));
        next_after(None, Some(1));
        assert!(record(node("d", 3)));
        // The edges went to d only.
        assert!(record(node("d2", 4)));
        // Not an earlier node (5 is e itself once recorded, 9 does not exist): ignored.
        next_after(Some(9), Some(5));
        assert!(record(node("e", 5)));
        let deps: Vec<Deps> = rec.finish().iter().map(|n| n.deps).collect();
        let d = |after: Option<u8>, join: Option<u8>| Deps { after, join };
        assert_eq!(
            deps,
            vec![
                d(None, None),
                d(None, None),
                d(Some(0), None),
                d(None, Some(1)),
                d(None, None),
                d(None, None),
            ]
        );
        // The edges are part of a chain's shape: the same kernels in another topology are
        // another graph.
        let mut a = node("x", 0);
        let b = node("x", 0);
        a.deps.after = Some(0);
        assert_ne!(a.shape(), b.shape());
    }

    #[test]
    fn a_recording_takes_this_threads_launches_in_order_and_nests_into_the_outer_one() {
        assert!(!record(node("before", 0)), "no recording yet: launch now");
        let rec = Recording::start().expect("no recording runs");
        assert!(
            Recording::start().is_none(),
            "a nested start joins the outer recording"
        );
        assert!(record(node("a", 1)));
        assert!(record(node("b", 2)));
        // Another thread records nothing of this one's.
        std::thread::spawn(|| assert!(!record(node("elsewhere", 9))))
            .join()
            .expect("thread");
        let nodes = rec.finish();
        let got: Vec<(&str, Arg)> = nodes.iter().map(|n| (n.name, n.args[0])).collect();
        assert_eq!(got, vec![("a", Arg::U64(1)), ("b", Arg::U64(2))]);
        assert!(!record(node("after", 3)), "finished: launch now");
    }

    #[test]
    fn a_dropped_recording_discards_its_launches() {
        {
            let _rec = Recording::start().expect("no recording runs");
            assert!(record(node("lost", 1)));
        }
        assert!(!record(node("after", 2)), "dropped: launch now");
        let rec = Recording::start().expect("a new recording starts empty");
        assert!(rec.finish().is_empty());
    }

    /// The body of the kernel `name` in `src`: from the `{` after its parameter list to the
    /// matching `}`; `None` when `src` defines no such kernel.
    fn kernel_body<'a>(src: &'a str, name: &str) -> Option<&'a str> {
        let mut from = 0;
        while let Some(i) = src[from..].find(name).map(|i| i + from) {
            from = i + name.len();
            // The name's line and the one before it (a definition's head may wrap).
            let head_start = src[..i]
                .rmatch_indices('\n')
                .nth(1)
                .map_or(0, |(j, _)| j + 1);
            let head = &src[head_start..i];
            let is_def = src[from..].starts_with('(')
                && (head.contains("__global__") || head.contains("_KERNEL"));
            if !is_def {
                continue;
            }
            let open = from + src[from..].find('{')?;
            let mut depth = 0usize;
            for (k, c) in src[open..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(&src[open + 1..open + k]);
                        }
                    }
                    _ => {}
                }
            }
            return None;
        }
        None
    }

    /// The statements of a kernel body before its `grid_dep_wait` other than declarations of
    /// shared memory and pointers into it (the only things that may come first: none touches
    /// global memory); `None` when the body has no wait.
    fn early_statements(body: &str) -> Option<Vec<&str>> {
        let wait = body.find("grid_dep_wait();")?;
        Some(
            body[..wait]
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("//"))
                .filter(|l| {
                    !(l.starts_with("CL_SHARED(")
                        || l.starts_with("__shared__")
                        || l.starts_with("u64* sr = s + "))
                })
                .collect(),
        )
    }

    /// The one read allowed before a wait: ks_moddown's addend, only under its `adds_early`
    /// argument, which the engine sets only for an addend no kernel of the chain writes
    /// (`key_switch`, decision 0508).
    const EARLY_READS: [(&str, &str); 1] = [(
        "ks_moddown",
        "const u64 early_add = adds_early ? ks_addend(add0, add1, primes, prime_off, ginv) : 0;",
    )];

    #[test]
    fn listed_kernels_wait_before_touching_memory() {
        let src = include_str!("../../../../kernels/ckks.cu");
        for name in GRID_WAIT_KERNELS {
            let body = kernel_body(src, name)
                .unwrap_or_else(|| panic!("{name}: no kernel of that name in kernels/ckks.cu"));
            let mut early = early_statements(body)
                .unwrap_or_else(|| panic!("{name}: its body has no grid_dep_wait"));
            early.retain(|s| !EARLY_READS.contains(&(name, *s)));
            assert!(
                early.is_empty(),
                "{name}: {early:?} come before its wait; a statement there could read the \
                 predecessor's output early"
            );
        }
    }

    #[test]
    fn the_allowed_early_read_is_in_its_kernel_and_nowhere_else() {
        let src = include_str!("../../../../kernels/ckks.cu");
        for (name, statement) in EARLY_READS {
            let body = kernel_body(src, name).expect("the kernel is defined");
            let early = early_statements(body).expect("the kernel waits");
            assert_eq!(
                early,
                [statement],
                "{name}: the allowed read is its only early statement"
            );
            // The read is guarded: ks_moddown with adds_early = 0 reads after its wait.
            assert!(body.contains("adds_early ? early_add : ks_addend("));
        }
        // Another kernel with the same statement before its wait is still refused.
        let copy = format!(
            "GS_KERNEL other(int* a) {{\n    {}\n    grid_dep_wait();\n}}\n",
            EARLY_READS[0].1
        );
        let body = kernel_body(&copy, "other").expect("other is defined");
        let mut early = early_statements(body).expect("other waits");
        early.retain(|s| !EARLY_READS.contains(&("other", *s)));
        assert_eq!(early.len(), 1);
    }

    #[test]
    fn the_wait_check_finds_kernels_and_rejects_early_reads() {
        let src = "GS_KERNEL good(int* a) {\n    CL_SHARED(s);\n    grid_dep_wait();\n    a[0] = 1;\n}\n\
                   extern \"C\" __global__ void\nbad(const int* a) {\n    int x = a[0];\n    grid_dep_wait();\n}\n\
                   GS_KERNEL none(int* a) {\n    a[0] = 1;\n}\n";
        let good = kernel_body(src, "good").expect("good is defined");
        assert!(
            good.contains("a[0] = 1"),
            "the body runs to the matching brace"
        );
        assert_eq!(early_statements(good), Some(vec![]));
        let bad = kernel_body(src, "bad").expect("bad is defined");
        assert_eq!(early_statements(bad), Some(vec!["int x = a[0];"]));
        let none = kernel_body(src, "none").expect("none is defined");
        assert_eq!(early_statements(none), None);
        assert!(kernel_body(src, "missing").is_none());
        // A call of a kernel's name is not its definition.
        assert!(kernel_body("void f() { good(p); }", "good").is_none());
    }

    #[test]
    fn pipeline_chains_are_cut_where_operations_start() {
        // The example-14 stage: rotate (3 launches), then four one-launch operations.
        assert_eq!(chain_groups(&[0, 3, 4, 5, 6], 7, 8), vec![0..7]);
        // Two rotations and their NTTs (8 launches) fit one chain; a third rotation does not
        // and starts the next one, never splitting an operation.
        assert_eq!(chain_groups(&[0, 3, 4, 7], 8, 8), vec![0..8]);
        assert_eq!(chain_groups(&[0, 3, 4, 7, 8, 11], 12, 8), vec![0..8, 8..12]);
        assert_eq!(chain_groups(&[0, 3, 6, 9], 12, 8), vec![0..6, 6..12]);
        // Relinearize (4 launches) after multiply (1), twice: 10 launches.
        assert_eq!(chain_groups(&[0, 1, 5, 6], 10, 8), vec![0..6, 6..10]);
        // An operation longer than a chain is cut every `max` nodes.
        assert_eq!(chain_groups(&[0], 10, 4), vec![0..4, 4..8, 8..10]);
        assert_eq!(chain_groups(&[0, 9], 10, 4), vec![0..4, 4..8, 8..10]);
        assert_eq!(chain_groups(&[0, 6], 10, 4), vec![0..4, 4..6, 6..10]);
        // Nothing recorded: no chain.
        assert!(chain_groups(&[], 0, 8).is_empty());
        // Every node once, in order, whatever the cuts.
        for total in 0..20 {
            for max in 1..9 {
                let starts: Vec<usize> = (0..total).step_by(3).collect();
                let g = chain_groups(&starts, total, max);
                let flat: Vec<usize> = g.iter().flat_map(Clone::clone).collect();
                assert_eq!(flat, (0..total).collect::<Vec<_>>(), "{total} {max}");
                assert!(g.iter().all(|r| !r.is_empty() && r.len() <= max));
            }
        }
    }

    #[test]
    fn a_resumed_recording_keeps_the_earlier_launches() {
        let node = |name| Node {
            func: std::ptr::null_mut(),
            name,
            grid: (1, 1, 1),
            block: 32,
            cooperative: false,
            args: [Arg::U32(0); MAX_ARGS],
            len: 0,
            deps: Deps::default(),
        };
        let rec = Recording::resume(vec![node("a")]).expect("no recording runs");
        // A second recording on the same thread is refused while one runs.
        assert!(Recording::resume(Vec::new()).is_none());
        assert!(Recording::start().is_none());
        // An operation inside it that would have begun a chain of its own marks a cut, once
        // per position.
        mark_cut();
        mark_cut();
        assert!(record(node("b")));
        assert!(record(node("c")));
        mark_cut();
        assert!(record(node("d")));
        assert_eq!(recorded(), Some(4));
        let (nodes, cuts) = rec.finish_with_cuts();
        assert_eq!(
            nodes.iter().map(|n| n.name).collect::<Vec<_>>(),
            ["a", "b", "c", "d"]
        );
        assert_eq!(cuts, [1, 3]);
        // Finished: launches are no longer recorded, and cuts are not noted.
        assert_eq!(recorded(), None);
        assert!(!record(node("e")));
        mark_cut();
        let rec = Recording::start().expect("none runs");
        assert!(rec.finish_with_cuts().1.is_empty());
    }

    #[test]
    fn chains_of_either_edge_form_are_kept_apart() {
        let g = LaunchGraphs::from_env();
        g.set_programmatic(false);
        assert!(!g.programmatic());
        g.set_programmatic(true);
        assert!(g.programmatic());
        // A chain built with programmatic edges is never replayed for a full-edge request of
        // the same nodes on the same stream, nor the other way round.
        let pdl = ChainShape {
            nodes: [NodeShape::default(); MAX_CHAIN],
            len: 3,
            stream: 7,
            pdl: true,
        };
        let full = ChainShape { pdl: false, ..pdl };
        let mut held: FxHashMap<ChainShape, u32> = FxHashMap::default();
        held.insert(pdl, 1);
        assert_eq!(held.get(&full), None);
        held.insert(full, 2);
        assert_eq!((held.get(&pdl), held.get(&full)), (Some(&1), Some(&2)));
    }

    #[test]
    fn chain_shapes_compare_only_their_used_nodes() {
        let a = ChainShape {
            nodes: [NodeShape::default(); MAX_CHAIN],
            len: 2,
            stream: 7,
            pdl: true,
        };
        let mut b = a;
        b.nodes[2].func = 99; // past len: the same shape
        let mut held: FxHashMap<ChainShape, u32> = FxHashMap::default();
        held.insert(a, 1);
        assert_eq!(held.get(&b), Some(&1));
        b.nodes[1].func = 99; // a used node: another shape
        assert_eq!(held.get(&b), None);
        let longer = ChainShape { len: 3, ..a };
        assert_eq!(held.get(&longer), None);
    }

    #[test]
    fn launch_args_match_only_the_same_values_in_the_same_order() {
        let a = [
            Arg::U64(0x1000),
            Arg::U64(0x2000),
            Arg::U32(3),
            Arg::U64(16384),
        ];
        let same = LaunchArgs::new(&a);
        assert_eq!(same, LaunchArgs::new(&a.clone()));
        assert_eq!(same.hash, LaunchArgs::new(&a).hash);
        // One value changed, two swapped, one left off or added: another argument list.
        let mut b = a;
        b[2] = Arg::U32(4);
        assert_ne!(same, LaunchArgs::new(&b));
        let mut c = a;
        c.swap(0, 1);
        assert_ne!(same, LaunchArgs::new(&c));
        assert_ne!(same, LaunchArgs::new(&a[..3]));
        let longer = [a[0], a[1], a[2], a[3], Arg::U32(0)];
        assert_ne!(
            same,
            LaunchArgs::new(&longer),
            "a trailing zero is an argument too"
        );
        // Equal hashes alone do not make a match: the words are compared as well.
        let mut forged = LaunchArgs::new(&b);
        forged.hash = same.hash;
        assert_ne!(same, forged);
        // A 32-bit argument is its value zero-extended (one type per position in a shape).
        assert_eq!(LaunchArgs::new(&[Arg::U32(7)]).words[0], 7);
    }

    #[test]
    fn pick_replays_a_held_argument_list_and_updates_the_least_recent_when_full() {
        let refused = AtomicBool::new(false);
        let slot = |args| Slot {
            graph: std::ptr::null_mut(),
            nodes: std::ptr::null_mut(),
            exec: std::ptr::null_mut(),
            args: Some(args),
            used: 0,
        };
        let args = |v: u64| LaunchArgs::new(&[Arg::U64(v), Arg::U32(1)]);
        let mut list: Vec<OneSlot> = Vec::new();
        let mut count = 0;
        // Two builds, then a replay of the first without a build or an update.
        for (clock, v) in [(1, 10), (2, 20)] {
            let got = pick(
                &mut list,
                args(v),
                2,
                &mut count,
                clock,
                || Some(slot(args(0))),
                |_| panic!("no update"),
                &refused,
            );
            assert_eq!(got.map(|s| s.args), Some(Some(args(v))));
        }
        let got = pick(
            &mut list,
            args(10),
            2,
            &mut count,
            3,
            || panic!("no build"),
            |_| panic!("no update"),
            &refused,
        );
        assert_eq!(got.map(|s| s.used), Some(3));
        assert_eq!(count, 2);
        // Full: a new list updates the least recently launched graph (20's, used at 2).
        let mut updated = None;
        let got = pick(
            &mut list,
            args(30),
            2,
            &mut count,
            4,
            || panic!("no build"),
            |s| {
                updated = s.args;
                true
            },
            &refused,
        );
        assert_eq!(got.map(|s| s.args), Some(Some(args(30))));
        assert_eq!(updated, Some(args(20)));
        assert_eq!(list.len(), 2);
        // A refused update leaves the slot's arguments unknown and launches nothing through it.
        let got = pick(
            &mut list,
            args(40),
            2,
            &mut count,
            5,
            || panic!("no build"),
            |_| false,
            &refused,
        );
        assert!(got.is_none());
        assert!(list.iter().any(|s| s.args.is_none()));
        assert!(!refused.load(Ordering::Relaxed));
    }

    #[test]
    fn node_shapes_differ_by_launch_kind_not_by_arguments() {
        let a = node("k", 1);
        let mut b = a;
        b.name = "ks_moddown"; // starts with grid_dep_wait
        assert!(b.waits() && !a.waits());
        assert_ne!(
            a.shape(),
            b.shape(),
            "a programmatic dependent is another shape"
        );
        b = a;
        b.cooperative = true;
        assert_ne!(a.shape(), b.shape(), "a cooperative node is another shape");
        b = a;
        b.args[0] = Arg::U64(7);
        assert_eq!(a.shape(), b.shape(), "arguments are not part of the shape");
    }
}
