//! Where candidates run: in this process (a [`Bench`]) or in worker processes ([`Isolated`]),
//! so that a faulting or hanging kernel is a failed candidate, not a failed run. Every path that
//! runs a kernel it did not write (tuning, re-checks, cross-GPU runs) goes through it.

use crate::cuda::bench::{Bench, RunError};
use crate::cuda::isolate::Isolated;
use crate::cuda::nvrtc::Compiled;
use crate::family::space::Launch;
use crate::measure::outcome::{Failure, Measured};
use crate::measure::timing::Stats;

/// Runs candidates in this process or in worker processes.
pub enum Evaluator<'d> {
    /// In this process: a faulting kernel ends it.
    InProcess(Bench<'d>),
    /// In worker processes, restarted after a fault.
    Isolated(Isolated),
}

impl Evaluator<'_> {
    /// cuBLAS's time and error.
    pub fn baseline(&mut self) -> Result<(Stats, f64), RunError> {
        match self {
            Evaluator::InProcess(b) => b.baseline(),
            Evaluator::Isolated(w) => w.baseline(),
        }
    }

    /// Validates then times one compiled kernel; `best_ms` lets it stop sampling a loser early.
    pub fn evaluate(
        &mut self,
        compiled: &Compiled,
        launch: Launch,
        best_ms: Option<f64>,
    ) -> Result<Result<Measured, Failure>, RunError> {
        match self {
            Evaluator::InProcess(b) => match b.load(compiled, launch) {
                Ok(loaded) => b.evaluate(&loaded, best_ms),
                Err(f) => Ok(Err(f)),
            },
            Evaluator::Isolated(w) => w.evaluate(compiled, launch, best_ms),
        }
    }

    /// Worker processes replaced so far.
    pub fn restarts(&self) -> u32 {
        match self {
            Evaluator::InProcess(_) => 0,
            Evaluator::Isolated(w) => w.restarts(),
        }
    }
}
