//! `autotune simulate`: replays recorded run journals offline to compare search strategies.

use anyhow::{bail, Context, Result};
use autotune::gpu::Arch;
use autotune::search;
use autotune::tuning::replay::{self, SimulateOptions, REPLAYED};
use std::path::PathBuf;

/// Arguments of `autotune simulate`.
#[derive(Debug, clap::Args)]
pub(super) struct SimulateArgs {
    /// Run journals of full (exhaustive) runs, e.g. `--journal tests/data/journals/*.jsonl`
    /// (several files after one flag, or the flag repeated).
    #[arg(long = "journal", required = true, value_name = "FILE", num_args = 1..)]
    journals: Vec<PathBuf>,
    /// Strategies to replay: `all` (exhaustive, random, annealing, genetic, model-guided) or a
    /// comma-separated list of them.
    #[arg(long, default_value = "all")]
    strategies: String,
    /// Seeds per strategy (0 .. N-1).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    seeds: u64,
    /// A strategy has found the optimum once its best is within this many percent of it.
    #[arg(long, default_value_t = 3.0)]
    within: f64,
    /// Output: table (for a terminal) or markdown (for results/).
    #[arg(long, default_value = "table")]
    format: String,
    /// The recording GPU's arch for the model (default: the journal's, else known from the
    /// GPU name), e.g. sm_90.
    #[arg(long)]
    arch: Option<String>,
    /// The recording GPU's SM count for the model (default: the journal's, else known from
    /// the GPU name, else 132).
    #[arg(long)]
    sms: Option<u32>,
    /// Also write the output to this file.
    #[arg(long, short)]
    output: Option<PathBuf>,
}

/// Runs `autotune simulate`.
pub(super) fn run(a: &SimulateArgs) -> Result<()> {
    let markdown = match a.format.trim() {
        "table" => false,
        "markdown" | "md" => true,
        other => bail!("unknown --format '{other}': accepted formats are table and markdown"),
    };
    let strategies: Vec<String> = if a.strategies.trim() == "all" {
        REPLAYED.iter().map(|s| s.to_string()).collect()
    } else {
        a.strategies
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect()
    };
    for s in &strategies {
        search::by_name(s, 0)?;
    }
    if !(a.within.is_finite() && a.within >= 0.0) {
        bail!(
            "--within {} must be a percentage of at least 0 (e.g. 3)",
            a.within
        );
    }
    let arch = a
        .arch
        .as_deref()
        .map(|s| s.parse::<Arch>())
        .transpose()
        .context("--arch")?;
    let opts = SimulateOptions {
        strategies,
        seeds: a.seeds,
        within_pct: a.within,
        arch,
        sms: a.sms,
    };
    let sim = replay::simulate(&a.journals, &opts)?;
    let text = if markdown {
        sim.markdown()
    } else {
        sim.table()
    };
    print!("{text}");
    if let Some(p) = &a.output {
        std::fs::write(p, &text).with_context(|| format!("writing {}", p.display()))?;
    }
    let no_arch: Vec<&str> = sim
        .replays
        .iter()
        .filter(|r| r.arch_unknown)
        .map(|r| r.label.as_str())
        .collect();
    if !no_arch.is_empty() {
        eprintln!(
            "hint: pass --arch sm_XY (e.g. sm_90) for the model to estimate the candidates of {}",
            no_arch.join(", ")
        );
    }
    Ok(())
}
