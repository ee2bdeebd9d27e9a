//! The CKKS engine's `tracing` spans, printed as they close: which operation ran, where, on
//! what (level, bytes, parameters), nested in the call that made it, and how long it took on
//! the host. `cargo run --release -p fhelium-ckks --example trace_ops`; `RUST_LOG` filters
//! (default `fhelium_ckks=debug`; the CUDA engine's kernel launches are at `trace`).

use fhelium_ckks::{CpuEngine, ModulusBasis, Preset};
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::EnvFilter;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| "fhelium_ckks=debug".into()),
        )
        .with_span_events(FmtSpan::CLOSE)
        .with_target(false)
        .init();
    let engine = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [1; 32])?;
    let m: Vec<f64> = (0..engine.num_slots())
        .map(|j| 0.01 * (0.017 * j as f64).sin())
        .collect();
    // The example-14 stage, each call a span (the first rotation makes its key inside).
    let ct = engine.encrypt_message(&m)?;
    let weight = engine.prepare_plaintext_for_multiplication(
        &engine.encode(&vec![0.5; m.len()], 0, None)?,
        ModulusBasis::Q,
    )?;
    let r = engine.rotate_by_step(&ct, 1)?;
    let r = engine.coefficient_domain_to_ntt_domain(&r)?;
    let r = engine.multiply_plaintext(&r, &weight)?;
    let r = engine.ntt_domain_to_coefficient_domain(&r)?;
    let out = engine.rescale_to_next_level(&r)?;
    let got = engine.decrypt_message(&out)?;
    // A refused call: its error is an event inside its span.
    let refused = engine.multiply_plaintext(&ct, &weight);
    println!(
        "slot 100 = {:.9} (want 0.5 * slot 99 = {:.9}); multiply_plaintext of a \
         coefficient-domain ciphertext: {}",
        got[100],
        0.5 * m[99],
        refused
            .err()
            .map_or_else(|| "accepted?".into(), |e| e.to_string())
    );
    Ok(())
}
