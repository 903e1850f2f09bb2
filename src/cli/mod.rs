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
use autotune::family::catalog::Catalog;
use autotune::gpu::Arch;
use autotune::problem::{Op, Shape};
use autotune::product::export::{self, Format};
use autotune::product::lookup;
use autotune::report;
use autotune::suite::Suite;
use clap::{CommandFactory, FromArgMatches, Parser};
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
    subcommand_negates_reqs = true,
    max_term_width = 100,
    override_usage = "autotune [tune] (--shape MxNxK | --suite FILE) [OPTIONS]\n       \
                      autotune <COMMAND> [OPTIONS]",
    after_help = TOP_EXAMPLES
)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
    /// Without a subcommand, the options of `tune` (hidden from the top-level help).
    #[command(flatten)]
    tune: tuning::TuneArgs,
}

/// The top-level help's closing lines.
const TOP_EXAMPLES: &str = "\
Tuning is the default command: `autotune --shape ...` is `autotune tune --shape ...`.
Its options: autotune tune --help. Each command's: autotune COMMAND --help.

Examples:
  # tune one gemm shape on GPU 0, and one gemv shape, into your own database
  autotune --shape 4096x4096x4096 --db mine.toml
  autotune --op gemv --shape 16384x16384 --db mine.toml
  # a suite over every GPU, with at most 300 candidates and 5 minutes per shape
  autotune --suite configs/suites/gemm.toml --devices all --budget 300 --time 5m
  # a large space, searched by the performance model
  autotune --shape 8192x8192x8192 --strategy model-guided --budget 200
  # no GPU: compile every candidate for an arch
  autotune --shape 2048x2048x2048 --dry-run --arch sm_90
  # what a product would launch; re-check what ships for this GPU
  autotune best --gpu h200 --shape 3000x3000x3000
  autotune verify --db results/tuning.toml";

/// The closing lines of `autotune tune --help`.
const TUNE_EXAMPLES: &str = "\
Examples:
  autotune tune --shape 4096x4096x4096 --db mine.toml
  autotune tune --shape 2048x2048x2048 --layout tn --batch 32 --beta 1 --db mine.toml
  autotune tune --suite configs/suites/gemv.toml --summary gemv-suite.md
  autotune tune --shape 8192x8192x8192 --strategy model-guided --budget 200 --time 10m
  autotune tune --shape 2048x2048x2048 --dry-run --arch sm_61

`tune` may be left out: `autotune --shape ...` is the same command.";

/// Where kernels run: the options every command that runs kernels shares.
#[derive(Debug, clap::Args)]
struct RunArgs {
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0, help_heading = "Run")]
    device: usize,
    /// Run kernels in this process instead of worker processes: faster to start, but a
    /// faulting kernel ends the whole run (compute-sanitizer needs it).
    #[arg(long, help_heading = "Run")]
    in_process: bool,
}

impl RunArgs {
    /// Worker processes run this executable (`autotune __worker`); `None` with --in-process.
    fn isolation(&self) -> Result<Option<autotune::cuda::isolate::WorkerSettings>> {
        if self.in_process {
            return Ok(None);
        }
        let exe = std::env::current_exe()
            .context("finding this executable to start benchmark workers (or pass --in-process)")?;
        Ok(Some(autotune::cuda::isolate::WorkerSettings::new(exe)))
    }
}

/// The GPUs to use: `--devices 0,1` / `--devices all`, else `--device N` (`device`).
fn parse_devices(devices: Option<&str>, device: usize) -> Result<Vec<usize>> {
    let Some(list) = devices else {
        return Ok(vec![device]);
    };
    if list.trim() == "all" {
        let n = autotune::cuda::device::device_count()?;
        if n <= 0 {
            bail!("--devices all: the driver reports no CUDA device");
        }
        return Ok((0..n as usize).collect());
    }
    let mut out = Vec::new();
    for part in list.split(',') {
        let d: usize = part.trim().parse().with_context(|| {
            format!("--devices '{list}': '{part}' is not a device number (e.g. --devices 0,1 or --devices all)")
        })?;
        if out.contains(&d) {
            bail!("--devices '{list}' names device {d} twice");
        }
        out.push(d);
    }
    if out.is_empty() {
        bail!("--devices is empty: give 0,1 or all");
    }
    Ok(out)
}

/// `95 s`, `3m05s`: a duration for progress lines.
fn seconds(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s < 60 {
        format!("{s} s")
    } else {
        format!("{}m{:02}s", s / 60, s % 60)
    }
}

/// What a run over several devices prints at its end: each device's busy time against the
/// wall time, and how many kernels NVRTC compiled (each once, however many devices).
fn devices_summary(
    usage: &autotune::tuning::queue::Usage,
    cache: &autotune::cuda::nvrtc::Cache,
) -> String {
    format!(
        "devices: busy time over {:.1} s of wall time\n{}compile: NVRTC compiled {} kernel(s) in this run, each once for all devices ({} lookup(s) served by the shared cache, {} of them waiting for another device's compile)\n",
        usage.wall.as_secs_f64(),
        usage.table(),
        cache.compiled(),
        cache.hits(),
        cache.waited()
    )
}

/// The inputs and timing of a measuring run: shared by `tune`, `verify` and `cross`.
#[derive(Debug, clap::Args)]
struct TimingArgs {
    /// Seed of the random validation and timing inputs (and of a search's random choices:
    /// the same seed repeats the same search).
    #[arg(long, default_value_t = 0x5EED, value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64), help_heading = "Run")]
    seed: u64,
    /// Fewer timing samples: faster, noisier.
    #[arg(long, help_heading = "Run")]
    quick: bool,
}

impl TimingArgs {
    /// The sampling policy --quick chooses.
    fn settings(&self) -> autotune::measure::timing::TimingSettings {
        if self.quick {
            autotune::measure::timing::TimingSettings::quick()
        } else {
            autotune::measure::timing::TimingSettings::default()
        }
    }
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Tune shapes on this GPU and record the winners (the default command).
    ///
    /// Finds the fastest kernel configuration for each shape of --shape or --suite and records
    /// it in the tuning database. `autotune --shape ...` (no subcommand) is the same command.
    #[command(after_help = TUNE_EXAMPLES)]
    Tune(tuning::TuneArgs),
    /// Join databases tuned on different machines into one.
    ///
    /// Of two entries for the same GPU, op and shape the faster stays, with the other's time
    /// recorded.
    Merge(databases::MergeArgs),
    /// GPUs side by side per shape, from the database alone.
    ///
    /// Per shape: winner, throughput, % of own peak, x cuBLAS; with geometric-mean ratios.
    Compare(databases::CompareArgs),
    /// A Markdown report with SVG charts comparing GPUs, from the database alone.
    Report(databases::ReportArgs),
    /// Run every GPU's recorded winners for a suite on this GPU ("tuned on X, run on Y").
    ///
    /// Each winner is timed as % of the best here; runs on several GPUs build the matrix.
    Cross(databases::CrossArgs),
    /// Print what a product would launch for a shape, and why, from the database alone.
    Best(BestArgs),
    /// Write the database's kernel for a shape as a CUDA header (or cubin, csv, json, t4).
    ///
    /// The header is self-contained: the kernel and a launch helper for nvcc-built products
    /// (no GPU needed).
    Export(ExportArgs),
    /// Measure a coverage grid, from which the runtime predicts shapes nobody tuned.
    ///
    /// A portfolio of configs is timed on shapes of every kind.
    Cover(coverage::CoverArgs),
    /// What a product gets on shapes nobody tuned, timed against cuBLAS.
    ///
    /// The runtime's choice for each (random or listed) shape, timed against cuBLAS, with and
    /// without the vendor guard, and against the nearest-shape rule it replaced.
    Evaluate(coverage::EvaluateArgs),
    /// Re-check what ships for this GPU: validate, re-time, compare checksums.
    ///
    /// Compiles every kernel the database holds for this GPU as the runtime would, validates it
    /// on its problem and on edge shapes, re-times it beside cuBLAS, and compares with the
    /// recorded time and checksum; exits non-zero when one fails, is stale or is slower than
    /// recorded beyond --max-slowdown.
    Verify(verify::VerifyArgs),
    /// For developers: print every built-in family's PTX fingerprints for one virtual arch.
    ///
    /// Compiles every built-in family's probes to PTX and prints their fingerprints as JSON
    /// (tests/nvrtc.rs compares them with configs/fingerprints/; see docs/fingerprints.md).
    #[command(hide = true)]
    Fingerprint(fingerprint::FingerprintArgs),
    /// Internal: serve a tuning parent over stdin/stdout (started by autotune itself).
    #[command(name = "__worker", hide = true)]
    Worker,
    /// Print a suite's table for one GPU, from the database alone.
    ///
    /// Per shape: winner, throughput, x cuBLAS, % of peak.
    Summary(SummaryArgs),
    /// Compare search strategies offline (no GPU) by replaying recorded run journals.
    ///
    /// How many evaluations each strategy needs to come within a few percent of the
    /// exhaustive optimum.
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

/// The GPU name and arch a lookup is for ([`lookup::lookup_gpu`]): `--gpu`, else the device's
/// (which needs a GPU); and the warning to print for an unseen GPU.
fn gpu_and_arch(
    gpu: &Option<String>,
    arch: &Option<String>,
    device: usize,
    db: &Database,
) -> Result<(String, Option<String>, Option<String>)> {
    let arch = arch.as_deref().map(str::parse::<Arch>).transpose()?;
    let asked = match gpu {
        Some(g) => lookup::Asked::Named(g),
        None => {
            let dev = Device::open(device).context(advice::NoGpuGiven)?;
            lookup::Asked::Device {
                name: dev.info.name.clone(),
                arch: dev.info.arch,
            }
        }
    };
    let found = lookup::lookup_gpu(db, "the database", asked, arch).map_err(|e| {
        let g = gpu.as_deref().unwrap_or_default();
        anyhow::Error::new(e).context(format!(
            "--gpu '{g}' names no GPU of the database: pass one it has, or --arch sm_XY to ask about an unseen GPU of that arch"
        ))
    })?;
    Ok((found.name, found.arch, found.unseen))
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
        write_cubin(a, &choice, family, op, shape, &limits, arch)?;
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
        let prelude = match &a.check_with {
            Some(p) => std::fs::read_to_string(p)
                .with_context(|| format!("reading --check-with {}", p.display()))?,
            None => String::new(),
        };
        let c = export::check_header(&text, &prelude, &choice.family, op, shape, arch)?;
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

/// `export --format cubin`: the chosen kernel compiled for `arch`, written to --output.
fn write_cubin(
    a: &ExportArgs,
    choice: &lookup::Choice,
    family: &autotune::family::catalog::Family,
    op: Op,
    shape: Shape,
    limits: &autotune::family::space::Limits,
    arch: Arch,
) -> Result<()> {
    if a.check_compile {
        bail!("--check-compile applies to --format cuda-header only (a cubin is compiled anyway)");
    }
    let Some(path) = &a.output else {
        bail!("--format cubin writes a binary file: give -o FILE.cubin");
    };
    let c = export::cubin(choice, family, shape, limits, arch)?;
    std::fs::write(path, &c.cubin).with_context(|| format!("writing {}", path.display()))?;
    eprintln!(
        "wrote {} ({}, {} for {} with NVRTC {}, {} B)",
        path.display(),
        choice.describe(op, shape),
        c.kernel_name,
        c.target_name(),
        nvrtc::describe()?,
        c.cubin.len()
    );
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
    // The top level takes the tuning options too (`autotune --shape ...`), but its help lists
    // the commands only: `autotune tune --help` lists those options.
    let command = Args::command().mut_args(|a| a.hide(true));
    let args = Args::from_arg_matches(&command.get_matches()).unwrap_or_else(|e| e.exit());
    let arg = match &args.command {
        Some(Command::Merge(_)) => advice::DbArg::Merge,
        _ => advice::DbArg::Db,
    };
    run(&args).map_err(|e| advice::advise(e, arg))
}

/// Runs the command `args` name.
fn run(args: &Args) -> Result<()> {
    match &args.command {
        Some(Command::Best(b)) => best(b),
        Some(Command::Export(e)) => export(e),
        Some(Command::Summary(a)) => summary(a),
        Some(Command::Merge(a)) => databases::merge(a),
        Some(Command::Compare(a)) => databases::compare(a),
        Some(Command::Report(a)) => databases::report(a),
        Some(Command::Cross(a)) => databases::cross(a),
        Some(Command::Cover(a)) => coverage::cover(a),
        Some(Command::Evaluate(a)) => coverage::evaluate(a),
        Some(Command::Simulate(a)) => simulate::run(a),
        Some(Command::Verify(a)) => verify::verify(a),
        Some(Command::Fingerprint(a)) => fingerprint::run(a),
        Some(Command::Worker) => tuning::worker(),
        Some(Command::Tune(a)) => tuning::run(a),
        None => tuning::run(&args.tune),
    }
}
