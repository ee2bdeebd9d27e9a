//! The matrix example (`matrix_residency`) on `sim:0`: its charges, every step's decision and
//! prefetch, the device accounting and the result, with every expected figure derived from
//! the CKKS sizes of the preset and the schedule (never copied from the program's output).
#![allow(clippy::unwrap_used)]

use fhelium_ckks::CkksConfig;
use fhelium_examples::matrix::{
    check_layers, parse_keys_at, run_matrix, Eviction, MatrixOptions, MatrixOutcome, Schedule,
    MATRIX_MAX_ERROR,
};
use fhelium_examples::{ExampleError, Timeline};
use fhelium_residency::{ResidencyAction, ResidencyDecision, ResidencyHandle, ResidencyLocation};
use fhelium_runtime::RuntimeError;

const SIM0: ResidencyLocation = ResidencyLocation::Sim(0);

/// (input, diagonal, key) charges from the preset: a fresh ciphertext is 2 components x nq
/// limbs x N words, a diagonal one component over Q, a key nq digits x 2 x (nq + np) rows.
fn sizes(options: &MatrixOptions) -> (u64, u64, u64) {
    let c = CkksConfig::from_preset(options.engine.preset).unwrap();
    let (n, nq, np) = (
        1u64 << c.log_n,
        c.q_primes.len() as u64,
        c.p_primes.len() as u64,
    );
    (2 * nq * n * 8, nq * n * 8, nq * (nq + np) * 2 * n * 8)
}

fn run(dim: usize, prefetch: bool, budget: Option<u64>) -> Result<MatrixOutcome, ExampleError> {
    run_schedule(Schedule::KeyMajor, dim, prefetch, budget)
}

fn run_schedule(
    schedule: Schedule,
    dim: usize,
    prefetch: bool,
    budget: Option<u64>,
) -> Result<MatrixOutcome, ExampleError> {
    let options = MatrixOptions {
        dim,
        schedule: Some(schedule),
        prefetch,
        device_budget: budget,
        ..MatrixOptions::default()
    };
    run_matrix(&options, &Timeline::disabled())
}

/// Key-major: d inputs, d accumulators, 3 ciphertexts of workspace and one key and diagonal
/// (two with prefetch). Column-hoisted: d accumulators, d + 2 ciphertexts of workspace (the
/// d - 1 rotations and three more), every key and diagonal, one input (two with prefetch).
fn derived_budget(schedule: Schedule, dim: usize, prefetch: bool) -> u64 {
    let (input, diagonal, key) = sizes(&MatrixOptions::default());
    let d = dim as u64;
    let ahead = if prefetch { 2 } else { 1 };
    match schedule {
        Schedule::KeyMajor => d * input + d * input + 3 * input + ahead * (key + diagonal),
        Schedule::ColumnHoisted => {
            d * input + (d + 2) * input + (d - 1) * key + d * diagonal + ahead * input
        }
    }
}

fn sorted(mut v: Vec<ResidencyHandle>) -> Vec<ResidencyHandle> {
    v.sort_by_key(ResidencyHandle::short_id);
    v
}

fn entered(d: &ResidencyDecision) -> Vec<ResidencyHandle> {
    sorted(
        d.plan()
            .enter()
            .iter()
            .map(|a| a.handle().clone())
            .collect(),
    )
}

/// The handles a decision reclaims at sim:0, each by dropping the device replica (the value
/// keeps its pageable one: nothing is copied back).
fn reclaimed(d: &ResidencyDecision) -> Vec<ResidencyHandle> {
    for e in d.evictions() {
        assert!(e.released_location.is_device());
        assert!(
            matches!(e.action, ResidencyAction::DropResident { .. }),
            "reclaim by drop, found {:?}",
            e.action
        );
    }
    sorted(
        d.evictions()
            .iter()
            .map(|e| e.action.handle().clone())
            .collect(),
    )
}

/// What step k's finished predecessor leaves cached: diagonal k - 1 and key k - 1 (step 0
/// has no key).
fn previous(o: &MatrixOutcome, k: usize) -> Vec<ResidencyHandle> {
    let mut v = vec![o.diagonals[k - 1].clone()];
    if k >= 2 {
        v.push(o.keys[k - 2].clone());
    }
    sorted(v)
}

fn check_common(o: &MatrixOutcome, dim: usize, prefetch: bool, device: ResidencyLocation) {
    let (input, diagonal, key) = sizes(&MatrixOptions::default());
    let d = dim as u64;
    let c = &o.charges;
    assert_eq!((c.input, c.diagonal, c.key), (input, diagonal, key));
    assert_eq!(c.accumulators, d * input);
    let schedule = o.schedule;
    let workspace = match schedule {
        Schedule::KeyMajor => 3 * input,
        Schedule::ColumnHoisted => (d + 2) * input,
    };
    assert_eq!(c.workspace, workspace);
    assert_eq!(
        c.working_set,
        d * (input + diagonal) + (d - 1) * key + d * input
    );
    assert_eq!(c.device_budget, derived_budget(schedule, dim, prefetch));
    assert_eq!(
        schedule == Schedule::KeyMajor,
        c.device_budget < c.working_set
    );
    assert_eq!((o.dim, o.device, o.prefetch), (dim, device, prefetch));
    assert_eq!(
        (o.inputs.len(), o.diagonals.len(), o.keys.len()),
        (dim, dim, dim - 1)
    );

    // Every value crossed to the device exactly once, and nothing came back.
    for h in o.inputs.iter().chain(&o.diagonals).chain(&o.keys) {
        assert_eq!(o.copies_to_device(h), 1, "{}", h.short_id());
    }
    assert!(o
        .transfers
        .iter()
        .all(|t| t.to == device && t.from.is_host()));
    assert_eq!(
        o.bytes_to_device(),
        d * input + d * diagonal + (d - 1) * key
    );

    // Step 0 admits what it needs and reclaims nothing: key-major the inputs and diagonal 0,
    // column-hoisted column 0, every key and every diagonal.
    assert_eq!(o.steps.len(), dim);
    let want = match schedule {
        Schedule::KeyMajor => {
            let mut v = o.inputs.clone();
            v.push(o.diagonals[0].clone());
            v
        }
        Schedule::ColumnHoisted => {
            let mut v = vec![o.inputs[0].clone()];
            v.extend(o.keys.iter().cloned());
            v.extend(o.diagonals.iter().cloned());
            v
        }
    };
    assert_eq!(entered(&o.steps[0].decision), sorted(want));
    assert!(reclaimed(&o.steps[0].decision).is_empty());

    // The budget is never exceeded, by the manager's charges or by the memory layer's
    // allocations (managed values, results and temporaries).
    assert!(o.peak_charged <= c.device_budget);
    assert!(
        o.allocator_peak <= c.device_budget,
        "allocated {} over a budget of {}",
        o.allocator_peak,
        c.device_budget
    );
    assert_eq!(o.errors.len(), dim);
    assert!(o.max_error() <= MATRIX_MAX_ERROR, "{}", o.max_error());
    assert!(o.closed);

    // The forecast made before anything moved predicted every decision, the bytes and the
    // peak; the smallest budget found by forecasting is the closed form's.
    assert!(o.went_as_forecast());
    assert_eq!(o.minimum_budget, c.derived_budget);
    assert_eq!(o.forecast.steps.len(), o.decisions().len());
    assert_eq!(o.forecast.bytes_into(device), o.bytes_to_device());
}

/// The default run's decisions: each step's key and diagonal are admitted by the previous
/// step's prefetch, which reclaims what the step before that used; the steps then enter
/// nothing, and the budget is exactly full at every prefetch.
fn check_prefetch_run(o: &MatrixOutcome, device: ResidencyLocation) {
    assert_eq!(o.layers, 1);
    let dim = o.dim;
    check_common(o, dim, true, device);
    for (k, s) in o.steps.iter().enumerate() {
        assert_eq!(s.step, k);
        if k > 0 {
            assert!(entered(&s.decision).is_empty(), "step {k} was prefetched");
            assert!(reclaimed(&s.decision).is_empty(), "step {k}");
        }
        match &s.prefetch {
            None => assert_eq!(k, dim - 1, "only the last step prefetches nothing"),
            Some((p, _)) => {
                assert_eq!(
                    entered(p),
                    sorted(vec![o.keys[k].clone(), o.diagonals[k + 1].clone()]),
                    "prefetch during step {k}"
                );
                let want = if k == 0 { Vec::new() } else { previous(o, k) };
                assert_eq!(reclaimed(p), want, "prefetch during step {k}");
            }
        }
    }
    assert_eq!(o.peak_charged, o.charges.device_budget);
    let render = o.render();
    let once = format!("Rotation keys: {} copies into {device}", dim - 1);
    assert!(render.contains(&once), "{render}");
    assert!(render.contains("the run went as forecast: yes"), "{render}");
}

/// The default run: 16 x 16 with prefetch on sim:0.
#[test]
fn prefetch_streams_every_key_through_the_device_once() {
    let o = run(16, true, None).unwrap();
    check_prefetch_run(&o, SIM0);
}

/// Without prefetch the budget holds one key: each step admits its own key and diagonal and
/// reclaims its predecessor's.
#[test]
fn without_prefetch_each_step_admits_its_key_and_reclaims_the_last() {
    let dim = 4;
    let o = run(dim, false, None).unwrap();
    check_common(&o, dim, false, SIM0);
    for (k, s) in o.steps.iter().enumerate().skip(1) {
        assert!(s.prefetch.is_none());
        assert_eq!(
            entered(&s.decision),
            sorted(vec![o.keys[k - 1].clone(), o.diagonals[k].clone()]),
            "step {k}"
        );
        assert_eq!(reclaimed(&s.decision), previous(&o, k), "step {k}");
    }
}

/// FHElium's order: every key and diagonal enters with column 0 and stays; each prefetch
/// admits the next column and reclaims the one before the current. The words are the
/// key-major run's: the decrypted columns' error statistics agree bit for bit.
#[test]
fn the_hoisted_column_order_holds_every_key_and_gives_the_same_words() {
    let dim = 4;
    let o = run_schedule(Schedule::ColumnHoisted, dim, true, None).unwrap();
    check_common(&o, dim, true, SIM0);
    for (k, s) in o.steps.iter().enumerate() {
        if k > 0 {
            assert!(entered(&s.decision).is_empty(), "step {k} was prefetched");
            assert!(reclaimed(&s.decision).is_empty(), "step {k}");
        }
        match &s.prefetch {
            None => assert_eq!(k, dim - 1),
            Some((p, _)) => {
                assert_eq!(entered(p), vec![o.inputs[k + 1].clone()], "prefetch {k}");
                let want = if k == 0 {
                    Vec::new()
                } else {
                    vec![o.inputs[k - 1].clone()]
                };
                assert_eq!(reclaimed(p), want, "prefetch during step {k}");
            }
        }
    }
    assert_eq!(o.peak_charged, o.charges.device_budget);
    let key_major = run(dim, true, None).unwrap();
    for (j, (h, k)) in o.errors.iter().zip(&key_major.errors).enumerate() {
        assert_eq!(
            (h.max_abs.to_bits(), h.rms.to_bits()),
            (k.max_abs.to_bits(), k.rms.to_bits()),
            "column {j}"
        );
    }
    // Under the key-major schedule's budget the hoisted order cannot start.
    let e = run_schedule(
        Schedule::ColumnHoisted,
        dim,
        true,
        Some(derived_budget(Schedule::KeyMajor, dim, true)),
    )
    .unwrap_err();
    assert!(
        matches!(e, ExampleError::Runtime(RuntimeError::Forecast { step: 0, ref request, .. }) if request == "matrix/step-0"),
        "{e}"
    );
}

/// `schedule: None` chooses by the budget: column-hoisted exactly when the budget holds what
/// it needs, key-major below that and without a budget; the outcome says it chose.
#[test]
fn the_budget_chooses_the_schedule_when_asked() {
    let dim = 4;
    let auto = |budget: Option<u64>| {
        run_matrix(
            &MatrixOptions {
                dim,
                schedule: None,
                device_budget: budget,
                ..MatrixOptions::default()
            },
            &Timeline::disabled(),
        )
        .unwrap()
    };
    let hoisted = derived_budget(Schedule::ColumnHoisted, dim, true);
    for (budget, want) in [
        (None, Schedule::KeyMajor),
        (Some(hoisted), Schedule::ColumnHoisted),
        (Some(hoisted - 1), Schedule::KeyMajor),
    ] {
        let o = auto(budget);
        assert_eq!(o.schedule, want, "budget {budget:?}");
        assert!(o.schedule_chosen);
        assert_eq!(
            o.charges.device_budget,
            budget.unwrap_or_else(|| derived_budget(Schedule::KeyMajor, dim, true))
        );
        assert!(o.peak_charged <= o.charges.device_budget);
        assert!(o.max_error() <= MATRIX_MAX_ERROR);
        assert!(o.render().contains("(chosen: the budget"));
    }
    assert!(!run(dim, true, None).unwrap().schedule_chosen);
}

/// Three layers (A^3 B) of 8 x 8 with the same 7 keys. With the schedule's own budget, LRU
/// copies every key once per layer. With room for three more keys, evicting by next use keeps the keys the
/// next layer needs first, so fewer keys cross, while LRU still copies every key every layer
/// (a cyclic program is LRU's worst case). Both runs go as forecast and give the same words.
#[test]
fn layers_reuse_keys_and_next_use_eviction_copies_fewer() {
    let dim = 8;
    let layers = 3;
    let (input, diagonal, key) = sizes(&MatrixOptions::default());
    let d = dim as u64;
    let run_layers = |eviction, budget| {
        run_matrix(
            &MatrixOptions {
                dim,
                layers,
                eviction,
                device_budget: budget,
                ..MatrixOptions::default()
            },
            &Timeline::disabled(),
        )
        .unwrap()
    };
    let key_copies =
        |o: &MatrixOutcome| o.keys.iter().map(|k| o.copies_to_device(k)).sum::<usize>();
    // The derived budget adds the held layer-input reservation.
    let derived = run_layers(Eviction::Lru, None);
    assert_eq!(derived.charges.layer_inputs, d * input);
    assert_eq!(
        derived.charges.device_budget,
        d * input + d * input + d * input + 3 * input + 2 * (key + diagonal)
    );
    assert_eq!(derived.steps.len(), layers * dim);
    assert_eq!(key_copies(&derived), layers * (dim - 1));
    assert!(derived.went_as_forecast());
    assert!(derived.max_error() <= MATRIX_MAX_ERROR);

    let roomy = Some(derived.charges.device_budget + 3 * key);
    let lru = run_layers(Eviction::Lru, roomy);
    let next = run_layers(Eviction::NextUse, roomy);
    assert_eq!(
        key_copies(&lru),
        layers * (dim - 1),
        "LRU thrashes on the key cycle"
    );
    assert!(
        key_copies(&next) < key_copies(&lru),
        "next use {} against LRU {}",
        key_copies(&next),
        key_copies(&lru)
    );
    assert!(next.keys.iter().all(|k| next.copies_to_device(k) >= 1));
    for o in [&lru, &next] {
        assert!(o.went_as_forecast());
        assert!(o.peak_charged <= o.charges.device_budget);
        assert!(o.allocator_peak <= o.charges.device_budget);
        assert_eq!(o.eviction == Eviction::NextUse, std::ptr::eq(o, &next));
    }
    for (j, (x, y)) in lru.errors.iter().zip(&next.errors).enumerate() {
        assert_eq!(x.max_abs.to_bits(), y.max_abs.to_bits(), "column {j}");
    }
    assert!(next.render().contains("eviction: next-use"));
    assert!(check_layers(0).is_err() && check_layers(5).is_err() && check_layers(4).is_ok());
}

/// The hoisted order over three layers: the closed-form budget counts two layers' level-0
/// diagonals and two inputs at once, more than any step holds, so the budget found by
/// forecasting is smaller. It is exact: the product runs in it (as forecast), and one byte
/// less fails at the forecast.
#[test]
fn the_forecast_finds_a_smaller_budget_than_the_closed_form() {
    let (dim, layers) = (4, 3);
    let run_at = |budget| {
        run_matrix(
            &MatrixOptions {
                dim,
                layers,
                schedule: Some(Schedule::ColumnHoisted),
                device_budget: budget,
                ..MatrixOptions::default()
            },
            &Timeline::disabled(),
        )
    };
    let o = run_at(None).unwrap();
    assert!(o.minimum_budget < o.charges.derived_budget);
    let tight = run_at(Some(o.minimum_budget)).unwrap();
    assert!(tight.went_as_forecast());
    assert_eq!(tight.peak_charged, o.minimum_budget);
    assert!(tight.max_error() <= MATRIX_MAX_ERROR);
    assert!(matches!(
        run_at(Some(o.minimum_budget - 1)),
        Err(ExampleError::Runtime(RuntimeError::Forecast { .. }))
    ));
}

/// One byte below the schedule's budget, the forecast finds the first request that cannot
/// fit before anything moves: the run fails with its step, its name and the planner's reason
/// naming the device. Far below, the held accumulator reservation itself is refused.
#[test]
fn a_budget_one_byte_short_fails_at_the_forecast() {
    let dim = 4;
    let e = run(
        dim,
        true,
        Some(derived_budget(Schedule::KeyMajor, dim, true) - 1),
    )
    .unwrap_err();
    match e {
        ExampleError::Runtime(RuntimeError::Forecast {
            step,
            ref request,
            ref source,
        }) => {
            assert!(request.starts_with("matrix/prefetch-"), "{request}");
            assert!(step > 0 && step < 2 * dim - 1, "{step}");
            match &**source {
                RuntimeError::Plan {
                    plan_name, reason, ..
                } => {
                    assert_eq!(plan_name, request);
                    assert!(
                        reason.contains("sim:0") && reason.contains("bytes"),
                        "{reason}"
                    );
                }
                other => panic!("expected the planner's reason, found {other}"),
            }
        }
        other => panic!("expected a failed forecast, found {other}"),
    }
    let e = run(dim, true, Some(1 << 20)).unwrap_err();
    assert!(
        matches!(
            e,
            ExampleError::Runtime(RuntimeError::Budget { location, requested_bytes, .. })
                if location == SIM0 && requested_bytes == 4 * sizes(&MatrixOptions::default()).0
        ),
        "{e}"
    );
}

/// A bad dimension fails before any engine or manager exists.
#[test]
fn a_bad_dimension_names_the_argument() {
    for dim in [1, 6, 128] {
        assert!(matches!(
            run(dim, true, None),
            Err(ExampleError::InvalidArgument {
                argument: "--dim",
                ..
            })
        ));
    }
}

/// Keys kept in pinned memory (`--keys-at pinned-host`): the same decisions and words as from
/// pageable memory; every key copy comes from pinned host memory and the render says so.
#[test]
fn keys_in_pinned_memory_stream_the_same_way() {
    let dim = 4;
    let options = MatrixOptions {
        dim,
        keys_at: ResidencyLocation::PinnedHost,
        ..MatrixOptions::default()
    };
    let o = run_matrix(&options, &Timeline::disabled()).unwrap();
    check_prefetch_run(&o, SIM0);
    assert_eq!(o.keys_at, ResidencyLocation::PinnedHost);
    let key_copies: Vec<_> = o
        .transfers
        .iter()
        .filter(|t| o.keys.contains(&t.handle))
        .collect();
    assert_eq!(key_copies.len(), dim - 1);
    assert!(key_copies
        .iter()
        .all(|t| (t.from, t.to) == (ResidencyLocation::PinnedHost, SIM0)));
    assert!(o
        .transfers
        .iter()
        .filter(|t| !o.keys.contains(&t.handle))
        .all(|t| t.from == ResidencyLocation::PageableHost));
    assert!(o.render().contains("from pinned-host"), "{}", o.render());
    let pageable = run(dim, true, None).unwrap();
    assert!(pageable.render().contains("from pageable-host"));
    for (j, (a, b)) in o.errors.iter().zip(&pageable.errors).enumerate() {
        assert_eq!(
            (a.max_abs.to_bits(), a.rms.to_bits()),
            (b.max_abs.to_bits(), b.rms.to_bits()),
            "column {j}"
        );
    }
}

/// `--keys-at` takes the two host locations only, and a device location in the options is
/// refused before anything runs.
#[test]
fn keys_at_a_device_names_the_argument() {
    assert_eq!(
        parse_keys_at("pinned-host").unwrap(),
        ResidencyLocation::PinnedHost
    );
    assert_eq!(
        parse_keys_at("pageable-host").unwrap(),
        ResidencyLocation::PageableHost
    );
    for bad in ["sim:0", "cuda:0", "pinned", ""] {
        match parse_keys_at(bad) {
            Err(ExampleError::InvalidArgument {
                argument: "--keys-at",
                reason,
            }) => assert!(reason.contains(&format!("{bad:?}")), "{reason}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
    let options = MatrixOptions {
        dim: 4,
        keys_at: SIM0,
        ..MatrixOptions::default()
    };
    assert!(matches!(
        run_matrix(&options, &Timeline::disabled()),
        Err(ExampleError::InvalidArgument {
            argument: "--keys-at",
            ..
        })
    ));
}

/// On cuda:0 (feature `cuda`; skipped without a device unless FHELIUM_REQUIRE_GPU=1): the same
/// decisions, and, the CUDA engine being word for word the CPU engine's, every column's error
/// statistics equal the CPU run's bit for bit.
#[cfg(feature = "cuda")]
#[test]
fn on_cuda_the_same_schedule_gives_the_cpu_engines_result_bit_for_bit() {
    let required = std::env::var("FHELIUM_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let mut options = MatrixOptions::default();
    options.engine.device = fhelium_examples::DeviceChoice::Cuda(0);
    let o = match run_matrix(&options, &Timeline::disabled()) {
        Ok(o) => o,
        Err(ExampleError::DeviceUnavailable { reason, .. }) => {
            assert!(!required, "FHELIUM_REQUIRE_GPU=1 but {reason}");
            eprintln!("skipped: {reason}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    eprint!("{}", o.render());
    check_prefetch_run(&o, ResidencyLocation::Cuda(0));
    let cpu = run(o.dim, true, None).unwrap();
    for (j, (g, c)) in o.errors.iter().zip(&cpu.errors).enumerate() {
        assert_eq!(
            (g.max_abs.to_bits(), g.rms.to_bits()),
            (c.max_abs.to_bits(), c.rms.to_bits()),
            "column {j}"
        );
    }
}
