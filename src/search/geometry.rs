//! The shape of a candidate list that neighbourhood-based strategies need: each candidate's
//! family and the rank of each of its parameter values among the values that parameter takes
//! in the family, so "one parameter changed to an adjacent value" and "nearest candidate" are
//! defined for any family, whatever constraints cut holes in its grid.

use super::{Candidate, Rng, Seen};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// Rank coordinates of every candidate, by family.
#[derive(Debug, Clone)]
pub(crate) struct Geometry {
    /// Family id of each candidate.
    family: Vec<usize>,
    /// Rank of each parameter value of each candidate (parameters in the family's name
    /// order; a parameter a candidate lacks ranks below every value).
    coords: Vec<Vec<u32>>,
    /// Per family: how many distinct values each parameter takes.
    extent: Vec<Vec<u32>>,
    /// Per family: its candidates, in index order.
    members: Vec<Vec<usize>>,
    /// (family, coords) -> candidate.
    lookup: HashMap<(usize, Vec<u32>), usize>,
}

impl Geometry {
    /// Analyses `space`.
    pub(crate) fn new(space: &[Candidate]) -> Geometry {
        let mut families: Vec<&str> = Vec::new();
        let mut family = Vec::with_capacity(space.len());
        for c in space {
            let id = match families.iter().position(|f| *f == c.family) {
                Some(id) => id,
                None => {
                    families.push(&c.family);
                    families.len() - 1
                }
            };
            family.push(id);
        }
        // Per family, every parameter name and the sorted set of its values (None: absent).
        let mut values: Vec<BTreeMap<&str, BTreeSet<Option<i64>>>> =
            vec![BTreeMap::new(); families.len()];
        for (c, &f) in space.iter().zip(&family) {
            for (k, v) in &c.params {
                values[f].entry(k.as_str()).or_default().insert(Some(*v));
            }
        }
        for (c, &f) in space.iter().zip(&family) {
            for (k, set) in values[f].iter_mut() {
                if !c.params.contains_key(*k) {
                    set.insert(None);
                }
            }
        }
        let rank: Vec<BTreeMap<&str, Vec<Option<i64>>>> = values
            .iter()
            .map(|m| {
                m.iter()
                    .map(|(k, s)| (*k, s.iter().copied().collect()))
                    .collect()
            })
            .collect();
        let extent = rank
            .iter()
            .map(|m| m.values().map(|v| v.len() as u32).collect())
            .collect();
        let mut coords = Vec::with_capacity(space.len());
        let mut members = vec![Vec::new(); families.len()];
        let mut lookup = HashMap::with_capacity(space.len());
        for (i, (c, &f)) in space.iter().zip(&family).enumerate() {
            let x: Vec<u32> = rank[f]
                .iter()
                .map(|(k, vals)| {
                    let v = c.params.get(*k).copied();
                    vals.binary_search(&v).map_or(0, |r| r as u32)
                })
                .collect();
            members[f].push(i);
            // A duplicate (same family and parameters) keeps the first index.
            lookup.entry((f, x.clone())).or_insert(i);
            coords.push(x);
        }
        Geometry {
            family,
            coords,
            extent,
            members,
            lookup,
        }
    }

    /// Number of candidates analysed.
    pub(crate) fn len(&self) -> usize {
        self.family.len()
    }

    /// The family id of candidate `i`.
    pub(crate) fn family(&self, i: usize) -> usize {
        self.family[i]
    }

    /// The rank coordinates of candidate `i`.
    pub(crate) fn coords(&self, i: usize) -> &[u32] {
        &self.coords[i]
    }

    /// Per parameter of family `f`, how many values it takes.
    pub(crate) fn extent(&self, f: usize) -> &[u32] {
        &self.extent[f]
    }

    /// The candidates of family `f`.
    #[cfg(test)]
    pub(crate) fn members(&self, f: usize) -> &[usize] {
        &self.members[f]
    }

    /// A random untried candidate not in `exclude`, its family drawn first (uniformly among
    /// those with one left), so a small family is found as readily as a large one.
    pub(crate) fn random_untried(
        &self,
        seen: &Seen,
        rng: &mut Rng,
        exclude: &[usize],
    ) -> Option<usize> {
        let free = |i: &usize| !seen.tried(*i) && !exclude.contains(i);
        let open: Vec<&Vec<usize>> = self.members.iter().filter(|m| m.iter().any(free)).collect();
        if open.is_empty() {
            return None;
        }
        let fam: Vec<usize> = open[rng.below(open.len())]
            .iter()
            .copied()
            .filter(free)
            .collect();
        Some(fam[rng.below(fam.len())])
    }

    /// The neighbours of `i`: same family, one parameter changed to the nearest value (below
    /// and above) at which the space has a candidate.
    pub(crate) fn neighbours(&self, i: usize) -> Vec<usize> {
        let f = self.family[i];
        let mut out = Vec::new();
        let mut x = self.coords[i].clone();
        for p in 0..x.len() {
            let own = x[p];
            for up in [false, true] {
                let mut r = own;
                loop {
                    if up {
                        if r + 1 >= self.extent[f][p] {
                            break;
                        }
                        r += 1;
                    } else {
                        if r == 0 {
                            break;
                        }
                        r -= 1;
                    }
                    x[p] = r;
                    if let Some(&j) = self.lookup.get(&(f, x.clone())) {
                        out.push(j);
                        break;
                    }
                }
            }
            x[p] = own;
        }
        out
    }

    /// The untried neighbourhood of `i`: its untried one-parameter [`Geometry::neighbours`],
    /// topped up to `want` with the untried members of its family nearest to it in rank
    /// distance (at most `max_distance`; ties in index order). Constraints that couple
    /// parameters (a warp tile whose lanes must multiply to 32) leave some candidates with no
    /// one-parameter neighbour at all: the top-up is how a local search gets past them.
    pub(crate) fn untried_near(
        &self,
        i: usize,
        seen: &Seen,
        want: usize,
        max_distance: u32,
    ) -> Vec<usize> {
        let mut out: Vec<usize> = self
            .neighbours(i)
            .into_iter()
            .filter(|&j| !seen.tried(j))
            .collect();
        if out.len() < want {
            let x = &self.coords[i];
            let mut more: Vec<(u32, usize)> = self.members[self.family[i]]
                .iter()
                .filter(|&&j| j != i && !seen.tried(j) && !out.contains(&j))
                .map(|&j| (self.distance_to(j, x), j))
                .filter(|&(d, _)| d <= max_distance)
                .collect();
            more.sort_unstable();
            out.extend(more.into_iter().take(want - out.len()).map(|(_, j)| j));
        }
        out
    }

    /// L1 distance in rank space between candidate `i` and `coords` of the same family.
    pub(crate) fn distance_to(&self, i: usize, coords: &[u32]) -> u32 {
        self.coords[i]
            .iter()
            .zip(coords)
            .map(|(a, b)| a.abs_diff(*b))
            .sum()
    }

    /// The untried candidate of family `f` nearest to `coords` (ties broken at random), else
    /// a random untried candidate of any family, else `None`.
    pub(crate) fn nearest_untried(
        &self,
        f: usize,
        coords: &[u32],
        seen: &Seen,
        rng: &mut Rng,
        exclude: &[usize],
    ) -> Option<usize> {
        let free = |i: &usize| !seen.tried(*i) && !exclude.contains(i);
        let mut best: Vec<usize> = Vec::new();
        let mut best_d = u32::MAX;
        for &i in self.members.get(f).map_or(&[][..], |m| m.as_slice()) {
            if !free(&i) {
                continue;
            }
            let d = self.distance_to(i, coords);
            if d < best_d {
                best_d = d;
                best.clear();
            }
            if d == best_d {
                best.push(i);
            }
        }
        if !best.is_empty() {
            return Some(best[rng.below(best.len())]);
        }
        let rest: Vec<usize> = (0..self.len()).filter(free).collect();
        (!rest.is_empty()).then(|| rest[rng.below(rest.len())])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(f: &str, a: i64, b: i64) -> Candidate {
        Candidate::new(
            f,
            BTreeMap::from([("A".to_string(), a), ("B".to_string(), b)]),
        )
    }

    #[test]
    fn neighbours_step_over_holes_and_stay_in_the_family() {
        // A in {1, 2, 4, 8}, B in {0, 1}; (4, 0) is missing (pruned).
        let mut space = vec![];
        for a in [1, 2, 4, 8] {
            for b in [0, 1] {
                if (a, b) != (4, 0) {
                    space.push(cand("f", a, b));
                }
            }
        }
        space.push(cand("g", 2, 0));
        let g = Geometry::new(&space);
        let idx = |a, b| space.iter().position(|c| *c == cand("f", a, b)).unwrap();
        let mut n = g.neighbours(idx(2, 0));
        n.sort_unstable();
        // A: 1 below, 8 above (4 skipped: (4, 0) does not exist); B: 1.
        let mut want = vec![idx(1, 0), idx(8, 0), idx(2, 1)];
        want.sort_unstable();
        assert_eq!(n, want);
        assert_eq!(g.neighbours(space.len() - 1), Vec::<usize>::new());
        assert_eq!(g.members(1), &[space.len() - 1]);
        let mut seen = Seen::default();
        seen.update(space.len(), &[]);
        let x = g.coords(idx(4, 1)).to_vec();
        // (1, 1) has one-parameter neighbours (2, 1) and (1, 0); topped up to 3 with the
        // nearest other: (2, 0) at distance 2 (ties in index order).
        let near = g.untried_near(idx(1, 1), &seen, 3, 2);
        assert_eq!(near.len(), 3);
        assert!(near.contains(&idx(2, 0)), "{near:?}");
        assert!(g.untried_near(idx(1, 1), &seen, 3, 1).len() == 2);
        for seed in 0..10 {
            let got = g.nearest_untried(0, &x, &seen, &mut Rng::new(seed), &[idx(4, 1)]);
            assert!(got == Some(idx(2, 1)) || got == Some(idx(8, 1)), "{got:?}");
        }
    }
}
