//! `autotune verify`: re-checks what a database ships for the GPU at hand (validation on the
//! entries' problems and edge shapes, timing against the record, stale checksums), and exits
//! non-zero when a kernel fails.

use anyhow::{bail, Result};
use autotune::cuda::device::Device;
use autotune::cuda::nvrtc::{self, Target};
use autotune::db::Database;
use autotune::problem::{Op, Shape};
use autotune::tuning::verdict::{Policy, Report, DEFAULT_MAX_SLOWDOWN};
use autotune::tuning::verify::{self, Selection, VerifyOptions};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub(super) struct VerifyArgs {
    /// The tuning database to verify.
    #[arg(long, default_value = "results/tuning.toml")]
    db: PathBuf,
    /// Verify the entries of this GPU, as the database names it (default: the GPU at hand).
    /// Another GPU's entries are validated, but their timings are not judged.
    #[arg(long)]
    gpu: Option<String>,
    /// Only the entries of this op (gemm or gemv).
    #[arg(long)]
    op: Option<String>,
    /// Only the entry of this shape: MxNxK (gemm), MxK (gemv, with --op gemv).
    #[arg(long, short, allow_hyphen_values = true)]
    shape: Option<String>,
    /// Only the entries (and, with --space-ends, the space ends) of this family; repeatable.
    #[arg(long)]
    family: Vec<String>,
    /// An entry fails when it runs more than this many times slower than recorded, relative
    /// to cuBLAS timed in the same process (1.25: 25% slower).
    #[arg(long, default_value_t = DEFAULT_MAX_SLOWDOWN, value_parser = parse_slowdown)]
    max_slowdown: f64,
    /// Read families from this directory (with templates/ and configs/spaces/) instead of the
    /// built-in ones: entries tuned with other sources are then stale.
    #[arg(long)]
    spaces: Option<PathBuf>,
    /// Compile PTX for this older virtual arch (e.g. compute_75) instead of a cubin for the
    /// device: the driver JIT-compiles it, so the templates' older-arch code paths run and are
    /// validated here. Their timings are not this GPU's and are not judged.
    #[arg(long, value_name = "compute_XY")]
    ptx_arch: Option<String>,
    /// Validate on the edge shapes only: no entry problem, no timing (for compute-sanitizer).
    #[arg(long)]
    edge_only: bool,
    /// Also validate the first and last config of every family's space on the edge shapes.
    #[arg(long)]
    space_ends: bool,
    #[command(flatten)]
    timing: super::TimingArgs,
    #[command(flatten)]
    run: super::RunArgs,
    /// Print the report as JSON on stdout instead of the table.
    #[arg(long)]
    json: bool,
}

/// A slowdown factor of at least 1.
fn parse_slowdown(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 1.0 => Ok(v),
        _ => Err(format!(
            "'{text}' is not a slowdown factor: give a number >= 1, e.g. 1.25 for 25% slower"
        )),
    }
}

/// `autotune verify`.
pub(super) fn verify(a: &VerifyArgs) -> Result<()> {
    let op: Option<Op> = a.op.as_deref().map(str::parse).transpose()?;
    let shape = match &a.shape {
        Some(s) => Some(Shape::parse(op.unwrap_or(Op::Gemm), s)?),
        None => None,
    };
    let target: Option<Target> = match &a.ptx_arch {
        None => None,
        Some(t) => match t.parse::<Target>()? {
            p @ Target::Ptx(_) => Some(p),
            Target::Cubin(_) => {
                bail!("--ptx-arch takes a virtual arch, compute_XY (e.g. compute_75), not '{t}'")
            }
        },
    };
    let catalog = super::tuning::catalog(a.spaces.as_deref())?;
    for f in &a.family {
        catalog.get(f)?;
    }
    let db = Database::load_existing(&a.db)?;
    let dev = Device::open(a.run.device)?;
    let selection = Selection {
        gpu: match &a.gpu {
            Some(g) => autotune::report::gpus::resolve_gpu(&db, &a.db.display().to_string(), g)?,
            None => dev.info.name.clone(),
        },
        op,
        shape,
        families: a.family.clone(),
        space_ends: a.space_ends,
    };
    let origin = a.db.display().to_string();
    let (entries, subjects) =
        verify::subjects(&db, &origin, &catalog, &selection, &dev.info.limits)?;
    let gpu = selection.gpu;
    let timing_not_comparable =
        verify::timing_not_comparable(target, &gpu, &dev.info.name, dev.info.arch);
    let opts = options(a, target)?;
    let target_used = verify::target(&dev, &opts)?;
    let nvrtc = nvrtc::describe()?;
    let cublas = autotune::cuda::cublas_lib::describe()?;
    eprintln!(
        "verify: {} entr{} of {gpu} in {}{} on {} ({}), device {}; {} with NVRTC {nvrtc}; baseline cuBLAS {cublas}; kernels run {}",
        entries,
        if entries == 1 { "y" } else { "ies" },
        a.db.display(),
        match subjects.len() - entries {
            0 => String::new(),
            n => format!(", and {n} space end(s)"),
        },
        dev.info.name,
        dev.info.arch,
        dev.info.ordinal,
        if target_used.is_ptx() {
            format!("PTX for {target_used} (JIT-compiled by the driver; timings not judged, never recorded)")
        } else {
            format!("cubins for {target_used}")
        },
        if a.run.in_process {
            "in this process"
        } else {
            "in worker processes"
        }
    );
    let cache = nvrtc::Cache::new();
    let measured = verify::verify(&dev, &catalog, &cache, &subjects, &opts, &|l| {
        eprintln!("{l}")
    })?;
    let report = Report::new(
        dev.info.name.clone(),
        gpu,
        target_used.to_string(),
        nvrtc,
        cublas,
        Policy {
            max_slowdown: a.max_slowdown,
            timing_not_comparable,
        },
        subjects.into_iter().zip(measured).collect(),
    );
    conclude(&report, a.json)
}

/// How kernels run and are timed, from the flags; `target`: PTX for --ptx-arch.
fn options(a: &VerifyArgs, target: Option<Target>) -> Result<VerifyOptions> {
    let isolation = a.run.isolation()?;
    Ok(VerifyOptions {
        seed: a.timing.seed,
        timing: a.timing.settings(),
        target,
        edge_only: a.edge_only,
        isolation,
    })
}

/// Prints the report (a table, or JSON) and fails when a kernel failed.
fn conclude(report: &Report, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print!("{}", report.table().render());
        print!("{}", report.findings_text());
    }
    let failed = report.failures().count();
    if failed > 0 {
        let counts: Vec<String> = report
            .counts()
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        bail!(
            "{failed} of {} kernel(s) failed verification ({})",
            report.rows.len(),
            counts.join(", ")
        );
    }
    Ok(())
}
