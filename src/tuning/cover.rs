//! Coverage runs (`autotune cover`): what lets the runtime choose well for shapes nobody tuned.
//!
//! 1. **Pool**: a budgeted search (model-guided) on a subset of the grid gives, per shape,
//!    the times of the configs it tried.
//! 2. **Portfolio**: greedily, the configs that together come closest to each pool shape's
//!    best ([`choose_portfolio`]).
//! 3. **Grid**: every portfolio config is validated and timed on every grid shape, beside
//!    cuBLAS.
//!
//! The result is a [`Coverage`] record for the database; [`crate::product::select`] predicts
//! from it. The grid is data: `configs/coverage/<op>.toml` ([`Grid`]), or
//! `configs/coverage/<op>-<layout>.toml` where a layout has its own (`gemm-nt.toml`, the layer
//! call `X · Wᵀ`).
//!
//! A run measures one [`Form`] ([`Grid::form`]): every grid point is a problem of that form, the
//! pool searches and the portfolio use only the families that compute it
//! ([`crate::family::space::Interface::computes`]), cuBLAS is timed with the matching call, and
//! the record is keyed by it, so that the runtime predicts from it for problems of exactly that
//! form ([`Coverage::serves`]).

use crate::cuda::bench::RunError;
use crate::cuda::device::{Device, DeviceError};
use crate::cuda::isolate::WorkerSettings;
use crate::cuda::nvrtc::{self, DiskCache};
use crate::db::{Coverage, CoverageConfig, CoveragePoint, Producer};
use crate::family::catalog::{Catalog, Freshness};
use crate::family::space::Config;
use crate::measure::timing::TimingSettings;
use crate::plan::outcome::utc_now_rfc3339;
use crate::problem::{Form, Op, Shape};
use crate::tuning::devices::Devices;
use crate::tuning::evaluator::Evaluator;
use crate::tuning::queue::Usage;
use crate::tuning::tune::{tune, Silent, TuneError, TuneOptions};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

mod checkpoint;
mod grid;
pub mod loo;
mod widen;

pub use checkpoint::{save, Checkpoints, CHECKPOINT_EVERY};
pub use grid::Grid;
pub use widen::{append_configs, widen, winners_to_add};

/// Why a coverage run stopped.
#[derive(Debug, thiserror::Error)]
pub enum CoverError {
    /// A grid file is unusable.
    #[error("coverage grid {path}: {message}")]
    Grid {
        /// Where it came from.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// A pool search failed.
    #[error("pool search on {shape}: {source}")]
    Tune {
        /// The shape.
        shape: String,
        /// Why.
        source: Box<TuneError>,
    },
    /// The GPU or cuBLAS failed.
    #[error("grid point {shape}: {source}")]
    Run {
        /// The shape.
        shape: String,
        /// Why.
        source: RunError,
    },
    /// NVRTC is missing or cannot target the GPU.
    #[error(transparent)]
    Compile(#[from] nvrtc::CompileError),
    /// A device could not be opened.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The search strategy could not be made.
    #[error(transparent)]
    Search(#[from] crate::search::SearchError),
    /// A coverage to extend was measured with another version of a family.
    #[error("{coverage} was measured with another version of family {family}: measure it anew rather than extend it")]
    Stale {
        /// The coverage.
        coverage: String,
        /// The changed family.
        family: String,
    },
    /// No family of the op (of those named) computes the grid's form.
    #[error("no {op} family{named} computes the form {form}: problems beyond the plain form need a family of the full interface (e.g. gemm_general)")]
    NoFamily {
        /// The op.
        op: Op,
        /// ` named a, b` when families were named.
        named: String,
        /// The form's tags.
        form: String,
    },
    /// The coverage to extend was measured on another form than the grid's.
    #[error("{coverage} was measured on another form than the grid's ({grid}): extend the coverage of that form")]
    OtherForm {
        /// The coverage.
        coverage: String,
        /// The grid's form.
        grid: String,
    },
    /// No config ran on any pool shape.
    #[error(
        "no config of the {0} families ran on any pool shape: nothing to build a portfolio from"
    )]
    EmptyPool(Op),
    /// `--portfolio-from` names a GPU without a usable coverage of the op and form.
    #[error("{gpu} has {what} to take a portfolio from (the database has: {have}); measure it there first with `autotune cover`, or leave --portfolio-from out")]
    NoPortfolio {
        /// The GPU named.
        gpu: String,
        /// What it lacks.
        what: String,
        /// The coverage records the database has.
        have: String,
    },
}

/// Options of a coverage run.
#[derive(Debug, Clone)]
pub struct CoverOptions {
    /// Seed of the inputs and of the pool searches.
    pub seed: u64,
    /// Timing of the grid measurements and pool searches.
    pub timing: TimingSettings,
    /// Evaluations per pool search.
    pub pool_budget: usize,
    /// Configs in the portfolio.
    pub portfolio: usize,
    /// Configs the portfolio starts with (e.g. this GPU's tuned winners, found by exhaustive
    /// searches the pool's budget cannot match); the pool fills the rest.
    pub seeds: Vec<Config>,
    /// Only these families (all of the op's when empty).
    pub families: Vec<String>,
    /// Run candidates in worker processes (`None`: in this process).
    pub isolation: Option<WorkerSettings>,
    /// The on-disk compile cache.
    pub disk_cache: Option<DiskCache>,
}

impl CoverOptions {
    /// The timing a coverage run uses by default: fewer samples than a tune (each grid
    /// point's time only has to rank configs a few percent apart).
    pub fn timing() -> TimingSettings {
        TimingSettings {
            warmup: 1,
            min_samples: 5,
            max_samples: 20,
            budget_ms: 25.0,
            flush_l2: true,
        }
    }
}

/// Picks `size` configs from `seeds` then `pool` (per shape: each config's time there): the
/// seeds first (as many as fit), then greedily, each step adds the config that most raises
/// the sum over shapes of `ln(best / fastest chosen)` (a shape none of the chosen ran on
/// counts as 5x slower than its best). Ties go to the config measured on more shapes, then
/// to the first seen.
pub fn choose_portfolio(seeds: &[Config], pool: &[Vec<(Config, f64)>], size: usize) -> Vec<Config> {
    let mut configs: Vec<Config> = Vec::new();
    let mut index = BTreeMap::new();
    let mut add = |c: &Config, configs: &mut Vec<Config>| {
        if let std::collections::btree_map::Entry::Vacant(v) =
            index.entry((c.family.clone(), c.params.clone()))
        {
            v.insert(configs.len());
            configs.push(c.clone());
        }
    };
    for c in seeds {
        add(c, &mut configs);
    }
    let seeded = configs.len().min(size);
    for shape in pool {
        for (c, _) in shape {
            add(c, &mut configs);
        }
    }
    // times[s][c]: config c's time on pool shape s.
    let times: Vec<BTreeMap<usize, f64>> = pool
        .iter()
        .map(|shape| {
            shape
                .iter()
                .filter(|(_, t)| t.is_finite() && *t > 0.0)
                .map(|(c, t)| (index[&(c.family.clone(), c.params.clone())], *t))
                .collect()
        })
        .collect();
    let best: Vec<f64> = times
        .iter()
        .map(|m| m.values().copied().fold(f64::INFINITY, f64::min))
        .collect();
    let seen: Vec<usize> = (0..configs.len())
        .map(|c| times.iter().filter(|m| m.contains_key(&c)).count())
        .collect();
    const MISSING: f64 = 5.0;
    let mut fastest: Vec<f64> = best.iter().map(|b| MISSING * b).collect();
    let mut chosen: Vec<usize> = Vec::new();
    for c in 0..seeded {
        for (s, m) in times.iter().enumerate() {
            if let Some(t) = m.get(&c) {
                fastest[s] = fastest[s].min(*t);
            }
        }
        chosen.push(c);
    }
    while chosen.len() < size.min(configs.len()) {
        let gain = |c: usize| -> f64 {
            times
                .iter()
                .enumerate()
                .filter_map(|(s, m)| m.get(&c).map(|t| (fastest[s] / t.min(fastest[s])).ln()))
                .sum()
        };
        let pick = (0..configs.len())
            .filter(|c| !chosen.contains(c))
            .map(|c| (c, gain(c)))
            .max_by(|a, b| {
                a.1.total_cmp(&b.1)
                    .then(seen[a.0].cmp(&seen[b.0]))
                    .then(b.0.cmp(&a.0))
            });
        let Some((c, _)) = pick else { break };
        for (s, m) in times.iter().enumerate() {
            if let Some(t) = m.get(&c) {
                fastest[s] = fastest[s].min(*t);
            }
        }
        chosen.push(c);
    }
    chosen.into_iter().map(|c| configs[c].clone()).collect()
}

/// The families a coverage run of `op` on `form` searches and times: those of the op (only the
/// ones named in `named`, when any) whose kernels compute the form.
pub fn families_for(
    catalog: &Catalog,
    op: Op,
    form: &Form,
    named: &[String],
) -> Result<Vec<String>, CoverError> {
    let out: Vec<String> = catalog
        .for_op(op)
        .filter(|f| named.is_empty() || named.iter().any(|n| n == f.name()))
        .filter(|f| f.space.interface.computes(form))
        .map(|f| f.name().to_string())
        .collect();
    if out.is_empty() {
        return Err(CoverError::NoFamily {
            op,
            named: if named.is_empty() {
                String::new()
            } else {
                format!(" named {}", named.join(", "))
            },
            form: form_name(op, form),
        });
    }
    Ok(out)
}

/// How a form is named in messages: its tags, or `plain`.
fn form_name(op: Op, form: &Form) -> String {
    if form.is_plain() {
        "plain".to_string()
    } else {
        form.tags(op).trim_start_matches(':').replace(':', ", ")
    }
}

/// The configs that seed a coverage portfolio of `gpu` for `op` on `form`: the current winners
/// of `db`'s entries of that GPU and op whose family computes the form, those of the form
/// itself first, then by speed over cuBLAS; at most `max`, each once.
pub fn portfolio_seeds(
    db: &crate::db::Database,
    catalog: &Catalog,
    gpu: &str,
    op: Op,
    form: &Form,
    max: usize,
) -> Vec<Config> {
    let mut entries: Vec<_> = db
        .entries
        .iter()
        .filter(|e| {
            e.gpu == gpu
                && e.op == op
                && catalog.freshness(&e.family, &e.checksum) == Freshness::Current
                && catalog
                    .get(&e.family)
                    .is_ok_and(|f| f.space.interface.computes(form))
        })
        .collect();
    entries.sort_by(|x, y| {
        (y.form == *form)
            .cmp(&(x.form == *form))
            .then(y.vs_cublas.total_cmp(&x.vs_cublas))
    });
    let mut seeds: Vec<Config> = Vec::new();
    for e in entries {
        let c = Config {
            family: e.family.clone(),
            params: e.params.clone(),
        };
        if !seeds.contains(&c) && seeds.len() < max {
            seeds.push(c);
        }
    }
    seeds
}

/// The portfolio of `gpu`'s coverage of `op` on `form` (a GPU the database names), or for a
/// batched form no record has, of its layout and beta unbatched (of any alpha: the record with
/// the most configs that compute batches); its current configs that compute `form` only: what a coverage run of another GPU of the same arch, or of a batched grid, can
/// measure as it is, with no pool search ([`CoverOptions::seeds`] filling
/// [`CoverOptions::portfolio`]).
pub fn portfolio_of(
    db: &crate::db::Database,
    catalog: &Catalog,
    gpu: &str,
    op: Op,
    form: &Form,
) -> Result<Vec<Config>, CoverError> {
    let computes = |c: &CoverageConfig| {
        catalog
            .get(&c.family)
            .is_ok_and(|f| f.space.interface.computes(form))
    };
    // A batched form no record has takes the portfolio of its layout and beta unbatched (of
    // any alpha) with the most configs that compute batches.
    let cov = db.coverage(gpu, op, form).or_else(|| {
        let unbatched = Form {
            batch: 1,
            scaled: false,
            ..*form
        };
        (form.batch > 1)
            .then(|| {
                db.coverage
                    .iter()
                    .filter(|c| {
                        c.gpu == gpu
                            && c.op == op
                            && Form {
                                scaled: false,
                                ..c.form
                            } == unbatched
                    })
                    .max_by_key(|c| c.configs.iter().filter(|x| computes(x)).count())
            })
            .flatten()
    });
    let Some(cov) = cov else {
        return Err(CoverError::NoPortfolio {
            gpu: gpu.to_string(),
            what: format!("no {op} coverage of the {} form", form_name(op, form)),
            have: db.coverage_list(),
        });
    };
    let configs: Vec<Config> = cov
        .configs
        .iter()
        .filter(|c| catalog.freshness(&c.family, &c.checksum) == Freshness::Current)
        .filter(|c| computes(c))
        .map(|c| Config {
            family: c.family.clone(),
            params: c.params.clone(),
        })
        .collect();
    if configs.is_empty() {
        return Err(CoverError::NoPortfolio {
            gpu: gpu.to_string(),
            what: format!(
                "a {} coverage whose {} configs are all of families changed since or of families that do not compute the form",
                cov.describe(),
                cov.configs.len()
            ),
            have: cov.describe(),
        });
    }
    Ok(configs)
}

/// What a coverage run reports as it goes.
pub trait CoverProgress: Sync {
    /// One line of news.
    fn note(&self, line: &str);

    /// The record as measured so far, after each grid point: a caller that saves it keeps
    /// what a run cut short measured, and [`extend`] measures the rest.
    fn checkpoint(&self, _partial: &Coverage) {}
}

impl<F: Fn(&str) + Sync> CoverProgress for F {
    fn note(&self, line: &str) {
        self(line)
    }
}

/// A coverage record, and how busy the devices that measured it were.
#[derive(Debug, Clone)]
pub struct Covered {
    /// The record.
    pub coverage: Coverage,
    /// Per device, its busy time (pool searches and grid together).
    pub usage: Usage,
}

/// Runs the three steps on `devices` (one GPU model; each takes the next pool shape, then the
/// next grid point, when free) for `grid`, returning the coverage record of this GPU model.
/// Its `produced_by` names the first device.
pub fn cover(
    devices: &Devices,
    catalog: &Catalog,
    cache: &nvrtc::Cache,
    grid: &Grid,
    opts: &CoverOptions,
    progress: &dyn CoverProgress,
) -> Result<Covered, CoverError> {
    let op = grid.op;
    let info = devices.info();
    nvrtc::check_arch(info.arch)?;
    // Only the families that compute the grid's form search and seed the portfolio.
    let families = families_for(catalog, op, &grid.form, &opts.families)?;
    let seeds: Vec<Config> = opts
        .seeds
        .iter()
        .filter(|c| families.contains(&c.family))
        .cloned()
        .collect();
    // Seeds that fill the portfolio leave the pool searches nothing to choose.
    let pool_shapes = if seeds.len() >= opts.portfolio {
        progress.note(&format!(
            "{} seeds fill the portfolio of {}: no pool search",
            seeds.len(),
            opts.portfolio
        ));
        Vec::new()
    } else {
        grid.pool()
    };
    let searched = AtomicUsize::new(0);
    let search = |dev: &mut Device, &shape: &Shape| -> Result<Vec<(Config, f64)>, CoverError> {
        let mut strategy = crate::search::by_name("model-guided", opts.seed)?;
        let topts = TuneOptions {
            seed: opts.seed,
            timing: opts.timing,
            families: families.clone(),
            budget: Some(opts.pool_budget),
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
        .map_err(|source| CoverError::Tune {
            shape: shape.label(op),
            source: Box::new(source),
        })?;
        let measured: Vec<(Config, f64)> = report
            .results
            .iter()
            .filter_map(|r| {
                r.median_ms().map(|t| {
                    (
                        Config {
                            family: r.family.clone(),
                            params: r.params.clone(),
                        },
                        t,
                    )
                })
            })
            .collect();
        let best = measured
            .iter()
            .map(|(_, t)| *t)
            .fold(f64::INFINITY, f64::min);
        progress.note(&format!(
            "pool {}/{}: {op} {} on device {}: {} configs timed, best {:.4} ms, cuBLAS {:.4} ms",
            searched.fetch_add(1, Ordering::Relaxed) + 1,
            pool_shapes.len(),
            shape.label(op),
            dev.info.ordinal,
            measured.len(),
            best,
            report.baseline.median_ms
        ));
        Ok(measured)
    };
    let (pool, mut usage) = devices.run(&pool_shapes, &|dev| Ok(dev), &search)?;
    let portfolio = choose_portfolio(&seeds, &pool, opts.portfolio);
    if portfolio.is_empty() {
        return Err(CoverError::EmptyPool(op));
    }
    progress.note(&format!("portfolio: {} configs", portfolio.len()));
    for c in &portfolio {
        progress.note(&format!(
            "  {} {}",
            c.family,
            crate::family::space::params_label(&c.params)
        ));
    }
    let configs = coverage_configs(catalog, &portfolio);
    let record = Coverage {
        gpu: info.name.clone(),
        op,
        form: grid.form,
        date: utc_now_rfc3339(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        seed: opts.seed,
        produced_by: Some(Producer {
            host: crate::provenance::this_host(),
            device: info.ordinal as u32,
            pci_bus_id: info.pci_bus_id.clone(),
            uuid: info.uuid.clone(),
            shard: None,
        }),
        configs,
        points: Vec::new(),
    };
    let mut covered = measure_grid(
        devices,
        catalog,
        cache,
        &grid.shapes(),
        record,
        &portfolio,
        opts,
        progress,
    )?;
    usage.add(covered.usage);
    covered.usage = usage;
    Ok(covered)
}

/// Adds the shapes of `grid` that `base` lacks to `base` (a coverage of this GPU, of the grid's
/// form), timing its portfolio there: the portfolio and the points it has stay, so a grid can
/// grow (e.g. by shapes of another kind) without a new pool search. Every config of `base` must
/// be current (its family unchanged since), or the old and new times would be of different
/// kernels.
pub fn extend(
    devices: &Devices,
    catalog: &Catalog,
    cache: &nvrtc::Cache,
    grid: &Grid,
    base: &Coverage,
    opts: &CoverOptions,
    progress: &dyn CoverProgress,
) -> Result<Covered, CoverError> {
    let op = grid.op;
    nvrtc::check_arch(devices.info().arch)?;
    if base.form != grid.form {
        return Err(CoverError::OtherForm {
            coverage: base.describe(),
            grid: form_name(op, &grid.form),
        });
    }
    check_current(catalog, base)?;
    let have = base.point_shapes();
    let shapes: Vec<Shape> = grid
        .shapes()
        .into_iter()
        .filter(|s| !have.contains(s))
        .collect();
    let portfolio: Vec<Config> = base
        .configs
        .iter()
        .map(|c| Config {
            family: c.family.clone(),
            params: c.params.clone(),
        })
        .collect();
    progress.note(&format!(
        "extending {} ({} points) by {} new grid shapes",
        base.describe(),
        base.points.len(),
        shapes.len()
    ));
    let mut record = base.clone();
    record.date = utc_now_rfc3339();
    record.tool_version = env!("CARGO_PKG_VERSION").to_string();
    measure_grid(
        devices, catalog, cache, &shapes, record, &portfolio, opts, progress,
    )
}

/// Fails when a config of `base` is of a family changed since it was measured: times of the
/// old and the new kernel would sit side by side.
fn check_current(catalog: &Catalog, base: &Coverage) -> Result<(), CoverError> {
    match base
        .configs
        .iter()
        .find(|c| catalog.freshness(&c.family, &c.checksum) != Freshness::Current)
    {
        Some(stale) => Err(CoverError::Stale {
            coverage: base.describe(),
            family: stale.family.clone(),
        }),
        None => Ok(()),
    }
}

/// The portfolio as a coverage record lists it: each config with its family's checksum.
fn coverage_configs(catalog: &Catalog, portfolio: &[Config]) -> Vec<CoverageConfig> {
    portfolio
        .iter()
        .map(|c| CoverageConfig {
            family: c.family.clone(),
            params: c.params.clone(),
            checksum: catalog
                .get(&c.family)
                .map(|f| f.checksum.clone())
                .unwrap_or_default(),
        })
        .collect()
}

/// Times every `portfolio` config on every shape (0 where it fails), beside cuBLAS, adding a
/// point to `record` per shape ([`CoverProgress::checkpoint`] after each), the shapes spread
/// over `devices`; the points end in the shapes' order.
#[allow(clippy::too_many_arguments)]
fn measure_grid(
    devices: &Devices,
    catalog: &Catalog,
    cache: &nvrtc::Cache,
    shapes: &[Shape],
    record: Coverage,
    portfolio: &[Config],
    opts: &CoverOptions,
    progress: &dyn CoverProgress,
) -> Result<Covered, CoverError> {
    let op = record.op;
    let kept = record.points.len();
    let record = Mutex::new(record);
    let measured = AtomicUsize::new(0);
    let point = |dev: &mut Device, &shape: &Shape| -> Result<(), CoverError> {
        let run_err = |source| CoverError::Run {
            shape: shape.label(op),
            source,
        };
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
        // A config that fails here is recorded as 0: the predictor never uses it nearby.
        let ms: Vec<f64> = eval
            .time_configs(dev, catalog, cache, shape, portfolio, cublas_error.max)
            .map_err(run_err)?
            .into_iter()
            .map(|t| t.unwrap_or(0.0))
            .collect();
        let best = ms
            .iter()
            .copied()
            .filter(|t| *t > 0.0)
            .fold(f64::INFINITY, f64::min);
        progress.note(&format!(
            "grid {}/{}: {op} {} on device {}: best {:.4} ms, cuBLAS {:.4} ms ({:.3}x)",
            measured.fetch_add(1, Ordering::Relaxed) + 1,
            shapes.len(),
            shape.label(op),
            dev.info.ordinal,
            best,
            cublas.median_ms,
            cublas.median_ms / best
        ));
        let mut rec = record.lock().unwrap_or_else(|p| p.into_inner());
        let label = point_label(op, &rec.form, shape);
        rec.points.push(CoveragePoint {
            shape: label,
            cublas_ms: cublas.median_ms,
            ms,
        });
        progress.checkpoint(&rec);
        Ok(())
    };
    let (_, usage) = devices.run(shapes, &|dev| Ok(dev), &point)?;
    let mut coverage = record.into_inner().unwrap_or_else(|p| p.into_inner());
    // The new points in the grid's order, whichever device measured them first.
    let form = coverage.form;
    let order = |label: &str| {
        shapes
            .iter()
            .position(|s| point_label(op, &form, *s) == label)
            .unwrap_or(usize::MAX)
    };
    coverage.points[kept..].sort_by_key(|p| order(&p.shape));
    Ok(Covered { coverage, usage })
}

/// A grid point's label in a record of `form`: its dimensions (the record's form applies to
/// every point), and its batch count where it is not the record's (a batched grid measuring
/// several, [`Grid::batches`]).
fn point_label(op: Op, form: &Form, shape: Shape) -> String {
    let dims = shape.dims().label(op);
    if shape.form.batch == form.batch {
        dims
    } else {
        format!("{dims}:b{}", shape.form.batch)
    }
}

#[cfg(test)]
mod tests;
