//! The leave-one-out check of a coverage record (`cover --loo`, and the end of every `cover`
//! run): each grid point predicted from the others, as the runtime would predict an untuned
//! shape. Needs no GPU.

use crate::db::Database;
use crate::family::catalog::Catalog;
use crate::problem::{Form, Op};
use crate::product::select::{Holdout, SelectError, Selector};
use crate::tuning::workload::Summary;
use std::fmt::Write as _;

/// Why the check cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum LooError {
    /// The database has no coverage of the GPU for the op and form.
    #[error("the database has no {op}{tags} coverage for '{gpu}' (it has: {have})")]
    NoCoverage {
        /// The GPU.
        gpu: String,
        /// The op.
        op: Op,
        /// The form's tags (`:nt`; empty for the plain form).
        tags: String,
        /// The coverage records it has, described, or `none`.
        have: String,
    },
    /// The database has the coverage but not the GPU's record (its arch, for the model).
    #[error("the database has coverage but no [[gpu]] record for '{gpu}'")]
    NoGpuRecord {
        /// The GPU.
        gpu: String,
    },
    /// The coverage cannot predict (its GPU's arch is unknown).
    #[error(transparent)]
    Select(#[from] SelectError),
}

/// How well a coverage predicts each of its own grid points from the others.
#[derive(Debug, Clone)]
pub struct LeaveOneOut {
    /// The GPU.
    pub gpu: String,
    /// The op.
    pub op: Op,
    /// The form of the coverage checked.
    pub form: Form,
    /// One per grid point.
    pub holdouts: Vec<Holdout>,
    /// Configs of the portfolio usable for the form.
    pub usable: usize,
    /// Configs of the portfolio.
    pub configs: usize,
}

/// The leave-one-out check of the coverage of `gpu` (a name the database holds) for problems
/// of `op` in `form`.
pub fn leave_one_out(
    db: &Database,
    catalog: &Catalog,
    gpu: &str,
    op: Op,
    form: &Form,
) -> Result<LeaveOneOut, LooError> {
    let Some(cov) = db.coverage(gpu, op, form) else {
        return Err(LooError::NoCoverage {
            gpu: gpu.to_string(),
            op,
            tags: form.tags(op),
            have: db.coverage_list(),
        });
    };
    let Some(rec) = db.gpu(gpu) else {
        return Err(LooError::NoGpuRecord {
            gpu: gpu.to_string(),
        });
    };
    let sel = Selector::new(cov, rec, catalog)?;
    Ok(LeaveOneOut {
        gpu: gpu.to_string(),
        op,
        form: *form,
        holdouts: sel.leave_one_out(),
        usable: sel.usable(),
        configs: cov.configs.len(),
    })
}

/// `what: geomean ..., p10 ..., ...` of `values`, or `what: no values`.
pub fn summary_line(what: &str, values: &[f64]) -> String {
    match Summary::of(values) {
        Some(s) => format!(
            "{what}: geomean {:.3}, p10 {:.3}, median {:.3}, p90 {:.3}, min {:.3}, max {:.3}, {:.1}% >= 1",
            s.geomean,
            s.p10,
            s.median,
            s.p90,
            s.min,
            s.max,
            100.0 * s.share_at_least_one
        ),
        None => format!("{what}: no values"),
    }
}

impl LeaveOneOut {
    /// The check as text: the summaries of regret and x cuBLAS (without and with the vendor
    /// guard, and the portfolio's best), then where the guard errs most.
    pub fn text(&self) -> String {
        let op = self.op;
        let loo = &self.holdouts;
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = writeln!(
            out,
            "leave-one-out on {} grid points of {} {op}{} ({} of {} configs usable):",
            loo.len(),
            self.gpu,
            self.form.tags(op),
            self.usable,
            self.configs
        );
        let col = |f: fn(&Holdout) -> f64| loo.iter().map(f).collect::<Vec<f64>>();
        for (what, values) in [
            ("regret (chosen / portfolio best)", col(|h| h.regret)),
            ("x cuBLAS, no guard", col(|h| h.vs_cublas)),
            ("x cuBLAS, vendor guard", col(|h| h.guarded_vs_cublas)),
            (
                "x cuBLAS, oracle (portfolio best)",
                col(|h| h.best_vs_cublas),
            ),
        ] {
            let _ = writeln!(out, "  {}", summary_line(what, &values));
        }
        let mut worst: Vec<&Holdout> = loo.iter().collect();
        worst.sort_by(|a, b| a.guarded_vs_cublas.total_cmp(&b.guarded_vs_cublas));
        if worst.first().is_none_or(|h| h.guarded_vs_cublas >= 1.0) {
            out.push_str("  with the guard, no grid point runs slower than cuBLAS\n");
            return out;
        }
        out.push_str(
            "  where the guard errs most (shape: x cuBLAS with the guard, predicted, regret):\n",
        );
        for h in worst.iter().take(8).filter(|h| h.guarded_vs_cublas < 1.0) {
            let _ = writeln!(
                out,
                "    {}: {:.3} (predicted {:.3}), regret {:.3}",
                h.shape.label(op),
                h.guarded_vs_cublas,
                h.predicted_vs_cublas,
                h.regret
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_the_database_lacks() {
        let catalog = Catalog::builtin().unwrap();
        let db = Database::new();
        let e = leave_one_out(&db, &catalog, "NVIDIA H200", Op::Gemm, &Form::PLAIN).unwrap_err();
        assert!(matches!(e, LooError::NoCoverage { .. }), "{e}");
        assert_eq!(
            e.to_string(),
            "the database has no gemm coverage for 'NVIDIA H200' (it has: none)"
        );
    }

    /// The shipped database's gemv coverage of the H100 predicts its own grid points.
    #[test]
    fn checks_the_shipped_coverage() {
        let catalog = Catalog::builtin().unwrap();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("results/tuning.toml");
        let db = Database::load_existing(&path).unwrap();
        let gpu = "NVIDIA H100 80GB HBM3";
        let loo = leave_one_out(&db, &catalog, gpu, Op::Gemv, &Form::PLAIN).unwrap();
        assert!(!loo.holdouts.is_empty() && loo.usable <= loo.configs);
        let text = loo.text();
        assert!(
            text.starts_with(&format!(
                "leave-one-out on {} grid points of {gpu} gemv (",
                loo.holdouts.len()
            )),
            "{text}"
        );
        assert!(
            text.contains("\n  x cuBLAS, vendor guard: geomean "),
            "{text}"
        );
    }

    #[test]
    fn summary_lines_say_when_there_is_nothing() {
        assert_eq!(summary_line("regret", &[]), "regret: no values");
        let line = summary_line("x", &[1.0, 2.0, 4.0]);
        assert!(line.starts_with("x: geomean 2.000, "), "{line}");
        assert!(line.ends_with("100.0% >= 1"), "{line}");
    }
}
