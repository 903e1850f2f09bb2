//! Simulated annealing over one-parameter moves.

use super::geometry::Geometry;
use super::{cost, Candidate, Rng, Seen, Strategy, Trial};

/// Simulated annealing (Kirkpatrick, Gelatt and Vecchi, 1983) over the candidate graph in
/// which neighbours share the family and differ in one parameter, moved to the nearest value
/// the space has below or above (topped up with the nearest candidates of the family in rank
/// distance where constraints leave fewer than four such neighbours untried).
///
/// The cost is the log of the time (a failed candidate costs `+inf` and is never moved to), so
/// a move to a candidate `d` times slower is accepted with probability `exp(-ln(d) / T)`. The
/// temperature starts at [`Annealing::t0`] and is multiplied by [`Annealing::cooling`] after
/// each step. It starts from the best of a first sample of one random candidate per family
/// (families can differ wholesale, and moves stay within one), or of a resumed run. When the
/// current candidate has no untried neighbour left, or [`Annealing::patience`] steps in a row
/// did not improve the best, the walk restarts, temperature reset: from the best candidate
/// so far while it has untried neighbours (and patience is not what ran out), otherwise from
/// a random untried candidate of a random family.
#[derive(Debug, Clone)]
pub struct Annealing {
    /// Starting temperature (in log-time units: 0.05 accepts a move 5% slower with
    /// probability 1/e).
    pub t0: f64,
    /// Factor applied to the temperature after each step.
    pub cooling: f64,
    /// Steps without a new best before a restart at a random candidate.
    pub patience: usize,
    rng: Rng,
    seen: Seen,
    geo: Option<Geometry>,
    costs: Vec<f64>,
    current: Option<usize>,
    pending: Option<usize>,
    temperature: f64,
    /// One random candidate per family, evaluated first.
    sample: Vec<usize>,
    best: f64,
    stale: usize,
}

impl Annealing {
    /// Annealing seeded with `seed`, with the default schedule (`t0` 0.05, cooling 0.95).
    pub fn new(seed: u64) -> Annealing {
        Annealing {
            t0: 0.05,
            cooling: 0.95,
            patience: 40,
            rng: Rng::new(seed),
            seen: Seen::default(),
            geo: None,
            costs: Vec::new(),
            current: None,
            pending: None,
            temperature: 0.05,
            sample: Vec::new(),
            best: f64::INFINITY,
            stale: 0,
        }
    }

    fn best_tried(&self) -> Option<usize> {
        (0..self.costs.len())
            .filter(|&i| self.seen.tried(i) && self.costs[i].is_finite())
            .min_by(|&a, &b| self.costs[a].total_cmp(&self.costs[b]))
    }

    /// Untried one-parameter neighbours, topped up to 4 with the nearest untried candidates
    /// of the family within rank distance 3.
    fn untried_neighbours(&self, i: usize) -> Vec<usize> {
        let Some(geo) = &self.geo else {
            return Vec::new();
        };
        geo.untried_near(i, &self.seen, 4, 3)
    }
}

impl Strategy for Annealing {
    fn name(&self) -> &'static str {
        "annealing"
    }
    fn next(&mut self, space: &[Candidate], history: &[Trial]) -> Option<usize> {
        let n = space.len();
        if self.geo.as_ref().is_none_or(|g| g.len() != n) {
            let geo = Geometry::new(space);
            self.costs = vec![f64::NAN; n];
            self.temperature = self.t0;
            // One random member of each family, in a random order.
            let mut by_family: Vec<Vec<usize>> = Vec::new();
            for i in 0..n {
                let f = geo.family(i);
                if by_family.len() <= f {
                    by_family.resize(f + 1, Vec::new());
                }
                by_family[f].push(i);
            }
            self.sample = by_family
                .iter()
                .map(|m| m[self.rng.below(m.len())])
                .collect();
            self.rng.shuffle(&mut self.sample);
            self.geo = Some(geo);
        }
        for t in self.seen.update(n, history) {
            if let Some(c) = self.costs.get_mut(t.index) {
                *c = cost(t.time_ms);
                if *c < self.best {
                    self.best = *c;
                    self.stale = 0;
                } else {
                    self.stale += 1;
                }
            }
        }
        if self.seen.untried() == 0 {
            return None;
        }
        while let Some(i) = self.sample.pop() {
            if !self.seen.tried(i) {
                return Some(i);
            }
        }
        // Decide on the last proposal.
        if let Some(p) = self.pending.take().filter(|&p| self.seen.tried(p)) {
            let new = self.costs[p];
            let accept = match self.current {
                None => true,
                Some(c) => {
                    let old = self.costs[c];
                    new <= old || {
                        let d = new - old;
                        d.is_finite() && self.rng.unit() < (-d / self.temperature).exp()
                    }
                }
            };
            if accept {
                self.current = Some(p);
            }
            self.temperature = (self.temperature * self.cooling).max(1e-6);
        }
        if self.current.is_none() {
            self.current = self.best_tried();
        }
        let proposal = match self.current {
            None => self.seen.nth_untried(self.rng.below(self.seen.untried())),
            Some(c) => {
                let mut near = self.untried_neighbours(c);
                if self.stale >= self.patience {
                    // Stuck: somewhere else entirely.
                    self.stale = 0;
                    self.temperature = self.t0;
                    near.clear();
                } else if near.is_empty() {
                    // Exhausted here: restart, temperature reset.
                    self.temperature = self.t0;
                    if let Some(b) = self.best_tried() {
                        self.current = Some(b);
                        near = self.untried_neighbours(b);
                    }
                }
                if near.is_empty() {
                    self.current = None;
                    match &self.geo {
                        Some(g) => g.random_untried(&self.seen, &mut self.rng, &[]),
                        None => self.seen.nth_untried(self.rng.below(self.seen.untried())),
                    }
                } else {
                    Some(near[self.rng.below(near.len())])
                }
            }
        };
        self.pending = proposal;
        proposal
    }
}
