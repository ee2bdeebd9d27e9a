//! Explicit residency plans and device leases (FHElium example 13) in Rust.
//!
//! Adopts a replicable weight, a replicable rotation key and an exclusive ciphertext, moves
//! them with the manager's primitives, dry-runs a named stage plan with a workspace
//! reservation, runs rotate/multiply/rescale inside the plan's scope through a strict lease
//! and prints the accounting after the lease is released and after the stage exits.
//!
//! `--device cpu` (default) runs the CPU engine with the simulated device `sim:0`.
//! `--trace FILE` writes a Chrome trace (Perfetto); `--plot FILE.svg` a memory chart.
//! Exits non-zero when a check fails or the max error exceeds 1e-5.

use std::process::ExitCode;

use clap::Parser;
use fhelium_examples::cli::ExampleArgs;
use fhelium_examples::{run_explicit, ExampleError, MAX_ERROR};

/// A named FHE stage with an explicit residency plan and a device lease.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: ExampleArgs,
}

fn run(cli: &Cli) -> Result<(), ExampleError> {
    let outcome = cli.args.run("explicit residency", run_explicit)?;
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
            eprintln!("explicit_residency: {e}");
            ExitCode::FAILURE
        }
    }
}
