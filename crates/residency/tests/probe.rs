//! An instruction-count probe for profiling `decide` under valgrind (ignored by default):
//! `PROBE_VALUES=10000 valgrind --tool=callgrind <test binary> --ignored decide_probe`.
#![allow(clippy::unwrap_used)]
use fhelium_residency::*;

#[test]
#[ignore = "profiling probe, run under callgrind"]
fn decide_probe() {
    let values: u64 = std::env::var("PROBE_VALUES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let cuda = ResidencyLocation::Cuda(0);
    let candidates = (values - 8).min(1000);
    let spec = ResidencyValueSpec::adopted("Ciphertext", 1, 1, ReplicaMode::Replicable).unwrap();
    let mut b = ResidencySnapshotBuilder::new(1, 42).budget(cuda, candidates);
    let mut reqs = Vec::new();
    for i in 0..values {
        let h = ResidencyHandle::new(1, i, "Ciphertext").unwrap();
        let mut p = ResidencyValueSnapshotParts::new(h.clone(), spec.clone()).at(PAGEABLE_HOST);
        if i < candidates {
            p = p.at(cuda).with_last_access(candidates - i);
        } else if i < candidates + 8 {
            reqs.push(ResidencyRequirement::new(h, cuda));
        }
        b = b.value(p.build().unwrap());
    }
    let snapshot = b.build().unwrap();
    let request = ResidencyRequest::new("probe", reqs, []).unwrap();
    let policy = DeterministicTieredLRU::new();
    let iterations: u32 = std::env::var("PROBE_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let before = thread_cpu_ns();
    for _ in 0..iterations {
        let d = decide(&snapshot, &request, &policy, None).unwrap();
        assert_eq!(d.evictions().len(), 8);
    }
    if let (Some(a), Some(b)) = (before, thread_cpu_ns()) {
        println!(
            "values={values} decide: {:.1} us of thread CPU time per call ({iterations} calls)",
            (b - a) as f64 / 1e3 / f64::from(iterations)
        );
    }
}

/// The thread's on-CPU time in ns (Linux schedstat), so a loaded machine's run queue does not
/// count.
fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Finds the smallest thread stack that a maximally deep decision needs (ignored; prints).
#[test]
#[ignore = "measurement probe"]
fn stack_probe() {
    let depth = u64::from(MAX_SEARCH_DEPTH) - 1;
    let cuda = ResidencyLocation::Cuda(0);
    let spec = ResidencyValueSpec::adopted("T", 1, 1, ReplicaMode::Replicable).unwrap();
    let mut b = ResidencySnapshotBuilder::new(1, 1).budget(cuda, depth);
    let mut reqs = Vec::new();
    for i in 0..2 * depth {
        let h = ResidencyHandle::new(1, i, "T").unwrap();
        let mut p = ResidencyValueSnapshotParts::new(h.clone(), spec.clone()).at(PAGEABLE_HOST);
        if i < depth {
            p = p.at(cuda);
        } else {
            reqs.push(ResidencyRequirement::new(h, cuda));
        }
        b = b.value(p.build().unwrap());
    }
    let snapshot = std::sync::Arc::new(b.build().unwrap());
    let request = std::sync::Arc::new(ResidencyRequest::new("deep", reqs, []).unwrap());
    // A stack overflow aborts the process: run one size per process (PROBE_STACK_KIB).
    let kib: usize = std::env::var("PROBE_STACK_KIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2048);
    {
        let (s, r) = (snapshot.clone(), request.clone());
        let ok = std::thread::Builder::new()
            .stack_size(kib * 1024)
            .spawn(move || decide(&s, &r, &DeterministicTieredLRU::new(), None).is_ok())
            .unwrap()
            .join()
            .unwrap_or(false);
        println!("stack {kib} KiB: depth {depth} ok={ok}");
    }
}
