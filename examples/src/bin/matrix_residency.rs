//! An encrypted 16 x 16 matrix product (plaintext A x encrypted B, the diagonal method) under
//! a device budget far below its working set: the residency controller streams the 15
//! rotation keys (18 MiB each) through the device one step at a time, prefetching the next
//! key while a step computes.
//!
//! `--device cpu` (default) runs the CPU engine with the simulated device `sim:0`; `cuda:N`
//! (feature `cuda`) the CUDA engine. `--dim` changes the dimension, `--budget-mib` the device
//! budget (default: the smallest the schedule needs), `--no-prefetch` admits each key only
//! when its step starts, `--schedule column-hoisted` runs FHElium's order instead (every key
//! on the device at once, each column's 15 rotations over one ModUp). `--layers L` computes
//! A^L x B with the same keys in every layer; `--evict next-use` reclaims the value needed
//! farthest ahead in the forecast program instead of the least recently used one.
//! `--keys-at pinned-host` keeps the keys in page-locked memory, so that on CUDA their copies
//! run beside the compute. Prints each step's decision, the device accounting and the result's
//! error against the f64 product; exits non-zero when a step cannot be admitted, a check
//! fails or a slot's error exceeds 3e-5.

use std::process::ExitCode;

use clap::Parser;
use fhelium_examples::cli::ExampleArgs;
use fhelium_examples::matrix::{
    budget_from_mib, parse_keys_at, run_matrix, MatrixOptions, DEFAULT_DIM, MATRIX_MAX_ERROR,
};
use fhelium_examples::ExampleError;

/// Encrypted matrix product with rotation keys streamed through a small device budget.
#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: ExampleArgs,
    /// Matrix dimension (a power of two, 2..=64).
    #[arg(long, default_value_t = DEFAULT_DIM)]
    dim: usize,
    /// Layers: A^layers x B, every layer with the same rotation keys (1..=4).
    #[arg(long, default_value_t = 1)]
    layers: usize,
    /// What the controller reclaims first: lru, or next-use (the value needed farthest ahead
    /// in the forecast program).
    #[arg(long, default_value = "lru")]
    evict: String,
    /// Device budget in MiB (default: the smallest the schedule needs).
    #[arg(long)]
    budget_mib: Option<u64>,
    /// key-major (one key at a time on the device), column-hoisted (FHElium's order: every
    /// key on the device, each column's rotations over one ModUp), or auto (column-hoisted
    /// when --budget-mib holds what it needs, key-major otherwise).
    #[arg(long, default_value = "auto")]
    schedule: String,
    /// Admit each step's new values when the step starts instead of during the previous step.
    #[arg(long)]
    no_prefetch: bool,
    /// Where the rotation keys live on the host: pageable-host, or pinned-host (on CUDA only
    /// copies from pinned memory overlap the compute).
    #[arg(long, default_value = "pageable-host")]
    keys_at: String,
}

fn run(cli: &Cli) -> Result<(), ExampleError> {
    let device_budget = cli.budget_mib.map(budget_from_mib).transpose()?;
    let eviction = cli.evict.parse()?;
    let keys_at = parse_keys_at(&cli.keys_at)?;
    let schedule = match cli.schedule.as_str() {
        "auto" => None,
        other => Some(other.parse()?),
    };
    let outcome = cli.args.run("matrix residency", |engine, timeline| {
        run_matrix(
            &MatrixOptions {
                engine: *engine,
                dim: cli.dim,
                layers: cli.layers,
                eviction,
                schedule,
                prefetch: !cli.no_prefetch,
                device_budget,
                keys_at,
            },
            timeline,
        )
    })?;
    print!("{}", outcome.render());
    if outcome.max_error() > MATRIX_MAX_ERROR {
        return Err(ExampleError::ErrorTooLarge {
            location: outcome.device,
            max_abs: outcome.max_error(),
            bound: MATRIX_MAX_ERROR,
        });
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(&Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("matrix_residency: {e}");
            ExitCode::FAILURE
        }
    }
}
