//! Evaluation keys under a byte budget: the CPU engine's key cache bounded to two keys while a
//! program rotates by five different steps (decisions 0530, 0531). Prints, after each call,
//! what the cache holds and what left; then shows a refusal. `cargo run --release -p
//! fhelium-ckks --example key_cache`.

use fhelium_ckks::{CachedKey, CkksError, CpuEngine, Preset};

fn name(k: &CachedKey) -> String {
    match k {
        CachedKey::Relinearization => "relin".to_string(),
        CachedKey::Rotation { step, .. } => format!("rot {step:+}"),
    }
}

fn names(keys: &[CachedKey]) -> String {
    let v: Vec<String> = keys.iter().map(name).collect();
    if v.is_empty() {
        "-".to_string()
    } else {
        v.join(", ")
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let engine = CpuEngine::with_seed(Preset::Slots8192Scale40Levels7Int64, [5; 32])?;
    let key = engine.switch_key_bytes();
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    println!("one evaluation key: {key} bytes ({:.2} MiB)", mib(key));
    engine.set_key_cache_capacity(Some(2 * key));
    println!("key cache capacity: {:.2} MiB (two keys)\n", mib(2 * key));

    let m: Vec<f64> = (0..engine.num_slots())
        .map(|j| 0.01 * (0.013 * j as f64).cos())
        .collect();
    let ct = engine.encrypt_message(&m)?;
    println!(
        "{:<22} {:>10} {:>9}  {:<22} left",
        "call", "max error", "held MiB", "held (oldest first)"
    );
    let mut before = engine.cached_keys();
    for step in [1i64, 2, 1, 3, 8193] {
        let r = engine.rotate_by_step(&ct, step)?;
        let got = engine.decrypt_message(&r)?;
        let n = m.len() as i64;
        let err = (0..n)
            .map(|j| (got[j as usize] - m[(j - step).rem_euclid(n) as usize]).abs())
            .fold(0.0, f64::max);
        let now = engine.cached_keys();
        let left: Vec<CachedKey> = before
            .iter()
            .filter(|k| !now.contains(k))
            .copied()
            .collect();
        println!(
            "{:<22} {:>10.3e} {:>9.2}  {:<22} {}",
            format!("rotate_by_step({step})"),
            err,
            mib(engine.key_cache_bytes()),
            names(&now),
            names(&left)
        );
        before = now;
    }
    // A key made again after it left is the same key (counter-based key generation).
    let again = engine.rotation_key(2)?;
    engine.clear_key_cache();
    let third = engine.rotation_key(2)?;
    println!(
        "\nthe key of step 2 made again after it left, and again after a clear: same words: {}",
        again.view() == third.view()
    );
    // Below one key, a first use is refused before anything is made.
    engine.set_key_cache_capacity(Some(key / 2));
    match engine.rotate_by_step(&ct, 5) {
        Err(e @ CkksError::KeyCacheCapacity { .. }) => println!("refused: {e}"),
        other => println!("unexpected: {other:?}"),
    }
    Ok(())
}
