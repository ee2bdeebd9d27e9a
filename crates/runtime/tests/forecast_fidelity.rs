//! Randomized check of forecasts against runs: seeded random programs of uses and prefetches
//! (1-3 requirements of replicable and exclusive values of several sizes, reservations on
//! uses, budgets from tight to roomy, LRU or next-use eviction) are forecast, then run through
//! `use_request` / `prefetch` (with `apply_next_use` before every step when asked). Every step
//! the forecast decides must be decided identically by the run (reclaims, entries, predicted
//! peaks), and a forecast that fails at step i must see the run fail at step i with the same
//! error kind after identical steps. `FHELIUM_FORECAST_SEEDS` seeds (default 300).
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use fhelium_cuda::Tensors;
use fhelium_residency::{
    DeterministicTieredLRU, MemoryReservation, ReplicaMode, ResidencyDecision,
    ResidencyProgramStep, ResidencyRequest, ResidencyRequirement,
};
use fhelium_runtime::{ConsumerStreams, Handle, ResidencyController, TransferStreams};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn same(f: &ResidencyDecision, r: &ResidencyDecision) -> bool {
    f.plan().reclaim() == r.plan().reclaim()
        && f.plan().enter() == r.plan().enter()
        && f.explanation().predicted_peak_bytes == r.explanation().predicted_peak_bytes
}

/// One seed: returns (steps decided, whether the program failed).
fn one(seed: u64) -> (usize, bool) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mem = memory();
    let values = rng.random_range(2..7usize);
    let sizes: Vec<usize> = (0..values).map(|_| rng.random_range(1..4usize)).collect();
    let total: usize = sizes.iter().sum();
    let largest = sizes.iter().copied().max().unwrap_or(1);
    let budget = (rng.random_range(2 * largest..=total + 2) * W * 8) as u64;
    let m = manager(&mem, &[(N, budget)]);
    let h: Vec<Handle<Tensors>> = sizes
        .iter()
        .enumerate()
        .map(|(i, &k)| {
            let words: Vec<u64> = (0..(k * W) as u64).map(|w| i as u64 * 1000 + w).collect();
            let v = Tensors::upload(&mem, &P, &[&words], None)
                .unwrap()
                .wait()
                .unwrap();
            let mode = if rng.random_bool(0.25) {
                ReplicaMode::Exclusive
            } else {
                ReplicaMode::Replicable
            };
            m.adopt(v, Some(P), mode).unwrap()
        })
        .collect();
    let policy = DeterministicTieredLRU::with_fallback_tiers([(N, vec![P])]).unwrap();
    let c = ResidencyController::with_policy(&m, policy);
    let next_use = rng.random_bool(0.5);
    let len = rng.random_range(1..12usize);
    let mut program = Vec::with_capacity(len);
    for i in 0..len {
        let want = rng.random_range(1..=2usize);
        let mut picked: Vec<usize> = Vec::new();
        while picked.len() < want {
            let v = rng.random_range(0..values);
            if !picked.contains(&v) {
                picked.push(v);
            }
        }
        let reqs = picked
            .iter()
            .map(|&v| ResidencyRequirement::new(h[v].raw().clone(), N));
        let prefetch = i > 0 && rng.random_bool(0.35);
        let res: Vec<MemoryReservation> = if !prefetch && rng.random_bool(0.4) {
            let bytes = (rng.random_range(1..3usize) * W * 8) as u64;
            vec![MemoryReservation::new(N, bytes, "ws").unwrap()]
        } else {
            Vec::new()
        };
        let request = ResidencyRequest::new(&format!("s{i}"), reqs, res).unwrap();
        program.push(if prefetch {
            ResidencyProgramStep::prefetched(request)
        } else {
            ResidencyProgramStep::used(request)
        });
    }
    let forecast = if next_use {
        c.forecast_next_use(&program)
    } else {
        c.forecast(&program)
    };
    // On failure at step `at`, the steps before it: with LRU the forecast of the prefix (the
    // same decisions); with next use the priorities depend on the whole program, so only the
    // failing step and its error kind are compared.
    let prefix;
    let (decided, failure) = match &forecast {
        Ok(f) => (Some(f.steps.as_slice()), None),
        Err(fhelium_runtime::RuntimeError::Forecast { step, source, .. }) => {
            let at = *step;
            let kind = source.kind();
            if next_use {
                (None, Some((at, kind)))
            } else {
                prefix = c.forecast(&program[..at]).unwrap();
                (Some(prefix.steps.as_slice()), Some((at, kind)))
            }
        }
        Err(e) => panic!("seed {seed}: unexpected forecast error {e}"),
    };
    let (none_t, none_c) = (TransferStreams::new(), ConsumerStreams::new());
    let mut open = None;
    for (i, step) in program.iter().enumerate() {
        if next_use {
            c.apply_next_use(&program, i).unwrap();
        }
        let result = match step.kind {
            fhelium_residency::ResidencyStepKind::Use => {
                if let Some(u) = open.take() {
                    let u: fhelium_runtime::ResidencyUse = u;
                    u.close().unwrap();
                }
                c.use_request(&step.request, &none_c, &none_t).map(|u| {
                    let d = u.decision().clone();
                    open = Some(u);
                    d
                })
            }
            fhelium_residency::ResidencyStepKind::Prefetch => {
                c.prefetch(&step.request, &none_t).map(|p| p.decision)
            }
        };
        match (result, failure) {
            (Ok(d), failure) => {
                if let Some((at, _)) = failure {
                    assert!(
                        i < at,
                        "seed {seed}: step {i} ran but the forecast failed at {at}"
                    );
                }
                if let Some(steps) = decided {
                    assert!(
                        same(&steps[i].decision, &d),
                        "seed {seed} step {i}: forecast {:?} / {:?}, run {:?} / {:?}",
                        steps[i].decision.plan().reclaim(),
                        steps[i].decision.plan().enter(),
                        d.plan().reclaim(),
                        d.plan().enter()
                    );
                }
            }
            (Err(e), Some((at, kind))) => {
                assert_eq!(
                    i, at,
                    "seed {seed}: the run failed at {i}, the forecast at {at}: {e}"
                );
                assert_eq!(e.kind(), kind, "seed {seed}: {e}");
                return (i, true);
            }
            (Err(e), None) => panic!("seed {seed}: step {i} failed in the run only: {e}"),
        }
    }
    assert!(
        failure.is_none(),
        "seed {seed}: the forecast failed but the run did not"
    );
    if let Some(u) = open {
        u.close().unwrap();
    }
    (program.len(), false)
}

#[test]
fn forecasts_match_runs_on_random_programs() {
    let seeds: u64 = std::env::var("FHELIUM_FORECAST_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let (mut steps, mut failed) = (0, 0);
    for seed in 0..seeds {
        let (n, f) = one(seed);
        steps += n;
        failed += usize::from(f);
    }
    eprintln!("{seeds} programs, {steps} steps run, {failed} programs failed at a forecast step");
    // The generator must exercise both outcomes.
    assert!(
        failed > 0 && failed < seeds as usize,
        "{failed} of {seeds} programs failed"
    );
    assert!(steps > seeds as usize, "{steps} steps");
}
