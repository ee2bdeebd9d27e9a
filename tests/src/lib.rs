//! # fhelium-tests
//!
//! Cross-crate tests of fhelium-rs live in `tests/tests/`: example parity on the simulated
//! device against FHElium's printed output (`tests/fixtures/ex13.txt`, `ex14.txt`, copied from
//! `reference/fhelium-h200/`), and randomized model-based tests of the manager.
//!
//! This library holds the helpers those tests share: reading FHElium's text tables back into
//! figures.

/// FHElium's printed output of example 14 (automatic residency) on the H200.
pub const EX14: &str = include_str!("../fixtures/ex14.txt");
/// FHElium's printed output of example 13 (explicit residency) on the H200.
pub const EX13: &str = include_str!("../fixtures/ex13.txt");

/// Parses a byte figure as FHElium prints it (`0 B`, `1.00 MiB`, `27.00 MiB`, `3.25 GiB`);
/// `None` for anything else (`unbudgeted`, `n/a`).
#[must_use]
pub fn parse_bytes(s: &str) -> Option<u64> {
    let (num, unit) = s.trim().split_once(' ')?;
    let mult: f64 = match unit {
        "B" => 1.0,
        "KiB" => 1024.0,
        "MiB" => 1_048_576.0,
        "GiB" => 1_073_741_824.0,
        _ => return None,
    };
    let v: f64 = num.parse().ok()?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // printed figures
    Some((v * mult).round() as u64)
}

/// The data rows of the table that follows the line `title` (or the first table when
/// `title` is empty), cells split on runs of two or more spaces.
#[must_use]
pub fn table_after(text: &str, title: &str) -> Vec<Vec<String>> {
    let mut lines = text
        .lines()
        .skip_while(|l| !title.is_empty() && l.trim() != title);
    if !title.is_empty() {
        lines.next();
    }
    let mut lines = lines
        .skip_while(|l| !l.starts_with("----") && !l.contains("  "))
        .peekable();
    // header line, then the dash line
    let _header = lines.next();
    let _dashes = lines.next();
    lines
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .collect()
}

/// The `key=value` or `key: value` pairs of a summary line starting with `prefix`.
#[must_use]
pub fn summary(text: &str, prefix: &str) -> Vec<(String, String)> {
    let Some(line) = text.lines().find(|l| l.starts_with(prefix)) else {
        return Vec::new();
    };
    line[prefix.len()..]
        .split(';')
        .filter_map(|kv| {
            let kv = kv.trim();
            kv.split_once('=')
                .or_else(|| kv.split_once(": "))
                .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        })
        .collect()
}

/// The value of `key` in [`summary`]'s pairs.
#[must_use]
pub fn field<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_reference_tables() {
        assert_eq!(parse_bytes("27.00 MiB"), Some(27 << 20));
        assert_eq!(parse_bytes("0 B"), Some(0));
        assert_eq!(parse_bytes("unbudgeted"), None);
        let peaks = table_after(EX14, "Predicted managed peaks:");
        assert_eq!(peaks.len(), 3);
        assert_eq!(peaks[1], vec!["cuda:0".to_owned(), "27.00 MiB".to_owned()]);
        let reclaim = table_after(EX14, "");
        assert_eq!(reclaim.len(), 1);
        assert_eq!(reclaim[0][1], "DropResident");
        let d = summary(EX14, "Decision: ");
        assert_eq!(field(&d, "state_version"), Some("6"));
        let m = summary(EX14, "Managed ");
        assert_eq!(field(&m, "CUDA budget"), Some("27.00 MiB"));
        assert_eq!(field(&m, "transitions"), Some("4"));
    }
}
