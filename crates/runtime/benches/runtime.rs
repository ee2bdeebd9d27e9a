//! Runtime benchmarks: a 3-handle lease round trip, `snapshot()` with 10,000 values, and the
//! seed request's decide and scope entry (sim:0 stands in for cuda:0; the seed's byte sizes
//! are scaled down 1024x so that setup does not dominate).
#![allow(missing_docs, clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use fhelium_cuda::{Memory, Tensors};
use fhelium_residency::{
    DeterministicTieredLRU, MemoryReservation, ReplicaMode, ResidencyLocation, ResidencyRequest,
    ResidencyRequirement, PAGEABLE_HOST, PINNED_HOST,
};
use fhelium_runtime::{ResidencyController, ResidencyManager, TransferStreams};

fn value(mem: &Memory, at: ResidencyLocation, words: usize) -> Tensors {
    Tensors::upload(mem, &at, &[&vec![1; words]], None)
        .unwrap()
        .wait()
        .unwrap()
}

fn lease_round_trip(c: &mut Criterion) {
    let mem = Memory::with_sim_devices(1);
    let m = ResidencyManager::new(mem.clone());
    let hs: Vec<_> = (0..3)
        .map(|_| {
            m.adopt(value(&mem, PAGEABLE_HOST, 8), None, ReplicaMode::Replicable)
                .unwrap()
        })
        .collect();
    c.bench_function("lease_3_handles_acquire_release_host", |b| {
        b.iter(|| {
            let l = m
                .acquire(&[&hs[0], &hs[1], &hs[2]], PAGEABLE_HOST, None)
                .unwrap();
            black_box(l.get(&hs[1]).unwrap());
            l.release().unwrap();
        });
    });
    let dev = ResidencyLocation::Sim(0);
    for h in &hs {
        m.ensure(h, dev, None).unwrap();
    }
    let stream = mem.stream(&dev).unwrap();
    c.bench_function("lease_3_handles_acquire_release_sim_stream", |b| {
        b.iter(|| {
            let l = m
                .acquire(&[&hs[0], &hs[1], &hs[2]], dev, Some(&stream))
                .unwrap();
            black_box(l.get(&hs[1]).unwrap());
            l.release().unwrap();
        });
    });
}

fn snapshot_10k(c: &mut Criterion) {
    let mem = Memory::with_sim_devices(1);
    let m = ResidencyManager::builder(mem.clone())
        .budget(ResidencyLocation::Sim(0), 1 << 40)
        .build()
        .unwrap();
    for i in 0..10_000 {
        let h = m
            .adopt(value(&mem, PAGEABLE_HOST, 1), None, ReplicaMode::Replicable)
            .unwrap();
        if i % 10 == 0 {
            m.ensure(&h, ResidencyLocation::Sim(0), None).unwrap();
        }
    }
    c.bench_function("snapshot_10000_values", |b| {
        b.iter(|| black_box(m.snapshot().unwrap()));
    });
    // The same after one value changed (a hold taken or released between snapshots, outside
    // the timing): the capture compares every value and rebuilds the changed one.
    let h = m
        .adopt(value(&mem, PAGEABLE_HOST, 1), None, ReplicaMode::Replicable)
        .unwrap();
    let mut held = None;
    c.bench_function("snapshot_10000_values_one_changed", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                held = match held.take() {
                    Some(g) => {
                        drop(g);
                        None
                    }
                    None => Some(m.hold(&[h.raw()], PAGEABLE_HOST).unwrap()),
                };
                let t = std::time::Instant::now();
                let s = black_box(m.snapshot().unwrap());
                drop(s);
                total += t.elapsed();
            }
            total
        });
    });
}

/// `ResidencyController::decide` over 10,000 values (a one-handle request that needs no
/// reclaim): the controller's snapshot (with its policy facts) plus the planner. One value's
/// hold toggles between decisions (outside the timing), as a running application changes
/// state between requests.
fn decide_10k(c: &mut Criterion) {
    let mem = Memory::with_sim_devices(1);
    let dev = ResidencyLocation::Sim(0);
    let m = ResidencyManager::builder(mem.clone())
        .budget(dev, 1 << 40)
        .build()
        .unwrap();
    let mut hs = Vec::new();
    for i in 0..10_000 {
        let h = m
            .adopt(value(&mem, PAGEABLE_HOST, 1), None, ReplicaMode::Replicable)
            .unwrap();
        if i % 10 == 0 {
            m.ensure(&h, dev, None).unwrap();
        }
        hs.push(h);
    }
    let ctl = ResidencyController::new(&m);
    let request = ResidencyRequest::new(
        "one",
        [ResidencyRequirement::new(hs[1].raw().clone(), dev)],
        [],
    )
    .unwrap();
    let mut held = None;
    c.bench_function("controller_decide_10000_values_one_changed", |b| {
        b.iter_custom(|iters| {
            let mut total = std::time::Duration::ZERO;
            for _ in 0..iters {
                held = match held.take() {
                    Some(g) => {
                        drop(g);
                        None
                    }
                    None => Some(m.hold(&[hs[5].raw()], PAGEABLE_HOST).unwrap()),
                };
                let t = std::time::Instant::now();
                black_box(ctl.decide(&request).unwrap());
                total += t.elapsed();
            }
            total
        });
    });
}

struct Seed {
    m: ResidencyManager,
    c: ResidencyController,
    request: ResidencyRequest,
}

/// The seed example's working set (ex14) at 1/1024 scale: cold 1 KiB, weight 1 KiB, key 18 KiB,
/// source 2 KiB, workspace 6 KiB on sim:0.
fn seed() -> Seed {
    const K: usize = 128; // words per KiB
    let mem = Memory::with_sim_devices(1);
    let dev = ResidencyLocation::Sim(0);
    let m = ResidencyManager::builder(mem.clone())
        .budget(PINNED_HOST, 2048)
        .budget(dev, 27 * 1024)
        .build()
        .unwrap();
    let cold = m
        .adopt(value(&mem, PAGEABLE_HOST, K), None, ReplicaMode::Replicable)
        .unwrap();
    let weight = m
        .adopt(value(&mem, PAGEABLE_HOST, K), None, ReplicaMode::Replicable)
        .unwrap();
    let key = m
        .adopt(
            value(&mem, PAGEABLE_HOST, 18 * K),
            None,
            ReplicaMode::Replicable,
        )
        .unwrap();
    let source = m
        .adopt(
            value(&mem, PINNED_HOST, 2 * K),
            None,
            ReplicaMode::Exclusive,
        )
        .unwrap();
    m.ensure(&cold, dev, None).unwrap();
    let policy =
        DeterministicTieredLRU::with_fallback_tiers([(dev, vec![PINNED_HOST, PAGEABLE_HOST])])
            .unwrap();
    let c = ResidencyController::with_policy(&m, policy);
    let request = ResidencyRequest::new(
        "automatic/rotate-scale/tile-0",
        [
            ResidencyRequirement::new(source.raw().clone(), dev),
            ResidencyRequirement::new(key.raw().clone(), dev),
            ResidencyRequirement::new(weight.raw().clone(), dev),
        ],
        [MemoryReservation::new(dev, 6 * 1024, "rotate/multiply outputs and workspace").unwrap()],
    )
    .unwrap();
    Seed { m, c, request }
}

fn seed_request(c: &mut Criterion) {
    let s = seed();
    c.bench_function("seed_decide", |b| {
        b.iter(|| black_box(s.c.decide(&s.request).unwrap()));
    });
    drop(s);
    let streams = TransferStreams::new();
    c.bench_function("seed_scope_entry_and_exit", |b| {
        b.iter_batched(
            || {
                let s = seed();
                let d = s.c.decide(&s.request).unwrap();
                (s, d)
            },
            |(s, d)| {
                let scope = s.c.scope(&d, &streams).unwrap();
                let report = scope.close().unwrap();
                black_box(report);
                s.m
            },
            BatchSize::PerIteration,
        );
    });
}

criterion_group!(
    benches,
    lease_round_trip,
    snapshot_10k,
    decide_10k,
    seed_request
);
criterion_main!(benches);
