//! What `autotune verify` concludes about each kernel it checked, from what was measured: pure
//! (no GPU), so that every rule is tested with made-up measurements.
//!
//! A *subject* is a database entry (its config, its problem, and what the database claims:
//! time, cuBLAS's time, checksum of the family's sources) or a representative config of a
//! family with no claim (the first and last config of a space, for sanitizer runs). For each,
//! [`crate::tuning::verify`] measures: validation and timing on the entry's problem, beside
//! cuBLAS in the same process, and validation on the op's [`edge_shapes`]. A subject fails
//! ([`Verdict::ok`] is false) when
//!
//! * its family's kernels changed since it was tuned (stale: another revision, the checksum
//!   differs) or its family is unknown,
//! * a validation failed (wrong result, out-of-bounds write, crash, compile or load error), or
//! * it runs slower than recorded by more than [`Policy::max_slowdown`]; the slowdown is
//!   `(now_ms / recorded_ms) / (cublas_now_ms / cublas_recorded_ms)`, the kernel's time
//!   relative to cuBLAS's in the same process now against the same ratio recorded, so a GPU
//!   that runs everything 10% slower today (clocks, temperature, a neighbour) does not fail
//!   every entry; the raw ratio is reported beside it. When the timing is not this GPU's
//!   (PTX for an older arch, JIT-compiled; or entries of another GPU), no slowdown is judged.

use crate::db::Entry;
use crate::family::catalog::Freshness;
use crate::family::math::Math;
use crate::family::space::{params_label, Config};
use crate::problem::{Op, Shape};
use crate::report::{Align, Row as TableRow, Table};
use serde::Serialize;
use std::collections::BTreeMap;

/// The default of `--max-slowdown`: an entry may run 25% slower than recorded (relative to
/// cuBLAS) before it fails.
pub const DEFAULT_MAX_SLOWDOWN: f64 = 1.25;

/// The problems every verified kernel of the full interface is validated on besides
/// [`edge_shapes`]: each layout, beta, alpha, padded leading dimensions and batches (three
/// products; more than the grid's z limit is the GPU tests' job), on odd sizes below and past
/// the tiles, few rows (the layer call `X W^T` with one and 13 tokens) and a K of 1. A
/// kernel of a family that computes only the plain form is not run on them.
pub fn edge_forms(op: Op) -> Vec<Shape> {
    let labels: &[&str] = match op {
        Op::Gemm => &[
            "33x65x129:nt",
            "33x65x129:tn:beta",
            "130x7x1001:tt:alpha",
            "3x5x7:nt:pad:beta",
            "1x771x513:nt",
            "13x1029x1027:nt:beta:pad",
            "2x33x17:tn:b3",
            "65x33x1:tt:b3:beta:pad",
            "17x9x300:b3:alpha",
        ],
        Op::Gemv => &[
            "33x129:t",
            "1000x999:t:beta:pad",
            "3x5:b3:alpha",
            "17x100001:t:b3",
            "100000x3:beta:pad",
        ],
    };
    labels
        .iter()
        .filter_map(|l| Shape::parse(op, l).ok())
        .collect()
}

/// Whether verify validates `config` of `family` on the edge problem `problem` (a plain edge
/// shape or an [`edge_forms`] one). A family of the plain interface computes the plain form
/// only, any shape of it. A family of the full interface is run on a form only where its space
/// offers the config for that form on some problem: the edge problem, the config's own problem
/// (`own`, an entry's), or a sweep reference shape, each taken in the edge problem's form. Its
/// spaces pin the parameters of the other layouts' paths (gemv's row split of `y = A^T x`, a
/// split of K that only the NT path has), and the runtime never launches a config on a form
/// whose constraints reject it (`product::lookup`), so neither does verify.
pub fn runs_on(
    family: &crate::family::catalog::Family,
    config: &Config,
    own: Option<Shape>,
    problem: Shape,
    limits: &crate::family::space::Limits,
) -> bool {
    use crate::family::space::Interface;
    let space = &family.space;
    if !space.interface.computes(&problem.form) {
        return false;
    }
    if space.interface == Interface::Plain {
        return true;
    }
    let op = space.op;
    std::iter::once(problem)
        .chain(own)
        .chain(crate::tuning::sweep::reference_shapes(op))
        .map(|s| s.with_form(problem.form))
        .any(|s| matches!(space.reject_reason(config, s, limits), Ok(None)))
}

/// The shapes every verified kernel is validated on besides its own problem: single elements,
/// odd sizes below every tile, a K of 1 with M and N one past and one short of a power of two,
/// and (gemv) very tall and very wide matrices.
pub fn edge_shapes(op: Op) -> Vec<Shape> {
    let s = |m, n, k| Shape::mnk(m, n, k);
    match op {
        Op::Gemm => vec![
            s(1, 1, 1),
            s(3, 5, 7),
            s(2049, 2047, 1),
            s(33, 65, 129),
            s(130, 7, 1001),
        ],
        Op::Gemv => vec![
            s(1, 1, 1),
            s(3, 1, 5),
            s(33, 1, 129),
            s(1000, 1, 999),
            s(100_000, 1, 3),
            s(17, 1, 100_001),
        ],
    }
}

/// What the database claims for an entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Claim {
    /// The GPU the entry was tuned on.
    pub gpu: String,
    /// The entry's problem.
    pub shape: Shape,
    /// Its recorded median, ms.
    pub median_ms: f64,
    /// cuBLAS's median recorded with it, ms.
    pub cublas_ms: f64,
    /// The recorded checksum of the family's template and space.
    pub checksum: String,
}

/// One kernel to verify: a config, and the database's claim when it comes from an entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Subject {
    /// The op.
    pub op: Op,
    /// The config.
    pub config: Config,
    /// What the database claims (`None`: a representative config of its family).
    pub claim: Option<Claim>,
    /// The claim's checksum against the family's current sources (`Current` without a claim).
    pub freshness: Freshness,
    /// How the kernel computes: the entry's math (its family's, where the catalog knows it),
    /// or the representative config's family's.
    pub math: Math,
}

impl Subject {
    /// The subject of a database entry, with its freshness against `current`, the checksum of
    /// the family's sources in the catalog that verifies it (`None`: no such family).
    pub fn of_entry(entry: &Entry, current: Option<&str>) -> Subject {
        Subject {
            op: entry.op,
            config: Config {
                family: entry.family.clone(),
                params: entry.params.clone(),
            },
            math: entry.math,
            claim: Some(Claim {
                gpu: entry.gpu.clone(),
                shape: entry.shape(),
                median_ms: entry.median_ms,
                cublas_ms: entry.cublas_median_ms,
                checksum: entry.checksum.clone(),
            }),
            freshness: Freshness::of(&entry.checksum, current),
        }
    }

    /// A representative config with no claim (`known`: its family exists).
    pub fn representative(op: Op, config: Config, known: bool) -> Subject {
        Subject {
            op,
            config,
            claim: None,
            math: Math::Simt,
            freshness: if known {
                Freshness::Current
            } else {
                Freshness::UnknownFamily
            },
        }
    }

    /// `family P=v ...`.
    pub fn label(&self) -> String {
        format!(
            "{} {}",
            self.config.family,
            params_label(&self.config.params)
        )
    }
}

/// The entry's problem, validated and timed now.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Retimed {
    /// The kernel's median now, ms.
    pub kernel_ms: f64,
    /// cuBLAS's median now, in the same process, ms.
    pub cublas_ms: f64,
    /// The kernel's largest relative error against the float64 reference.
    pub max_rel_error: f64,
}

/// One validation on a shape: passed (with its error) or why not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// The shape, as the op writes it.
    pub shape: String,
    /// The largest relative error (passed), or why it failed.
    pub outcome: Result<f64, String>,
}

/// What was measured for one subject.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Measurements {
    /// The entry's problem: retimed, or why it failed (`None`: not run, e.g. `--edge-only` or
    /// a subject with no claim).
    pub problem: Option<Result<Retimed, String>>,
    /// The validations on the edge shapes.
    pub edges: Vec<Check>,
}

/// How strict the verdict is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Policy {
    /// The largest slowdown (relative to cuBLAS) that passes, e.g. 1.25.
    pub max_slowdown: f64,
    /// Why the timings are not comparable with the recorded ones (`None`: they are): then no
    /// slowdown is judged.
    pub timing_not_comparable: Option<String>,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            max_slowdown: DEFAULT_MAX_SLOWDOWN,
            timing_not_comparable: None,
        }
    }
}

/// One reason a subject fails.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Finding {
    /// The family's kernels changed since the entry was tuned (another revision).
    Stale,
    /// The catalog has no family of that name.
    UnknownFamily,
    /// A validation (or compile, load, launch) failed on a shape.
    Failed {
        /// The shape.
        shape: String,
        /// Why, as measured.
        reason: String,
    },
    /// Slower than recorded by more than the policy allows.
    Slower {
        /// The slowdown relative to cuBLAS.
        slowdown: f64,
        /// The limit.
        max: f64,
    },
    /// The recorded times cannot be compared (not positive, not finite).
    BadRecord {
        /// What is wrong.
        what: String,
    },
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::Stale => f.write_str(
                "stale: the family's kernels changed since it was tuned (another revision: the checksum differs): re-tune it",
            ),
            Finding::UnknownFamily => f.write_str("unknown family: not in the families verified"),
            Finding::Failed { shape, reason } => write!(
                f,
                "failed on {shape}: {}",
                reason.lines().next().unwrap_or_default()
            ),
            Finding::Slower { slowdown, max } => write!(
                f,
                "{slowdown:.2}x slower than recorded relative to cuBLAS (limit {max:.2}x)"
            ),
            Finding::BadRecord { what } => write!(f, "the record cannot be compared: {what}"),
        }
    }
}

/// The verdict on one subject.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// Every reason it fails; empty when it passes.
    pub findings: Vec<Finding>,
    /// Its time now over its recorded time, as measured (`None`: not timed).
    pub raw_slowdown: Option<f64>,
    /// The same relative to cuBLAS: what [`Policy::max_slowdown`] judges.
    pub slowdown: Option<f64>,
    /// Whether the slowdown was judged (the timings are comparable).
    pub timing_judged: bool,
}

impl Verdict {
    /// Whether the subject passes.
    pub fn ok(&self) -> bool {
        self.findings.is_empty()
    }

    /// One word or two for the table: `ok`, or the kinds of findings.
    pub fn status(&self) -> String {
        if self.ok() {
            return "ok".into();
        }
        let mut words: Vec<&str> = Vec::new();
        for f in &self.findings {
            let w = match f {
                Finding::Stale => "STALE",
                Finding::UnknownFamily => "UNKNOWN",
                Finding::Failed { .. } => "FAILED",
                Finding::Slower { .. } => "SLOWER",
                Finding::BadRecord { .. } => "BAD RECORD",
            };
            if !words.contains(&w) {
                words.push(w);
            }
        }
        words.join(",")
    }
}

/// `(now / recorded) / (cublas now / cublas recorded)`, or the raw ratio when a cuBLAS time is
/// missing: `(raw, relative)`. `None` when the recorded time is unusable.
pub fn slowdown(claim: &Claim, now: &Retimed) -> Option<(f64, f64)> {
    let good = |x: f64| x.is_finite() && x > 0.0;
    if !good(claim.median_ms) || !good(now.kernel_ms) {
        return None;
    }
    let raw = now.kernel_ms / claim.median_ms;
    let rel = if good(claim.cublas_ms) && good(now.cublas_ms) {
        raw / (now.cublas_ms / claim.cublas_ms)
    } else {
        raw
    };
    Some((raw, rel))
}

/// The verdict on `subject` given what was measured, under `policy`.
pub fn judge(subject: &Subject, m: &Measurements, policy: &Policy) -> Verdict {
    let mut findings = Vec::new();
    match subject.freshness {
        Freshness::Current => {}
        Freshness::Stale => findings.push(Finding::Stale),
        Freshness::UnknownFamily => findings.push(Finding::UnknownFamily),
    }
    let mut raw_slowdown = None;
    let mut rel_slowdown = None;
    let judged = policy.timing_not_comparable.is_none();
    if let (Some(problem), Some(claim)) = (&m.problem, &subject.claim) {
        match problem {
            Err(reason) => findings.push(Finding::Failed {
                shape: claim.shape.label(subject.op),
                reason: reason.clone(),
            }),
            Ok(now) => match slowdown(claim, now) {
                Some((raw, rel)) => {
                    raw_slowdown = Some(raw);
                    rel_slowdown = Some(rel);
                    // 1e-9: a limit met exactly passes despite rounding.
                    if judged && rel > policy.max_slowdown + 1e-9 {
                        findings.push(Finding::Slower {
                            slowdown: rel,
                            max: policy.max_slowdown,
                        });
                    }
                }
                None if judged => findings.push(Finding::BadRecord {
                    what: format!(
                        "recorded {} ms, measured {} ms",
                        claim.median_ms, now.kernel_ms
                    ),
                }),
                None => {}
            },
        }
    }
    for c in &m.edges {
        if let Err(reason) = &c.outcome {
            findings.push(Finding::Failed {
                shape: c.shape.clone(),
                reason: reason.clone(),
            });
        }
    }
    Verdict {
        findings,
        raw_slowdown,
        slowdown: rel_slowdown,
        timing_judged: judged,
    }
}

/// One verified subject: what it is, what was measured, the verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    /// The kernel and its claim.
    pub subject: Subject,
    /// What was measured.
    pub measured: Measurements,
    /// The verdict.
    pub verdict: Verdict,
}

/// A whole verification: the rows and how they were made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// The GPU that ran the kernels.
    pub device: String,
    /// Whose entries were verified (the database's GPU name).
    pub gpu: String,
    /// What NVRTC compiled to: `sm_90` (cubin) or `compute_75` (PTX, JIT-compiled).
    pub target: String,
    /// The NVRTC used: version and library.
    pub nvrtc: String,
    /// The cuBLAS that timed the baseline: version and library.
    pub cublas: String,
    /// The policy applied.
    pub policy: Policy,
    /// One per subject.
    pub rows: Vec<Row>,
}

impl Report {
    /// Judges every subject with its measurements; `nvrtc` and `cublas` are the libraries
    /// used, version and path.
    pub fn new(
        device: String,
        gpu: String,
        target: String,
        nvrtc: String,
        cublas: String,
        policy: Policy,
        checked: Vec<(Subject, Measurements)>,
    ) -> Report {
        let rows = checked
            .into_iter()
            .map(|(subject, measured)| Row {
                verdict: judge(&subject, &measured, &policy),
                subject,
                measured,
            })
            .collect();
        Report {
            device,
            gpu,
            target,
            nvrtc,
            cublas,
            policy,
            rows,
        }
    }

    /// The rows that fail.
    pub fn failures(&self) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(|r| !r.verdict.ok())
    }

    /// How many subjects fail, per kind of finding (`stale`, `failed`, `slower`, ...).
    pub fn counts(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for r in self.failures() {
            for w in r.verdict.status().split(',') {
                *out.entry(w.to_lowercase()).or_insert(0) += 1;
            }
        }
        out
    }

    /// The table: one row per subject.
    pub fn table(&self) -> Table {
        let rows: Vec<VerifyRow> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let s = &r.subject;
                let m = &r.measured;
                let now = match &m.problem {
                    Some(Ok(t)) => Some(*t),
                    _ => None,
                };
                VerifyRow {
                    index: i + 1,
                    op: s.op,
                    shape: s
                        .claim
                        .as_ref()
                        .map_or("(space end)".to_string(), |c| c.shape.label(s.op)),
                    kernel: s.label(),
                    math: s.math,
                    sources: match s.freshness {
                        Freshness::Current => "current",
                        Freshness::Stale => "STALE",
                        Freshness::UnknownFamily => "unknown",
                    },
                    passed: m.edges.iter().filter(|c| c.outcome.is_ok()).count()
                        + usize::from(matches!(m.problem, Some(Ok(_)))),
                    checks: m.edges.len() + usize::from(m.problem.is_some()),
                    recorded_ms: s.claim.as_ref().map(|c| c.median_ms),
                    now_ms: now.map(|t| t.kernel_ms),
                    cublas_now_ms: now.map(|t| t.cublas_ms),
                    slowdown: r.verdict.slowdown,
                    timing_judged: r.verdict.timing_judged,
                    raw_slowdown: r.verdict.raw_slowdown,
                    verdict: r.verdict.status(),
                }
            })
            .collect();
        Table::from_rows(&rows)
    }

    /// The text printed after the table: one line per finding, then the summary line
    /// (`verify: N kernel(s), M ok, ...`).
    pub fn findings_text(&self) -> String {
        let mut out = String::new();
        for (i, r) in self.rows.iter().enumerate() {
            for f in &r.verdict.findings {
                out.push_str(&format!(
                    "#{} {} {}: {f}\n",
                    i + 1,
                    r.subject.op,
                    r.subject.label()
                ));
            }
        }
        if let Some(why) = &self.policy.timing_not_comparable {
            out.push_str(&format!(
                "note: slowdowns not judged: {why}; shown in parentheses, for information only, and never recorded\n"
            ));
        }
        let counts: Vec<String> = self
            .counts()
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        let failed = self.failures().count();
        out.push_str(&format!(
            "verify: {} kernel(s), {} ok, {failed} failed{} (max slowdown {:.2}x relative to cuBLAS; target {}; NVRTC {}; cuBLAS {})\n",
            self.rows.len(),
            self.rows.len() - failed,
            if counts.is_empty() {
                String::new()
            } else {
                format!(" ({})", counts.join(", "))
            },
            self.policy.max_slowdown,
            self.target,
            self.nvrtc,
            self.cublas
        ));
        out
    }
}

/// A row of [`Report::table`]: one subject.
struct VerifyRow {
    /// 1 for the first subject.
    index: usize,
    op: Op,
    /// The claim's shape, or `(space end)`.
    shape: String,
    kernel: String,
    math: Math,
    /// Whether the kernel's sources are current, stale or of an unknown family.
    sources: &'static str,
    /// Checks passed, of `checks`.
    passed: usize,
    checks: usize,
    recorded_ms: Option<f64>,
    now_ms: Option<f64>,
    cublas_now_ms: Option<f64>,
    slowdown: Option<f64>,
    /// Whether the slowdown was judged (shown in parentheses when not).
    timing_judged: bool,
    raw_slowdown: Option<f64>,
    verdict: String,
}

impl TableRow for VerifyRow {
    fn header() -> Vec<(&'static str, Align)> {
        vec![
            ("#", Align::Right),
            ("op", Align::Left),
            ("shape", Align::Left),
            ("kernel", Align::Left),
            ("math", Align::Left),
            ("sources", Align::Left),
            ("checks", Align::Right),
            ("recorded ms", Align::Right),
            ("now ms", Align::Right),
            ("cuBLAS now ms", Align::Right),
            ("slowdown", Align::Right),
            ("raw", Align::Right),
            ("verdict", Align::Left),
        ]
    }

    fn cells(&self) -> Vec<String> {
        let ms = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.4}"));
        let factor = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.3}"));
        vec![
            self.index.to_string(),
            self.op.to_string(),
            self.shape.clone(),
            self.kernel.clone(),
            self.math.to_string(),
            self.sources.to_string(),
            format!("{}/{} ok", self.passed, self.checks),
            ms(self.recorded_ms),
            ms(self.now_ms),
            ms(self.cublas_now_ms),
            if self.timing_judged {
                factor(self.slowdown)
            } else {
                self.slowdown.map_or("-".into(), |v| format!("({v:.3})"))
            },
            factor(self.raw_slowdown),
            self.verdict.clone(),
        ]
    }
}

#[cfg(test)]
mod tests;
