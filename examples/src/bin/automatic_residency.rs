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
use fhelium_ckks::Preset;
use fhelium_examples::{
    run_automatic, timeline, AutomaticOptions, DeviceChoice, ExampleError, Timeline, MAX_ERROR,
};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::Layer as _;

#[derive(Parser)]
#[command(about = "Deterministic automatic residency admission under managed device pressure")]
struct Args {
    /// cpu (CPU engine + simulated device sim:0), sim:N, or cuda:N.
    #[arg(long, default_value = "cpu")]
    device: String,
    /// CKKS preset.
    #[arg(long, default_value = "slots8192-scale40-levels7-int64")]
    preset: String,
    /// Engine seed byte (keys and noise are deterministic per seed).
    #[arg(long, default_value_t = fhelium_examples::engine::DEFAULT_SEED)]
    seed: u8,
    /// Write a Chrome trace-event JSON timeline here.
    #[arg(long)]
    trace: Option<String>,
    /// Write an SVG chart of managed memory over time here.
    #[arg(long)]
    plot: Option<String>,
}

fn run(args: &Args) -> Result<(), ExampleError> {
    let device: DeviceChoice = args.device.parse()?;
    let preset: Preset = args.preset.parse()?;
    let timeline = if args.trace.is_some() || args.plot.is_some() {
        Timeline::enabled()
    } else {
        Timeline::disabled()
    };
    let subscriber = tracing_subscriber::registry().with(
        timeline
            .layer()
            .with_filter(tracing_subscriber::filter::LevelFilter::TRACE),
    );
    let _guard = tracing::subscriber::set_default(subscriber);
    let outcome = run_automatic(
        &AutomaticOptions {
            device,
            preset,
            seed: args.seed,
        },
        &timeline,
    )?;
    print!("{}", outcome.render());
    let title = format!(
        "automatic residency on {} ({}): managed memory per location",
        outcome.device, outcome.engine
    );
    eprint!(
        "{}",
        timeline::write_outputs(
            &timeline,
            args.trace.as_deref(),
            args.plot.as_deref(),
            &title
        )?
    );
    for m in timeline.replay_mismatches() {
        eprintln!("timeline: {m}");
    }
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
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("automatic_residency: {e}");
            ExitCode::FAILURE
        }
    }
}
