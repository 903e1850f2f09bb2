//! Workloads for `autotune evaluate`: shapes nobody tuned, to measure how well a tuning
//! database generalises. [`random_problems`] draws a seeded, reproducible mixture of realistic
//! shape kinds ([`mix`]) in the plain form; [`random_problems_in`] also draws each problem's
//! [`Form`] ([`Forms::All`]: layouts, beta, padding, alpha, batches, and for gemm the layer
//! calls `X · Wᵀ` products make, [`Kind::Layer`]); [`from_suite`] reads a fixed list in the
//! suite format;
//! [`Summary`] condenses per-shape ratios (speedups, efficiencies, regrets) into order
//! statistics. Pure: no GPU.
//!
//! Reproducible on every platform: kinds are picked with integer arithmetic and log-uniform
//! sizes are computed with IEEE-754 multiplications and square roots only (correctly rounded
//! everywhere), never with `ln`/`exp`, whose last bit depends on the platform's libm.

use crate::problem::{Form, Layout, Op, Shape};
use crate::search::Rng;
use crate::suite::{Suite, SuiteError};
use std::collections::HashSet;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

/// Largest `M * N * K` of a drawn gemm shape (2^36 multiply-adds: about 2 ms or less on an
/// H100). Larger draws are redrawn.
pub const GEMM_MAX_MACS: u64 = 1 << 36;

/// Largest `M * K` of a drawn gemv shape (2^28 elements: 1 GiB of `f32` in A). Larger draws
/// are redrawn.
pub const GEMV_MAX_ELEMS: u64 = 1 << 28;

/// Largest number of elements one operand of a drawn gemm problem holds over its whole batch,
/// padding included (2^28: 1 GiB of `f32`, gemv's cap on A). Only batched or padded draws
/// ([`Forms::All`]) come near it: a plain draw's matrices hold at most 2^26.
pub const GEMM_MAX_OPERAND_ELEMS: u64 = 1 << 28;

/// How many draws in a row one problem may reject (over the cap, a duplicate or excluded)
/// before [`random_problems`] gives up with [`WorkloadError::Exhausted`].
pub const MAX_REJECTS_IN_A_ROW: usize = 10_000;

/// Which kind of shape a problem is: the mixture component it was drawn from, or
/// [`Kind::Listed`] when it came from a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Every dimension moderate (log-uniform over a wide range).
    General,
    /// M or N tiny (1 to 16): skinny products, gemv-like gemms.
    TinyMn,
    /// K tiny (1 to 16): outer-product-like.
    TinyK,
    /// K much larger than M and N: long reductions.
    HugeK,
    /// Every dimension an odd prime: no tile divides it, every edge is ragged.
    OddPrime,
    /// A transformer layer's call `C = X · Wᵀ` (gemm, NT): M tokens, N and K model widths
    /// ([`Forms::All`] only).
    Layer,
    /// Read from a shape list ([`from_suite`]), not drawn.
    Listed,
}

impl Kind {
    /// Every kind, in a stable order ([`Kind::Listed`] last).
    #[rustfmt::skip]
    pub const ALL: [Kind; 7] = [
        Kind::General, Kind::TinyMn, Kind::TinyK, Kind::HugeK, Kind::OddPrime, Kind::Layer,
        Kind::Listed,
    ];

    /// The short name used in reports: "general", "tiny M/N", "tiny K", "huge K",
    /// "odd/prime", "layer", "listed".
    pub fn name(self) -> &'static str {
        match self {
            Kind::General => "general",
            Kind::TinyMn => "tiny M/N",
            Kind::TinyK => "tiny K",
            Kind::HugeK => "huge K",
            Kind::OddPrime => "odd/prime",
            Kind::Layer => "layer",
            Kind::Listed => "listed",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One shape to measure, with the kind it belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Problem {
    /// The shape (valid for the op it was made for: `n == 1` for gemv).
    pub shape: Shape,
    /// Where it came from.
    pub kind: Kind,
}

/// Which forms a random draw gives its problems ([`random_problems_in`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Forms {
    /// The plain form only (NN, packed, alpha 1, beta 0, one product): for a seed, the same
    /// problems as before forms were drawn, bit for bit.
    Plain,
    /// Every form products call: each problem also draws its layout, beta, padding, alpha
    /// and batch, and for gemm two problems in five are layer calls `X · Wᵀ` (NT).
    #[default]
    All,
}

impl Forms {
    /// Both choices, in a stable order.
    pub const ALL: [Forms; 2] = [Forms::All, Forms::Plain];

    /// The name on the command line: "all" or "plain".
    pub fn name(self) -> &'static str {
        match self {
            Forms::All => "all",
            Forms::Plain => "plain",
        }
    }
}

impl fmt::Display for Forms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Forms {
    type Err = String;
    fn from_str(s: &str) -> Result<Forms, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "all" => Ok(Forms::All),
            "plain" => Ok(Forms::Plain),
            _ => Err(format!(
                "unknown forms '{s}': accepted are all (every layout, beta, padding, alpha, batches, and gemm layer calls X·Wᵀ) and plain (NN, packed, alpha 1, beta 0, one product)"
            )),
        }
    }
}

/// Why no workload could be drawn.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadError {
    /// Too many draws in a row were rejected: the exclusion covers (nearly) all of a kind, or
    /// more distinct shapes were asked for than the distribution offers.
    #[error("drew only {drawn} of {wanted} distinct {op} shapes: {MAX_REJECTS_IN_A_ROW} draws in a row were duplicates, excluded or over the size cap; ask for fewer shapes or exclude fewer")]
    Exhausted {
        /// The op.
        op: Op,
        /// How many problems were asked for.
        wanted: usize,
        /// How many were drawn before giving up.
        drawn: usize,
    },
}

/// How one dimension of a component is drawn.
#[derive(Debug, Clone, Copy)]
enum Dim {
    Log(u64, u64),   // log-uniform in [lo, hi]
    Prime(u64, u64), // the smallest prime >= a log-uniform draw in [lo, hi]
    One,             // gemv's N
}

impl Dim {
    fn draw(self, rng: &mut Rng) -> u64 {
        match self {
            Dim::Log(lo, hi) => log_uniform(rng, lo, hi),
            Dim::Prime(lo, hi) => next_prime(log_uniform(rng, lo, hi)),
            Dim::One => 1,
        }
    }
}

/// One component of a mixture: its kind, its share in percent, how M, N and K are drawn,
/// and whether a coin flip (drawn first) swaps M and N.
type Component = (Kind, u32, [Dim; 3], bool);

use Dim::{Log, One, Prime};

#[rustfmt::skip]
const GEMM_MIX: [Component; 5] = [
    (Kind::General, 40, [Log(16, 8192), Log(16, 8192), Log(16, 8192)], false),
    (Kind::TinyMn, 15, [Log(1, 16), Log(64, 8192), Log(64, 8192)], true),
    (Kind::TinyK, 10, [Log(64, 8192), Log(64, 8192), Log(1, 16)], false),
    (Kind::HugeK, 15, [Log(16, 1024), Log(16, 1024), Log(4096, 65536)], false),
    (Kind::OddPrime, 20, [Prime(17, 8192), Prime(17, 8192), Prime(17, 8192)], false),
];

#[rustfmt::skip]
const GEMV_MIX: [Component; 4] = [
    (Kind::General, 45, [Log(16, 65536), One, Log(16, 65536)], false),
    (Kind::TinyMn, 15, [Log(1, 16), One, Log(256, 65536)], false),
    (Kind::TinyK, 15, [Log(256, 65536), One, Log(1, 16)], false),
    (Kind::OddPrime, 25, [Prime(17, 65536), One, Prime(17, 65536)], false),
];

/// Each kind [`random_problems`] draws for `op`, with its share in percent (they sum to 100).
pub fn mix(op: Op) -> Vec<(Kind, u32)> {
    let pairs = components(op).iter().map(|&(kind, pct, ..)| (kind, pct));
    pairs.collect()
}

/// Each kind [`random_problems_in`] draws for `op` and `forms`, with its share in percent
/// (they sum to 100): [`mix`], except that with [`Forms::All`] gemm's layer calls take
/// [`LAYER_EVERY`] (40%) and the other kinds share the rest in [`mix`]'s proportions.
pub fn mix_in(op: Op, forms: Forms) -> Vec<(Kind, u32)> {
    if !layer_calls(op, forms) {
        return mix(op);
    }
    let (layers, of) = LAYER_EVERY;
    let rest = (of - layers) as u32;
    let scaled = mix(op)
        .into_iter()
        .map(|(k, pct)| (k, pct * rest / of as u32));
    std::iter::once((Kind::Layer, 100 * layers as u32 / of as u32))
        .chain(scaled)
        .collect()
}

/// With [`Forms::All`], gemm problem `i` is a layer call when `i % 5 < 2`: two in every five,
/// so every prefix of a draw holds at least a third (at least 40% from five problems on).
pub const LAYER_EVERY: (usize, usize) = (2, 5);

/// The shares, in percent, of the form tags a [`Forms::All`] problem draws, each on its own:
/// beta != 0, padded leading dimensions, alpha != 1, and a batch (of 2 to 512, log-uniform;
/// never for a layer call, whose tokens make M).
pub const FORM_SHARES: FormShares = FormShares {
    beta: 20,
    padded: 15,
    scaled: 15,
    batch: 15,
};

/// Percent shares of the form tags ([`FORM_SHARES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FormShares {
    /// beta != 0.
    pub beta: u32,
    /// Padded leading dimensions.
    pub padded: u32,
    /// alpha != 1.
    pub scaled: u32,
    /// A batch of more than one product.
    pub batch: u32,
}

/// How many draws in a row a [`Forms::All`] problem rejects before it draws its form again
/// (an exclusion may reject a whole form, e.g. every shape with beta != 0).
pub const FORM_PATIENCE: usize = 1000;

/// The batch counts a [`Forms::All`] problem draws, log-uniform.
pub const BATCH_RANGE: (u64, u64) = (2, 512);

/// Public model widths, for layer calls: `(d, mlp, qkv)` with `d` the hidden size, `mlp` the
/// MLP's inner width and `qkv` the fused Q, K and V projection's width (`(heads + 2 kv heads)
/// x head size`), as each model's published configuration (`config.json`: `hidden_size`,
/// `intermediate_size`, `num_attention_heads`, `num_key_value_heads`) gives them.
#[rustfmt::skip]
pub const MODEL_WIDTHS: [(&str, u64, u64, u64); 10] = [
    ("GPT-2 small", 768, 3072, 2304),          // 12 heads of 64
    ("GPT-2 medium", 1024, 4096, 3072),        // 16 heads of 64
    ("GPT-2 XL", 1600, 6400, 4800),            // 25 heads of 64
    ("Qwen2-1.5B", 1536, 8960, 2048),          // 12 heads, 2 kv heads, of 128
    ("Llama-3.2-1B", 2048, 8192, 3072),        // 32 heads, 8 kv heads, of 64
    ("Phi-2", 2560, 10240, 7680),              // 32 heads of 80
    ("Llama-2-7B", 4096, 11008, 12288),        // 32 heads of 128
    ("Llama-3-8B", 4096, 14336, 6144),         // 32 heads, 8 kv heads, of 128
    ("Mistral-7B", 4096, 14336, 6144),         // 32 heads, 8 kv heads, of 128
    ("Llama-2-13B", 5120, 13824, 15360),       // 40 heads of 128
];

fn layer_calls(op: Op, forms: Forms) -> bool {
    op == Op::Gemm && forms == Forms::All
}

fn components(op: Op) -> &'static [Component] {
    match op {
        Op::Gemm => &GEMM_MIX,
        Op::Gemv => &GEMV_MIX,
    }
}

/// Draws `count` distinct problems for `op` from `seed`, skipping every shape for which
/// `exclude(&shape)` is true (pass the tuned shapes, e.g. `&|s| tuned.contains(s)`, or
/// `&|_| false` to skip none).
///
/// Sizes are log-uniform (the integer nearest `lo * (hi / lo)^u`, `u` uniform in \[0, 1));
/// odd/prime sizes are the smallest prime `>=` such a draw. The mixture ([`mix`]):
/// - gemm: general 40% (M, N, K in \[16, 8192\]); tiny M/N 15% (M or N, a coin flip, in
///   \[1, 16\], the other two in \[64, 8192\]); tiny K 10% (K in \[1, 16\], M, N in
///   \[64, 8192\]); huge K 15% (K in \[4096, 65536\], M, N in \[16, 1024\]); odd/prime 20%
///   (from \[17, 8192\]); at most [`GEMM_MAX_MACS`] multiply-adds.
/// - gemv (`M x K`): general 45% (M, K in \[16, 65536\]); tiny M/N 15% (M in \[1, 16\], K in
///   \[256, 65536\]); tiny K 15% (K in \[1, 16\], M in \[256, 65536\]); odd/prime 25% (from
///   \[17, 65536\]); at most [`GEMV_MAX_ELEMS`] elements in A.
///
/// Each problem first picks its kind by the shares, then draws shapes of that kind until one
/// is within the cap, not already drawn and not excluded, so the shares hold whatever is
/// rejected. The result depends only on `op`, `seed` and `exclude`, on every platform; a
/// larger `count` extends a smaller one (same prefix). Fails with
/// [`WorkloadError::Exhausted`] when [`MAX_REJECTS_IN_A_ROW`] draws in a row are rejected.
/// Every problem is in the plain form: [`random_problems_in`] with [`Forms::Plain`].
pub fn random_problems(
    op: Op,
    count: usize,
    seed: u64,
    exclude: &dyn Fn(&Shape) -> bool,
) -> Result<Vec<Problem>, WorkloadError> {
    random_problems_in(op, Forms::Plain, count, seed, exclude)
}

/// [`random_problems`] with a choice of forms. [`Forms::Plain`] draws exactly what
/// [`random_problems`] draws. [`Forms::All`] also draws each problem's form, after its kind
/// and before its shapes (kept while shapes are redrawn, so the shares hold, unless
/// [`FORM_PATIENCE`] draws in a row are rejected):
/// - gemm: problem `i` is a layer call ([`Kind::Layer`], NT) when `i % 5 < 2`
///   ([`LAYER_EVERY`]): `C = X · Wᵀ` with M tokens in \[1, 4096\] (log-uniform, or with 30%
///   in \[1, 16\]: decoding), and N x K a projection of a public model ([`MODEL_WIDTHS`]:
///   QKV, output, MLP up or down, each a quarter) half the time, else N and K log-uniform in
///   \[512, 16384\]. The other problems draw their kind as plain draws do and a layout among
///   nn, tn and tt, evenly.
/// - gemv: `y = A x` or `y = Aᵀx`, evenly.
///
/// Then, each on its own ([`FORM_SHARES`]): beta != 0 (20%), padded (15%), alpha != 1 (15%)
/// and, except for layer calls, a batch of 2 to 512 (15%, log-uniform). The caps count the
/// whole batch: `batch x M x N x K` at most [`GEMM_MAX_MACS`] and each operand, padding
/// included, at most [`GEMM_MAX_OPERAND_ELEMS`] (gemv: A at most [`GEMV_MAX_ELEMS`]), so a
/// batched problem's products are smaller. Every problem's label parses back to it.
pub fn random_problems_in(
    op: Op,
    forms: Forms,
    count: usize,
    seed: u64,
    exclude: &dyn Fn(&Shape) -> bool,
) -> Result<Vec<Problem>, WorkloadError> {
    let mut rng = Rng::new(seed);
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(count.min(1 << 16));
    while out.len() < count {
        let (layers, of) = LAYER_EVERY;
        let layer = layer_calls(op, forms) && out.len() % of < layers;
        // A layer call draws its own sizes; every other problem picks a component first.
        let component = (!layer).then(|| pick(op, &mut rng));
        let kind = component.map_or(Kind::Layer, |c| c.0);
        let mut form = match forms {
            Forms::Plain => Form::PLAIN,
            Forms::All => draw_form(op, kind, &mut rng),
        };
        let mut rejects = 0;
        let shape = loop {
            let mnk = match component {
                Some(&(_, _, dims, swap_mn)) => {
                    let swap = swap_mn && rng.below(2) == 1;
                    let [m, n, k] = dims.map(|d| d.draw(&mut rng));
                    if swap {
                        (n, m, k)
                    } else {
                        (m, n, k)
                    }
                }
                None => draw_layer(&mut rng),
            };
            let fresh = |s: &Shape| !seen.contains(s) && !exclude(s);
            if let Some(shape) = admit(op, mnk, form).filter(fresh) {
                break shape;
            }
            rejects += 1;
            // A form every shape of which is rejected (excluded by its form) is drawn again.
            if forms == Forms::All && rejects % FORM_PATIENCE == 0 {
                form = draw_form(op, kind, &mut rng);
            }
            if rejects >= MAX_REJECTS_IN_A_ROW {
                let drawn = out.len();
                return Err(WorkloadError::Exhausted {
                    op,
                    wanted: count,
                    drawn,
                });
            }
        };
        seen.insert(shape);
        out.push(Problem { shape, kind });
    }
    Ok(out)
}

/// A [`Forms::All`] problem's form: its layout (NT for a layer call; gemm's others nn, tn or
/// tt; gemv n or t), then the tags of [`FORM_SHARES`] (integer arithmetic: reproducible).
fn draw_form(op: Op, kind: Kind, rng: &mut Rng) -> Form {
    let layout = match (op, kind) {
        (Op::Gemm, Kind::Layer) => Layout::Nt,
        (Op::Gemm, _) => [Layout::Nn, Layout::Tn, Layout::Tt][rng.below(3)],
        (Op::Gemv, _) => [Layout::Nn, Layout::Tn][rng.below(2)],
    };
    let mut coin = |percent: u32| (rng.below(100) as u32) < percent;
    let beta = coin(FORM_SHARES.beta);
    let padded = coin(FORM_SHARES.padded);
    let scaled = coin(FORM_SHARES.scaled);
    let batched = kind != Kind::Layer && coin(FORM_SHARES.batch);
    let (lo, hi) = BATCH_RANGE;
    let batch = if batched { log_uniform(rng, lo, hi) } else { 1 };
    Form {
        layout,
        padded,
        beta,
        scaled,
        batch,
    }
}

/// A layer call's `(M, N, K)`: M tokens, W `N x K` (see [`random_problems_in`]).
fn draw_layer(rng: &mut Rng) -> (u64, u64, u64) {
    let m = if rng.below(100) < 30 {
        log_uniform(rng, 1, 16)
    } else {
        log_uniform(rng, 1, 4096)
    };
    let (n, k) = if rng.below(2) == 0 {
        let (_, d, mlp, qkv) = MODEL_WIDTHS[rng.below(MODEL_WIDTHS.len())];
        [(qkv, d), (d, d), (mlp, d), (d, mlp)][rng.below(4)]
    } else {
        (log_uniform(rng, 512, 16384), log_uniform(rng, 512, 16384))
    };
    (m, n, k)
}

/// Picks a component by its percent share (integer arithmetic: reproducible).
fn pick(op: Op, rng: &mut Rng) -> &'static Component {
    let mut roll = rng.below(100) as u32;
    for c in components(op) {
        if roll < c.1 {
            return c;
        }
        roll -= c.1;
    }
    &components(op)[0] // never reached: the shares sum to 100
}

/// The shape for `(m, n, k)` in `form` if it is valid and within the op's caps, counted over
/// the whole batch (for the plain form: `M x N x K` at most [`GEMM_MAX_MACS`], gemv's
/// `M x K` at most [`GEMV_MAX_ELEMS`]; a plain gemm draw's operands are far below
/// [`GEMM_MAX_OPERAND_ELEMS`]).
fn admit(op: Op, (m, n, k): (u64, u64, u64), form: Form) -> Option<Shape> {
    let batch = form.batch;
    let within = match op {
        Op::Gemm => m.saturating_mul(n).saturating_mul(k).saturating_mul(batch) <= GEMM_MAX_MACS,
        Op::Gemv => m.saturating_mul(k).saturating_mul(batch) <= GEMV_MAX_ELEMS,
    };
    let shape = within.then(|| Shape::new(op, m, n, k).ok()).flatten()?;
    let shape = shape.with_form(form);
    operands_within_caps(op, shape).then_some(shape)
}

/// Whether `shape`'s operands, as the tuner allocates them over the whole batch (padding
/// lengthens the rows), stay within what a drawn problem may hold: each gemm operand at most
/// [`GEMM_MAX_OPERAND_ELEMS`], gemv's A at most [`GEMV_MAX_ELEMS`] (x and y are smaller).
pub fn operands_within_caps(op: Op, shape: Shape) -> bool {
    let cap = match op {
        Op::Gemm => GEMM_MAX_OPERAND_ELEMS,
        Op::Gemv => GEMV_MAX_ELEMS,
    };
    let lens = shape.lens(op);
    let operands = if op == Op::Gemv {
        &lens[..1]
    } else {
        &lens[..]
    };
    operands.iter().all(|&l| l <= cap)
}

/// How many of `shapes` have each layout and each form tag, for reports: e.g. `nn 7, nt 24,
/// tn 6, tt 5; beta 12, pad 9, alpha 8, batched 6; plain 3` (gemv: `n 31, t 29; ...`). A
/// layout no shape has is left out.
pub fn form_counts<'s>(op: Op, shapes: impl IntoIterator<Item = &'s Shape>) -> String {
    let mut layouts = [0usize; 4];
    let [mut beta, mut pad, mut alpha, mut batched, mut plain] = [0usize; 5];
    for s in shapes {
        let f = &s.form;
        layouts[Layout::ALL.iter().position(|&l| l == f.layout).unwrap_or(0)] += 1;
        beta += usize::from(f.beta);
        pad += usize::from(f.padded);
        alpha += usize::from(f.scaled);
        batched += usize::from(f.batch > 1);
        plain += usize::from(f.is_plain());
    }
    let layouts: Vec<String> = Layout::ALL
        .iter()
        .zip(layouts)
        .filter(|&(_, n)| n > 0)
        .map(|(l, n)| format!("{} {n}", l.name(op)))
        .collect();
    format!(
        "{}; beta {beta}, pad {pad}, alpha {alpha}, batched {batched}; plain {plain}",
        layouts.join(", ")
    )
}

/// The shapes of a suite file (the format of `configs/suites/*.toml`, read by
/// [`Suite::load`]) as problems of kind [`Kind::Listed`], in file order without duplicates.
pub fn from_suite(path: &Path) -> Result<(Op, Vec<Problem>), SuiteError> {
    let suite = Suite::load(path)?;
    let kind = Kind::Listed;
    let problems = suite.shapes.iter().map(|&shape| Problem { shape, kind });
    Ok((suite.op, problems.collect()))
}

/// The integer nearest `lo * (hi / lo)^u`, `u` uniform in \[0, 1) on a 2^-32 grid, clamped to
/// `[lo, hi]` (`1 <= lo <= hi`). The power is a product of repeated square roots of
/// `hi / lo`, one per set bit of `u`: only correctly rounded IEEE-754 operations.
fn log_uniform(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    let bits = rng.next_u64() >> 32;
    let mut root = hi as f64 / lo as f64;
    let mut factor = 1.0;
    for i in (0..32).rev() {
        root = root.sqrt();
        if bits >> i & 1 == 1 {
            factor *= root;
        }
    }
    ((lo as f64 * factor).round() as u64).clamp(lo, hi)
}

/// The smallest prime `>= n`.
fn next_prime(n: u64) -> u64 {
    (n.max(2)..).find(|&p| is_prime(p)).unwrap_or(n)
}

/// Trial division (the sizes here are at most a few times 10^4).
fn is_prime(n: u64) -> bool {
    n >= 2
        && (2..)
            .take_while(|d| d * d <= n)
            .all(|d| !n.is_multiple_of(d))
}

/// Order statistics of per-problem values (speedups, efficiencies, regrets), named neutrally:
/// for "higher is better" values (speedup over cuBLAS) the bad tail is `min`/`p10`; for "lower
/// is better" values (regret as time / best time) it is `p90`/`max`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Summary {
    /// How many values.
    pub count: usize,
    /// Geometric mean.
    pub geomean: f64,
    /// Smallest value.
    pub min: f64,
    /// 10th percentile (nearest rank: the sorted values' `ceil(0.10 * count)`-th, from 1).
    pub p10: f64,
    /// Median (nearest rank `ceil(0.50 * count)`: the lower middle for an even count).
    pub median: f64,
    /// 90th percentile (nearest rank `ceil(0.90 * count)`).
    pub p90: f64,
    /// Largest value.
    pub max: f64,
    /// Fraction of the values `>= 1.0` (parity or better for a speedup ratio).
    pub share_at_least_one: f64,
}

impl Summary {
    /// The summary of `values`, or `None` when there are none or when any value is not a
    /// finite number above 0 (NaN, infinite, zero, negative): a geometric mean needs
    /// positive values, and a bad value means a measurement went wrong, which a summary
    /// must not hide. Pass a regret as time / best time (`>= 1`), not as the excess.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || !values.iter().all(|v| v.is_finite() && *v > 0.0) {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let at = |percent: u128| {
            // ceil(percent * n / 100) in integers: 0.1 * 30 is not 3 in floating point.
            let rank = (percent * n as u128).div_ceil(100).clamp(1, n as u128);
            sorted[rank as usize - 1]
        };
        let mean_ln = sorted.iter().map(|v| v.ln()).sum::<f64>() / n as f64;
        let at_least_one = sorted.iter().filter(|&&v| v >= 1.0).count();
        Some(Summary {
            count: n,
            geomean: mean_ln.exp(),
            min: sorted[0],
            p10: at(10),
            median: at(50),
            p90: at(90),
            max: sorted[n - 1],
            share_at_least_one: at_least_one as f64 / n as f64,
        })
    }
}

#[cfg(test)]
mod tests;
