//! What a tuning run hands on: every candidate's outcome ([`TuneReport`]), the database entry
//! of its winner, and what a GPU-free dry run found ([`DryRunReport`]). Plain data.

use crate::db::{Entry, GpuRecord};
use crate::family::math::Math;
use crate::measure::outcome::{Failure, Measured};
use crate::measure::timing::Stats;
use crate::plan::FamilyCount;
use crate::problem::{Op, Shape};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// What happened to one candidate.
#[derive(Debug, Clone, Serialize)]
pub struct CandidateResult {
    /// The family.
    pub family: String,
    /// The kernel name.
    pub kernel: String,
    /// Its parameters.
    pub params: BTreeMap<String, i64>,
    /// Measured, or why not.
    pub outcome: Result<Measured, Failure>,
}

impl CandidateResult {
    /// Median time, when measured.
    pub fn median_ms(&self) -> Option<f64> {
        self.outcome.as_ref().ok().map(|m| m.stats.median_ms)
    }
}

/// Everything a tuning run produced.
#[derive(Debug, Clone, Serialize)]
pub struct TuneReport {
    /// The op.
    pub op: Op,
    /// The shape.
    pub shape: Shape,
    /// The GPU.
    pub gpu: GpuRecord,
    /// Space sizes per family.
    pub families: Vec<FamilyCount>,
    /// The search strategy.
    pub strategy: String,
    /// cuBLAS's time.
    pub baseline: Stats,
    /// cuBLAS's largest relative error against the reference, on the inputs every candidate
    /// was validated on.
    pub baseline_error: f64,
    /// cuBLAS's mean relative error on the same inputs (`None` where not measured).
    pub baseline_mean_error: Option<f64>,
    /// Every candidate tried, in the order tried.
    pub results: Vec<CandidateResult>,
    /// Seed of the inputs.
    pub seed: u64,
    /// The validation tolerance.
    pub tolerance: f64,
    /// Wall time of compilation, seconds.
    pub compile_s: f64,
    /// Wall time of validation and timing, seconds.
    pub bench_s: f64,
    /// Wall time of the whole run, seconds.
    pub wall_s: f64,
    /// Family checksums, by family name.
    pub checksums: BTreeMap<String, String>,
    /// Family revisions, by family name.
    pub revisions: BTreeMap<String, u32>,
    /// Whether each family's kernels are deterministic, by family name.
    pub deterministic: BTreeMap<String, bool>,
    /// Each family's math, by family name (a family missing is `simt`).
    pub maths: BTreeMap<String, Math>,
    /// The search was interrupted before it finished: the winner is the best so far.
    pub partial: bool,
    /// Candidates taken from the journal of an interrupted run instead of run again.
    pub resumed: usize,
    /// Worker processes replaced after a candidate killed one.
    pub worker_restarts: u32,
    /// The run journal, if one was written.
    pub journal: Option<PathBuf>,
    /// Kernels NVRTC compiled in this run (the rest came from the memory or disk cache).
    pub compiled_now: usize,
}

impl TuneReport {
    /// Measured candidates, fastest first.
    pub fn ranked(&self) -> Vec<&CandidateResult> {
        let mut v: Vec<_> = self.results.iter().filter(|r| r.outcome.is_ok()).collect();
        v.sort_by(|a, b| {
            a.median_ms()
                .unwrap_or(f64::MAX)
                .total_cmp(&b.median_ms().unwrap_or(f64::MAX))
        });
        v
    }

    /// Candidates that failed.
    pub fn failures(&self) -> impl Iterator<Item = &CandidateResult> {
        self.results.iter().filter(|r| r.outcome.is_err())
    }

    /// GFLOP/s (gemm) or GB/s (gemv) at `ms`.
    pub fn throughput(&self, ms: f64) -> f64 {
        match self.op {
            Op::Gemm => self.shape.flops() / (ms * 1e-3) / 1e9,
            Op::Gemv => self.shape.min_bytes(self.op) / (ms * 1e-3) / 1e9,
        }
    }

    /// Percent of the device's peak (FP32 for gemm, measured copy bandwidth for gemv) at `ms`;
    /// `None` when the peak is unknown.
    pub fn pct_of_peak(&self, ms: f64) -> Option<f64> {
        let peak = match self.op {
            Op::Gemm => Some(self.gpu.fp32_peak_gflops),
            Op::Gemv => self.gpu.copy_bandwidth_gbs,
        }?;
        (peak > 0.0).then(|| self.throughput(ms) / peak * 100.0)
    }

    /// The database entry of the winner, if any candidate was measured. Its `produced_by` is
    /// `None`: the caller knows the host and the shard.
    pub fn to_entry(&self, date: &str) -> Option<Entry> {
        let best = *self.ranked().first()?;
        let m = best.outcome.as_ref().ok()?;
        let ms = m.stats.median_ms;
        let s = ms * 1e-3;
        Some(Entry {
            gpu: self.gpu.name.clone(),
            op: self.op,
            shape: self.shape.label(self.op),
            m: self.shape.m,
            n: self.shape.n,
            k: self.shape.k,
            form: self.shape.form,
            family: best.family.clone(),
            kernel: best.kernel.clone(),
            params: best.params.clone(),
            median_ms: ms,
            min_ms: m.stats.min_ms,
            spread_pct: m.stats.spread_pct,
            samples: m.stats.samples,
            gflops: self.shape.flops() / s / 1e9,
            gbs: self.shape.min_bytes(self.op) / s / 1e9,
            cublas_median_ms: self.baseline.median_ms,
            vs_cublas: self.baseline.median_ms / ms,
            pct_of_peak: self.pct_of_peak(ms).unwrap_or(0.0),
            max_rel_error: m.max_rel_error,
            mean_rel_error: m.mean_rel_error,
            cublas_max_rel_error: Some(self.baseline_error),
            cublas_mean_rel_error: self.baseline_mean_error,
            tolerance: self.tolerance,
            tried: self.results.len() as u32,
            failed: self.failures().count() as u32,
            seed: self.seed,
            date: date.to_string(),
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            checksum: self
                .checksums
                .get(&best.family)
                .cloned()
                .unwrap_or_default(),
            revision: self.revisions.get(&best.family).copied(),
            deterministic: self.deterministic.get(&best.family).copied(),
            math: self.maths.get(&best.family).copied().unwrap_or_default(),
            partial: self.partial.then_some(true),
            produced_by: None,
            also_measured: Vec::new(),
        })
    }
}

/// What a dry run found for one family.
#[derive(Debug, Clone, Serialize)]
pub struct DryRunFamily {
    /// Space sizes.
    pub count: FamilyCount,
    /// Valid configs the dry run compiled (or tried to): all of them, or a covering set
    /// ([`DrySelection`]).
    pub selected: usize,
    /// Configs that compiled.
    pub compiled: usize,
    /// Compile failures: kernel name and the NVRTC log.
    pub failed: Vec<(String, String)>,
}

/// Which of a shape's valid configs a dry run compiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DrySelection {
    /// Every valid config of every family: what tuning the shape would compile.
    #[default]
    Every,
    /// Per family, a pairwise covering set of its valid configs
    /// ([`crate::family::covering::pairwise`]): every value of every parameter beside every value
    /// of each other parameter, in a small fraction of the compiles.
    Covering,
}

/// The result of compiling every candidate (or a covering set) for an arch without a GPU.
#[derive(Debug, Clone, Serialize)]
pub struct DryRunReport {
    /// The op.
    pub op: Op,
    /// The shape.
    pub shape: Shape,
    /// The target arch.
    pub arch: String,
    /// Which valid configs were compiled.
    pub selection: DrySelection,
    /// The NVRTC version used.
    pub nvrtc: String,
    /// The NVRTC library that was loaded (its path, or the name the loader was given).
    pub nvrtc_library: String,
    /// Per family.
    pub families: Vec<DryRunFamily>,
    /// Kernels NVRTC compiled for this shape (the rest came from the cache).
    pub compiled_now: usize,
    /// Wall time, seconds.
    pub wall_s: f64,
}

/// The current UTC time as RFC 3339 (`2026-11-22T10:00:00Z`), without a date crate.
pub fn utc_now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_795_000_000), "2026-11-18T11:06:40Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
