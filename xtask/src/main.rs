//! `cargo xtask`: project automation for fhelium-rs.
//!
//! Commands:
//! - `cuda-link`: build a link-time stub `libcuda.so` (soname `libcuda.so.1`) under
//!   `target/cuda-link/lib64` so that `cust`'s build script links on machines without CUDA.
//! - `ptx [--check]`: compile `kernels/*.cu` to `kernels/ptx/*.ptx` with a pinned nvcc 13.0, or
//!   verify without nvcc that every committed PTX file matches the sha256 of its source.
//! - `example [--device D] [--bin B] [--release] [--trace FILE] [--plot FILE.svg] [ARGS...]`:
//!   build and run the automatic-residency example (or `--bin explicit_residency`, `basic_ckks`).
//! - `bench [--device D] [ARGS...]`: build and run the per-operation latency benchmark (on
//!   `cuda:N` the CUDA engine's, timed with CUDA events: `crates/ckks/tests/gpu_oplat.rs`).
//! - `gpu-bundle [--out DIR]`: build every test, example and benchmark binary with
//!   `--features cuda`, and gather them with a `run-all.sh` into one folder to carry to a GPU.
//! - `ci`: exactly what `.ci/run` does.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use clap::{Parser, Subcommand};
use sha2::{Digest, Sha256};

/// Header prefix of every generated PTX file; the source's sha256 follows it.
const PTX_HEADER: &str = "// fhelium-ptx source-sha256:";
/// Pinned wheels that provide nvcc 13.0 (PTX ISA 9.0, accepted by the H200's 580 driver).
const NVCC_WHEELS: [&str; 4] = [
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
];
/// The PTX target: Hopper (H100/H200).
const PTX_ARCH: &str = "compute_90";
/// Marker file naming the stub generator's version; bump it to force a rebuild.
const STUB_VERSION: &str = "stub-v2";

#[derive(Parser)]
#[command(name = "xtask", about = "fhelium-rs project automation")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Make the link-time libcuda stub that cust's build script needs without a CUDA install.
    CudaLink,
    /// Compile kernels/*.cu to kernels/ptx/*.ptx, or check the committed PTX against sources.
    Ptx {
        /// Only verify source hashes; needs no nvcc.
        #[arg(long)]
        check: bool,
    },
    /// Build and run the automatic-residency example.
    Example {
        /// cpu (simulated device sim:0), sim:N or cuda:N.
        #[arg(long, default_value = "cpu")]
        device: String,
        /// Which example binary to run.
        #[arg(long, default_value = "automatic_residency")]
        bin: String,
        /// Build in release mode.
        #[arg(long)]
        release: bool,
        /// Write a Chrome trace-event JSON timeline (Perfetto) to this file.
        #[arg(long)]
        trace: Option<String>,
        /// Write an SVG chart of managed memory over time to this file.
        #[arg(long)]
        plot: Option<String>,
        /// Extra arguments for the example.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Build and run the per-operation latency benchmark (`oplat`).
    Bench {
        /// cpu or cuda:N.
        #[arg(long, default_value = "cpu")]
        device: String,
        /// Extra arguments for the benchmark.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Build all test, example and benchmark binaries with --features cuda into one folder.
    GpuBundle {
        /// Output folder (must be ignored by git so the device tool can carry it).
        #[arg(long, default_value = ".gpu")]
        out: PathBuf,
    },
    /// Run exactly what .ci/run runs.
    Ci,
}

type Result<T> = std::result::Result<T, String>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Cmd::CudaLink => cuda_link().map(|dir| {
            println!("CUDA_LIBRARY_PATH={}", dir.display());
        }),
        Cmd::Ptx { check } => {
            if check {
                ptx_check()
            } else {
                ptx_build()
            }
        }
        Cmd::Example {
            device,
            bin,
            release,
            trace,
            plot,
            mut args,
        } => {
            // Output paths are made absolute: cargo runs the example from the workspace root.
            for (flag, path) in [("--trace", trace), ("--plot", plot)] {
                if let Some(p) = path {
                    let abs = std::env::current_dir()
                        .map(|d| d.join(&p))
                        .unwrap_or_else(|_| PathBuf::from(&p));
                    args.push(flag.to_owned());
                    args.push(abs.display().to_string());
                }
            }
            example(&device, &bin, release, &args)
        }
        Cmd::Bench { device, args } => bench(&device, &args),
        Cmd::GpuBundle { out } => gpu_bundle(&out),
        Cmd::Ci => ci(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("xtask: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("xtask: running {cmd:?}");
    let status = cmd
        .status()
        .map_err(|e| format!("cannot start {cmd:?}: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("{cmd:?} failed with {status}"))
    }
}

fn cargo() -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root());
    cmd
}

// ---------------------------------------------------------------------------------------------
// cuda-link

/// True when a real CUDA driver library is where cust's build script looks for it.
fn system_cuda_present() -> bool {
    [
        "/usr/local/cuda/lib64/libcuda.so",
        "/opt/cuda/lib64/libcuda.so",
    ]
    .iter()
    .any(|p| Path::new(p).exists())
}

/// Finds the `cust_raw` bindings in cargo's registry, to list every driver symbol it declares.
fn cust_raw_bindings() -> Result<PathBuf> {
    // Make sure the sources are downloaded.
    let _ = cargo().args(["fetch", "--quiet"]).status();
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|_| std::env::var("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .map_err(|_| "neither CARGO_HOME nor HOME is set".to_string())?;
    let src = home.join("registry").join("src");
    let mut found = Vec::new();
    for index in fs::read_dir(&src).map_err(|e| format!("{}: {e}", src.display()))? {
        let index = index.map_err(|e| e.to_string())?.path();
        for krate in fs::read_dir(&index).map_err(|e| e.to_string())? {
            let krate = krate.map_err(|e| e.to_string())?.path();
            let name = krate.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if name.starts_with("cust_raw-") {
                let file = krate.join("src").join("cuda.rs");
                if file.exists() {
                    found.push(file);
                }
            }
        }
    }
    found.sort();
    found
        .pop()
        .ok_or_else(|| format!("no cust_raw sources under {}", src.display()))
}

/// Builds `target/cuda-link/lib64/libcuda.so`, a stub whose every function returns
/// `CUDA_ERROR_NO_DEVICE` (100). Binaries record `libcuda.so.1`; on a GPU machine the real
/// driver is loaded instead. Returns the directory to put in `CUDA_LIBRARY_PATH`.
fn cuda_link() -> Result<PathBuf> {
    let dir = root().join("target").join("cuda-link");
    let lib64 = dir.join("lib64");
    let so = lib64.join("libcuda.so.1");
    if so.exists() && lib64.join("libcuda.so").exists() && dir.join(STUB_VERSION).exists() {
        return Ok(dir);
    }
    fs::create_dir_all(&lib64).map_err(|e| e.to_string())?;
    let bindings = cust_raw_bindings()?;
    let text = fs::read_to_string(&bindings).map_err(|e| e.to_string())?;
    let mut names: Vec<&str> = text
        .split("pub fn ")
        .skip(1)
        .filter_map(|rest| rest.split('(').next())
        .map(str::trim)
        .filter(|n| n.starts_with("cu") && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    names.sort_unstable();
    names.dedup();
    let mut c = String::from(
        "/* Generated by cargo xtask cuda-link: a link-time stand-in for libcuda.so.1.\n   Every entry point returns CUDA_ERROR_NO_DEVICE (100). */\n",
    );
    for n in &names {
        match *n {
            // Error-description entry points must hand back a string: callers print it.
            "cuGetErrorString" | "cuGetErrorName" => {
                let _ = writeln!(
                    c,
                    "int {n}(int e, const char** s) {{ (void)e; *s = \"CUDA_ERROR_NO_DEVICE (fhelium link stub: no CUDA driver on this machine)\"; return 0; }}"
                );
            }
            _ => {
                let _ = writeln!(c, "int {n}(void) {{ return 100; }}");
            }
        }
    }
    let c_file = dir.join("libcuda_stub.c");
    fs::write(dir.join(STUB_VERSION), "").map_err(|e| e.to_string())?;
    fs::write(&c_file, c).map_err(|e| e.to_string())?;
    run(Command::new("cc")
        .args(["-shared", "-fPIC", "-O1", "-Wl,-soname,libcuda.so.1", "-o"])
        .arg(&so)
        .arg(&c_file))?;
    let link = lib64.join("libcuda.so");
    let _ = fs::remove_file(&link);
    std::os::unix::fs::symlink("libcuda.so.1", &link).map_err(|e| e.to_string())?;
    eprintln!(
        "xtask: wrote {} ({} driver symbols from {})",
        so.display(),
        names.len(),
        bindings.display()
    );
    Ok(dir)
}

/// A cargo command for `--features cuda` builds: sets `CUDA_LIBRARY_PATH` to the stub when no
/// system CUDA is installed.
fn cuda_cargo() -> Result<Command> {
    let mut cmd = cargo();
    if !system_cuda_present() && std::env::var_os("CUDA_LIBRARY_PATH").is_none() {
        let dir = cuda_link()?;
        cmd.env("CUDA_LIBRARY_PATH", dir);
    }
    Ok(cmd)
}

// ---------------------------------------------------------------------------------------------
// ptx

fn kernel_sources() -> Result<Vec<PathBuf>> {
    let dir = root().join("kernels");
    let mut out: Vec<PathBuf> = fs::read_dir(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "cu"))
        .collect();
    out.sort();
    Ok(out)
}

fn sha256_file(path: &Path) -> Result<String> {
    let bytes = fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(hex::encode(Sha256::digest(&bytes)))
}

fn ptx_path(src: &Path) -> PathBuf {
    let stem = src.file_stem().and_then(|s| s.to_str()).unwrap_or("kernel");
    root()
        .join("kernels")
        .join("ptx")
        .join(format!("{stem}.ptx"))
}

fn ptx_check() -> Result<()> {
    let mut bad = Vec::new();
    let sources = kernel_sources()?;
    for src in &sources {
        let want = sha256_file(src)?;
        let ptx = ptx_path(src);
        let first = fs::read_to_string(&ptx)
            .ok()
            .and_then(|t| t.lines().next().map(str::to_owned));
        match first {
            Some(line) if line.starts_with(PTX_HEADER) && line.contains(&want) => {}
            Some(_) => bad.push(format!("{} is stale (source hash {want})", ptx.display())),
            None => bad.push(format!("{} is missing", ptx.display())),
        }
    }
    // A PTX file without a source is stale too.
    let ptx_dir = root().join("kernels").join("ptx");
    if let Ok(entries) = fs::read_dir(&ptx_dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "ptx")
                && !sources.iter().any(|s| ptx_path(s) == p)
            {
                bad.push(format!("{} has no source in kernels/", p.display()));
            }
        }
    }
    if bad.is_empty() {
        println!(
            "ptx --check: {} kernel(s) in step with their sources",
            sources.len()
        );
        Ok(())
    } else {
        Err(format!(
            "PTX out of step with kernels/ (run `cargo xtask ptx`):\n  {}",
            bad.join("\n  ")
        ))
    }
}

/// An nvcc 13.0: the one on PATH if it reports release 13.0, else a venv under target/.
fn find_nvcc() -> Result<PathBuf> {
    if let Ok(out) = Command::new("nvcc").arg("--version").output() {
        if String::from_utf8_lossy(&out.stdout).contains("release 13.0") {
            return Ok(PathBuf::from("nvcc"));
        }
    }
    let venv = root().join("target").join("nvcc-venv");
    let find = |venv: &Path| -> Option<PathBuf> {
        let lib = venv.join("lib");
        fs::read_dir(&lib).ok()?.flatten().find_map(|py| {
            let nvcc = py.path().join("site-packages/nvidia/cu13/bin/nvcc");
            nvcc.exists().then_some(nvcc)
        })
    };
    if let Some(nvcc) = find(&venv) {
        return Ok(nvcc);
    }
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    run(Command::new(venv.join("bin").join("pip"))
        .args(["install", "-q"])
        .args(NVCC_WHEELS))?;
    find(&venv).ok_or_else(|| format!("nvcc not found in {} after install", venv.display()))
}

fn ptx_build() -> Result<()> {
    let nvcc = find_nvcc()?;
    let out_dir = root().join("kernels").join("ptx");
    fs::create_dir_all(&out_dir).map_err(|e| e.to_string())?;
    for src in kernel_sources()? {
        let hash = sha256_file(&src)?;
        let ptx = ptx_path(&src);
        let tmp = ptx.with_extension("ptx.tmp");
        let rel = src.strip_prefix(root()).unwrap_or(&src).to_path_buf();
        run(Command::new(&nvcc)
            .current_dir(root())
            .args([
                "-ptx",
                &format!("-arch={PTX_ARCH}"),
                "-O3",
                "-std=c++17",
                "-lineinfo",
            ])
            .arg(&rel)
            .arg("-o")
            .arg(&tmp))?;
        let body = fs::read_to_string(&tmp).map_err(|e| e.to_string())?;
        let name = src.file_name().and_then(|n| n.to_str()).unwrap_or("");
        // Drop nvcc's own header comments that carry build-machine details; keep the rest.
        let body: String = body
            .lines()
            .filter(|l| !l.starts_with("// Compiler Build ID") && !l.starts_with("// Based on"))
            .map(|l| format!("{l}\n"))
            .collect();
        fs::write(
            &ptx,
            format!("{PTX_HEADER} {hash} file: kernels/{name}\n{body}"),
        )
        .map_err(|e| e.to_string())?;
        let _ = fs::remove_file(&tmp);
        println!("ptx: {} -> {}", src.display(), ptx.display());
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// example, bench

fn is_cuda_device(device: &str) -> bool {
    device.starts_with("cuda")
}

fn run_bin(package: &str, bin: &str, device: &str, release: bool, args: &[String]) -> Result<()> {
    let mut cmd = if is_cuda_device(device) {
        let mut c = cuda_cargo()?;
        c.args(["run", "--features", "cuda"]);
        c
    } else {
        let mut c = cargo();
        c.arg("run");
        c
    };
    if release {
        cmd.arg("--release");
    }
    cmd.args([
        "--quiet",
        "--package",
        package,
        "--bin",
        bin,
        "--",
        "--device",
        device,
    ]);
    cmd.args(args);
    run(&mut cmd)
}

fn example(device: &str, bin: &str, release: bool, args: &[String]) -> Result<()> {
    run_bin("fhelium-examples", bin, device, release, args)
}

/// `cpu` / `sim:N`: the examples' `oplat` binary (host wall clock). `cuda:N`: the CUDA
/// engine's benchmark (`crates/ckks/tests/gpu_oplat.rs`: every public op as one call between
/// CUDA events, median / p10 / p90 of 200 after 20 warm-ups, 4 ciphertexts x 4 keys, the
/// FHElium table's op names and ratios, FHElium's same-call figures when
/// `FHELIUM_PEER_OPLAT` names its table), on device N; no device is an error there.
fn bench(device: &str, args: &[String]) -> Result<()> {
    if !is_cuda_device(device) {
        return run_bin("fhelium-examples", "oplat", device, true, args);
    }
    let ordinal = cuda_ordinal(device)?;
    let mut cmd = cuda_cargo()?;
    cmd.args([
        "test",
        "--release",
        "--quiet",
        "-p",
        "fhelium-ckks",
        "--features",
        "cuda",
        "--test",
        "gpu_oplat",
        "--",
        "--nocapture",
        "--test-threads=1",
    ])
    .args(args)
    .env("FHELIUM_REQUIRE_GPU", "1")
    .env("FHELIUM_BENCH_DEVICE", ordinal.to_string());
    run(&mut cmd)
}

/// The ordinal N of `cuda:N`.
fn cuda_ordinal(device: &str) -> Result<u32> {
    device
        .strip_prefix("cuda:")
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("--device {device}: expected cpu, sim:N or cuda:N"))
}

// ---------------------------------------------------------------------------------------------
// gpu-bundle

fn gpu_bundle(out: &Path) -> Result<()> {
    let out = if out.is_absolute() {
        out.to_path_buf()
    } else {
        root().join(out)
    };
    let bin_dir = out.join("bin");
    let _ = fs::remove_dir_all(&out);
    fs::create_dir_all(&bin_dir).map_err(|e| e.to_string())?;
    let mut cmd = cuda_cargo()?;
    cmd.args([
        "build",
        "--release",
        "--features",
        "fhelium-tests/cuda",
        "--workspace",
        "--exclude",
        "xtask",
        "--tests",
        "--bins",
        "--benches",
        "--message-format=json-render-diagnostics",
    ])
    .stdout(Stdio::piped());
    eprintln!("xtask: running {cmd:?}");
    let output = cmd
        .spawn()
        .and_then(std::process::Child::wait_with_output)
        .map_err(|e| e.to_string())?;
    if !output.status.success() {
        return Err("cargo build for the GPU bundle failed".into());
    }
    let mut tests = Vec::new();
    let mut bins = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" {
            continue;
        }
        let Some(exe) = msg["executable"].as_str() else {
            continue;
        };
        let is_test = msg["profile"]["test"].as_bool().unwrap_or(false);
        let kind = msg["target"]["kind"][0].as_str().unwrap_or("");
        let name = msg["target"]["name"]
            .as_str()
            .unwrap_or("x")
            .replace('-', "_");
        let pkg = msg["package_id"]
            .as_str()
            .and_then(|p| p.split('#').next())
            .and_then(|p| p.rsplit('/').next())
            .unwrap_or("pkg")
            .replace('-', "_");
        let dest_name = if is_test {
            format!("test-{pkg}-{kind}-{name}")
        } else {
            name.clone()
        };
        let dest = bin_dir.join(&dest_name);
        fs::copy(exe, &dest).map_err(|e| format!("copy {exe}: {e}"))?;
        let _ = Command::new("strip")
            .arg("--strip-debug")
            .arg(&dest)
            .status();
        if is_test && kind != "bench" {
            tests.push(dest_name);
        } else if !is_test {
            bins.push(dest_name);
        }
    }
    tests.sort();
    bins.sort();
    let mut script = String::from(
        "#!/bin/bash\n# Generated by cargo xtask gpu-bundle: run every test binary on the GPU machine.\n\
         # Usage: bash .gpu/run-all.sh  (logs and a summary go to $OUT, or /tmp/gpu-out)\n\
         set -u\nhere=$(cd \"$(dirname \"$0\")\" && pwd)\nout=${OUT:-/tmp/gpu-out}; mkdir -p \"$out\"\n\
         export FHELIUM_REQUIRE_GPU=${FHELIUM_REQUIRE_GPU:-1}\n\
         export FHELIUM_KERNELS_DIR=${FHELIUM_KERNELS_DIR:-$here/../kernels}\nfail=0\n: > \"$out/tests.log\"\n",
    );
    for t in &tests {
        let _ = writeln!(
            script,
            "echo \"== {t}\" | tee -a \"$out/tests.log\"\n\"$here/bin/{t}\" --test-threads=1 --nocapture >> \"$out/tests.log\" 2>&1 || {{ echo \"FAILED {t}\"; fail=1; }}\ngrep -E '^test result' \"$out/tests.log\" | tail -1"
        );
    }
    script.push_str("echo \"run-all: fail=$fail\"\nexit $fail\n");
    fs::write(out.join("run-all.sh"), script).map_err(|e| e.to_string())?;
    let size: u64 = fs::read_dir(&bin_dir)
        .map_err(|e| e.to_string())?
        .flatten()
        .filter_map(|e| e.metadata().ok().map(|m| m.len()))
        .sum();
    println!(
        "gpu-bundle: {} test binaries, {} other binaries, {:.1} MiB in {}",
        tests.len(),
        bins.len(),
        size as f64 / (1024.0 * 1024.0),
        out.display()
    );
    if size > 60 * 1024 * 1024 {
        return Err(format!(
            "bundle is {size} bytes, over the 60 MiB the device tool can carry with the tree"
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// ci

fn ci() -> Result<()> {
    run(cargo().args(["fmt", "--all", "--check"]))?;
    run(cargo().args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    run(cuda_cargo()?.args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--features",
        "fhelium-tests/cuda",
        "--",
        "-D",
        "warnings",
    ]))?;
    ptx_check()?;
    run(cargo().args(["test", "--workspace"]))?;
    // The CUDA engine's host-side unit tests (launch recording and chains, tables, staging),
    // its examples, which compile and link (`no_run`: they need a device), and the CUDA memory
    // layer's unit tests that need no device.
    for (package, target) in [
        ("fhelium-ckks", "--lib"),
        ("fhelium-ckks", "--doc"),
        ("fhelium-cuda", "--lib"),
    ] {
        run(cuda_test_cargo()?.args(["test", "-p", package, "--features", "cuda", target]))?;
    }
    Ok(())
}

/// [`cuda_cargo`] for test binaries that run here: they need no device, only `libcuda.so.1` to
/// load, the stub where no driver is installed.
fn cuda_test_cargo() -> Result<Command> {
    let mut cmd = cuda_cargo()?;
    if !system_cuda_present() {
        let dir = std::env::var_os("CUDA_LIBRARY_PATH").map_or_else(cuda_link, |d| Ok(d.into()))?;
        cmd.env("LD_LIBRARY_PATH", dir.join("lib64"));
    }
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::{cuda_ordinal, is_cuda_device};

    #[test]
    fn bench_devices_parse_or_name_the_bad_one() {
        assert!(is_cuda_device("cuda:0"));
        assert!(!is_cuda_device("cpu"));
        assert_eq!(cuda_ordinal("cuda:0"), Ok(0));
        assert_eq!(cuda_ordinal("cuda:3"), Ok(3));
        for bad in ["cuda", "cuda:", "cuda:x", "cuda:-1"] {
            let e = cuda_ordinal(bad).expect_err(bad);
            assert!(e.contains(bad), "{e}");
        }
    }
}
