//! `autotune cover` (measure a coverage grid) and `autotune evaluate` (what a product gets on
//! shapes nobody tuned).

use anyhow::{bail, Context, Result};
use autotune::cuda::cublas_lib;
use autotune::cuda::nvrtc::{self, DiskCache};
use autotune::db::Database;
use autotune::family::catalog::Catalog;
use autotune::problem::{Form, Op};
use autotune::tuning::cover::{self, CoverOptions, Grid};
use autotune::tuning::devices::Devices;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub(super) struct CoverArgs {
    /// The op: gemm or gemv.
    #[arg(long, default_value = "gemm")]
    op: String,
    /// The grid file (default: the built-in configs/coverage/<op>-<layout>.toml where the
    /// layout has one, gemm-nt.toml; else for another form than the plain one
    /// configs/coverage/<op>-forms.toml where the op has one; else configs/coverage/<op>.toml).
    #[arg(long)]
    grid: Option<PathBuf>,
    /// Operand layouts of every grid problem, as the tuning command takes them: nn, nt, tn,
    /// tt (gemv: n or t). Default: the grid file's `form` (plain for gemm.toml). The coverage
    /// predicts for problems of the layout, beta and batch measured (of any alpha; a packed
    /// grid serves padded rows too).
    #[arg(long)]
    layout: Option<String>,
    /// Strided batch of every grid problem: this many products per call (default the grid's,
    /// 1).
    #[arg(long)]
    batch: Option<u64>,
    /// Beta of every grid problem: any non-zero value measures the beta != 0 form.
    #[arg(long)]
    beta: Option<f64>,
    /// Alpha of every grid problem: any value but 1 measures the scaled form (only the
    /// families of the full interface take alpha; the grid serves problems of any alpha).
    #[arg(long)]
    alpha: Option<f64>,
    /// Padded leading dimensions for every grid problem.
    #[arg(long)]
    padded: bool,
    /// No GPU: print the grid's shapes (pool shapes marked) and the families that compute its
    /// form, then stop.
    #[arg(long, conflicts_with_all = ["loo", "extend"])]
    dry_run: bool,
    /// Configs in the portfolio: this GPU's tuned winners of the op first, then the pool's.
    #[arg(long, default_value_t = 28, value_parser = clap::value_parser!(u64).range(1..=256))]
    portfolio: u64,
    /// Measure the portfolio of this GPU's coverage of the same op and form (a GPU the
    /// database names, e.g. one of the same arch; for a batched form it has no coverage of,
    /// its record of the same layout and beta unbatched, of any alpha, with the most configs
    /// that compute batches, those configs only): no pool search, the grid alone.
    #[arg(long, value_name = "GPU", conflicts_with_all = ["portfolio", "extend", "add_winners", "loo"])]
    portfolio_from: Option<String>,
    /// Evaluations of each pool search.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..))]
    pool_budget: u64,
    /// The tuning database the coverage is written to (replacing this GPU's for the op and
    /// form).
    #[arg(long, default_value = "results/tuning.toml")]
    db: PathBuf,
    /// Seed of the inputs and the pool searches.
    #[arg(long, default_value_t = 0x5EED, value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64))]
    seed: u64,
    /// Only these families (repeatable).
    #[arg(long = "family")]
    families: Vec<String>,
    /// Measure on several GPUs of one model at once: `0,1` or `all`. They share one work
    /// queue: each takes the next pool shape, then the next grid point, when it is free.
    #[arg(long, conflicts_with = "device")]
    devices: Option<String>,
    #[command(flatten)]
    run: super::RunArgs,
    /// Do not write the database.
    #[arg(long)]
    no_save: bool,
    /// Keep this GPU's coverage in the database and its portfolio, and add the shapes of the
    /// grid it lacks (e.g. --grid configs/coverage/gemm-unaligned.toml): no pool search.
    #[arg(long)]
    extend: bool,
    /// Keep this GPU's coverage in the database (of the form the flags give) and add up to N
    /// of this GPU's tuned winners its portfolio lacks (of --family when named; those tuned on
    /// the form first, then the fastest over cuBLAS), each timed on every grid point beside
    /// cuBLAS: no pool search, no new shapes. How new families reach shapes nobody tuned.
    #[arg(long, value_name = "N", conflicts_with_all = ["extend", "dry_run", "loo"],
          value_parser = clap::value_parser!(u64).range(1..=256))]
    add_winners: Option<u64>,
    /// No GPU: print the leave-one-out check of the coverage the database holds for --gpu (of
    /// the form --layout, --beta, --alpha, --padded, --batch give; default plain).
    #[arg(long, requires = "gpu")]
    loo: bool,
    /// The GPU whose coverage --loo checks, as the database names it.
    #[arg(long)]
    gpu: Option<String>,
    /// With --loo: print every grid point's check as JSON (its shape, the regret, x cuBLAS
    /// with and without the guard, and the guard's evidence) instead of the summary.
    #[arg(long, requires = "loo")]
    json: bool,
}

/// `autotune cover`.
pub(super) fn cover(a: &CoverArgs) -> Result<()> {
    let op: Op = a.op.parse()?;
    let catalog = Catalog::builtin().context("loading the built-in kernel families")?;
    // The flags override the grid's form, part by part, as they override a shape's tags.
    let form_of = |base: Form| -> Result<Form> {
        let mut form =
            super::tuning::form_flags(op, base, a.layout.as_deref(), a.batch, a.beta, a.padded)?;
        if let Some(alpha) = a.alpha {
            if !alpha.is_finite() {
                bail!("--alpha {alpha}: give a finite number (1: the products are not scaled)");
            }
            form.scaled = alpha != 1.0;
        }
        Ok(form)
    };
    if a.loo {
        let db = Database::load_existing(&a.db)?;
        let query = a.gpu.as_deref().unwrap_or_default();
        let gpu = autotune::report::gpus::resolve_gpu(&db, &a.db.display().to_string(), query)?;
        let loo = cover::loo::leave_one_out(&db, &catalog, &gpu, op, &form_of(Form::PLAIN)?)?;
        if a.json {
            println!("{}", serde_json::to_string_pretty(&loo.holdouts)?);
        } else {
            print!("{}", loo.text());
        }
        return Ok(());
    }
    let grid = match &a.grid {
        Some(p) => {
            let mut g = Grid::load(p)?;
            if g.op != op {
                bail!("the grid is for {}, not {op}: pass --op {}", g.op, g.op);
            }
            g.form = form_of(g.form)?;
            g.check_form(&p.display().to_string())?;
            g
        }
        None => Grid::builtin_for(op, form_of(Form::PLAIN)?)?,
    };
    let tags = grid.form.tags(op);
    if a.dry_run {
        return print_grid(&catalog, op, &grid, &a.families);
    }
    if !a.no_save {
        Database::check_writable(&a.db)?;
    }
    let devices = Devices::open(&super::parse_devices(a.devices.as_deref(), a.run.device)?)?;
    let info = devices.info();
    // Read once before the run: the coverage to extend and the winners that seed the portfolio.
    let before = Database::load(&a.db)?;
    let base = if a.extend || a.add_winners.is_some() {
        let flag = if a.extend {
            "--extend"
        } else {
            "--add-winners"
        };
        match before.coverage(&info.name, op, &grid.form) {
            Some(c) => Some(c.clone()),
            None => bail!(
                "{flag}: {} has no {op}{tags} coverage for {} to add to: run `autotune cover --op {op}` (with the same --layout, --beta, --alpha, --padded, --batch) first",
                a.db.display(),
                info.name
            ),
        }
    } else {
        None
    };
    let added = match (&base, a.add_winners) {
        (Some(base), Some(n)) => {
            let add = cover::winners_to_add(&before, &catalog, base, &a.families, n as usize);
            if add.is_empty() {
                let of = if a.families.is_empty() {
                    String::new()
                } else {
                    format!(" of {}", a.families.join(", "))
                };
                bail!(
                    "--add-winners: {} already has every current tuned winner{of} that computes its form and may serve its shapes untuned (the family's untuned_constraints): tune more problems of {op}{tags} first (autotune tune)",
                    base.describe()
                );
            }
            add
        }
        _ => Vec::new(),
    };
    // This GPU's winners of exhaustive tunes seed the portfolio (those of the grid's form
    // first, then the fastest; current only, of families that compute the form), or another
    // GPU's portfolio is the whole of it.
    let (seeds, portfolio) = match &a.portfolio_from {
        Some(query) => {
            let from =
                autotune::report::gpus::resolve_gpu(&before, &a.db.display().to_string(), query)?;
            let configs = cover::portfolio_of(&before, &catalog, &from, op, &grid.form)?;
            eprintln!(
                "cover: the portfolio of {from}'s {op}{tags} coverage, {} configs: no pool search",
                configs.len()
            );
            let n = configs.len();
            (configs, n)
        }
        None => {
            let seeds = cover::portfolio_seeds(
                &before,
                &catalog,
                &info.name,
                op,
                &grid.form,
                a.portfolio as usize / 3,
            );
            (seeds, a.portfolio as usize)
        }
    };
    if added.is_empty() {
        eprintln!(
            "cover: {op}{tags} on {} ({}, device(s) {:?}), {} grid shapes, {} pool shapes, portfolio of {portfolio} ({} seeded); baseline cuBLAS {}",
            info.name,
            info.arch,
            devices.ordinals(),
            grid.shapes().len(),
            grid.pool().len(),
            seeds.len(),
            cublas_lib::describe()?
        );
    } else {
        eprintln!(
            "cover: {op}{tags} on {} ({}, device(s) {:?}), adding {} of this GPU's tuned winners to its coverage; baseline cuBLAS {}",
            info.name,
            info.arch,
            devices.ordinals(),
            added.len(),
            cublas_lib::describe()?
        );
    }
    let opts = CoverOptions {
        seed: a.seed,
        timing: CoverOptions::timing(),
        pool_budget: a.pool_budget as usize,
        portfolio,
        seeds,
        families: a.families.clone(),
        isolation: a.run.isolation()?,
        disk_cache: DiskCache::user_default(),
    };
    let cache = nvrtc::Cache::new();
    let start = std::time::Instant::now();
    let rec = info.record(&nvrtc::nvrtc_version()?);
    let note = |line: &str| eprintln!("{line}");
    let progress = cover::Checkpoints::new((!a.no_save).then_some(a.db.as_path()), &rec, &note);
    let covered = match &base {
        Some(base) if !added.is_empty() => {
            cover::widen(&devices, &catalog, &cache, base, &added, &opts, &progress)?
        }
        Some(base) => cover::extend(&devices, &catalog, &cache, &grid, base, &opts, &progress)?,
        None => cover::cover(&devices, &catalog, &cache, &grid, &opts, &progress)?,
    };
    eprintln!("cover: measured in {:.1} s", start.elapsed().as_secs_f64());
    if devices.ordinals().len() > 1 {
        eprint!("{}", super::devices_summary(&covered.usage, &cache));
    }
    let db = cover::save(&a.db, !a.no_save, rec, covered.coverage)?;
    if !a.no_save {
        eprintln!("cover: saved to {}", a.db.display());
    }
    let loo = cover::loo::leave_one_out(&db, &catalog, &info.name, op, &grid.form)?;
    print!("{}", loo.text());
    Ok(())
}

/// `cover --dry-run`: the grid's shapes (pool shapes marked) and the families that compute
/// its form.
fn print_grid(catalog: &Catalog, op: Op, grid: &Grid, only: &[String]) -> Result<()> {
    let families = cover::families_for(catalog, op, &grid.form, only)?;
    let pool = grid.pool();
    let shapes = grid.shapes();
    println!(
        "cover --dry-run: {op}{} grid, {} shapes, {} pool shapes (*); families that compute the form: {}",
        grid.form.tags(op),
        shapes.len(),
        pool.len(),
        families.join(", ")
    );
    for s in &shapes {
        let mark = if pool.contains(s) { " *" } else { "" };
        println!("  {}{mark}", s.label(op));
    }
    Ok(())
}

#[derive(Debug, clap::Args)]
pub(super) struct EvaluateArgs {
    /// The op: gemm or gemv (a --shapes suite names its own).
    #[arg(long, default_value = "gemm")]
    op: String,
    /// Draw this many random shapes (log-uniform sizes, tiny M/N, tiny K, huge K, odd and
    /// prime sizes; with --forms all also layer calls X·Wᵀ), none of them tuned on this GPU.
    #[arg(long, conflicts_with = "shapes", required_unless_present_any = ["shapes", "rescore"])]
    random: Option<usize>,
    /// The forms of the --random shapes: all (each draws a layout, beta, padding, alpha and a
    /// batch; for gemm two in five are layer calls X·Wᵀ, NT) or plain (NN, packed, alpha 1,
    /// beta 0, one product: the draws of before, same seed same shapes). Default: all.
    #[arg(long, value_name = "all|plain", conflicts_with_all = ["shapes", "rescore"], value_parser = parse_forms)]
    forms: Option<autotune::tuning::workload::Forms>,
    /// Read the shapes from a suite file instead.
    #[arg(long)]
    shapes: Option<PathBuf>,
    /// Seed of the random shapes and of the inputs.
    #[arg(long, default_value_t = 2026, value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64))]
    seed: u64,
    /// The database a product ships.
    #[arg(long, default_value = "results/tuning.toml")]
    db: PathBuf,
    /// Also search each shape (model-guided, N evaluations) and time the coverage
    /// portfolio, to report the runtime's regret: its kernel's time over the best found.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    tune_budget: Option<u64>,
    /// Fewer timing samples.
    #[arg(long)]
    quick: bool,
    /// Measure on several GPUs of one model at once: `0,1` or `all`. They share one work
    /// queue: each takes the next problem when it is free.
    #[arg(long, conflicts_with = "device")]
    devices: Option<String>,
    #[command(flatten)]
    run: super::RunArgs,
    /// Write the per-shape table and the summaries as Markdown to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write every measurement as JSON to this file (one compact line; `--rescore` reads it).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Evaluate only part K of N of the shapes (`2/3`: the second third, in the order drawn),
    /// so that one evaluation can run as several shorter ones; `--rescore` reads the parts'
    /// --json files together.
    #[arg(long, value_name = "K/N", value_parser = parse_part)]
    part: Option<(usize, usize)>,
    /// No GPU: re-score the measurements of an earlier run (its --json file; several files:
    /// the parts of one run, or runs of one GPU and op, read as one) under the rules and
    /// database of today, to compare a changed selection on the same numbers. Shapes where a
    /// rule now picks a config that run never timed are left out of the summaries.
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with_all = ["random", "shapes", "tune_budget", "quick", "in_process", "part"])]
    rescore: Vec<PathBuf>,
}

/// `K/N` with 1 <= K <= N.
fn parse_part(text: &str) -> Result<(usize, usize), String> {
    let bad = || format!("'{text}': give the part as K/N, 1 <= K <= N (e.g. 1/2)");
    let (k, n) = text.split_once('/').ok_or_else(bad)?;
    let k: usize = k.trim().parse().map_err(|_| bad())?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    if k == 0 || k > n {
        return Err(bad());
    }
    Ok((k, n))
}

/// Part `k` of `n` of `items`: the `k`-th of `n` runs in order, as even as they can be.
fn part_of<T>(items: Vec<T>, (k, n): (usize, usize)) -> Vec<T> {
    let len = items.len();
    let (start, end) = ((k - 1) * len / n, k * len / n);
    items.into_iter().skip(start).take(end - start).collect()
}

fn parse_forms(text: &str) -> Result<autotune::tuning::workload::Forms, String> {
    text.parse()
}

/// `autotune evaluate`.
pub(super) fn evaluate(a: &EvaluateArgs) -> Result<()> {
    use autotune::tuning::evaluate::{self as ev, EvaluateOptions};
    use autotune::tuning::workload;
    let db = Database::load_existing(&a.db)?;
    let catalog = Catalog::builtin().context("loading the built-in kernel families")?;
    if !a.rescore.is_empty() {
        return rescore(a, &a.rescore, &db, &catalog);
    }
    let devices = Devices::open(&super::parse_devices(a.devices.as_deref(), a.run.device)?)?;
    let info = devices.info();
    let (op, problems) = match (&a.shapes, a.random) {
        (Some(path), _) => workload::from_suite(path)?,
        (None, Some(count)) => {
            let op: Op = a.op.parse()?;
            let gpu = info.name.clone();
            // Shapes this GPU was tuned on, or that its coverage grid measured, are not drawn.
            let tuned = |s: &autotune::problem::Shape| db.measured(&gpu, op, *s);
            let forms = a.forms.unwrap_or_default();
            let drawn = workload::random_problems_in(op, forms, count, a.seed, &tuned)?;
            (op, drawn)
        }
        (None, None) => bail!("give --random N or --shapes FILE"),
    };
    let drawn = problems.len();
    let problems = match a.part {
        Some(part) => part_of(problems, part),
        None => problems,
    };
    eprintln!(
        "evaluate: {op}, {} shapes on {} ({}, device(s) {:?}), database {}{}; baseline cuBLAS {}",
        problems.len(),
        info.name,
        info.arch,
        devices.ordinals(),
        a.db.display(),
        if db.coverage.iter().any(|c| c.gpu == info.name && c.op == op) {
            " (with coverage)"
        } else {
            " (no coverage for this GPU: predictions fall back to the nearest tuned shape)"
        },
        cublas_lib::describe()?
    );
    let opts = EvaluateOptions {
        seed: a.seed,
        timing: if a.quick {
            autotune::measure::timing::TimingSettings::quick()
        } else {
            autotune::measure::timing::TimingSettings::default()
        },
        tune_budget: a.tune_budget.map(|b| b as usize),
        isolation: a.run.isolation()?,
        disk_cache: DiskCache::user_default(),
    };
    let cache = nvrtc::Cache::new();
    let (evals, usage) = ev::evaluate(
        &devices,
        &db,
        &catalog,
        &cache,
        op,
        &problems,
        &opts,
        &|l| eprintln!("{l}"),
    )?;
    if devices.ordinals().len() > 1 {
        eprint!("{}", super::devices_summary(&usage, &cache));
    }
    let source = format!(
        "{} shapes ({}{}), seed {}, database `{}`; x cuBLAS is cuBLAS's time over what the product gets, measured in the same process.",
        evals.len(),
        match &a.shapes {
            Some(p) => format!("from {}", p.display()),
            None => format!(
                "random, {} forms, none tuned on this GPU",
                a.forms.unwrap_or_default()
            ),
        },
        match a.part {
            Some((k, n)) => format!("; part {k} of {n} of the {drawn} drawn"),
            None => String::new(),
        },
        a.seed,
        a.db.display(),
    );
    report(a, op, &info.name, a.seed, &evals, &source)
}

/// `autotune evaluate --rescore FILE`: an earlier run's measurements under today's rules.
fn rescore(a: &EvaluateArgs, paths: &[PathBuf], db: &Database, catalog: &Catalog) -> Result<()> {
    use autotune::tuning::rescore::{rescore, Recorded};
    let mut parts = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the recorded evaluation {}", path.display()))?;
        let rec: Recorded = serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is not an evaluation written by `autotune evaluate --json`",
                path.display()
            )
        })?;
        parts.push(rec);
    }
    let Some(rec) = Recorded::join(parts)? else {
        bail!("give --rescore the --json file of an evaluation");
    };
    let evals = rescore(db, catalog, &rec)?;
    let left_out = evals
        .iter()
        .filter(|e| e.chosen.iter().any(|c| !c.measured))
        .count();
    let names: Vec<String> = paths.iter().map(|p| format!("`{}`", p.display())).collect();
    let source = format!(
        "{} shapes re-scored without a GPU from the measurements of {} (seed {}) under the rules of this build and database `{}`; on {left_out} a policy now picks a config that run did not time, and that policy's summary leaves them out.",
        evals.len(),
        names.join(", "),
        rec.seed,
        a.db.display(),
    );
    eprintln!("evaluate --rescore: {source}");
    report(a, rec.op, &rec.gpu, rec.seed, &evals, &source)
}

/// Prints an evaluation's per-shape table and summaries, and writes `--out` and `--json`.
fn report(
    a: &EvaluateArgs,
    op: Op,
    gpu: &str,
    seed: u64,
    evals: &[autotune::tuning::evaluate::ShapeEval],
    source: &str,
) -> Result<()> {
    let r = autotune::tuning::evaluate::report::render(op, gpu, seed, evals, source);
    print!("{}", r.text);
    if let Some(path) = &a.out {
        std::fs::write(path, &r.markdown).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &a.json {
        // Compact: a record for programs (`--rescore` reads it back; the Markdown is the one
        // to read), kept per seed and GPU, where indentation made a third of its size.
        std::fs::write(path, serde_json::to_string(&r.json)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
