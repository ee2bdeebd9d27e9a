//! Proves without nvcc that every committed PTX file was generated from the current source.

use sha2::{Digest, Sha256};
use std::fs;
use std::path::Path;

#[test]
fn every_ptx_header_matches_its_source_hash() {
    // A bundle run elsewhere (the GPU machine) points at its checkout's kernels/.
    let kernels = std::env::var_os("FHELIUM_KERNELS_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../kernels"),
        std::path::PathBuf::from,
    );
    let mut checked = 0;
    for entry in fs::read_dir(&kernels).unwrap() {
        let src = entry.unwrap().path();
        if src.extension().is_none_or(|x| x != "cu") {
            continue;
        }
        let hash = hex::encode(Sha256::digest(fs::read(&src).unwrap()));
        let stem = src.file_stem().unwrap().to_str().unwrap();
        let ptx = fs::read_to_string(kernels.join("ptx").join(format!("{stem}.ptx")))
            .unwrap_or_else(|e| panic!("kernels/ptx/{stem}.ptx: {e}; run `cargo xtask ptx`"));
        let header = ptx.lines().next().unwrap_or("");
        assert!(
            header.starts_with("// fhelium-ptx source-sha256:") && header.contains(&hash),
            "kernels/ptx/{stem}.ptx is stale: header {header:?}, source hash {hash}; run `cargo xtask ptx`"
        );
        assert!(
            ptx.contains(".target sm_90"),
            "{stem}.ptx must target sm_90"
        );
        checked += 1;
    }
    assert!(checked >= 1, "no kernels found in {}", kernels.display());
}
