//! Where candidates run: in this process (a [`Bench`]) or in worker processes ([`Isolated`]),
//! so that a faulting or hanging kernel is a failed candidate, not a failed run. Every path that
//! runs a kernel it did not write (tuning, re-checks, cross-GPU runs) goes through it.

use crate::cuda::bench::{Bench, RunError};
use crate::cuda::device::Device;
use crate::cuda::isolate::{Isolated, WorkerSettings};
use crate::cuda::nvrtc::{self, Compiled, Target};
use crate::family::catalog::Catalog;
use crate::family::space::{Config, Launch, Limits};
use crate::measure::outcome::{Failure, Measured};
use crate::measure::timing::{Stats, TimingSettings};
use crate::measure::verify::ErrorStats;
use crate::problem::{Op, Shape};

/// Runs candidates in this process or in worker processes.
pub enum Evaluator<'d> {
    /// In this process: a faulting kernel ends it.
    InProcess(Box<Bench<'d>>),
    /// In worker processes, restarted after a fault.
    Isolated(Isolated),
}

impl<'d> Evaluator<'d> {
    /// Prepares `op` on `shape` on `dev`: in this process, or with `isolation` in a worker
    /// process. The problem is checked against the device's memory first, so a shape too
    /// large fails before any compile work.
    pub fn open(
        dev: &'d Device,
        op: Op,
        shape: Shape,
        seed: u64,
        timing: TimingSettings,
        isolation: Option<&WorkerSettings>,
    ) -> Result<Evaluator<'d>, RunError> {
        Ok(match isolation {
            None => Evaluator::InProcess(Box::new(Bench::new(dev, op, shape, seed, timing)?)),
            Some(settings) => {
                Bench::check_fits(dev, op, shape)?;
                Evaluator::Isolated(Isolated::new(
                    settings.clone(),
                    dev.info.ordinal,
                    op,
                    shape,
                    seed,
                    timing,
                ))
            }
        })
    }

    /// cuBLAS's time and errors (on the inputs every candidate is validated on).
    pub fn baseline(&mut self) -> Result<(Stats, ErrorStats), RunError> {
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

    /// Validates one compiled kernel without timing it: its largest relative error, or why
    /// it failed.
    pub fn check(
        &mut self,
        compiled: &Compiled,
        launch: Launch,
    ) -> Result<Result<f64, Failure>, RunError> {
        match self {
            Evaluator::InProcess(b) => match b.load(compiled, launch) {
                Ok(loaded) => b.check(&loaded),
                Err(f) => Ok(Err(f)),
            },
            Evaluator::Isolated(w) => w.check(compiled, launch),
        }
    }

    /// Compiles each of `configs` for `shape` (the shape this evaluator was opened for) on
    /// `dev`, through `cache`, then validates and times it: its median time, or why it did
    /// not run (unknown family, no launch for the shape, compile error, failed validation, or
    /// less accurate than cuBLAS, whose largest relative error on these inputs is
    /// `cublas_error`, where its math must not be: [`Catalog::admit`]).
    pub fn time_configs(
        &mut self,
        dev: &Device,
        catalog: &Catalog,
        cache: &nvrtc::Cache,
        shape: Shape,
        configs: &[Config],
        cublas_error: f64,
    ) -> Result<Vec<Result<f64, String>>, RunError> {
        let kernels = compile_configs(
            catalog,
            cache,
            dev.info.arch.into(),
            &dev.info.limits,
            shape,
            configs,
        );
        let mut times = Vec::with_capacity(configs.len());
        for (k, config) in kernels.into_iter().zip(configs) {
            times.push(match k {
                Err(e) => Err(e),
                Ok((c, launch)) => match self
                    .evaluate(&c, launch, None)?
                    .and_then(|m| catalog.admit(&config.family, shape, cublas_error, m))
                {
                    Ok(m) => Ok(m.stats.median_ms),
                    Err(f) => Err(format!("{:?}: {}", f.stage, f.reason)),
                },
            });
        }
        Ok(times)
    }

    /// Worker processes replaced so far.
    pub fn restarts(&self) -> u32 {
        match self {
            Evaluator::InProcess(_) => 0,
            Evaluator::Isolated(w) => w.restarts(),
        }
    }
}

/// Each of `configs` as the runtime builds it for `shape` (the one function from config, shape
/// and limits to source and launch, [`crate::family::catalog::Family::kernel`]), compiled for
/// `target` through `cache` (in parallel; a source compiles once whatever the shape): the
/// image and the launch, or why not (unknown family, no launch for the shape, compile error).
pub fn compile_configs(
    catalog: &Catalog,
    cache: &nvrtc::Cache,
    target: Target,
    limits: &Limits,
    shape: Shape,
    configs: &[Config],
) -> Vec<Result<(Compiled, Launch), String>> {
    let kernels: Vec<Result<_, String>> = configs
        .iter()
        .map(|c| {
            let family = catalog.get(&c.family).map_err(|e| e.to_string())?;
            family
                .kernel(c, shape, limits)
                .map_err(|e| format!("{}: {e}", family.kernel_name(c)))
        })
        .collect();
    let sources: Vec<_> = kernels
        .iter()
        .filter_map(|k| k.as_ref().ok().map(|k| k.source.clone()))
        .collect();
    let mut compiled = nvrtc::compile_all(&sources, target, nvrtc::Caches::memory(cache), &|_| {})
        .results
        .into_iter();
    kernels
        .into_iter()
        .map(|k| {
            let k = k?;
            match compiled.next().as_deref() {
                Some(Ok(c)) => Ok((c.clone(), k.launch)),
                Some(Err(e)) => Err(e.to_string()),
                None => Err(format!("{}: not compiled", k.source.kernel_name)),
            }
        })
        .collect()
}
