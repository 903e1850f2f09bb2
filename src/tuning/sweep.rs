//! The plan of the randomized correctness sweep (the GPU tests run it): for every family of an
//! op a fixed set of configs (the ends of its space and random valid ones), compiled once each,
//! and seeded random problems on which each family runs a few of them, chosen among those its
//! space allows on that shape, least used first, so that every config runs many times.
//!
//! Sizes favour what breaks kernels: tiny dimensions, odd sizes and primes, then sizes up to a
//! few thousand; gemv adds a few very long rows. Pure: the GPU side is the caller's.

use crate::family::catalog::{Catalog, Family};
use crate::family::space::{Config, Limits, SpaceError};
use crate::problem::{Form, Op, Shape};
use crate::search::Rng;

/// How big a sweep is: `quick` for everyday runs, `full` for release checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// About 100 problems in all.
    Quick,
    /// At least 1,000 problems in all.
    Full,
}

impl Mode {
    /// The mode an environment variable's value names: `quick` (also empty or unset), `full`.
    pub fn parse(value: Option<&str>) -> Result<Mode, String> {
        match value.map(str::trim) {
            None | Some("") | Some("quick") => Ok(Mode::Quick),
            Some("full") => Ok(Mode::Full),
            Some(other) => Err(format!("'{other}' is not a sweep mode: quick or full")),
        }
    }

    /// Problems per op.
    pub fn problems_per_op(&self) -> usize {
        match self {
            Mode::Quick => 50,
            Mode::Full => 500,
        }
    }
}

/// The first and the last config of `family`'s space that its constraints and `limits` allow
/// on `shape` (one when they are the same; none when the space has no valid config there).
pub fn space_ends(
    family: &Family,
    shape: Shape,
    limits: &Limits,
) -> Result<Vec<Config>, SpaceError> {
    Ok(ends_of(&family.space.prune(shape, limits)?.valid))
}

/// The first and the last of `valid` (one when they are the same; none when it is empty).
fn ends_of(valid: &[Config]) -> Vec<Config> {
    let mut out: Vec<Config> = valid.first().into_iter().cloned().collect();
    if let Some(last) = valid.last() {
        if !out.contains(last) {
            out.push(last.clone());
        }
    }
    out
}

/// The ends of `family`'s space ([`space_ends`]) on the first reference shape where it offers
/// configs: a family offered only for few rows or columns still has ends.
pub fn family_ends(family: &Family, limits: &Limits) -> Result<Vec<Config>, SpaceError> {
    for shape in reference_shapes(family.space.op) {
        let ends = space_ends(family, shape, limits)?;
        if !ends.is_empty() {
            return Ok(ends);
        }
    }
    Ok(Vec::new())
}

/// Shapes whose valid configs make up the pool a family's sweep configs are drawn from: short,
/// square and long reductions (some constraints depend on K), few rows or columns, a short K,
/// the few-token layer call.
pub fn reference_shapes(op: Op) -> Vec<Shape> {
    let s = |m, n, k| Shape::mnk(m, n, k);
    match op {
        Op::Gemm => vec![
            s(1024, 1024, 1024),
            s(4096, 4096, 128),
            s(128, 128, 8192),
            // The GEMV-shaped families are offered only for few rows or columns.
            s(1, 4096, 4096),
            s(8, 2048, 2048),
            s(2048, 8, 2048),
            // Outer products and rank-k updates: the short-K families.
            s(2048, 2048, 4),
            // Families offered only beyond the plain form: the layer call X W^T of few tokens.
            Shape::parse(Op::Gemm, "8x2048x2048:nt").unwrap_or(s(8, 2048, 2048)),
        ],
        Op::Gemv => vec![s(4096, 1, 4096), s(65536, 1, 64), s(64, 1, 65536)],
    }
}

/// `family`'s valid configs on each of its op's [`reference_shapes`], pruned once: the
/// sweep's configs and the forms where each is offered are both read from them.
fn reference_valid(
    family: &Family,
    limits: &Limits,
) -> Result<Vec<(Shape, Vec<Config>)>, SpaceError> {
    reference_shapes(family.space.op)
        .into_iter()
        .map(|shape| Ok((shape, family.space.prune(shape, limits)?.valid)))
        .collect()
}

/// The configs the sweep runs for `family`: the ends of its space on each reference shape, then
/// `random` more drawn from the configs valid on any of them. Sorted, without repeats.
pub fn family_configs(
    family: &Family,
    limits: &Limits,
    random: usize,
    rng: &mut Rng,
) -> Result<Vec<Config>, SpaceError> {
    Ok(configs_from(&reference_valid(family, limits)?, random, rng))
}

/// [`family_configs`] from the valid configs of each reference shape ([`reference_valid`]).
fn configs_from(reference: &[(Shape, Vec<Config>)], random: usize, rng: &mut Rng) -> Vec<Config> {
    let mut out: Vec<Config> = Vec::new();
    let mut pool: Vec<Config> = Vec::new();
    for (_, valid) in reference {
        for c in ends_of(valid) {
            if !out.contains(&c) {
                out.push(c);
            }
        }
        for c in valid {
            if !pool.contains(c) {
                pool.push(c.clone());
            }
        }
    }
    pool.retain(|c| !out.contains(c));
    rng.shuffle(&mut pool);
    out.extend(pool.into_iter().take(random));
    out.sort();
    out
}

/// Primes up to a few thousand, the sweep's favourite awkward sizes.
const PRIMES: &[u64] = &[
    2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 61, 67, 97, 127, 131, 257, 263, 509, 521, 761,
    1021, 1031, 1499, 2039, 2053, 2711, 3067,
];

/// One dimension: tiny (1-8) a quarter of the time, a prime a fifth, else mostly odd sizes up
/// to `max`, and now and then a power of two or one off it.
fn dim(rng: &mut Rng, max: u64) -> u64 {
    let odd = |x: u64| (x | 1).min(max);
    let r = rng.unit();
    let v = if r < 0.25 {
        1 + rng.below(8) as u64
    } else if r < 0.45 {
        PRIMES[rng.below(PRIMES.len())]
    } else if r < 0.70 {
        odd(9 + rng.below(503) as u64)
    } else if r < 0.90 {
        odd(513 + rng.below(max.saturating_sub(512).max(1) as usize) as u64)
    } else {
        let p = 1u64 << (1 + rng.below(12));
        [p, p + 1, p - 1][rng.below(3)]
    };
    v.clamp(1, max)
}

/// A random problem of `op`: dimensions from 1 to about 3,000 (gemm), and now and then a gemv
/// of up to 256 rows up to about 100,000 long.
pub fn draw_shape(op: Op, rng: &mut Rng) -> Shape {
    match op {
        Op::Gemm => Shape::mnk(dim(rng, 3072), dim(rng, 3072), dim(rng, 3072)),
        Op::Gemv => {
            // Long rows come with few of them: the inputs stay small enough to draw quickly.
            let long = rng.below(20) == 0;
            Shape::mnk(
                dim(rng, if long { 256 } else { 4096 }),
                1,
                if long {
                    odd_above(rng, 20_000, 100_001)
                } else {
                    dim(rng, 4096)
                },
            )
        }
    }
}

fn odd_above(rng: &mut Rng, lo: u64, hi: u64) -> u64 {
    (lo + rng.below((hi - lo) as usize) as u64) | 1
}

/// One family's part of a sweep.
#[derive(Debug, Clone)]
pub struct FamilyPlan {
    /// The family.
    pub family: String,
    /// Its configs, each compiled once.
    pub configs: Vec<Config>,
}

/// A sweep of one op: the configs per family and, per problem, which of them run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The op.
    pub op: Op,
    /// One per family of the op.
    pub families: Vec<FamilyPlan>,
    /// Each problem and the configs run on it: `(family index, config index)`.
    pub problems: Vec<(Shape, Vec<(usize, usize)>)>,
}

impl Plan {
    /// `(family index, config index)` pairs run in all.
    pub fn runs(&self) -> usize {
        self.problems.iter().map(|(_, r)| r.len()).sum()
    }

    /// The config a run names.
    pub fn config(&self, family: usize, config: usize) -> &Config {
        &self.families[family].configs[config]
    }
}

/// Plans a sweep of `op` over every family of `catalog`: `random_configs` random configs per
/// family besides its space ends, `problems` random problems, on each `per_family` configs of
/// each family that its space allows there and one more that it does not (or, where it allows
/// fewer, more of those): at most `per_family + 1`; the one more is a config the space offers on
/// the problem's form elsewhere (a config offered only on another form never runs on this one).
/// The same `seed` plans the same sweep.
pub fn plan(
    catalog: &Catalog,
    op: Op,
    limits: &Limits,
    problems: usize,
    random_configs: usize,
    per_family: usize,
    seed: u64,
) -> Result<Plan, SpaceError> {
    let mut rng = Rng::new(seed);
    let families: Vec<&Family> = catalog.for_op(op).collect();
    let mut plans = Vec::new();
    // Per family and config, the forms of the reference shapes where the space offers it: a
    // config offered on none of a form (a form-only constraint, which the template may enforce
    // with #error) is never launched on that form, by a product or by the sweep. Read from the
    // same pruning as the configs: each reference shape is pruned once per family.
    let mut offered_forms: Vec<Vec<Vec<Form>>> = Vec::new();
    for f in &families {
        let reference = reference_valid(f, limits)?;
        let configs = configs_from(&reference, random_configs, &mut rng);
        let mut per = vec![Vec::new(); configs.len()];
        for (r, valid) in &reference {
            for (ci, c) in configs.iter().enumerate() {
                if valid.contains(c) && !per[ci].contains(&r.form) {
                    per[ci].push(r.form);
                }
            }
        }
        offered_forms.push(per);
        plans.push(FamilyPlan {
            family: f.name().to_string(),
            configs,
        });
    }
    let mut used: Vec<Vec<usize>> = plans.iter().map(|p| vec![0; p.configs.len()]).collect();
    let mut out = Vec::with_capacity(problems);
    for _ in 0..problems {
        let shape = draw_shape(op, &mut rng);
        let mut runs = Vec::new();
        for (fi, (f, p)) in families.iter().zip(&plans).enumerate() {
            // `per_family` of the configs the space allows here, least used first; then one
            // of any config with a launch here: constraints that depend on the shape prune
            // for speed, and every config must be correct on every shape (a product launches
            // a tuned config on shapes nobody tuned).
            let mut allowed: Vec<usize> = Vec::new();
            let mut launchable: Vec<usize> = Vec::new();
            for (ci, c) in p.configs.iter().enumerate() {
                if f.space.reject_reason(c, shape, limits)?.is_none() {
                    allowed.push(ci);
                } else if offered_forms[fi][ci].contains(&shape.form)
                    && f.space.launch(c, shape, limits).is_ok()
                {
                    launchable.push(ci);
                }
            }
            let mut pick = |mut from: Vec<usize>, n: usize, runs: &mut Vec<(usize, usize)>| {
                rng.shuffle(&mut from);
                from.sort_by_key(|&ci| used[fi][ci]);
                for &ci in from.iter().take(n) {
                    used[fi][ci] += 1;
                    runs.push((fi, ci));
                }
            };
            let n_allowed = allowed.len().min(per_family);
            pick(allowed, per_family, &mut runs);
            pick(launchable, per_family + 1 - n_allowed, &mut runs);
        }
        out.push((shape, runs));
    }
    Ok(Plan {
        op,
        families: plans,
        problems: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits::for_arch(90).unwrap()
    }

    /// Every built-in family has space ends on some reference shape, also those offered only
    /// for few rows or columns (verify --space-ends and the sanitizer runs rely on it).
    #[test]
    fn every_family_has_space_ends() {
        let catalog = Catalog::builtin().unwrap();
        for f in catalog.families() {
            let ends = family_ends(f, &limits()).unwrap();
            assert!(!ends.is_empty(), "{} has no space ends", f.name());
        }
    }

    #[test]
    fn modes() {
        assert_eq!(Mode::parse(None).unwrap(), Mode::Quick);
        assert_eq!(Mode::parse(Some("")).unwrap(), Mode::Quick);
        assert_eq!(Mode::parse(Some("full")).unwrap(), Mode::Full);
        assert!(Mode::parse(Some("huge")).is_err());
        assert!(Mode::Full.problems_per_op() * 2 >= 1000);
        assert!(Mode::Quick.problems_per_op() * 2 >= 100);
    }

    #[test]
    fn shapes_favour_tiny_odd_and_prime_sizes() {
        let mut rng = Rng::new(7);
        let dims: Vec<u64> = (0..3000)
            .flat_map(|_| {
                let s = draw_shape(Op::Gemm, &mut rng);
                [s.m, s.n, s.k]
            })
            .collect();
        assert!(dims.iter().all(|&d| (1..=3072).contains(&d)));
        let share = |f: &dyn Fn(u64) -> bool| {
            dims.iter().filter(|&&d| f(d)).count() as f64 / dims.len() as f64
        };
        assert!(share(&|d| d <= 8) > 0.2, "tiny");
        assert!(share(&|d| d % 2 == 1) > 0.7, "odd");
        assert!(share(&|d| PRIMES.contains(&d)) > 0.15, "prime");
        assert!(share(&|d| d > 1024) > 0.05, "large");
        let mut rng = Rng::new(7);
        let gemv: Vec<Shape> = (0..2000).map(|_| draw_shape(Op::Gemv, &mut rng)).collect();
        assert!(gemv.iter().all(|s| s.n == 1 && s.m >= 1 && s.k >= 1));
        assert!(gemv.iter().any(|s| s.k > 20_000));
    }

    #[test]
    fn every_family_gets_its_space_ends_and_every_config_runs() {
        let catalog = Catalog::builtin().unwrap();
        for op in [Op::Gemm, Op::Gemv] {
            let p = plan(&catalog, op, &limits(), 200, 4, 2, 1).unwrap();
            assert_eq!(p.families.len(), catalog.for_op(op).count());
            let mut counts: Vec<Vec<usize>> = p
                .families
                .iter()
                .map(|f| vec![0; f.configs.len()])
                .collect();
            for (_, runs) in &p.problems {
                for &(f, c) in runs {
                    counts[f][c] += 1;
                }
            }
            for (f, fam) in p.families.iter().zip(catalog.for_op(op)) {
                assert!(f.configs.len() >= 2, "{}: {:?}", f.family, f.configs);
                let ends = space_ends(fam, reference_shapes(op)[0], &limits()).unwrap();
                for e in ends {
                    assert!(f.configs.contains(&e), "{}", f.family);
                }
            }
            // Every config runs, but those offered only beyond the plain form the sweep draws
            // (the layer-call family on NT), which run on no plain problem.
            let plain: Vec<Shape> = reference_shapes(op)
                .into_iter()
                .filter(|s| s.form.is_plain())
                .collect();
            for ((f, c), fam) in p.families.iter().zip(&counts).zip(catalog.for_op(op)) {
                for (config, &n) in f.configs.iter().zip(c) {
                    let on_plain = plain.iter().any(|&s| {
                        fam.space
                            .prune(s, &limits())
                            .unwrap()
                            .valid
                            .contains(config)
                    });
                    assert_eq!(n > 0, on_plain, "{}: {config:?} ran {n} times", f.family);
                }
            }
            assert_eq!(p.problems.len(), 200);
            assert!(p.runs() >= 200 * p.families.len(), "{}", p.runs());
            // The same seed plans the same sweep.
            let again = plan(&catalog, op, &limits(), 200, 4, 2, 1).unwrap();
            assert_eq!(again.problems, p.problems);
            // The plan's configs are `family_configs`' (the first family draws first).
            let first = catalog.for_op(op).next().unwrap();
            let alone = family_configs(first, &limits(), 4, &mut Rng::new(1)).unwrap();
            assert_eq!(p.families[0].configs, alone);
        }
    }
}
