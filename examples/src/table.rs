//! Plain-text tables and byte figures in the layout FHElium's examples print.
//!
//! Columns are left-aligned, padded to the widest cell (header included) and joined by two
//! spaces; a row of dashes under the header. Byte figures use binary units with two decimals
//! (`0 B`, `1.00 MiB`, `27.00 MiB`), so our output can be compared line by line with
//! `reference/fhelium-h200/ex14.txt`.

use std::fmt::Write as _;

/// Formats a byte count: whole bytes below 1 KiB (`512 B`), otherwise two decimals in the
/// largest binary unit up to GiB (`1.50 KiB`, `27.00 MiB`, `3.25 GiB`).
#[must_use]
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 3] = ["KiB", "MiB", "GiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    #[allow(clippy::cast_precision_loss)] // display only: 2 decimals of a byte figure
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.2} {}", UNITS[unit])
}

/// Formats an optional budget: `unbudgeted` when there is none.
#[must_use]
pub fn format_budget(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "unbudgeted".to_owned(), format_bytes)
}

/// A text table with a header row; rows may be added one at a time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    #[must_use]
    pub fn new<I, S>(headers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            headers: headers.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Appends one row. Missing trailing cells print empty; extra cells are ignored, as the
    /// header fixes the columns.
    pub fn row<I, S>(&mut self, cells: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut row: Vec<String> = cells.into_iter().map(Into::into).collect();
        row.resize(self.headers.len(), String::new());
        self.rows.push(row);
        self
    }

    /// Number of data rows.
    #[must_use]
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether the table has no data rows.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Renders the table, one line per row, each line ending in `\n`.
    #[must_use]
    pub fn render(&self) -> String {
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |cells: &[String]| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(cell, &w)| format!("{cell:<w$}"))
                .collect();
            let _ = writeln!(out, "{}", padded.join("  "));
        };
        line(&self.headers);
        let dashes: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        line(&dashes);
        for row in &self.rows {
            line(row);
        }
        out
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

/// Error statistics of decrypted slots against the expected cleartext.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ErrorStats {
    /// Largest absolute difference.
    pub max_abs: f64,
    /// Root mean square of the differences.
    pub rms: f64,
}

/// Compares `got` with `expected` slot by slot over their common length.
#[must_use]
pub fn error_stats(got: &[f64], expected: &[f64]) -> ErrorStats {
    let n = got.len().min(expected.len());
    if n == 0 {
        return ErrorStats {
            max_abs: 0.0,
            rms: 0.0,
        };
    }
    let mut max_abs = 0.0_f64;
    let mut sum_sq = 0.0_f64;
    for (g, e) in got.iter().zip(expected).take(n) {
        let d = (g - e).abs();
        max_abs = max_abs.max(d);
        sum_sq += d * d;
    }
    #[allow(clippy::cast_precision_loss)] // slot counts are far below 2^52
    let rms = (sum_sq / n as f64).sqrt();
    ErrorStats { max_abs, rms }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_use_fhelium_units() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(1024), "1.00 KiB");
        assert_eq!(format_bytes(1_048_576), "1.00 MiB");
        assert_eq!(format_bytes(27 * 1_048_576), "27.00 MiB");
        assert_eq!(format_bytes(18_874_368), "18.00 MiB");
        assert_eq!(
            format_bytes(3 * 1024 * 1024 * 1024 + 1024 * 1024 * 256),
            "3.25 GiB"
        );
        assert_eq!(format_bytes(5000 * 1024 * 1024 * 1024), "5000.00 GiB");
        assert_eq!(format_budget(None), "unbudgeted");
        assert_eq!(format_budget(Some(2_097_152)), "2.00 MiB");
    }

    #[test]
    fn table_matches_the_reference_layout() {
        // The "Predicted managed peaks" table of reference/fhelium-h200/ex14.txt, byte for byte.
        let mut t = Table::new(["location", "peak charged"]);
        t.row(["pinned-host", "2.00 MiB"]);
        t.row(["cuda:0", "27.00 MiB"]);
        t.row(["pageable-host", "20.00 MiB"]);
        let expected = "location       peak charged\n\
                        -------------  ------------\n\
                        pinned-host    2.00 MiB    \n\
                        cuda:0         27.00 MiB   \n\
                        pageable-host  20.00 MiB   \n";
        assert_eq!(t.render(), expected);
        assert_eq!(t.len(), 3);
        assert!(!t.is_empty());
    }

    #[test]
    fn short_rows_are_padded_to_the_header() {
        let mut t = Table::new(["a", "bb"]);
        t.row(["xyz"]);
        assert_eq!(t.render(), "a    bb\n---  --\nxyz    \n");
    }

    #[test]
    fn error_stats_measure_max_and_rms() {
        let s = error_stats(&[1.0, 2.0, 3.0], &[1.0, 2.5, 2.0]);
        assert!((s.max_abs - 1.0).abs() < 1e-15);
        assert!((s.rms - ((0.25 + 1.0) / 3.0_f64).sqrt()).abs() < 1e-15);
        let empty = error_stats(&[], &[1.0]);
        assert!(empty.max_abs.abs() < f64::EPSILON);
    }
}

/// Formats like Python's `f"{x:.3e}"` (`5.408e-07`, `1.000e+00`): at least two exponent
/// digits with an explicit sign, as FHElium's examples print errors.
#[must_use]
pub fn format_sci(x: f64) -> String {
    let s = format!("{x:.3e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

#[cfg(test)]
mod sci_tests {
    use super::format_sci;

    #[test]
    fn python_exponent_layout() {
        assert_eq!(format_sci(5.408e-7), "5.408e-07");
        assert_eq!(format_sci(1.0), "1.000e+00");
        assert_eq!(format_sci(1.392e-6), "1.392e-06");
        assert_eq!(format_sci(2.5e123), "2.500e+123");
        assert_eq!(format_sci(-3.0e-12), "-3.000e-12");
    }
}
