//! Re-scoring an earlier `autotune evaluate` without a GPU: what the lookup rules of a database
//! choose now for each shape of that run, given the times measured then.
//!
//! A run keeps, per shape, cuBLAS's time and the time of every config it timed (the policies'
//! choices and, with a tuning budget, the coverage portfolio and the search; files written
//! before `times` existed keep only the choices and the best). A changed database or selection
//! rule is scored against exactly those measurements, so two rules are compared on the same
//! numbers. A shape where a policy now chooses a config the run never timed is left out of that
//! policy's summary (its count says how many entered), never guessed.

use crate::db::Database;
use crate::family::catalog::Catalog;
use crate::problem::Op;
use crate::product::lookup::{lookup_with, selector_for};
use crate::tuning::evaluate::{config_label, Chosen, ShapeEval, POLICIES};
use serde::Deserialize;
use std::collections::BTreeMap;

/// An evaluation as `autotune evaluate --json` writes it (the fields re-scoring reads).
#[derive(Debug, Clone, Deserialize)]
pub struct Recorded {
    /// The GPU it ran on, as the database names it.
    pub gpu: String,
    /// The op.
    pub op: Op,
    /// The seed of its shapes and inputs.
    pub seed: u64,
    /// Per shape, what was measured.
    pub shapes: Vec<ShapeEval>,
}

impl Recorded {
    /// The parts of one run (`autotune evaluate --part K/N`, one GPU, op and seed) as one
    /// record, their shapes in the order given.
    pub fn join(parts: Vec<Recorded>) -> Result<Option<Recorded>, RescoreError> {
        let mut parts = parts.into_iter();
        let Some(mut out) = parts.next() else {
            return Ok(None);
        };
        for p in parts {
            let differ = |what, a: String, b: String| {
                (a != b).then_some(RescoreError::Mixed {
                    what,
                    first: a,
                    other: b,
                })
            };
            if let Some(e) = differ("GPU", out.gpu.clone(), p.gpu.clone())
                .or_else(|| differ("op", out.op.to_string(), p.op.to_string()))
                .or_else(|| differ("seed", out.seed.to_string(), p.seed.to_string()))
            {
                return Err(e);
            }
            out.shapes.extend(p.shapes);
        }
        Ok(Some(out))
    }
}

/// Why a recorded evaluation cannot be re-scored.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RescoreError {
    /// The database does not describe the GPU the run measured.
    #[error("the database has no [[gpu]] record for '{0}', the GPU the evaluation ran on")]
    NoGpu(String),
    /// Records read as one run are of different GPUs, ops or seeds.
    #[error("the recorded evaluations differ in their {what} ({first} and {other}): give the --json files of the parts of one run")]
    Mixed {
        /// What differs: GPU, op or seed.
        what: &'static str,
        /// The first record's.
        first: String,
        /// The other's.
        other: String,
    },
    /// A shape's record names fewer policies than the rules re-scored.
    #[error("{shape}: the record has {found} choices, not one per policy ({expected})")]
    Policies {
        /// The shape.
        shape: String,
        /// Choices in the record.
        found: usize,
        /// Policies re-scored ([`POLICIES`]).
        expected: usize,
    },
}

/// What the run measured on one shape: per config label, its median (ms) or why it failed.
fn measurements(e: &ShapeEval) -> BTreeMap<String, Result<f64, String>> {
    let mut m: BTreeMap<String, Result<f64, String>> = BTreeMap::new();
    for (label, t) in &e.times {
        m.insert(label.clone(), Ok(*t));
    }
    for c in &e.chosen {
        let label = config_label(&c.family, &c.params);
        match (c.kernel_ms, &c.error) {
            (Some(t), _) => {
                m.insert(label, Ok(t));
            }
            (None, Some(err)) if c.measured => {
                m.entry(label).or_insert_with(|| Err(err.clone()));
            }
            _ => {}
        }
    }
    if let (Some(label), Some(t)) = (&e.best, e.best_ms) {
        m.entry(label.clone()).or_insert(Ok(t));
    }
    m
}

/// Each shape of `rec` as `db`'s rules choose for it now, with the times `rec` measured.
/// A choice the run did not time has `measured: false` ([`Chosen::measured`]).
pub fn rescore(
    db: &Database,
    catalog: &Catalog,
    rec: &Recorded,
) -> Result<Vec<ShapeEval>, RescoreError> {
    let arch = db
        .gpu(&rec.gpu)
        .ok_or_else(|| RescoreError::NoGpu(rec.gpu.clone()))?
        .arch
        .clone();
    // One predictor per form (each from the grid of its form), built on first use.
    let mut selectors = std::collections::HashMap::new();
    rec.shapes
        .iter()
        .map(|e| {
            if e.chosen.len() != POLICIES.len() {
                return Err(RescoreError::Policies {
                    shape: e.label.clone(),
                    found: e.chosen.len(),
                    expected: POLICIES.len(),
                });
            }
            let measured = measurements(e);
            let selector = selectors
                .entry(e.shape.form)
                .or_insert_with(|| selector_for(db, catalog, &rec.gpu, rec.op, &e.shape.form));
            let chosen = POLICIES
                .iter()
                .map(|(name, opts)| {
                    let c = lookup_with(
                        db,
                        catalog,
                        &rec.gpu,
                        Some(&arch),
                        rec.op,
                        e.shape,
                        *opts,
                        selector.as_ref(),
                    );
                    let outcome = measured.get(&config_label(&c.family, &c.params)).cloned();
                    Chosen::new(name, &c, outcome, e.cublas_ms)
                })
                .collect();
            Ok(ShapeEval {
                chosen,
                ..e.clone()
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::Shape;
    use crate::product::lookup::tests::{entry, gpu};

    const GPU: &str = "NVIDIA Test GPU";

    fn shape() -> Shape {
        Shape::mnk(300, 500, 700)
    }

    /// A database whose one gemm entry is `shape()` itself (`gemm_tile2d BM=64`), measured
    /// at `vs_cublas`.
    fn db(vs_cublas: f64) -> Database {
        let mut db = Database::new();
        db.upsert_gpu(gpu(GPU, "sm_90"));
        db.upsert(entry(
            GPU,
            Op::Gemm,
            &shape().label(Op::Gemm),
            64,
            vs_cublas,
        ));
        db
    }

    fn label() -> String {
        config_label(
            "gemm_tile2d",
            &[("BM".to_string(), 64)].into_iter().collect(),
        )
    }

    /// A recorded run of `shape()` on [`GPU`] whose policies chose `chosen` (label, time or
    /// failure) and which also timed `times`.
    fn recorded(chosen: &[(&str, Option<f64>)], times: Vec<(String, f64)>) -> Recorded {
        let s = shape();
        let chosen = chosen
            .iter()
            .enumerate()
            .map(|(i, (family, ms))| Chosen {
                policy: POLICIES[i.min(POLICIES.len() - 1)].0.into(),
                rule: crate::product::lookup::Rule::Exact,
                vendor: false,
                family: family.to_string(),
                params: [("BM".to_string(), 64)].into_iter().collect(),
                kernel_ms: *ms,
                error: ms.is_none().then(|| "launch failed".to_string()),
                effective_ms: *ms,
                measured: true,
            })
            .collect();
        Recorded {
            gpu: GPU.into(),
            op: Op::Gemm,
            seed: 1,
            shapes: vec![ShapeEval {
                shape: s,
                label: s.label(Op::Gemm),
                kind: "general".into(),
                cublas_ms: 1.0,
                chosen,
                best_ms: times.iter().map(|t| t.1).reduce(f64::min),
                best: None,
                timed: times.len(),
                times,
                confirmed: Vec::new(),
            }],
        }
    }

    #[test]
    fn choices_take_the_recorded_times() {
        let catalog = Catalog::builtin().unwrap();
        let db = db(1.25);
        // The run's choices were other configs; its `times` hold today's choice.
        let rec = recorded(
            &[("gemm_tiled", Some(3.0)); 3],
            vec![("gemm_tiled BM=64".into(), 3.0), (label(), 0.8)],
        );
        let out = rescore(&db, &catalog, &rec).unwrap();
        assert_eq!(out.len(), 1);
        for (c, (name, _)) in out[0].chosen.iter().zip(POLICIES.iter()) {
            assert_eq!(c.policy, *name);
            assert_eq!((c.family.as_str(), c.vendor), ("gemm_tile2d", false));
            assert_eq!((c.kernel_ms, c.effective_ms), (Some(0.8), Some(0.8)));
            assert!(c.measured);
        }
        assert_eq!(out[0].best_ms, Some(0.8));
    }

    #[test]
    fn untimed_choices_are_marked_and_a_guarded_one_gets_cublas() {
        let catalog = Catalog::builtin().unwrap();
        // The entry measured slower than cuBLAS: the guard calls cuBLAS.
        let db = db(0.8);
        let rec = recorded(&[("gemm_tiled", Some(3.0)); 3], Vec::new());
        let out = rescore(&db, &catalog, &rec).unwrap();
        let c = &out[0].chosen;
        assert!(c[0].vendor && c[0].measured, "{:?}", c[0]);
        assert_eq!(c[0].effective_ms, Some(1.0));
        for c in &c[1..] {
            assert!(!c.vendor && !c.measured, "{c:?}");
            assert_eq!((c.kernel_ms, c.effective_ms), (None, None));
        }
    }

    #[test]
    fn a_recorded_failure_of_todays_choice_stays_a_failure() {
        let catalog = Catalog::builtin().unwrap();
        let db = db(1.25);
        let rec = recorded(&[("gemm_tile2d", None); 3], Vec::new());
        let out = rescore(&db, &catalog, &rec).unwrap();
        for c in &out[0].chosen {
            assert!(c.measured, "{c:?}");
            assert_eq!(c.kernel_ms, None);
            assert_eq!(c.error.as_deref(), Some("launch failed"));
        }
    }

    #[test]
    fn an_unknown_gpu_or_a_short_record_is_an_error() {
        let catalog = Catalog::builtin().unwrap();
        let db = db(1.25);
        let mut rec = recorded(&[("gemm_tiled", Some(3.0)); 3], Vec::new());
        rec.gpu = "Some Other GPU".into();
        assert_eq!(
            rescore(&db, &catalog, &rec).unwrap_err(),
            RescoreError::NoGpu("Some Other GPU".into())
        );
        let rec = recorded(&[("gemm_tiled", Some(3.0)); 2], Vec::new());
        assert!(matches!(
            rescore(&db, &catalog, &rec),
            Err(RescoreError::Policies {
                found: 2,
                expected: 3,
                ..
            })
        ));
    }
}
