//! # fhelium-examples
//!
//! Shared helpers of the example binaries (`automatic_residency`, `explicit_residency`,
//! `basic_ckks`): table printing, byte formatting, device selection and trace export.

pub mod table;

pub use table::{error_stats, format_budget, format_bytes, ErrorStats, Table};
