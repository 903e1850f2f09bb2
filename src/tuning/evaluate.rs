//! `autotune evaluate`: what a product that ships a database gets on shapes nobody tuned.
//!
//! For each shape the runtime itself ([`Tuned::explain_with`]) says what it would launch under
//! each [`POLICIES`] entry: all rules with the vendor guard (what ships), the same without the
//! guard, and the rules before coverage existed (nearest tuned shape). Each chosen kernel is
//! compiled as the runtime compiles it ([`crate::family::catalog::Family::kernel`]), validated
//! and timed beside cuBLAS in this process; where the guard calls cuBLAS, the product gets
//! cuBLAS's time. With a tuning budget, a model-guided search and the whole coverage portfolio
//! are timed too, and the best time found gives each choice's regret.

use crate::cuda::bench::RunError;
use crate::cuda::device::{Device, DeviceError};
use crate::cuda::isolate::WorkerSettings;
use crate::cuda::nvrtc::{self, DiskCache};
use crate::db::Database;
use crate::family::catalog::Catalog;
use crate::family::space::{params_label, Config};
use crate::measure::timing::TimingSettings;
use crate::problem::{Op, Shape};
use crate::product::lookup::{Choice, LookupOptions, Rule};
use crate::product::runtime::{RuntimeError, Tuned};
use crate::tuning::devices::Devices;
use crate::tuning::evaluator::Evaluator;
use crate::tuning::queue::Usage;
use crate::tuning::tune::{tune, Silent, TuneError, TuneOptions};
use crate::tuning::workload::{Problem, Summary};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub mod report;

/// The lookup policies every shape is evaluated under: a name and the rules.
pub const POLICIES: [(&str, LookupOptions); 3] = [
    (
        "runtime",
        LookupOptions {
            coverage: true,
            vendor_guard: true,
            math: crate::family::math::MathPolicy::Any,
        },
    ),
    (
        "no guard",
        LookupOptions {
            coverage: true,
            vendor_guard: false,
            math: crate::family::math::MathPolicy::Any,
        },
    ),
    (
        "nearest (before)",
        LookupOptions {
            coverage: false,
            vendor_guard: false,
            math: crate::family::math::MathPolicy::Any,
        },
    ),
];

/// Options of an evaluation.
#[derive(Debug, Clone)]
pub struct EvaluateOptions {
    /// Seed of the inputs (and of the searches).
    pub seed: u64,
    /// How kernels are timed.
    pub timing: TimingSettings,
    /// Evaluations of a model-guided search per shape, for the regret (`None`: no search).
    pub tune_budget: Option<usize>,
    /// Run kernels in worker processes (`None`: in this process).
    pub isolation: Option<WorkerSettings>,
    /// The on-disk compile cache.
    pub disk_cache: Option<DiskCache>,
}

/// What one policy chose for one shape, and what it ran at.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Chosen {
    /// The policy's name ([`POLICIES`]).
    pub policy: String,
    /// The rule that chose.
    pub rule: Rule,
    /// The vendor guard calls cuBLAS.
    pub vendor: bool,
    /// The kernel's family.
    pub family: String,
    /// Its parameters.
    pub params: BTreeMap<String, i64>,
    /// The kernel's median time, ms (`None`: it failed, see `error`).
    pub kernel_ms: Option<f64>,
    /// Why it failed.
    pub error: Option<String>,
    /// What the product gets: cuBLAS's time where the guard calls it, else the kernel's.
    pub effective_ms: Option<f64>,
    /// Whether the outcome was measured: always in a run; a re-scored choice the recorded run
    /// never timed is not ([`crate::tuning::rescore`]), and its shape sits out its policy's
    /// summary ([`summarize`]).
    #[serde(default = "measured_default")]
    pub measured: bool,
}

fn measured_default() -> bool {
    true
}

impl Chosen {
    /// What `policy`'s choice `c` ran at, given its kernel's outcome on the shape (its median
    /// time, or why it failed; `None`: never timed) and cuBLAS's time there. The guard's call
    /// of cuBLAS is an outcome whatever the kernel's.
    pub fn new(
        policy: &str,
        c: &Choice,
        outcome: Option<Result<f64, String>>,
        cublas_ms: f64,
    ) -> Chosen {
        let measured = c.vendor || outcome.is_some();
        let (kernel_ms, error) = match outcome {
            Some(Ok(t)) => (Some(t), None),
            Some(Err(e)) => (None, Some(e)),
            None => (None, Some("not timed".to_string())),
        };
        Chosen {
            policy: policy.to_string(),
            rule: c.rule,
            vendor: c.vendor,
            family: c.family.clone(),
            params: c.params.clone(),
            kernel_ms,
            error,
            effective_ms: if c.vendor { Some(cublas_ms) } else { kernel_ms },
            measured,
        }
    }

    /// cuBLAS's time over what the product gets (0 when the kernel failed).
    pub fn vs_cublas(&self, cublas_ms: f64) -> f64 {
        self.effective_ms.map_or(0.0, |t| cublas_ms / t)
    }
}

/// One shape's evaluation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ShapeEval {
    /// The shape.
    pub shape: Shape,
    /// Its label: the dimensions, then the form's tags (e.g. `64x4096x4096:nt:beta`), as
    /// [`Shape::parse`] reads it.
    pub label: String,
    /// The kind of shape it was drawn as ([`crate::tuning::workload::Kind::name`]: e.g.
    /// `layer` for a layer call `X · Wᵀ`).
    pub kind: String,
    /// cuBLAS's median time, ms.
    pub cublas_ms: f64,
    /// One per policy, in [`POLICIES`] order.
    pub chosen: Vec<Chosen>,
    /// The fastest time found for the shape (the choices, and with a budget the search and
    /// the portfolio), ms.
    pub best_ms: Option<f64>,
    /// The config that ran at `best_ms`.
    pub best: Option<String>,
    /// Configs timed on the shape.
    pub timed: usize,
    /// Every config that ran, with its median time (ms), in the order timed: the choices,
    /// then with a budget the portfolio and the search. Kept so that selection rules can be
    /// re-scored offline against the same measurements.
    #[serde(default)]
    pub times: Vec<(String, f64)>,
    /// With a budget, where a faster config than the runtime's was found: the runtime's kernel
    /// (first) and the fastest others found, timed again side by side in one fresh session
    /// (order A B C D D C B A), each with the mean of its two medians (ms). The best of many
    /// single timings is biased low (each carries a few percent of noise, and the minimum
    /// picks the luckiest), so the regret reads these instead ([`ShapeEval::regret`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub confirmed: Vec<(String, f64)>,
}

/// How many of the fastest configs found besides the runtime's are timed again beside it
/// ([`ShapeEval::confirmed`]).
pub const CONFIRM_RUNNERS_UP: usize = 3;

impl ShapeEval {
    /// The kernel the runtime chose (guard or not) over the best kernel found: 1 is the best.
    /// Where the run timed the runtime's kernel again beside the fastest others found
    /// ([`ShapeEval::confirmed`]), from those times; else from the single timings.
    pub fn regret(&self) -> Option<f64> {
        let c = self.chosen.get(1)?;
        if let Some((first, kernel)) = self.confirmed.first() {
            if *first == config_label(&c.family, &c.params) {
                let best = self
                    .confirmed
                    .iter()
                    .map(|(_, t)| *t)
                    .fold(f64::INFINITY, f64::min);
                return Some(kernel / best);
            }
        }
        self.single_regret()
    }

    /// [`ShapeEval::regret`] from the single timings alone: the runtime's kernel over the
    /// fastest time found.
    pub fn single_regret(&self) -> Option<f64> {
        let kernel = self.chosen.get(1)?.kernel_ms?;
        Some(kernel / self.best_ms?)
    }

    /// What the runtime's choice (cuBLAS where the guard calls it) costs over the best it
    /// could have chosen: the best kernel found or cuBLAS.
    pub fn choice_regret(&self) -> Option<f64> {
        let got = self.chosen.first()?.effective_ms?;
        Some(got / self.best_ms?.min(self.cublas_ms))
    }
}

/// Why an evaluation stopped.
#[derive(Debug, thiserror::Error)]
pub enum EvaluateError {
    /// The GPU or cuBLAS failed.
    #[error("{op} {shape}: {source}")]
    Run {
        /// The op.
        op: Op,
        /// The shape.
        shape: String,
        /// Why.
        source: RunError,
    },
    /// The budgeted search failed.
    #[error("{op} {shape}: the search for the best config failed: {source}")]
    Tune {
        /// The op.
        op: Op,
        /// The shape.
        shape: String,
        /// Why.
        source: Box<TuneError>,
    },
    /// NVRTC is missing or cannot target the GPU.
    #[error(transparent)]
    Compile(#[from] nvrtc::CompileError),
    /// The search strategy could not be made.
    #[error(transparent)]
    Search(#[from] crate::search::SearchError),
    /// A device could not be opened.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The runtime could not be set up on a device.
    #[error("setting up the runtime on device {device}: {source}")]
    Runtime {
        /// The device.
        device: usize,
        /// Why.
        source: Box<RuntimeError>,
    },
}

/// Evaluates the choices a product shipping `db` gets for `op` on every problem, the problems
/// spread over `devices` (one GPU model; each device runs the runtime on its own context and
/// takes the next problem when free). `progress` gets one line per shape. The evaluations
/// come in the problems' order, with the devices' busy time.
#[allow(clippy::too_many_arguments)]
pub fn evaluate(
    devices: &Devices,
    db: &Database,
    catalog: &Catalog,
    cache: &nvrtc::Cache,
    op: Op,
    problems: &[Problem],
    opts: &EvaluateOptions,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<(Vec<ShapeEval>, Usage), EvaluateError> {
    nvrtc::check_arch(devices.info().arch)?;
    let done = std::sync::atomic::AtomicUsize::new(0);
    let setup = |dev: Device| -> Result<(Device, Tuned), EvaluateError> {
        let tuned = Tuned::new(&dev.ctx, db.clone())
            .map_err(|e| EvaluateError::Runtime {
                device: dev.info.ordinal,
                source: Box::new(e),
            })?
            .quiet();
        Ok((dev, tuned))
    };
    let work = |(dev, tuned): &mut (Device, Tuned), p: &Problem| {
        let e = evaluate_one(dev, tuned, catalog, cache, op, p, opts)?;
        let runtime = &e.chosen[0];
        progress(&format!(
            "[{}/{}] {op} {} ({}) on device {}: {} -> {:.3}x cuBLAS{}; before {:.3}x{}",
            done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1,
            problems.len(),
            e.label,
            e.kind,
            dev.info.ordinal,
            if runtime.vendor {
                "cuBLAS (guard)".to_string()
            } else {
                format!("{} {}", runtime.family, params_label(&runtime.params))
            },
            runtime.vs_cublas(e.cublas_ms),
            match &runtime.error {
                Some(err) => format!(" (kernel failed: {err})"),
                None => String::new(),
            },
            e.chosen[2].vs_cublas(e.cublas_ms),
            e.regret()
                .map_or(String::new(), |r| format!("; regret {r:.3}"))
        ));
        Ok(e)
    };
    devices.run(problems, &setup, &work)
}

fn evaluate_one(
    dev: &Device,
    tuned: &Tuned,
    catalog: &Catalog,
    cache: &nvrtc::Cache,
    op: Op,
    problem: &Problem,
    opts: &EvaluateOptions,
) -> Result<ShapeEval, EvaluateError> {
    let shape = problem.shape;
    let run_err = |source| EvaluateError::Run {
        op,
        shape: shape.label(op),
        source,
    };
    let choices: Vec<_> = POLICIES
        .iter()
        .map(|(_, o)| tuned.explain_with(op, shape, *o))
        .collect();
    // Every distinct config to time: the choices, then (with a budget) the portfolio.
    let mut configs: Vec<Config> = Vec::new();
    for c in &choices {
        if !configs.contains(&c.config()) {
            configs.push(c.config());
        }
    }
    if opts.tune_budget.is_some() {
        // The portfolio of the problem's form (a plain portfolio's families may not compute
        // another form).
        for c in tuned.portfolio_for(op, &shape.form) {
            if !configs.contains(&c) {
                configs.push(c);
            }
        }
    }
    let mut eval = Evaluator::open(
        dev,
        op,
        shape,
        opts.seed,
        opts.timing,
        opts.isolation.as_ref(),
    )
    .map_err(run_err)?;
    let (cublas, cublas_error) = eval.baseline().map_err(run_err)?;
    let times = eval
        .time_configs(dev, catalog, cache, shape, &configs, cublas_error.max)
        .map_err(run_err)?;
    drop(eval);
    // Every config that ran, with its time, in the order timed.
    let mut found: Vec<(Config, f64)> = Vec::new();
    for (c, t) in configs.iter().zip(&times) {
        if let Ok(t) = t {
            found.push((c.clone(), *t));
        }
    }
    let mut timed = configs.len();
    if let Some(budget) = opts.tune_budget {
        let mut strategy = crate::search::by_name("model-guided", opts.seed)?;
        let topts = TuneOptions {
            seed: opts.seed,
            timing: opts.timing,
            budget: Some(budget),
            isolation: opts.isolation.clone(),
            disk_cache: opts.disk_cache.clone(),
            ..TuneOptions::default()
        };
        let report = tune(
            dev,
            catalog,
            cache,
            op,
            shape,
            &topts,
            &mut *strategy,
            &Silent,
        )
        .map_err(|source| EvaluateError::Tune {
            op,
            shape: shape.label(op),
            source: Box::new(source),
        })?;
        timed += report.results.len();
        for r in &report.results {
            if let Some(t) = r.median_ms() {
                let c = Config {
                    family: r.family.clone(),
                    params: r.params.clone(),
                };
                found.push((c, t));
            }
        }
    }
    // The runtime's kernel (the no-guard policy's: the guard only decides whether it runs).
    let runtime = choices[1].config();
    let runtime_ms = configs
        .iter()
        .position(|x| *x == runtime)
        .and_then(|i| times[i].as_ref().ok().copied());
    let confirmed = match (opts.tune_budget, runtime_ms) {
        (Some(_), Some(ms)) => {
            let rivals = runners_up(&found, &runtime, ms, CONFIRM_RUNNERS_UP);
            confirm(
                dev,
                catalog,
                cache,
                op,
                problem,
                opts,
                &runtime,
                &rivals,
                cublas_error.max,
            )
            .map_err(run_err)?
        }
        _ => Vec::new(),
    };
    let best = found
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, t)| (*t, config_label(&c.family, &c.params)));
    let all: Vec<(String, f64)> = found
        .iter()
        .map(|(c, t)| (config_label(&c.family, &c.params), *t))
        .collect();
    let chosen = POLICIES
        .iter()
        .zip(&choices)
        .map(|((name, _), c)| {
            let i = configs.iter().position(|x| *x == c.config());
            Chosen::new(
                name,
                c,
                i.and_then(|i| times.get(i)).cloned(),
                cublas.median_ms,
            )
        })
        .collect();
    Ok(ShapeEval {
        shape,
        label: shape.label(op),
        kind: problem.kind.to_string(),
        cublas_ms: cublas.median_ms,
        chosen,
        best_ms: best.as_ref().map(|b| b.0),
        best: best.map(|b| b.1),
        timed,
        times: all,
        confirmed,
    })
}

/// The `n` fastest configs of `found` (each once, its best time) measured faster than
/// `runtime`'s `runtime_ms`, fastest first; `runtime` itself is never one.
fn runners_up(found: &[(Config, f64)], runtime: &Config, runtime_ms: f64, n: usize) -> Vec<Config> {
    let mut faster: Vec<&(Config, f64)> = found
        .iter()
        .filter(|(c, t)| c != runtime && *t < runtime_ms)
        .collect();
    faster.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut out: Vec<Config> = Vec::new();
    for (c, _) in faster {
        if out.len() == n {
            break;
        }
        if !out.contains(c) {
            out.push(c.clone());
        }
    }
    out
}

/// Times `runtime` and `rivals` again side by side on a fresh session of the problem, in the
/// order A B C D D C B A (so a drift over the session weighs on each alike): each with the
/// mean of its two medians, `runtime` first ([`ShapeEval::confirmed`]). Nothing when there
/// are no rivals; a rival that fails now is left out, and nothing is kept if `runtime` does.
#[allow(clippy::too_many_arguments)]
fn confirm(
    dev: &Device,
    catalog: &Catalog,
    cache: &nvrtc::Cache,
    op: Op,
    problem: &Problem,
    opts: &EvaluateOptions,
    runtime: &Config,
    rivals: &[Config],
    cublas_error: f64,
) -> Result<Vec<(String, f64)>, RunError> {
    if rivals.is_empty() {
        return Ok(Vec::new());
    }
    let ahead: Vec<Config> = std::iter::once(runtime.clone())
        .chain(rivals.iter().cloned())
        .collect();
    let order: Vec<Config> = ahead.iter().chain(ahead.iter().rev()).cloned().collect();
    let mut eval = Evaluator::open(
        dev,
        op,
        problem.shape,
        opts.seed,
        opts.timing,
        opts.isolation.as_ref(),
    )?;
    let times = eval.time_configs(dev, catalog, cache, problem.shape, &order, cublas_error)?;
    let n = ahead.len();
    let mut out = Vec::new();
    for (i, c) in ahead.iter().enumerate() {
        if let (Ok(a), Ok(b)) = (&times[i], &times[2 * n - 1 - i]) {
            out.push((config_label(&c.family, &c.params), (a + b) / 2.0));
        } else if i == 0 {
            return Ok(Vec::new());
        }
    }
    Ok(out)
}

/// The name a config's time is kept under in [`ShapeEval::times`] and `best`: its family and
/// parameters, as the reports print them.
pub fn config_label(family: &str, params: &BTreeMap<String, i64>) -> String {
    format!("{family} {}", params_label(params))
}

/// Per policy: the summary of x cuBLAS over the shapes, and how often each rule chose.
#[derive(Debug, Clone, Serialize)]
pub struct PolicySummary {
    /// The policy.
    pub policy: String,
    /// cuBLAS's time over what the product gets (a failed kernel counts as 0.001x).
    pub vs_cublas: Option<Summary>,
    /// Shapes per rule (`cuBLAS (guard)` for the guard's calls).
    pub rules: BTreeMap<String, usize>,
}

/// Summaries of an evaluation: one per policy, and the regrets
/// ([`ShapeEval::regret`], [`ShapeEval::choice_regret`], [`ShapeEval::single_regret`]).
pub fn summarize(evals: &[ShapeEval]) -> (Vec<PolicySummary>, [Option<Summary>; 3]) {
    // Each policy over the shapes where its choice has an outcome: all of them in a run; a
    // re-scored shape may have a choice the recorded run never timed ([`Summary::count`]
    // says how many entered).
    let scored = |i: usize| {
        evals
            .iter()
            .filter(move |e| e.chosen.get(i).is_some_and(|c| c.measured))
    };
    let policies = POLICIES
        .iter()
        .enumerate()
        .map(|(i, (name, _))| {
            let mut rules = BTreeMap::new();
            let values: Vec<f64> = scored(i)
                .map(|e| {
                    let c = &e.chosen[i];
                    let rule = if c.vendor {
                        "cuBLAS (guard)".to_string()
                    } else {
                        c.rule.to_string()
                    };
                    *rules.entry(rule).or_insert(0) += 1;
                    c.vs_cublas(e.cublas_ms).max(1e-3)
                })
                .collect();
            PolicySummary {
                policy: name.to_string(),
                vs_cublas: Summary::of(&values),
                rules,
            }
        })
        .collect();
    // The regrets read the no-guard choice and the runtime's, over the shapes that have one
    // (a failed kernel, or a search that found nothing, has none; the report says how many
    // are left out: [`Summary::count`]).
    let all = |policy: usize, f: fn(&ShapeEval) -> Option<f64>| {
        let v: Vec<f64> = scored(policy).filter_map(f).collect();
        Summary::of(&v)
    };
    (
        policies,
        [
            all(1, ShapeEval::regret),
            all(0, ShapeEval::choice_regret),
            all(1, ShapeEval::single_regret),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chosen(policy: &str, kernel_ms: Option<f64>, vendor: bool) -> Chosen {
        Chosen {
            policy: policy.into(),
            rule: Rule::Predicted,
            vendor,
            family: "gemm_general".into(),
            params: BTreeMap::new(),
            kernel_ms,
            error: kernel_ms.is_none().then(|| "Timeout".to_string()),
            effective_ms: if vendor { Some(1.0) } else { kernel_ms },
            measured: true,
        }
    }

    fn shape(kernel_ms: Option<f64>, best_ms: f64) -> ShapeEval {
        ShapeEval {
            shape: Shape::parse(Op::Gemm, "64x64x64").unwrap(),
            label: "64x64x64".into(),
            kind: "general".into(),
            cublas_ms: 1.0,
            chosen: vec![
                chosen("runtime", kernel_ms, true),
                chosen("no guard", kernel_ms, false),
                chosen("nearest (before)", kernel_ms, false),
            ],
            best_ms: Some(best_ms),
            best: None,
            timed: 3,
            times: Vec::new(),
            confirmed: Vec::new(),
        }
    }

    #[test]
    fn a_failed_kernel_leaves_its_shape_out_of_the_regret_not_the_others() {
        let evals = [
            shape(Some(1.2), 1.0),
            shape(None, 1.0),
            shape(Some(1.0), 1.0),
        ];
        let (_, regret) = summarize(&evals);
        let kernel = regret[0].as_ref().expect("two shapes have a regret");
        assert_eq!(kernel.count, 2);
        assert!((kernel.max - 1.2).abs() < 1e-12, "{kernel:?}");
        // The runtime called cuBLAS (time 1.0) everywhere: its choice cost nothing.
        let choice = regret[1].as_ref().unwrap();
        assert_eq!(choice.count, 3);
        assert!((choice.max - 1.0).abs() < 1e-12, "{choice:?}");
    }

    #[test]
    fn the_regret_reads_the_side_by_side_times_of_the_runtimes_kernel_when_there_are_some() {
        // gemm_general with no params, as chosen() builds it, is the runtime's kernel.
        let runtime = config_label("gemm_general", &BTreeMap::new());
        let mut e = shape(Some(1.2), 1.0);
        assert!((e.regret().unwrap() - 1.2).abs() < 1e-12);
        // Timed again beside the rival that was 20% faster, it is 5% slower.
        e.confirmed = vec![(runtime.clone(), 1.05), ("gemm_tile2d BM=64".into(), 1.0)];
        assert!((e.regret().unwrap() - 1.05).abs() < 1e-12);
        assert!((e.single_regret().unwrap() - 1.2).abs() < 1e-12);
        // Faster than every rival the second time: no regret, never below 1.
        e.confirmed = vec![(runtime, 0.9), ("gemm_tile2d BM=64".into(), 1.0)];
        assert!((e.regret().unwrap() - 1.0).abs() < 1e-12);
        // Side-by-side times of another kernel than the one chosen now (a re-scored run whose
        // rules changed) say nothing of it: the single timings count.
        e.confirmed = vec![
            ("gemm_tile2d BM=32".into(), 1.0),
            ("gemm_tile2d BM=64".into(), 0.5),
        ];
        assert!((e.regret().unwrap() - 1.2).abs() < 1e-12);
        let (_, regret) = summarize(&[e]);
        assert!((regret[2].as_ref().unwrap().max - 1.2).abs() < 1e-12);
    }

    #[test]
    fn runners_up_are_the_fastest_others_measured_faster_each_once() {
        let c = |bm: i64| Config {
            family: "gemm_tile2d".into(),
            params: BTreeMap::from([("BM".to_string(), bm)]),
        };
        let found = vec![
            (c(32), 1.0),
            (c(64), 0.8),
            (c(128), 0.9),
            (c(64), 0.85),
            (c(16), 0.7),
            (c(256), 1.1),
        ];
        // BM=32 is the runtime's: the faster others, fastest first, BM=64 once.
        assert_eq!(
            runners_up(&found, &c(32), 1.0, 3),
            vec![c(16), c(64), c(128)]
        );
        assert_eq!(runners_up(&found, &c(32), 1.0, 2), vec![c(16), c(64)]);
        // Nothing was faster than the runtime's kernel: nothing to time again.
        assert!(runners_up(&found, &c(16), 0.7, 3).is_empty());
    }
}
