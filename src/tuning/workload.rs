//! Workloads for `autotune evaluate`: shapes nobody tuned, to measure how well a tuning
//! database generalises. [`random_problems`] draws a seeded, reproducible mixture of realistic
//! shape kinds ([`mix`]); [`from_suite`] reads a fixed list in the suite format;
//! [`Summary`] condenses per-shape ratios (speedups, efficiencies, regrets) into order
//! statistics. Pure: no GPU.
//!
//! Reproducible on every platform: kinds are picked with integer arithmetic and log-uniform
//! sizes are computed with IEEE-754 multiplications and square roots only (correctly rounded
//! everywhere), never with `ln`/`exp`, whose last bit depends on the platform's libm.

use crate::problem::{Op, Shape};
use crate::search::Rng;
use crate::tuning::suite::{Suite, SuiteError};
use std::collections::HashSet;
use std::fmt;
use std::path::Path;

/// Largest `M * N * K` of a drawn gemm shape (2^36 multiply-adds: about 2 ms or less on an
/// H100). Larger draws are redrawn.
pub const GEMM_MAX_MACS: u64 = 1 << 36;

/// Largest `M * K` of a drawn gemv shape (2^28 elements: 1 GiB of `f32` in A). Larger draws
/// are redrawn.
pub const GEMV_MAX_ELEMS: u64 = 1 << 28;

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
    /// Read from a shape list ([`from_suite`]), not drawn.
    Listed,
}

impl Kind {
    /// Every kind, in a stable order ([`Kind::Listed`] last).
    #[rustfmt::skip]
    pub const ALL: [Kind; 6] =
        [Kind::General, Kind::TinyMn, Kind::TinyK, Kind::HugeK, Kind::OddPrime, Kind::Listed];

    /// The short name used in reports: "general", "tiny M/N", "tiny K", "huge K",
    /// "odd/prime", "listed".
    pub fn name(self) -> &'static str {
        match self {
            Kind::General => "general",
            Kind::TinyMn => "tiny M/N",
            Kind::TinyK => "tiny K",
            Kind::HugeK => "huge K",
            Kind::OddPrime => "odd/prime",
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
pub fn random_problems(
    op: Op,
    count: usize,
    seed: u64,
    exclude: &dyn Fn(&Shape) -> bool,
) -> Result<Vec<Problem>, WorkloadError> {
    let mut rng = Rng::new(seed);
    let mut seen = HashSet::new();
    let mut out = Vec::with_capacity(count.min(1 << 16));
    while out.len() < count {
        let &(kind, _, dims, swap_mn) = pick(op, &mut rng);
        let mut rejects = 0;
        let shape = loop {
            let swap = swap_mn && rng.below(2) == 1;
            let [m, n, k] = dims.map(|d| d.draw(&mut rng));
            let mnk = if swap { (n, m, k) } else { (m, n, k) };
            let fresh = |s: &Shape| !seen.contains(s) && !exclude(s);
            if let Some(shape) = admit(op, mnk).filter(fresh) {
                break shape;
            }
            rejects += 1;
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

/// The shape for `(m, n, k)` if it is within the op's cap and valid.
fn admit(op: Op, (m, n, k): (u64, u64, u64)) -> Option<Shape> {
    let within = match op {
        Op::Gemm => m.saturating_mul(n).saturating_mul(k) <= GEMM_MAX_MACS,
        Op::Gemv => m.saturating_mul(k) <= GEMV_MAX_ELEMS,
    };
    within.then(|| Shape::new(op, m, n, k).ok()).flatten()
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
mod tests {
    use super::*;

    const NONE: &dyn Fn(&Shape) -> bool = &|_| false;

    /// Independent primality check.
    fn prime(n: u64) -> bool {
        n >= 2 && (2..n).all(|d| !n.is_multiple_of(d))
    }

    /// Whether `s` lies within the bounds of `kind` for `op` (and the op's cap).
    #[rustfmt::skip]
    fn within(op: Op, kind: Kind, s: &Shape) -> bool {
        let r = |v: u64, lo: u64, hi: u64| (lo..=hi).contains(&v);
        let p = |v: u64, hi: u64| r(v, 17, hi) && prime(v) && !v.is_multiple_of(2);
        let (m, n, k) = (s.m, s.n, s.k);
        match (op, kind) {
            (Op::Gemm, _) if m * n * k > GEMM_MAX_MACS => false,
            (Op::Gemv, _) if n != 1 || m * k > GEMV_MAX_ELEMS => false,
            (Op::Gemm, Kind::General) => r(m, 16, 8192) && r(n, 16, 8192) && r(k, 16, 8192),
            (Op::Gemm, Kind::TinyMn) => r(k, 64, 8192)
                && (r(m, 1, 16) && r(n, 64, 8192) || r(n, 1, 16) && r(m, 64, 8192)),
            (Op::Gemm, Kind::TinyK) => r(k, 1, 16) && r(m, 64, 8192) && r(n, 64, 8192),
            (Op::Gemm, Kind::HugeK) => r(k, 4096, 65536) && r(m, 16, 1024) && r(n, 16, 1024),
            (Op::Gemm, Kind::OddPrime) => p(m, 8209) && p(n, 8209) && p(k, 8209),
            (Op::Gemv, Kind::General) => r(m, 16, 65536) && r(k, 16, 65536),
            (Op::Gemv, Kind::TinyMn) => r(m, 1, 16) && r(k, 256, 65536),
            (Op::Gemv, Kind::TinyK) => r(k, 1, 16) && r(m, 256, 65536),
            (Op::Gemv, Kind::OddPrime) => p(m, 65537) && p(k, 65537),
            _ => false,
        }
    }

    #[test]
    fn same_seed_same_problems_and_longer_draws_extend_shorter_ones() {
        for op in Op::ALL {
            let a = random_problems(op, 200, 7, NONE).unwrap();
            assert_eq!(a, random_problems(op, 200, 7, NONE).unwrap());
            assert_eq!(a[..50], random_problems(op, 50, 7, NONE).unwrap()[..]);
            assert_ne!(a, random_problems(op, 200, 8, NONE).unwrap());
            assert!(random_problems(op, 0, 7, NONE).unwrap().is_empty());
        }
    }

    #[test]
    fn first_draws_and_kind_names_are_pinned() {
        // Catches any change to the generator or the mixture, and platform differences
        // (checked against the same draws computed with ln/exp in Python).
        let labels = |op| -> Vec<String> {
            let problems = random_problems(op, 3, 1, NONE).unwrap();
            let label = |p: &Problem| format!("{} {}", p.kind, p.shape.label(op));
            problems.iter().map(label).collect()
        };
        let gemm = [
            "tiny K 2386x7117x3",
            "tiny M/N 810x11x256",
            "huge K 86x198x14460",
        ];
        assert_eq!(labels(Op::Gemm), gemm);
        let gemv = ["tiny M/N 8x55802", "general 644x9119", "odd/prime 1277x181"];
        assert_eq!(labels(Op::Gemv), gemv);
        let names = "general, tiny M/N, tiny K, huge K, odd/prime, listed";
        assert_eq!(Kind::ALL.map(Kind::name).join(", "), names);
        assert_eq!(Kind::TinyMn.to_string(), "tiny M/N");
    }

    #[test]
    fn kinds_keep_their_bounds_the_caps_and_their_shares() {
        for op in Op::ALL {
            assert_eq!(mix(op).iter().map(|(_, p)| p).sum::<u32>(), 100);
            let problems = random_problems(op, 5000, 11, NONE).unwrap();
            for Problem { shape: s, kind } in &problems {
                // Also checks that every odd/prime size is an odd prime.
                assert!(within(op, *kind, s), "{op} {kind} {s:?}");
                assert!(Shape::new(op, s.m, s.n, s.k).is_ok());
            }
            let of_kind = |kind| problems.iter().filter(move |p| p.kind == kind);
            for (kind, percent) in mix(op) {
                let share = of_kind(kind).count() as f64 / 50.0;
                assert!((share - f64::from(percent)).abs() < 3.0, "{kind}: {share}");
            }
            // Log-uniform: about half of general's M below the geometric middle of its range
            // (16..8192 -> 362; 16..65536 -> 1024), a little more as the cap trims the top.
            let mid = if op == Op::Gemm { 362 } else { 1024 };
            let general = of_kind(Kind::General).count() as f64;
            let low = of_kind(Kind::General).filter(|p| p.shape.m < mid).count() as f64;
            assert!((0.45..0.62).contains(&(low / general)), "{low}/{general}");
        }
        // Both tiny-M and tiny-N gemm shapes occur.
        let problems = random_problems(Op::Gemm, 1000, 5, NONE).unwrap();
        let tiny: Vec<_> = problems.iter().filter(|p| p.kind == Kind::TinyMn).collect();
        let tiny_m = tiny.iter().filter(|p| p.shape.m <= 16).count();
        assert!(tiny_m > 40 && tiny.len() - tiny_m > 40, "{tiny_m}");
    }

    #[test]
    fn no_duplicates_and_exclusion_is_honoured() {
        for op in Op::ALL {
            let problems = random_problems(op, 3000, 2, NONE).unwrap();
            let distinct: HashSet<_> = problems.iter().map(|p| p.shape).collect();
            assert_eq!(distinct.len(), problems.len());
            // Exclude the first 100 shapes of that draw and every shape with an even M.
            let tuned: HashSet<Shape> = problems[..100].iter().map(|p| p.shape).collect();
            let exclude = |s: &Shape| tuned.contains(s) || s.m.is_multiple_of(2);
            let other = random_problems(op, 500, 2, &exclude).unwrap();
            assert_eq!(other.len(), 500);
            assert!(other.iter().all(|p| !exclude(&p.shape)));
        }
        // Excluding everything fails with a reason instead of looping forever.
        let e = random_problems(Op::Gemv, 3, 1, &|_| true).unwrap_err();
        let WorkloadError::Exhausted { op, wanted, drawn } = e.clone();
        assert_eq!((op, wanted, drawn), (Op::Gemv, 3, 0));
        assert!(e.to_string().contains("0 of 3 distinct gemv"), "{e}");
    }

    #[test]
    fn prime_and_log_uniform_helpers_are_exact() {
        let primes = [0, 1, 2, 17, 18, 8192, 65536].map(next_prime);
        assert_eq!(primes, [2, 2, 2, 17, 19, 8209, 65537]);
        // log_uniform reaches both ends and stays inside.
        let mut rng = Rng::new(4);
        let draws: Vec<u64> = (0..4000).map(|_| log_uniform(&mut rng, 1, 16)).collect();
        assert!(draws.iter().all(|v| (1..=16).contains(v)));
        assert!(draws.contains(&1) && draws.contains(&16));
    }

    #[test]
    fn suite_files_become_listed_problems() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        let text = "op = \"gemv\"\nshapes = [\"4x8\", \"16x1x2\", \"4x8\"]";
        std::fs::write(&path, text).unwrap();
        let (op, problems) = from_suite(&path).unwrap();
        assert_eq!(op, Op::Gemv);
        let want = [Shape::mnk(4, 1, 8), Shape::mnk(16, 1, 2)];
        assert_eq!(problems.iter().map(|p| p.shape).collect::<Vec<_>>(), want);
        assert!(problems.iter().all(|p| p.kind == Kind::Listed));
        let missing = from_suite(&dir.path().join("missing.toml"));
        assert!(matches!(missing, Err(SuiteError::Io { .. })));
    }

    #[test]
    fn summary_of_a_known_list_and_refusals() {
        let s = Summary::of(&[4.0, 0.5, 2.0, 1.0]).unwrap();
        assert_eq!(s.count, 4);
        assert!((s.geomean - 2f64.sqrt()).abs() < 1e-12, "{}", s.geomean);
        // Ranks ceil(0.4) = 1, ceil(2) = 2, ceil(3.6) = 4.
        let stats = (s.min, s.p10, s.median, s.p90, s.max);
        assert_eq!(stats, (0.5, 0.5, 1.0, 4.0, 4.0));
        assert_eq!(s.share_at_least_one, 0.75);
        let one = Summary::of(&[3.0]).unwrap();
        let stats = (one.min, one.p10, one.median, one.p90, one.max);
        assert_eq!(stats, (3.0, 3.0, 3.0, 3.0, 3.0));
        assert!((one.geomean - 3.0).abs() < 1e-15);
        assert_eq!(Summary::of(&[]), None);
        for bad in [f64::NAN, 0.0, -1.0, f64::INFINITY] {
            assert_eq!(Summary::of(&[1.0, bad, 2.0]), None, "{bad}");
        }
    }

    #[test]
    fn summary_percentiles_are_nearest_rank() {
        let values = |n: u32| (1..=n).rev().map(f64::from).collect::<Vec<_>>();
        let ranks = |n| Summary::of(&values(n)).map(|s| (s.p10, s.median, s.p90));
        assert_eq!(ranks(10), Some((1.0, 5.0, 9.0)));
        assert_eq!(ranks(20), Some((2.0, 10.0, 18.0)));
        // 0.1 * 30 is 3.0000000000000004 in floating point: the rank must still be 3.
        assert_eq!(ranks(30), Some((3.0, 15.0, 27.0)));
        assert_eq!(ranks(11), Some((2.0, 6.0, 10.0)));
        let share = Summary::of(&[0.5, 1.0, 0.9, 2.0, 0.1]).map(|s| s.share_at_least_one);
        assert_eq!(share, Some(0.4));
    }
}
