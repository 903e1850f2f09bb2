//! A genetic algorithm over the parameters of each family.

use super::geometry::Geometry;
use super::{cost, Candidate, Rng, Seen, Strategy, Trial};
use std::collections::VecDeque;

/// An elitist genetic algorithm: the population is the [`Genetic::population`] best
/// candidates evaluated so far (failed ones last). Each generation breeds as many children:
/// parents by tournament selection ([`Genetic::tournament`] contestants), the second parent
/// from the first's family when the population has another member of it (uniform crossover
/// of the parameter ranks), then mutation (each parameter moves one rank up or down with
/// probability `1 / parameters`, at least one move when the child equals a parent). A child
/// is mapped to the nearest untried candidate of its family in rank distance, so every
/// proposal is valid and new. The first generation is drawn at random, a family drawn
/// before each member, so that every family is represented.
#[derive(Debug, Clone)]
pub struct Genetic {
    /// Population size (0: chosen from the space, 8 to 24).
    pub population: usize,
    /// Contestants per tournament.
    pub tournament: usize,
    rng: Rng,
    seen: Seen,
    geo: Option<Geometry>,
    costs: Vec<f64>,
    queue: VecDeque<usize>,
}

impl Genetic {
    /// A genetic search seeded with `seed`.
    pub fn new(seed: u64) -> Genetic {
        Genetic {
            population: 0,
            tournament: 3,
            rng: Rng::new(seed),
            seen: Seen::default(),
            geo: None,
            costs: Vec::new(),
            queue: VecDeque::new(),
        }
    }

    fn size(&self, n: usize) -> usize {
        if self.population > 0 {
            self.population
        } else {
            (n / 25).clamp(8, 24)
        }
    }

    /// Fills the queue with the next generation.
    fn breed(&mut self, n: usize, geo: &Geometry) {
        let size = self.size(n);
        let mut tried: Vec<usize> = (0..n).filter(|&i| self.seen.tried(i)).collect();
        if tried.len() < size {
            // The first generation (or what a resumed run left short of one): at random.
            // Families drawn in turn, so every one is represented.
            let mut fresh = Vec::new();
            for _ in 0..(size - tried.len()).min(self.seen.untried()) {
                let i = geo.random_untried(&self.seen, &mut self.rng, &fresh);
                fresh.extend(i);
            }
            self.queue.extend(fresh);
            return;
        }
        tried.sort_by(|&a, &b| self.costs[a].total_cmp(&self.costs[b]).then(a.cmp(&b)));
        tried.truncate(size);
        let pop = tried;
        let mut children: Vec<usize> = Vec::new();
        for _ in 0..size {
            let p1 = self.select(&pop, None, geo);
            let f = geo.family(p1);
            let p2 = self.select(&pop, Some(f), geo);
            let (x1, x2) = (geo.coords(p1), geo.coords(p2));
            let mut child: Vec<u32> = x1
                .iter()
                .zip(x2)
                .map(|(&a, &b)| if self.rng.below(2) == 0 { a } else { b })
                .collect();
            let extent = geo.extent(f);
            let dims = child.len().max(1);
            let mut moved = false;
            for (p, x) in child.iter_mut().enumerate() {
                if self.rng.below(dims) == 0 {
                    moved |= mutate(x, extent[p], &mut self.rng);
                }
            }
            if !moved && (child == x1 || child == x2) && !child.is_empty() {
                let p = self.rng.below(child.len());
                mutate(&mut child[p], extent[p], &mut self.rng);
            }
            let exclude: Vec<usize> = children.clone();
            if let Some(c) = geo.nearest_untried(f, &child, &self.seen, &mut self.rng, &exclude) {
                children.push(c);
            }
        }
        self.queue.extend(children);
    }

    /// Tournament selection from `pop` (restricted to family `f` when it has two members or
    /// more there).
    fn select(&mut self, pop: &[usize], f: Option<usize>, geo: &Geometry) -> usize {
        let of_family: Vec<usize> = match f {
            Some(f) => pop
                .iter()
                .copied()
                .filter(|&i| geo.family(i) == f)
                .collect(),
            None => Vec::new(),
        };
        let pool = if of_family.len() >= 2 {
            &of_family[..]
        } else {
            pop
        };
        let mut best = pool[self.rng.below(pool.len())];
        for _ in 1..self.tournament.max(1) {
            let c = pool[self.rng.below(pool.len())];
            if self.costs[c] < self.costs[best] {
                best = c;
            }
        }
        best
    }
}

/// Moves rank `x` (of `extent` values) one step up or down; returns whether it moved.
fn mutate(x: &mut u32, extent: u32, rng: &mut Rng) -> bool {
    if extent <= 1 {
        return false;
    }
    let up = if *x == 0 {
        true
    } else if *x + 1 >= extent {
        false
    } else {
        rng.below(2) == 0
    };
    if up {
        *x += 1;
    } else {
        *x -= 1;
    }
    true
}

impl Strategy for Genetic {
    fn name(&self) -> &'static str {
        "genetic"
    }
    fn next(&mut self, space: &[Candidate], history: &[Trial]) -> Option<usize> {
        let n = space.len();
        if self.geo.as_ref().is_none_or(|g| g.len() != n) {
            self.geo = Some(Geometry::new(space));
            self.costs = vec![f64::INFINITY; n];
            self.queue.clear();
        }
        for t in self.seen.update(n, history) {
            if let Some(c) = self.costs.get_mut(t.index) {
                *c = cost(t.time_ms);
            }
        }
        loop {
            while let Some(i) = self.queue.pop_front() {
                if !self.seen.tried(i) {
                    return Some(i);
                }
            }
            if self.seen.untried() == 0 {
                return None;
            }
            let geo = self.geo.take();
            if let Some(g) = &geo {
                self.breed(n, g);
            }
            self.geo = geo;
            if self.queue.is_empty() {
                // Nothing bred (cannot happen while candidates are left): fall back to any.
                return self.seen.nth_untried(self.rng.below(self.seen.untried()));
            }
        }
    }
}
