//! Per-operation latency of the CKKS engine chosen by `--device`, in the layout of FHElium's
//! `oplat` table (`reference/fhelium-h200/oplat.txt`, same op names): median, p10 and p90 in
//! microseconds over `--repeats` calls after one warm-up call.
//!
//! On the CPU engine the default is 7 repeats (an op takes tens to hundreds of ms at
//! N = 16384). The GPU figures come from `crates/ckks/tests/gpu_oplat.rs` (CUDA events).

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use fhelium_ckks::{Ciphertext, ModulusBasis};
use fhelium_examples::{error_stats, format_sci, DeviceChoice, Engine, ExampleError};

/// Per-operation latency of the CKKS engine.
#[derive(Parser)]
struct Cli {
    /// cpu (CPU engine) or cuda:N.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// CKKS preset.
    #[arg(long, default_value = "slots8192-scale40-levels7-int64")]
    preset: String,
    /// Timed calls per op (after one warm-up call).
    #[arg(long, default_value_t = 7)]
    repeats: usize,
}

/// (median, p10, p90) in microseconds of `f` over `repeats` calls after a warm-up.
fn time(
    repeats: usize,
    mut f: impl FnMut() -> Result<(), ExampleError>,
) -> Result<(f64, f64, f64), ExampleError> {
    f()?;
    let mut us = Vec::with_capacity(repeats);
    for _ in 0..repeats.max(1) {
        let t = Instant::now();
        f()?;
        us.push(t.elapsed().as_secs_f64() * 1e6);
    }
    us.sort_by(f64::total_cmp);
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )] // small sample counts
    let pct = |p: f64| us[((us.len() - 1) as f64 * p).round() as usize];
    Ok((pct(0.5), pct(0.1), pct(0.9)))
}

fn run(cli: &Cli) -> Result<(), ExampleError> {
    let device: DeviceChoice = cli.device.parse()?;
    let preset = cli.preset.parse()?;
    let setup = Engine::open(device, preset, fhelium_examples::engine::DEFAULT_SEED)?;
    let e = &setup.engine;
    let n = e.num_slots();
    #[allow(clippy::cast_precision_loss)]
    let message: Vec<f64> = (0..n).map(|j| 0.01 * (j as f64 * 0.017).sin()).collect();
    let ct = e.encrypt_message(&message)?;
    let key = e.create_rotation_key(1, e.secret_key())?;
    let weight = e.prepare_plaintext_for_multiplication(
        &e.encode(&vec![0.5; n], 0, None)?,
        ModulusBasis::Q,
    )?;
    let rotated = e.rotate_with_key(&ct, &key)?;
    let ntt = e.coefficient_domain_to_ntt_domain(&rotated)?;
    let prod = e.multiply_plaintext(&ntt, &weight)?;
    let coeff = e.ntt_domain_to_coefficient_domain(&prod)?;
    let stage = |x: &Ciphertext| -> Result<Ciphertext, ExampleError> {
        e.rescale_to_next_level(&e.ntt_domain_to_coefficient_domain(&e.multiply_plaintext(
            &e.coefficient_domain_to_ntt_domain(&e.rotate_with_key(x, &key)?)?,
            &weight,
        )?)?)
    };
    let out = stage(&ct)?;
    let got = e.decrypt_message(&out)?;
    let expected: Vec<f64> = (0..n).map(|j| 0.5 * message[(j + n - 1) % n]).collect();
    let err = error_stats(&got, &expected);
    let ct_ntt = e.coefficient_domain_to_ntt_domain(&ct)?;
    let squared = e.multiply(&ct_ntt, &ct_ntt)?;

    let r = cli.repeats;
    let rows: Vec<(&str, (f64, f64, f64))> = vec![
        (
            "encrypt_message",
            time(r, || e.encrypt_message(&message).map(drop))?,
        ),
        (
            "rotate_with_key",
            time(r, || e.rotate_with_key(&ct, &key).map(drop))?,
        ),
        (
            "coefficient_to_ntt",
            time(r, || e.coefficient_domain_to_ntt_domain(&rotated).map(drop))?,
        ),
        (
            "multiply_plaintext",
            time(r, || e.multiply_plaintext(&ntt, &weight).map(drop))?,
        ),
        (
            "ntt_to_coefficient",
            time(r, || e.ntt_domain_to_coefficient_domain(&prod).map(drop))?,
        ),
        (
            "rescale_to_next_level",
            time(r, || e.rescale_to_next_level(&coeff).map(drop))?,
        ),
        (
            "decrypt_message",
            time(r, || e.decrypt_message(&out).map(drop))?,
        ),
        ("example14_stage", time(r, || stage(&ct).map(drop))?),
        (
            "multiply_ct_ct",
            time(r, || e.multiply(&ct_ntt, &ct_ntt).map(drop))?,
        ),
        (
            "relinearize",
            time(r, || e.relinearize(&squared).map(drop))?,
        ),
    ];
    println!(
        "preset={preset} device={} {} ({} threads, {r} repeats) sizes={{'ciphertext_nbytes': {}, 'ciphertext_storage_nbytes': {}, 'plaintext_nbytes': {}, 'rotation_key_nbytes': {}}} max_err={}",
        cli.device,
        e.describe(),
        std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        ct.nbytes(),
        ct.storage_nbytes(),
        weight.nbytes(),
        key.nbytes(),
        format_sci(err.max_abs)
    );
    println!("{:<22}{:>13}{:>10}{:>10}", "op", "median_us", "p10", "p90");
    for (op, (m, p10, p90)) in rows {
        println!("{op:<22}{m:>13.1}{p10:>10.1}{p90:>10.1}");
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(&Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("oplat: {e}");
            ExitCode::FAILURE
        }
    }
}
