//! Coverage grids: the shapes a coverage run measures, as data (`configs/coverage/*.toml`).

use super::CoverError;
use crate::problem::{Form, Layout, Op, Shape};
use crate::tuning::workload::operands_within_caps;
use serde::Deserialize;
use std::path::Path;

/// The grids built into the binary, by op.
const BUILTIN: &[(&str, &str)] = &[
    ("gemm", include_str!("../../../configs/coverage/gemm.toml")),
    (
        "gemm-nt",
        include_str!("../../../configs/coverage/gemm-nt.toml"),
    ),
    (
        "gemm-forms",
        include_str!("../../../configs/coverage/gemm-forms.toml"),
    ),
    (
        "gemm-batched",
        include_str!("../../../configs/coverage/gemm-batched.toml"),
    ),
    ("gemv", include_str!("../../../configs/coverage/gemv.toml")),
];

/// The shapes of a coverage run: the product of per-axis values, thinned and capped.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    /// The op.
    pub op: Op,
    /// The form of every grid shape (default plain), written like an entry's:
    /// `form = { layout = "nt" }` (the keys left out are plain: packed, beta 0, alpha 1, batch
    /// 1). Its batch count is the record's key; [`Grid::batches`] may measure others.
    #[serde(default)]
    pub form: Form,
    /// Batch counts of a batched grid (`form.batch` above 1): every point of M, N and K is
    /// measured at each (the grid serves batched problems of counts between half the smallest
    /// and twice the largest, [`Form::served_by_counts`]). Empty: `form.batch` alone.
    #[serde(default)]
    pub batches: Vec<u64>,
    /// Values of M.
    pub m: Vec<u64>,
    /// Values of N (gemm only; gemv has N = 1).
    #[serde(default)]
    pub n: Vec<u64>,
    /// Values of K.
    pub k: Vec<u64>,
    /// Shapes with more multiply-adds than this (over the whole batch) are left out, and
    /// batches whose operands hold more than a drawn problem may
    /// ([`crate::tuning::workload::operands_within_caps`]).
    pub max_macs: u64,
    /// Shapes with more output elements than this (over the whole batch) are left out.
    #[serde(default = "unlimited")]
    pub max_output: u64,
    /// Keep only the points whose axis indices (the batch count's too) add up to an even
    /// number (a face-centred lattice: every other point, with the same spacing along the
    /// diagonals).
    #[serde(default)]
    pub checkerboard: bool,
    /// The pool searches run on every `pool_every`-th grid point (in the order M, N, K
    /// vary, K fastest), so they span every scale of every axis.
    pub pool_every: usize,
}

fn unlimited() -> u64 {
    u64::MAX
}

impl Grid {
    /// The built-in grid for problems of `op` in `form`, with its form set to `form`: for a
    /// batched form `<op>-batched.toml` where the op has one (gemm: several batch counts),
    /// else `<op>-<layout>.toml` where the layout has one (gemm `nt`), else for a form other
    /// than the plain one `<op>-forms.toml` where the op has one (gemm: the few families of
    /// the full interface on a coarser lattice), else `<op>.toml`.
    pub fn builtin_for(op: Op, form: Form) -> Result<Grid, CoverError> {
        let candidates = [
            (form.batch > 1).then(|| format!("{}-batched", op.name())),
            (form.layout != Layout::Nn).then(|| format!("{}-{}", op.name(), form.layout.name(op))),
            (!form.is_plain()).then(|| format!("{}-forms", op.name())),
            Some(op.name().to_string()),
        ];
        let (name, text) = candidates
            .iter()
            .flatten()
            .find_map(|c| BUILTIN.iter().find(|(n, _)| n == c))
            .ok_or_else(|| CoverError::Grid {
                path: format!("configs/coverage/{}.toml", op.name()),
                message: "not built in".into(),
            })?;
        let path = format!("configs/coverage/{name}.toml (built in)");
        let mut g = Grid::from_toml_str(text, &path)?;
        g.form = form;
        g.check_form(&path)?;
        Ok(g)
    }

    /// The built-in grid of `op`, plain form.
    pub fn builtin(op: Op) -> Result<Grid, CoverError> {
        let (name, text) = BUILTIN
            .iter()
            .find(|(n, _)| *n == op.name())
            .ok_or_else(|| CoverError::Grid {
                path: format!("configs/coverage/{}.toml", op.name()),
                message: "not built in".into(),
            })?;
        Grid::from_toml_str(text, &format!("configs/coverage/{name}.toml (built in)"))
    }

    /// Reads a grid file.
    pub fn load(path: &Path) -> Result<Grid, CoverError> {
        let text = std::fs::read_to_string(path).map_err(|e| CoverError::Grid {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        Grid::from_toml_str(&text, &path.display().to_string())
    }

    /// Parses grid text; `path` names it in messages.
    pub fn from_toml_str(text: &str, path: &str) -> Result<Grid, CoverError> {
        let err = |message: String| CoverError::Grid {
            path: path.to_string(),
            message,
        };
        let mut g: Grid = toml::from_str(text).map_err(|e| err(e.message().to_string()))?;
        if g.op == Op::Gemv {
            if !(g.n.is_empty() || g.n == [1]) {
                return Err(err("a gemv grid has no `n` (N is 1)".into()));
            }
            g.n = vec![1];
        }
        for (axis, v) in [("m", &g.m), ("n", &g.n), ("k", &g.k)] {
            if v.is_empty() || v.contains(&0) {
                return Err(err(format!("`{axis}` needs at least one value, none 0")));
            }
        }
        if g.pool_every == 0 {
            return Err(err("`pool_every` must be at least 1".into()));
        }
        g.check_form(path)?;
        if g.shapes().is_empty() {
            return Err(err("the caps leave no shape".into()));
        }
        Ok(g)
    }

    /// Checks that the form is one of the op's (a gemv layout is `nn` or `tn`; a batch of 1 to
    /// [`crate::problem::MAX_BATCH`]); `path` names the grid in the message.
    pub fn check_form(&self, path: &str) -> Result<(), CoverError> {
        let err = |message: String| CoverError::Grid {
            path: path.to_string(),
            message,
        };
        if self.op == Op::Gemv && self.form.layout.trans_b() {
            return Err(err(format!(
                "gemv has no layout {}: use nn (y = A x) or tn (y = A^T x)",
                self.form.layout.name(Op::Gemm)
            )));
        }
        for &batch in std::iter::once(&self.form.batch).chain(&self.batches) {
            if !(1..=crate::problem::MAX_BATCH).contains(&batch) {
                return Err(err(format!(
                    "the batch count must be between 1 and {} (got {batch})",
                    crate::problem::MAX_BATCH,
                )));
            }
        }
        if self.batches.contains(&1) || (!self.batches.is_empty() && self.form.batch == 1) {
            return Err(err(
                "`batches` measures a batched grid: every count and the form's batch above 1 (one product per call is a grid of its own)".into(),
            ));
        }
        Ok(())
    }

    /// The batch counts of the points: [`Grid::batches`], or the form's.
    fn counts(&self) -> Vec<u64> {
        if self.batches.is_empty() {
            vec![self.form.batch]
        } else {
            self.batches.clone()
        }
    }

    fn points(&self) -> Vec<Shape> {
        let mut out = Vec::new();
        for (h, &batch) in self.counts().iter().enumerate() {
            for (i, &m) in self.m.iter().enumerate() {
                for (j, &n) in self.n.iter().enumerate() {
                    for (l, &k) in self.k.iter().enumerate() {
                        if self.checkerboard && (h + i + j + l) % 2 == 1 {
                            continue;
                        }
                        let fits = m
                            .checked_mul(n)
                            .and_then(|mn| mn.checked_mul(batch))
                            .filter(|out| *out <= self.max_output)
                            .and_then(|out| out.checked_mul(k))
                            .is_some_and(|macs| macs <= self.max_macs);
                        let form = Form { batch, ..self.form };
                        let shape = Shape::mnk(m, n, k).with_form(form);
                        // A batch holds each operand within what evaluate draws (1 GiB).
                        let held = batch == 1 || operands_within_caps(self.op, shape);
                        if fits && held && Shape::new(self.op, m, n, k).is_ok() {
                            out.push(shape);
                        }
                    }
                }
            }
        }
        out
    }

    /// Every grid shape, of the grid's form.
    pub fn shapes(&self) -> Vec<Shape> {
        self.points()
    }

    /// The shapes the pool searches run on.
    pub fn pool(&self) -> Vec<Shape> {
        self.shapes().into_iter().step_by(self.pool_every).collect()
    }
}
