//! Widening a coverage record (`autotune cover --add-winners`): configs tuned after it was
//! measured join its portfolio, timed on its points.

use super::{
    check_current, coverage_configs, measure_grid, portfolio_seeds, CoverError, CoverOptions,
    CoverProgress, Covered,
};
use crate::cuda::nvrtc;
use crate::db::Coverage;
use crate::family::catalog::Catalog;
use crate::family::space::Config;
use crate::plan::outcome::utc_now_rfc3339;
use crate::tuning::devices::Devices;

/// The configs [`widen`] adds to `base`: this GPU's current tuned winners of the op whose
/// family computes the coverage's form ([`portfolio_seeds`]: those tuned on the form first,
/// then by speed over cuBLAS), of `families` when any are named, that the portfolio lacks and
/// that may serve some point of the grid untuned (the family's `untuned_constraints`: a config
/// the runtime never predicts is no use to a grid); at most `max`.
pub fn winners_to_add(
    db: &crate::db::Database,
    catalog: &Catalog,
    base: &Coverage,
    families: &[String],
    max: usize,
) -> Vec<Config> {
    // The limits of `base`'s GPU and its points, for the family's untuned constraints; where
    // the arch cannot be told, every winner goes on and the measurement decides.
    let limits = db
        .gpu(&base.gpu)
        .and_then(|g| g.arch.parse::<crate::gpu::Arch>().ok())
        .and_then(|a| crate::gpu::Limits::for_arch(a.number() as i64));
    let shapes = base.point_shapes();
    let serves_some_point = |c: &Config| match (&limits, catalog.get(&c.family)) {
        (Some(limits), Ok(family)) => shapes
            .iter()
            .any(|&shape| family.space.serves_untuned(c, shape, limits)),
        _ => true,
    };
    portfolio_seeds(db, catalog, &base.gpu, base.op, &base.form, usize::MAX)
        .into_iter()
        .filter(|c| families.is_empty() || families.contains(&c.family))
        .filter(|c| !in_portfolio(base, &c.family, &c.params))
        .filter(|c| serves_some_point(c))
        .take(max)
        .collect()
}

/// Adds `configs` to the portfolio of `base` (a coverage of this GPU model): each is validated
/// and timed on every point of `base`, beside cuBLAS, on `devices`. New kernel families (e.g.
/// tensor-core ones) reach the predictions for shapes nobody tuned without a new pool search
/// or new times for the configs `base` has. Every config of `base` must be current. The run
/// saves nothing before it ends ([`CoverProgress::checkpoint`] is not called): a record half
/// widened would predict from configs measured on part of the grid.
pub fn widen(
    devices: &Devices,
    catalog: &Catalog,
    cache: &nvrtc::Cache,
    base: &Coverage,
    configs: &[Config],
    opts: &CoverOptions,
    progress: &dyn CoverProgress,
) -> Result<Covered, CoverError> {
    nvrtc::check_arch(devices.info().arch)?;
    check_current(catalog, base)?;
    let shapes = base.point_shapes();
    progress.note(&format!(
        "widening {} ({} configs, {} points) by {} configs",
        base.describe(),
        base.configs.len(),
        shapes.len(),
        configs.len()
    ));
    let fresh = widening_record(catalog, base, configs);
    // Progress news only: no checkpoint of a record that holds the new configs alone.
    let news = |line: &str| progress.note(line);
    let measured = measure_grid(
        devices, catalog, cache, &shapes, fresh, configs, opts, &news,
    )?;
    Ok(Covered {
        coverage: append_configs(base, &measured.coverage),
        usage: measured.usage,
    })
}

/// The record a widening measures into: `base`'s GPU and form with `configs` alone, no points
/// yet, dated now. The widened record takes this date, so that a merge keeps it over the
/// narrower `base` (of two records of one grid, a merge keeps the newer).
pub(super) fn widening_record(catalog: &Catalog, base: &Coverage, configs: &[Config]) -> Coverage {
    let mut fresh = base.clone();
    fresh.configs = coverage_configs(catalog, configs);
    fresh.points.clear();
    fresh.date = utc_now_rfc3339();
    fresh.tool_version = env!("CARGO_PKG_VERSION").to_string();
    fresh
}

/// `base` with the configs of `added` (its points: some or all of `base`'s, timed for those
/// configs alone) appended to the portfolio. Each added time is scaled by the point's cuBLAS
/// time in `base` over the one measured beside it, so that its ratio to cuBLAS is the one
/// measured in one process while `base`'s times stay as they were; a point `added` lacks (or
/// where its cuBLAS time is not positive) records the new configs as failed (0), never
/// predicted there. Configs `base` already has are not added twice.
pub fn append_configs(base: &Coverage, added: &Coverage) -> Coverage {
    let mut out = base.clone();
    let new: Vec<usize> = (0..added.configs.len())
        .filter(|&i| !in_portfolio(base, &added.configs[i].family, &added.configs[i].params))
        .collect();
    out.configs
        .extend(new.iter().map(|&i| added.configs[i].clone()));
    for p in &mut out.points {
        let found = added
            .points
            .iter()
            .find(|q| q.shape == p.shape && q.cublas_ms > 0.0 && q.ms.len() == added.configs.len());
        let scale = found.map(|q| p.cublas_ms / q.cublas_ms);
        p.ms.extend(new.iter().map(|&i| match (found, scale) {
            (Some(q), Some(s)) if q.ms[i] > 0.0 && s.is_finite() => q.ms[i] * s,
            _ => 0.0,
        }));
    }
    out.date = added.date.clone();
    out.tool_version = added.tool_version.clone();
    out
}

/// Whether `base`'s portfolio holds the config `family` with `params`.
fn in_portfolio(
    base: &Coverage,
    family: &str,
    params: &std::collections::BTreeMap<String, i64>,
) -> bool {
    base.configs
        .iter()
        .any(|b| b.family == family && b.params == *params)
}
