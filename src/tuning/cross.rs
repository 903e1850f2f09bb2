//! How well a config tuned on one GPU does on another: `autotune cross`.
//!
//! On the GPU at hand, for each shape of a suite, the winning config recorded for every GPU of
//! the database (each config once, whichever GPUs chose it) is validated and timed in the same
//! process, next to this GPU's own recorded winner; each is reported as a percentage of the
//! fastest config measured now (100 % = as fast as the best of them on this GPU).
//!
//! The raw measurements go to a portability file (JSON, e.g. `results/portability.json`) that
//! a run on another GPU extends: a run replaces only its own GPU's rows, so running on an H100
//! and then on an H200 gives the full 2 x 2 matrix "winner tuned on X, run on Y". Building the
//! candidate list, the matrix and its rendering are pure and tested without a GPU; only
//! [`run`] needs one.

use crate::cuda::bench::RunError;
use crate::cuda::device::Device;
use crate::cuda::isolate::WorkerSettings;
use crate::cuda::nvrtc::{self, CompileError};
use crate::db::Database;
use crate::family::catalog::{Catalog, Freshness, Source};
use crate::family::space::{config_label, Config};
use crate::fileio::{FileError, WriteLock};
use crate::measure::timing::TimingSettings;
use crate::problem::{Op, Shape};
use crate::report::gpus::short_gpu_name;
use crate::report::{geomean, Align, Row, Table};
use crate::tuning::evaluator::Evaluator;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The layout version of the portability file this build reads and writes.
pub const PORTABILITY_VERSION: u32 = 1;

/// Why a cross run or its file failed.
#[derive(Debug, thiserror::Error)]
pub enum CrossError {
    /// The GPU, cuBLAS or a kernel broke the run.
    #[error(transparent)]
    Run(#[from] RunError),
    /// NVRTC is missing or cannot target this GPU.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// The portability file could not be read or written.
    #[error("could not {action} the portability file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// The portability file is not what this build writes.
    #[error("portability file {} is not valid: {message}. It was left untouched", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// One config measured on one GPU for one shape in a cross run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CrossMeasurement {
    /// The GPU it ran on.
    pub on_gpu: String,
    /// That GPU's arch, e.g. `sm_90`.
    pub on_arch: String,
    /// The op.
    pub op: Op,
    /// The shape's label.
    pub shape: String,
    /// The family.
    pub family: String,
    /// The parameters.
    pub params: BTreeMap<String, i64>,
    /// The GPUs whose recorded winner for this shape is this config.
    pub winner_on: Vec<String>,
    /// Median time now, milliseconds; `None` when it failed.
    pub median_ms: Option<f64>,
    /// Why it could not be measured (does not fit this GPU, failed to compile or validate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    /// The recorded entry's template checksum differs from this build's: the config ran with
    /// the current template, not the one it was tuned with.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale: bool,
    /// cuBLAS's median time in the same process, milliseconds.
    pub cublas_median_ms: f64,
    /// When it was measured, RFC 3339 UTC.
    pub date: String,
    /// The autotune version that measured it.
    pub tool_version: String,
}

impl CrossMeasurement {
    /// `family BM=.. BN=..`.
    pub fn config_label(&self) -> String {
        config_label(&self.family, &self.params)
    }
}

/// The portability file: every cross measurement made so far, on any GPU.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Portability {
    /// [`PORTABILITY_VERSION`].
    pub version: u32,
    /// The measurements, sorted by (GPU run on, op, shape, config).
    pub measurements: Vec<CrossMeasurement>,
}

impl Default for Portability {
    fn default() -> Self {
        Portability {
            version: PORTABILITY_VERSION,
            measurements: Vec::new(),
        }
    }
}

/// A lock or write failure of the portability file, as [`CrossError::Io`].
fn file_error(path: &Path) -> impl Fn(FileError) -> CrossError + '_ {
    move |e| CrossError::Io {
        path: path.to_path_buf(),
        action: "write",
        source: e.into(),
    }
}

impl Portability {
    /// Reads `path`; a missing file is an empty one.
    pub fn load(path: &Path) -> Result<Portability, CrossError> {
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Portability::default()),
            Err(source) => {
                return Err(CrossError::Io {
                    path: path.to_path_buf(),
                    action: "read",
                    source,
                })
            }
        };
        Self::from_json(&text, path)
    }

    /// Parses the file's text; `path` names it in errors.
    pub fn from_json(text: &str, path: &Path) -> Result<Portability, CrossError> {
        let invalid = |message: String| CrossError::Invalid {
            path: path.to_path_buf(),
            message,
        };
        let p: Portability = serde_json::from_str(text)
            .map_err(|e| invalid(format!("line {}, column {}: {e}", e.line(), e.column())))?;
        if p.version != PORTABILITY_VERSION {
            return Err(invalid(format!(
                "version {} (this build reads {PORTABILITY_VERSION})",
                p.version
            )));
        }
        Ok(p)
    }

    /// Writes the file (pretty JSON) atomically ([`crate::fileio`]: temporary file, `fsync`,
    /// rename), holding its write lock. To add a run to a file that other runs may be writing
    /// too, use [`Portability::update_file`], which also holds the lock while reading.
    pub fn save(&self, path: &Path) -> Result<(), CrossError> {
        let lock = WriteLock::acquire(path).map_err(file_error(path))?;
        self.write_locked(&lock)
    }

    /// Read-modify-write: loads `path` (empty if missing), applies `f`, writes the result
    /// atomically and returns it. The write lock is held from before the read until after the
    /// write, so runs on several GPUs finishing at once each keep the others' rows.
    pub fn update_file(
        path: &Path,
        f: impl FnOnce(&mut Portability),
    ) -> Result<Portability, CrossError> {
        let lock = WriteLock::acquire(path).map_err(file_error(path))?;
        let mut p = Portability::load(path)?;
        f(&mut p);
        p.write_locked(&lock)?;
        Ok(p)
    }

    /// Replaces the file `lock` protects with this one.
    fn write_locked(&self, lock: &WriteLock) -> Result<(), CrossError> {
        let path = lock.path();
        let text = serde_json::to_string_pretty(self).map_err(|e| CrossError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        lock.write_atomic(|file| file.write_all(format!("{text}\n").as_bytes()))
            .map_err(file_error(path))
    }

    /// Adds a run's measurements: every earlier measurement on the same GPU, op and shape is
    /// replaced, everything else is kept.
    pub fn absorb(&mut self, run: Vec<CrossMeasurement>) {
        self.measurements.retain(|old| {
            !run.iter()
                .any(|m| m.on_gpu == old.on_gpu && m.op == old.op && m.shape == old.shape)
        });
        self.measurements.extend(run);
        self.measurements.sort_by(|a, b| {
            (&a.on_gpu, a.op, &a.shape, &a.family, &a.params)
                .cmp(&(&b.on_gpu, b.op, &b.shape, &b.family, &b.params))
        });
    }
}

/// A config to run in a cross run, and the GPUs that chose it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The config.
    pub config: Config,
    /// The GPUs of the database whose winner for the shape it is, sorted.
    pub winner_on: Vec<String>,
    /// Some entry that chose it recorded another checksum than this build's template.
    pub stale: bool,
}

/// The configs to run for `op` on `shape`: every GPU's recorded winner, each config once.
/// `catalog` tells which entries were tuned with another version of their family's template.
pub fn candidates(db: &Database, catalog: &Catalog, op: Op, shape: Shape) -> Vec<Candidate> {
    let mut by_config: BTreeMap<Config, Candidate> = BTreeMap::new();
    for e in db
        .entries
        .iter()
        .filter(|e| e.op == op && e.shape() == shape)
    {
        let config = Config {
            family: e.family.clone(),
            params: e.params.clone(),
        };
        let stale = catalog.freshness(&e.family, &e.checksum) == Freshness::Stale;
        let c = by_config.entry(config.clone()).or_insert(Candidate {
            config,
            winner_on: Vec::new(),
            stale: false,
        });
        c.winner_on.push(e.gpu.clone());
        c.winner_on.sort();
        c.stale |= stale;
    }
    by_config.into_values().collect()
}

/// How a cross run times its candidates.
#[derive(Debug, Clone)]
pub struct CrossOptions {
    /// Seed of the random inputs.
    pub seed: u64,
    /// Timing settings (every candidate gets the full sample count: no early cut).
    pub timing: TimingSettings,
    /// Run the kernels in worker processes (a faulting kernel is a failed candidate, not a
    /// failed run); `None` runs them in this process.
    pub isolation: Option<WorkerSettings>,
}

/// Runs every GPU's recorded winner for each of `shapes` on `dev`: compile (all at once, in
/// parallel), then per shape one [`Evaluator`]: cuBLAS, then each candidate validated and timed.
/// A candidate that does not fit this GPU, fails to compile or gives a wrong result is
/// recorded with its reason. `note` receives one line per step for progress output.
#[allow(clippy::too_many_arguments)]
pub fn run(
    dev: &Device,
    catalog: &Catalog,
    cache: &nvrtc::Cache,
    db: &Database,
    op: Op,
    shapes: &[Shape],
    opts: &CrossOptions,
    date: &str,
    note: &dyn Fn(&str),
) -> Result<Vec<CrossMeasurement>, CrossError> {
    nvrtc::check_arch(dev.info.arch)?;
    let limits = &dev.info.limits;
    let mut out = Vec::new();
    for &shape in shapes {
        let cands = candidates(db, catalog, op, shape);
        if cands.is_empty() {
            note(&format!(
                "{op} {}: no GPU of the database has a winner for it; skipped",
                shape.label(op)
            ));
            continue;
        }
        // What can run here: a source and a launch, or why not.
        let planned: Vec<Result<(Source, crate::family::space::Launch), String>> = cands
            .iter()
            .map(|c| {
                let family = catalog.get(&c.config.family).map_err(|e| e.to_string())?;
                match family.space.reject_reason(&c.config, shape, limits) {
                    Ok(None) => {}
                    Ok(Some(why)) => return Err(format!("does not fit this GPU: {why}")),
                    Err(e) => return Err(e.to_string()),
                }
                let k = family
                    .kernel(&c.config, shape, limits)
                    .map_err(|e| e.to_string())?;
                Ok((k.source, k.launch))
            })
            .collect();
        let sources: Vec<Source> = planned
            .iter()
            .filter_map(|p| p.as_ref().ok().map(|(s, _)| s.clone()))
            .collect();
        let compiled = nvrtc::compile_all(
            &sources,
            dev.info.arch,
            nvrtc::Caches::memory(cache),
            &|_| {},
        )
        .results;
        let mut compiled = compiled.into_iter();
        let mut evaluator = Evaluator::open(
            dev,
            op,
            shape,
            opts.seed,
            opts.timing,
            opts.isolation.as_ref(),
        )?;
        let (baseline, _) = evaluator.baseline()?;
        for (c, p) in cands.iter().zip(&planned) {
            let outcome: Result<f64, String> = match p {
                Err(why) => Err(why.clone()),
                Ok((_, launch)) => match compiled.next().as_deref() {
                    Some(Ok(k)) => match evaluator.evaluate(k, *launch, None)? {
                        Ok(m) => Ok(m.stats.median_ms),
                        Err(f) => Err(format!("{:?}: {}", f.stage, f.reason)),
                    },
                    Some(Err(e)) => Err(e.to_string()),
                    None => Err("not compiled".to_string()),
                },
            };
            let m = CrossMeasurement {
                on_gpu: dev.info.name.clone(),
                on_arch: dev.info.arch.to_string(),
                op,
                shape: shape.label(op),
                family: c.config.family.clone(),
                params: c.config.params.clone(),
                winner_on: c.winner_on.clone(),
                median_ms: outcome.as_ref().ok().copied(),
                failure: outcome
                    .as_ref()
                    .err()
                    .map(|e| e.lines().next().unwrap_or_default().to_string()),
                stale: c.stale,
                cublas_median_ms: baseline.median_ms,
                date: date.to_string(),
                tool_version: env!("CARGO_PKG_VERSION").to_string(),
            };
            note(&format!(
                "{op} {} {} (winner on {}): {}",
                m.shape,
                m.config_label(),
                m.winner_on.join(", "),
                match (&m.median_ms, &m.failure) {
                    (Some(ms), _) => format!("{ms:.4} ms"),
                    (None, Some(f)) => format!("failed: {f}"),
                    (None, None) => "failed".to_string(),
                }
            ));
            out.push(m);
        }
    }
    Ok(out)
}

/// One cell of the matrix: GPU X's winners run on GPU Y.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MatrixCell {
    /// Geometric mean over the shapes of (fastest time on Y now) / (time of X's winner on Y),
    /// in percent; `None` when none of X's winners could be measured on Y.
    pub geomean_pct: Option<f64>,
    /// Shapes measured.
    pub shapes: usize,
    /// Shapes where X's winner failed on Y (does not fit, wrong result, ...).
    pub failed: usize,
}

/// The portability matrix of one op: rows are the GPUs the winners were tuned on, columns the
/// GPUs they were run on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Matrix {
    /// The op.
    pub op: Op,
    /// GPUs the winners come from (rows), sorted.
    pub from: Vec<String>,
    /// GPUs they ran on (columns), sorted.
    pub on: Vec<String>,
    /// `cells[row][column]`; `None` where X has no winner among the shapes run on Y.
    pub cells: Vec<Vec<Option<MatrixCell>>>,
}

/// A measurement with its percentage of the fastest time measured on the same GPU and shape.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored<'a> {
    /// The measurement.
    pub m: &'a CrossMeasurement,
    /// `100 * fastest / this`; `None` when it failed.
    pub pct_of_best: Option<f64>,
}

/// Every measurement of `op`, grouped by (GPU run on, shape), with its percentage of the
/// fastest time of its group.
pub fn score(ms: &[CrossMeasurement], op: Op) -> Vec<Scored<'_>> {
    let mut best: BTreeMap<(&str, &str), f64> = BTreeMap::new();
    for m in ms.iter().filter(|m| m.op == op) {
        if let Some(t) = m.median_ms.filter(|t| *t > 0.0) {
            let b = best.entry((&m.on_gpu, &m.shape)).or_insert(t);
            *b = b.min(t);
        }
    }
    ms.iter()
        .filter(|m| m.op == op)
        .map(|m| Scored {
            m,
            pct_of_best: match (
                m.median_ms,
                best.get(&(m.on_gpu.as_str(), m.shape.as_str())),
            ) {
                (Some(t), Some(b)) if t > 0.0 => Some(b / t * 100.0),
                _ => None,
            },
        })
        .collect()
}

/// The matrix "winner tuned on X, run on Y" of `op` from the measurements.
pub fn matrix(ms: &[CrossMeasurement], op: Op) -> Matrix {
    let scored = score(ms, op);
    let mut from: Vec<String> = scored
        .iter()
        .flat_map(|s| s.m.winner_on.iter().cloned())
        .collect();
    from.sort();
    from.dedup();
    let mut on: Vec<String> = scored.iter().map(|s| s.m.on_gpu.clone()).collect();
    on.sort();
    on.dedup();
    let cells = from
        .iter()
        .map(|x| {
            on.iter()
                .map(|y| {
                    let mine: Vec<&Scored> = scored
                        .iter()
                        .filter(|s| &s.m.on_gpu == y && s.m.winner_on.contains(x))
                        .collect();
                    if mine.is_empty() {
                        return None;
                    }
                    let ok: Vec<f64> = mine.iter().filter_map(|s| s.pct_of_best).collect();
                    Some(MatrixCell {
                        geomean_pct: geomean(ok.iter().copied()),
                        shapes: ok.len(),
                        failed: mine.len() - ok.len(),
                    })
                })
                .collect()
        })
        .collect();
    Matrix {
        op,
        from,
        on,
        cells,
    }
}

impl MatrixCell {
    /// `99.1 % (8 shapes)`, with `, 1 failed` when some did.
    pub fn label(&self) -> String {
        let pct = self
            .geomean_pct
            .map_or_else(|| "-".to_string(), |p| format!("{p:.1} %"));
        let mut s = format!(
            "{pct} ({} shape{}",
            self.shapes,
            if self.shapes == 1 { "" } else { "s" }
        );
        if self.failed > 0 {
            let _ = write!(s, ", {} failed", self.failed);
        }
        s.push(')');
        s
    }
}

impl Matrix {
    /// The matrix as a terminal table.
    pub fn table(&self) -> String {
        self.to_table().render()
    }

    /// The matrix as a Markdown table.
    pub fn markdown(&self) -> String {
        self.to_table().markdown()
    }

    fn to_table(&self) -> Table {
        let mut header = vec![format!("{} winner of \\ run on", self.op)];
        header.extend(self.on.iter().map(|g| short_gpu_name(g).to_string()));
        let refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut t = Table::new(&refs, &[true]);
        for (x, row) in self.from.iter().zip(&self.cells) {
            let mut cells = vec![short_gpu_name(x).to_string()];
            cells.extend(row.iter().map(|c| {
                c.as_ref()
                    .map_or_else(|| "-".to_string(), MatrixCell::label)
            }));
            t.row(cells);
        }
        t
    }
}

/// A row of [`shape_rows`]: one config measured on one GPU and shape.
struct ShapeRow {
    /// The short name of the GPU it ran on.
    run_on: String,
    shape: String,
    /// The config's label, `(stale)` after it where its sources changed since.
    config: String,
    /// The short names of the GPUs it is the winner of.
    winner_on: Vec<String>,
    /// `None` where it failed.
    median_ms: Option<f64>,
    /// Of the fastest config measured there; `None` where it failed.
    pct_of_best: Option<f64>,
    failure: Option<String>,
    cublas_median_ms: f64,
}

impl Row for ShapeRow {
    fn header() -> Vec<(&'static str, Align)> {
        vec![
            ("run on", Align::Left),
            ("shape", Align::Left),
            ("config", Align::Left),
            ("winner on", Align::Left),
            ("median ms", Align::Right),
            ("% of best", Align::Right),
            ("x cuBLAS", Align::Right),
        ]
    }

    fn cells(&self) -> Vec<String> {
        vec![
            self.run_on.clone(),
            self.shape.clone(),
            self.config.clone(),
            self.winner_on.join(", "),
            self.median_ms
                .map_or_else(|| "-".to_string(), |t| format!("{t:.4}")),
            match (self.pct_of_best, &self.failure) {
                (Some(p), _) => format!("{p:.1}"),
                (None, Some(f)) => format!("failed: {f}"),
                (None, None) => "failed".to_string(),
            },
            self.median_ms.filter(|t| *t > 0.0).map_or_else(
                || "-".to_string(),
                |t| format!("{:.3}", self.cublas_median_ms / t),
            ),
        ]
    }
}

/// Per-shape rows of `op`: one per config measured, grouped by the GPU run on and the shape,
/// as a terminal table (`markdown = false`) or a Markdown table.
pub fn shape_rows(ms: &[CrossMeasurement], op: Op, markdown: bool) -> String {
    let rows: Vec<ShapeRow> = score(ms, op)
        .iter()
        .map(|s| {
            let m = s.m;
            ShapeRow {
                run_on: short_gpu_name(&m.on_gpu).to_string(),
                shape: m.shape.clone(),
                config: format!(
                    "{}{}",
                    m.config_label(),
                    if m.stale { " (stale)" } else { "" }
                ),
                winner_on: m
                    .winner_on
                    .iter()
                    .map(|g| short_gpu_name(g).to_string())
                    .collect(),
                median_ms: m.median_ms,
                pct_of_best: s.pct_of_best,
                failure: m.failure.clone(),
                cublas_median_ms: m.cublas_median_ms,
            }
        })
        .collect();
    let t = Table::from_rows(&rows);
    if markdown {
        t.markdown()
    } else {
        t.render()
    }
}

/// The Markdown report of every op in the measurements: per op the matrix, then the per-shape
/// rows.
pub fn markdown(ms: &[CrossMeasurement]) -> String {
    let mut out = String::from(
        "# Portability of tuned configs across GPUs\n\n\
         Made by `autotune cross`: on each GPU, for every shape, the winner recorded for every \
         GPU of the database ran in one process with this GPU's own winner; each is the \
         percentage of the fastest config measured there (100 % = as fast as the best). \
         Matrix cells are geometric means over the shapes.\n",
    );
    for op in Op::ALL {
        if !ms.iter().any(|m| m.op == op) {
            continue;
        }
        let _ = write!(out, "\n## {op}\n\n{}\n", matrix(ms, op).markdown());
        out.push_str(&shape_rows(ms, op, true));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(on: &str, shape: &str, bm: i64, winner_on: &[&str], ms: Option<f64>) -> CrossMeasurement {
        CrossMeasurement {
            on_gpu: on.to_string(),
            on_arch: "sm_90".to_string(),
            op: Op::Gemm,
            shape: shape.to_string(),
            family: "gemm_tile2d".to_string(),
            params: [("BM".to_string(), bm)].into_iter().collect(),
            winner_on: winner_on.iter().map(|s| s.to_string()).collect(),
            median_ms: ms,
            failure: ms.is_none().then(|| "does not fit this GPU".to_string()),
            stale: false,
            cublas_median_ms: 1.0,
            date: "2026-11-22T00:00:00Z".to_string(),
            tool_version: "0.1.0".to_string(),
        }
    }

    const A: &str = "NVIDIA A";
    const B: &str = "NVIDIA B";

    /// Run on A: shape s1 A's winner 1.0 ms, B's 2.0 ms; s2 one config chosen by both.
    /// Run on B: s1 A's winner 1.0 ms, B's winner 0.8 ms; s2 B's winner failed, A's 1 ms.
    fn sample() -> Vec<CrossMeasurement> {
        vec![
            m(A, "s1", 1, &[A], Some(1.0)),
            m(A, "s1", 2, &[B], Some(2.0)),
            m(A, "s2", 3, &[A, B], Some(0.5)),
            m(B, "s1", 1, &[A], Some(1.0)),
            m(B, "s1", 2, &[B], Some(0.8)),
            m(B, "s2", 3, &[A], Some(1.0)),
            m(B, "s2", 4, &[B], None),
        ]
    }

    #[test]
    fn matrix_is_geomean_of_percent_of_best() {
        let mx = matrix(&sample(), Op::Gemm);
        assert_eq!(mx.from, [A, B]);
        assert_eq!(mx.on, [A, B]);
        let cell = |x: usize, y: usize| mx.cells[x][y].clone().unwrap();
        // A's winners on A: 100 % and 100 %.
        assert!((cell(0, 0).geomean_pct.unwrap() - 100.0).abs() < 1e-9);
        // B's winners on A: 50 % (s1) and 100 % (s2): geomean sqrt(50 * 100).
        assert!((cell(1, 0).geomean_pct.unwrap() - (5000.0f64).sqrt()).abs() < 1e-9);
        assert_eq!(cell(1, 0).shapes, 2);
        // A's winners on B: 80 % (s1) and 100 % (s2: the only config that ran).
        assert!((cell(0, 1).geomean_pct.unwrap() - (8000.0f64).sqrt()).abs() < 1e-9);
        // B's winners on B: 100 % (s1), failed on s2.
        assert_eq!(cell(1, 1).failed, 1);
        assert_eq!(cell(1, 1).shapes, 1);
        assert_eq!(cell(1, 1).label(), "100.0 % (1 shape, 1 failed)");
        let md = mx.markdown();
        assert!(
            md.starts_with("| gemm winner of \\ run on | A | B |\n|---|---:|---:|\n"),
            "{md}"
        );
        assert!(
            md.contains("| B | 70.7 % (2 shapes) | 100.0 % (1 shape, 1 failed) |"),
            "{md}"
        );
        let t = mx.table();
        assert!(t.lines().count() == 3, "{t}");
    }

    #[test]
    fn a_second_gpu_extends_the_file_and_a_rerun_replaces_its_rows() {
        let all = sample();
        let (on_a, on_b): (Vec<_>, Vec<_>) = all.iter().cloned().partition(|m| m.on_gpu == A);
        let mut p = Portability::default();
        p.absorb(on_a.clone());
        // One column only so far.
        assert_eq!(matrix(&p.measurements, Op::Gemm).on, [A]);
        p.absorb(on_b);
        assert_eq!(matrix(&p.measurements, Op::Gemm).on, [A, B]);
        assert_eq!(p.measurements.len(), 7);
        // Re-running on A replaces A's rows of the shapes it ran.
        let mut again = on_a[..2].to_vec();
        again[0].median_ms = Some(0.9);
        p.absorb(again);
        assert_eq!(p.measurements.len(), 7);
        assert!(p.measurements.iter().any(|m| m.median_ms == Some(0.9)));
        // The file round-trips.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/portability.json");
        p.save(&path).unwrap();
        assert_eq!(Portability::load(&path).unwrap(), p);
        assert_eq!(
            Portability::load(&dir.path().join("none.json")).unwrap(),
            Portability::default()
        );
        std::fs::write(&path, "{\"version\": 9, \"measurements\": []}").unwrap();
        let err = Portability::load(&path).unwrap_err().to_string();
        assert!(
            err.contains("version 9") && err.contains("portability.json"),
            "{err}"
        );
    }

    #[test]
    fn shape_rows_and_report() {
        let rows = shape_rows(&sample(), Op::Gemm, false);
        let line = rows
            .lines()
            .find(|l| l.contains("BM=2") && l.starts_with("A "))
            .unwrap();
        assert!(line.contains("50.0"), "{line}");
        assert!(rows.contains("failed: does not fit this GPU"), "{rows}");
        let md = markdown(&sample());
        assert!(md.contains("## gemm"), "{md}");
        assert!(
            md.contains("| A | s1 | gemm_tile2d BM=2 | B | 2.0000 | 50.0 | 0.500 |"),
            "{md}"
        );
        assert!(!md.contains("## gemv"));
    }

    #[test]
    fn candidates_are_each_gpus_winner_once() {
        let text = include_str!("../../tests/data/h200-db.toml");
        let mut db = Database::from_toml_str(text, "h200").unwrap();
        let shape = Shape::parse(Op::Gemm, "2048x2048x2048").unwrap();
        let mut other = db.get("NVIDIA H200", Op::Gemm, shape).unwrap().clone();
        other.gpu = "NVIDIA H100 80GB HBM3".to_string();
        db.upsert(other.clone());
        other.gpu = "NVIDIA GeForce RTX 4060".to_string();
        other.params.insert("BK".to_string(), 8);
        other.checksum = "00".repeat(32);
        db.upsert(other);
        let catalog = Catalog::builtin().unwrap();
        let c = candidates(&db, &catalog, Op::Gemm, shape);
        assert_eq!(c.len(), 2, "{c:?}");
        let shared = c.iter().find(|c| c.winner_on.len() == 2).unwrap();
        assert_eq!(shared.winner_on, ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]);
        let rtx = c.iter().find(|c| c.winner_on.len() == 1).unwrap();
        assert!(rtx.stale, "its checksum is not this build's");
        assert!(candidates(&db, &catalog, Op::Gemv, shape).is_empty());
    }
}
