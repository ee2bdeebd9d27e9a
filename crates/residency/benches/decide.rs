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

/// A program of 16 uses over `values` values: use s requires 8 values at `cuda:0` that no
/// earlier use required, on a device exactly full of 1,000 cached candidates (or all but 8
/// of the values when fewer): every use reclaims 8.
fn program_scenario(values: u64) -> (ResidencySnapshot, Vec<ResidencyProgramStep>) {
    let cuda = ResidencyLocation::Cuda(0);
    let steps = 16u64;
    let candidates = (values - steps * REQUIRED).min(1000);
    let spec =
        ResidencyValueSpec::adopted("Ciphertext", CHARGE, CHARGE, ReplicaMode::Replicable).unwrap();
    let mut b = ResidencySnapshotBuilder::new(1, 42).budget(cuda, candidates * CHARGE);
    for i in 0..values {
        let h = ResidencyHandle::new(1, i, "Ciphertext").unwrap();
        let mut p = ResidencyValueSnapshotParts::new(h, spec.clone()).at(PAGEABLE_HOST);
        if i < candidates {
            p = p.at(cuda).with_last_access(candidates - i);
        }
        b = b.value(p.build().unwrap());
    }
    let program = (0..steps)
        .map(|s| {
            let reqs = (0..REQUIRED).map(|r| {
                let h =
                    ResidencyHandle::new(1, candidates + s * REQUIRED + r, "Ciphertext").unwrap();
                ResidencyRequirement::new(h, cuda)
            });
            ResidencyProgramStep::used(ResidencyRequest::new(&format!("s{s}"), reqs, []).unwrap())
        })
        .collect();
    (b.build().unwrap(), program)
}

fn bench_forecast(c: &mut Criterion) {
    let policy = DeterministicTieredLRU::with_fallback_tiers([(
        ResidencyLocation::Cuda(0),
        vec![PINNED_HOST, PAGEABLE_HOST],
    )])
    .unwrap();
    let mut group = c.benchmark_group("forecast_16_steps");
    for values in [1_000u64, 10_000] {
        let (snapshot, program) = program_scenario(values);
        let f = forecast(
            &snapshot,
            &program,
            &policy,
            None,
            DEFAULT_SEARCH_STATE_LIMIT,
        )
        .unwrap();
        assert!(f.steps.iter().all(|s| s.decision.evictions().len() == 8));
        group.bench_with_input(BenchmarkId::from_parameter(values), &values, |bench, _| {
            bench.iter(|| {
                forecast(
                    black_box(&snapshot),
                    black_box(&program),
                    &policy,
                    None,
                    DEFAULT_SEARCH_STATE_LIMIT,
                )
                .unwrap()
            });
        });
    }
    group.finish();
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

criterion_group!(benches, bench_decide, bench_forecast);
criterion_main!(benches);
