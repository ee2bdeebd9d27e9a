//! The automatic-residency example (FHElium example 14) in Rust.
//!
//! Placeholder until the [example] issue lands: it says so and exits with status 2.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    eprintln!(
        "automatic_residency: not implemented yet (the [example] issue builds it); arguments were {args:?}"
    );
    std::process::exit(2);
}
