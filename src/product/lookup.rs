//! What a product launches for a shape: database lookup with fallback. Pure: no GPU.
//!
//! Rules, in order:
//! 1. **exact**: an entry for this GPU, op and shape;
//! 2. **predicted**: the fastest config of this GPU's coverage portfolio as predicted for the
//!    shape from the grid measurements ([`crate::product::select`]), from a coverage record
//!    that serves the problem's form (the same layout and beta, one product or a batch count
//!    the grid's counts reach; alpha free, a packed grid serves padded rows:
//!    [`crate::problem::Form::served_by_counts`], [`selector_for`]);
//! 3. **nearest**: the entry of this GPU and op whose shape is nearest in log space,
//!    `d = sqrt(sum over M, N, K and the batch of ln(a / b)^2)` (so 2048 is as far from 1024
//!    as from 4096), plus a penalty for each part of the form (layout, beta, padding) that
//!    differs ([`distance`]), when it is of the problem's form and within a factor of two
//!    ([`NEAR_ENOUGH`]);
//! 4. **other form**: for a form no grid serves, the prediction from the grid of the nearest
//!    form measured whose portfolio computes it ([`crate::problem::Form::differences`]): a
//!    kernel tuned for one shape is a poor guess many sizes away, a grid of a neighbouring
//!    form knows which tiles suit which sizes;
//! 5. **nearest** at any distance, then **same arch**: the nearest entry (same distance) of
//!    another GPU of the same arch;
//! 6. **default**: a built-in config per op that is reasonable on any GPU.
//!
//! The **vendor guard** (on unless [`LookupOptions::vendor_guard`] is off) then keeps the
//! promise in one place ([`Choice::beats_cublas`]): our kernel runs only where evidence of this
//! GPU on this problem says it beats cuBLAS, an exact entry measured at least as fast, or a
//! prediction from a grid of the same form whose least favourable neighbour says it is clearly
//! faster ([`crate::product::select::guard_margin`]). Everything else, rules 3 to 6 included
//! (they carry no evidence about cuBLAS on this problem), says to call cuBLAS
//! ([`Choice::vendor`]); the config stays in the choice for `explain` and the exports.
//!
//! Every template is correct for every shape, so any recorded config is valid for any shape of
//! the forms its family computes; the fallbacks only cost speed. A problem of another form than
//! the plain one (a layout, padded leading dimensions, beta, a batch: [`crate::problem::Form`])
//! is served only by families of the full interface: the rules pass over the entries of the
//! others, and over entries of another form whose config the family's space does not offer
//! for the problem (its constraints say where a config belongs: e.g. gemv's `y = A^T x` path), only a coverage measured on its form predicts for it, and its default
//! is a config of the full-interface family of the op. An entry tuned for another layout is
//! recompiled for the problem's layout. An entry tuned against another version of its family (its
//! checksum is not this build's, [`Freshness`]) is never chosen: its evidence is not this
//! kernel's. The choice lists the stale entries it passed over ([`Choice::skipped`]), so
//! `explain`, `best` and the runtime's log say so.

use crate::db::{Database, Entry};
use crate::family::catalog::{Catalog, Freshness};
use crate::family::math::{Math, MathPolicy};
use crate::family::space::{Config, Limits};
use crate::gpu::Arch;
use crate::problem::{Form, Op, Shape};
use crate::product::select::{Ranking, Selector};
use crate::report::gpus::{resolve_gpu, CompareError};
use std::collections::BTreeMap;
use std::fmt;

/// Which rule chose the config.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// This GPU, op and shape were tuned.
    Exact,
    /// Predicted from this GPU's coverage grid.
    Predicted,
    /// Predicted from this GPU's coverage grid of another form (none serves the problem's).
    OtherForm,
    /// The nearest tuned shape on this GPU.
    Nearest,
    /// The nearest tuned shape of another GPU of the same arch.
    SameArch,
    /// Nothing tuned applies: the built-in default of the op.
    Default,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rule::Exact => "exact",
            Rule::Predicted => "predicted from the coverage grid",
            Rule::OtherForm => "predicted from the coverage grid of another form",
            Rule::Nearest => "nearest tuned shape on this GPU",
            Rule::SameArch => "nearest tuned shape of another GPU of the same arch",
            Rule::Default => "built-in default",
        })
    }
}

/// The config to launch, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Choice {
    /// The rule that applied.
    pub rule: Rule,
    /// Kernel family.
    pub family: String,
    /// Its parameters.
    pub params: BTreeMap<String, i64>,
    /// The entry it came from (none for the default).
    pub entry: Option<Entry>,
    /// Log-space distance from the entry's shape (0 for exact and default).
    pub distance: f64,
    /// Entries a rule would have chosen but that are not current for this build, in rule
    /// order; empty when nothing was passed over.
    pub skipped: Vec<Skipped>,
    /// For [`Rule::Predicted`] and [`Rule::OtherForm`]: the predicted times.
    pub prediction: Option<Prediction>,
    /// The vendor guard says to call cuBLAS instead: the evidence (the exact entry's
    /// measurement, or the prediction) says it is faster here. The config is what would
    /// run otherwise.
    pub vendor: bool,
    /// How the config computes ([`Math`]): its family's, else as its entry recorded it.
    pub math: Math,
}

/// What the coverage predicted for a shape ([`Rule::Predicted`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Prediction {
    /// The chosen config's predicted time, milliseconds.
    pub ms: f64,
    /// cuBLAS's predicted time, milliseconds.
    pub cublas_ms: f64,
    /// The chosen config's time over cuBLAS's as the least favourable neighbour predicts it
    /// (what the vendor guard reads).
    pub doubt: f64,
    /// The most doubt the guard accepts for the op ([`crate::product::select::guard_margin`]).
    pub margin: f64,
    /// The same as the neighbours' weighted geometric mean says it ([`Ranking::evidence`]).
    pub evidence: f64,
    /// How much the neighbours disagree ([`Ranking::spread`]).
    pub spread: f64,
    /// The chosen config's index in the portfolio.
    pub index: usize,
    /// Usable configs ranked.
    pub ranked: usize,
}

/// Which rules the lookup may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LookupOptions {
    /// Predict from the coverage grid (rule 2).
    pub coverage: bool,
    /// Call cuBLAS where the evidence says it is faster.
    pub vendor_guard: bool,
    /// Which maths may be chosen ([`MathPolicy`]; any by default). With
    /// [`MathPolicy::Simt`] every rule passes over the entries and portfolio configs of
    /// families of another math (an entry's math is its family's, [`Entry::math_with`]), so
    /// the choice is a simt kernel or, with the vendor guard, cuBLAS SGEMM.
    pub math: MathPolicy,
}

impl Default for LookupOptions {
    fn default() -> Self {
        LookupOptions {
            coverage: true,
            vendor_guard: true,
            math: MathPolicy::Any,
        }
    }
}

impl LookupOptions {
    /// The rules before coverage existed: exact, nearest, same arch, default; no guard.
    pub fn nearest_only() -> LookupOptions {
        LookupOptions {
            coverage: false,
            vendor_guard: false,
            math: MathPolicy::Any,
        }
    }
}

/// An entry the lookup passed over because its checksum is not this build's.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Skipped {
    /// The rule that would have chosen it.
    pub rule: Rule,
    /// Its GPU.
    pub gpu: String,
    /// Its shape label.
    pub shape: String,
    /// Its family.
    pub family: String,
    /// Why it was passed over.
    pub freshness: Freshness,
}

impl Choice {
    /// The promise a product relies on, kept in this one place: whether evidence measured on
    /// this GPU for this very problem (its shape and form) says the config beats cuBLAS. Only
    /// two rules carry such evidence: an exact entry that ran at least as fast as cuBLAS, and a
    /// prediction from a coverage grid of the problem's form whose least favourable neighbour
    /// still says it is faster ([`crate::product::select::guard_margin`]). A nearest tuned
    /// shape, another GPU's entry and the built-in default say nothing about cuBLAS on this
    /// problem (a config tuned for 2048 tokens runs 50x slower than cuBLAS on one), so with the
    /// vendor guard on they never launch: the problem goes to cuBLAS. A measurement that is not
    /// a number is no evidence either.
    pub fn beats_cublas(&self) -> bool {
        match (self.rule, &self.entry, &self.prediction) {
            (Rule::Exact, Some(e), _) => e.vs_cublas >= 1.0,
            (Rule::Predicted, _, Some(p)) => p.doubt <= p.margin,
            _ => false,
        }
    }

    /// The chosen configuration, as a family instantiates and launches it.
    pub fn config(&self) -> crate::family::space::Config {
        crate::family::space::Config {
            family: self.family.clone(),
            params: self.params.clone(),
        }
    }

    /// One line for logs: the rule, the config and its origin, and the stale entries passed
    /// over.
    pub fn describe(&self, op: Op, shape: Shape) -> String {
        let mut line = self.describe_choice(op, shape);
        for s in &self.skipped {
            line.push_str(&format!(
                "; passed over the {} entry {} {} on {} ({})",
                s.rule, s.family, s.shape, s.gpu, s.freshness
            ));
        }
        line
    }

    fn describe_choice(&self, op: Op, shape: Shape) -> String {
        let line = self.describe_config(op, shape);
        if !self.vendor {
            return line;
        }
        let why = match (self.rule, &self.entry, &self.prediction) {
            (Rule::Exact, Some(e), _) => format!("measured {:.3}x cuBLAS here", e.vs_cublas),
            (Rule::OtherForm, _, Some(p)) => format!(
                "predicted {:.4} ms against cuBLAS's {:.4} ms from a grid of another form, which says nothing of cuBLAS on this one",
                p.ms, p.cublas_ms
            ),
            (_, _, Some(p)) if !p.doubt.is_finite() => format!(
                "predicted {:.4} ms against cuBLAS's {:.4} ms, but no grid point near has rows of this problem's alignment (16-byte multiples or not)",
                p.ms, p.cublas_ms
            ),
            (_, _, Some(p)) => format!(
                "predicted {:.4} ms against cuBLAS's {:.4} ms, {:.3}x its time by the least favourable neighbour",
                p.ms, p.cublas_ms, p.doubt
            ),
            _ => "nothing measured on this GPU says a kernel beats it on this problem".to_string(),
        };
        let prefix = format!("{op} {}: ", shape.label(op));
        let otherwise = line.strip_prefix(&prefix).unwrap_or(&line);
        format!("{prefix}cuBLAS (vendor guard: {why}); otherwise {otherwise}")
    }

    fn describe_config(&self, op: Op, shape: Shape) -> String {
        let params = crate::family::space::params_label(&self.params);
        if let Some(p) = &self.prediction {
            return format!(
                "{op} {}: {} {params} ({}: {:.4} ms predicted, cuBLAS {:.4} ms; best of {} configs; math {})",
                shape.label(op),
                self.family,
                self.rule,
                p.ms,
                p.cublas_ms,
                p.ranked,
                self.math
            );
        }
        match &self.entry {
            Some(e) => format!(
                "{op} {}: {} {params} ({}: {} {} on {}, {:.4} ms there, {:.3}x cuBLAS; distance {:.3}; math {})",
                shape.label(op),
                self.family,
                self.rule,
                e.op,
                e.shape,
                e.gpu,
                e.median_ms,
                e.vs_cublas,
                self.distance,
                self.math
            ),
            None => format!(
                "{op} {}: {} {params} ({}; math {})",
                shape.label(op),
                self.family,
                self.rule,
                self.math
            ),
        }
    }
}

/// The built-in default config for `op` on `shape`: [`default_config`] for the plain form,
/// else a config of the op's full-interface family, robust on any GPU and shape.
pub fn default_config_for(op: Op, shape: Shape) -> (String, BTreeMap<String, i64>) {
    if shape.form.is_plain() {
        return default_config(op);
    }
    let (family, params): (&str, &[(&str, i64)]) = match op {
        Op::Gemm => ("gemm_general", GEMM_GENERAL_DEFAULT),
        Op::Gemv if shape.form.layout.trans_a() => ("gemv_general", GEMV_GENERAL_T_DEFAULT),
        Op::Gemv => ("gemv_general", GEMV_GENERAL_DEFAULT),
    };
    (
        family.to_string(),
        params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    )
}

/// The default config of `gemm_general` (problems of any form).
const GEMM_GENERAL_DEFAULT: &[(&str, i64)] = &[
    ("BM", 128),
    ("BN", 128),
    ("BK", 16),
    ("WM", 64),
    ("WN", 32),
    ("WNITER", 2),
    ("TM", 4),
    ("TN", 4),
    ("STAGES", 3),
    ("PAD", 4),
    ("GROUP_M", 1),
    ("MIN_BLOCKS", 1),
];

/// The default config of `gemv_general` for `y = A^T x`: 8 row groups per block, rows split
/// over 16 blocks (a thread walking every row alone is 30x slower than cuBLAS at 4096^2).
const GEMV_GENERAL_T_DEFAULT: &[(&str, i64)] = &[
    ("WARPS", 8),
    ("VEC", 4),
    ("UNROLL", 2),
    ("TPR", 32),
    ("RY", 8),
    ("ROW_SPLIT", 16),
];

/// The default config of `gemv_general` for `y = A x` (any other form).
const GEMV_GENERAL_DEFAULT: &[(&str, i64)] = &[
    ("WARPS", 4),
    ("VEC", 4),
    ("UNROLL", 2),
    ("TPR", 32),
    ("RY", 1),
    ("ROW_SPLIT", 1),
];

/// The built-in default config of an op: robust on any GPU and shape, never the fastest.
pub fn default_config(op: Op) -> (String, BTreeMap<String, i64>) {
    let (family, params): (&str, &[(&str, i64)]) = match op {
        Op::Gemm => (
            "gemm_tile2d",
            &[
                ("BM", 128),
                ("BN", 128),
                ("BK", 16),
                ("TM", 8),
                ("TN", 8),
                ("PREFETCH", 1),
            ],
        ),
        Op::Gemv => (
            "gemv_warp_row",
            &[("ROWS_PER_BLOCK", 4), ("VEC", 4), ("UNROLL", 2)],
        ),
    };
    (
        family.to_string(),
        params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    )
}

/// Log-space distance between two problems: over M, N, K and the batch count, plus
/// [`FORM_PENALTY`] for each of the layout, beta, padding and alpha that differs (a kernel tuned for
/// another layout reads its operands in another pattern; beta and padding cost less).
pub fn distance(a: Shape, b: Shape) -> f64 {
    let d = |x: u64, y: u64| (x.max(1) as f64 / y.max(1) as f64).ln();
    let dims = (d(a.m, b.m).powi(2)
        + d(a.n, b.n).powi(2)
        + d(a.k, b.k).powi(2)
        + d(a.form.batch, b.form.batch).powi(2))
    .sqrt();
    let (fa, fb) = (a.form, b.form);
    let differs = [
        fa.layout != fb.layout,
        fa.beta != fb.beta,
        fa.padded != fb.padded,
        fa.scaled != fb.scaled,
    ];
    dims + FORM_PENALTY * differs.iter().filter(|&&x| x).count() as f64
}

/// What one differing part of the form adds to [`distance`]: as much as a factor of two in
/// one dimension.
pub const FORM_PENALTY: f64 = std::f64::consts::LN_2;

fn nearest<'a>(entries: impl Iterator<Item = &'a Entry>, shape: Shape) -> Option<(&'a Entry, f64)> {
    entries
        .map(|e| (e, distance(e.shape(), shape)))
        // Ties go to the faster entry relative to cuBLAS, then to the name, so the choice is
        // stable whatever the file order.
        .min_by(|(a, da), (b, db)| {
            da.total_cmp(db)
                .then(b.vs_cublas.total_cmp(&a.vs_cublas))
                .then(a.gpu.cmp(&b.gpu))
                .then(a.shape.cmp(&b.shape))
        })
}

/// Which GPU a lookup (`best`, `export`) asks about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked<'a> {
    /// A GPU of the database by name, matched as every command that takes a GPU name matches
    /// ([`resolve_gpu`]: the exact name, else the only name containing it, ignoring case).
    Named(&'a str),
    /// The GPU at hand, by the name and arch its driver reports.
    Device {
        /// Its name.
        name: String,
        /// Its arch.
        arch: Arch,
    },
}

/// The GPU and arch a lookup is for ([`lookup_gpu`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupGpu {
    /// The GPU's name, as the database records it (or as asked, for an unseen GPU).
    pub name: String,
    /// Its arch, `sm_XY`: the one given, else the database's record of the GPU, else the
    /// device's; `None` when none of them knows.
    pub arch: Option<String>,
    /// For a GPU the database has not seen, answered for its given arch: a warning naming
    /// the GPUs it has.
    pub unseen: Option<String>,
}

/// The GPU `asked` names in `db` (`origin` names the database in errors) and its arch (`arch`
/// when given). A name the database lacks is an error, unless `arch` is given: then the
/// lookup answers for an unseen GPU of that arch (its entries, or the built-in default), and
/// [`LookupGpu::unseen`] says so rather than pretend the GPU is known.
pub fn lookup_gpu(
    db: &Database,
    origin: &str,
    asked: Asked<'_>,
    arch: Option<Arch>,
) -> Result<LookupGpu, CompareError> {
    let given = arch.map(|a| a.to_string());
    let (name, device_arch, unseen) = match asked {
        Asked::Named(query) => match resolve_gpu(db, origin, query) {
            Ok(name) => (name, None, None),
            Err(_) if given.is_some() => {
                let known: Vec<String> = db.gpus.iter().map(|r| format!("'{}'", r.name)).collect();
                let warning = format!(
                    "warning: the database has no GPU named '{query}' (it has {}); this answers for an unseen GPU of the given arch",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                );
                (query.to_string(), None, Some(warning))
            }
            Err(e) => return Err(e),
        },
        Asked::Device { name, arch } => (name, Some(arch.to_string()), None),
    };
    let arch = given
        .or_else(|| db.gpu(&name).map(|g| g.arch.clone()))
        .or(device_arch);
    Ok(LookupGpu { name, arch, unseen })
}

/// Chooses the config for `op` on `shape` on the GPU named `gpu` of arch `arch` (e.g. `sm_90`;
/// `None` when unknown, which skips the same-arch rule), among the entries that are current for
/// `catalog`, with every rule and the vendor guard on.
pub fn lookup(
    db: &Database,
    catalog: &Catalog,
    gpu: &str,
    arch: Option<&str>,
    op: Op,
    shape: Shape,
) -> Choice {
    let selector = selector_for(db, catalog, gpu, op, &shape.form);
    lookup_with(
        db,
        catalog,
        gpu,
        arch,
        op,
        shape,
        LookupOptions::default(),
        selector.as_ref(),
    )
}

/// The predictor of `gpu`'s coverage for `op` on problems of `form`: the first record of
/// [`Database::coverages_for`] with grid points and configs that compute the form, one that
/// serves the form ([`Selector::serves`]: rule 2) before one of another form (rule 4).
pub fn selector_for(
    db: &Database,
    catalog: &Catalog,
    gpu: &str,
    op: Op,
    form: &Form,
) -> Option<Selector> {
    let rec = db.gpu(gpu)?;
    db.coverages_for(gpu, op, form).into_iter().find_map(|cov| {
        Selector::new(cov, rec, catalog)
            .ok()
            .filter(|s| s.usable_for(form) > 0 && s.points() > 0)
    })
}

/// How near (in [`distance`]) an entry of the problem's own form must be for the nearest rule
/// to go before a prediction from a grid of another form: a factor of two in one dimension
/// (ln 2 = 0.693, kept in).
pub const NEAR_ENOUGH: f64 = 0.7;

/// [`lookup`] with a choice of rules, predicting with `selector` ([`selector_for`] the
/// problem's form, kept by callers that look up many shapes): rule 2 where it serves the form,
/// rule 4 where it is of another form.
#[allow(clippy::too_many_arguments)]
pub fn lookup_with(
    db: &Database,
    catalog: &Catalog,
    gpu: &str,
    arch: Option<&str>,
    op: Op,
    shape: Shape,
    opts: LookupOptions,
    selector: Option<&Selector>,
) -> Choice {
    let mut choice = rules(db, catalog, gpu, arch, op, shape, opts, selector);
    choice.math = match &choice.entry {
        Some(e) => e.math_with(|f| catalog.math(f)),
        None => catalog.math(&choice.family).unwrap_or_default(),
    };
    if opts.vendor_guard {
        choice.vendor = !choice.beats_cublas();
    }
    choice
}

#[allow(clippy::too_many_arguments)]
fn rules(
    db: &Database,
    catalog: &Catalog,
    gpu: &str,
    arch: Option<&str>,
    op: Op,
    shape: Shape,
    opts: LookupOptions,
    selector: Option<&Selector>,
) -> Choice {
    let freshness = |e: &Entry| catalog.freshness(&e.family, &e.checksum);
    let mut skipped = Vec::new();
    let mut pass_over = |rule: Rule, e: &Entry| {
        // The stale exact entry is also the nearest one: report it once.
        if skipped
            .iter()
            .any(|s: &Skipped| s.gpu == e.gpu && s.shape == e.shape)
        {
            return;
        }
        skipped.push(Skipped {
            rule,
            gpu: e.gpu.clone(),
            shape: e.shape.clone(),
            family: e.family.clone(),
            freshness: freshness(e),
        })
    };
    // A problem of another form than the plain one needs a family of the full interface; an
    // entry of another form serves only with a config its family's space offers for this
    // problem (a gemv config tuned for y = A x pins the parameters of y = A^T x's path to
    // values that are correct there but slow).
    let limits = arch
        .and_then(|a| a.parse::<Arch>().ok())
        .and_then(|a| Limits::for_arch(a.number() as i64))
        .or_else(|| Limits::for_arch(90));
    let computes = |e: &Entry| {
        let Ok(f) = catalog.get(&e.family) else {
            return shape.form.is_plain();
        };
        if !f.space.interface.computes(&shape.form) {
            return false;
        }
        if e.form == shape.form {
            return true;
        }
        let config = Config {
            family: e.family.clone(),
            params: e.params.clone(),
        };
        limits
            .as_ref()
            .is_none_or(|l| matches!(f.space.reject_reason(&config, shape, l), Ok(None)))
    };
    // The maths the product allows: the entry's family says (it knows entries written before
    // schema 6 too).
    let math_of = |family: &str| catalog.math(family).unwrap_or(Math::Simt);
    let admitted = |e: &Entry| opts.math.admits(e.math_with(|f| catalog.math(f)));
    let admit_config = |c: &Config| opts.math.admits(math_of(&c.family));
    let of_op = || {
        db.entries
            .iter()
            .filter(move |e| e.op == op && computes(e) && admitted(e))
    };
    let same_arch = |e: &&Entry| {
        e.gpu != gpu && arch.is_some_and(|a| db.gpu(&e.gpu).is_some_and(|g| g.arch == a))
    };
    let mut found = None;
    if let Some(e) = db.get(gpu, op, shape).filter(|e| admitted(e)) {
        if freshness(e) == Freshness::Current {
            found = Some((Rule::Exact, e, 0.0));
        } else {
            pass_over(Rule::Exact, e);
        }
    }
    // Only a grid that serves the problem's form predicts for it here (`Selector::rank`
    // says none for another form); one of another form waits for rule 4.
    if found.is_none() && opts.coverage {
        if let Some(pick) =
            selector.and_then(|sel| predicted(sel, shape, Rule::Predicted, &admit_config))
        {
            return Choice { skipped, ..pick };
        }
    }
    for rule in [Rule::Nearest, Rule::OtherForm, Rule::SameArch] {
        if matches!(found, Some((Rule::Exact, _, _))) {
            break;
        }
        if rule == Rule::OtherForm {
            // Rule 4, unless the nearest entry is of the problem's form and near (rule 3).
            let near = |&(_, e, d): &(Rule, &Entry, f64)| e.form == shape.form && d <= NEAR_ENOUGH;
            if opts.coverage && !found.as_ref().is_some_and(near) {
                if let Some(pick) =
                    selector.and_then(|sel| predicted(sel, shape, rule, &admit_config))
                {
                    return Choice { skipped, ..pick };
                }
            }
            continue;
        }
        if found.is_some() {
            break;
        }
        let of_rule = |e: &&Entry| match rule {
            Rule::Nearest => e.gpu == gpu,
            _ => same_arch(e),
        };
        // The nearest entry of any freshness first, so that a stale one that would have won
        // is reported.
        if let Some((e, _)) = nearest(of_op().filter(of_rule), shape) {
            if freshness(e) != Freshness::Current {
                pass_over(rule, e);
            }
        }
        let current = |e: &&Entry| of_rule(e) && freshness(e) == Freshness::Current;
        found = nearest(of_op().filter(current), shape).map(|(e, d)| (rule, e, d));
    }
    match found {
        Some((rule, e, distance)) => Choice {
            rule,
            family: e.family.clone(),
            params: e.params.clone(),
            entry: Some(e.clone()),
            distance,
            skipped,
            prediction: None,
            vendor: false,
            math: Math::Simt,
        },
        None => {
            let (family, params) = default_config_for(op, shape);
            Choice {
                rule: Rule::Default,
                family,
                params,
                entry: None,
                distance: 0.0,
                skipped,
                prediction: None,
                vendor: false,
                math: Math::Simt,
            }
        }
    }
}

/// The coverage's choice for `shape`, when it ranks any config: from a grid that serves the
/// shape's form ([`Rule::Predicted`]) or from one of another form ([`Rule::OtherForm`]).
/// Only the configs `admit` accepts are ranked.
fn predicted(
    sel: &Selector,
    shape: Shape,
    rule: Rule,
    admit: &dyn Fn(&Config) -> bool,
) -> Option<Choice> {
    let ranking: Ranking = match rule {
        Rule::Predicted => sel.rank_admitting(shape, admit)?,
        _ if sel.serves(&shape.form) => return None,
        _ => sel.rank_across_admitting(shape, admit)?,
    };
    let best = ranking.configs.first()?;
    let config = sel.config(best.index)?;
    Some(Choice {
        rule,
        family: config.family.clone(),
        params: config.params.clone(),
        entry: None,
        distance: ranking.nearest,
        skipped: Vec::new(),
        prediction: Some(Prediction {
            ms: best.ms,
            cublas_ms: ranking.cublas_ms,
            doubt: ranking.doubt,
            margin: ranking.margin,
            evidence: ranking.evidence,
            spread: ranking.spread,
            index: best.index,
            ranked: ranking.configs.len(),
        }),
        vendor: false,
        math: Math::Simt,
    })
}

#[cfg(test)]
pub(crate) mod tests;

#[cfg(test)]
mod form_tests;

#[cfg(test)]
mod math_tests;
