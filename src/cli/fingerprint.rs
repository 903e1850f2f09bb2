//! `autotune fingerprint` (hidden, for developers): compiles the probes of every built-in family
//! to PTX for one virtual arch and prints their fingerprints as JSON, which `tests/nvrtc.rs`
//! compares with `configs/fingerprints/` (see `docs/fingerprints.md`). The test compiles each
//! probe in a process of its own (`--family F --probe N`): NVRTC's PTX of a large kernel
//! depends on what the process compiled before ([`fingerprint::settle`]).

use anyhow::{bail, Context, Result};
use autotune::cuda::nvrtc::{self, Target};
use autotune::family::catalog::{Catalog, Family, Source};
use autotune::family::fingerprint::{self, Fingerprint};
use autotune::family::probe;
use serde::Serialize;

#[derive(Debug, clap::Args)]
pub(super) struct FingerprintArgs {
    /// The virtual arch to compile PTX for: compute_90 (NVRTC 13) or compute_61 (NVRTC 12, by
    /// AUTOTUNE_NVRTC or alone on LD_LIBRARY_PATH).
    #[arg(long)]
    arch: String,
    /// Only this family (repeatable); default: every built-in family.
    #[arg(long = "family")]
    families: Vec<String>,
    /// Compile only probe N (from 0) of the one family --family names; the others are listed
    /// without PTX.
    #[arg(long, value_name = "N")]
    probe: Option<usize>,
    /// Compile nothing: list the probes and their launches (needs no NVRTC).
    #[arg(long, conflicts_with = "probe")]
    list: bool,
    /// Also write each probe's PTX to this directory (`<kernel>.<arch>.ptx`), to see what
    /// changed.
    #[arg(long)]
    ptx_dir: Option<std::path::PathBuf>,
}

/// What is printed: the fresh fingerprint of each family for the one target.
#[derive(Serialize)]
struct Report {
    /// `compute_XY`.
    target: String,
    /// The NVRTC that compiled, `major.minor (library)`.
    nvrtc: String,
    families: Vec<FamilyReport>,
}

#[derive(Serialize)]
struct FamilyReport {
    family: String,
    /// The space's revision.
    revision: u32,
    /// The family's identity in this build ([`Family::checksum`]).
    checksum: String,
    /// Its template and space hashed ([`Family::content_checksum`]).
    content_checksum: String,
    /// The probes compiled now: the committed fingerprint's when it is of the space's revision,
    /// else freshly chosen ones. Its `checksum` is the content checksum.
    fingerprint: Fingerprint,
    /// Probes that could not be instantiated or compiled.
    errors: Vec<String>,
}

/// The probes to compile for `family`: its committed ones when its fingerprint is of its
/// revision (the check compiles the same kernels however the space's lists changed), else
/// new ones ([`probe::choose_probes`]).
fn probes(family: &Family) -> Result<Vec<fingerprint::Probe>, fingerprint::FingerprintError> {
    match &family.fingerprint {
        Some(fp) if fp.revision == family.space.revision => Ok(fp.probes.clone()),
        _ => probe::choose_probes(family),
    }
}

/// `autotune fingerprint`.
pub(super) fn run(a: &FingerprintArgs) -> Result<()> {
    let target: Target = a.arch.parse()?;
    if !target.is_ptx() {
        bail!(
            "--arch {}: fingerprints hash PTX, so give a virtual arch, e.g. compute_90",
            a.arch
        );
    }
    if a.probe.is_some() && a.families.len() != 1 {
        bail!("--probe needs exactly one --family: the probe's");
    }
    if !a.list {
        nvrtc::check_arch(target)?;
    }
    let catalog = Catalog::builtin()?;
    for name in &a.families {
        catalog.get(name)?;
    }
    let mut reports = Vec::new();
    // (report, probe) of each source.
    let mut sources: Vec<Source> = Vec::new();
    let mut owners: Vec<(usize, usize)> = Vec::new();
    for family in catalog.families() {
        if !a.families.is_empty() && !a.families.iter().any(|n| n == family.name()) {
            continue;
        }
        let mut errors = Vec::new();
        let mut probes = probes(family).unwrap_or_else(|e| {
            errors.push(e.to_string());
            Vec::new()
        });
        if a.probe.is_some_and(|n| n >= probes.len()) {
            bail!(
                "family '{}' has {} probes: --probe takes 0 to {}",
                family.name(),
                probes.len(),
                probes.len().saturating_sub(1)
            );
        }
        for (i, p) in probes.iter_mut().enumerate() {
            p.ptx.clear();
            p.variants.clear();
            match probe::probe_kernel(family, p) {
                Ok((source, launch)) => {
                    p.launch = launch;
                    if !a.list && a.probe.is_none_or(|n| n == i) {
                        sources.push(source);
                        owners.push((reports.len(), i));
                    }
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        reports.push(FamilyReport {
            family: family.name().to_string(),
            revision: family.space.revision,
            checksum: family.checksum.clone(),
            content_checksum: family.content_checksum.clone(),
            fingerprint: Fingerprint {
                family: family.name().to_string(),
                revision: family.space.revision,
                checksum: family.content_checksum.clone(),
                compilers: Default::default(),
                probes,
            },
            errors,
        });
    }
    let key = target.to_string();
    // One at a time: concurrent compilations in one process make NVRTC's PTX vary more.
    for ((r, i), source) in owners.into_iter().zip(&sources) {
        let report = &mut reports[r];
        match nvrtc::compile(source, target) {
            Ok(c) => {
                let text = String::from_utf8_lossy(&c.cubin);
                if let Some(dir) = &a.ptx_dir {
                    let path = dir.join(format!("{}.{key}.ptx", c.kernel_name));
                    std::fs::create_dir_all(dir)
                        .and_then(|()| std::fs::write(&path, text.trim_end_matches('\0')))
                        .with_context(|| format!("writing {}", path.display()))?;
                }
                let digest = fingerprint::digest_ptx(&text);
                let fp = &mut report.fingerprint;
                fp.compilers.insert(key.clone(), digest.compiler);
                fp.probes[i].ptx.insert(key.clone(), digest.sha256);
            }
            Err(e) => report.errors.push(e.to_string()),
        }
    }
    let report = Report {
        target: key,
        nvrtc: if a.list {
            "none (--list)".to_string()
        } else {
            nvrtc::describe()?
        },
        families: reports,
    };
    println!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
