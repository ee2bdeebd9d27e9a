//! The multi-device example (`multi_gpu`) on `sim:0,sim:1`: its decisions and accounting,
//! with every expected figure derived from the CKKS sizes of the preset (never copied from the
//! program's output), on the direct peer path and on the forced staged path.
#![allow(clippy::unwrap_used)]

use fhelium_ckks::CkksConfig;
use fhelium_cuda::PeerMode;
use fhelium_examples::multi::{run_multi, DeviceList, MultiOptions, MultiOutcome};
use fhelium_examples::{Timeline, MAX_ERROR};
use fhelium_residency::{ResidencyAction, ResidencyLocation as L};

/// Sizes from the preset: N, Q limbs, P limbs.
fn sizes(options: &MultiOptions) -> (u64, u64, u64) {
    let c = CkksConfig::from_preset(options.preset).unwrap();
    (
        1u64 << c.log_n,
        c.q_primes.len() as u64,
        c.p_primes.len() as u64,
    )
}

fn run_and_check(peer: PeerMode, batch: usize) {
    let options = MultiOptions {
        devices: DeviceList::Locations(vec![L::Sim(0), L::Sim(1)]),
        batch,
        peer,
        ..MultiOptions::default()
    };
    let o = run_multi(&options, &Timeline::disabled()).unwrap();
    check_outcome(&options, &o, &[L::Sim(0), L::Sim(1)]);
}

/// Every check of the run, for `devices` (D of them) and `options.batch` items.
fn check_outcome(options: &MultiOptions, o: &MultiOutcome, devices: &[L]) {
    let (batch, peer) = (options.batch, options.peer);
    let dn = devices.len();
    let (n, nq, np) = sizes(options);
    assert_eq!(o.devices, devices);
    assert_eq!(o.peer, peer);

    // Charges: a fresh ciphertext is 2 components x nq limbs x N words; the operation-ready
    // weight one component over Q; the rotation key nq digits x (nq + np) rows x 2 x N.
    let input = 2 * nq * n * 8;
    let weight = nq * n * 8;
    let key = nq * (nq + np) * 2 * n * 8;
    let workspace = 3 * input;
    let budget = key + weight + input + workspace;
    assert_eq!(o.charges.input, input);
    assert_eq!(o.charges.weight, weight);
    assert_eq!(o.charges.key, key);
    assert_eq!(o.charges.workspace, workspace);
    assert_eq!(o.charges.device_budget, budget);

    // Items: item i on device i % D, round i / D.
    let per_device: Vec<usize> = (0..dn).map(|d| (batch + dn - 1 - d) / dn).collect();
    assert_eq!(o.rounds.len(), batch.div_ceil(dn));
    // The batch ran as one program, exactly as forecast before anything moved.
    assert!(o.went_as_forecast);
    assert_eq!(o.forecast.steps.len(), o.rounds.len());
    for (f, r) in o.forecast.steps.iter().zip(&o.rounds) {
        assert_eq!(f.decision.plan().reclaim(), r.decision.plan().reclaim());
        assert_eq!(f.decision.plan().enter(), r.decision.plan().enter());
    }
    for (r, round) in o.rounds.iter().enumerate() {
        let want: Vec<(L, usize)> = (0..dn)
            .map(|d| (devices[d], dn * r + d))
            .filter(|(_, i)| *i < batch)
            .collect();
        assert_eq!(round.items, want, "round {r}");
        let ev = round.decision.evictions();
        if r == 0 {
            assert!(ev.is_empty(), "round 0 has room: {ev:?}");
            // Inputs for every device, key and weight for all but the first (already there).
            assert_eq!(
                round.decision.plan().enter().len(),
                want.len() + 2 * (dn - 1)
            );
        } else {
            // Exactly one reclaim per active device: its previous input, moved off the device.
            assert_eq!(ev.len(), want.len(), "round {r}: {ev:?}");
            for (d, i) in &want {
                let prev = &o.inputs[i - dn];
                let e = ev
                    .iter()
                    .find(|e| e.released_location == *d)
                    .unwrap_or_else(|| panic!("round {r}: no reclaim at {d}"));
                assert_eq!(e.action.handle(), prev, "round {r} at {d}");
                assert!(matches!(e.action, ResidencyAction::MoveResident { .. }));
                assert_eq!(e.released_nbytes, input);
            }
            assert_eq!(round.decision.plan().enter().len(), want.len());
        }
        // The decision never predicts more than the budget at a device.
        for d in devices {
            let peak = round.decision.explanation().predicted_peak(*d).unwrap_or(0);
            assert!(peak <= budget, "round {r} {d}: {peak} > {budget}");
        }
    }

    // Accounting per device.
    for (di, a) in o.accounts.iter().enumerate() {
        let k = per_device[di] as u64;
        assert_eq!(a.device, devices[di]);
        assert_eq!(a.items as u64, k);
        assert_eq!(a.budget, Some(budget));
        // At the end: key, weight and the last input stay (endpoints are kept cached).
        assert_eq!(a.used, key + weight + input, "{}", a.device);
        assert_eq!(a.values, 3, "{}", a.device);
        // The peak is the full budget: key + weight + one input + the workspace reservation.
        assert_eq!(a.peak_charged, budget, "{}", a.device);
        // Copies in: every input; key and weight into every device but the first, from the
        // first (peer copies).
        let peer = if di == 0 { (0, 0) } else { (2, key + weight) };
        assert_eq!(a.peer_in, peer, "{}", a.device);
        assert_eq!(
            a.transfers_in,
            (k + peer.0, k * input + peer.1),
            "{}",
            a.device
        );
        // Reclaims out: every input but the last, to pinned host.
        assert_eq!(a.transfers_out, (k - 1, (k - 1) * input), "{}", a.device);
    }
    for t in &o.transfers {
        if t.from.is_device() && t.to.is_host() {
            assert_eq!(t.to, L::PinnedHost, "the first fallback tier");
        }
    }
    // The memory layer made exactly the manager's peer copies, on the mode's path.
    let s = o.peer_stats;
    let (copies, bytes) = match peer {
        PeerMode::Auto => (s.direct_copies, s.direct_bytes),
        PeerMode::Staged => (s.staged_copies, s.staged_bytes),
    };
    // Key and weight reach every device but the first from the first: 2 copies per device.
    // On CUDA in auto mode a pair may lack peer access and take the staged path instead.
    let others = dn as u64 - 1;
    let all_sim = devices.iter().all(|d| matches!(d, L::Sim(_)));
    if all_sim || peer == PeerMode::Staged {
        assert_eq!(
            (copies, bytes),
            (2 * others, others * (key + weight)),
            "{s:?}"
        );
    }
    assert_eq!(s.direct_copies + s.staged_copies, 2 * others, "{s:?}");
    assert_eq!(
        s.direct_bytes + s.staged_bytes,
        others * (key + weight),
        "{s:?}"
    );
    assert_eq!(o.links.len(), dn * (dn - 1));
    if all_sim {
        let path = if peer == PeerMode::Auto {
            "direct"
        } else {
            "staged"
        };
        let want: Vec<(L, L, &str)> = devices
            .iter()
            .flat_map(|a| devices.iter().map(move |b| (*a, *b)))
            .filter(|(a, b)| a != b)
            .map(|(a, b)| (a, b, path))
            .collect();
        assert_eq!(o.links, want);
    }

    // Every item verified against its cleartext.
    assert_eq!(o.errors.len(), batch);
    for (i, e) in o.errors.iter().enumerate() {
        assert!(e.max_abs <= MAX_ERROR, "item {i}: {}", e.max_abs);
    }
    assert!(o.closed);
    let text = o.render();
    assert!(text.contains("Per-device accounting"), "{text}");
    assert!(text.contains("items/s"), "{text}");
}

#[test]
fn multi_device_run_on_the_direct_path() {
    run_and_check(PeerMode::Auto, 6);
}

#[test]
fn multi_device_run_on_the_staged_path_with_an_odd_batch() {
    run_and_check(PeerMode::Staged, 5);
}

#[test]
fn three_devices_in_any_order() {
    let devices = [L::Sim(2), L::Sim(0), L::Sim(1)];
    let options = MultiOptions {
        devices: DeviceList::Locations(devices.to_vec()),
        batch: 7,
        ..MultiOptions::default()
    };
    let o = run_multi(&options, &Timeline::disabled()).unwrap();
    check_outcome(&options, &o, &devices);
}

/// The same flow on every visible CUDA device (feature `cuda`): one GPU runs the whole batch on
/// `cuda:0` under its budget (evictions, no peer copies); two or more also copy the key and
/// weight device to device. Skips without a device unless `FHELIUM_REQUIRE_GPU=1`.
#[cfg(feature = "cuda")]
#[test]
fn multi_device_run_on_every_cuda_device() {
    let required = std::env::var("FHELIUM_REQUIRE_GPU").is_ok_and(|v| v == "1");
    let count = match fhelium_cuda::Memory::with_cuda() {
        Ok(m) => m.cuda_device_count(),
        Err(e) => {
            assert!(!required, "FHELIUM_REQUIRE_GPU=1 but no CUDA device: {e}");
            eprintln!("skipped: no CUDA device available ({e})");
            return;
        }
    };
    let devices: Vec<L> = (0..count).map(L::Cuda).collect();
    for peer in [PeerMode::Auto, PeerMode::Staged] {
        let options = MultiOptions {
            devices: DeviceList::AllCuda,
            batch: 3 * devices.len(),
            peer,
            ..MultiOptions::default()
        };
        let o = run_multi(&options, &Timeline::disabled()).unwrap();
        eprint!("{}", o.render());
        check_outcome(&options, &o, &devices);
    }
}
