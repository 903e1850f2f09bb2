//! The outcome of one candidate: measured (time statistics, error, registers) or failed (at
//! which stage, and why). Plain data, shared by the bench, the isolating worker, journals and
//! reports.

use crate::measure::timing::Stats;

/// Where a candidate failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// NVRTC.
    Compile,
    /// Module load or function lookup.
    Load,
    /// The launch was refused or the kernel errored.
    Launch,
    /// Its output was wrong.
    Validate,
    /// Timing failed.
    Time,
    /// It ran past its time limit and its worker process was killed.
    Timeout,
    /// Its worker process died (a fault that broke the CUDA context, a crash).
    Crash,
}

/// A candidate that could not be measured, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Failure {
    /// Where it failed.
    pub stage: Stage,
    /// The reason, with the compiler log or driver error.
    pub reason: String,
}

/// A measured candidate.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Measured {
    /// Time statistics.
    pub stats: Stats,
    /// Largest relative error seen in validation.
    pub max_rel_error: f64,
    /// Mean relative error over the output in validation (the larger of two validations on
    /// one workspace); `None` in journals written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_rel_error: Option<f64>,
    /// Registers per thread.
    pub registers: i32,
    /// Local memory per thread (spills), bytes.
    pub local_bytes: i32,
}
