//! One tuning run, end to end: plan (enumerate, prune, instantiate), compile in parallel,
//! validate and time each candidate against cuBLAS, and summarise. Also the GPU-free dry run.

use crate::cuda::bench::RunError;
use crate::cuda::device::Device;
use crate::cuda::isolate::WorkerSettings;
use crate::cuda::nvrtc::{self, CompileError, Compiled, DiskCache};
use crate::family::catalog::{Catalog, Source};
use crate::family::covering;
use crate::family::expr::Expr;
use crate::family::space::Limits;
use crate::gpu::Arch;
use crate::measure::outcome::{Failure, Measured, Stage};
use crate::measure::timing::TimingSettings;
use crate::plan::outcome::{CandidateResult, DryRunFamily, DryRunReport, DrySelection, TuneReport};
use crate::plan::{plan, plan_where, PlanError, Planned};
use crate::problem::{Op, Shape};
use crate::search::{self, Strategy, Trial};
use crate::tuning::evaluator::Evaluator;
use crate::tuning::journal::{self, CandidateRecord, Header, JournalError, Record, Recorded};
use crate::tuning::queue::Part;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Why a tuning run could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TuneError {
    /// The GPU or cuBLAS failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// NVRTC is missing or cannot target the arch.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// The run journal could not be written or resumed.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// The arch is not in this build's table of limits ([`crate::gpu::ARCHS`]).
    #[error("{arch} is unknown to this build's limit table (known: sm_50..sm_121)")]
    UnknownArch {
        /// The arch asked for.
        arch: Arch,
    },
    /// No family to plan, or every config was pruned.
    #[error(transparent)]
    Plan(#[from] PlanError),
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
    /// Only the configs that meet each of these (`--where`; [`crate::plan::plan_where`]).
    pub conditions: Vec<Expr>,
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
    /// Only this part of the shape's candidates (a shape split across identical GPUs,
    /// [`crate::tuning::queue`]); the report's family counts stay the whole space's.
    pub part: Part,
}

impl Default for TuneOptions {
    fn default() -> Self {
        TuneOptions {
            seed: 0x5EED,
            timing: TimingSettings::default(),
            families: Vec::new(),
            conditions: Vec::new(),
            budget: None,
            isolation: None,
            journal: None,
            resume: false,
            stop: None,
            deadline: None,
            disk_cache: None,
            part: Part::WHOLE,
        }
    }
}

/// `planned` in the order the model ranks it, each with what the search sees of it (family,
/// parameters, model estimate): each family's best-estimated candidate first, then the rest by
/// estimate (those without one last, in plan order). A search that walks the list
/// (`exhaustive`) and the compile queue then meet the likely winners first, so a run its time
/// limit cuts short has measured them (a tensor-core family listed after the SIMT ones
/// included); a search left to finish visits the same candidates either way.
fn model_first(
    catalog: &Catalog,
    planned: Vec<Planned>,
    op: Op,
    shape: Shape,
    limits: &Limits,
    machine: &crate::plan::model::Machine,
) -> (Vec<Planned>, Vec<search::Candidate>) {
    let space = crate::plan::model::candidates(
        catalog,
        planned.iter().map(|p| (&p.config, &p.launch)),
        op,
        shape,
        limits,
        machine,
    );
    let order = search::family_leaders_first(&space, search::model_order(&space));
    let mut slots: Vec<Option<(Planned, search::Candidate)>> =
        planned.into_iter().zip(space).map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).unzip()
}

/// The key under which a candidate is found again in a journal.
fn journal_key(family: &str, params: &BTreeMap<String, i64>, checksum: &str) -> String {
    format!(
        "{family}|{}|{checksum}",
        crate::family::space::params_label(params)
    )
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
    cache: &nvrtc::Cache,
    op: Op,
    shape: Shape,
    opts: &TuneOptions,
    strategy: &mut dyn Strategy,
    progress: &dyn Progress,
) -> Result<TuneReport, TuneError> {
    let start = Instant::now();
    let (families, planned) = plan_where(
        catalog,
        op,
        shape,
        &dev.info.limits,
        &opts.families,
        &opts.conditions,
    )?;
    let machine = crate::plan::model::Machine::for_device(&dev.info);
    // What the search sees of each candidate: family, parameters and model estimate.
    let (planned, space) = model_first(catalog, planned, op, shape, &dev.info.limits, &machine);
    let (planned, space): (Vec<Planned>, Vec<search::Candidate>) = if opts.part.count > 1 {
        strategy.part_of(planned.len());
        planned
            .into_iter()
            .zip(space)
            .enumerate()
            .filter(|(i, _)| opts.part.holds(*i))
            .map(|(_, p)| p)
            .unzip()
    } else {
        (planned, space)
    };
    let nvrtc = nvrtc::nvrtc_version()?;
    nvrtc::check_arch(dev.info.arch)?;

    // The problem first: a shape too large for the device fails before any compile work.
    let mut evaluator = Evaluator::open(
        dev,
        op,
        shape,
        opts.seed,
        opts.timing,
        opts.isolation.as_ref(),
    )?;

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
    let Resumed {
        mut results,
        trials: resumed_trials,
        mut writer,
    } = open_journal(opts, &header, &planned)?;
    let resumed = resumed_trials.len();

    // Compile what is left to run on every core in the background, in the order the search
    // is likely to want it, while the GPU benchmarks what is ready.
    let mut done = vec![false; planned.len()];
    for t in &resumed_trials {
        done[t.index] = true;
    }
    let todo: Vec<usize> = (0..planned.len()).filter(|&i| !done[i]).collect();
    let sources: Vec<Source> = planned.iter().map(|p| p.source.clone()).collect();
    let caches = nvrtc::Caches {
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
    let pipeline = nvrtc::Pipeline::new(&sources, dev.info.arch, caches, todo.clone(), &on_done);

    let t_bench = Instant::now();
    let bench = |pipeline: &nvrtc::Pipeline| -> Result<_, TuneError> {
        let (baseline, baseline_error) = evaluator.baseline()?;
        if let Some(w) = writer.as_mut() {
            w.record(&Record::Baseline {
                stats: baseline,
                error: baseline_error.max,
            })?;
        }
        // Candidates resumed from a journal meet the accuracy rule too (the same inputs: the
        // journal's seed is this run's).
        for r in results.iter_mut() {
            r.outcome = r
                .outcome
                .clone()
                .and_then(|m| catalog.admit(&r.family, shape, baseline_error.max, m));
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
                Ok(c) => evaluator
                    .evaluate(c, p.launch, best)?
                    .and_then(|m| catalog.admit(&p.config.family, shape, baseline_error.max, m)),
            };
            let time = outcome.as_ref().ok().map(|m| m.stats.median_ms);
            if let Some(t) = time {
                best = Some(best.map_or(t, |b: f64| b.min(t)));
            }
            progress.step(
                Phase::Benchmark,
                &step_message(&p.source.kernel_name, &outcome),
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
    let revisions = catalog
        .for_op(op)
        .map(|f| (f.name().to_string(), f.space.revision))
        .collect();
    let deterministic = catalog
        .for_op(op)
        .map(|f| (f.name().to_string(), f.space.deterministic))
        .collect();
    let maths = catalog
        .for_op(op)
        .map(|f| (f.name().to_string(), f.space.math))
        .collect();
    Ok(TuneReport {
        op,
        shape,
        gpu: dev.info.record(&nvrtc),
        families,
        strategy: strategy.name().to_string(),
        baseline,
        baseline_error: baseline_error.max,
        baseline_mean_error: Some(baseline_error.mean),
        results,
        seed: opts.seed,
        tolerance: crate::measure::verify::tolerance(shape.k),
        compile_s,
        bench_s: t_bench.elapsed().as_secs_f64(),
        wall_s: start.elapsed().as_secs_f64(),
        checksums,
        revisions,
        deterministic,
        maths,
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
/// timing: the correctness sweep for edges and awkward extents. Each kernel compiles once; with
/// `isolation` the kernels run in worker processes, so a faulting one is a failed validation.
pub fn validate_all(
    dev: &Device,
    catalog: &Catalog,
    op: Op,
    shapes: &[Shape],
    families: &[String],
    seed: u64,
    isolation: Option<&WorkerSettings>,
) -> Result<Vec<Validation>, TuneError> {
    nvrtc::check_arch(dev.info.arch)?;
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
    let cache = nvrtc::Cache::new();
    let compiled: BTreeMap<String, _> = list
        .iter()
        .map(|s| s.kernel_name.clone())
        .zip(
            nvrtc::compile_all(&list, dev.info.arch, nvrtc::Caches::memory(&cache), &|_| {})
                .results,
        )
        .collect();
    let mut out = Vec::new();
    for (shape, planned) in plans {
        let mut evaluator =
            Evaluator::open(dev, op, shape, seed, TimingSettings::quick(), isolation)?;
        for p in planned {
            let outcome = match compiled.get(&p.source.kernel_name).map(|r| r.as_ref()) {
                Some(Ok(c)) => evaluator.check(c, p.launch)?,
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

/// What an interrupted run's journal gives back, and the journal to append to.
struct Resumed {
    /// Candidates the journal holds, in the order they ran.
    results: Vec<CandidateResult>,
    /// The same, as the search sees them.
    trials: Vec<Trial>,
    /// Where this run records each candidate.
    writer: Option<journal::Writer>,
}

/// Opens the run's journal: with `opts.resume`, the candidates an interrupted run of the same
/// problem already finished are taken from it (a candidate whose family changed since runs
/// again); otherwise a new journal is started.
fn open_journal(
    opts: &TuneOptions,
    header: &Header,
    planned: &[Planned],
) -> Result<Resumed, TuneError> {
    let mut results: Vec<CandidateResult> = Vec::with_capacity(planned.len());
    let mut trials = Vec::new();
    let mut writer = None;
    if let Some(path) = &opts.journal {
        let old = if opts.resume && path.exists() {
            let r = Recorded::load(path)?;
            r.check_matches(path, header)?;
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
                    if trials.iter().any(|t: &Trial| t.index == i) {
                        continue;
                    }
                    trials.push(Trial {
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
            None => writer = Some(journal::Writer::create(path, header)?),
        }
    }
    Ok(Resumed {
        results,
        trials,
        writer,
    })
}

/// The progress line of one evaluated candidate.
fn step_message(kernel: &str, outcome: &Result<Measured, Failure>) -> String {
    match outcome {
        Ok(m) => format!("{kernel} {:.4} ms", m.stats.median_ms),
        Err(f) => format!(
            "{kernel} failed ({:?}: {})",
            f.stage,
            f.reason.lines().next().unwrap_or_default()
        ),
    }
}

/// Enumerates, prunes (with the arch's documented limits), instantiates and compiles every
/// candidate for `target` (a cubin for an arch, or PTX for a virtual arch: `compute_75`), or
/// per family a covering set of them (`selection`). Needs NVRTC, no GPU. Kernels already in
/// `cache` (from another shape of the same suite: the source does not depend on the shape) or
/// in `disk` (the compile cache a tuning run and the runtime share, so a second dry run
/// compiles nothing) are not compiled again.
#[allow(clippy::too_many_arguments)]
pub fn dry_run(
    catalog: &Catalog,
    op: Op,
    shape: Shape,
    target: impl Into<nvrtc::Target>,
    families: &[String],
    conditions: &[Expr],
    selection: DrySelection,
    cache: &nvrtc::Cache,
    disk: Option<&DiskCache>,
    progress: &dyn Progress,
) -> Result<DryRunReport, TuneError> {
    let target: nvrtc::Target = target.into();
    let arch = target.arch();
    let start = Instant::now();
    let limits = Limits::for_arch(arch.number() as i64).ok_or(TuneError::UnknownArch { arch })?;
    let (counts, mut planned) = plan_where(catalog, op, shape, &limits, families, conditions)?;
    if selection == DrySelection::Covering {
        planned = covering_set(planned);
    }
    let nvrtc = nvrtc::nvrtc_version()?;
    let nvrtc_library = nvrtc::library()?;
    nvrtc::check_arch(target)?;
    let sources: Vec<Source> = planned.iter().map(|p| p.source.clone()).collect();
    progress.start(Phase::Compile, sources.len() as u64);
    let caches = nvrtc::Caches {
        memory: cache,
        disk: disk.map(|d| (d, nvrtc.as_str())),
    };
    let batch = nvrtc::compile_all(&sources, target, caches, &|r| {
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
            let mut selected = 0;
            let mut failed = Vec::new();
            for (p, r) in planned.iter().zip(&batch.results) {
                if p.config.family != count.family {
                    continue;
                }
                selected += 1;
                match r.as_ref() {
                    Ok(_) => ok += 1,
                    Err(e) => failed.push((p.source.kernel_name.clone(), e.to_string())),
                }
            }
            DryRunFamily {
                count,
                selected,
                compiled: ok,
                failed,
            }
        })
        .collect();
    Ok(DryRunReport {
        op,
        shape,
        arch: target.to_string(),
        selection,
        nvrtc,
        nvrtc_library,
        families,
        compiled_now: batch.compiled_now,
        wall_s: start.elapsed().as_secs_f64(),
    })
}

/// Per family, the planned configs of a pairwise covering set of its valid ones, in plan order.
fn covering_set(planned: Vec<Planned>) -> Vec<Planned> {
    let mut by_family: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, p) in planned.iter().enumerate() {
        by_family.entry(&p.config.family).or_default().push(i);
    }
    let mut keep = vec![false; planned.len()];
    for members in by_family.values() {
        let params: Vec<_> = members.iter().map(|&i| &planned[i].config.params).collect();
        for j in covering::pairwise(&params) {
            keep[members[j]] = true;
        }
    }
    planned
        .into_iter()
        .zip(keep)
        .filter_map(|(p, k)| k.then_some(p))
        .collect()
}

#[cfg(test)]
mod order_tests {
    use super::*;
    use std::collections::BTreeSet;

    /// A dry run's covering set keeps, per family, configs that hold every pair of parameter
    /// values the family's valid configs hold, in plan order, and far fewer of them.
    #[test]
    fn a_covering_set_keeps_every_family_and_every_pair_of_values() {
        let catalog = Catalog::builtin().unwrap();
        let limits = Limits::for_arch(90).unwrap();
        let shape = Shape::parse(Op::Gemm, "2048x2048x2048:tt:beta").unwrap();
        let (_, planned) = plan(&catalog, Op::Gemm, shape, &limits, &[]).unwrap();
        let pairs = |p: &[Planned], family: &str| -> BTreeSet<(String, i64, String, i64)> {
            p.iter()
                .filter(|c| c.config.family == family)
                .flat_map(|c| covering::pairs(&c.config.params))
                .map(|(a, x, b, y)| (a.to_string(), x, b.to_string(), y))
                .collect()
        };
        let families: BTreeSet<String> = planned.iter().map(|p| p.config.family.clone()).collect();
        let kept = covering_set(planned.clone());
        assert!(
            kept.len() * 3 < planned.len(),
            "{} of {}",
            kept.len(),
            planned.len()
        );
        for family in &families {
            assert_eq!(pairs(&kept, family), pairs(&planned, family), "{family}");
            assert!(kept.iter().any(|p| &p.config.family == family), "{family}");
        }
        // Plan order: the kept configs are a subsequence of the plan.
        let mut rest = planned.iter();
        for k in &kept {
            assert!(
                rest.any(|p| p.config == k.config),
                "{:?} out of order",
                k.config
            );
        }
    }

    #[test]
    fn a_time_limited_walk_meets_every_family_and_the_models_favourites_first() {
        let catalog = Catalog::builtin().unwrap();
        let limits = Limits::for_arch(90).unwrap();
        let machine =
            crate::plan::model::Machine::for_gpu("NVIDIA H100 80GB HBM3", None, None).unwrap();
        let shape = Shape::parse(Op::Gemm, "2048x2048x2048:nt").unwrap();
        let (_, planned) = plan(&catalog, Op::Gemm, shape, &limits, &[]).unwrap();
        let keys = |p: &[Planned]| -> Vec<String> {
            p.iter()
                .map(|x| format!("{} {:?}", x.config.family, x.config.params))
                .collect()
        };
        let mut before = keys(&planned);
        let (ordered, space) = model_first(&catalog, planned, Op::Gemm, shape, &limits, &machine);
        let mut after = keys(&ordered);
        // Each family's leader first (the plan lists the tensor-core families after the SIMT
        // ones), then the rest: the same candidates, each once.
        let families: BTreeSet<&str> = ordered.iter().map(|p| p.config.family.as_str()).collect();
        let leaders: BTreeSet<&str> = ordered[..families.len()]
            .iter()
            .map(|p| p.config.family.as_str())
            .collect();
        assert_eq!(leaders, families);
        assert!(families.contains("gemm_tf32x3_wgmma_rs"), "{families:?}");
        // On a large problem on Hopper the model rates 3xTF32 on wgmma above FP32 FMA.
        assert!(
            ordered[0].config.family.starts_with("gemm_tf32x3"),
            "{}",
            after[0]
        );
        // What the search sees follows the same order.
        assert!(ordered
            .iter()
            .zip(&space)
            .all(|(p, c)| p.config.family == c.family && p.config.params == c.params));
        before.sort();
        after.sort();
        assert_eq!(before, after);
    }
}
