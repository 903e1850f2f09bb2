//! Online tuning: a shape the database has no entry for is tuned on its first call, among the
//! configs the coverage predicts fastest, on scratch buffers (the product's own buffers are
//! never touched), validated against the float64 reference like any tuning run, within a time
//! budget the product sets. The runtime ([`crate::Tuned::online_tuning`]) keeps the winner on
//! disk, so the next process starts tuned.

use crate::cuda::bench::{Bench, RunError};
use crate::cuda::device::Device;
use crate::cuda::nvrtc::{CompileError, Compiled};
use crate::family::catalog::{Catalog, Source};
use crate::family::space::Config;
use crate::measure::outcome::Failure;
use crate::measure::timing::TimingSettings;
use crate::plan::outcome::{CandidateResult, TuneReport};
use crate::problem::{Op, Shape};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How a product asks for online tuning.
#[derive(Debug, Clone, PartialEq)]
pub struct OnlineTuning {
    /// The database file the results are kept in (read at start, updated under its lock).
    pub db: PathBuf,
    /// The most time the first call of a shape may spend tuning (at least one candidate is
    /// always measured).
    pub budget: Duration,
    /// How many of the best predicted configs are tried.
    pub candidates: usize,
}

impl OnlineTuning {
    /// Online tuning kept in `db`, with a budget of 2 s and 32 candidates per shape.
    pub fn new(db: impl Into<PathBuf>) -> OnlineTuning {
        OnlineTuning {
            db: db.into(),
            budget: Duration::from_secs(2),
            candidates: 32,
        }
    }

    /// Timing of the online measurements: a handful of samples per candidate.
    pub fn timing() -> TimingSettings {
        TimingSettings {
            warmup: 1,
            min_samples: 5,
            // Contenders (racing gives the others 5) get up to 200 samples, so that configs
            // within a few percent of each other on 10-20 us kernels are told apart.
            max_samples: 200,
            budget_ms: 25.0,
            flush_l2: true,
        }
    }
}

/// Measures `candidates` (best predicted first) for `op` on `shape` on `dev` until the budget
/// runs out, beside cuBLAS, and returns the run as a tuning report (its
/// [`TuneReport::to_entry`] is the database entry). `compile` turns a source into a cubin (the
/// runtime's caches, then NVRTC).
#[allow(clippy::too_many_arguments)]
pub fn tune_shape(
    dev: &Device,
    catalog: &Catalog,
    gpu: crate::db::GpuRecord,
    candidates: &[Config],
    op: Op,
    shape: Shape,
    opts: &OnlineTuning,
    compile: &(dyn Fn(&Source) -> Result<Compiled, CompileError> + Sync),
) -> Result<TuneReport, RunError> {
    let start = Instant::now();
    let seed = 0x0041_144E;
    let mut bench = Bench::new(dev, op, shape, seed, OnlineTuning::timing())?;
    let (baseline, baseline_error) = bench.baseline()?;
    let mut results = Vec::new();
    let mut checksums = BTreeMap::new();
    let mut revisions = BTreeMap::new();
    let mut deterministic = BTreeMap::new();
    let mut maths = BTreeMap::new();
    let mut best: Option<f64> = None;
    // Compile every candidate at once (NVRTC runs on all cores), then measure in order of
    // prediction until the budget is spent.
    let planned: Vec<_> = candidates
        .iter()
        .take(opts.candidates.max(1))
        .filter_map(|config| {
            let family = catalog.get(&config.family).ok()?;
            checksums.insert(family.name().to_string(), family.checksum.clone());
            revisions.insert(family.name().to_string(), family.space.revision);
            deterministic.insert(family.name().to_string(), family.space.deterministic);
            maths.insert(family.name().to_string(), family.space.math);
            let kernel = family
                .kernel(config, shape, &dev.info.limits)
                .map_err(|e| e.to_string());
            Some((config, family.kernel_name_for(config, shape), kernel))
        })
        .collect();
    let t = Instant::now();
    let compiled: Vec<Result<Compiled, String>> = planned
        .par_iter()
        .map(|(_, _, k)| match k {
            Ok(k) => compile(&k.source).map_err(|e| e.to_string()),
            Err(e) => Err(e.clone()),
        })
        .collect();
    let compile_s = t.elapsed().as_secs_f64();
    for ((config, kernel_name, kernel), compiled) in planned.iter().zip(compiled) {
        if best.is_some() && start.elapsed() >= opts.budget {
            break;
        }
        let outcome = match (kernel, compiled) {
            (Ok(k), Ok(c)) => match bench.load(&c, k.launch) {
                Err(f) => Err(f),
                Ok(loaded) => bench
                    .evaluate(&loaded, best)?
                    .and_then(|m| catalog.admit(&config.family, shape, baseline_error.max, m)),
            },
            (Err(reason), _) => Err(Failure {
                stage: crate::measure::outcome::Stage::Compile,
                reason: reason.clone(),
            }),
            (_, Err(reason)) => Err(Failure {
                stage: crate::measure::outcome::Stage::Compile,
                reason,
            }),
        };
        if let Ok(m) = &outcome {
            best = Some(best.map_or(m.stats.median_ms, |b: f64| b.min(m.stats.median_ms)));
        }
        results.push(CandidateResult {
            family: config.family.clone(),
            kernel: kernel_name.clone(),
            params: config.params.clone(),
            outcome,
        });
    }
    let wall_s = start.elapsed().as_secs_f64();
    Ok(TuneReport {
        op,
        shape,
        gpu,
        families: Vec::new(),
        strategy: "online".to_string(),
        baseline,
        baseline_error: baseline_error.max,
        baseline_mean_error: Some(baseline_error.mean),
        results,
        seed,
        tolerance: bench.tolerance(),
        compile_s,
        bench_s: wall_s - compile_s,
        wall_s,
        checksums,
        revisions,
        deterministic,
        maths,
        partial: false,
        resumed: 0,
        worker_restarts: 0,
        journal: None,
        compiled_now: 0,
    })
}
