//! One tuning run, end to end: plan (enumerate, prune, instantiate), compile in parallel,
//! validate and time each candidate against cuBLAS, and summarise. Also the GPU-free dry run.

use crate::compile::{self, Arch, CompileError, Compiled, DiskCache};
use crate::db::{Entry, GpuRecord};
use crate::device::Device;
use crate::journal::{self, CandidateRecord, Header, JournalError, Record, Recorded};
use crate::runner::{Bench, Failure, Measured, RunError, Stage};
use crate::search::{self, Strategy, Trial};
use crate::shape::{Op, Shape};
use crate::space::{Config, Launch, Limits, SpaceError};
use crate::template::{Catalog, Source};
use crate::timing::{Stats, TimingSettings};
use crate::worker::{Isolated, WorkerSettings};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Why a tuning run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// A space could not be evaluated.
    #[error(transparent)]
    Space(#[from] SpaceError),
    /// The GPU or cuBLAS failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// NVRTC is missing or cannot target the arch.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// The run journal could not be written or resumed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// No family computes the op, or the filter matched none.
    #[error("no kernel family for op {op}{filter}: known families are {known}")]
    NoFamily {
        /// The op.
        op: Op,
        /// The filter, if any.
        filter: String,
        /// What exists.
        known: String,
    },
    /// Every config was pruned.
    #[error(
        "every config of every {op} family was pruned for shape {shape} on this device: {detail}"
    )]
    NothingValid {
        /// The op.
        op: Op,
        /// The shape label.
        shape: String,
        /// Per-family rejection counts.
        detail: String,
    },
}

/// Phases a progress display can follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// NVRTC compilation.
    Compile,
    /// Validation and timing.
    Benchmark,
}

/// Receives progress; the CLI draws bars with it. All methods may be called from many threads.
pub trait Progress: Sync {
    /// A phase begins with `total` steps.
    fn start(&self, _phase: Phase, _total: u64) {}
    /// One step of `phase` finished; `message` says which.
    fn step(&self, _phase: Phase, _message: &str) {}
    /// The phase ended.
    fn finish(&self, _phase: Phase) {}
}

/// A progress sink that shows nothing.
pub struct Silent;
impl Progress for Silent {}

/// Options of a tuning run.
#[derive(Debug, Clone)]
pub struct TuneOptions {
    /// Seed of the random inputs.
    pub seed: u64,
    /// How candidates are timed.
    pub timing: TimingSettings,
    /// Only these families (all of the op's when empty).
    pub families: Vec<String>,
    /// Stop after this many evaluations.
    pub budget: Option<usize>,
    /// Run candidates in worker processes (`None`: in this process, where a faulting kernel
    /// ends the run).
    pub isolation: Option<WorkerSettings>,
    /// Append every finished candidate to this journal file.
    pub journal: Option<PathBuf>,
    /// Continue the run recorded in `journal` instead of starting afresh.
    pub resume: bool,
    /// Set from outside (Ctrl-C) to stop after the current candidate; the report is partial.
    pub stop: Option<Arc<AtomicBool>>,
    /// A wall-clock limit (`--time`): no candidate starts after it; the report is partial.
    pub deadline: Option<Instant>,
    /// The on-disk compile cache shared with the runtime (`None`: compile everything).
    pub disk_cache: Option<DiskCache>,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            seed: 0x5EED,
            timing: TimingSettings::default(),
            families: Vec::new(),
            budget: None,
            isolation: None,
            journal: None,
            resume: false,
            stop: None,
            deadline: None,
            disk_cache: None,
        }
    }
}

/// How many configs a family has and how many survived pruning.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyCount {
    /// The family.
    pub family: String,
    /// Size of its cartesian product.
    pub total: usize,
    /// Survivors of pruning.
    pub valid: usize,
    /// Rejections per constraint.
    pub rejected_by: BTreeMap<String, usize>,
}

/// A candidate ready to compile and run.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The config.
    pub config: Config,
    /// Its instantiated source.
    pub source: Source,
    /// Its launch on the shape.
    pub launch: Launch,
    /// The family's checksum.
    pub checksum: String,
}

/// Enumerates, prunes and instantiates every family of `op` (or those named) for `shape`.
pub fn plan(
    catalog: &Catalog,
    op: Op,
    shape: Shape,
    limits: &Limits,
    families: &[String],
) -> Result<(Vec<FamilyCount>, Vec<Planned>), TuneError> {
    let chosen: Vec<_> = catalog
        .for_op(op)
        .filter(|f| families.is_empty() || families.iter().any(|n| n == f.name()))
        .collect();
    if chosen.is_empty() {
        return Err(TuneError::NoFamily {
            op,
            filter: if families.is_empty() {
                String::new()
            } else {
                format!(" named {}", families.join(", "))
            },
            known: catalog
                .families()
                .iter()
                .map(|f| format!("{} ({})", f.name(), f.space.op))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let mut counts = Vec::new();
    let mut planned = Vec::new();
    for fam in chosen {
        let pruned = fam.space.prune(shape, limits)?;
        counts.push(FamilyCount {
            family: fam.name().to_string(),
            total: pruned.total,
            valid: pruned.valid.len(),
            rejected_by: pruned.rejected_by.clone(),
        });
        for config in pruned.valid {
            let launch = match fam.space.launch(&config, shape, limits) {
                Ok(l) => l,
                // Grid too large for this shape: not a candidate here.
                Err(SpaceError::Invalid { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            planned.push(Planned {
                source: fam.instantiate(&config),
                config,
                launch,
                checksum: fam.checksum.clone(),
            });
        }
    }
    if planned.is_empty() {
        return Err(TuneError::NothingValid {
            op,
            shape: shape.label(op),
            detail: counts
                .iter()
                .map(|c| format!("{}: {:?}", c.family, c.rejected_by))
                .collect::<Vec<_>>()
                .join("; "),
        });
    }
    Ok((counts, planned))
}

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
    /// cuBLAS's error against the reference.
    pub baseline_error: f64,
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
            partial: self.partial.then_some(true),
            produced_by: None,
            also_measured: Vec::new(),
        })
    }
}

/// Runs candidates in this process or in worker processes.
enum Evaluator<'d> {
    InProcess(Bench<'d>),
    Isolated(Isolated),
}

impl Evaluator<'_> {
    fn baseline(&mut self) -> Result<(Stats, f64), RunError> {
        match self {
            Evaluator::InProcess(b) => b.baseline(),
            Evaluator::Isolated(w) => w.baseline(),
        }
    }

    fn evaluate(
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

    fn restarts(&self) -> u32 {
        match self {
            Evaluator::InProcess(_) => 0,
            Evaluator::Isolated(w) => w.restarts(),
        }
    }
}

/// The key under which a candidate is found again in a journal.
fn journal_key(family: &str, params: &BTreeMap<String, i64>, checksum: &str) -> String {
    format!("{family}|{}|{checksum}", crate::space::params_label(params))
}

/// Tunes `op` on `shape` on `dev`: every valid config of every family (or what `strategy`
/// picks), validated then timed, with cuBLAS timed the same way as the baseline. With
/// `opts.isolation` candidates run in worker processes, so a faulting or hanging kernel is a
/// failed candidate, not a failed run; with `opts.journal` each finished candidate is
/// recorded at once, and `opts.resume` skips the candidates a journal already holds.
#[allow(clippy::too_many_arguments)]
pub fn tune(
    dev: &Device,
    catalog: &Catalog,
    cache: &compile::Cache,
    op: Op,
    shape: Shape,
    opts: &TuneOptions,
    strategy: &mut dyn Strategy,
    progress: &dyn Progress,
) -> Result<TuneReport, TuneError> {
    let start = Instant::now();
    let (families, planned) = plan(catalog, op, shape, &dev.info.limits, &opts.families)?;
    let nvrtc = compile::nvrtc_version()?;
    compile::check_arch(dev.info.arch)?;

    // The problem first: a shape too large for the device fails before any compile work.
    let mut evaluator = match &opts.isolation {
        None => Evaluator::InProcess(Bench::new(dev, op, shape, opts.seed, opts.timing)?),
        Some(settings) => {
            Bench::check_fits(dev, op, shape)?;
            Evaluator::Isolated(Isolated::new(
                settings.clone(),
                dev.info.ordinal,
                op,
                shape,
                opts.seed,
                opts.timing,
            ))
        }
    };

    // Candidates an interrupted run already finished are taken from its journal.
    let header = Header {
        journal: journal::JOURNAL_VERSION,
        gpu: dev.info.name.clone(),
        op,
        shape,
        seed: opts.seed,
        timing: opts.timing,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        arch: Some(dev.info.arch.to_string()),
        sms: Some(dev.info.sms),
    };
    let mut results: Vec<CandidateResult> = Vec::with_capacity(planned.len());
    let mut resumed_trials = Vec::new();
    let mut writer = None;
    if let Some(path) = &opts.journal {
        let old = if opts.resume && path.exists() {
            let r = Recorded::load(path)?;
            r.check_matches(path, &header)?;
            Some(r)
        } else {
            None
        };
        match old {
            Some(old) => {
                let index: HashMap<String, usize> = planned
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        (
                            journal_key(&p.config.family, &p.config.params, &p.checksum),
                            i,
                        )
                    })
                    .collect();
                for c in old.candidates {
                    let Some(&i) = index.get(&journal_key(&c.family, &c.params, &c.checksum))
                    else {
                        continue; // a changed family or another space: run it again
                    };
                    if resumed_trials.iter().any(|t: &Trial| t.index == i) {
                        continue;
                    }
                    resumed_trials.push(Trial {
                        index: i,
                        time_ms: c.outcome.as_ref().ok().map(|m| m.stats.median_ms),
                    });
                    results.push(CandidateResult {
                        family: c.family,
                        kernel: c.kernel,
                        params: c.params,
                        outcome: c.outcome,
                    });
                }
                writer = Some(journal::Writer::append(path)?);
            }
            None => writer = Some(journal::Writer::create(path, &header)?),
        }
    }
    let resumed = resumed_trials.len();

    // Compile what is left to run on every core in the background, in the order the search
    // is likely to want it, while the GPU benchmarks what is ready.
    let mut done = vec![false; planned.len()];
    for t in &resumed_trials {
        done[t.index] = true;
    }
    let todo: Vec<usize> = (0..planned.len()).filter(|&i| !done[i]).collect();
    let sources: Vec<Source> = planned.iter().map(|p| p.source.clone()).collect();
    let caches = compile::Caches {
        memory: cache,
        disk: opts.disk_cache.as_ref().map(|d| (d, nvrtc.as_str())),
    };
    let t_compile = Instant::now();
    let compile_end = std::sync::Mutex::new(t_compile);
    progress.start(Phase::Compile, todo.len() as u64);
    let on_done = |r: &Result<Compiled, CompileError>| {
        let msg = match r {
            Ok(c) => c.kernel_name.clone(),
            Err(e) => format!(
                "failed: {}",
                e.to_string().lines().next().unwrap_or_default()
            ),
        };
        progress.step(Phase::Compile, &msg);
    };
    let pipeline = compile::Pipeline::new(&sources, dev.info.arch, caches, todo.clone(), &on_done);

    let t_bench = Instant::now();
    let bench = |pipeline: &compile::Pipeline| -> Result<_, TuneError> {
        let (baseline, baseline_error) = evaluator.baseline()?;
        if let Some(w) = writer.as_mut() {
            w.record(&Record::Baseline {
                stats: baseline,
                error: baseline_error,
            })?;
        }
        let mut best: Option<f64> = results
            .iter()
            .filter_map(|r| r.median_ms())
            .min_by(f64::total_cmp);
        progress.start(Phase::Benchmark, todo.len() as u64);
        let stop_flag = opts.stop.clone();
        let deadline = opts.deadline;
        let stop = move || {
            stop_flag.as_ref().is_some_and(|f| f.load(Ordering::SeqCst))
                || deadline.is_some_and(|d| Instant::now() >= d)
        };
        let eval = |i: usize| -> Result<Option<f64>, TuneError> {
            let p = &planned[i];
            let outcome = match pipeline.get(i).as_ref() {
                Err(e) => Err(Failure {
                    stage: Stage::Compile,
                    reason: e.to_string(),
                }),
                Ok(c) => evaluator.evaluate(c, p.launch, best)?,
            };
            let time = outcome.as_ref().ok().map(|m| m.stats.median_ms);
            if let Some(t) = time {
                best = Some(best.map_or(t, |b: f64| b.min(t)));
            }
            progress.step(
                Phase::Benchmark,
                &match (&outcome, time) {
                    (_, Some(t)) => format!("{} {:.4} ms", p.source.kernel_name, t),
                    (Err(f), None) => format!(
                        "{} failed ({:?}: {})",
                        p.source.kernel_name,
                        f.stage,
                        f.reason.lines().next().unwrap_or_default()
                    ),
                    _ => format!("{} failed", p.source.kernel_name),
                },
            );
            let result = CandidateResult {
                family: p.config.family.clone(),
                kernel: p.source.kernel_name.clone(),
                params: p.config.params.clone(),
                outcome,
            };
            if let Some(w) = writer.as_mut() {
                w.record(&Record::Candidate(CandidateRecord {
                    family: result.family.clone(),
                    kernel: result.kernel.clone(),
                    params: result.params.clone(),
                    checksum: p.checksum.clone(),
                    outcome: result.outcome.clone(),
                }))?;
            }
            results.push(result);
            Ok(time)
        };
        // What the search sees: each candidate's family, parameters and model estimate.
        let machine = crate::model::Machine::for_device(&dev.info);
        let space = crate::model::candidates(
            catalog,
            planned.iter().map(|p| (&p.config, &p.launch)),
            op,
            shape,
            &dev.info.limits,
            &machine,
        );
        let searched = search::run(strategy, &space, opts.budget, resumed_trials, &stop, eval)?;
        progress.finish(Phase::Benchmark);
        if let Some(w) = writer.as_mut() {
            w.record(&Record::End {
                partial: searched.interrupted,
            })?;
        }
        Ok((baseline, baseline_error, searched))
    };
    let outcome = std::thread::scope(|scope| {
        let threads = rayon::current_num_threads().max(1);
        for _ in 0..threads {
            scope.spawn(|| {
                pipeline.work();
                if let Ok(mut end) = compile_end.lock() {
                    *end = (*end).max(Instant::now());
                }
            });
        }
        let r = bench(&pipeline);
        // An interrupted or failed search leaves the rest uncompiled.
        pipeline.cancel();
        r
    });
    progress.finish(Phase::Compile);
    let (baseline, baseline_error, searched) = outcome?;
    let compile_s = compile_end
        .lock()
        .map_or(0.0, |e| e.duration_since(t_compile).as_secs_f64());
    let compiled_now = pipeline.compiled_now();
    let checksums = catalog
        .for_op(op)
        .map(|f| (f.name().to_string(), f.checksum.clone()))
        .collect();
    Ok(TuneReport {
        op,
        shape,
        gpu: dev.info.record(&nvrtc),
        families,
        strategy: strategy.name().to_string(),
        baseline,
        baseline_error,
        results,
        seed: opts.seed,
        tolerance: crate::verify::tolerance(shape.k),
        compile_s,
        bench_s: t_bench.elapsed().as_secs_f64(),
        wall_s: start.elapsed().as_secs_f64(),
        checksums,
        partial: searched.interrupted,
        resumed,
        worker_restarts: evaluator.restarts(),
        journal: opts.journal.clone(),
        compiled_now,
    })
}

/// The validation of one config on one shape.
#[derive(Debug, Clone, Serialize)]
pub struct Validation {
    /// The family.
    pub family: String,
    /// The kernel.
    pub kernel: String,
    /// The shape.
    pub shape: Shape,
    /// Largest relative error, or why it failed.
    pub outcome: Result<f64, Failure>,
}

/// Validates every valid config of the op's families (or those named) on each shape, without
/// timing: the correctness sweep for edges and awkward extents. Each kernel compiles once.
pub fn validate_all(
    dev: &Device,
    catalog: &Catalog,
    op: Op,
    shapes: &[Shape],
    families: &[String],
    seed: u64,
) -> Result<Vec<Validation>, TuneError> {
    compile::check_arch(dev.info.arch)?;
    let mut plans = Vec::new();
    let mut sources: BTreeMap<String, Source> = BTreeMap::new();
    for &shape in shapes {
        let (_, planned) = plan(catalog, op, shape, &dev.info.limits, families)?;
        for p in &planned {
            sources
                .entry(p.source.kernel_name.clone())
                .or_insert_with(|| p.source.clone());
        }
        plans.push((shape, planned));
    }
    let list: Vec<Source> = sources.into_values().collect();
    let cache = compile::Cache::new();
    let compiled: BTreeMap<String, _> = list
        .iter()
        .map(|s| s.kernel_name.clone())
        .zip(compile::compile_all(&list, dev.info.arch, &cache, &|_| {}))
        .collect();
    let mut out = Vec::new();
    for (shape, planned) in plans {
        let mut bench = Bench::new(dev, op, shape, seed, TimingSettings::quick())?;
        for p in planned {
            let outcome = match compiled.get(&p.source.kernel_name).map(|r| r.as_ref()) {
                Some(Ok(c)) => match bench.load(c, p.launch) {
                    Ok(loaded) => bench.check(&loaded)?,
                    Err(f) => Err(f),
                },
                Some(Err(e)) => Err(Failure {
                    stage: Stage::Compile,
                    reason: e.to_string(),
                }),
                None => Err(Failure {
                    stage: Stage::Compile,
                    reason: "not compiled".into(),
                }),
            };
            out.push(Validation {
                family: p.config.family.clone(),
                kernel: p.source.kernel_name.clone(),
                shape,
                outcome,
            });
        }
    }
    Ok(out)
}

/// What a dry run found for one family.
#[derive(Debug, Clone, Serialize)]
pub struct DryRunFamily {
    /// Space sizes.
    pub count: FamilyCount,
    /// Configs that compiled.
    pub compiled: usize,
    /// Compile failures: kernel name and the NVRTC log.
    pub failed: Vec<(String, String)>,
}

/// The result of compiling every candidate for an arch without a GPU.
#[derive(Debug, Clone, Serialize)]
pub struct DryRunReport {
    /// The op.
    pub op: Op,
    /// The shape.
    pub shape: Shape,
    /// The target arch.
    pub arch: String,
    /// The NVRTC version used.
    pub nvrtc: String,
    /// Per family.
    pub families: Vec<DryRunFamily>,
    /// Wall time, seconds.
    pub wall_s: f64,
}

/// Enumerates, prunes (with the arch's documented limits), instantiates and compiles every
/// candidate for `arch`. Needs NVRTC, no GPU.
pub fn dry_run(
    catalog: &Catalog,
    op: Op,
    shape: Shape,
    arch: Arch,
    families: &[String],
    progress: &dyn Progress,
) -> Result<DryRunReport, TuneError> {
    let start = Instant::now();
    let limits = Limits::for_arch(arch.number() as i64).ok_or_else(|| {
        CompileError::BadArch(format!(
            "{arch} (unknown to this build's limit table; known: sm_50..sm_121)"
        ))
    })?;
    let (counts, planned) = plan(catalog, op, shape, &limits, families)?;
    let nvrtc = compile::nvrtc_version()?;
    compile::check_arch(arch)?;
    let sources: Vec<Source> = planned.iter().map(|p| p.source.clone()).collect();
    progress.start(Phase::Compile, sources.len() as u64);
    let compiled = compile::compile_all(&sources, arch, &compile::Cache::new(), &|r| {
        progress.step(
            Phase::Compile,
            match r {
                Ok(c) => &c.kernel_name,
                Err(_) => "failed",
            },
        )
    });
    progress.finish(Phase::Compile);
    let families = counts
        .into_iter()
        .map(|count| {
            let mut ok = 0;
            let mut failed = Vec::new();
            for (p, r) in planned.iter().zip(&compiled) {
                if p.config.family != count.family {
                    continue;
                }
                match r.as_ref() {
                    Ok(_) => ok += 1,
                    Err(e) => failed.push((p.source.kernel_name.clone(), e.to_string())),
                }
            }
            DryRunFamily {
                count,
                compiled: ok,
                failed,
            }
        })
        .collect();
    Ok(DryRunReport {
        op,
        shape,
        arch: arch.to_string(),
        nvrtc,
        families,
        wall_s: start.elapsed().as_secs_f64(),
    })
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

    #[test]
    fn plan_covers_every_family_of_the_op() {
        let cat = Catalog::builtin().unwrap();
        let limits = Limits::for_arch(90).unwrap();
        let shape = Shape {
            m: 1000,
            n: 1000,
            k: 1000,
        };
        let (counts, planned) = plan(&cat, Op::Gemm, shape, &limits, &[]).unwrap();
        assert!(counts.len() >= 2);
        let valid: usize = counts.iter().map(|c| c.valid).sum();
        assert_eq!(valid, planned.len());
        let (only, _) = plan(&cat, Op::Gemm, shape, &limits, &["gemm_tiled".into()]).unwrap();
        assert_eq!(only.len(), 1);
        assert!(matches!(
            plan(&cat, Op::Gemm, shape, &limits, &["nope".into()]),
            Err(TuneError::NoFamily { .. })
        ));
    }
}
