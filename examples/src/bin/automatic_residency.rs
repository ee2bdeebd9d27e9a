//! Automatic residency admission (FHElium example 14) in Rust.
//!
//! Admits a CKKS working set under a strict managed device budget: a cold replicable
//! plaintext occupies device capacity, the deterministic controller reclaims it before placing
//! the encrypted input, the rotation key and the operation-ready plaintext; the program then
//! runs rotate -> NTT -> multiply_plaintext -> INTT -> rescale through a strict lease and
//! prints the decision, the predicted peaks and the final cached residency.
//!
//! `--device cpu` (default) runs the CPU engine with the simulated device `sim:0`.
//! `--trace FILE` writes a Chrome trace (Perfetto); `--plot FILE.svg` a memory chart.
//! Exits non-zero when a check fails or the max error exceeds 1e-5.

use std::process::ExitCode;

use clap::Parser;
use fhelium_examples::cli::ExampleArgs;
use fhelium_examples::{run_automatic, ExampleError, MAX_ERROR};

/// Deterministic automatic residency admission under managed device pressure.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: ExampleArgs,
}

fn run(cli: &Cli) -> Result<(), ExampleError> {
    let outcome = cli.args.run("automatic residency", run_automatic)?;
    print!("{}", outcome.render());
    if outcome.error.max_abs > MAX_ERROR {
        return Err(ExampleError::ErrorTooLarge {
            location: outcome.device,
            max_abs: outcome.error.max_abs,
            bound: MAX_ERROR,
        });
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(&Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("automatic_residency: {e}");
            ExitCode::FAILURE
        }
    }
}
