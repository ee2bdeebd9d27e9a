//! A batch of the seed's rotate -> NTT -> multiply_plaintext -> INTT -> rescale stages split
//! over several devices under per-device budgets smaller than the working set.
//!
//! `--devices sim:0,sim:1` (default) runs the CPU engine on two simulated devices;
//! `--devices cuda:0,cuda:1` or `--devices all` (feature `cuda`) runs one CUDA engine per GPU.
//! Every result is decrypted and checked against its cleartext; the program prints each
//! round's decision, the per-device accounting (budget, used, peak charged, transfers) and the
//! throughput. `--peer staged` forces every device-to-device copy through pinned host.
//! Exits non-zero when a check fails or an item's error exceeds 1e-5.

use std::process::ExitCode;

use clap::Parser;
use fhelium_cuda::PeerMode;
use fhelium_examples::multi::{run_multi, DeviceList, MultiOptions, DEFAULT_BATCH};
use fhelium_examples::{ExampleError, Timeline, MAX_ERROR};

/// Residency across several devices: one batch, per-device budgets, peer copies.
#[derive(Parser)]
struct Cli {
    /// Devices: a list of sim:N or of cuda:N, or `all` (every visible CUDA device).
    #[arg(long, default_value = "sim:0,sim:1")]
    devices: String,
    /// Number of ciphertexts (at least 2 per device).
    #[arg(long, default_value_t = DEFAULT_BATCH)]
    batch: usize,
    /// Peer copies: auto (direct where possible) or staged (always through pinned host).
    #[arg(long, default_value = "auto")]
    peer: String,
    /// CKKS preset.
    #[arg(long, default_value = "slots8192-scale40-levels7-int64")]
    preset: String,
    /// Engine seed byte.
    #[arg(long, default_value_t = fhelium_examples::engine::DEFAULT_SEED)]
    seed: u8,
}

fn run(cli: &Cli) -> Result<(), ExampleError> {
    let peer = match cli.peer.as_str() {
        "auto" => PeerMode::Auto,
        "staged" => PeerMode::Staged,
        other => {
            return Err(ExampleError::InvalidArgument {
                argument: "--peer",
                reason: format!("{other:?} is not auto or staged"),
            })
        }
    };
    let options = MultiOptions {
        devices: cli.devices.parse::<DeviceList>()?,
        batch: cli.batch,
        preset: cli.preset.parse()?,
        seed: cli.seed,
        peer,
    };
    let outcome = run_multi(&options, &Timeline::disabled())?;
    print!("{}", outcome.render());
    if let Some((i, e)) = outcome
        .errors
        .iter()
        .enumerate()
        .find(|(_, e)| e.max_abs > MAX_ERROR)
    {
        return Err(ExampleError::ErrorTooLarge {
            location: outcome.rounds[i / outcome.devices.len()].items[i % outcome.devices.len()].0,
            max_abs: e.max_abs,
            bound: MAX_ERROR,
        });
    }
    Ok(())
}

fn main() -> ExitCode {
    match run(&Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("multi_gpu: {e}");
            ExitCode::FAILURE
        }
    }
}
