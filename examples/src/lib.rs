//! # fhelium-examples
//!
//! The example programs of fhelium-rs as library functions (so that the cross-crate tests in
//! `tests/` run exactly what the binaries print), with their shared helpers:
//!
//! - [`automatic`]: FHElium example 14, automatic residency ([`run_automatic`]);
//! - [`explicit`]: FHElium example 13, an explicit plan with a device lease ([`run_explicit`]);
//! - [`matrix`]: an encrypted 16 x 16 matrix product whose rotation keys are streamed
//!   through a device budget far below its working set ([`matrix::run_matrix`]);
//! - [`multi`]: a batch of the seed's stages split over several devices ([`run_multi`]);
//! - [`engine`]: `--device cpu | sim:N | cuda:N` to an engine and a memory layer;
//! - [`timeline`]: Chrome trace-event JSON and SVG memory charts of a run;
//! - [`transfers`]: the copies a manager made, read from plan reports;
//! - [`table`]: text tables and byte figures in FHElium's printed layout.
//!
//! ```no_run
//! use fhelium_examples::{run_automatic, AutomaticOptions, Timeline};
//! let outcome = run_automatic(&AutomaticOptions::default(), &Timeline::disabled())?;
//! print!("{}", outcome.render());
//! # Ok::<(), fhelium_examples::ExampleError>(())
//! ```

pub mod automatic;
pub mod cli;
pub mod engine;
mod error;
pub mod explicit;
pub mod matrix;
pub mod multi;
pub mod table;
pub mod timeline;
pub mod transfers;

pub use automatic::{run_automatic, AutomaticOptions, AutomaticOutcome, MAX_ERROR};
pub use engine::{DeviceChoice, Engine, Setup};
pub use error::ExampleError;
pub use explicit::{run_explicit, ExplicitOutcome};
pub use multi::{run_multi, DeviceList, MultiOptions, MultiOutcome};
pub use table::{error_stats, format_budget, format_bytes, format_sci, ErrorStats, Table};
pub use timeline::{Timeline, TimelineLayer};
