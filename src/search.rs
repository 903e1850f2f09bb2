//! Search strategies: which candidate to evaluate next, given what was measured so far.
//! Pure: the evaluation is a closure, so strategies are tested without a GPU.

/// One evaluated candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trial {
    /// Index into the candidate list.
    pub index: usize,
    /// Median time in milliseconds, or `None` when the candidate failed.
    pub time_ms: Option<f64>,
}

/// Chooses the next candidate to evaluate.
pub trait Strategy {
    /// A short name for reports.
    fn name(&self) -> &'static str;
    /// The next index in `0..candidates` to evaluate, or `None` to stop.
    /// `history` holds every trial so far, in order.
    fn next(&mut self, candidates: usize, history: &[Trial]) -> Option<usize>;
}

/// Every candidate once, in order.
#[derive(Debug, Default, Clone, Copy)]
pub struct Exhaustive;

impl Strategy for Exhaustive {
    fn name(&self) -> &'static str {
        "exhaustive"
    }
    fn next(&mut self, candidates: usize, history: &[Trial]) -> Option<usize> {
        (history.len() < candidates).then_some(history.len())
    }
}

/// Runs `strategy` over `candidates` until it stops or `budget` evaluations were made.
/// `eval` returns the candidate's time, `None` for a failed candidate, or an error that stops
/// the whole search.
pub fn run<E>(
    strategy: &mut dyn Strategy,
    candidates: usize,
    budget: Option<usize>,
    mut eval: impl FnMut(usize) -> Result<Option<f64>, E>,
) -> Result<Vec<Trial>, E> {
    let mut history: Vec<Trial> = Vec::new();
    while budget.is_none_or(|b| history.len() < b) {
        let Some(index) = strategy.next(candidates, &history) else {
            break;
        };
        if index >= candidates {
            break;
        }
        let time_ms = eval(index)?;
        history.push(Trial { index, time_ms });
    }
    Ok(history)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exhaustive_visits_all_and_finds_best() {
        let times = [Some(3.0), None, Some(1.5), Some(2.0)];
        let h = run::<()>(&mut Exhaustive, times.len(), None, |i| Ok(times[i])).unwrap();
        assert_eq!(
            h.iter().map(|t| t.index).collect::<Vec<_>>(),
            vec![0, 1, 2, 3]
        );
        assert_eq!(best(&h).unwrap().index, 2);
    }

    #[test]
    fn budget_and_errors_stop_the_search() {
        let h = run::<()>(&mut Exhaustive, 10, Some(3), |_| Ok(Some(1.0))).unwrap();
        assert_eq!(h.len(), 3);
        let r = run(&mut Exhaustive, 10, None, |i| {
            if i == 4 {
                Err("boom")
            } else {
                Ok(None)
            }
        });
        assert_eq!(r, Err("boom"));
        assert!(best(&[Trial {
            index: 0,
            time_ms: None
        }])
        .is_none());
    }
}
