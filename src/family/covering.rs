//! Covering sets: a few configs of a space that, together, hold every pair of parameter values
//! that any of the given configs holds (a pairwise covering array restricted to the valid
//! configs). A family's kernels differ only by their parameters, so compiling a covering set
//! meets every value of every parameter, and every value beside every value of each other
//! parameter, in a small fraction of the compiles (`autotune --dry-run --covering`: CI's check
//! that every family compiles for every arch the project targets).

use std::collections::{BTreeMap, HashMap};

/// Two `(parameter, value)`s held together: the first name sorts before the second.
pub type Pair<'a> = (&'a str, i64, &'a str, i64);

/// The pairs of `(parameter, value)`s a config holds, each once.
pub fn pairs(params: &BTreeMap<String, i64>) -> Vec<Pair<'_>> {
    let kv: Vec<(&str, i64)> = params.iter().map(|(k, &v)| (k.as_str(), v)).collect();
    let mut out = Vec::new();
    for (i, a) in kv.iter().enumerate() {
        for b in &kv[i + 1..] {
            out.push((a.0, a.1, b.0, b.1));
        }
    }
    out
}

/// The indices into `configs` of a pairwise covering set, in the order chosen: greedily, the
/// config that holds the most pairs not yet held (the earliest on a tie), until every pair of
/// `(parameter, value)`s that occurs together in some config is held, and every single value
/// where a config has only one parameter. Deterministic; empty for no configs. The configs
/// should be of one family (the same parameter names).
pub fn pairwise(configs: &[&BTreeMap<String, i64>]) -> Vec<usize> {
    // Each config's items: its pairs (or its single value) as ids. A single value is its pair
    // with the empty name, which no parameter has.
    let mut ids: HashMap<Pair, usize> = HashMap::new();
    let items: Vec<Vec<usize>> = configs
        .iter()
        .map(|params| {
            let mut id = |key| {
                let next = ids.len();
                *ids.entry(key).or_insert(next)
            };
            let mut out: Vec<usize> = pairs(params).into_iter().map(&mut id).collect();
            if let (1, Some((k, &v))) = (params.len(), params.iter().next()) {
                out.push(id((k.as_str(), v, "", 0)));
            }
            out
        })
        .collect();
    let mut held = vec![false; ids.len()];
    let mut left = ids.len();
    let mut chosen = Vec::new();
    // A config with no parameters holds nothing, but is the family's only kernel.
    if left == 0 && !configs.is_empty() {
        return vec![0];
    }
    while left > 0 {
        let gain = |i: usize| items[i].iter().filter(|&&p| !held[p]).count();
        // A chosen config holds nothing new, so it is never chosen again.
        let Some(best) = (0..configs.len()).max_by_key(|&i| (gain(i), std::cmp::Reverse(i))) else {
            break;
        };
        if gain(best) == 0 {
            break;
        }
        chosen.push(best);
        for &p in &items[best] {
            if !held[p] {
                held[p] = true;
                left -= 1;
            }
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn config(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
        pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
    }

    /// Every pair of values that occurs in `all` occurs in some chosen config.
    fn assert_covers(all: &[BTreeMap<String, i64>], chosen: &[usize]) {
        let want: BTreeSet<_> = all.iter().flat_map(pairs).collect();
        let got: BTreeSet<_> = chosen.iter().flat_map(|&i| pairs(&all[i])).collect();
        let missing: Vec<_> = want.difference(&got).collect();
        assert!(missing.is_empty(), "pairs not covered: {missing:?}");
    }

    #[test]
    fn a_full_product_of_three_parameters_is_covered_by_far_fewer_configs() {
        let mut all = Vec::new();
        for a in [1, 2, 4] {
            for b in [8, 16, 32] {
                for c in [0, 1] {
                    all.push(config(&[("A", a), ("B", b), ("C", c)]));
                }
            }
        }
        let refs: Vec<_> = all.iter().collect();
        let chosen = pairwise(&refs);
        assert_covers(&all, &chosen);
        // A x B alone has 9 pairs, each config holds one: at least 9, and the greedy finds 9-10.
        assert!((9..=10).contains(&chosen.len()), "{chosen:?}");
        let distinct: BTreeSet<_> = chosen.iter().collect();
        assert_eq!(distinct.len(), chosen.len(), "a config chosen twice");
    }

    #[test]
    fn only_the_pairs_some_config_holds_are_asked_for() {
        // A constraint ruled out A=4 with B=32: that pair is not wanted, the rest are.
        let all: Vec<_> = [(1, 8), (1, 32), (4, 8), (2, 16)]
            .iter()
            .map(|&(a, b)| config(&[("A", a), ("B", b)]))
            .collect();
        let refs: Vec<_> = all.iter().collect();
        let chosen = pairwise(&refs);
        assert_covers(&all, &chosen);
        assert_eq!(chosen.len(), 4, "each config holds a pair no other does");
    }

    #[test]
    fn one_parameter_gives_each_value_once_and_the_first_config_wins_ties() {
        let all: Vec<_> = [3, 1, 3, 2].iter().map(|&v| config(&[("T", v)])).collect();
        let refs: Vec<_> = all.iter().collect();
        assert_eq!(pairwise(&refs), vec![0, 1, 3]);
    }

    #[test]
    fn no_configs_give_none_and_a_config_without_parameters_gives_itself() {
        assert!(pairwise(&[]).is_empty());
        let empty = BTreeMap::new();
        assert_eq!(pairwise(&[&empty, &empty]), vec![0]);
    }

    #[test]
    fn the_choice_is_deterministic() {
        let mut all = Vec::new();
        for a in 0..5 {
            for b in 0..4 {
                for c in 0..3 {
                    if (a + b + c) % 4 != 0 {
                        all.push(config(&[("A", a), ("B", b), ("C", c), ("D", a * b % 3)]));
                    }
                }
            }
        }
        let refs: Vec<_> = all.iter().collect();
        let first = pairwise(&refs);
        assert_covers(&all, &first);
        assert_eq!(first, pairwise(&refs));
    }
}
