//! The CKKS engine alone (no residency): encode, encrypt, rotate (one key, then two keys
//! sharing one ModUp), multiply by a plaintext and by a ciphertext (with relinearization),
//! rescale, decrypt, and the error of each result.
//!
//! `--device cpu` (default) runs the CPU engine.

use std::process::ExitCode;

use clap::Parser;
use fhelium_ckks::{Ciphertext, Domain, ModulusBasis};
use fhelium_examples::{
    error_stats, format_bytes, format_sci, DeviceChoice, Engine, ExampleError, Table, MAX_ERROR,
};

/// The CKKS engine alone.
#[derive(Parser)]
struct Cli {
    /// cpu (CPU engine) or cuda:N.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// CKKS preset.
    #[arg(long, default_value = "slots8192-scale40-levels7-int64")]
    preset: String,
}

fn run(cli: &Cli) -> Result<(), ExampleError> {
    let device: DeviceChoice = cli.device.parse()?;
    let preset = cli.preset.parse()?;
    let setup = Engine::open(device, preset, fhelium_examples::engine::DEFAULT_SEED)?;
    let e = &setup.engine;
    let n = e.num_slots();
    #[allow(clippy::cast_precision_loss)]
    let x: Vec<f64> = (0..n).map(|j| 0.5 * (j as f64 * 0.01).cos()).collect();
    #[allow(clippy::cast_precision_loss)]
    let y: Vec<f64> = (0..n)
        .map(|j| 0.25 + 0.1 * (j as f64 * 0.003).sin())
        .collect();

    let ct_x = e.encrypt_message(&x)?;
    let ct_y = e.encrypt_message(&y)?;
    let key = e.create_rotation_key(1, e.secret_key())?;
    let pt_y = e.prepare_plaintext_for_multiplication(&e.encode(&y, 0, None)?, ModulusBasis::Q)?;

    let to_ntt = |c: &Ciphertext| e.coefficient_domain_to_ntt_domain(c);
    // Back to the coefficient domain where needed, then rescale.
    let finish = |c: &Ciphertext| -> Result<Ciphertext, ExampleError> {
        if c.domain() == Domain::Ntt {
            e.rescale_to_next_level(&e.ntt_domain_to_coefficient_domain(c)?)
        } else {
            e.rescale_to_next_level(c)
        }
    };
    let rotated = e.rotate_with_key(&ct_x, &key)?;
    // Hoisted: two rotations of one ciphertext share the decomposition and ModUp of c1.
    let (key2, key_m3) = (
        e.create_rotation_key(2, e.secret_key())?,
        e.create_rotation_key(-3, e.secret_key())?,
    );
    let hoisted = e.rotate_many_with_keys(&ct_x, &[&key2, &key_m3])?;
    let times_pt = finish(&e.multiply_plaintext(&to_ntt(&ct_x)?, &pt_y)?)?;
    let times_ct = finish(&e.relinearize(&e.multiply(&to_ntt(&ct_x)?, &to_ntt(&ct_y)?)?)?)?;

    // The engine's rotation by `step` moves slot j to slot j + step: slot j then holds
    // x[j - step] (`roll_by(k)` is slot j holding x[j + k]).
    let roll_by = |k: usize| -> Vec<f64> { (0..n).map(|j| x[(j + k) % n]).collect() };
    let (roll, roll2, roll_m3) = (roll_by(n - 1), roll_by(n - 2), roll_by(3));
    let prod: Vec<f64> = x.iter().zip(&y).map(|(a, b)| a * b).collect();
    let mut t = Table::new(["operation", "level", "bytes", "max error", "rms error"]);
    let mut worst = 0.0_f64;
    for (name, ct, want) in [
        ("encrypt + decrypt", &ct_x, &x),
        ("rotate by 1", &rotated, &roll),
        ("rotate by 2 (hoisted)", &hoisted[0], &roll2),
        ("rotate by -3 (hoisted)", &hoisted[1], &roll_m3),
        ("multiply by plaintext + rescale", &times_pt, &prod),
        ("multiply + relinearize + rescale", &times_ct, &prod),
    ] {
        let s = error_stats(&e.decrypt_message(ct)?, want);
        worst = worst.max(s.max_abs);
        t.row([
            name.to_owned(),
            ct.level().to_string(),
            format_bytes(ct.nbytes()),
            format_sci(s.max_abs),
            format_sci(s.rms),
        ]);
    }
    println!(
        "preset={preset} device={} ({}) slots={n}",
        cli.device,
        e.describe()
    );
    print!("{t}");
    if worst > MAX_ERROR {
        return Err(ExampleError::ErrorTooLarge {
            location: device.location(),
            max_abs: worst,
            bound: MAX_ERROR,
        });
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(&Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("basic_ckks: {e}");
            ExitCode::FAILURE
        }
    }
}
