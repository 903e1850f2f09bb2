//! Argument parsing, progress bars, printing, and the advice on errors that names flags
//! ([`advice`]). Nothing depends on this module.

mod advice;
mod coverage;
mod databases;
mod fingerprint;
mod simulate;
mod tuning;
mod verify;

pub(crate) use advice::advice;

use anyhow::{bail, Context, Result};
use autotune::cuda::device::Device;
use autotune::cuda::nvrtc;
use autotune::db::Database;
use autotune::family::catalog::{Catalog, Source};
use autotune::gpu::Arch;
use autotune::problem::{Op, Shape};
use autotune::product::export::{self, Format};
use autotune::product::lookup;
use autotune::report;
use autotune::suite::Suite;
use clap::Parser;
use std::path::PathBuf;

/// Finds the fastest CUDA SGEMM/SGEMV kernel configuration for a shape on this GPU and records
/// it in a TOML tuning database.
#[derive(Debug, Parser)]
#[command(
    name = "autotune",
    version,
    about,
    long_about = None,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Problem shape: MxNxK for gemm (C = A B), MxK or Mx1xK for gemv (y = A x).
    #[arg(
        long,
        short,
        required_unless_present = "suite",
        conflicts_with = "suite",
        allow_hyphen_values = true
    )]
    shape: Option<String>,
    /// Tune every shape of a suite file (e.g. configs/suites/gemv.toml); its `op` applies.
    #[arg(long)]
    suite: Option<PathBuf>,
    /// Write the suite's summary table (Markdown) to this file as well.
    #[arg(long, requires = "suite")]
    summary: Option<PathBuf>,
    /// Operation: gemm or gemv (default gemm; a suite names its own).
    #[arg(long)]
    op: Option<String>,
    /// Operand layouts of --shape, row-major convention (first letter A, second B; t =
    /// stored transposed): nn (default), nt, tn, tt; gemv: n or t (y = A^T x). A suite's
    /// shapes name their own (e.g. "512x512x64:tn:b32:beta").
    #[arg(long, requires = "shape")]
    layout: Option<String>,
    /// Strided batch of --shape: this many products in one call (default 1).
    #[arg(long, requires = "shape")]
    batch: Option<u64>,
    /// Beta of --shape: C = alpha op(A) op(B) + beta C; any non-zero value reads C (tuned with
    /// beta = 0.5). Default 0.
    #[arg(long, requires = "shape")]
    beta: Option<f64>,
    /// Padded leading dimensions for --shape (rows rounded up past the next multiple of 64
    /// floats) instead of packed ones.
    #[arg(long, requires = "shape")]
    padded: bool,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Tuning database to update.
    #[arg(long, default_value = "results/tuning.toml")]
    db: PathBuf,
    /// Rows of the results table.
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// Print the full report as JSON on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// Enumerate, prune, instantiate and compile every candidate for --arch without a GPU.
    /// NVRTC is the library $AUTOTUNE_NVRTC names (a file, or a directory holding
    /// libnvrtc.so.N), else the libnvrtc the dynamic loader finds (NVRTC 13 before 12).
    #[arg(long)]
    dry_run: bool,
    /// Target arch for --dry-run, e.g. sm_90 (H100/H200), sm_89 (RTX 4060), sm_61 (GTX 1080 Ti;
    /// needs NVRTC 12: AUTOTUNE_NVRTC=/path/to/libnvrtc.so.12).
    #[arg(long)]
    arch: Option<String>,
    /// Tune only this family (repeatable); default: every family of the op.
    #[arg(long = "family")]
    families: Vec<String>,
    /// Tune only deterministic families, whose kernels give bit-identical results on every run
    /// (no atomic accumulation: e.g. gemm_warptile_splitk_det instead of
    /// gemm_warptile_splitk); the database records which entries are.
    #[arg(long)]
    deterministic: bool,
    /// Seed of the random validation and timing inputs, and of the search strategy's random
    /// choices: the same seed repeats the same search.
    #[arg(long, default_value_t = 0x5EED, value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64))]
    seed: u64,
    /// Fewer timing samples: faster, noisier.
    #[arg(long)]
    quick: bool,
    /// Search strategy: exhaustive, random, annealing, genetic, model-guided, or auto
    /// (exhaustive when the valid space has at most 1000 candidates, else model-guided).
    /// Compare them offline with `autotune simulate`.
    #[arg(long, default_value = "auto")]
    strategy: String,
    /// Evaluate at most N candidates per shape (candidates resumed from a journal count).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    budget: Option<u64>,
    /// Wall-clock limit per shape, e.g. 60s, 5m, 1h (a plain number is seconds): no candidate
    /// starts after it, and the best found so far is recorded, marked partial.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    time: Option<std::time::Duration>,
    /// Do not write the database.
    #[arg(long)]
    no_save: bool,
    /// Read families from this directory (with templates/ and configs/spaces/) instead of the
    /// ones built into the binary.
    #[arg(long)]
    spaces: Option<PathBuf>,
    /// Continue an interrupted run from its journal: finished candidates are not run again.
    #[arg(long)]
    resume: bool,
    /// Where run journals go (default: journal/ next to the database).
    #[arg(long)]
    journal_dir: Option<PathBuf>,
    /// Run candidates in this process instead of worker processes: faster to start, but a
    /// faulting kernel ends the whole run.
    #[arg(long)]
    in_process: bool,
    /// Tune on several GPUs at once: `0,1` or `all`. A suite's shapes are spread over them
    /// (balanced by work); each entry records the GPU that produced it.
    #[arg(long, conflicts_with = "device")]
    devices: Option<String>,
    /// Tune only shard INDEX/COUNT of the suite (e.g. 0/4), writing the database with
    /// `.shard-INDEX-of-COUNT` before its extension; inside a Slurm job array this is taken
    /// from SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT. Join shards with `autotune merge`.
    #[arg(long)]
    shard: Option<String>,
    /// Compile every kernel with NVRTC, bypassing the on-disk compile cache
    /// ($AUTOTUNE_CACHE_DIR, else ~/.cache/autotune) shared with the runtime.
    #[arg(long)]
    no_cache: bool,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Join databases tuned on different machines into one: of two entries for the same GPU,
    /// op and shape the faster stays, with the other's time recorded.
    Merge(databases::MergeArgs),
    /// GPUs side by side per shape (winner, throughput, % of own peak, x cuBLAS) with
    /// geometric-mean ratios, from the database alone.
    Compare(databases::CompareArgs),
    /// Write a Markdown report with SVG bar charts comparing GPUs, from the database alone.
    Report(databases::ReportArgs),
    /// Run every GPU's recorded winner for a suite on this GPU, as % of the best here; builds
    /// the "tuned on X, run on Y" matrix across runs on several GPUs.
    Cross(databases::CrossArgs),
    /// Print what a product would launch for a shape, and why, from the database alone.
    Best(BestArgs),
    /// Write the kernel and launch helper the database chooses for a shape as a self-contained
    /// CUDA header for nvcc-built products (no GPU needed).
    Export(ExportArgs),
    /// Measure a coverage grid: a portfolio of configs timed on shapes of every kind, from
    /// which the runtime predicts shapes nobody tuned.
    Cover(coverage::CoverArgs),
    /// What a product gets on shapes nobody tuned: the runtime's choice for each (random or
    /// listed) shape, timed against cuBLAS, with and without the vendor guard, and against the
    /// nearest-shape rule it replaced.
    Evaluate(coverage::EvaluateArgs),
    /// Trust what ships: compile every kernel the database holds for this GPU as the runtime
    /// would, validate it on its problem and on edge shapes, re-time it beside cuBLAS, and
    /// compare with the recorded time and checksum; exits non-zero when one fails, is stale or
    /// is slower than recorded beyond --max-slowdown.
    Verify(verify::VerifyArgs),
    /// For developers: compile every built-in family's probes to PTX for one virtual arch and
    /// print their fingerprints as JSON (tests/nvrtc.rs compares them with
    /// configs/fingerprints/; see docs/fingerprints.md).
    #[command(hide = true)]
    Fingerprint(fingerprint::FingerprintArgs),
    /// Internal: serve a tuning parent over stdin/stdout (started by autotune itself).
    #[command(name = "__worker", hide = true)]
    Worker,
    /// Print a suite's table (winner, throughput, x cuBLAS, % of peak per shape) for one GPU
    /// from the database alone.
    Summary(SummaryArgs),
    /// Replay recorded run journals offline (no GPU) to compare search strategies: how many
    /// evaluations each needs to come within a few percent of the exhaustive optimum.
    Simulate(simulate::SimulateArgs),
}

/// `60s`, `5m`, `1h`, `250ms`, `1.5m` or a plain number of seconds.
fn parse_duration(text: &str) -> std::result::Result<std::time::Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "" | "s" | "sec" => 1.0,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => f64::NAN,
    };
    match num.parse::<f64>() {
        Ok(v) if v > 0.0 && scale.is_finite() && (v * scale) < 1e9 => {
            Ok(std::time::Duration::from_secs_f64(v * scale))
        }
        _ => Err(format!(
            "'{text}' is not a duration: give a positive number with s, m or h (e.g. 60s, 5m, 1h)"
        )),
    }
}

#[derive(Debug, clap::Args)]
struct SummaryArgs {
    /// The suite file, e.g. configs/suites/gemm.toml.
    #[arg(long)]
    suite: PathBuf,
    /// GPU name as recorded in the database.
    #[arg(long)]
    gpu: String,
    /// The tuning database.
    #[arg(long, default_value = "results/tuning.toml")]
    db: PathBuf,
}

/// `autotune summary`: a suite's results on one GPU, from the database.
fn summary(a: &SummaryArgs) -> Result<()> {
    let suite = Suite::load(&a.suite)?;
    let db = Database::load_existing(&a.db)?;
    // The same name matching as every command that takes --gpu (`--gpu h200`).
    let name = autotune::report::gpus::resolve_gpu(&db, &a.db.display().to_string(), &a.gpu)?;
    let Some(gpu) = db.gpu(&name) else {
        bail!(
            "{} has entries of '{name}' but no [[gpu]] record for it: tune on that GPU again to write one",
            a.db.display()
        );
    };
    let mut entries = Vec::new();
    let mut missing = Vec::new();
    for &shape in &suite.shapes {
        match db.get(&name, suite.op, shape) {
            Some(e) => entries.push(e),
            None => missing.push(shape.label(suite.op)),
        }
    }
    print!("{}", report::suite_markdown(suite.op, gpu, &entries));
    if !missing.is_empty() {
        println!("\nnot tuned on this GPU yet: {}", missing.join(", "));
    }
    Ok(())
}

/// What `best` and `export` look up: an op and shape on a GPU, in a database.
#[derive(Debug, clap::Args)]
struct Target {
    /// Operation: gemm or gemv (default gemm; for export --format csv|json|t4, every op).
    #[arg(long)]
    op: Option<String>,
    /// Problem shape: MxNxK (gemm) or MxK (gemv); a filter for export --format csv|json|t4.
    #[arg(long, short, allow_hyphen_values = true)]
    shape: Option<String>,
    /// GPU name as recorded in the database (default: the name of --device, which needs a GPU).
    #[arg(long)]
    gpu: Option<String>,
    /// Its arch (default: the database's record of the GPU, or the device's).
    #[arg(long)]
    arch: Option<String>,
    /// CUDA device ordinal, when --gpu is not given.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// The tuning database.
    #[arg(long, default_value = "results/tuning.toml")]
    db: PathBuf,
}

impl Target {
    /// Parses the op and shape, loads the database and resolves the GPU and its arch.
    /// The op, shape, database, GPU and arch of a lookup, and a warning to print once it
    /// succeeded (the GPU is not in the database).
    fn resolve(&self) -> Result<Resolved> {
        let op: Op = self.op.as_deref().unwrap_or("gemm").parse()?;
        let Some(shape) = &self.shape else {
            bail!(
                "--shape is required: MxNxK for gemm, MxK for gemv (e.g. --shape 2048x2048x2048)"
            );
        };
        let shape = Shape::parse(op, shape)?;
        let db = Database::load_existing(&self.db)?;
        let (gpu, arch, warning) = gpu_and_arch(&self.gpu, &self.arch, self.device, &db)?;
        Ok(Resolved {
            op,
            shape,
            db,
            gpu,
            arch,
            warning,
        })
    }
}

/// What [`Target::resolve`] found.
struct Resolved {
    op: Op,
    shape: Shape,
    db: Database,
    gpu: String,
    arch: Option<String>,
    /// Printed once the command succeeded.
    warning: Option<String>,
}

#[derive(Debug, clap::Args)]
struct BestArgs {
    #[command(flatten)]
    target: Target,
    /// Print the choice as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct ExportArgs {
    /// Output format: cuda-header (a self-contained .cuh: the validated kernel and a host launch
    /// helper for exactly --shape), cubin (that kernel compiled by NVRTC for the arch, as tuning
    /// compiled it: for cuobjdump or a product's own module loading; needs -o), or every entry of the database (filtered by --gpu, --op,
    /// --shape) as csv, json, or t4 (the autotuning results format of Kernel Tuner and KTT).
    #[arg(long)]
    format: String,
    #[command(flatten)]
    target: Target,
    /// Write the header to this file instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Before writing, check that the header compiles with NVRTC for the arch (needs NVRTC: on
    /// LD_LIBRARY_PATH, or the library $AUTOTUNE_NVRTC names; no GPU); nothing is written when it does not.
    #[arg(long)]
    check_compile: bool,
    /// With --check-compile: compile this file's text followed by the header, in one
    /// translation unit (e.g. another exported header, to check that both coexist).
    #[arg(long, requires = "check_compile")]
    check_with: Option<PathBuf>,
}

/// The GPU name and arch a lookup is for: `--gpu` (matched as `compare --gpus` matches: exact,
/// else the only name containing it, ignoring case) or the device's name; `--arch`, else the
/// database's record of the GPU, else the device's arch.
fn gpu_and_arch(
    gpu: &Option<String>,
    arch: &Option<String>,
    device: usize,
    db: &Database,
) -> Result<(String, Option<String>, Option<String>)> {
    let arch = arch
        .clone()
        .map(|s| s.parse::<Arch>().map(|x| x.to_string()))
        .transpose()?;
    let mut warning = None;
    let (gpu, dev_arch) = match gpu {
        // The one rule of every command that takes --gpu: an exact name, else the only
        // name containing it, ignoring case.
        Some(g) => match autotune::report::gpus::resolve_gpu(db, "the database", g) {
            Ok(name) => (name, None),
            // A GPU the database has not seen: its arch's entries (or the built-in default)
            // still answer, when the arch is given; say so rather than pretend it is known.
            Err(_) if arch.is_some() => {
                let known: Vec<String> = db.gpus.iter().map(|r| format!("'{}'", r.name)).collect();
                warning = Some(format!(
                    "warning: the database has no GPU named '{g}' (it has {}); this answers for an unseen GPU of the given arch",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ));
                (g.clone(), None)
            }
            Err(e) => {
                return Err(anyhow::Error::new(e).context(format!(
                    "--gpu '{g}' names no GPU of the database: pass one it has, or --arch sm_XY to ask about an unseen GPU of that arch"
                )))
            }
        },
        None => {
            let dev = Device::open(device).context(advice::NoGpuGiven)?;
            (dev.info.name.clone(), Some(dev.info.arch.to_string()))
        }
    };
    let arch = arch
        .or_else(|| db.gpu(&gpu).map(|g| g.arch.clone()))
        .or(dev_arch);
    Ok((gpu, arch, warning))
}

/// `autotune export`: the database's choice for one shape as a file a product compiles.
fn export(a: &ExportArgs) -> Result<()> {
    let format: Format = a.format.parse()?;
    if format.is_database_wide() {
        if a.check_compile {
            bail!("--check-compile applies to --format cuda-header only");
        }
        return databases::export_entries(format, &a.target, a.output.as_deref());
    }
    let Resolved {
        op,
        shape,
        db,
        gpu,
        arch,
        warning,
    } = a.target.resolve()?;
    let Some(arch) = arch else {
        bail!("the arch of GPU '{gpu}' is unknown (it is not in {}): pass --arch sm_XY, e.g. sm_90 for an H100/H200", a.target.db.display());
    };
    let arch: Arch = arch.parse()?;
    let Some(limits) = autotune::family::space::Limits::for_arch(arch.number() as i64) else {
        bail!(
            "no launch limits are known for {arch}: pass --arch with a supported arch, e.g. sm_90"
        );
    };
    let catalog = Catalog::builtin()?;
    let choice = lookup::lookup(&db, &catalog, &gpu, Some(&arch.to_string()), op, shape);
    let family = catalog.get(&choice.family)?;
    if format == Format::Cubin {
        if a.check_compile {
            bail!(
                "--check-compile applies to --format cuda-header only (a cubin is compiled anyway)"
            );
        }
        let Some(path) = &a.output else {
            bail!("--format cubin writes a binary file: give -o FILE.cubin");
        };
        let source = family.kernel(&choice.config(), shape, &limits)?.source;
        nvrtc::check_arch(arch)?;
        let c = nvrtc::compile(&source, arch)
            .with_context(|| format!("compiling {} for {arch}", source.kernel_name))?;
        std::fs::write(path, &c.cubin).with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "wrote {} ({}, {} for {arch} with NVRTC {}, {} B)",
            path.display(),
            choice.describe(op, shape),
            source.kernel_name,
            nvrtc::describe()?,
            c.cubin.len()
        );
        if let Some(w) = warning {
            eprintln!("{w}");
        }
        return Ok(());
    }
    let text = match format {
        Format::CudaHeader => export::cuda_header(&choice, family, op, shape, &limits, &gpu)?,
        other => bail!("--format {other} exports the database, not one shape"),
    };
    if a.check_compile {
        let mut code = match &a.check_with {
            Some(p) => std::fs::read_to_string(p)
                .with_context(|| format!("reading --check-with {}", p.display()))?,
            None => String::new(),
        };
        if !code.is_empty() && !code.ends_with('\n') {
            code.push('\n');
        }
        code.push_str(&text);
        let source = Source {
            family: choice.family.clone(),
            kernel_name: export::helper_name(op, shape),
            code,
        };
        nvrtc::check_arch(arch)?;
        let c = nvrtc::compile(&source, arch)
            .context("the exported header does not compile with NVRTC")?;
        eprintln!(
            "the header{} compiles for {arch} with NVRTC {} ({} B cubin, {:.0} ms)",
            if a.check_with.is_some() {
                " (after --check-with)"
            } else {
                ""
            },
            nvrtc::describe()?,
            c.cubin.len(),
            c.compile_ms
        );
    }
    match &a.output {
        Some(p) => {
            std::fs::write(p, &text).with_context(|| format!("writing {}", p.display()))?;
            eprintln!("wrote {} ({})", p.display(), choice.describe(op, shape));
        }
        None => print!("{text}"),
    }
    if choice.vendor {
        eprintln!(
            "note: for {op} {} the runtime calls cuBLAS (vendor guard); the header holds the kernel it would launch otherwise",
            shape.label(op)
        );
    }
    if let Some(w) = warning {
        eprintln!("{w}");
    }
    Ok(())
}

/// `autotune best`: the lookup a product makes, explained.
fn best(a: &BestArgs) -> Result<()> {
    let Resolved {
        op,
        shape,
        db,
        gpu,
        arch,
        warning,
    } = a.target.resolve()?;
    let catalog = Catalog::builtin()?;
    let choice = lookup::lookup(&db, &catalog, &gpu, arch.as_deref(), op, shape);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&choice)?);
        if let Some(w) = warning {
            eprintln!("{w}");
        }
        return Ok(());
    }
    println!(
        "{} on {gpu} ({})",
        choice.describe(op, shape),
        arch.as_deref().unwrap_or("arch unknown")
    );
    let family = catalog.get(&choice.family)?;
    let config = choice.config();
    let limits = arch
        .as_deref()
        .and_then(|s| s.parse::<Arch>().ok())
        .and_then(|x| autotune::family::space::Limits::for_arch(x.number() as i64))
        .or_else(|| autotune::family::space::Limits::for_arch(90));
    if let Some(limits) = limits {
        let l = family
            .kernel(&config, shape, &limits)
            .map(|k| k.launch)
            .with_context(|| {
                format!(
                    "the config chosen for {op} {} ({} {}) cannot be launched: re-tune that shape or fix its entry in {}",
                    shape.label(op),
                    choice.family,
                    autotune::family::space::params_label(&choice.params),
                    a.target.db.display()
                )
            })?;
        println!(
            "launch {}: grid {:?}, block {:?}, dynamic shared memory {} B{}{}{}",
            family.kernel_name_for(&config, shape),
            l.grid,
            l.block,
            l.dynamic_shared_bytes,
            if l.zero_output {
                ", output zeroed first"
            } else {
                ""
            },
            l.workspace_bytes
                .map_or(String::new(), |b| format!(", workspace {b} B")),
            if family.space.deterministic {
                ", deterministic"
            } else {
                ", not deterministic"
            }
        );
    }
    for s in &choice.skipped {
        println!(
            "warning: passed over the {} entry {} {} on {}: {}; re-tune {op} {} to refresh it",
            s.rule, s.family, s.shape, s.gpu, s.freshness, s.shape
        );
    }
    if let Some(w) = warning {
        eprintln!("{w}");
    }
    Ok(())
}

/// Runs the command line. A database error gets the advice of the command that met it (which
/// option picks another file).
pub fn main() -> Result<()> {
    let args = Args::parse();
    let arg = match &args.command {
        Some(Command::Merge(_)) => advice::DbArg::Merge,
        _ => advice::DbArg::Db,
    };
    run(&args).map_err(|e| advice::advise(e, arg))
}

/// Runs the command `args` name.
fn run(args: &Args) -> Result<()> {
    match &args.command {
        Some(Command::Best(b)) => return best(b),
        Some(Command::Export(e)) => return export(e),
        Some(Command::Summary(a)) => return summary(a),
        Some(Command::Merge(a)) => return databases::merge(a),
        Some(Command::Compare(a)) => return databases::compare(a),
        Some(Command::Report(a)) => return databases::report(a),
        Some(Command::Cross(a)) => return databases::cross(a),
        Some(Command::Cover(a)) => return coverage::cover(a),
        Some(Command::Evaluate(a)) => return coverage::evaluate(a),
        Some(Command::Simulate(a)) => return simulate::run(a),
        Some(Command::Verify(a)) => return verify::verify(a),
        Some(Command::Fingerprint(a)) => return fingerprint::run(a),
        Some(Command::Worker) => tuning::worker(),
        None => {}
    }
    tuning::run(args)
}
