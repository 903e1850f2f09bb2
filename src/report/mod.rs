//! Tables, exports, charts and GPU comparisons. Pure: formats what other modules measured, and
//! never opens a GPU.
//!
//! - this file: text tables of a tuning run, a dry run and a suite;
//! - [`table`]: the one table renderer ([`Table`]: aligned text, Markdown, CSV) they all use;
//! - [`gpus`]: one op's shapes side by side on several GPUs, with geometric-mean summaries;
//! - `chart`: SVG bar charts of a comparison, and the Markdown report that shows them (with
//!   the `cli` feature, which brings plotters);
//! - [`formats`]: every database entry as CSV, JSON or the T4 autotuning results format.

#[cfg(feature = "cli")]
pub mod chart;
pub mod formats;
pub mod gpus;
pub mod table;

pub use table::{Align, Row, Table};

use crate::family::space::params_label;
use crate::plan::outcome::{DryRunReport, DrySelection, TuneReport};
use crate::problem::Op;
use std::fmt::Write;

/// The geometric mean of `values`; `None` when there are none or one is not positive (a
/// ratio of zero or a negative time means a broken measurement, not a slow one).
pub fn geomean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for v in values {
        if !(v > 0.0 && v.is_finite()) {
            return None;
        }
        sum += v.ln();
        n += 1;
    }
    (n > 0).then(|| (sum / n as f64).exp())
}

/// The unit results of `op` are compared in: GFLOP/s for gemm, GB/s for gemv.
pub fn unit(op: Op) -> &'static str {
    match op {
        Op::Gemm => "GFLOP/s",
        Op::Gemv => "GB/s",
    }
}

/// The header of the "% of peak" column of `op`: FP32 peak for gemm, copy bandwidth for gemv.
pub fn peak_header(op: Op) -> &'static str {
    match op {
        Op::Gemm => "% FP32 peak",
        Op::Gemv => "% copy BW",
    }
}

/// A row of [`tune_table`]: a config, or cuBLAS (no rank).
struct TuneRow {
    /// 1 for the fastest; `None` for cuBLAS.
    rank: Option<usize>,
    family: String,
    params: String,
    median_ms: f64,
    min_ms: f64,
    spread_pct: f64,
    /// In the op's [`unit`].
    throughput: f64,
    vs_cublas: f64,
    /// Of the FP32 peak (gemm) or the copy bandwidth (gemv), where known.
    pct_of_peak: Option<f64>,
}

impl TuneRow {
    /// The header of [`TuneRow::throughput`] and [`TuneRow::pct_of_peak`], renamed for the op.
    const THROUGHPUT: &'static str = "throughput";
    const PEAK: &'static str = "% of peak";
}

impl Row for TuneRow {
    fn header() -> Vec<(&'static str, Align)> {
        vec![
            ("#", Align::Right),
            ("family", Align::Left),
            ("params", Align::Left),
            ("median ms", Align::Right),
            ("min ms", Align::Right),
            ("spread %", Align::Right),
            (TuneRow::THROUGHPUT, Align::Right),
            ("x cuBLAS", Align::Right),
            (TuneRow::PEAK, Align::Right),
        ]
    }

    fn cells(&self) -> Vec<String> {
        vec![
            self.rank.map_or("-".to_string(), |i| i.to_string()),
            self.family.clone(),
            self.params.clone(),
            format!("{:.4}", self.median_ms),
            format!("{:.4}", self.min_ms),
            format!("{:.1}", self.spread_pct),
            format!("{:.1}", self.throughput),
            format!("{:.3}", self.vs_cublas),
            self.pct_of_peak
                .map_or("-".to_string(), |p| format!("{p:.1}")),
        ]
    }
}

/// The top `top` configs of a run, with cuBLAS, as a table, then the failure summary.
pub fn tune_table(r: &TuneReport, top: usize) -> String {
    let mut rows: Vec<TuneRow> = Vec::new();
    for (i, c) in r.ranked().into_iter().take(top).enumerate() {
        if let Ok(m) = &c.outcome {
            let ms = m.stats.median_ms;
            rows.push(TuneRow {
                rank: Some(i + 1),
                family: c.family.clone(),
                params: params_label(&c.params),
                median_ms: ms,
                min_ms: m.stats.min_ms,
                spread_pct: m.stats.spread_pct,
                throughput: r.throughput(ms),
                vs_cublas: r.baseline.median_ms / ms,
                pct_of_peak: r.pct_of_peak(ms),
            });
        }
    }
    let b = &r.baseline;
    rows.push(TuneRow {
        rank: None,
        family: "cuBLAS".into(),
        params: "(baseline)".into(),
        median_ms: b.median_ms,
        min_ms: b.min_ms,
        spread_pct: b.spread_pct,
        throughput: r.throughput(b.median_ms),
        vs_cublas: 1.0,
        pct_of_peak: r.pct_of_peak(b.median_ms),
    });
    let mut t = Table::from_rows(&rows);
    t.rename(TuneRow::THROUGHPUT, unit(r.op))
        .rename(TuneRow::PEAK, peak_header(r.op));
    let mut out = format!(
        "{} {} on {} ({}, {} SMs, {} MHz), {} candidates, seed {}, tolerance {:.2e}\n",
        r.op,
        r.shape.label(r.op),
        r.gpu.name,
        r.gpu.arch,
        r.gpu.sms,
        r.gpu.clock_mhz,
        r.results.len(),
        r.seed,
        r.tolerance
    );
    out.push_str(&t.render());
    let failures: Vec<_> = r.failures().collect();
    if !failures.is_empty() {
        let _ = writeln!(out, "{} candidate(s) failed:", failures.len());
        for f in failures.iter().take(10) {
            if let Err(e) = &f.outcome {
                let first = e.reason.lines().next().unwrap_or_default();
                let _ = writeln!(out, "  {} [{:?}] {}", f.kernel, e.stage, first);
            }
        }
        if failures.len() > 10 {
            let _ = writeln!(out, "  ... and {} more (see --json)", failures.len() - 10);
        }
    }
    let _ = writeln!(
        out,
        "wall time {:.1} s (compile {:.1} s, validate + time {:.1} s)",
        r.wall_s, r.compile_s, r.bench_s
    );
    out
}

/// A row of [`dry_run_table`]: one family's counts.
struct DryRunRow {
    family: String,
    configs: usize,
    valid: usize,
    selected: usize,
    compiled: usize,
    failed: usize,
}

impl Row for DryRunRow {
    fn header() -> Vec<(&'static str, Align)> {
        vec![
            ("family", Align::Left),
            ("configs", Align::Right),
            ("valid", Align::Right),
            ("selected", Align::Right),
            ("compiled", Align::Right),
            ("failed", Align::Right),
        ]
    }

    fn cells(&self) -> Vec<String> {
        vec![
            self.family.clone(),
            self.configs.to_string(),
            self.valid.to_string(),
            self.selected.to_string(),
            self.compiled.to_string(),
            self.failed.to_string(),
        ]
    }
}

/// Per-family counts of a dry run.
pub fn dry_run_table(r: &DryRunReport) -> String {
    let rows: Vec<DryRunRow> = r
        .families
        .iter()
        .map(|f| DryRunRow {
            family: f.count.family.clone(),
            configs: f.count.total,
            valid: f.count.valid,
            selected: f.selected,
            compiled: f.compiled,
            failed: f.failed.len(),
        })
        .collect();
    let t = Table::from_rows(&rows);
    let mut out = format!(
        "dry run{}: {} {} for {} with NVRTC {} ({})\n",
        match r.selection {
            DrySelection::Every => "",
            DrySelection::Covering => " (a covering set of each family's valid configs)",
        },
        r.op,
        r.shape.label(r.op),
        r.arch,
        r.nvrtc,
        r.nvrtc_library
    );
    out.push_str(&t.render());
    for f in &r.families {
        for (k, why) in &f.failed {
            let _ = writeln!(out, "compile failure {k}:\n{why}");
        }
    }
    let _ = writeln!(out, "wall time {:.1} s", r.wall_s);
    out
}

/// A row of [`suite_markdown`]: one shape's winner.
struct SuiteRow {
    shape: String,
    family: String,
    params: String,
    median_ms: f64,
    /// TFLOP/s (gemm) or GB/s (gemv).
    throughput: f64,
    cublas_ms: f64,
    vs_cublas: f64,
    pct_of_peak: f64,
    tried: u32,
    failed: u32,
}

impl SuiteRow {
    /// The headers of [`SuiteRow::throughput`] and [`SuiteRow::pct_of_peak`], renamed for the
    /// op.
    const THROUGHPUT: &'static str = "throughput";
    const PEAK: &'static str = "% of peak";
}

impl Row for SuiteRow {
    fn header() -> Vec<(&'static str, Align)> {
        vec![
            ("shape", Align::Left),
            ("family", Align::Left),
            ("params", Align::Left),
            ("ms", Align::Right),
            (SuiteRow::THROUGHPUT, Align::Right),
            ("cuBLAS ms", Align::Right),
            ("x cuBLAS", Align::Right),
            (SuiteRow::PEAK, Align::Right),
            ("tried/failed", Align::Right),
        ]
    }

    fn cells(&self) -> Vec<String> {
        vec![
            self.shape.clone(),
            self.family.clone(),
            self.params.clone(),
            format!("{:.4}", self.median_ms),
            format!("{:.1}", self.throughput),
            format!("{:.4}", self.cublas_ms),
            format!("{:.3}", self.vs_cublas),
            format!("{:.1}", self.pct_of_peak),
            format!("{}/{}", self.tried, self.failed),
        ]
    }
}

/// The winners of a suite as a Markdown table (readable in a terminal too), with the geometric
/// mean of the ratios to cuBLAS.
pub fn suite_markdown(op: Op, gpu: &crate::db::GpuRecord, entries: &[&crate::db::Entry]) -> String {
    let unit = match op {
        Op::Gemm => "TFLOP/s",
        Op::Gemv => "GB/s",
    };
    let mut out = format!(
        "{op} suite on {} ({}, {} SMs; FP32 peak {:.1} TFLOP/s{})\n\n",
        gpu.name,
        gpu.arch,
        gpu.sms,
        gpu.fp32_peak_gflops / 1e3,
        gpu.copy_bandwidth_gbs
            .map(|b| format!(", copy bandwidth {b:.0} GB/s"))
            .unwrap_or_default()
    );
    let rows: Vec<SuiteRow> = entries
        .iter()
        .map(|e| SuiteRow {
            shape: e.shape.clone(),
            family: e.family.clone(),
            params: params_label(&e.params),
            median_ms: e.median_ms,
            throughput: match op {
                Op::Gemm => e.gflops / 1e3,
                Op::Gemv => e.gbs,
            },
            cublas_ms: e.cublas_median_ms,
            vs_cublas: e.vs_cublas,
            pct_of_peak: e.pct_of_peak,
            tried: e.tried,
            failed: e.failed,
        })
        .collect();
    let mut t = Table::from_rows(&rows);
    t.rename(SuiteRow::THROUGHPUT, unit)
        .rename(SuiteRow::PEAK, peak_header(op));
    out.push_str(&t.markdown());
    if !entries.is_empty() {
        let mean = geomean(entries.iter().map(|e| e.vs_cublas));
        let _ = writeln!(
            out,
            "\ngeometric mean x cuBLAS over {} shapes: {}",
            entries.len(),
            mean.map_or_else(|| "-".to_string(), |g| format!("{g:.3}"))
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geomean_of_ratios() {
        assert_eq!(geomean([]), None);
        assert!((geomean([2.0, 8.0]).unwrap() - 4.0).abs() < 1e-12);
        assert!((geomean([0.5, 2.0]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(geomean([1.0, 0.0]), None);
        assert_eq!(geomean([1.0, f64::NAN]), None);
    }
}
