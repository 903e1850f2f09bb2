//! `autotune verify`: trust what ships. Every kernel a database holds for this GPU is compiled
//! as the runtime compiles it ([`compile_configs`]: [`crate::family::catalog::Family::kernel`],
//! then NVRTC), validated on its entry's problem and on the op's edge shapes
//! ([`verdict::edge_shapes`], and for the full interface [`verdict::edge_forms`] where
//! [`verdict::runs_on`] says the config serves the form), timed on its problem beside cuBLAS in the same process, and
//! judged ([`verdict::judge`]) against what the entry recorded: its time and the checksum of
//! its family's sources.
//!
//! Kernels run through the [`Evaluator`]: in worker processes by default (a faulting kernel is
//! a failed check, not a failed run), or in this process (for compute-sanitizer, which must see
//! the kernels). With a [`Target::Ptx`] for an older virtual arch the kernels are PTX that the
//! driver JIT-compiles, so the templates' older-arch paths run here; those timings are not this
//! GPU's nor the older one's, and the caller says so in the [`verdict::Policy`]. Nothing here
//! writes a database.

use crate::cuda::bench::RunError;
use crate::cuda::device::Device;
use crate::cuda::isolate::WorkerSettings;
use crate::cuda::nvrtc::{self, Target};
use crate::db::Database;
use crate::family::catalog::Catalog;
use crate::family::space::{Config, Limits, SpaceError};
use crate::measure::timing::TimingSettings;
use crate::problem::{Op, Shape};
use crate::tuning::evaluator::{compile_configs, Evaluator};
use crate::tuning::sweep;
use crate::tuning::verdict::{self, Check, Measurements, Retimed, Subject};
use std::collections::BTreeMap;

/// How kernels are verified.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// Seed of the inputs.
    pub seed: u64,
    /// How the entries' problems are timed.
    pub timing: TimingSettings,
    /// What NVRTC compiles to (`None`: a cubin for the device's arch, as the runtime does).
    pub target: Option<Target>,
    /// Validate on the edge shapes only: no entry problem, no timing (sanitizer runs).
    pub edge_only: bool,
    /// Run kernels in worker processes (`None`: in this process).
    pub isolation: Option<WorkerSettings>,
}

/// Why a verification stopped (as opposed to a kernel failing, which is a finding).
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// NVRTC is missing or cannot target the arch.
    #[error(transparent)]
    Compile(#[from] nvrtc::CompileError),
    /// PTX for an arch newer than the device cannot be loaded on it.
    #[error("PTX for {target} cannot run on {device} ({arch}): give a virtual arch no newer than the device's, e.g. compute_75")]
    PtxTooNew {
        /// The target asked for.
        target: Target,
        /// The device's name.
        device: String,
        /// Its arch.
        arch: crate::gpu::Arch,
    },
    /// The GPU, cuBLAS or a worker failed on a problem.
    #[error("{op} {shape}: {source}")]
    Run {
        /// The op.
        op: Op,
        /// The shape.
        shape: String,
        /// Why.
        source: RunError,
    },
    /// The selection holds no entry (and no space ends).
    #[error("{db} has no entry for '{gpu}'{filter}; it has: {have}")]
    NoEntries {
        /// The database, as the user named it.
        db: String,
        /// The GPU asked for.
        gpu: String,
        /// The op and shape filters, e.g. `, op gemm, shape 64x64x64`.
        filter: String,
        /// The GPUs the database has, with their entry counts.
        have: String,
    },
    /// A family's space could not be pruned for its ends.
    #[error("pruning the space of {family}: {source}")]
    Space {
        /// The family.
        family: String,
        /// Why.
        source: Box<SpaceError>,
    },
}

/// Which kernels a verification checks: a GPU's entries (of an op, a shape, families), and
/// the ends of the families' spaces.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// The GPU whose entries, as the database names it.
    pub gpu: String,
    /// Only the entries of this op (and the space ends of its families).
    pub op: Option<Op>,
    /// Only the entry of this shape.
    pub shape: Option<Shape>,
    /// Only these families (every one when empty).
    pub families: Vec<String>,
    /// Also the first and last config of every family's space, on the edge shapes.
    pub space_ends: bool,
}

impl Selection {
    fn wants(&self, family: &str) -> bool {
        self.families.is_empty() || self.families.iter().any(|f| f == family)
    }
}

/// The subjects `sel` picks in `db` (named `origin` in messages): the entries first, each
/// with its freshness against `catalog`, then the space ends (on `limits`) no entry already
/// holds. Returns how many are entries, and the subjects.
pub fn subjects(
    db: &Database,
    origin: &str,
    catalog: &Catalog,
    sel: &Selection,
    limits: &Limits,
) -> Result<(usize, Vec<Subject>), VerifyError> {
    let entries: Vec<_> = db
        .entries
        .iter()
        .filter(|e| e.gpu == sel.gpu)
        .filter(|e| sel.op.is_none_or(|o| e.op == o))
        .filter(|e| sel.shape.is_none_or(|s| e.shape() == s))
        .filter(|e| sel.wants(&e.family))
        .collect();
    if entries.is_empty() && !sel.space_ends {
        let have: Vec<String> = db
            .gpus
            .iter()
            .map(|g| {
                let n = db.entries.iter().filter(|e| e.gpu == g.name).count();
                format!("'{}' ({n} entries)", g.name)
            })
            .collect();
        return Err(VerifyError::NoEntries {
            db: origin.to_string(),
            gpu: sel.gpu.clone(),
            filter: format!(
                "{}{}",
                sel.op.map_or(String::new(), |o| format!(", op {o}")),
                sel.shape.map_or(String::new(), |s| format!(
                    ", shape {}",
                    s.label(sel.op.unwrap_or(Op::Gemm))
                )),
            ),
            have: if have.is_empty() {
                "none".to_string()
            } else {
                have.join(", ")
            },
        });
    }
    let mut subjects: Vec<Subject> = entries
        .iter()
        .map(|e| {
            let current = catalog.get(&e.family).ok().map(|f| f.checksum.as_str());
            Subject {
                math: e.math_with(|f| catalog.math(f)),
                ..Subject::of_entry(e, current)
            }
        })
        .collect();
    if sel.space_ends {
        for o in Op::ALL {
            if sel.op.is_some_and(|x| x != o) {
                continue;
            }
            for f in catalog.for_op(o).filter(|f| sel.wants(f.name())) {
                let ends = sweep::family_ends(f, limits).map_err(|e| VerifyError::Space {
                    family: f.name().to_string(),
                    source: Box::new(e),
                })?;
                for c in ends {
                    if !subjects.iter().any(|s| s.config == c) {
                        subjects.push(Subject {
                            math: f.space.math,
                            ..Subject::representative(o, c, true)
                        });
                    }
                }
            }
        }
    }
    Ok((entries.len(), subjects))
}

/// The target `opts` compile for on `dev`: its own cubin, or the PTX asked for when the device
/// can run it (virtual arch no newer than its own) and NVRTC can produce it.
pub fn target(dev: &Device, opts: &VerifyOptions) -> Result<Target, VerifyError> {
    let target = opts.target.unwrap_or(Target::Cubin(dev.info.arch));
    if target.is_ptx() && target.arch() > dev.info.arch {
        return Err(VerifyError::PtxTooNew {
            target,
            device: dev.info.name.clone(),
            arch: dev.info.arch,
        });
    }
    nvrtc::check_arch(target)?;
    Ok(target)
}

/// How long a worker process may take at least to load a kernel that is PTX: the driver
/// JIT-compiles it then, seconds for a large kernel.
pub const PTX_JIT_FLOOR: std::time::Duration = std::time::Duration::from_secs(30);

/// Why the timings of a verification are not judged, if they are not: the kernels are PTX for
/// `target` (JIT-compiled by the driver for the device `device` of arch `arch`: neither the
/// tuned cubins' times nor those of a GPU of the target's arch), or the entries are another
/// GPU's (`gpu`) than the device's.
pub fn timing_not_comparable(
    target: Option<Target>,
    gpu: &str,
    device: &str,
    arch: crate::gpu::Arch,
) -> Option<String> {
    match target {
        Some(t) => Some(format!(
            "the kernels are PTX for {t}, JIT-compiled by the driver for {device} ({arch}): these are neither the tuned cubins' times nor a {t} GPU's"
        )),
        None if gpu != device => Some(format!(
            "the entries are {gpu}'s, the kernels ran on {device}"
        )),
        None => None,
    }
}

/// Measures every subject on `dev` (see the module documentation); one [`Measurements`] per
/// subject, in order. `progress` gets a line per problem and edge shape.
pub fn verify(
    dev: &Device,
    catalog: &Catalog,
    cache: &nvrtc::Cache,
    subjects: &[Subject],
    opts: &VerifyOptions,
    progress: &dyn Fn(&str),
) -> Result<Vec<Measurements>, VerifyError> {
    let target = target(dev, opts)?;
    // Workers loading PTX wait for the driver's JIT compilation.
    let mut opts = opts.clone();
    if let (Some(w), true) = (opts.isolation.as_mut(), target.is_ptx()) {
        w.floor = w.floor.max(PTX_JIT_FLOOR);
    }
    let opts = &opts;
    let mut out = vec![Measurements::default(); subjects.len()];
    let run_err = |op: Op, shape: Shape| {
        move |source| VerifyError::Run {
            op,
            shape: shape.label(op),
            source,
        }
    };
    // Subjects whose family is unknown are judged on that alone.
    let known = |s: &Subject| catalog.get(&s.config.family).is_ok();
    if !opts.edge_only {
        // The entries' own problems, one evaluator (and one cuBLAS baseline) per problem.
        let mut problems: BTreeMap<(Op, Shape), Vec<usize>> = BTreeMap::new();
        for (i, s) in subjects.iter().enumerate() {
            if let (Some(c), true) = (&s.claim, known(s)) {
                problems.entry((s.op, c.shape)).or_default().push(i);
            }
        }
        for ((op, shape), members) in &problems {
            let err = run_err(*op, *shape);
            let mut eval = Evaluator::open(
                dev,
                *op,
                *shape,
                opts.seed,
                opts.timing,
                opts.isolation.as_ref(),
            )
            .map_err(err)?;
            let (cublas, cublas_error) = eval.baseline().map_err(err)?;
            let configs: Vec<Config> = members
                .iter()
                .map(|&i| subjects[i].config.clone())
                .collect();
            let kernels =
                compile_configs(catalog, cache, target, &dev.info.limits, *shape, &configs);
            for (&i, k) in members.iter().zip(kernels) {
                let r = match k {
                    Err(e) => Err(format!("Compile: {e}")),
                    Ok((c, launch)) => {
                        match eval.evaluate(&c, launch, None).map_err(err)?.and_then(|m| {
                            catalog.admit(&subjects[i].config.family, *shape, cublas_error.max, m)
                        }) {
                            Ok(m) => Ok(Retimed {
                                kernel_ms: m.stats.median_ms,
                                cublas_ms: cublas.median_ms,
                                max_rel_error: m.max_rel_error,
                            }),
                            Err(f) => Err(format!("{:?}: {}", f.stage, f.reason)),
                        }
                    }
                };
                out[i].problem = Some(r);
            }
            progress(&format!(
                "verify: {op} {}: {} kernel(s) validated and timed beside cuBLAS ({:.4} ms)",
                shape.label(*op),
                members.len(),
                cublas.median_ms
            ));
        }
    }
    // The edge shapes: every known subject of the op on each.
    for op in [Op::Gemm, Op::Gemv] {
        let members: Vec<usize> = (0..subjects.len())
            .filter(|&i| subjects[i].op == op && known(&subjects[i]))
            .collect();
        if members.is_empty() {
            continue;
        }
        let edges = verdict::edge_shapes(op);
        let forms = verdict::edge_forms(op);
        for shape in edges.into_iter().chain(forms) {
            // Only the kernels whose family computes the form, with a config its space offers
            // for the form (verdict::runs_on).
            let members: Vec<usize> = members
                .iter()
                .copied()
                .filter(|&i| {
                    let s = &subjects[i];
                    let own = s.claim.as_ref().map(|c| c.shape);
                    catalog
                        .get(&s.config.family)
                        .is_ok_and(|f| verdict::runs_on(f, &s.config, own, shape, &dev.info.limits))
                })
                .collect();
            if members.is_empty() {
                continue;
            }
            let configs: Vec<Config> = members
                .iter()
                .map(|&i| subjects[i].config.clone())
                .collect();
            let err = run_err(op, shape);
            let mut eval = Evaluator::open(
                dev,
                op,
                shape,
                opts.seed,
                TimingSettings::quick(),
                opts.isolation.as_ref(),
            )
            .map_err(err)?;
            let kernels =
                compile_configs(catalog, cache, target, &dev.info.limits, shape, &configs);
            let mut failed = 0;
            for (&i, k) in members.iter().zip(kernels) {
                let outcome = match k {
                    Err(e) => Err(format!("Compile: {e}")),
                    Ok((c, launch)) => eval
                        .check(&c, launch)
                        .map_err(err)?
                        .map_err(|f| format!("{:?}: {}", f.stage, f.reason)),
                };
                failed += usize::from(outcome.is_err());
                out[i].edges.push(Check {
                    shape: shape.label(op),
                    outcome,
                });
            }
            progress(&format!(
                "verify: {op} {}: {} kernel(s) validated, {failed} failed",
                shape.label(op),
                members.len()
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_are_judged_only_for_the_devices_own_cubins() {
        let sm90: crate::gpu::Arch = "sm_90".parse().unwrap();
        let ptx: Target = "compute_75".parse().unwrap();
        assert_eq!(timing_not_comparable(None, "H100", "H100", sm90), None);
        let other = timing_not_comparable(None, "H200", "H100", sm90).unwrap();
        assert_eq!(other, "the entries are H200's, the kernels ran on H100");
        let jit = timing_not_comparable(Some(ptx), "H100", "H100", sm90).unwrap();
        assert!(
            jit.starts_with(
                "the kernels are PTX for compute_75, JIT-compiled by the driver for H100 (sm_90)"
            ),
            "{jit}"
        );
    }
}
