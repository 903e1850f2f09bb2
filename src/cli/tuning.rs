//! The tuning run: `autotune tune --shape ...` / `--suite ...` (also without `tune`), and the
//! hidden worker subcommand.

use super::{RunArgs, TimingArgs};
use anyhow::{bail, Context, Result};
use autotune::cuda::cublas_lib;
use autotune::cuda::isolate;
use autotune::cuda::nvrtc::{self, DiskCache};
use autotune::db::Database;
use autotune::family::catalog::Catalog;
use autotune::family::expr::Expr;
use autotune::family::math::MathFilter;
use autotune::plan::outcome::{DrySelection, TuneReport};
use autotune::problem::{Op, Shape};
use autotune::report;
use autotune::search;
use autotune::suite::Suite;
use autotune::tuning::journal;
use autotune::tuning::session::{
    self, DevicesOutcome, Event, Observer, SessionError, SessionOptions, Update,
};
use autotune::tuning::shard::{self, Shard};
use autotune::tuning::tune::{self, Phase, Progress, TuneOptions};
use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The options of `autotune tune` (and of the bare `autotune --shape ...`).
#[derive(Debug, clap::Args)]
pub(super) struct TuneArgs {
    /// Problem shape: MxNxK for gemm (C = A B), MxK or Mx1xK for gemv (y = A x).
    #[arg(
        long,
        short,
        required_unless_present = "suite",
        conflicts_with = "suite",
        allow_hyphen_values = true,
        help_heading = "Problem"
    )]
    shape: Option<String>,
    /// Tune every shape of a suite file (e.g. configs/suites/gemv.toml); its `op` applies.
    #[arg(long, help_heading = "Problem")]
    suite: Option<PathBuf>,
    /// Operation: gemm or gemv (default gemm; a suite names its own).
    #[arg(long, help_heading = "Problem")]
    op: Option<String>,
    /// Operand layouts of --shape, row-major convention (first letter A, second B; t =
    /// stored transposed): nn (default), nt, tn, tt; gemv: n or t (y = A^T x). A suite's
    /// shapes name their own (e.g. "512x512x64:tn:b32:beta").
    #[arg(long, requires = "shape", help_heading = "Problem")]
    layout: Option<String>,
    /// Strided batch of --shape: this many products in one call (default 1).
    #[arg(long, requires = "shape", help_heading = "Problem")]
    batch: Option<u64>,
    /// Beta of --shape: C = alpha op(A) op(B) + beta C; any non-zero value reads C (tuned with
    /// beta = 0.5). Default 0.
    #[arg(long, requires = "shape", help_heading = "Problem")]
    beta: Option<f64>,
    /// Padded leading dimensions for --shape (rows rounded up past the next multiple of 64
    /// floats) instead of packed ones.
    #[arg(long, requires = "shape", help_heading = "Problem")]
    padded: bool,
    /// Search strategy: exhaustive, random, annealing, genetic, model-guided, or auto
    /// (exhaustive when the valid space has at most 1000 candidates, else model-guided).
    /// Compare them offline with `autotune simulate`.
    #[arg(long, default_value = "auto", help_heading = "Search")]
    strategy: String,
    /// Evaluate at most N candidates per shape (candidates resumed from a journal count).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Search")]
    budget: Option<u64>,
    /// Wall-clock limit per shape, e.g. 60s, 5m, 1h (a plain number is seconds): no candidate
    /// starts after it, and the best found so far is recorded, marked partial.
    #[arg(long, value_name = "DURATION", value_parser = super::parse_duration, help_heading = "Search")]
    time: Option<std::time::Duration>,
    /// Tune only this family (repeatable); default: every family of the op.
    #[arg(long = "family", value_name = "NAME", help_heading = "Search")]
    families: Vec<String>,
    /// Tune only the configs that meet this condition (repeatable), an expression of the
    /// spaces' language over a family's parameters, e.g. "FASTLOAD == 2" or "BM >= 128 && BK ==
    /// 32"; every family tuned must know its names (name them with --family).
    #[arg(long = "where", value_name = "EXPR", value_parser = parse_condition, help_heading = "Search")]
    conditions: Vec<Expr>,
    /// Tune only deterministic families, whose kernels give bit-identical results on every run
    /// (no atomic accumulation: e.g. gemm_warptile_splitk_det instead of
    /// gemm_warptile_splitk); the database records which entries are.
    #[arg(long, help_heading = "Search")]
    deterministic: bool,
    /// Which maths to tune: simt (FP32 FMAs on the CUDA cores, for FMA-exact behaviour),
    /// tf32x3 (3xTF32 on the tensor cores), or any (both meet the FP32 tolerance). A family's
    /// space says its math; each entry records it.
    #[arg(long, default_value = "any", value_name = "MATH", value_parser = parse_math, help_heading = "Search")]
    math: MathFilter,
    /// Read families from this directory (with templates/ and configs/spaces/) instead of the
    /// ones built into the binary.
    #[arg(long, value_name = "DIR", help_heading = "Search")]
    spaces: Option<PathBuf>,
    #[command(flatten)]
    timing: TimingArgs,
    #[command(flatten)]
    run: RunArgs,
    /// Tune on several GPUs at once: `0,1` or `all`. They share one work queue: each takes the
    /// next shape of its GPU model when free (a shape's candidates are split across identical
    /// GPUs where whole shapes would leave a long tail); every GPU model tunes every shape; each
    /// entry records the GPU that produced it.
    #[arg(long, conflicts_with = "device", help_heading = "Run")]
    devices: Option<String>,
    /// Compile every kernel with NVRTC, bypassing the on-disk compile cache
    /// ($AUTOTUNE_CACHE_DIR, else ~/.cache/autotune) shared with the runtime.
    #[arg(long, help_heading = "Run")]
    no_cache: bool,
    /// Tuning database to update.
    #[arg(long, default_value = "results/tuning.toml", help_heading = "Database")]
    db: PathBuf,
    /// Do not write the database.
    #[arg(long, help_heading = "Database")]
    no_save: bool,
    /// Continue an interrupted run from its journal: finished candidates are not run again.
    #[arg(long, help_heading = "Database")]
    resume: bool,
    /// Where run journals go (default: journal/ next to the database).
    #[arg(long, help_heading = "Database")]
    journal_dir: Option<PathBuf>,
    /// Tune only shard INDEX/COUNT of the suite (e.g. 0/4), writing the database with
    /// `.shard-INDEX-of-COUNT` before its extension; inside a Slurm job array this is taken
    /// from SLURM_ARRAY_TASK_ID / SLURM_ARRAY_TASK_COUNT. Join shards with `autotune merge`.
    #[arg(long, help_heading = "Database")]
    shard: Option<String>,
    /// Rows of the results table.
    #[arg(long, default_value_t = 10, help_heading = "Output")]
    top: usize,
    /// Print the full report as JSON on stdout instead of the table.
    #[arg(long, help_heading = "Output")]
    json: bool,
    /// Write the suite's summary table (Markdown) to this file as well.
    #[arg(long, requires = "suite", help_heading = "Output")]
    summary: Option<PathBuf>,
    /// Enumerate, prune, instantiate and compile every candidate for --arch without a GPU.
    /// NVRTC is the library $AUTOTUNE_NVRTC names (a file, or a directory holding
    /// libnvrtc.so.N), else the libnvrtc the dynamic loader finds (NVRTC 13 before 12).
    #[arg(long, help_heading = "Dry run (no GPU)")]
    dry_run: bool,
    /// Target arch for --dry-run, e.g. sm_90 (H100/H200), sm_89 (RTX 4060), sm_61 (GTX 1080 Ti;
    /// needs NVRTC 12: AUTOTUNE_NVRTC=/path/to/libnvrtc.so.12).
    #[arg(long, help_heading = "Dry run (no GPU)")]
    arch: Option<String>,
    /// With --dry-run: compile per family a covering set of its valid configs (every value of
    /// each parameter beside every value of each other one) instead of all of them: a quick
    /// check that a family compiles for an arch.
    #[arg(long, requires = "dry_run", help_heading = "Dry run (no GPU)")]
    covering: bool,
}

/// Ctrl-C once: finish the current candidate, record the best so far (partial) and stop.
/// Twice: leave at once (the journal keeps what finished).
fn interrupt_flag() -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    let f = Arc::clone(&flag);
    ctrlc::set_handler(move || {
        if f.swap(true, Ordering::SeqCst) {
            eprintln!("\ninterrupted again: leaving now; --resume continues from the journal");
            std::process::exit(130);
        }
        eprintln!("\ninterrupt: stopping after the current candidate (Ctrl-C again to leave now)");
    })
    .context("installing the Ctrl-C handler")?;
    Ok(flag)
}

/// `autotune __worker`: serves one parent over stdin/stdout (see `autotune::cuda::isolate`).
pub(super) fn worker() -> ! {
    // Ctrl-C reaches the whole process group; the parent decides what stops.
    let _ = ctrlc::set_handler(|| {});
    let code = isolate::serve(std::io::stdin().lock(), std::io::stdout().lock());
    // The CUDA context may be broken: leave without running its destructors.
    std::process::exit(code)
}

/// `shape` with the form the flags `--layout`, `--batch`, `--beta` and `--padded` give it (each
/// overrides the shape's own tag).
fn with_form_args(args: &TuneArgs, op: Op, shape: Shape) -> Result<Shape> {
    let form = form_flags(
        op,
        shape.form,
        args.layout.as_deref(),
        args.batch,
        args.beta,
        args.padded,
    )?;
    Ok(shape.with_form(form))
}

/// `form` with what the flags `--layout`, `--batch`, `--beta` and `--padded` say (each
/// overrides that part of it; `padded` false leaves it as it was).
pub(super) fn form_flags(
    op: Op,
    mut form: autotune::problem::Form,
    layout: Option<&str>,
    batch: Option<u64>,
    beta: Option<f64>,
    padded: bool,
) -> Result<autotune::problem::Form> {
    if let Some(l) = layout {
        form.layout = autotune::problem::Layout::parse(op, l)?;
    }
    if let Some(b) = batch {
        if !(1..=autotune::problem::MAX_BATCH).contains(&b) {
            bail!(
                "--batch {b}: the batch count must be between 1 and {}",
                autotune::problem::MAX_BATCH
            );
        }
        form.batch = b;
    }
    if let Some(beta) = beta {
        if !beta.is_finite() {
            bail!("--beta {beta}: give a finite number (0: C is only written)");
        }
        form.beta = beta != 0.0;
    }
    if padded {
        form.padded = true;
    }
    Ok(form)
}

/// Tunes the shapes of `--shape` or `--suite` (or compiles them, with `--dry-run`).
pub(super) fn run(args: &TuneArgs) -> Result<()> {
    let (op, shapes) = problems(args)?;
    let catalog = tuning_catalog(args)?;
    let bars = Bars::new();
    if args.dry_run {
        return dry_run(args, &catalog, op, &shapes, &bars);
    }
    if args.arch.is_some() {
        bail!(
            "--arch only applies with --dry-run: a real run always compiles for the GPU's own arch"
        );
    }
    // An unknown strategy fails before any GPU work.
    search::by_name(&args.strategy, args.timing.seed)?;
    // One shard of a suite (Slurm job arrays, several machines) writes its own database.
    let shard = match &args.shard {
        Some(text) => Some(Shard::parse(text)?),
        None => Shard::from_slurm(|k| std::env::var(k).ok())?,
    };
    let (shapes, db) = match shard {
        Some(sh) => (my_shapes(op, &shapes, sh), shard::db_path(&args.db, sh)),
        None => (shapes, args.db.clone()),
    };
    if shapes.is_empty() {
        eprintln!("nothing to tune in this shard");
        return Ok(());
    }
    // Check the database first: a corrupt or unwritable file stops the run before any GPU
    // time is spent.
    if !args.no_save {
        Database::load(&db)?;
        Database::check_writable(&db)?;
    }
    let devices = super::parse_devices(args.devices.as_deref(), args.run.device)?;
    let session = session_options(args, op, db, shard)?;
    announce_libraries();
    let printer = Printer {
        op,
        bars: &bars,
        per_device: (devices.len() > 1).then(|| DeviceBars::new(&bars.multi)),
        json: args.json,
        top: args.top,
    };
    let cache = nvrtc::Cache::new();
    let outcome = session::tune_on_devices(&devices, &shapes, &catalog, &cache, &session, &printer);
    if devices.len() > 1 {
        eprint!("{}", super::devices_summary(&outcome.usage, &cache));
    }
    finish(args, op, outcome)
}

/// The op and shapes of `--suite`, or of `--shape` with its form flags.
fn problems(args: &TuneArgs) -> Result<(Op, Vec<Shape>)> {
    Ok(match (&args.suite, &args.shape) {
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
            (
                op,
                vec![with_form_args(args, op, Shape::parse(op, shape)?)?],
            )
        }
        (None, None) => bail!("give --shape MxNxK (or MxK for gemv) or --suite FILE"),
    })
}

/// `--dry-run`: compiles every candidate of `shapes` for `--arch`, no GPU.
fn dry_run(
    args: &TuneArgs,
    catalog: &Catalog,
    op: Op,
    shapes: &[Shape],
    bars: &Bars,
) -> Result<()> {
    let Some(arch) = &args.arch else {
        bail!(
            "--dry-run needs --arch sm_XY (e.g. sm_90 for an H100/H200, sm_61 for a GTX 1080 Ti)"
        );
    };
    // compute_XY: PTX for that virtual arch (what `verify --ptx-arch` loads), else a cubin.
    let arch: nvrtc::Target = arch.parse()?;
    let mut failed = 0;
    // One cache for the suite: a kernel's source does not depend on the shape.
    let cache = nvrtc::Cache::new();
    // And the disk cache tuning runs and the runtime share: a second dry run compiles nothing.
    let disk = if args.no_cache {
        None
    } else {
        DiskCache::user_default()
    };
    for &shape in shapes {
        let r = tune::dry_run(
            catalog,
            op,
            shape,
            arch,
            &args.families,
            &args.conditions,
            if args.covering {
                DrySelection::Covering
            } else {
                DrySelection::Every
            },
            &cache,
            disk.as_ref(),
            bars,
        )?;
        let total: usize = r.families.iter().map(|f| f.compiled + f.failed.len()).sum();
        eprintln!(
            "{op} {}: {} of {total} kernel(s) compiled by NVRTC now, the rest taken from this run's or the disk cache ({:.1} s)",
            shape.label(op),
            r.compiled_now,
            r.wall_s
        );
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
    Ok(())
}

/// The shapes of shard `sh`, said on stderr.
fn my_shapes(op: Op, shapes: &[Shape], sh: Shard) -> Vec<Shape> {
    let mine = shard::select(op, shapes, sh);
    let labels: Vec<String> = mine.iter().map(|s| s.label(op)).collect();
    eprintln!(
        "shard {sh}: {} of the {} shape(s): {}",
        mine.len(),
        shapes.len(),
        labels.join(", ")
    );
    mine
}

/// What the session does, from the flags: `db` is the database it writes (the shard's).
fn session_options(
    args: &TuneArgs,
    op: Op,
    db: PathBuf,
    shard: Option<Shard>,
) -> Result<SessionOptions> {
    let journal_dir = journal::dir_for(args.journal_dir.as_deref(), &db, !args.no_save);
    if args.resume && journal_dir.is_none() {
        bail!("--resume needs a journal: drop --no-save or give --journal-dir");
    }
    let run = TuneOptions {
        seed: args.timing.seed,
        timing: args.timing.settings(),
        families: args.families.clone(),
        conditions: args.conditions.clone(),
        budget: args.budget.map(|b| b as usize),
        isolation: args.run.isolation()?,
        journal: None,
        resume: args.resume,
        stop: Some(interrupt_flag()?),
        // Set per shape (--time is a limit for each).
        deadline: None,
        disk_cache: if args.no_cache {
            None
        } else {
            DiskCache::user_default()
        },
        // Set per unit (a shape split across identical GPUs runs in parts).
        part: autotune::tuning::queue::Part::WHOLE,
    };
    Ok(SessionOptions {
        op,
        run,
        strategy: args.strategy.clone(),
        seed: args.timing.seed,
        time_limit: args.time,
        journal_dir,
        db,
        save: !args.no_save,
        shard,
    })
}

/// Says which NVRTC compiles (AUTOTUNE_NVRTC chooses) and which cuBLAS is the baseline
/// (AUTOTUNE_CUBLAS chooses); when one is missing, tuning says so.
fn announce_libraries() {
    if let Ok(which) = nvrtc::describe() {
        eprintln!("compiling with NVRTC {which}");
    }
    if let Ok(which) = cublas_lib::describe() {
        eprintln!("baseline: cuBLAS {which}");
    }
}

/// Prints a suite's tables (and writes --summary), then fails with the devices' errors or the
/// shapes nothing validated for.
fn finish(args: &TuneArgs, op: Op, outcome: DevicesOutcome) -> Result<()> {
    if args.suite.is_some() {
        let mut all_md = String::new();
        for (gpu, winners) in &outcome.by_gpu {
            let refs: Vec<_> = winners.iter().collect();
            let md = report::suite_markdown(op, gpu, &refs);
            println!("\n{md}");
            all_md.push_str(&md);
        }
        if let (Some(path), false) = (&args.summary, all_md.is_empty()) {
            std::fs::write(path, &all_md)
                .with_context(|| format!("writing the summary to {}", path.display()))?;
        }
    }
    // The errors keep their types, so that main can add the advice for them.
    let mut errors: Vec<anyhow::Error> = outcome
        .errors
        .into_iter()
        .map(|e| super::advice::advise(session_error(e), super::advice::DbArg::Db))
        .collect();
    match errors.len() {
        0 => {}
        1 => return Err(errors.remove(0)),
        _ => return Err(super::advice::DevicesFailed(errors).into()),
    }
    if !outcome.untuned.is_empty() {
        bail!(
            "{} shape(s) left untuned (no device of their GPU model could take them): {}",
            outcome.untuned.len(),
            outcome.untuned.join(", ")
        );
    }
    match (outcome.lost.is_empty(), outcome.out_of_time.is_empty()) {
        (true, true) => {}
        (false, _) => bail!(
            "no valid config for {} shape(s): {}{}",
            outcome.lost.len(),
            outcome.lost.join(", "),
            out_of_time_note(&outcome.out_of_time)
        ),
        (true, false) => bail!(
            "{} shape(s) ran out of time before their first candidate finished: {}; give them a \
             longer --time",
            outcome.out_of_time.len(),
            outcome.out_of_time.join(", ")
        ),
    }
    Ok(())
}

/// A session's error, the database's own where it is one, so that `advise` finds it and adds
/// the --db advice.
fn session_error(e: SessionError) -> anyhow::Error {
    match e {
        SessionError::Db(e) => anyhow::Error::from(e),
        e => anyhow::Error::from(e),
    }
}

/// Prints a session's events as the tool always has: progress lines on stderr, each shape's
/// table (or JSON) on stdout.
struct Printer<'a> {
    op: Op,
    bars: &'a Bars,
    /// With several devices: one bar per device instead of one per phase.
    per_device: Option<DeviceBars>,
    json: bool,
    top: usize,
}

impl Progress for Printer<'_> {
    fn start(&self, phase: Phase, total: u64) {
        self.bars.start(phase, total)
    }
    fn step(&self, phase: Phase, message: &str) {
        self.bars.step(phase, message)
    }
    fn finish(&self, phase: Phase) {
        self.bars.finish(phase)
    }
}

impl Observer for Printer<'_> {
    fn on_device(&self, device: usize, update: Update<'_>) {
        match &self.per_device {
            Some(bars) => bars.update(device, update),
            None => match update {
                Update::Start(p, n) => self.start(p, n),
                Update::Step(p, m) => self.step(p, m),
                Update::Finish(p) => self.finish(p),
            },
        }
    }

    fn event(&self, event: Event<'_>) {
        match event {
            Event::Bandwidth { ordinal, gbs } => eprintln!(
                "device {ordinal}: measured device-to-device copy bandwidth: {gbs:.0} GB/s"
            ),
            Event::Start {
                done,
                total,
                eta,
                shape,
                part,
                device,
                gpu,
            } => {
                let op = self.op;
                let what = if part.count > 1 {
                    format!("{} ({part})", shape.label(op))
                } else {
                    shape.label(op)
                };
                let eta = eta.map_or(String::new(), |e| {
                    format!("; ETA {}", super::seconds(e.as_secs_f64()))
                });
                if let Some(bars) = &self.per_device {
                    bars.took(device, &format!("{op} {what} [{done}/{total}{eta}]"));
                }
                eprintln!(
                    "[{}/{total}] tuning {op} {what} on {gpu}, device {device}{eta}",
                    done + 1,
                )
            }
            Event::PartDone {
                shape,
                part,
                device,
                tried,
                best_ms,
            } => eprintln!(
                "{} {part} done on device {device}: {tried} candidate(s), best {}",
                self.what(shape),
                best_ms.map_or("none valid".to_string(), |t| format!("{t:.4} ms"))
            ),
            Event::Incomplete { shape, ran, parts } => eprintln!(
                "{}: only {ran} of its {parts} parts ran (a device was lost or the run stopped): the best of them is recorded, marked partial; --resume runs the rest",
                self.what(shape)
            ),
            Event::Lost { device, requeued } => eprintln!(
                "device {device} failed and takes no more work{}",
                if requeued {
                    "; the shape it held goes to another device"
                } else {
                    ""
                }
            ),
            Event::Tuned(r) => self.tuned(r),
            Event::NothingValid {
                shape,
                out_of_time: true,
                ..
            } => eprintln!(
                "the time limit ran out before the first candidate of {} finished: nothing \
                 recorded; a longer --time tunes it",
                self.what(shape)
            ),
            Event::NothingValid { shape, tried, .. } => eprintln!(
                "no candidate validated for {}: every one of {tried} failed (reasons above); nothing recorded",
                self.what(shape)
            ),
            Event::Saved { path, shape } => {
                eprintln!("wrote {} ({})", path.display(), self.what(shape))
            }
            Event::Recheck(line) => eprintln!("{line}"),
            Event::TimeLimit {
                shape,
                tried,
                strategy,
            } => eprintln!(
                "time limit reached for {} after {tried} candidate(s) ({strategy}): the best so far was recorded, marked partial; --resume with a longer --time continues it",
                self.what(shape)
            ),
        }
    }
}

impl Printer<'_> {
    /// `gemm 2048x2048x2048`.
    fn what(&self, shape: Shape) -> String {
        format!("{} {}", self.op, shape.label(self.op))
    }

    fn tuned(&self, r: &TuneReport) {
        let ran = r.results.len() - r.resumed;
        eprintln!(
            "compile: {} kernel(s) by NVRTC, {:.1} s; benchmark: {} candidate(s) in {:.1} s ({:.1}/s), overlapping",
            r.compiled_now,
            r.compile_s,
            ran,
            r.bench_s,
            ran as f64 / r.bench_s.max(1e-9)
        );
        if r.resumed > 0 {
            eprintln!(
                "resumed: {} candidate(s) taken from the journal, {ran} run now",
                r.resumed
            );
        }
        if r.worker_restarts > 0 {
            eprintln!(
                "{} candidate(s) killed their worker process (fault, hang or crash); each was recorded as failed and a new worker started",
                r.worker_restarts
            );
        }
        for f in &r.families {
            eprintln!(
                "space {}: {} configs, {} valid after pruning",
                f.family, f.total, f.valid
            );
        }
        let valid: usize = r.families.iter().map(|f| f.valid).sum();
        eprintln!(
            "search: {}, {} of {valid} valid candidate(s) evaluated{}",
            r.strategy,
            r.results.len(),
            if r.partial { " (partial)" } else { "" }
        );
        if self.json {
            match serde_json::to_string_pretty(r) {
                Ok(j) => println!("{j}"),
                Err(e) => eprintln!("could not write the report as JSON: {e}"),
            }
        } else {
            print!("{}", report::tune_table(r, self.top));
        }
    }
}

/// One bar per device (several devices): its current shape, where the queue stands and the
/// candidates benchmarked of the current run.
struct DeviceBars {
    multi: MultiProgress,
    bars: Mutex<Vec<(usize, ProgressBar)>>,
}

impl DeviceBars {
    fn new(multi: &MultiProgress) -> DeviceBars {
        DeviceBars {
            multi: multi.clone(),
            bars: Mutex::new(Vec::new()),
        }
    }

    fn with(&self, device: usize, f: impl FnOnce(&ProgressBar)) {
        let Ok(mut bars) = self.bars.lock() else {
            return;
        };
        if let Some((_, b)) = bars.iter().find(|(d, _)| *d == device) {
            return f(b);
        }
        let bar = self.multi.add(ProgressBar::new(0));
        let style = ProgressStyle::with_template(
            "{prefix:>9} [{bar:24}] {pos}/{len} {elapsed_precise} {wide_msg}",
        )
        .map(|s| s.progress_chars("=> "))
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(format!("device {device}"));
        f(&bar);
        bars.push((device, bar));
    }

    /// The device took a unit: `what` says which and where the queue stands.
    fn took(&self, device: usize, what: &str) {
        self.with(device, |b| {
            b.set_message(what.to_string());
            b.set_position(0);
        });
    }

    fn update(&self, device: usize, update: Update<'_>) {
        match update {
            Update::Start(Phase::Benchmark, n) => self.with(device, |b| {
                b.set_length(n);
                b.set_position(0);
            }),
            Update::Step(Phase::Benchmark, _) => self.with(device, |b| b.inc(1)),
            _ => {}
        }
    }
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
            // The newest bar of the phase: each shape of a suite adds its own.
            if let Some((_, b)) = bars.iter().rev().find(|(p, _)| *p == phase) {
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

/// `--where`: a condition in the spaces' expression language.
fn parse_condition(text: &str) -> Result<Expr, String> {
    Expr::parse(text).map_err(|e| e.to_string())
}

/// The families: those under `spaces` (`--spaces DIR`), else the built-in ones.
pub(super) fn catalog(spaces: Option<&std::path::Path>) -> Result<Catalog> {
    Ok(match spaces {
        Some(dir) => Catalog::from_dir(dir)
            .with_context(|| format!("loading kernel families from {}", dir.display()))?,
        None => Catalog::builtin().context("loading the built-in kernel families")?,
    })
}

/// The families a tuning run may use: [`catalog`], only the deterministic ones with
/// `--deterministic`, only those of the maths `--math` admits.
fn tuning_catalog(args: &TuneArgs) -> Result<Catalog> {
    let catalog = catalog(args.spaces.as_deref())?;
    let catalog = if args.deterministic {
        catalog.deterministic_only(&args.families)?
    } else {
        catalog
    };
    Ok(catalog.with_math(args.math, &args.families)?)
}

/// `--math`: any, simt or tf32x3 (the error lists them).
fn parse_math(text: &str) -> std::result::Result<MathFilter, String> {
    text.parse()
        .map_err(|e: autotune::family::math::MathError| e.to_string())
}

/// The shapes that ran out of time, as a clause after the shapes without a valid config.
fn out_of_time_note(shapes: &[String]) -> String {
    if shapes.is_empty() {
        return String::new();
    }
    format!(
        "; {} more ran out of time before their first candidate finished (a longer --time \
         tunes them): {}",
        shapes.len(),
        shapes.join(", ")
    )
}
