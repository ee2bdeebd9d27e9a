//! Helpers shared by the GPU test binaries of fhelium-cuda.

use cust::prelude::Context;

/// A CUDA context on device 0, or `None` (with the reason printed) when there is no device;
/// `FHELIUM_REQUIRE_GPU=1` (set by the GPU bundle's run-all.sh) makes a missing device a
/// failure instead.
pub fn device_or_skip() -> Option<Context> {
    let required = std::env::var("FHELIUM_REQUIRE_GPU").is_ok_and(|v| v == "1");
    match cust::quick_init() {
        Ok(ctx) => Some(ctx),
        Err(e) => {
            assert!(!required, "FHELIUM_REQUIRE_GPU=1 but no CUDA device: {e}");
            eprintln!("skipped: no CUDA device available ({e})");
            None
        }
    }
}
