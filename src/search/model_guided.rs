//! Model-guided ordering with local refinement.

use super::geometry::Geometry;
use super::{Candidate, Seen, Strategy, Trial};
use std::collections::VecDeque;

/// Evaluates candidates in the order of their model estimate ([`Candidate::estimate_ms`],
/// fastest first; candidates without one last, in list order), except that the model's
/// favourite of every family comes first, so a family the model misjudges as a whole is still
/// seen early (`family_leaders_first`). With [`ModelGuided::refine`],
/// after the first [`ModelGuided::warmup`] proposals every second one is instead an untried
/// neighbour of the best candidate measured so far (one parameter changed, or the nearest in
/// rank distance where constraints leave fewer than six such; best estimate first), so a model that is right about the region but wrong about the exact point still
/// converges. Deterministic: it draws no random numbers.
#[derive(Debug, Clone)]
pub struct ModelGuided {
    /// Interleave the neighbours of the best measured candidate.
    pub refine: bool,
    /// Proposals taken purely from the model's order before refinement begins.
    pub warmup: usize,
    seen: Seen,
    geo: Option<Geometry>,
    order: Vec<usize>,
    cursor: usize,
    best: Option<(usize, f64)>,
    local: VecDeque<usize>,
    step: usize,
}

impl Default for ModelGuided {
    fn default() -> Self {
        ModelGuided {
            refine: true,
            warmup: 4,
            seen: Seen::default(),
            geo: None,
            order: Vec::new(),
            cursor: 0,
            best: None,
            local: VecDeque::new(),
            step: 0,
        }
    }
}

/// Indices of `space` ordered by model estimate, fastest first; candidates without an
/// estimate (or with a non-finite one) last, in list order. A compile queue can follow it.
pub fn model_order(space: &[Candidate]) -> Vec<usize> {
    let key = |i: usize| space[i].estimate_ms.filter(|e| e.is_finite());
    let mut order: Vec<usize> = (0..space.len()).collect();
    order.sort_by(|&a, &b| match (key(a), key(b)) {
        (Some(x), Some(y)) => x.total_cmp(&y).then(a.cmp(&b)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => a.cmp(&b),
    });
    order
}

/// Estimates this close (relative) count as a tie the model cannot decide.
const TIE: f64 = 0.01;
/// Ties larger than this keep their list order past this many (the spreading is quadratic).
const SPREAD_MAX: usize = 2048;

/// `order` (by estimate) with each run of tied estimates (within 1%) reordered to spread
/// over the space: families in turn, and within a family each next candidate the farthest in
/// rank distance from those of its family already placed (greedy farthest-point, first in
/// list order on ties). When the model cannot tell candidates apart, measuring diverse ones
/// first finds the good region sooner than list order, which varies the last parameter first.
fn spread_ties(space: &[Candidate], geo: &Geometry, order: Vec<usize>) -> Vec<usize> {
    let est = |i: usize| space[i].estimate_ms.filter(|e| e.is_finite());
    let mut out = Vec::with_capacity(order.len());
    let mut start = 0;
    while start < order.len() {
        let head = est(order[start]);
        let mut end = start + 1;
        while end < order.len() {
            let same = match (head, est(order[end])) {
                (Some(a), Some(b)) => b <= a * (1.0 + TIE) + f64::MIN_POSITIVE,
                (None, None) => true,
                _ => false,
            };
            if !same {
                break;
            }
            end += 1;
        }
        let run = &order[start..end];
        let (spread, rest) = run.split_at(run.len().min(SPREAD_MAX));
        out.extend(farthest_first(geo, spread));
        out.extend_from_slice(rest);
        start = end;
    }
    out
}

/// Greedy farthest-point order of `run`: distance between families is larger than any within
/// one, so every family comes up before any comes twice.
fn farthest_first(geo: &Geometry, run: &[usize]) -> Vec<usize> {
    if run.len() <= 2 {
        return run.to_vec();
    }
    let far = u32::MAX;
    let dist = |a: usize, b: usize| {
        if geo.family(a) == geo.family(b) {
            geo.distance_to(a, geo.coords(b))
        } else {
            far
        }
    };
    let mut left: Vec<usize> = run.to_vec();
    let mut gap: Vec<u32> = vec![far; left.len()];
    let mut out = Vec::with_capacity(run.len());
    // Position 0 first (the list order's first), then the farthest from all placed.
    let mut pick = 0;
    loop {
        let c = left.swap_remove(pick);
        gap.swap_remove(pick);
        out.push(c);
        if left.is_empty() {
            break;
        }
        for (j, g) in left.iter().zip(gap.iter_mut()) {
            *g = (*g).min(dist(c, *j));
        }
        // The largest gap; ties to the earliest in list order.
        pick = 0;
        for k in 1..left.len() {
            if gap[k] > gap[pick] || (gap[k] == gap[pick] && left[k] < left[pick]) {
                pick = k;
            }
        }
    }
    out
}

/// `order` with the first candidate of each family moved to the front (keeping their order).
pub fn family_leaders_first(space: &[Candidate], order: Vec<usize>) -> Vec<usize> {
    let mut seen: Vec<&str> = Vec::new();
    let (mut leaders, mut rest) = (Vec::new(), Vec::new());
    for i in order {
        if seen.contains(&space[i].family.as_str()) {
            rest.push(i);
        } else {
            seen.push(&space[i].family);
            leaders.push(i);
        }
    }
    leaders.extend(rest);
    leaders
}

impl Strategy for ModelGuided {
    fn name(&self) -> &'static str {
        "model-guided"
    }
    fn next(&mut self, space: &[Candidate], history: &[Trial]) -> Option<usize> {
        let n = space.len();
        if self.order.len() != n {
            let geo = Geometry::new(space);
            self.order = family_leaders_first(space, spread_ties(space, &geo, model_order(space)));
            self.geo = self.refine.then_some(geo);
            self.cursor = 0;
        }
        let mut improved = false;
        for t in self.seen.update(n, history) {
            if let Some(ms) = t.time_ms.filter(|m| m.is_finite()) {
                if self.best.is_none_or(|(_, b)| ms < b) {
                    self.best = Some((t.index, ms));
                    improved = true;
                }
            }
        }
        if improved {
            if let (Some(geo), Some((b, _))) = (&self.geo, self.best) {
                let mut near = geo.untried_near(b, &self.seen, 6, 3);
                let rank = |i: usize| self.order.iter().position(|&j| j == i);
                near.sort_by_key(|&i| rank(i));
                self.local = near.into();
            }
        }
        if self.seen.untried() == 0 {
            return None;
        }
        self.step += 1;
        if self.refine && self.step > self.warmup && self.step.is_multiple_of(2) {
            while let Some(j) = self.local.pop_front() {
                if !self.seen.tried(j) {
                    return Some(j);
                }
            }
        }
        while let Some(&i) = self.order.get(self.cursor) {
            if !self.seen.tried(i) {
                return Some(i);
            }
            self.cursor += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn cand(family: &str, x: i64, estimate: Option<f64>) -> Candidate {
        Candidate {
            family: family.into(),
            params: BTreeMap::from([("X".to_string(), x)]),
            estimate_ms: estimate,
        }
    }

    #[test]
    fn best_estimate_first_ties_spread_and_every_family_early() {
        let space = vec![
            cand("a", 0, Some(1.0)),
            cand("a", 1, Some(1.0)),
            cand("a", 2, Some(1.0)),
            cand("a", 3, Some(1.0)),
            cand("b", 0, Some(1.005)), // within 1%: a tie
            cand("b", 1, Some(0.5)),
            cand("c", 0, None),
            cand("c", 1, Some(9.0)),
        ];
        assert_eq!(model_order(&space), vec![5, 0, 1, 2, 3, 4, 7, 6]);
        let geo = Geometry::new(&space);
        // The tie {0, 1, 2, 3, 4}: a0, then b0 (another family), then a3 (farthest from a0),
        // then a1 or a2 (both at distance 1; list order).
        let spread = spread_ties(&space, &geo, model_order(&space));
        assert_eq!(spread, vec![5, 0, 4, 3, 1, 2, 7, 6]);
        // Each family's favourite first: b1, a0, c1.
        assert_eq!(
            family_leaders_first(&space, spread),
            vec![5, 0, 7, 4, 3, 1, 2, 6]
        );
        let mut s = ModelGuided {
            refine: false,
            ..ModelGuided::default()
        };
        assert_eq!(
            crate::search::testing::full_order(&mut s, &space),
            vec![5, 0, 7, 4, 3, 1, 2, 6]
        );
    }
}
