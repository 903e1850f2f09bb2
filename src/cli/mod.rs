//! Argument parsing, progress bars and printing. Nothing depends on this module.

use anyhow::{bail, Context, Result};
use autotune::compile::{self, Arch};
use autotune::db::Database;
use autotune::device::Device;
use autotune::export::{self, Format};
use autotune::lookup;
use autotune::report;
use autotune::runner;
use autotune::search::Exhaustive;
use autotune::shape::{Op, Shape};
use autotune::suite::Suite;
use autotune::template::{Catalog, Source};
use autotune::timing::TimingSettings;
use autotune::tune::{self, Phase, Progress, TuneOptions};
use clap::Parser;
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::sync::Mutex;

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
        conflicts_with = "suite"
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
    #[arg(long)]
    dry_run: bool,
    /// Target arch for --dry-run, e.g. sm_90 (H100/H200), sm_89 (RTX 4060), sm_61 (GTX 1080 Ti).
    #[arg(long)]
    arch: Option<String>,
    /// Tune only this family (repeatable); default: every family of the op.
    #[arg(long = "family")]
    families: Vec<String>,
    /// Seed of the random validation and timing inputs.
    #[arg(long, default_value_t = 0x5EED, value_parser = clap::value_parser!(u64).range(0..=i64::MAX as u64))]
    seed: u64,
    /// Fewer timing samples: faster, noisier.
    #[arg(long)]
    quick: bool,
    /// Do not write the database.
    #[arg(long)]
    no_save: bool,
    /// Read families from this directory (with templates/ and configs/spaces/) instead of the
    /// ones built into the binary.
    #[arg(long)]
    spaces: Option<PathBuf>,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Print what a product would launch for a shape, and why, from the database alone.
    Best(BestArgs),
    /// Write the kernel and launch helper the database chooses for a shape as a self-contained
    /// CUDA header for nvcc-built products (no GPU needed).
    Export(ExportArgs),
    /// Print a suite's table (winner, throughput, x cuBLAS, % of peak per shape) for one GPU
    /// from the database alone.
    Summary(SummaryArgs),
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
    let db = Database::load(&a.db)?;
    let Some(gpu) = db.gpu(&a.gpu) else {
        let known: Vec<_> = db.gpus.iter().map(|g| g.name.as_str()).collect();
        bail!(
            "no GPU named '{}' in {}; it has: {}",
            a.gpu,
            a.db.display(),
            known.join(", ")
        );
    };
    let mut entries = Vec::new();
    let mut missing = Vec::new();
    for &shape in &suite.shapes {
        match db.get(&a.gpu, suite.op, shape) {
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
    /// Operation: gemm or gemv.
    #[arg(long, default_value = "gemm")]
    op: String,
    /// Problem shape: MxNxK (gemm) or MxK (gemv).
    #[arg(long, short)]
    shape: String,
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
    fn resolve(&self) -> Result<(Op, Shape, Database, String, Option<String>)> {
        let op: Op = self.op.parse()?;
        let shape = Shape::parse(op, &self.shape)?;
        let db = Database::load(&self.db)?;
        let (gpu, arch) = gpu_and_arch(&self.gpu, &self.arch, self.device, &db)?;
        Ok((op, shape, db, gpu, arch))
    }
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
    /// Output format; accepted: cuda-header (a self-contained .cuh: the validated kernel and a
    /// host launch helper for exactly this shape).
    #[arg(long)]
    format: String,
    #[command(flatten)]
    target: Target,
    /// Write the header to this file instead of stdout.
    #[arg(long, short)]
    output: Option<PathBuf>,
    /// Before writing, check that the header compiles with NVRTC for the arch (needs NVRTC on
    /// LD_LIBRARY_PATH, no GPU); nothing is written when it does not.
    #[arg(long)]
    check_compile: bool,
    /// With --check-compile: compile this file's text followed by the header, in one
    /// translation unit (e.g. another exported header, to check that both coexist).
    #[arg(long, requires = "check_compile")]
    check_with: Option<PathBuf>,
}

/// The GPU name and arch a lookup is for: `--gpu` or the device's name; `--arch`, else the
/// database's record of the GPU, else the device's arch.
fn gpu_and_arch(
    gpu: &Option<String>,
    arch: &Option<String>,
    device: usize,
    db: &Database,
) -> Result<(String, Option<String>)> {
    let (gpu, dev_arch) = match gpu {
        Some(g) => (g.clone(), None),
        None => {
            let dev = Device::open(device)
                .context("no --gpu given, so the GPU's name is read from the device")?;
            (dev.info.name.clone(), Some(dev.info.arch.to_string()))
        }
    };
    let arch = arch
        .clone()
        .map(|s| s.parse::<Arch>().map(|x| x.to_string()))
        .transpose()?
        .or_else(|| db.gpu(&gpu).map(|g| g.arch.clone()))
        .or(dev_arch);
    Ok((gpu, arch))
}

/// `autotune export`: the database's choice for one shape as a file a product compiles.
fn export(a: &ExportArgs) -> Result<()> {
    let format: Format = a.format.parse()?;
    let (op, shape, db, gpu, arch) = a.target.resolve()?;
    let Some(arch) = arch else {
        bail!("the arch of GPU '{gpu}' is unknown (it is not in {}): pass --arch sm_XY, e.g. sm_90 for an H100/H200", a.target.db.display());
    };
    let arch: Arch = arch.parse()?;
    let Some(limits) = autotune::space::Limits::for_arch(arch.number() as i64) else {
        bail!(
            "no launch limits are known for {arch}: pass --arch with a supported arch, e.g. sm_90"
        );
    };
    let choice = lookup::lookup(&db, &gpu, Some(&arch.to_string()), op, shape);
    let catalog = Catalog::builtin()?;
    let family = catalog.get(&choice.family)?;
    let text = match format {
        Format::CudaHeader => export::cuda_header(&choice, family, op, shape, &limits, &gpu)?,
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
        compile::check_arch(arch)?;
        let c = compile::compile(&source, arch)
            .context("the exported header does not compile with NVRTC")?;
        eprintln!(
            "the header{} compiles for {arch} with NVRTC {} ({} B cubin, {:.0} ms)",
            if a.check_with.is_some() {
                " (after --check-with)"
            } else {
                ""
            },
            compile::nvrtc_version()?,
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
    Ok(())
}

/// `autotune best`: the lookup a product makes, explained.
fn best(a: &BestArgs) -> Result<()> {
    let (op, shape, db, gpu, arch) = a.target.resolve()?;
    let choice = lookup::lookup(&db, &gpu, arch.as_deref(), op, shape);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&choice)?);
        return Ok(());
    }
    println!(
        "{} on {gpu} ({})",
        choice.describe(op, shape),
        arch.as_deref().unwrap_or("arch unknown")
    );
    let catalog = Catalog::builtin()?;
    let family = catalog.get(&choice.family)?;
    let config = autotune::space::Config {
        family: choice.family.clone(),
        params: choice.params.clone(),
    };
    let limits = arch
        .as_deref()
        .and_then(|s| s.parse::<Arch>().ok())
        .and_then(|x| autotune::space::Limits::for_arch(x.number() as i64))
        .or_else(|| autotune::space::Limits::for_arch(90));
    if let Some(limits) = limits {
        let l = family.space.launch(&config, shape, &limits)?;
        println!(
            "launch {}: grid {:?}, block {:?}, dynamic shared memory {} B{}",
            family.kernel_name(&config),
            l.grid,
            l.block,
            l.dynamic_shared_bytes,
            if l.zero_output {
                ", output zeroed first"
            } else {
                ""
            }
        );
    }
    if let Some(e) = &choice.entry {
        if e.checksum != family.checksum {
            println!(
                "warning: this entry was tuned with another version of {} (checksum differs): re-tune {} {} to refresh it",
                e.family, e.op, e.shape
            );
        }
    }
    Ok(())
}

/// indicatif bars for the compile and benchmark phases.
struct Bars {
    multi: MultiProgress,
    bars: Mutex<Vec<(Phase, ProgressBar)>>,
}

impl Bars {
    fn new() -> Bars {
        Bars {
            multi: MultiProgress::new(),
            bars: Mutex::new(Vec::new()),
        }
    }
    fn with(&self, phase: Phase, f: impl FnOnce(&ProgressBar)) {
        if let Ok(bars) = self.bars.lock() {
            if let Some((_, b)) = bars.iter().find(|(p, _)| *p == phase) {
                f(b);
            }
        }
    }
}

impl Progress for Bars {
    fn start(&self, phase: Phase, total: u64) {
        let name = match phase {
            Phase::Compile => "compile",
            Phase::Benchmark => "benchmark",
        };
        let bar = self.multi.add(ProgressBar::new(total));
        let style = ProgressStyle::with_template(
            "{prefix:>9} [{bar:30}] {pos}/{len} {per_sec} {elapsed_precise} {wide_msg}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(name);
        if let Ok(mut bars) = self.bars.lock() {
            bars.push((phase, bar));
        }
    }
    fn step(&self, phase: Phase, message: &str) {
        self.with(phase, |b| {
            b.set_message(message.to_string());
            b.inc(1);
        });
    }
    fn finish(&self, phase: Phase) {
        self.with(phase, |b| b.finish_with_message("done"));
    }
}

fn catalog(args: &Args) -> Result<Catalog> {
    Ok(match &args.spaces {
        Some(dir) => Catalog::from_dir(dir)
            .with_context(|| format!("loading kernel families from {}", dir.display()))?,
        None => Catalog::builtin().context("loading the built-in kernel families")?,
    })
}

/// Runs the command line.
pub fn main() -> Result<()> {
    let args = Args::parse();
    match &args.command {
        Some(Command::Best(b)) => return best(b),
        Some(Command::Export(e)) => return export(e),
        Some(Command::Summary(a)) => return summary(a),
        None => {}
    }
    let (op, shapes) = match (&args.suite, &args.shape) {
        (Some(path), _) => {
            let suite = Suite::load(path)?;
            if let Some(op) = &args.op {
                let op: Op = op.parse()?;
                if op != suite.op {
                    bail!(
                        "--op {op} contradicts suite {} (op {})",
                        path.display(),
                        suite.op
                    );
                }
            }
            (suite.op, suite.shapes)
        }
        (None, Some(shape)) => {
            let op: Op = args.op.as_deref().unwrap_or("gemm").parse()?;
            (op, vec![Shape::parse(op, shape)?])
        }
        (None, None) => bail!("give --shape MxNxK (or MxK for gemv) or --suite FILE"),
    };
    let catalog = catalog(&args)?;
    let bars = Bars::new();

    if args.dry_run {
        let Some(arch) = &args.arch else {
            bail!("--dry-run needs --arch sm_XY (e.g. sm_90 for an H100/H200, sm_61 for a GTX 1080 Ti)");
        };
        let arch: Arch = arch.parse()?;
        let mut failed = 0;
        for &shape in &shapes {
            let r = tune::dry_run(&catalog, op, shape, arch, &args.families, &bars)?;
            if args.json {
                println!("{}", serde_json::to_string_pretty(&r)?);
            } else {
                print!("{}", report::dry_run_table(&r));
            }
            failed += r.families.iter().map(|f| f.failed.len()).sum::<usize>();
        }
        if failed > 0 {
            bail!("{failed} config(s) failed to compile for {arch}");
        }
        return Ok(());
    }
    if args.arch.is_some() {
        bail!(
            "--arch only applies with --dry-run: a real run always compiles for the GPU's own arch"
        );
    }

    // Load the database first: a corrupt file stops the run before any GPU time is spent.
    let db = if args.no_save {
        Database::new()
    } else {
        Database::load(&args.db)?
    };

    let dev = Device::open(args.device)?;
    let bandwidth = match db.gpu(&dev.info.name).and_then(|g| g.copy_bandwidth_gbs) {
        Some(b) => b,
        None => {
            let b = runner::copy_bandwidth_gbs(&dev)?;
            eprintln!("measured device-to-device copy bandwidth: {b:.0} GB/s");
            b
        }
    };
    drop(db);
    let opts = TuneOptions {
        seed: args.seed,
        timing: if args.quick {
            TimingSettings::quick()
        } else {
            TimingSettings::default()
        },
        families: args.families.clone(),
        budget: None,
    };
    let cache = compile::Cache::new();
    let mut winners = Vec::new();
    let mut gpu = None;
    let mut lost = Vec::new();
    for (i, &shape) in shapes.iter().enumerate() {
        eprintln!(
            "[{}/{}] tuning {op} {} on {} ({}), device {}",
            i + 1,
            shapes.len(),
            shape.label(op),
            dev.info.name,
            dev.info.arch,
            args.device
        );
        let mut r = tune::tune(
            &dev,
            &catalog,
            &cache,
            op,
            shape,
            &opts,
            &mut Exhaustive,
            &bars,
        )?;
        r.gpu.copy_bandwidth_gbs = Some(bandwidth);
        for f in &r.families {
            eprintln!(
                "space {}: {} configs, {} valid after pruning",
                f.family, f.total, f.valid
            );
        }
        if args.json {
            println!("{}", serde_json::to_string_pretty(&r)?);
        } else {
            print!("{}", report::tune_table(&r, args.top));
        }
        let Some(entry) = r.to_entry(&tune::utc_now_rfc3339()) else {
            eprintln!(
                "no candidate validated for {op} {}: every one of {} failed (reasons above); nothing recorded",
                shape.label(op),
                r.results.len()
            );
            lost.push(shape.label(op));
            continue;
        };
        // Each shape is saved as soon as it is tuned: an interrupted suite keeps what it did.
        if !args.no_save {
            let (g, e) = (r.gpu.clone(), entry.clone());
            Database::update_file(&args.db, |db| {
                db.upsert_gpu(g);
                db.upsert(e);
                Ok(())
            })?;
            eprintln!("wrote {} ({} {})", args.db.display(), op, shape.label(op));
        }
        gpu = Some(r.gpu.clone());
        winners.push(entry);
    }
    if let (Some(gpu), true) = (&gpu, args.suite.is_some()) {
        let refs: Vec<_> = winners.iter().collect();
        let md = report::suite_markdown(op, gpu, &refs);
        println!("\n{md}");
        if let Some(path) = &args.summary {
            std::fs::write(path, &md)
                .with_context(|| format!("writing the summary to {}", path.display()))?;
        }
    }
    if !lost.is_empty() {
        bail!(
            "no valid config for {} shape(s): {}",
            lost.len(),
            lost.join(", ")
        );
    }
    Ok(())
}
