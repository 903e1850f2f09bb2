//! Commands that join and compare databases tuned on different GPUs: `merge`, `compare`,
//! `report`, the database-wide `export` formats (csv, json, t4), and `cross` (the only one
//! that runs kernels).

use super::Target;
use anyhow::{bail, Context, Result};
use autotune::cuda::device::Device;
use autotune::cuda::nvrtc;
use autotune::db::{Database, DbError, MergeError, MergeOptions};
use autotune::family::catalog::{Catalog, Freshness};
use autotune::problem::{Op, Shape};
use autotune::product::export::Format;
use autotune::report::chart;
use autotune::report::formats;
use autotune::report::gpus::{self as cmp, CompareError, Comparison};
use autotune::suite::Suite;
use autotune::tuning::cross::{self, CrossOptions, Portability};
use std::path::{Path, PathBuf};

/// Loads a database that must exist (a missing file is an error here, not an empty database:
/// comparing or merging nothing is always a typo).
fn load_existing(path: &Path, what: &str) -> Result<Database> {
    if !path.exists() {
        bail!(
            "{what} {} does not exist: pass the path of a tuning database (e.g. results/tuning.toml)",
            path.display()
        );
    }
    Ok(Database::load(path)?)
}

#[derive(Debug, clap::Args)]
pub(super) struct MergeArgs {
    /// The databases to merge (two or more), e.g. tuned on different machines. Of two entries
    /// for the same GPU, op and shape the faster stays and the other's time is recorded in its
    /// `also_measured`.
    #[arg(required = true, num_args = 2..)]
    inputs: Vec<PathBuf>,
    /// Where to write the merged database (it may be one of the inputs).
    #[arg(long, short)]
    output: PathBuf,
    /// Merge even when a kernel family's entries record different template checksums in
    /// different inputs (tuned with different versions of the kernel); each entry keeps its own.
    #[arg(long)]
    allow_mixed_checksums: bool,
}

/// `autotune merge`: joins databases; prints what happened per key present in several.
///
/// The output may be one of the inputs, and several merges may write it at once: the library
/// reads the inputs with the output's write lock held and keeps it until the merged file has
/// replaced the output, so no merge loses what another wrote.
pub(super) fn merge(a: &MergeArgs) -> Result<()> {
    let opts = MergeOptions {
        allow_mixed_checksums: a.allow_mixed_checksums,
    };
    let (db, report) = match Database::merge_into_file(&a.output, &a.inputs, opts) {
        Ok(r) => r,
        Err(DbError::Merge(e @ MergeError::ChecksumMismatch { .. })) => {
            let advice = "Re-tune those entries with one autotune build, or pass --allow-mixed-checksums to merge anyway (each entry keeps its own checksum).";
            // Say which version this build would write, so the user knows which side is stale.
            let current = Catalog::builtin().ok().map(|cat| {
                let MergeError::ChecksumMismatch { conflicts } = &e else {
                    return String::new();
                };
                conflicts
                    .iter()
                    .filter_map(|c| cat.get(&c.family).ok().map(|f| (c, f)))
                    .map(|(c, f)| {
                        let current: Vec<&str> = c
                            .uses
                            .iter()
                            .filter(|u| cat.freshness(&c.family, &u.checksum) == Freshness::Current)
                            .map(|u| u.source.as_str())
                            .collect();
                        format!(
                            "this build's {} template has checksum {} ({})",
                            c.family,
                            f.checksum,
                            if current.is_empty() {
                                "as in none of the inputs".to_string()
                            } else {
                                format!("as in {}", current.join(", "))
                            }
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("; ")
            });
            match current.filter(|s| !s.is_empty()) {
                Some(cur) => bail!("{e}. {advice} Note: {cur}."),
                None => bail!("{e}. {advice}"),
            }
        }
        Err(e) => return Err(e.into()),
    };
    for c in &report.conflicts {
        println!("{c}");
    }
    for n in &report.gpu_notes {
        println!("{n}");
    }
    for m in &report.mixed_checksums {
        println!("warning: merged entries tuned with different kernel versions, {m}");
    }
    // Every key of the inputs is one entry of the result.
    let single = db.entries.len().saturating_sub(report.in_several);
    println!(
        "{} entries from {} databases: {single} in one database only, {} in several ({} time(s) the faster kept with both times recorded, {} time(s) the very same measurement)",
        db.entries.len(),
        a.inputs.len(),
        report.in_several,
        report.conflicts.len(),
        report.identical
    );
    eprintln!("wrote {}", a.output.display());
    Ok(())
}

/// What `compare` and `report` select: a database, GPUs, ops, shapes.
#[derive(Debug, clap::Args)]
pub(super) struct Selection {
    /// The tuning database.
    #[arg(long, default_value = "results/tuning.toml")]
    db: PathBuf,
    /// Only this op: gemm or gemv (default: every op the chosen GPUs were tuned on).
    #[arg(long)]
    op: Option<String>,
    /// The GPUs, comma-separated, in column order: exact names or parts of one, ignoring case
    /// (e.g. --gpus h100,h200). The throughput ratio is the first over each of the others.
    /// Default: every GPU of the database, sorted by name.
    #[arg(long, value_delimiter = ',')]
    gpus: Vec<String>,
    /// Rows: the shapes of this suite, in its order (its op applies); repeat for one table per
    /// suite (e.g. the gemm and the gemv suite). Default: every shape any chosen GPU was
    /// tuned on, sorted.
    #[arg(long = "suite")]
    suites: Vec<PathBuf>,
}

impl Selection {
    /// One comparison per op, each with at least one result.
    fn comparisons(&self) -> Result<Vec<Comparison>> {
        let db = load_existing(&self.db, "database")?;
        let origin = self.db.display().to_string();
        let gpus = cmp::resolve_gpus(&db, &origin, &self.gpus)?;
        let op: Option<Op> = self.op.as_deref().map(str::parse).transpose()?;
        // One (op, rows) per table: a suite's op and shapes, or an op and every tuned shape.
        let mut tables: Vec<(Op, Option<Vec<Shape>>)> = Vec::new();
        for path in &self.suites {
            let suite = Suite::load(path)?;
            if let Some(op) = op.filter(|o| *o != suite.op) {
                bail!(
                    "--op {op} contradicts suite {} (op {})",
                    path.display(),
                    suite.op
                );
            }
            tables.push((suite.op, Some(suite.shapes)));
        }
        if self.suites.is_empty() {
            match op {
                Some(op) => tables.push((op, None)),
                None => tables.extend(
                    Op::ALL
                        .into_iter()
                        .filter(|o| {
                            db.entries
                                .iter()
                                .any(|e| e.op == *o && gpus.contains(&e.gpu))
                        })
                        .map(|o| (o, None)),
                ),
            }
        }
        let explicit = op.is_some() || !self.suites.is_empty();
        let mut out = Vec::new();
        for (op, shapes) in tables {
            let c = cmp::compare_gpus(&db, op, &gpus, shapes.as_deref());
            if c.is_empty() {
                if explicit {
                    return Err(CompareError::NoEntries {
                        op,
                        gpus: gpus.join(", "),
                        db: origin,
                    }
                    .into());
                }
                continue;
            }
            out.push(c);
        }
        if out.is_empty() {
            return Err(CompareError::NoEntries {
                op: Op::Gemm,
                gpus: gpus.join(", "),
                db: origin,
            }
            .into());
        }
        Ok(out)
    }
}

#[derive(Debug, clap::Args)]
pub(super) struct CompareArgs {
    #[command(flatten)]
    select: Selection,
    /// Output: table (for a terminal), markdown, csv (one line per shape per GPU) or json.
    #[arg(long, default_value = "table")]
    format: String,
}

/// `autotune compare`: the chosen GPUs side by side, per shape, from the database alone.
pub(super) fn compare(a: &CompareArgs) -> Result<()> {
    const ACCEPTED: &str = "table, markdown, csv, json";
    let format = a.format.trim().to_ascii_lowercase();
    if !ACCEPTED.split(", ").any(|f| f == format) {
        bail!(
            "unknown compare format '{}': accepted formats: {ACCEPTED}",
            a.format
        );
    }
    let comparisons = a.select.comparisons()?;
    let text = match format.as_str() {
        "table" => comparisons
            .iter()
            .map(Comparison::table)
            .collect::<Vec<_>>()
            .join("\n"),
        "markdown" => comparisons
            .iter()
            .map(Comparison::markdown)
            .collect::<Vec<_>>()
            .join("\n"),
        "csv" => {
            let mut s = format!("{}\n", cmp::CSV_HEADER);
            for c in &comparisons {
                s.push_str(&c.csv_rows());
            }
            s
        }
        _ => {
            let v: Vec<serde_json::Value> = comparisons.iter().map(Comparison::json).collect();
            serde_json::to_string_pretty(&v)? + "\n"
        }
    };
    print!("{text}");
    Ok(())
}

#[derive(Debug, clap::Args)]
pub(super) struct ReportArgs {
    #[command(flatten)]
    select: Selection,
    /// The directory to write report.md and its SVG charts to (created if needed).
    #[arg(long, short)]
    output: PathBuf,
}

/// `autotune report`: report.md with bar charts (SVG) of throughput and x cuBLAS per shape.
pub(super) fn report(a: &ReportArgs) -> Result<()> {
    let comparisons = a.select.comparisons()?;
    let files = chart::report(&comparisons, &a.select.db.display().to_string())?;
    std::fs::create_dir_all(&a.output)
        .with_context(|| format!("creating the report directory {}", a.output.display()))?;
    for f in &files {
        let path = a.output.join(&f.name);
        std::fs::write(&path, &f.contents)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    for c in &comparisons {
        println!("{}", c.summary_line());
    }
    eprintln!(
        "wrote {} and {} chart(s) to {}",
        files[0].name,
        files.len() - 1,
        a.output.display()
    );
    Ok(())
}

/// `autotune export --format csv|json|t4`: every entry of the database (filtered by --gpu,
/// --op and --shape when given), to stdout or --output.
pub(super) fn export_entries(format: Format, target: &Target, output: Option<&Path>) -> Result<()> {
    let db = load_existing(&target.db, "database")?;
    let origin = target.db.display().to_string();
    let gpu = target
        .gpu
        .as_deref()
        .map(|q| cmp::resolve_gpu(&db, &origin, q))
        .transpose()?;
    let op: Option<Op> = target.op.as_deref().map(str::parse).transpose()?;
    let shape = match (&target.shape, op) {
        (Some(s), Some(op)) => Some(Shape::parse(op, s)?),
        (Some(_), None) => {
            bail!("--shape as a filter of --format {format} needs --op gemm or gemv")
        }
        (None, _) => None,
    };
    let (gpus, mut entries) = formats::select(&db, gpu.as_deref(), op);
    if let Some(shape) = shape {
        entries.retain(|e| e.shape() == shape);
    }
    let text = match format {
        Format::Csv => formats::entries_csv(&entries),
        Format::Json => formats::entries_json(&gpus, &entries)? + "\n",
        Format::T4 => serde_json::to_string_pretty(&formats::t4(&gpus, &entries))? + "\n",
        Format::CudaHeader | Format::Cubin => {
            bail!("--format {format} exports one shape, not the database")
        }
    };
    match output {
        Some(p) => {
            std::fs::write(p, &text).with_context(|| format!("writing {}", p.display()))?;
            eprintln!(
                "wrote {} ({} entries, {format})",
                p.display(),
                entries.len()
            );
        }
        None => print!("{text}"),
    }
    Ok(())
}

#[derive(Debug, clap::Args)]
pub(super) struct CrossArgs {
    /// The suite whose shapes to run, e.g. configs/suites/gemm.toml.
    #[arg(long, required_unless_present = "show")]
    suite: Option<PathBuf>,
    /// The tuning database whose winners are run.
    #[arg(long, default_value = "results/tuning.toml")]
    db: PathBuf,
    /// The portability file: this run's measurements replace this GPU's earlier ones for the
    /// same shapes, the other GPUs' stay, and the matrix is drawn from all of them.
    #[arg(long, default_value = "results/portability.json")]
    portability: PathBuf,
    /// Also write the matrix and the per-shape rows as Markdown to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    #[command(flatten)]
    timing: super::TimingArgs,
    /// Do not update the portability file.
    #[arg(long)]
    no_save: bool,
    /// Only print (and write --out) what the portability file holds: no GPU needed.
    #[arg(long, conflicts_with_all = ["suite", "quick", "no_save", "in_process"])]
    show: bool,
    #[command(flatten)]
    run: super::RunArgs,
}

/// Prints the matrix (and per-shape rows) of every op in `p`, and writes --out.
fn show_portability(p: &Portability, source: &Path, out: Option<&Path>) -> Result<()> {
    if p.measurements.is_empty() {
        bail!(
            "{} holds no cross measurements yet: run `autotune cross --suite configs/suites/gemm.toml` on a GPU first",
            source.display()
        );
    }
    for op in Op::ALL {
        if !p.measurements.iter().any(|m| m.op == op) {
            continue;
        }
        println!("{}", cross::shape_rows(&p.measurements, op, false));
        println!("{}", cross::matrix(&p.measurements, op).table());
    }
    if let Some(path) = out {
        std::fs::write(path, cross::markdown(&p.measurements))
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// `autotune cross`: every GPU's recorded winner run on this GPU, as % of the best here.
pub(super) fn cross(a: &CrossArgs) -> Result<()> {
    // Read everything that can be wrong before the GPU is touched.
    let mut portability = Portability::load(&a.portability)?;
    if a.show {
        return show_portability(&portability, &a.portability, a.out.as_deref());
    }
    let Some(suite_path) = &a.suite else {
        bail!("give --suite FILE (e.g. configs/suites/gemm.toml), or --show");
    };
    let suite = Suite::load(suite_path)?;
    let db = load_existing(&a.db, "database")?;
    if !db.entries.iter().any(|e| e.op == suite.op) {
        bail!(
            "{} has no {} entries: tune on some GPU first (autotune --suite {})",
            a.db.display(),
            suite.op,
            suite_path.display()
        );
    }
    let catalog = Catalog::builtin().context("loading the built-in kernel families")?;
    let dev = Device::open(a.run.device)?;
    eprintln!(
        "cross: {} {} shape(s) from {} on {} ({}), device {}",
        suite.op,
        suite.shapes.len(),
        suite_path.display(),
        dev.info.name,
        dev.info.arch,
        a.run.device
    );
    let opts = CrossOptions {
        seed: a.timing.seed,
        timing: a.timing.settings(),
        isolation: a.run.isolation()?,
    };
    let cache = nvrtc::Cache::new();
    let date = autotune::plan::outcome::utc_now_rfc3339();
    let run = cross::run(
        &dev,
        &catalog,
        &cache,
        &db,
        suite.op,
        &suite.shapes,
        &opts,
        &date,
        &|line| eprintln!("{line}"),
    )?;
    if run.is_empty() {
        bail!(
            "nothing was run: no GPU of {} has a winner for any shape of {}",
            a.db.display(),
            suite_path.display()
        );
    }
    let portability = if a.no_save {
        portability.absorb(run);
        portability
    } else {
        // Read again under the file's lock: a run on another GPU may have added its rows since
        // the check above, and this run replaces only its own GPU's.
        let p = Portability::update_file(&a.portability, |p| p.absorb(run))?;
        eprintln!("wrote {}", a.portability.display());
        p
    };
    show_portability(&portability, &a.portability, a.out.as_deref())
}
