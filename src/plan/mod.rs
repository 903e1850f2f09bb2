//! What a tuning run plans and records, below both the tuner and the product runtime (which
//! plans, predicts and tunes online with the same pieces): the candidates of a shape, every
//! family of the op (or those named) enumerated, pruned against the device's limits and
//! instantiated ([`plan`], here); the analytic performance model that ranks and predicts them
//! ([`model`]); and the records a run hands to reports and the database ([`outcome`]). Pure:
//! no GPU.

pub mod model;
pub mod outcome;

use crate::family::catalog::{Catalog, Source};
use crate::family::expr::Expr;
use crate::family::space::{Config, Launch, Limits, SpaceError};
use crate::problem::{Op, Shape};
use serde::Serialize;
use std::collections::BTreeMap;

/// Why nothing could be planned.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A space could not be evaluated.
    #[error(transparent)]
    Space(#[from] SpaceError),
    /// No family computes the op, or the filter matched none.
    #[error("no kernel family for op {op}{filter}: known families are {known}")]
    NoFamily {
        /// The op.
        op: Op,
        /// The filter, if any.
        filter: String,
        /// What exists.
        known: String,
    },
    /// Every config was pruned.
    #[error(
        "every config of every {op} family was pruned for shape {shape} on this device: {detail}"
    )]
    NothingValid {
        /// The op.
        op: Op,
        /// The shape label.
        shape: String,
        /// Per-family rejection counts.
        detail: String,
    },
}

/// How many configs a family has and how many survived pruning.
#[derive(Debug, Clone, Serialize)]
pub struct FamilyCount {
    /// The family.
    pub family: String,
    /// Size of its cartesian product.
    pub total: usize,
    /// Survivors of pruning.
    pub valid: usize,
    /// Rejections per constraint.
    pub rejected_by: BTreeMap<String, usize>,
}

/// A candidate ready to compile and run.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The config.
    pub config: Config,
    /// Its instantiated source.
    pub source: Source,
    /// Its launch on the shape.
    pub launch: Launch,
    /// The family's checksum.
    pub checksum: String,
}

/// Enumerates, prunes and instantiates every family of `op` (or those named) for `shape`.
pub fn plan(
    catalog: &Catalog,
    op: Op,
    shape: Shape,
    limits: &Limits,
    families: &[String],
) -> Result<(Vec<FamilyCount>, Vec<Planned>), PlanError> {
    plan_where(catalog, op, shape, limits, families, &[])
}

/// [`plan`] with only the configs that meet every one of `conditions` (expressions of the
/// space's language over the family's parameters, derived values and the shape, e.g.
/// `FASTLOAD == 2`: a run that times part of a space). The others count as rejected by the
/// condition they fail; a condition that names what a chosen family lacks is an error.
pub fn plan_where(
    catalog: &Catalog,
    op: Op,
    shape: Shape,
    limits: &Limits,
    families: &[String],
    conditions: &[Expr],
) -> Result<(Vec<FamilyCount>, Vec<Planned>), PlanError> {
    let chosen: Vec<_> = catalog
        .for_op(op)
        .filter(|f| families.is_empty() || families.iter().any(|n| n == f.name()))
        .collect();
    if chosen.is_empty() {
        return Err(PlanError::NoFamily {
            op,
            filter: if families.is_empty() {
                String::new()
            } else {
                format!(" named {}", families.join(", "))
            },
            known: catalog
                .families()
                .iter()
                .map(|f| format!("{} ({})", f.name(), f.space.op))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    let mut counts = Vec::new();
    let mut planned = Vec::new();
    for fam in chosen {
        let pruned = fam.space.prune(shape, limits)?;
        let mut rejected_by = pruned.rejected_by;
        let mut valid = Vec::with_capacity(pruned.valid.len());
        for config in pruned.valid {
            match fam
                .space
                .unmet_condition(&config, shape, limits, conditions)?
            {
                None => valid.push(config),
                Some(c) => *rejected_by.entry(format!("--where '{c}'")).or_insert(0) += 1,
            }
        }
        counts.push(FamilyCount {
            family: fam.name().to_string(),
            total: pruned.total,
            valid: valid.len(),
            rejected_by,
        });
        for config in valid {
            let kernel = match fam.kernel(&config, shape, limits) {
                Ok(k) => k,
                // Grid too large for this shape: not a candidate here.
                Err(SpaceError::Invalid { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            planned.push(Planned {
                source: kernel.source,
                config,
                launch: kernel.launch,
                checksum: fam.checksum.clone(),
            });
        }
    }
    if planned.is_empty() {
        return Err(PlanError::NothingValid {
            op,
            shape: shape.label(op),
            detail: counts
                .iter()
                .map(|c| format!("{}: {:?}", c.family, c.rejected_by))
                .collect::<Vec<_>>()
                .join("; "),
        });
    }
    Ok((counts, planned))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_covers_every_family_of_the_op() {
        let cat = Catalog::builtin().unwrap();
        let limits = Limits::for_arch(90).unwrap();
        let shape = Shape::mnk(1000, 1000, 1000);
        let (counts, planned) = plan(&cat, Op::Gemm, shape, &limits, &[]).unwrap();
        assert!(counts.len() >= 2);
        let valid: usize = counts.iter().map(|c| c.valid).sum();
        assert_eq!(valid, planned.len());
        let (only, _) = plan(&cat, Op::Gemm, shape, &limits, &["gemm_tiled".into()]).unwrap();
        assert_eq!(only.len(), 1);
        assert!(matches!(
            plan(&cat, Op::Gemm, shape, &limits, &["nope".into()]),
            Err(PlanError::NoFamily { .. })
        ));
    }

    /// `--where` narrows a family's configs to those meeting it, counts the others as rejected
    /// by it, and names the family when it uses a name the family's space lacks.
    #[test]
    fn conditions_keep_the_configs_that_meet_them() {
        let cat = Catalog::builtin().unwrap();
        let limits = Limits::for_arch(90).unwrap();
        let shape = Shape::mnk(1024, 1024, 1024);
        let fam = ["gemm_tf32x3_wgmma_trunc".to_string()];
        let (all, every) = plan(&cat, Op::Gemm, shape, &limits, &fam).unwrap();
        let cond = [Expr::parse("FASTLOAD == 2 && BM >= 128").unwrap()];
        let (some, planned) = plan_where(&cat, Op::Gemm, shape, &limits, &fam, &cond).unwrap();
        assert!(!planned.is_empty() && planned.len() < every.len());
        assert!(planned
            .iter()
            .all(|p| p.config.params["FASTLOAD"] == 2 && p.config.params["BM"] >= 128));
        let meets = every
            .iter()
            .filter(|p| p.config.params["FASTLOAD"] == 2 && p.config.params["BM"] >= 128)
            .count();
        assert_eq!(planned.len(), meets);
        assert_eq!(some[0].valid, meets);
        assert_eq!(some[0].total, all[0].total);
        let left_out = some[0].rejected_by["--where 'FASTLOAD == 2 && BM >= 128'"];
        assert_eq!(left_out, all[0].valid - meets);
        // gemm_tiled has no FASTLOAD.
        let both = ["gemm_tiled".to_string(), fam[0].clone()];
        let err = plan_where(&cat, Op::Gemm, shape, &limits, &both, &cond)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("gemm_tiled") && err.contains("FASTLOAD"),
            "{err}"
        );
        // Nothing meets it: the usual error for a shape without a config.
        let none = [Expr::parse("BM > 100000").unwrap()];
        assert!(matches!(
            plan_where(&cat, Op::Gemm, shape, &limits, &fam, &none),
            Err(PlanError::NothingValid { .. })
        ));
    }

    /// A family whose constraints offer nothing on a shape (the GEMV-shaped gemm families on a
    /// square one) is counted with no valid config and planned nothing; the others still run.
    #[test]
    fn a_family_without_a_config_on_the_shape_is_skipped() {
        let cat = Catalog::builtin().unwrap();
        let limits = Limits::for_arch(90).unwrap();
        let valid = |m, n, k| {
            let (counts, planned) =
                plan(&cat, Op::Gemm, Shape::mnk(m, n, k), &limits, &[]).unwrap();
            let of = |fam: &str| {
                let c = counts.iter().find(|c| c.family == fam).unwrap();
                let p = planned.iter().filter(|p| p.config.family == fam).count();
                assert_eq!(c.valid, p, "{fam}");
                c.valid
            };
            (of("gemm_small_m"), of("gemm_small_n"), of("gemm_warptile"))
        };
        let (small_m, small_n, warptile) = valid(1000, 1000, 1000);
        assert_eq!((small_m, small_n), (0, 0));
        assert!(warptile > 0);
        let (small_m, small_n, _) = valid(1, 4096, 4096);
        assert!(small_m > 0);
        assert_eq!(small_n, 0);
        let (small_m, small_n, _) = valid(4096, 1, 4096);
        assert_eq!(small_m, 0);
        assert!(small_n > 0);
        // Only a gated family asked for, on a shape it skips: the plan says nothing is valid.
        assert!(matches!(
            plan(
                &cat,
                Op::Gemm,
                Shape::mnk(1000, 1000, 1000),
                &limits,
                &["gemm_small_m".into()]
            ),
            Err(PlanError::NothingValid { .. })
        ));
    }
}
