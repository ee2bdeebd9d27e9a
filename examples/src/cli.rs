//! The command line shared by the example binaries: `--device`, `--preset`, `--seed`,
//! `--trace FILE`, `--plot FILE.svg`.

use clap::Args;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::Layer as _;

use crate::automatic::AutomaticOptions;
use crate::timeline::{self, Timeline};
use crate::ExampleError;

/// Arguments common to the examples.
#[derive(Args, Clone, Debug)]
pub struct ExampleArgs {
    /// cpu (CPU engine + simulated device sim:0), sim:N, or cuda:N.
    #[arg(long, default_value = "cpu")]
    pub device: String,
    /// CKKS preset.
    #[arg(long, default_value = "slots8192-scale40-levels7-int64")]
    pub preset: String,
    /// Engine seed byte (keys and noise are deterministic per seed).
    #[arg(long, default_value_t = crate::engine::DEFAULT_SEED)]
    pub seed: u8,
    /// Write a Chrome trace-event JSON timeline here (open in Perfetto).
    #[arg(long)]
    pub trace: Option<String>,
    /// Write an SVG chart of managed memory over time here.
    #[arg(long)]
    pub plot: Option<String>,
}

impl ExampleArgs {
    /// The parsed engine options.
    ///
    /// # Errors
    /// [`ExampleError::InvalidArgument`] (device), [`ExampleError::Ckks`] (unknown preset).
    pub fn options(&self) -> Result<AutomaticOptions, ExampleError> {
        Ok(AutomaticOptions {
            device: self.device.parse()?,
            preset: self.preset.parse()?,
            seed: self.seed,
        })
    }

    /// Runs `flow` with a timeline that records when `--trace` or `--plot` is given (the
    /// runtime's `tracing` spans included), then writes those files. `title` names the plot.
    ///
    /// # Errors
    /// Those of `flow`, and [`ExampleError::Output`].
    pub fn run<T>(
        &self,
        title: &str,
        flow: impl FnOnce(&AutomaticOptions, &Timeline) -> Result<T, ExampleError>,
    ) -> Result<T, ExampleError> {
        let options = self.options()?;
        let timeline = if self.trace.is_some() || self.plot.is_some() {
            Timeline::enabled()
        } else {
            Timeline::disabled()
        };
        // The subscriber only while recording: otherwise every span (one per kernel launch
        // on the CUDA engine) would still be made and dropped.
        let out = if timeline.is_enabled() {
            let subscriber = tracing_subscriber::registry().with(
                timeline
                    .layer()
                    .with_filter(tracing_subscriber::filter::LevelFilter::TRACE),
            );
            let _guard = tracing::subscriber::set_default(subscriber);
            flow(&options, &timeline)?
        } else {
            flow(&options, &timeline)?
        };
        let title = format!(
            "{title} on {}: managed memory per location",
            options.device.location()
        );
        eprint!(
            "{}",
            timeline::write_outputs(
                &timeline,
                self.trace.as_deref(),
                self.plot.as_deref(),
                &title
            )?
        );
        for m in timeline.replay_mismatches() {
            eprintln!("timeline: {m}");
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(device: &str, preset: &str) -> ExampleArgs {
        ExampleArgs {
            device: device.to_owned(),
            preset: preset.to_owned(),
            seed: 1,
            trace: None,
            plot: None,
        }
    }

    #[test]
    fn options_parse_or_name_the_bad_argument() {
        let o = args("sim:1", "slots8192-scale40-levels7-int64").options();
        assert!(matches!(
            o,
            Ok(AutomaticOptions {
                device: crate::DeviceChoice::Sim(1),
                seed: 1,
                ..
            })
        ));
        assert!(matches!(
            args("tpu:0", "slots8192-scale40-levels7-int64").options(),
            Err(ExampleError::InvalidArgument {
                argument: "--device",
                ..
            })
        ));
        assert!(matches!(
            args("cpu", "slots3-int64").options(),
            Err(ExampleError::Ckks(_))
        ));
        // A bad argument fails before the flow runs.
        let ran = std::cell::Cell::new(false);
        let r = args("tpu:0", "x").run("t", |_, _| {
            ran.set(true);
            Ok(())
        });
        assert!(r.is_err() && !ran.get());
    }
}
