//! The CUDA kernels of `kernels/ckks.cu`, run on the CPU by the host emulator
//! (`kernels/emu/ckks_emu.cpp`: one OS thread per CUDA thread, `__syncthreads` as a barrier,
//! the blocks of a limb side by side), checked word for word against plain reference code and
//! against each other (the one-launch, cluster, two-pass, work-queue and key-switch kernels).
//! This is how a machine without a GPU (CI) tests the kernel source itself; the same kernels
//! run for real in `gpu_ops` on a GPU.
//!
//! Needs a C++20 compiler (`c++`, or the one in `CXX`) and up to 4096 threads; without them the
//! test says so and passes without checking anything. Where the compiler can build with
//! AddressSanitizer the emulator runs under it, so that a kernel (or a check) reading or
//! writing outside its buffers fails here instead of corrupting words now and then: the
//! seventeenth session's paired-kernel counters overran the emulator's counter array, which
//! showed only as occasional wrong words and hangs.

use std::path::PathBuf;
use std::process::Command;

fn compiler() -> Option<String> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
    let found = Command::new(&cxx)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    found.then_some(cxx)
}

#[test]
fn kernels_pass_the_host_emulator() {
    let Some(cxx) = compiler() else {
        eprintln!("kernel_emulator: no C++ compiler (c++ or $CXX): kernels not checked here");
        return;
    };
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let source = root.join("kernels/emu/ckks_emu.cpp");
    let binary = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ckks_emu");
    let build = |flags: &[&str]| {
        Command::new(&cxx)
            .args(["-std=c++20", "-pthread"])
            .args(flags)
            .arg(&source)
            .arg("-o")
            .arg(&binary)
            .output()
            .expect("run the C++ compiler")
    };
    let mut built = build(&["-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer"]);
    let sanitized = built.status.success();
    if !sanitized {
        eprintln!("kernel_emulator: {cxx} cannot build with AddressSanitizer; plain build");
        built = build(&["-O2"]);
    }
    assert!(
        built.status.success(),
        "{cxx} could not build {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    let run = Command::new(&binary)
        .env("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0")
        .output()
        .expect("run the emulator");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    if !run.status.success() && stderr.contains("Resource temporarily unavailable") {
        // The emulator runs up to 4096 OS threads at once; a machine whose process limits
        // refuse that cannot run it (the kernels were not checked, which is not their fault).
        eprintln!("kernel_emulator: the machine refused the emulator's threads: {stderr}");
        return;
    }
    let failures: Vec<&str> = stdout.lines().filter(|l| l.starts_with("FAIL")).collect();
    assert!(
        !stderr.contains("AddressSanitizer"),
        "the emulator (sanitized: {sanitized}) touched memory outside its buffers:\n{stderr}"
    );
    assert!(
        run.status.success() && failures.is_empty(),
        "emulator exit {:?}; failures:\n{}\n{stderr}",
        run.status.code(),
        failures.join("\n"),
    );
    // Every kernel family reported, not just an early exit with status 0.
    for check in [
        "forward NTT 2 x 3 limbs (global exchange)",
        "forward NTT 2 x 3 limbs (paired blocks)",
        "inverse NTT round trip (paired blocks)",
        "ModUp as a work queue (global exchange)",
        "key inner product + inverse NTT (global exchange)",
        "relinearize inner product, rows added times P (global exchange)",
        "rotate key switch (g = 3, L = 2, cluster kernels)",
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("ok") && l.contains(check)),
            "the emulator did not report `{check}` as ok:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("emulator: all checks passed"),
        "no summary line:\n{stdout}"
    );
}
