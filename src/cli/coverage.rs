//! `autotune cover` (measure a coverage grid) and `autotune evaluate` (what a product gets on
//! shapes nobody tuned).

use anyhow::{bail, Context, Result};
use autotune::cuda::cublas_lib;
use autotune::cuda::device::Device;
use autotune::cuda::nvrtc::{self, DiskCache};
use autotune::db::{Coverage, Database, GpuRecord};
use autotune::family::catalog::Catalog;
use autotune::problem::{Form, Op};
use autotune::product::select::{Holdout, Selector};
use autotune::tuning::cover::{self, CoverOptions, Grid};
use autotune::tuning::workload::Summary;
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
    #[command(flatten)]
    run: super::RunArgs,
    /// Do not write the database.
    #[arg(long)]
    no_save: bool,
    /// Keep this GPU's coverage in the database and its portfolio, and add the shapes of the
    /// grid it lacks (e.g. --grid configs/coverage/gemm-unaligned.toml): no pool search.
    #[arg(long)]
    extend: bool,
    /// No GPU: print the leave-one-out check of the coverage the database holds for --gpu (of
    /// the form --layout, --beta, --alpha, --padded, --batch give; default plain).
    #[arg(long, requires = "gpu")]
    loo: bool,
    /// The GPU whose coverage --loo checks, as the database names it.
    #[arg(long)]
    gpu: Option<String>,
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
        return print_loo(&db, &catalog, &gpu, op, &form_of(Form::PLAIN)?);
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
    let dev = Device::open(a.run.device)?;
    // Read once before the run: the coverage to extend and the winners that seed the portfolio.
    let before = Database::load(&a.db)?;
    let base = if a.extend {
        match before.coverage(&dev.info.name, op, &grid.form) {
            Some(c) => Some(c.clone()),
            None => bail!(
                "--extend: {} has no {op}{tags} coverage for {} to extend: run `autotune cover --op {op}` (with the same --layout, --beta, --alpha, --padded, --batch) first",
                a.db.display(),
                dev.info.name
            ),
        }
    } else {
        None
    };
    // This GPU's winners of exhaustive tunes seed the portfolio (those of the grid's form
    // first, then the fastest; current only, of families that compute the form).
    let seeds = cover::portfolio_seeds(
        &before,
        &catalog,
        &dev.info.name,
        op,
        &grid.form,
        a.portfolio as usize / 3,
    );
    eprintln!(
        "cover: {op}{tags} on {} ({}), {} grid shapes, {} pool shapes, portfolio of {} ({} seeded by this GPU's tuned winners); baseline cuBLAS {}",
        dev.info.name,
        dev.info.arch,
        grid.shapes().len(),
        grid.pool().len(),
        a.portfolio,
        seeds.len(),
        cublas_lib::describe()?
    );
    let opts = CoverOptions {
        seed: a.seed,
        timing: CoverOptions::timing(),
        pool_budget: a.pool_budget as usize,
        portfolio: a.portfolio as usize,
        seeds,
        families: a.families.clone(),
        isolation: a.run.isolation()?,
        disk_cache: DiskCache::user_default(),
    };
    let cache = nvrtc::Cache::new();
    let start = std::time::Instant::now();
    let rec = dev.info.record(&nvrtc::nvrtc_version()?);
    let progress = Checkpoints {
        db: (!a.no_save).then_some(a.db.as_path()),
        gpu: &rec,
        last: std::sync::Mutex::new(start),
    };
    let cov = match &base {
        Some(base) => cover::extend(&dev, &catalog, &cache, &grid, base, &opts, &progress)?,
        None => cover::cover(&dev, &catalog, &cache, &grid, &opts, &progress)?,
    };
    eprintln!("cover: measured in {:.1} s", start.elapsed().as_secs_f64());
    let db = save(a, rec, cov)?;
    print_loo(&db, &catalog, &dev.info.name, op, &grid.form)
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

/// The database with the GPU's record and its new coverage: written to --db, or (--no-save)
/// only in memory.
fn save(a: &CoverArgs, rec: GpuRecord, cov: Coverage) -> Result<Database> {
    if a.no_save {
        let mut db = Database::load(&a.db)?;
        db.upsert_gpu(rec);
        db.upsert_coverage(cov);
        return Ok(db);
    }
    let db = Database::update_file(&a.db, |db| {
        db.upsert_gpu(rec);
        db.upsert_coverage(cov);
        Ok(())
    })?;
    eprintln!("cover: saved to {}", a.db.display());
    Ok(db)
}

/// How often a coverage run saves the points measured so far.
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_secs(20);

/// Prints a run's news, and saves its record to the database every [`CHECKPOINT_EVERY`], so
/// a run cut short (a time limit, a lost machine) keeps what it measured: `cover --extend`
/// with the same flags measures the rest.
struct Checkpoints<'a> {
    /// The database to save to (`None`: --no-save).
    db: Option<&'a std::path::Path>,
    gpu: &'a autotune::db::GpuRecord,
    last: std::sync::Mutex<std::time::Instant>,
}

impl cover::CoverProgress for Checkpoints<'_> {
    fn note(&self, line: &str) {
        eprintln!("{line}");
    }

    fn checkpoint(&self, partial: &autotune::db::Coverage) {
        let Some(db) = self.db else {
            return;
        };
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() < CHECKPOINT_EVERY {
            return;
        }
        *last = std::time::Instant::now();
        let saved = Database::update_file(db, |d| {
            d.upsert_gpu(self.gpu.clone());
            d.upsert_coverage(partial.clone());
            Ok(())
        });
        match saved {
            Ok(_) => eprintln!(
                "cover: {} points saved to {} (a run cut short goes on with --extend)",
                partial.points.len(),
                db.display()
            ),
            // The run goes on; the final save reports the error if it persists.
            Err(e) => eprintln!("cover: could not save the points so far: {e:#}"),
        }
    }
}

fn summary_line(what: &str, values: &[f64]) -> String {
    match Summary::of(values) {
        Some(s) => format!(
            "{what}: geomean {:.3}, p10 {:.3}, median {:.3}, p90 {:.3}, min {:.3}, max {:.3}, {:.1}% >= 1",
            s.geomean,
            s.p10,
            s.median,
            s.p90,
            s.min,
            s.max,
            100.0 * s.share_at_least_one
        ),
        None => format!("{what}: no values"),
    }
}

/// Prints how well the coverage of `gpu` for problems of `form` predicts each of its own grid
/// points from the others.
fn print_loo(db: &Database, catalog: &Catalog, gpu: &str, op: Op, form: &Form) -> Result<()> {
    let tags = form.tags(op);
    let Some(cov) = db.coverage(gpu, op, form) else {
        let have: Vec<String> = db.coverage.iter().map(|c| c.describe()).collect();
        bail!(
            "the database has no {op}{tags} coverage for '{gpu}' (it has: {}): run `autotune cover --op {op}` (with --layout, --beta, --alpha, --padded, --batch for another form) on that GPU",
            if have.is_empty() { "none".to_string() } else { have.join(", ") }
        );
    };
    let Some(rec) = db.gpu(gpu) else {
        bail!("the database has coverage but no [[gpu]] record for '{gpu}'");
    };
    let sel = Selector::new(cov, rec, catalog)?;
    let loo: Vec<Holdout> = sel.leave_one_out();
    println!(
        "leave-one-out on {} grid points of {gpu} {op}{tags} ({} of {} configs usable):",
        loo.len(),
        sel.usable(),
        cov.configs.len()
    );
    let col = |f: fn(&Holdout) -> f64| loo.iter().map(f).collect::<Vec<f64>>();
    println!(
        "  {}",
        summary_line("regret (chosen / portfolio best)", &col(|h| h.regret))
    );
    println!(
        "  {}",
        summary_line("x cuBLAS, no guard", &col(|h| h.vs_cublas))
    );
    println!(
        "  {}",
        summary_line("x cuBLAS, vendor guard", &col(|h| h.guarded_vs_cublas))
    );
    println!(
        "  {}",
        summary_line(
            "x cuBLAS, oracle (portfolio best)",
            &col(|h| h.best_vs_cublas)
        )
    );
    let mut worst: Vec<&Holdout> = loo.iter().collect();
    worst.sort_by(|a, b| a.guarded_vs_cublas.total_cmp(&b.guarded_vs_cublas));
    if worst.first().is_none_or(|h| h.guarded_vs_cublas >= 1.0) {
        println!("  with the guard, no grid point runs slower than cuBLAS");
        return Ok(());
    }
    println!("  where the guard errs most (shape: x cuBLAS with the guard, predicted, regret):");
    for h in worst.iter().take(8).filter(|h| h.guarded_vs_cublas < 1.0) {
        println!(
            "    {}: {:.3} (predicted {:.3}), regret {:.3}",
            h.shape.label(op),
            h.guarded_vs_cublas,
            h.predicted_vs_cublas,
            h.regret
        );
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
    #[command(flatten)]
    run: super::RunArgs,
    /// Write the per-shape table and the summaries as Markdown to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write every measurement as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// No GPU: re-score the measurements of an earlier run (its --json file) under the rules
    /// and database of today, to compare a changed selection on the same numbers. Shapes where
    /// a rule now picks a config that run never timed are left out of the summaries.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["random", "shapes", "tune_budget", "quick", "in_process"])]
    rescore: Option<PathBuf>,
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
    if let Some(path) = &a.rescore {
        return rescore(a, path, &db, &catalog);
    }
    let dev = Device::open(a.run.device)?;
    let (op, problems) = match (&a.shapes, a.random) {
        (Some(path), _) => workload::from_suite(path)?,
        (None, Some(count)) => {
            let op: Op = a.op.parse()?;
            let gpu = dev.info.name.clone();
            // Shapes this GPU was tuned on, or that its coverage grid measured, are not drawn.
            let tuned = |s: &autotune::problem::Shape| db.measured(&gpu, op, *s);
            let forms = a.forms.unwrap_or_default();
            let drawn = workload::random_problems_in(op, forms, count, a.seed, &tuned)?;
            (op, drawn)
        }
        (None, None) => bail!("give --random N or --shapes FILE"),
    };
    let tuned = autotune::Tuned::new(&dev.ctx, db.clone())?.quiet();
    eprintln!(
        "evaluate: {op}, {} shapes on {} ({}), database {}{}; baseline cuBLAS {}",
        problems.len(),
        dev.info.name,
        dev.info.arch,
        a.db.display(),
        if db
            .coverage
            .iter()
            .any(|c| c.gpu == dev.info.name && c.op == op)
        {
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
    let evals = ev::evaluate(&dev, &tuned, &catalog, &cache, op, &problems, &opts, &|l| {
        eprintln!("{l}")
    })?;
    let source = format!(
        "{} shapes ({}), seed {}, database `{}`; x cuBLAS is cuBLAS's time over what the product gets, measured in the same process.",
        evals.len(),
        match &a.shapes {
            Some(p) => format!("from {}", p.display()),
            None => format!(
                "random, {} forms, none tuned on this GPU",
                a.forms.unwrap_or_default()
            ),
        },
        a.seed,
        a.db.display(),
    );
    report(a, op, &dev.info.name, a.seed, &evals, &source)
}

/// `autotune evaluate --rescore FILE`: an earlier run's measurements under today's rules.
fn rescore(
    a: &EvaluateArgs,
    path: &std::path::Path,
    db: &Database,
    catalog: &Catalog,
) -> Result<()> {
    use autotune::tuning::rescore::{rescore, Recorded};
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the recorded evaluation {}", path.display()))?;
    let rec: Recorded = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not an evaluation written by `autotune evaluate --json`",
            path.display()
        )
    })?;
    let evals = rescore(db, catalog, &rec)?;
    let left_out = evals
        .iter()
        .filter(|e| e.chosen.iter().any(|c| !c.measured))
        .count();
    let source = format!(
        "{} shapes re-scored without a GPU from the measurements of `{}` (seed {}) under the rules of this build and database `{}`; on {left_out} a policy now picks a config that run did not time, and that policy's summary leaves them out.",
        evals.len(),
        path.display(),
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
    use autotune::report::Table;
    use autotune::tuning::evaluate as ev;
    let mut table = Table::new(
        &[
            "shape",
            "kind",
            "runtime's choice",
            "x cuBLAS",
            "no guard",
            "before",
            "regret",
            "choice regret",
        ],
        &[true, true, true],
    );
    for e in evals {
        let c = &e.chosen[0];
        let what = if c.vendor {
            format!("cuBLAS (guard; else {})", c.family)
        } else {
            format!(
                "{}: {} {}",
                c.rule,
                c.family,
                autotune::family::space::params_label(&c.params)
            )
        };
        table.row(vec![
            e.label.clone(),
            e.kind.clone(),
            what,
            format!("{:.3}", c.vs_cublas(e.cublas_ms)),
            format!("{:.3}", e.chosen[1].vs_cublas(e.cublas_ms)),
            format!("{:.3}", e.chosen[2].vs_cublas(e.cublas_ms)),
            e.regret().map_or("-".into(), |r| format!("{r:.3}")),
            e.choice_regret().map_or("-".into(), |r| format!("{r:.3}")),
        ]);
    }
    let (policies, regret) = ev::summarize(evals);
    let mut sums = Table::new(
        &[
            "policy",
            "shapes",
            "geomean x cuBLAS",
            "p10",
            "median",
            "worst",
            ">= 1.0x",
            "rules",
        ],
        &[true],
    );
    for p in &policies {
        let rules: Vec<String> = p.rules.iter().map(|(r, n)| format!("{r}: {n}")).collect();
        match &p.vs_cublas {
            Some(s) => sums.row(vec![
                p.policy.clone(),
                s.count.to_string(),
                format!("{:.3}", s.geomean),
                format!("{:.3}", s.p10),
                format!("{:.3}", s.median),
                format!("{:.3}", s.min),
                format!("{:.1}%", 100.0 * s.share_at_least_one),
                rules.join(", "),
            ]),
            None => sums.row(vec![
                p.policy.clone(),
                "0".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                rules.join(", "),
            ]),
        }
    }
    // The runtime's x cuBLAS per kind and per layout, and how many shapes have each form.
    let mut groups: Vec<(String, Vec<f64>)> = Vec::new();
    let runtime = |e: &ev::ShapeEval| e.chosen[0].vs_cublas(e.cublas_ms).max(1e-3);
    for e in evals.iter().filter(|e| e.chosen[0].measured) {
        let layout = format!("layout {}", e.shape.form.layout.name(op));
        for group in [format!("kind {}", e.kind), layout] {
            match groups.iter_mut().find(|(g, _)| *g == group) {
                Some((_, v)) => v.push(runtime(e)),
                None => groups.push((group, vec![runtime(e)])),
            }
        }
    }
    groups.sort_by(|x, y| x.0.cmp(&y.0));
    let mut by = Table::new(
        &[
            "kind / layout",
            "shapes",
            "runtime geomean x cuBLAS",
            "worst",
        ],
        &[true],
    );
    for (group, values) in &groups {
        let s = Summary::of(values);
        by.row(vec![
            group.clone(),
            values.len().to_string(),
            s.map_or("-".into(), |s| format!("{:.3}", s.geomean)),
            s.map_or("-".into(), |s| format!("{:.3}", s.min)),
        ]);
    }
    let forms = format!(
        "forms: {}",
        autotune::tuning::workload::form_counts(op, evals.iter().map(|e| &e.shape))
    );
    let line = |what: &str, r: &Option<Summary>| match r {
        Some(r) => format!(
            "{what} ({} shapes): geomean {:.3}, median {:.3}, p90 {:.3}, worst {:.3}",
            r.count, r.geomean, r.median, r.p90, r.max
        ),
        None => format!("{what}: not measured (give --tune-budget N)"),
    };
    let regret_line = format!(
        "{}\n{}",
        line("regret of the runtime's kernel (its time / the best kernel found)", &regret[0]),
        line(
            "regret of the runtime's choice (what it runs, cuBLAS where guarded / the best of the kernels found and cuBLAS)",
            &regret[1]
        )
    );
    println!("{}", table.render());
    println!("summary ({op}, {} shapes, {gpu}):", evals.len());
    println!("{}", sums.render());
    println!("{regret_line}");
    println!("{forms}");
    println!("{}", by.render());
    if let Some(path) = &a.out {
        let text = format!(
            "# evaluate: {op} on {gpu}\n\n{source}\n\n{}\n{}\n{regret_line}\n\n## By kind and layout\n\n{forms}\n\n{}\n## Per shape\n\n{}",
            sums.markdown(),
            "",
            by.markdown(),
            table.markdown()
        );
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &a.json {
        let v = serde_json::json!({ "gpu": gpu, "op": op, "seed": seed, "shapes": evals, "policies": policies, "regret": regret });
        std::fs::write(path, serde_json::to_string_pretty(&v)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
