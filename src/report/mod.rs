//! Tables, exports, charts and GPU comparisons. Pure: formats what other modules measured, and
//! never opens a GPU.
//!
//! - this file: text tables of a tuning run, a dry run and a suite;
//! - [`table`]: the one table renderer ([`Table`]: aligned text, Markdown, CSV) they all use;
//! - [`gpus`]: one op's shapes side by side on several GPUs, with geometric-mean summaries;
//! - [`chart`]: SVG bar charts of a comparison, and the Markdown report that shows them;
//! - [`formats`]: every database entry as CSV, JSON or the T4 autotuning results format.

pub mod chart;
pub mod formats;
pub mod gpus;
pub mod table;

pub use table::{Align, Table};

use crate::family::space::params_label;
use crate::plan::outcome::{DryRunReport, TuneReport};
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

/// The top `top` configs of a run, with cuBLAS, as a table, then the failure summary.
pub fn tune_table(r: &TuneReport, top: usize) -> String {
    let mut t = Table::new(
        &[
            "#",
            "family",
            "params",
            "median ms",
            "min ms",
            "spread %",
            unit(r.op),
            "x cuBLAS",
            peak_header(r.op),
        ],
        &[false, true, true],
    );
    let pct = |ms: f64| {
        r.pct_of_peak(ms)
            .map_or("-".to_string(), |p| format!("{p:.1}"))
    };
    for (i, c) in r.ranked().into_iter().take(top).enumerate() {
        if let Ok(m) = &c.outcome {
            let ms = m.stats.median_ms;
            t.row(vec![
                (i + 1).to_string(),
                c.family.clone(),
                params_label(&c.params),
                format!("{ms:.4}"),
                format!("{:.4}", m.stats.min_ms),
                format!("{:.1}", m.stats.spread_pct),
                format!("{:.1}", r.throughput(ms)),
                format!("{:.3}", r.baseline.median_ms / ms),
                pct(ms),
            ]);
        }
    }
    let b = &r.baseline;
    t.row(vec![
        "-".into(),
        "cuBLAS".into(),
        "(baseline)".into(),
        format!("{:.4}", b.median_ms),
        format!("{:.4}", b.min_ms),
        format!("{:.1}", b.spread_pct),
        format!("{:.1}", r.throughput(b.median_ms)),
        "1.000".into(),
        pct(b.median_ms),
    ]);
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

/// Per-family counts of a dry run.
pub fn dry_run_table(r: &DryRunReport) -> String {
    let mut t = Table::new(
        &["family", "configs", "valid", "compiled", "failed"],
        &[true],
    );
    for f in &r.families {
        t.row(vec![
            f.count.family.clone(),
            f.count.total.to_string(),
            f.count.valid.to_string(),
            f.compiled.to_string(),
            f.failed.len().to_string(),
        ]);
    }
    let mut out = format!(
        "dry run: {} {} for {} with NVRTC {} ({})\n",
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
    let mut t = Table::new(
        &[
            "shape",
            "family",
            "params",
            "ms",
            unit,
            "cuBLAS ms",
            "x cuBLAS",
            peak_header(op),
            "tried/failed",
        ],
        &[true, true, true],
    );
    for e in entries {
        let thr = match op {
            Op::Gemm => e.gflops / 1e3,
            Op::Gemv => e.gbs,
        };
        t.row(vec![
            e.shape.clone(),
            e.family.clone(),
            params_label(&e.params),
            format!("{:.4}", e.median_ms),
            format!("{thr:.1}"),
            format!("{:.4}", e.cublas_median_ms),
            format!("{:.3}", e.vs_cublas),
            format!("{:.1}", e.pct_of_peak),
            format!("{}/{}", e.tried, e.failed),
        ]);
    }
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
