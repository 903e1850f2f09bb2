//! `autotune cover` (measure a coverage grid) and `autotune evaluate` (what a product gets on
//! shapes nobody tuned).

use anyhow::{bail, Context, Result};
use autotune::cuda::device::Device;
use autotune::cuda::nvrtc::{self, DiskCache};
use autotune::db::Database;
use autotune::family::catalog::Catalog;
use autotune::problem::Op;
use autotune::product::select::{Holdout, Selector};
use autotune::tuning::cover::{self, CoverOptions, Grid};
use autotune::tuning::workload::Summary;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub(super) struct CoverArgs {
    /// The op: gemm or gemv.
    #[arg(long, default_value = "gemm")]
    op: String,
    /// The grid file (default: the built-in configs/coverage/<op>.toml).
    #[arg(long)]
    grid: Option<PathBuf>,
    /// Configs in the portfolio.
    #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u64).range(1..=256))]
    portfolio: u64,
    /// Evaluations of each pool search.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    pool_budget: u64,
    /// The tuning database the coverage is written to (replacing this GPU's for the op).
    #[arg(long, default_value = "results/tuning.toml")]
    db: PathBuf,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Seed of the inputs and the pool searches.
    #[arg(long, default_value_t = 0x5EED, value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64))]
    seed: u64,
    /// Only these families (repeatable).
    #[arg(long = "family")]
    families: Vec<String>,
    /// Run kernels in this process instead of worker processes: faster, but a faulting kernel
    /// ends the run.
    #[arg(long)]
    in_process: bool,
    /// Do not write the database.
    #[arg(long)]
    no_save: bool,
    /// No GPU: print the leave-one-out check of the coverage the database holds for --gpu.
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
    if a.loo {
        let db = Database::load_existing(&a.db)?;
        let gpu = a.gpu.as_deref().unwrap_or_default();
        return print_loo(&db, &catalog, gpu, op);
    }
    let grid = match &a.grid {
        Some(p) => Grid::load(p)?,
        None => Grid::builtin(op)?,
    };
    if grid.op != op {
        bail!(
            "the grid is for {}, not {op}: pass --op {}",
            grid.op,
            grid.op
        );
    }
    if !a.no_save {
        Database::check_writable(&a.db)?;
    }
    let dev = Device::open(a.device)?;
    eprintln!(
        "cover: {op} on {} ({}), {} grid shapes, {} pool shapes, portfolio of {}",
        dev.info.name,
        dev.info.arch,
        grid.shapes().len(),
        grid.pool().len(),
        a.portfolio
    );
    let opts = CoverOptions {
        seed: a.seed,
        timing: CoverOptions::timing(),
        pool_budget: a.pool_budget as usize,
        portfolio: a.portfolio as usize,
        families: a.families.clone(),
        isolation: super::tuning::worker_settings(a.in_process)?,
        disk_cache: DiskCache::user_default(),
    };
    let cache = nvrtc::Cache::new();
    let start = std::time::Instant::now();
    let cov = cover::cover(&dev, &catalog, &cache, &grid, &opts, &|line: &str| {
        eprintln!("{line}")
    })?;
    eprintln!("cover: measured in {:.1} s", start.elapsed().as_secs_f64());
    let rec = dev.info.record(&nvrtc::nvrtc_version()?);
    let db = if a.no_save {
        let mut db = Database::load(&a.db)?;
        db.upsert_gpu(rec);
        db.upsert_coverage(cov);
        db
    } else {
        let db = Database::update_file(&a.db, |db| {
            db.upsert_gpu(rec);
            db.upsert_coverage(cov);
            Ok(())
        })?;
        eprintln!("cover: saved to {}", a.db.display());
        db
    };
    print_loo(&db, &catalog, &dev.info.name, op)
}

fn summary_line(what: &str, values: &[f64]) -> String {
    match Summary::of(values) {
        Some(s) => format!(
            "{what}: geomean {:.3}, p10 {:.3}, median {:.3}, p90 {:.3}, min {:.3}, max {:.3}, {:.0}% >= 1",
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

/// Prints how well the coverage of `gpu` predicts each of its own grid points from the others.
fn print_loo(db: &Database, catalog: &Catalog, gpu: &str, op: Op) -> Result<()> {
    let Some(cov) = db.coverage(gpu, op) else {
        let have: Vec<String> = db.coverage.iter().map(|c| c.describe()).collect();
        bail!(
            "the database has no {op} coverage for '{gpu}' (it has: {}): run `autotune cover --op {op}` on that GPU",
            if have.is_empty() { "none".to_string() } else { have.join(", ") }
        );
    };
    let Some(rec) = db.gpu(gpu) else {
        bail!("the database has coverage but no [[gpu]] record for '{gpu}'");
    };
    let sel = Selector::new(cov, rec, catalog)?;
    let loo: Vec<Holdout> = sel.leave_one_out();
    println!(
        "leave-one-out on {} grid points of {gpu} {op} ({} of {} configs usable):",
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
