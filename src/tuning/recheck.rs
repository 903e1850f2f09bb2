//! Reproducibility of a tuning run: "two tunes of the same shape must agree;
//! the winner of a second run, re-timed, within 2% of the first run's winner".
//!
//! When a shape is tuned again, the database already holds the previous run's winner (W1, with
//! its recorded median). An exhaustive second run measures W1 again, in the same process and
//! against the same inputs as its own winner W2, so the two can be compared without the
//! run-to-run drift of the GPU (clocks, temperature, another process). The runs agree when
//!
//! ```text
//! deviation = |median(W2) - median'(W1)| / median'(W1) <= 2 %
//! ```
//!
//! where `median'(W1)` is W1's median *in the second run* (its re-timed median) and `median(W2)`
//! the second run's best median. Since W2 is the fastest of the second run, the deviation is the
//! share of time the first run's choice leaves on the table now: 0 when W2 is W1. The recorded
//! median of W1 (from the first run) is kept for the report ([`Agreement::drift_pct`]) but does
//! not decide: it carries the drift between the two runs, which is not the search's fault.
//!
//! Pure: no GPU, no I/O.

use crate::db::Entry;
use crate::family::catalog::Freshness;
use crate::family::space::config_label;
use crate::plan::outcome::{CandidateResult, TuneReport};
use std::fmt;

/// The largest deviation, in percent, at which two runs agree.
pub const TOLERANCE_PCT: f64 = 2.0;

/// A previous winner measured again, and the new winner.
#[derive(Debug, Clone, PartialEq)]
pub struct Agreement {
    /// The previous winner: `family params`, e.g. `gemm_tile2d BK=16 BM=256 ...`.
    pub previous: String,
    /// Its median as recorded by the previous run, ms.
    pub previous_ms: f64,
    /// Its median in this run, ms.
    pub retimed_ms: f64,
    /// This run's winner: `family params`.
    pub winner: String,
    /// This run's winner's median, ms.
    pub winner_ms: f64,
    /// `|winner_ms - retimed_ms| / retimed_ms * 100`.
    pub deviation_pct: f64,
    /// `deviation_pct <= TOLERANCE_PCT` (up to floating-point rounding).
    pub agrees: bool,
}

impl Agreement {
    /// How much the previous winner's median moved between the two runs, in percent of the
    /// recorded one (positive: slower now). Information only: it does not decide agreement.
    pub fn drift_pct(&self) -> f64 {
        (self.retimed_ms - self.previous_ms) / self.previous_ms * 100.0
    }
}

/// What a second tuning run says about the previous winner of the same GPU x op x shape.
#[derive(Debug, Clone, PartialEq)]
pub enum Recheck {
    /// The previous winner was measured again.
    Retimed(Agreement),
    /// The previous winner was tried again and failed (compile, validation, launch, ...).
    Failed {
        /// The previous winner: `family params`.
        previous: String,
        /// The first line of why.
        reason: String,
    },
    /// The previous winner is not among this run's measured candidates: a budgeted or
    /// interrupted search, a family filter, or a space that no longer holds it.
    NotTried {
        /// The previous winner: `family params`.
        previous: String,
    },
}

/// Compares the previous winner `previous` (the database entry of the same GPU, op and shape,
/// written before this run) with this run's `results`; see the module documentation for the
/// rule. The new winner is the fastest measured result (the first of equals, as
/// [`crate::plan::outcome::TuneReport::ranked`] picks it).
pub fn recheck(previous: &Entry, results: &[CandidateResult]) -> Recheck {
    let prev = config_label(&previous.family, &previous.params);
    let same = |r: &&CandidateResult| r.family == previous.family && r.params == previous.params;
    let retimed = results.iter().filter(same).find_map(|r| r.median_ms());
    let winner = results
        .iter()
        .filter_map(|r| r.median_ms().map(|ms| (r, ms)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    match (retimed, winner) {
        (Some(retimed_ms), Some((w, winner_ms))) => {
            let deviation_pct = (winner_ms - retimed_ms).abs() / retimed_ms * 100.0;
            Recheck::Retimed(Agreement {
                previous: prev,
                previous_ms: previous.median_ms,
                retimed_ms,
                winner: config_label(&w.family, &w.params),
                winner_ms,
                deviation_pct,
                // 1e-9: 0.98 against 1.00 is 2.0000000000000018% in floating point.
                agrees: deviation_pct <= TOLERANCE_PCT + 1e-9,
            })
        }
        _ => match results
            .iter()
            .filter(same)
            .find_map(|r| r.outcome.as_ref().err())
        {
            Some(f) => Recheck::Failed {
                previous: prev,
                reason: format!(
                    "{:?}: {}",
                    f.stage,
                    f.reason.lines().next().unwrap_or_default()
                ),
            },
            None => Recheck::NotTried { previous: prev },
        },
    }
}

/// The line `autotune` prints after tuning a shape that the database already held:
/// [`recheck`] of `previous` against `report`, noting when the previous entry was tuned with
/// another version of its family (another checksum: then the runs need not agree).
pub fn log_line(previous: &Entry, report: &TuneReport) -> String {
    let current = report.checksums.get(&previous.family).map(String::as_str);
    let changed = Freshness::of(&previous.checksum, current) == Freshness::Stale;
    format!(
        "{}{}",
        recheck(previous, &report.results),
        if changed {
            " [the previous entry was tuned with another version of its family]"
        } else {
            ""
        }
    )
}

/// One line for the tuning log, starting `reproducibility:`.
impl fmt::Display for Recheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Recheck::Retimed(a) => write!(
                f,
                "reproducibility: previous winner {} ({:.4} ms) re-timed at {:.4} ms; new winner {} at {:.4} ms: {} ({:.1}%)",
                a.previous,
                a.previous_ms,
                a.retimed_ms,
                a.winner,
                a.winner_ms,
                if a.agrees {
                    "within 2%"
                } else {
                    "NOT within 2%"
                },
                a.deviation_pct
            ),
            Recheck::Failed { previous, reason } => write!(
                f,
                "reproducibility: previous winner {previous} failed in this run ({reason})"
            ),
            Recheck::NotTried { previous } => write!(
                f,
                "reproducibility: previous winner {previous} was not measured in this run (budgeted or partial search, or not in the space): not re-timed"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::outcome::{Failure, Measured, Stage};
    use crate::measure::timing::Stats;
    use std::collections::BTreeMap;

    fn params(bm: i64, bn: i64) -> BTreeMap<String, i64> {
        [("BM".to_string(), bm), ("BN".to_string(), bn)].into()
    }

    fn measured(family: &str, bm: i64, bn: i64, ms: f64) -> CandidateResult {
        CandidateResult {
            family: family.into(),
            kernel: format!("{family}_BM{bm}_BN{bn}"),
            params: params(bm, bn),
            outcome: Ok(Measured {
                stats: Stats {
                    median_ms: ms,
                    min_ms: ms,
                    max_ms: ms,
                    spread_pct: 0.0,
                    samples: 10,
                },
                max_rel_error: 0.0,
                mean_rel_error: None,
                registers: 32,
                local_bytes: 0,
            }),
        }
    }

    fn failed(family: &str, bm: i64, bn: i64) -> CandidateResult {
        CandidateResult {
            outcome: Err(Failure {
                stage: Stage::Validate,
                reason: "max relative error 1e-2 > tolerance\nmore".into(),
            }),
            ..measured(family, bm, bn, 0.0)
        }
    }

    /// A database entry for `family` BM/BN at `ms`, parsed as the database file holds it.
    fn entry(family: &str, bm: i64, bn: i64, ms: f64) -> Entry {
        let text = format!(
            r#"
schema_version = 1
[[gpu]]
name = "G"
arch = "sm_90"
sms = 132
clock_mhz = 1980
fp32_peak_gflops = 1.0
memory_mib = 1
driver_version = "13.0"
nvrtc_version = "13.0"
[[entry]]
gpu = "G"
op = "gemm"
shape = "64x64x64"
m = 64
n = 64
k = 64
family = "{family}"
kernel = "{family}_BM{bm}_BN{bn}"
params = {{ BM = {bm}, BN = {bn} }}
median_ms = {ms}
min_ms = {ms}
spread_pct = 0.0
samples = 10
gflops = 1.0
gbs = 1.0
cublas_median_ms = 1.0
vs_cublas = 1.0
pct_of_peak = 1.0
max_rel_error = 0.0
tolerance = 1e-5
tried = 3
failed = 0
seed = 1
date = "2026-01-01T00:00:00Z"
tool_version = "0.1.0"
checksum = "x"
"#
        );
        crate::db::Database::from_toml_str(&text, "test")
            .unwrap()
            .entries
            .remove(0)
    }

    #[test]
    fn same_winner_agrees_with_zero_deviation() {
        let prev = entry("f", 64, 64, 1.00);
        let results = [
            measured("f", 32, 32, 1.50),
            measured("f", 64, 64, 1.03),
            measured("f", 128, 64, 1.10),
        ];
        let Recheck::Retimed(a) = recheck(&prev, &results) else {
            panic!("not re-timed")
        };
        assert_eq!(a.previous, "f BM=64 BN=64");
        assert_eq!(a.winner, "f BM=64 BN=64");
        assert_eq!(
            (a.previous_ms, a.retimed_ms, a.winner_ms),
            (1.00, 1.03, 1.03)
        );
        assert_eq!(a.deviation_pct, 0.0);
        assert!(a.agrees);
        // The drift between runs is reported, not judged.
        assert!((a.drift_pct() - 3.0).abs() < 1e-9);
        let line = Recheck::Retimed(a).to_string();
        assert!(line.starts_with("reproducibility: previous winner f BM=64 BN=64 (1.0000 ms) re-timed at 1.0300 ms; new winner f BM=64 BN=64 at 1.0300 ms: within 2% (0.0%)"), "{line}");
    }

    #[test]
    fn another_winner_within_two_percent_agrees() {
        // Previous winner re-timed at 1.00, new winner at 0.981: 1.9% apart.
        let prev = entry("f", 64, 64, 0.95);
        let results = [measured("f", 64, 64, 1.00), measured("g", 128, 64, 0.981)];
        let Recheck::Retimed(a) = recheck(&prev, &results) else {
            panic!("not re-timed")
        };
        assert_eq!(a.winner, "g BM=128 BN=64");
        assert!((a.deviation_pct - 1.9).abs() < 1e-9, "{}", a.deviation_pct);
        assert!(a.agrees);
        // Exactly at the limit still agrees.
        let results = [measured("f", 64, 64, 1.00), measured("g", 128, 64, 0.98)];
        let Recheck::Retimed(a) = recheck(&prev, &results) else {
            panic!("not re-timed")
        };
        assert!(a.agrees, "{}", a.deviation_pct);
    }

    #[test]
    fn a_winner_more_than_two_percent_faster_disagrees() {
        // Measured against the re-timed 1.00, not the recorded 0.97: the new winner is 3%
        // faster than the old choice today, although it is within 2% of the old record.
        let prev = entry("f", 64, 64, 0.96);
        let results = [
            measured("g", 128, 64, 0.97),
            measured("f", 64, 64, 1.00),
            failed("g", 256, 64),
        ];
        let r = recheck(&prev, &results);
        let Recheck::Retimed(a) = &r else {
            panic!("not re-timed")
        };
        assert!((a.deviation_pct - 3.0).abs() < 1e-9);
        assert!(!a.agrees);
        assert!(r.to_string().ends_with("NOT within 2% (3.0%)"), "{r}");
    }

    #[test]
    fn previous_winner_missing_or_failed() {
        let prev = entry("f", 64, 64, 1.0);
        // Not among the results (budgeted search), or another family's config with the same
        // parameters.
        let results = [measured("g", 64, 64, 0.9), measured("f", 128, 64, 1.2)];
        let r = recheck(&prev, &results);
        assert_eq!(
            r,
            Recheck::NotTried {
                previous: "f BM=64 BN=64".into()
            }
        );
        assert!(r.to_string().contains("not re-timed"), "{r}");
        assert!(matches!(recheck(&prev, &[]), Recheck::NotTried { .. }));
        // Tried and failed this time: a reproducibility problem of its own.
        let results = [failed("f", 64, 64), measured("f", 128, 64, 1.2)];
        let r = recheck(&prev, &results);
        assert_eq!(
            r,
            Recheck::Failed {
                previous: "f BM=64 BN=64".into(),
                reason: "Validate: max relative error 1e-2 > tolerance".into()
            }
        );
        assert!(r.to_string().contains("failed in this run"), "{r}");
    }
}
