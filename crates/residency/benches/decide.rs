//! decide() on synthetic snapshots under pressure (issue 3, item 7).
//!
//! Each snapshot has `values` values: up to 1,000 of them are cached replicas on `cuda:0` (also
//! at pageable host, so each is a legal drop candidate, with distinct access epochs), 8 are
//! requested at `cuda:0`, and the rest live at pageable host only. The device budget is exactly
//! full, so each of the 8 requirements forces one eviction: 8 evictions, 9 search states, the
//! same shape as FHElium's residency benchmark.
#![allow(missing_docs, clippy::unwrap_used)]

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use fhelium_residency::*;

const CHARGE: u64 = 1 << 20;
const REQUIRED: u64 = 8;

fn scenario(values: u64) -> (ResidencySnapshot, ResidencyRequest) {
    let cuda = ResidencyLocation::Cuda(0);
    let candidates = (values - REQUIRED).min(1000);
    let spec =
        ResidencyValueSpec::adopted("Ciphertext", CHARGE, CHARGE, ReplicaMode::Replicable).unwrap();
    let mut b = ResidencySnapshotBuilder::new(1, 42).budget(cuda, candidates * CHARGE);
    let mut requirements = Vec::new();
    for i in 0..values {
        let h = ResidencyHandle::new(1, i, "Ciphertext").unwrap();
        let mut p = ResidencyValueSnapshotParts::new(h.clone(), spec.clone()).at(PAGEABLE_HOST);
        if i < candidates {
            p = p.at(cuda).with_last_access(candidates - i);
        } else if i < candidates + REQUIRED {
            requirements.push(ResidencyRequirement::new(h, cuda));
        }
        b = b.value(p.build().unwrap());
    }
    let snapshot = b.build().unwrap();
    let request = ResidencyRequest::new("bench", requirements, []).unwrap();
    (snapshot, request)
}

fn bench_decide(c: &mut Criterion) {
    let policy = DeterministicTieredLRU::with_fallback_tiers([(
        ResidencyLocation::Cuda(0),
        vec![PINNED_HOST, PAGEABLE_HOST],
    )])
    .unwrap();
    let mut group = c.benchmark_group("decide");
    for values in [100u64, 1_000, 10_000] {
        let (snapshot, request) = scenario(values);
        let d = decide(&snapshot, &request, &policy, None).unwrap();
        assert_eq!(d.evictions().len(), 8);
        assert_eq!(d.explored_states(), 9);
        group.bench_with_input(BenchmarkId::from_parameter(values), &values, |bench, _| {
            bench
                .iter(|| decide(black_box(&snapshot), black_box(&request), &policy, None).unwrap());
        });
    }
    group.finish();

    let mut group = c.benchmark_group("snapshot_index");
    for values in [100u64, 1_000, 10_000] {
        let (snapshot, _) = scenario(values);
        let parts = snapshot.parts().clone();
        group.bench_with_input(BenchmarkId::from_parameter(values), &values, |bench, _| {
            bench.iter(|| ResidencySnapshot::new(black_box(parts.clone())).unwrap());
        });
    }
    group.finish();
}

criterion_group!(benches, bench_decide);
criterion_main!(benches);
