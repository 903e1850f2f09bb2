//! Choosing a config for a shape nobody tuned, from a coverage run ([`Coverage`]): a portfolio
//! of configs timed on a grid of shapes beside cuBLAS. Pure: no GPU.
//!
//! The prediction is the analytic model ([`crate::plan::model`]) calibrated by the
//! measurements. For config `c` the model's estimate (its geometric mean with the roofline,
//! `b_c(s)`) knows the launch geometry on
//! shape `s` (tiles, waves, occupancy, split-K), which is what changes abruptly from one shape
//! to the next; what it does not know (instruction mix, coalescing, the compiler) changes
//! slowly, so it is measured on the grid as a residual `r_c(g) = ln(t_c(g) / b_c(g))` and
//! interpolated: `ln t_c(s) = ln b_c(s) + sum_g w_g r_c(g) / sum_g w_g` over the
//! [`NEIGHBOURS`] grid points nearest `s` in log-shape space (M, N, K, and the batch count on a
//! batched grid measuring several; where `c` ran), weighted by
//! `1 / (d^2 + EPS)`. cuBLAS is predicted the same way from a roofline estimate
//! (`max(flops / peak, bytes / bandwidth)` plus a launch). The config with the smallest
//! predicted time wins; the vendor guard keeps it only if the neighbours' evidence, their
//! mean plus their spread (half of it on a gemm call cuBLAS takes 0.1 ms or more for),
//! predicts it at most [`guard_margin`] of cuBLAS's time ([`Ranking::doubt`]); where it does
//! not, the least doubted of the next fastest ([`ALTERNATIVES`]) wins if the guard keeps that
//! one. Shapes whose rows are not multiples of 4 floats (no 16-byte copies) are interpolated
//! mostly from grid points like them (`ALIGN_WEIGHT`).
//!
//! [`Selector::leave_one_out`] checks the rule on the grid itself: each point is predicted
//! from the others and the choice's real time there is compared with the best of the
//! portfolio and with cuBLAS.

use crate::db::{Coverage, CoverageConfig, GpuRecord};
use crate::family::catalog::{Catalog, Freshness};
use crate::family::space::{Config, Limits};
use crate::gpu::Arch;
use crate::plan::model::{estimate, Footprint, Machine};
use crate::problem::{Form, Op, Shape};
use std::str::FromStr;

/// Grid points each prediction interpolates from.
pub const NEIGHBOURS: usize = 8;
/// Keeps the weight of a point at distance 0 finite (log units squared).
const EPS: f64 = 0.05;
/// How far apart (log units) two shapes are that differ only in whether a row length is a
/// multiple of 4 floats: the kernels copy 16 bytes at a time only where it is, so the
/// measured residuals of aligned and misaligned shapes differ; one flag apart weighs about one
/// grid step (ln 4).
const ALIGN_WEIGHT: f64 = 1.4;
/// The guard keeps our kernel only when the neighbours' evidence, summarised pessimistically
/// ([`Ranking::doubt`]), predicts its time at most this fraction of cuBLAS's: a wrong "ours"
/// costs more than a wrong "cuBLAS" (which is never slower than cuBLAS).
///
/// Chosen with [`GUARD_SPREAD`], [`GUARD_SPREAD_LONG`] and [`LONG_CALL_MS`] by leave-one-out on
/// every grid of the database (gemm: the
/// H100's plain, scaled, NT, TN and TT grids and the H200's plain one, 1314 points with the
/// tensor-core configs in the H100's portfolios; gemv: 414 points), as the rule with the
/// highest geometric mean that leaves at most one point in 300 below 0.97x cuBLAS: gemm 1.078x
/// with 4 points below (2 of the H100's plain grid, 1 NT, 1 of the H200's), gemv 1.136x with 1.
/// The rule before (spread 0.5 for gemm, margin 0.95) reached 1.102x but left 16 gemm points
/// below 0.97, 8 of them on the NT grid (the layer call, down to 0.728x); spread 0.75 left 8.
/// Checked again once the beta grids (gemm NN and NT, gemv both paths) and the NT grid's row
/// counts between powers of two were measured: gemm 1.094x over 1798 points with 9 below
/// 0.97x (the plain grid's 16x16x256 at 0.390x, predicted 1.72x; the others 0.89-0.96x), gemv
/// 1.121x over 638 with 1. The margins and spreads that keep the gemm grids to one point in
/// 300 cost more on random problems than they save (`cover --loo --json` gives each point's
/// evidence and spread to check a rule with), and random problems of every form measured
/// since (seeds 3107-3110) had none below 1.0x, so the rule stays.
/// The first rule (every neighbour alone at most 0.97) called cuBLAS on 48 of 50 random shapes
/// where our kernels won on 18: held-out shapes lie between grid points, where one far
/// neighbour of eight is enough to veto.
pub const GUARD_MARGIN: f64 = 0.96;
/// The same for a gemv call: stricter, since a gemv nobody tuned mostly takes 5-10
/// microseconds, where the neighbours' times differ by their timing's own resolution.
///
/// Chosen without a GPU on the 2172 recorded random gemv problems of the 40 evaluations of
/// seeds 2026-3142 (H100 and H200; each problem's choice from today's grids, scored with the
/// times measured there; a veto counted as cuBLAS): at 0.96, 26 problems ran below 0.97x cuBLAS
/// (gemv_warp_row and gemv_general on calls of 5-7 microseconds, most at 0.90-0.97x) and 9 of the
/// 40 evaluations had a geomean of at least 1.05x with none below 0.97x; at 0.94, 16 below and
/// 13 evaluations (geomean of all 1.057x -> 1.053x); 0.92 left 11 below but 10 evaluations,
/// and a stricter margin on short calls alone (below 8-12 microseconds) fewer evaluations still.
/// Fresh seeds on a GPU check it.
pub const GUARD_MARGIN_GEMV: f64 = 0.94;

/// The most doubt ([`Ranking::doubt`]) the guard accepts on a call of `op`: [`GUARD_MARGIN`],
/// or for gemv [`GUARD_MARGIN_GEMV`].
pub fn guard_margin(op: Op) -> f64 {
    match op {
        Op::Gemm => GUARD_MARGIN,
        Op::Gemv => GUARD_MARGIN_GEMV,
    }
}
/// How many standard deviations of the neighbours' evidence (log space, weighted) the guard
/// adds to their mean ([`GUARD_MARGIN`], [`guard_spread`]) on a short call.
pub const GUARD_SPREAD: f64 = 1.0;
/// The same on a long gemm call ([`LONG_CALL_MS`]): chosen with the rest by the leave-one-out rule
/// above (1.0 throughout gave gemm 1.0760x with the same 4 points below 0.97x; a threshold of
/// 0.05 ms left 6). Every grid point the guard let through below 0.97x was a call of tens of
/// microseconds (few rows, K of a few thousand, tiny tiles), where launch overhead and timing
/// noise scatter the neighbours' residuals; the long calls' times are steady, and the full
/// spread there only vetoed the tensor-core configs on large problems between grid points.
pub const GUARD_SPREAD_LONG: f64 = 0.5;
/// The most the neighbours' evidence may scatter (its weighted standard deviation, log space)
/// for the guard to trust it at all: past this (neighbours disagreeing by about a factor of
/// two), the doubt is infinite whatever the mean.
///
/// Chosen by leave-one-out on every grid of the database (results/runs/session45): on the
/// H200's batched grid (points 4 to 8 times apart on each axis, so neighbours are far and
/// disagree), the guard let 16 points through with a spread above 0.7 (means 0.35-0.63): 8
/// ran at over 2x cuBLAS, 6 at 0.60-0.79x. Past 0.7 the doubt is infinite: that grid's
/// geomean goes from 1.151 with 8 of 103 points below 0.97x to 1.079 with 2, and no other
/// record changes. Replayed on the 540 recorded random H200 gemm problems, 3 batched choices
/// change to cuBLAS, one timed (281x23x4257:b5:pad, 3.79x): the same profile as the losers,
/// one problem in three of which was a loss, which a promise of never being slower cannot
/// take. A denser batched grid gives steadier evidence.
pub const GUARD_MAX_SPREAD: f64 = 0.7;
/// How many of the fastest predicted configs the guard weighs: where it vetoes the fastest,
/// the one of the others it doubts least is chosen if it accepts that one ([`Ranking`]).
///
/// Checked without a GPU (results/runs/session37/loo-before-after.txt): leave-one-out on
/// every grid of the database left no more points below 0.97x cuBLAS than the fastest alone
/// (every record's count unchanged) and raised the guarded geomean of 10 of the 16 records
/// (the H200's gemv grid 1.148 to 1.206, the H100's gemm alpha grid 1.009 to 1.015); on the
/// 1320 recorded random gemm problems of seeds 3041-3112 (`scripts/guard-replay.py`,
/// guard-replay.txt there), 7 choices changed, each from cuBLAS to our kernel, and the 3
/// whose kernel had been timed there ran at 1.14x, 1.46x and 1.48x cuBLAS; on the 1140 gemv
/// problems of 19 evaluations (guard-replay-gemv.txt) 10 changed, 8 of them timed: 5 at
/// 1.04-1.14x, 3 at 0.955-0.995x. Fresh seeds on a GPU are still to check it.
pub const ALTERNATIVES: usize = 8;
/// A call whose predicted cuBLAS time is at least this (milliseconds) is long.
pub const LONG_CALL_MS: f64 = 0.1;

/// How many standard deviations the guard adds for a call of `op` that cuBLAS is predicted to
/// take `cublas_ms` for: [`GUARD_SPREAD`], or for a long unbatched gemm call
/// [`GUARD_SPREAD_LONG`]. Each op's by the same leave-one-out rule on its grids: gemv keeps one
/// deviation on long calls too (at half, 4096x65536 went through at 0.969x: 2 of 414 points
/// below 0.97x, not 1).
///
/// A batched call (`batched`) keeps one deviation however long: the half was chosen for long
/// calls whose scatter is timing noise between near neighbours, while a batched grid's points
/// lie 4 to 8 times apart on every axis (the batch count one of them), so a long batched
/// call's scatter is distance. On the H200's batched TN grid, the first 20 batched problems
/// of a fresh draw (seed 3136, results/runs/session46) had one launch, 739x3617x157:tn:b36 at
/// 0.848x cuBLAS (mean 0.72, spread 0.39: doubt 0.87 at half a deviation, 1.06 at one).
pub fn guard_spread(op: Op, cublas_ms: f64, batched: bool) -> f64 {
    match op {
        Op::Gemm if cublas_ms >= LONG_CALL_MS && !batched => GUARD_SPREAD_LONG,
        Op::Gemm | Op::Gemv => GUARD_SPREAD,
    }
}

/// A config's predicted time on a shape.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Predicted {
    /// Its index in the coverage's portfolio.
    pub index: usize,
    /// Predicted median time, milliseconds.
    pub ms: f64,
}

/// The portfolio ranked for one shape.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Ranking {
    /// Usable configs, the choice first, then fastest predicted first. The choice is the
    /// fastest predicted, unless the guard vetoes it and accepts another of the
    /// [`ALTERNATIVES`] fastest: then the one of those it doubts least.
    pub configs: Vec<Predicted>,
    /// cuBLAS's predicted time, milliseconds.
    pub cublas_ms: f64,
    /// Log-space distance to the nearest grid point used.
    pub nearest: f64,
    /// The chosen config's time over cuBLAS's, pessimistically: the neighbours' weighted
    /// geometric mean of it, raised by [`guard_spread`] of their weighted standard deviation
    /// (in log space); infinite where no neighbour's rows have the shape's alignment (16-byte
    /// multiples or not, for A, B and C alike), whose times are of other loads, and where that
    /// deviation is above [`GUARD_MAX_SPREAD`].
    pub doubt: f64,
    /// The most doubt the guard accepts for this op ([`guard_margin`]).
    pub margin: f64,
    /// The chosen config's time over cuBLAS's as the neighbours say it: their weighted geometric
    /// mean (infinite where [`Ranking::doubt`] is).
    pub evidence: f64,
    /// The weighted standard deviation of the neighbours' evidence, log space (infinite where
    /// [`Ranking::doubt`] is).
    pub spread: f64,
}

impl Ranking {
    /// Whether the vendor guard would call cuBLAS: some neighbour's evidence does not say the
    /// best config is clearly faster ([`Ranking::margin`]).
    pub fn prefers_cublas(&self) -> bool {
        self.configs.is_empty() || self.doubt > self.margin || self.doubt.is_nan()
    }
}

struct Point {
    shape: Shape,
    log: [f64; 6],
    cublas_ms: f64,
    cublas_residual: f64,
    /// Per config: `ln(t / b)`, or `None` where it failed or cannot be modelled.
    residual: Vec<Option<f64>>,
    ms: Vec<f64>,
}

/// A coverage record made ready to predict from, for one GPU and one form (the record's: it
/// ranks problems of that form only).
pub struct Selector {
    op: Op,
    form: Form,
    configs: Vec<Usable>,
    points: Vec<Point>,
    /// The smallest and largest batch count of the points ([`Coverage::batch_counts`]).
    batches: std::ops::RangeInclusive<u64>,
    machine: Machine,
    limits: Limits,
}

struct Usable {
    config: Config,
    /// The family's space, when this build has the family at the recorded checksum.
    current: bool,
    family: Option<crate::family::catalog::Family>,
}

/// Where a shape lies for interpolation: its log sizes, then whether the rows of B (and C)
/// and of A are 16-byte multiples (padded rows always are), scaled by [`ALIGN_WEIGHT`], then
/// the log of its batch count (0 but on a batched grid measuring several).
///
/// The flags are NN's rows (N and K) whatever the layout: placing them where the layout
/// stores its rows (TN's A rows are M) was replayed on 720 recorded random H100 gemm problems
/// of seeds 3111-3142 (results/runs/session52) and did worse (geomean 1.0418 -> 1.0387, a new
/// choice at 0.654x); the guard's class ([`alignment`]) is by storage.
fn log_shape(s: Shape) -> [f64; 6] {
    let misaligned = |d: u64| {
        if s.form.padded || d.is_multiple_of(4) {
            0.0
        } else {
            ALIGN_WEIGHT
        }
    };
    [
        (s.m.max(1) as f64).ln(),
        (s.n.max(1) as f64).ln(),
        (s.k.max(1) as f64).ln(),
        misaligned(s.n),
        misaligned(s.k),
        (s.form.batch.max(1) as f64).ln(),
    ]
}

/// Which stored rows (A, B, C as [`Shape::stored`] lays them out) are 16-byte multiples: the
/// kernels copy 16 bytes at a time only where they are (padded rows always are), so a
/// time measured on rows of one class is no evidence for another ([`Ranking::doubt`]).
///
/// A gemv's vectors count as aligned whatever their length: they are never padded and are
/// read one float per row, so only A's rows decide (counting their rows of one float as
/// misaligned made every padded gemv unlike every grid point, and the guard vetoed them all).
/// Replayed on the recorded random gemv problems of seeds 3101-3144 (results/runs/session52):
/// H100 1.0577x -> 1.0679x over 1380 (one more below 0.97x: 37755x5533:t:alpha:pad at
/// 0.713x), H200 1.0490x -> 1.0562x over 540 (one more, at 0.967x).
fn alignment(op: Op, s: Shape) -> [bool; 3] {
    let stored = s.stored(op);
    std::array::from_fn(|i| {
        (op == Op::Gemv && i > 0) || s.form.padded || stored[i].1.is_multiple_of(4)
    })
}

fn dist2(a: &[f64; 6], b: &[f64; 6]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum()
}

/// What the machine reaches at best on `shape`: the roofline, plus a launch.
fn roofline_ms(op: Op, shape: Shape, machine: &Machine) -> f64 {
    let compute = shape.flops() / (machine.fp32_gflops.max(1e-3) * 1e9);
    let memory = shape.min_bytes(op) / (machine.dram_gbs.max(1e-3) * 1e9);
    compute.max(memory) * 1e3 + 0.003
}

/// Why a coverage record cannot be used for prediction.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SelectError {
    /// The GPU record names an arch the model does not know.
    #[error("{0}: arch {1} is not one this build knows")]
    Arch(String, String),
}

impl Selector {
    /// Prepares `cov` for prediction on the GPU `gpu` describes, with the families of `catalog`
    /// (a config whose family is missing or changed since is never predicted).
    pub fn new(
        cov: &Coverage,
        gpu: &GpuRecord,
        catalog: &Catalog,
    ) -> Result<Selector, SelectError> {
        let sm = Arch::from_str(&gpu.arch)
            .map_err(|_| SelectError::Arch(cov.describe(), gpu.arch.clone()))?
            .number() as i64;
        let machine = Machine::new(sm, gpu.sms, gpu.clock_mhz, gpu.copy_bandwidth_gbs)
            .ok_or_else(|| SelectError::Arch(cov.describe(), gpu.arch.clone()))?;
        let limits = Limits::for_arch(sm)
            .ok_or_else(|| SelectError::Arch(cov.describe(), gpu.arch.clone()))?;
        let configs: Vec<Usable> = cov.configs.iter().map(|c| usable(c, catalog)).collect();
        let mut sel = Selector {
            op: cov.op,
            form: cov.form,
            configs,
            points: Vec::new(),
            batches: cov.batch_counts(),
            machine,
            limits,
        };
        for p in &cov.points {
            let Some(shape) = cov.point_shape(p) else {
                continue;
            };
            // A database checks these; a record built in code might not: an unusable time
            // (missing, 0, negative, not finite) marks the config failed there.
            let ms: Vec<f64> = (0..sel.configs.len())
                .map(|i| {
                    p.ms.get(i)
                        .copied()
                        .filter(|t| t.is_finite() && *t > 0.0)
                        .unwrap_or(0.0)
                })
                .collect();
            if !(p.cublas_ms.is_finite() && p.cublas_ms > 0.0) {
                continue;
            }
            let residual = (0..sel.configs.len())
                .map(|i| {
                    let t = ms[i];
                    let b = sel.basis(i, shape)?;
                    (t > 0.0).then(|| (t / b).ln())
                })
                .collect();
            sel.points.push(Point {
                shape,
                log: log_shape(shape),
                cublas_ms: p.cublas_ms,
                cublas_residual: (p.cublas_ms / roofline_ms(cov.op, shape, &machine)).ln(),
                residual,
                ms,
            });
        }
        Ok(sel)
    }

    /// The form of the problems it predicts for (its coverage's).
    pub fn form(&self) -> Form {
        self.form
    }

    /// The portfolio config at `index`.
    pub fn config(&self, index: usize) -> Option<&Config> {
        self.configs.get(index).map(|u| &u.config)
    }

    /// Configs in the portfolio.
    pub fn len(&self) -> usize {
        self.configs.len()
    }

    /// Whether the portfolio is empty.
    pub fn is_empty(&self) -> bool {
        self.configs.is_empty()
    }

    /// Whether this build can launch portfolio config `index` (its family is here, unchanged).
    pub fn is_usable(&self, index: usize) -> bool {
        self.configs.get(index).is_some_and(|c| c.current)
    }

    /// Configs of the portfolio this build can launch.
    pub fn usable(&self) -> usize {
        self.configs.iter().filter(|c| c.current).count()
    }

    /// Whether portfolio config `index` can run a problem of `form`: this build can launch
    /// it, and its family computes the form (a plain-interface config takes no alpha,
    /// padding, transpose, beta or batch).
    pub fn is_usable_for(&self, index: usize, form: &Form) -> bool {
        self.configs.get(index).is_some_and(|c| {
            c.current
                && c.family
                    .as_ref()
                    .is_some_and(|f| f.space.interface.computes(form))
        })
    }

    /// Whether portfolio config `index` may be predicted for `shape`, which nobody tuned: its
    /// family's `untuned_constraints` hold there ([`crate::family::space::Space::serves_untuned`]).
    fn serves_untuned(&self, index: usize, shape: Shape) -> bool {
        self.configs.get(index).is_some_and(|c| {
            c.family
                .as_ref()
                .is_some_and(|f| f.space.serves_untuned(&c.config, shape, &self.limits))
        })
    }

    /// Configs of the portfolio that can run a problem of `form` ([`Selector::is_usable_for`]).
    pub fn usable_for(&self, form: &Form) -> usize {
        (0..self.configs.len())
            .filter(|&i| self.is_usable_for(i, form))
            .count()
    }

    /// Whether the grid is evidence of speed on problems of `form` ([`Form::served_by_counts`]
    /// with the batch counts of its points).
    pub fn serves(&self, form: &Form) -> bool {
        form.served_by_counts(&self.form, self.batches.clone())
    }

    /// Grid points.
    pub fn points(&self) -> usize {
        self.points.len()
    }

    /// The model's estimate for config `i` on `shape`, milliseconds.
    fn basis(&self, i: usize, shape: Shape) -> Option<f64> {
        let u = self.configs.get(i)?;
        let family = u.family.as_ref().filter(|_| u.current)?;
        let launch = family.space.launch(&u.config, shape, &self.limits).ok()?;
        let hints = family
            .space
            .model_hints(&u.config, shape, &self.limits)
            .unwrap_or_default();
        let t = estimate(self.op, shape, &Footprint { launch, hints }, &self.machine).time_ms;
        // Damped halfway toward the roofline: the model's tile and wave effects are real, its
        // absolute scale less so (leave-one-out on the H100 and H200 grids: gemv regret 1.044
        // and 1.030 with the model alone, 1.026 both damped; gemm unchanged within 0.002).
        let t = (t * roofline_ms(self.op, shape, &self.machine)).sqrt();
        (t.is_finite() && t > 0.0).then_some(t)
    }

    /// Ranks the configs usable for `shape`'s form, the choice first ([`Ranking::configs`]).
    /// `None` when the grid is empty, no config is usable, or the grid does not serve the
    /// shape's form ([`Selector::serves`]: a grid says nothing about another layout's speed,
    /// nor about cuBLAS's there).
    pub fn rank(&self, shape: Shape) -> Option<Ranking> {
        self.rank_admitting(shape, &|_| true)
    }

    /// [`Selector::rank`] among the configs `admit` accepts (e.g. of the maths a product
    /// allows): the others are not ranked, and the guard's doubt is the best admitted
    /// config's.
    pub fn rank_admitting(&self, shape: Shape, admit: &dyn Fn(&Config) -> bool) -> Option<Ranking> {
        if !self.serves(&shape.form) {
            return None;
        }
        self.rank_without(shape, None, admit)
    }

    /// Ranks the configs usable for `shape`'s form from this grid whatever its form: the
    /// ranking of a problem whose own form has no grid (a transposed, beta or batched call
    /// predicted from the nearest form measured). Its times and `doubt` are this grid's
    /// form's, so they are no evidence against cuBLAS on `shape`.
    pub fn rank_across(&self, shape: Shape) -> Option<Ranking> {
        self.rank_across_admitting(shape, &|_| true)
    }

    /// [`Selector::rank_across`] among the configs `admit` accepts.
    pub fn rank_across_admitting(
        &self,
        shape: Shape,
        admit: &dyn Fn(&Config) -> bool,
    ) -> Option<Ranking> {
        self.rank_without(shape, None, admit)
    }

    fn rank_without(
        &self,
        shape: Shape,
        skip: Option<usize>,
        admit: &dyn Fn(&Config) -> bool,
    ) -> Option<Ranking> {
        let at = log_shape(shape);
        let mut near: Vec<(f64, usize)> = self
            .points
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != skip)
            .map(|(i, p)| (dist2(&at, &p.log), i))
            .collect();
        near.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        near.truncate(NEIGHBOURS);
        let nearest = near.first()?.0.sqrt();
        let interpolate = |f: &dyn Fn(&Point) -> Option<f64>| {
            let (mut sum, mut weights) = (0.0, 0.0);
            for &(d2, i) in &near {
                if let Some(r) = f(&self.points[i]) {
                    let w = 1.0 / (d2 + EPS);
                    sum += w * r;
                    weights += w;
                }
            }
            (weights > 0.0).then(|| sum / weights)
        };
        let mut configs: Vec<Predicted> = (0..self.configs.len())
            .filter(|&i| {
                self.is_usable_for(i, &shape.form)
                    && self.serves_untuned(i, shape)
                    && admit(&self.configs[i].config)
            })
            .filter_map(|i| {
                // A config that failed at any neighbour is not trusted in that region.
                if near.iter().any(|&(_, p)| self.points[p].ms[i] == 0.0) {
                    return None;
                }
                let r = interpolate(&|p: &Point| p.residual[i])?;
                let b = self.basis(i, shape)?;
                Some(Predicted {
                    index: i,
                    ms: b * r.exp(),
                })
            })
            .collect();
        configs.sort_by(|a, b| a.ms.total_cmp(&b.ms).then(a.index.cmp(&b.index)));
        let cublas = interpolate(&|p: &Point| Some(p.cublas_residual))?;
        let roof = roofline_ms(self.op, shape, &self.machine);
        let cublas_ms = roof * cublas.exp();
        // Rows of another alignment than every neighbour's: the evidence is of other loads.
        let class = alignment(self.op, shape);
        let like = near
            .iter()
            .any(|&(_, g)| alignment(self.op, self.points[g].shape) == class);
        let spread_k = guard_spread(self.op, cublas_ms, shape.form.batch > 1);
        // The guard's judgement of config `index`: its time over cuBLAS's as each neighbour
        // alone predicts it (weight, log ratio), as a weighted mean and standard deviation.
        let judge = |index: usize| -> (f64, f64) {
            let evidence: Vec<(f64, f64)> = self
                .basis(index, shape)
                .map(|b| {
                    near.iter()
                        .filter_map(|&(d2, g)| {
                            let p = &self.points[g];
                            let r = p.residual[index]? - p.cublas_residual;
                            Some((1.0 / (d2 + EPS), r + (b / roof).ln()))
                        })
                        .collect()
                })
                .unwrap_or_default();
            let weights: f64 = evidence.iter().map(|e| e.0).sum();
            if !(weights > 0.0 && like) {
                return (f64::INFINITY, f64::INFINITY);
            }
            let mean = evidence.iter().map(|e| e.0 * e.1).sum::<f64>() / weights;
            let var = evidence
                .iter()
                .map(|e| e.0 * (e.1 - mean).powi(2))
                .sum::<f64>()
                / weights;
            (mean, var.sqrt())
        };
        let doubt_of = |(mean, sd): (f64, f64)| {
            if sd > GUARD_MAX_SPREAD {
                f64::INFINITY
            } else {
                (mean + spread_k * sd).exp()
            }
        };
        let mut judged = configs
            .first()
            .map_or((f64::INFINITY, f64::INFINITY), |c| judge(c.index));
        // The fastest predicted config is vetoed: the most confident of the next fastest
        // (the smallest doubt) is chosen instead where the guard accepts it.
        let margin = guard_margin(self.op);
        if doubt_of(judged) > margin {
            let alternative = configs
                .iter()
                .enumerate()
                .take(ALTERNATIVES)
                .skip(1)
                .map(|(at, c)| (at, judge(c.index)))
                .min_by(|a, b| doubt_of(a.1).total_cmp(&doubt_of(b.1)).then(a.0.cmp(&b.0)))
                .filter(|(_, j)| doubt_of(*j) <= margin);
            if let Some((at, j)) = alternative {
                let chosen = configs.remove(at);
                configs.insert(0, chosen);
                judged = j;
            }
        }
        let (mean, sd) = judged;
        Some(Ranking {
            configs,
            cublas_ms,
            nearest,
            doubt: doubt_of(judged),
            margin,
            evidence: mean.exp(),
            spread: sd,
        })
    }

    /// Predicts every grid point from the others and scores the choices against what was
    /// measured there.
    pub fn leave_one_out(&self) -> Vec<Holdout> {
        self.points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let best =
                    p.ms.iter()
                        .enumerate()
                        .filter(|(c, t)| **t > 0.0 && self.configs[*c].current)
                        .map(|(_, t)| *t)
                        .min_by(f64::total_cmp)?;
                let ranking = self.rank_without(p.shape, Some(i), &|_| true)?;
                let chosen = ranking.configs.first()?;
                let chosen_ms = p.ms[chosen.index];
                // A choice that failed here counts as cuBLAS's time x 10: the worst case.
                let chosen_ms = if chosen_ms > 0.0 {
                    chosen_ms
                } else {
                    10.0 * p.cublas_ms
                };
                Some(Holdout {
                    shape: p.shape,
                    regret: chosen_ms / best,
                    vs_cublas: p.cublas_ms / chosen_ms,
                    guarded_vs_cublas: if ranking.prefers_cublas() {
                        1.0
                    } else {
                        p.cublas_ms / chosen_ms
                    },
                    best_vs_cublas: p.cublas_ms / best,
                    predicted_vs_cublas: ranking.cublas_ms / chosen.ms,
                    doubt: ranking.doubt,
                    evidence: ranking.evidence,
                    spread: ranking.spread,
                    cublas_predicted_ms: ranking.cublas_ms,
                })
            })
            .collect()
    }
}

/// One grid point predicted from the others ([`Selector::leave_one_out`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Holdout {
    /// The point's shape.
    pub shape: Shape,
    /// The chosen config's time over the portfolio's best there (1 = the best).
    pub regret: f64,
    /// cuBLAS's time over the chosen config's (above 1: faster than cuBLAS).
    pub vs_cublas: f64,
    /// The same with the vendor guard (1 where it calls cuBLAS).
    pub guarded_vs_cublas: f64,
    /// cuBLAS's time over the portfolio's best: what an oracle would get.
    pub best_vs_cublas: f64,
    /// What the prediction said `vs_cublas` would be.
    pub predicted_vs_cublas: f64,
    /// The guard's [`Ranking::doubt`] there.
    pub doubt: f64,
    /// [`Ranking::evidence`] there.
    pub evidence: f64,
    /// [`Ranking::spread`] there.
    pub spread: f64,
    /// cuBLAS's predicted time there, milliseconds.
    pub cublas_predicted_ms: f64,
}

fn usable(c: &CoverageConfig, catalog: &Catalog) -> Usable {
    let family = catalog.get(&c.family).ok().cloned();
    Usable {
        config: Config {
            family: c.family.clone(),
            params: c.params.clone(),
        },
        current: catalog.freshness(&c.family, &c.checksum) == Freshness::Current,
        family,
    }
}

#[cfg(test)]
mod tests;
