//! Search strategies: which candidate to evaluate next, given what was measured so far.
//! Pure: the evaluation is a closure, so strategies are tested (and replayed from recorded
//! journals, see [`crate::tuning::replay`]) without a GPU.
//!
//! A strategy sees the whole candidate list ([`Candidate`]: family, parameters and an optional
//! model estimate) and every [`Trial`] so far, and proposes the next index. [`run`] drives it
//! within a budget and a stop condition (interrupt, time limit). Every strategy here proposes
//! each index at most once, covers the whole space if left to run, and is reproducible for a
//! seed:
//!
//! | name | what it does |
//! |---|---|
//! | `exhaustive` | every candidate in list order (a tune lists them as the model ranks them: each family's best estimate first) |
//! | `random` | every candidate in a seeded random order |
//! | `annealing` | simulated annealing over one-parameter moves within a family |
//! | `genetic` | a steady elitist genetic algorithm (tournament, crossover within a family, mutation) |
//! | `model-guided` | best model estimate first, interleaved with the neighbours of the best measured |
//! | `auto` | `exhaustive` for spaces of at most [`AUTO_EXHAUSTIVE_MAX`] candidates, else `model-guided` |

mod annealing;
mod exhaustive;
mod genetic;
mod geometry;
mod model_guided;
mod random;
mod rng;

pub use annealing::Annealing;
pub use exhaustive::Exhaustive;
pub use genetic::Genetic;
pub use model_guided::{family_leaders_first, model_order, ModelGuided};
pub use random::Random;
pub use rng::Rng;

use std::collections::BTreeMap;

/// One evaluated candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trial {
    /// Index into the candidate list.
    pub index: usize,
    /// Median time in milliseconds, or `None` when the candidate failed.
    pub time_ms: Option<f64>,
}

/// What a strategy knows of one candidate before it is evaluated.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The kernel family.
    pub family: String,
    /// Its parameter values, by name. Neighbours differ in one of them.
    pub params: BTreeMap<String, i64>,
    /// The analytic model's estimate of its time in milliseconds ([`crate::plan::model`]), when
    /// one could be made. Only its order matters.
    pub estimate_ms: Option<f64>,
}

impl Candidate {
    /// A candidate without a model estimate.
    pub fn new(family: impl Into<String>, params: BTreeMap<String, i64>) -> Candidate {
        Candidate {
            family: family.into(),
            params,
            estimate_ms: None,
        }
    }
}

/// Chooses the next candidate to evaluate.
pub trait Strategy {
    /// A short name for reports (after the first [`Strategy::next`], `auto` reports the
    /// strategy it picked).
    fn name(&self) -> &'static str;
    /// The next index into `space` to evaluate, or `None` when the strategy is done.
    /// `history` holds every trial so far, in order, the resumed ones first; the same `space`
    /// is passed on every call. Must never return an index that is in `history`.
    fn next(&mut self, space: &[Candidate], history: &[Trial]) -> Option<usize>;
    /// The list this search will see is one part of a space of `whole` candidates (a shape's
    /// candidates split across identical GPUs): a strategy that chooses by the space's size
    /// chooses by the whole's, as one device searching all of it would. Called before the
    /// first [`Strategy::next`]; by default nothing changes.
    fn part_of(&mut self, _whole: usize) {}
}

/// Why a strategy could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// The name is not one of [`STRATEGIES`].
    #[error("unknown search strategy '{name}': known strategies are {}", STRATEGIES.join(", "))]
    UnknownStrategy {
        /// What was asked for.
        name: String,
    },
}

/// Every name [`by_name`] accepts (`model` is also accepted for `model-guided`).
pub const STRATEGIES: [&str; 6] = [
    "exhaustive",
    "random",
    "annealing",
    "genetic",
    "model-guided",
    "auto",
];

/// `auto` searches spaces up to this size exhaustively and larger ones model-guided.
pub const AUTO_EXHAUSTIVE_MAX: usize = 1000;

/// The strategy called `name` (one of [`STRATEGIES`]), seeded with `seed` where it draws
/// random numbers.
pub fn by_name(name: &str, seed: u64) -> Result<Box<dyn Strategy + Send>, SearchError> {
    Ok(match name.trim().to_ascii_lowercase().as_str() {
        "exhaustive" => Box::new(Exhaustive::default()),
        "random" => Box::new(Random::new(seed)),
        "annealing" => Box::new(Annealing::new(seed)),
        "genetic" => Box::new(Genetic::new(seed)),
        "model-guided" | "model_guided" | "model" => Box::new(ModelGuided::default()),
        "auto" => Box::new(Auto::default()),
        _ => {
            return Err(SearchError::UnknownStrategy {
                name: name.to_string(),
            })
        }
    })
}

/// `exhaustive` for spaces of at most [`AUTO_EXHAUSTIVE_MAX`] candidates, else
/// `model-guided`: chosen on the first call, when the space is known. Both are deterministic.
#[derive(Default)]
pub struct Auto {
    inner: Option<Box<dyn Strategy + Send>>,
}

impl Strategy for Auto {
    fn name(&self) -> &'static str {
        self.inner.as_ref().map_or("auto", |s| s.name())
    }
    fn next(&mut self, space: &[Candidate], history: &[Trial]) -> Option<usize> {
        let inner = self.inner.get_or_insert_with(|| {
            if space.len() <= AUTO_EXHAUSTIVE_MAX {
                Box::new(Exhaustive::default())
            } else {
                Box::new(ModelGuided::default())
            }
        });
        inner.next(space, history)
    }
    fn part_of(&mut self, whole: usize) {
        if self.inner.is_none() {
            self.inner = Some(if whole <= AUTO_EXHAUSTIVE_MAX {
                Box::new(Exhaustive::default())
            } else {
                Box::new(ModelGuided::default())
            });
        }
    }
}

/// Which indices have been tried, kept up to date from the history incrementally.
#[derive(Debug, Default, Clone)]
pub(crate) struct Seen {
    tried: Vec<bool>,
    absorbed: usize,
    count: usize,
}

impl Seen {
    /// Takes in the trials added to `history` since the last call and returns them.
    pub(crate) fn update<'h>(&mut self, n: usize, history: &'h [Trial]) -> &'h [Trial] {
        if self.tried.len() != n {
            self.tried.resize(n, false);
        }
        let new = &history[self.absorbed.min(history.len())..];
        for t in new {
            if let Some(x) = self.tried.get_mut(t.index) {
                if !*x {
                    *x = true;
                    self.count += 1;
                }
            }
        }
        self.absorbed = history.len();
        new
    }

    /// Whether index `i` was tried (out of range counts as tried: it cannot be proposed).
    pub(crate) fn tried(&self, i: usize) -> bool {
        self.tried.get(i).copied().unwrap_or(true)
    }

    /// How many indices are left.
    pub(crate) fn untried(&self) -> usize {
        self.tried.len() - self.count
    }

    /// The `k`-th untried index (0-based) in index order.
    pub(crate) fn nth_untried(&self, k: usize) -> Option<usize> {
        self.tried
            .iter()
            .enumerate()
            .filter(|(_, t)| !**t)
            .nth(k)
            .map(|(i, _)| i)
    }
}

/// The cost a strategy minimises: the log of the time (so steps compare as ratios), `+inf`
/// for a failed candidate.
pub(crate) fn cost(time_ms: Option<f64>) -> f64 {
    match time_ms {
        Some(t) if t.is_finite() && t > 0.0 => t.ln(),
        Some(t) if t.is_finite() => f64::MIN,
        _ => f64::INFINITY,
    }
}

/// What a search did.
#[derive(Debug, Clone, PartialEq)]
pub struct Searched {
    /// Every trial, the resumed ones first, in order.
    pub history: Vec<Trial>,
    /// The search was stopped from outside (interrupt, time limit) before the strategy
    /// finished.
    pub interrupted: bool,
}

/// Runs `strategy` over `space` until it stops, `budget` evaluations were made (trials of a
/// resumed run included), or `stop` says so (checked before each evaluation). `resumed`
/// holds trials made before, which are not evaluated again. `eval` returns the candidate's
/// time, `None` for a failed candidate, or an error that stops the whole search.
///
/// No index is evaluated twice: a strategy that proposes an index already tried (or out of
/// range) ends the search, as if it were done.
pub fn run<E>(
    strategy: &mut dyn Strategy,
    space: &[Candidate],
    budget: Option<usize>,
    resumed: Vec<Trial>,
    stop: &dyn Fn() -> bool,
    mut eval: impl FnMut(usize) -> Result<Option<f64>, E>,
) -> Result<Searched, E> {
    let mut tried = vec![false; space.len()];
    for t in &resumed {
        if let Some(x) = tried.get_mut(t.index) {
            *x = true;
        }
    }
    let mut history = resumed;
    let mut interrupted = false;
    while budget.is_none_or(|b| history.len() < b) {
        let Some(index) = strategy.next(space, &history) else {
            break;
        };
        match tried.get_mut(index) {
            Some(t) if !*t => *t = true,
            _ => break,
        }
        if stop() {
            interrupted = true;
            break;
        }
        let time_ms = eval(index)?;
        history.push(Trial { index, time_ms });
    }
    Ok(Searched {
        history,
        interrupted,
    })
}

/// The fastest successful trial.
pub fn best(history: &[Trial]) -> Option<Trial> {
    history
        .iter()
        .filter(|t| t.time_ms.is_some())
        .min_by(|a, b| {
            a.time_ms
                .unwrap_or(f64::MAX)
                .total_cmp(&b.time_ms.unwrap_or(f64::MAX))
        })
        .copied()
}

/// Shared fixtures of the strategy tests: synthetic landscapes.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A candidate list of plain indices (one family, one parameter `X`).
    pub fn plain(n: usize) -> Vec<Candidate> {
        (0..n)
            .map(|i| Candidate::new("f", BTreeMap::from([("X".to_string(), i as i64)])))
            .collect()
    }

    /// A smooth bowl over a 3-parameter grid (`A`, `B`, `C` in 0..side, and a second family
    /// that is uniformly worse), with the minimum at (7, 3, 9) on a side of 12 and about one
    /// candidate in 10 failing. Returns the candidates and their times.
    pub fn bowl(side: i64) -> (Vec<Candidate>, Vec<Option<f64>>) {
        let mut space = Vec::new();
        let mut times = Vec::new();
        let (ca, cb, cc) = (side * 7 / 12, side * 3 / 12, side * 9 / 12);
        for a in 0..side {
            for b in 0..side {
                for c in 0..side {
                    let params = BTreeMap::from([
                        ("A".to_string(), 16 * (a + 1)),
                        ("B".to_string(), b),
                        ("C".to_string(), 1 << c.min(20)),
                    ]);
                    let d = ((a - ca).pow(2) + (b - cb).pow(2) + 2 * (c - cc).pow(2)) as f64;
                    // Deterministic "random" failures and a little ripple.
                    let h = (a * 7919 + b * 104_729 + c * 1_299_709) % 10;
                    let t = (h != 3 || d == 0.0).then_some(1.0 + 0.05 * d + 0.01 * (h as f64));
                    let estimate = 1.0 + 0.04 * d + 0.3 * ((a * 31 + b * 17 + c) % 5) as f64;
                    space.push(Candidate {
                        family: "bowl".into(),
                        params,
                        estimate_ms: Some(estimate),
                    });
                    times.push(t);
                }
            }
        }
        // A worse family: same parameters, twice as slow.
        for i in 0..space.len() / 4 {
            let mut c = space[i * 4].clone();
            c.family = "slow".into();
            space.push(c);
            times.push(times[i * 4].map(|t| 2.0 * t + 0.5));
        }
        (space, times)
    }

    /// Runs `s` on `space` with recorded `times` until the best-so-far is within `pct` percent
    /// of the optimum; returns the number of evaluations, checking no index repeats.
    pub fn evals_to_within(
        s: &mut dyn Strategy,
        space: &[Candidate],
        times: &[Option<f64>],
        pct: f64,
    ) -> usize {
        let opt = times
            .iter()
            .flatten()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let goal = opt * (1.0 + pct / 100.0);
        let best = std::cell::Cell::new(f64::INFINITY);
        let stop = || best.get() <= goal;
        let mut seen = vec![false; space.len()];
        let r = run::<()>(s, space, None, vec![], &stop, |i| {
            assert!(!seen[i], "index {i} evaluated twice");
            seen[i] = true;
            if let Some(t) = times[i] {
                best.set(best.get().min(t));
            }
            Ok(times[i])
        })
        .unwrap();
        assert!(best.get() <= goal, "the optimum was never reached");
        r.history.len()
    }

    /// Runs `s` to the end over `space` (all succeed) and returns the order it evaluated.
    pub fn full_order(s: &mut dyn Strategy, space: &[Candidate]) -> Vec<usize> {
        let r = run::<()>(s, space, None, vec![], &|| false, |i| {
            Ok(Some(1.0 + (i % 7) as f64))
        })
        .unwrap();
        r.history.iter().map(|t| t.index).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testing::*;
    use super::*;

    fn never() -> bool {
        false
    }

    #[test]
    fn exhaustive_visits_all_and_finds_best() {
        let times = [Some(3.0), None, Some(1.5), Some(2.0)];
        let r = run::<()>(
            &mut Exhaustive::default(),
            &plain(times.len()),
            None,
            vec![],
            &never,
            |i| Ok(times[i]),
        )
        .unwrap();
        let order: Vec<_> = r.history.iter().map(|t| t.index).collect();
        assert_eq!(order, vec![0, 1, 2, 3]);
        assert!(!r.interrupted);
        assert_eq!(best(&r.history).unwrap().index, 2);
    }

    #[test]
    fn a_resumed_search_skips_what_was_tried() {
        let resumed = vec![
            Trial {
                index: 2,
                time_ms: Some(1.0),
            },
            Trial {
                index: 0,
                time_ms: None,
            },
        ];
        let mut evaluated = Vec::new();
        let r = run::<()>(
            &mut Exhaustive::default(),
            &plain(5),
            None,
            resumed,
            &never,
            |i| {
                evaluated.push(i);
                Ok(Some(2.0))
            },
        )
        .unwrap();
        assert_eq!(evaluated, vec![1, 3, 4]);
        assert_eq!(r.history.len(), 5);
        assert_eq!(best(&r.history).unwrap().index, 2);
    }

    #[test]
    fn budget_stop_and_errors_end_the_search() {
        let r = run::<()>(
            &mut Exhaustive::default(),
            &plain(10),
            Some(3),
            vec![],
            &never,
            |_| Ok(Some(1.0)),
        )
        .unwrap();
        assert_eq!(r.history.len(), 3);
        assert!(!r.interrupted);

        let calls = std::cell::Cell::new(0);
        let stop = || calls.get() >= 4;
        let r = run::<()>(
            &mut Exhaustive::default(),
            &plain(10),
            None,
            vec![],
            &stop,
            |_| {
                calls.set(calls.get() + 1);
                Ok(None)
            },
        )
        .unwrap();
        assert_eq!(r.history.len(), 4);
        assert!(r.interrupted);

        let r = run(
            &mut Exhaustive::default(),
            &plain(10),
            None,
            vec![],
            &never,
            |i| {
                if i == 4 {
                    Err("boom")
                } else {
                    Ok(None)
                }
            },
        );
        assert_eq!(r, Err("boom"));
        assert!(best(&[Trial {
            index: 0,
            time_ms: None
        }])
        .is_none());
    }

    /// Every strategy by name.
    fn all(seed: u64) -> Vec<Box<dyn Strategy + Send>> {
        STRATEGIES
            .iter()
            .map(|n| by_name(n, seed).unwrap())
            .collect()
    }

    #[test]
    fn by_name_knows_every_strategy_and_lists_them_on_error() {
        for n in STRATEGIES {
            let s = by_name(n, 1).unwrap();
            if n != "auto" {
                assert_eq!(s.name(), n);
            }
        }
        assert_eq!(by_name("Model", 1).unwrap().name(), "model-guided");
        let e = by_name("hillclimb", 1).err().unwrap().to_string();
        assert!(e.contains("'hillclimb'"), "{e}");
        for n in STRATEGIES {
            assert!(e.contains(n), "{e}");
        }
    }

    #[test]
    fn auto_is_exhaustive_for_small_spaces_and_model_guided_for_large() {
        let mut small = Auto::default();
        assert_eq!(small.name(), "auto");
        assert_eq!(small.next(&plain(10), &[]), Some(0));
        assert_eq!(small.name(), "exhaustive");
        let mut large_space = plain(AUTO_EXHAUSTIVE_MAX + 1);
        large_space[600].estimate_ms = Some(0.5);
        let mut large = Auto::default();
        assert_eq!(large.next(&large_space, &[]), Some(600));
        assert_eq!(large.name(), "model-guided");
    }

    #[test]
    fn every_strategy_covers_the_space_once_and_never_repeats() {
        let (space, _) = bowl(6);
        for mut s in all(3) {
            let order = full_order(s.as_mut(), &space);
            let mut sorted = order.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), order.len(), "{} repeated an index", s.name());
            assert_eq!(order.len(), space.len(), "{} stopped early", s.name());
        }
        // Degenerate spaces.
        for (mut s, mut t) in all(3).into_iter().zip(all(3)) {
            assert_eq!(full_order(s.as_mut(), &[]), Vec::<usize>::new());
            assert_eq!(full_order(t.as_mut(), &plain(1)), vec![0], "{}", t.name());
        }
    }

    #[test]
    fn every_strategy_respects_resume_budget_and_stop() {
        let (space, times) = bowl(5);
        for mut s in all(5) {
            let resumed = vec![
                Trial {
                    index: 3,
                    time_ms: times[3],
                },
                Trial {
                    index: 40,
                    time_ms: None,
                },
            ];
            let r = run::<()>(s.as_mut(), &space, Some(12), resumed, &never, |i| {
                assert!(i != 3 && i != 40, "a resumed trial was run again");
                Ok(times[i])
            })
            .unwrap();
            assert_eq!(r.history.len(), 12, "{}", s.name());
            assert!(!r.interrupted);
        }
        for mut s in all(5) {
            let n = std::cell::Cell::new(0);
            let stop = || n.get() >= 7;
            let r = run::<()>(s.as_mut(), &space, None, vec![], &stop, |i| {
                n.set(n.get() + 1);
                Ok(times[i])
            })
            .unwrap();
            assert_eq!(r.history.len(), 7, "{}", s.name());
            assert!(r.interrupted);
        }
    }

    #[test]
    fn every_strategy_is_reproducible_for_a_seed() {
        let (space, times) = bowl(6);
        let order = |name: &str, seed: u64| {
            let mut s = by_name(name, seed).unwrap();
            run::<()>(s.as_mut(), &space, Some(60), vec![], &never, |i| {
                Ok(times[i])
            })
            .unwrap()
            .history
            .iter()
            .map(|t| t.index)
            .collect::<Vec<_>>()
        };
        for name in ["random", "annealing", "genetic"] {
            assert_eq!(order(name, 11), order(name, 11), "{name}");
            assert_ne!(order(name, 11), order(name, 12), "{name} ignores its seed");
        }
        for name in ["exhaustive", "model-guided"] {
            assert_eq!(order(name, 11), order(name, 12), "{name}");
        }
    }

    #[test]
    fn guided_strategies_beat_exhaustive_on_a_smooth_landscape() {
        let (space, times) = bowl(12);
        let n = space.len();
        let exhaustive = evals_to_within(&mut Exhaustive::default(), &space, &times, 0.0);
        let seeds = 20;
        let median = |name: &str| {
            let mut v: Vec<usize> = (0..seeds)
                .map(|seed| {
                    let mut s = by_name(name, seed).unwrap();
                    evals_to_within(s.as_mut(), &space, &times, 0.0)
                })
                .collect();
            v.sort_unstable();
            v[v.len() / 2]
        };
        let random = median("random");
        // Random needs about half the space to hit the single optimum.
        assert!(random > n / 10, "random {random} of {n}");
        for name in ["annealing", "genetic", "model-guided"] {
            let m = median(name);
            assert!(
                m * 8 < exhaustive && m * 4 < random,
                "{name}: median {m} evaluations to the optimum; exhaustive {exhaustive}, random {random}, space {n}"
            );
        }
    }
}
