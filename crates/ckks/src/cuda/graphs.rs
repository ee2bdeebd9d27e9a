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

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use cust::sys as cu;
use parking_lot::Mutex;

use super::{Arg, MAX_ARGS};

/// Most graphs one engine keeps; launches that would need more go direct.
const MAX_GRAPHS: usize = 512;
/// Most graphs per shape (distinct argument lists replayed without an update).
const PER_SHAPE: usize = 8;

/// What one executable graph launches: everything of a launch but its argument values.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
struct Shape {
    func: usize,
    grid: (u32, u32, u32),
    block: u32,
    cooperative: bool,
    stream: usize,
}

/// One instantiated one-node graph and the arguments its node holds now.
struct Slot {
    graph: cu::CUgraph,
    node: cu::CUgraphNode,
    exec: cu::CUgraphExec,
    // `None`: unknown (a failed update), so no launch matches it until it is updated.
    args: Option<([Arg; MAX_ARGS], usize)>,
    // When it was last launched (the `Graphs::clock` value): the least recent is updated.
    used: u64,
}

/// Every graph, by shape, with a launch clock.
#[derive(Default)]
struct Graphs {
    by_shape: HashMap<Shape, Vec<Slot>>,
    count: usize,
    clock: u64,
}

// SAFETY: the graph, node and exec handles are driver handles that any thread may use with the
// engine's context; every use goes through the `Mutex` in `LaunchGraphs`, so no two threads
// touch one slot at once.
unsafe impl Send for Slot {}

/// The engine's launch graphs (see the module docs).
pub(super) struct LaunchGraphs {
    on: AtomicBool,
    // Set when the driver refused to build a graph: every launch goes direct from then on.
    broken: AtomicBool,
    graphs: Mutex<Graphs>,
    replays: AtomicU64,
}

impl LaunchGraphs {
    /// Graph launches on unless `FHELIUM_CKKS_GRAPHS=0`.
    pub(super) fn from_env() -> Self {
        let on = std::env::var("FHELIUM_CKKS_GRAPHS").map_or(true, |v| v != "0");
        Self {
            on: AtomicBool::new(on),
            broken: AtomicBool::new(false),
            graphs: Mutex::new(Graphs::default()),
            replays: AtomicU64::new(0),
        }
    }

    pub(super) fn set_enabled(&self, on: bool) {
        self.on.store(on, Ordering::Relaxed);
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
        let mut held = [Arg::U32(0); MAX_ARGS];
        held[..args.len()].copy_from_slice(args);
        let params = cu::CUDA_KERNEL_NODE_PARAMS {
            func,
            gridDimX: grid.0,
            gridDimY: grid.1,
            gridDimZ: grid.2,
            blockDimX: block,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: 0,
            kernelParams: ptrs.as_mut_ptr(),
            extra: std::ptr::null_mut(),
        };
        let want = Some((held, args.len()));
        let mut guard = self.graphs.lock();
        let Graphs {
            by_shape,
            count,
            clock,
        } = &mut *guard;
        *clock += 1;
        let list = by_shape.entry(shape).or_default();
        let slot = if let Some(i) = list.iter().position(|s| s.args == want) {
            &mut list[i]
        } else if list.len() < PER_SHAPE && *count < MAX_GRAPHS {
            let Some(slot) = build(&params, cooperative) else {
                self.broken.store(true, Ordering::Relaxed);
                return None;
            };
            *count += 1;
            list.push(Slot { args: want, ..slot });
            list.last_mut()?
        } else {
            // The least recently launched graph of the shape takes the new arguments.
            let slot = list.iter_mut().min_by_key(|s| s.used)?;
            // SAFETY: `slot.exec` and `slot.node` are live handles of one instantiated graph
            // (built by `build`, destroyed only in `drop`); `params.kernelParams` points to
            // `args.len()` pointers to live argument values matching the kernel's parameters
            // (the caller's contract); the driver copies the values before returning, and the
            // update affects only later launches of the graph.
            let rc = unsafe { cu::cuGraphExecKernelNodeSetParams(slot.exec, slot.node, &params) };
            if rc != cu::cudaError_enum::CUDA_SUCCESS {
                slot.args = None;
                return None;
            }
            slot.args = want;
            slot
        };
        slot.used = *clock;
        // SAFETY: `slot.exec` is a live instantiated graph whose one kernel node holds this
        // launch's function, grid, block and arguments (built or updated with them above);
        // `stream` is the caller's live stream of the engine's context.
        let rc = unsafe { cu::cuGraphLaunch(slot.exec, stream) };
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

/// Builds and instantiates a one-node graph of `params` (cooperative when asked); `None` when
/// the driver refuses any step (nothing is left allocated).
fn build(params: &cu::CUDA_KERNEL_NODE_PARAMS, cooperative: bool) -> Option<Slot> {
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
    if cooperative {
        // The attribute value as the driver reads it: a union of up to 64 bytes whose first
        // field is the `cooperative` int (zero-padded so a newer driver's larger union is
        // fully initialised).
        let mut value = [0u64; 8];
        value[0] = 1;
        // SAFETY: `node` is live; `value` is 64 bytes, 8-aligned, outlives the call and starts
        // with the `cooperative` int (1, little-endian) as `CUkernelNodeAttrValue` does.
        let rc = unsafe {
            cu::cuGraphKernelNodeSetAttribute(
                node,
                cu::CUkernelNodeAttrID::CU_KERNEL_NODE_ATTRIBUTE_COOPERATIVE,
                value.as_ptr().cast(),
            )
        };
        if !ok(rc) {
            destroy(graph);
            return None;
        }
    }
    let mut exec: cu::CUgraphExec = std::ptr::null_mut();
    // SAFETY: `graph` is live and complete; `exec` is a valid out-pointer; flags 0.
    if !ok(unsafe { cu::cuGraphInstantiateWithFlags(&mut exec, graph, 0) }) {
        destroy(graph);
        return None;
    }
    Some(Slot {
        graph,
        node,
        exec,
        args: None,
        used: 0,
    })
}

impl Drop for LaunchGraphs {
    fn drop(&mut self) {
        for slot in self
            .graphs
            .get_mut()
            .by_shape
            .drain()
            .flat_map(|(_, list)| list)
        {
            // SAFETY: each handle was created by `build` and is destroyed once, here; the
            // driver finishes any launch still in flight before it frees the executable graph.
            unsafe {
                cu::cuGraphExecDestroy(slot.exec);
                cu::cuGraphDestroy(slot.graph);
            }
        }
    }
}
