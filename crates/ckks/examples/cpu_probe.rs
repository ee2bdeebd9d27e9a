//! Steady timing probe of the CPU engine's hot paths (min and median of many runs), for noisy
//! shared machines where criterion means drift: `cargo run --release -p fhelium-ckks --example
//! cpu_probe [what] [reps]` with `what` in `ntt`, `encode`, `ct`, `rotate`, `relin`, `keygen`, `hoisted`, `all`
//! (default).

use std::time::Instant;

use fhelium_ckks::{CpuEngine, Preset};

/// On-CPU nanoseconds of every thread of this process so far (`/proc/self/task/*/schedstat`):
/// CPU time is what a loaded machine distorts least.
fn cpu_ns() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| {
            s.split_whitespace()
                .next()
                .and_then(|x| x.parse::<u64>().ok())
        })
        .sum()
}

fn stats(label: &str, (mut t, cpu): (Vec<f64>, f64)) {
    t.sort_by(f64::total_cmp);
    let med = t[t.len() / 2];
    let p10 = t[t.len() / 10];
    println!(
        "{label:<40} min {:>9.1} us  p10 {:>9.1} us  median {:>9.1} us  cpu/op {:>9.1} us",
        t[0], p10, med, cpu
    );
}

fn time<F: FnMut()>(reps: usize, mut f: F) -> (Vec<f64>, f64) {
    f();
    let c0 = cpu_ns();
    let t = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    (t, (cpu_ns() - c0) as f64 / 1e3 / reps as f64)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map_or("all", String::as_str);
    let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(50);
    let e = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [1; 32]).expect("engine");
    let s = e.num_slots();
    let m: Vec<f64> = (0..s).map(|j| 0.01 * (0.017 * j as f64).sin()).collect();
    let ct = e.encrypt_message(&m).expect("encrypt");
    let n = e.n();
    let all = what == "all";
    if all || what == "ntt" {
        for id in [0usize, 7] {
            let t = &e.context().ntt_tables()[id];
            let mut limb: Vec<u64> = ct.words()[..n]
                .iter()
                .map(|&w| w % t.modulus().value())
                .collect();
            let src = limb.clone();
            stats(
                &format!("forward one limb (id {id}, 1 thread)"),
                time(reps * 4, || t.forward(&mut limb)),
            );
            stats(
                &format!("inverse one limb (id {id}, 1 thread)"),
                time(reps * 4, || t.inverse(&mut limb)),
            );
            stats(
                &format!("forward_from one limb (id {id})"),
                time(reps * 4, || t.forward_from(&src, &mut limb)),
            );
            stats(
                &format!("inverse_from one limb (id {id})"),
                time(reps * 4, || t.inverse_from(&src, &mut limb)),
            );
        }
    }
    if what == "fwd" || what == "fwdfrom" {
        let t = &e.context().ntt_tables()[0];
        let src: Vec<u64> = ct.words()[..n].to_vec();
        let mut limb = src.clone();
        let from = what == "fwdfrom";
        stats(
            what,
            time(reps, || {
                if from {
                    t.forward_from(&src, &mut limb);
                } else {
                    t.forward(&mut limb);
                }
            }),
        );
    }
    if all || what == "encode" {
        // What the CUDA engine's encode_for_multiplication and complex encryption replace.
        stats(
            "encode + prepare_plaintext_for_mult (L0)",
            time(reps, || {
                let pt = e.encode(&m, 0, None).expect("encode");
                std::hint::black_box(
                    e.prepare_plaintext_for_multiplication(&pt, fhelium_ckks::ModulusBasis::Q)
                        .expect("prepare"),
                );
            }),
        );
        let z: Vec<num_complex::Complex64> = m
            .iter()
            .map(|&x| num_complex::Complex64::new(x, -x))
            .collect();
        stats(
            "encode_complex (L0)",
            time(reps, || {
                std::hint::black_box(e.encode_complex(&z, 0, None).expect("encode"));
            }),
        );
    }
    let ntt = e.coefficient_domain_to_ntt_domain(&ct).expect("ntt");
    if all || what == "ct" {
        stats(
            "coefficient_domain_to_ntt_domain",
            time(reps, || {
                std::hint::black_box(e.coefficient_domain_to_ntt_domain(&ct).expect("op"));
            }),
        );
        stats(
            "ntt_domain_to_coefficient_domain",
            time(reps, || {
                std::hint::black_box(e.ntt_domain_to_coefficient_domain(&ntt).expect("op"));
            }),
        );
    }
    if all || what == "rotate" {
        let key = e.create_rotation_key(1, e.secret_key()).expect("key");
        stats(
            "rotate_with_key",
            time(reps, || {
                std::hint::black_box(e.rotate_with_key(&ct, &key).expect("op"));
            }),
        );
    }
    if what == "keygen" {
        let mut step = 0i64;
        stats(
            "create_rotation_key",
            time(reps, || {
                step += 1;
                std::hint::black_box(e.create_rotation_key(step, e.secret_key()).expect("key"));
            }),
        );
    }
    if what == "hoisted" {
        let keys: Vec<_> = (1..=4)
            .map(|r| e.create_rotation_key(r, e.secret_key()).expect("key"))
            .collect();
        let refs: Vec<_> = keys.iter().collect();
        stats(
            "rotate_many_with_keys (4 keys)",
            time(reps, || {
                std::hint::black_box(e.rotate_many_with_keys(&ct, &refs).expect("op"));
            }),
        );
    }
    if all || what == "relin" {
        let prod = e.multiply(&ntt, &ntt).expect("mul");
        let rlk = e.relinearization_key().expect("rlk");
        stats(
            "relinearize",
            time(reps, || {
                std::hint::black_box(e.relinearize_with_key(&prod, &rlk).expect("op"));
            }),
        );
    }
}
