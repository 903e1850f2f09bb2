//! Random sampling without replacement.

use super::{Candidate, Rng, Seen, Strategy, Trial};

/// Every candidate once, in an order drawn from the seed (a shuffled list, so no index comes
/// twice); those a resumed run tried are skipped.
#[derive(Debug, Clone)]
pub struct Random {
    rng: Rng,
    seen: Seen,
    order: Option<Vec<usize>>,
    cursor: usize,
}

impl Random {
    /// Random sampling seeded with `seed`.
    pub fn new(seed: u64) -> Random {
        Random {
            rng: Rng::new(seed),
            seen: Seen::default(),
            order: None,
            cursor: 0,
        }
    }
}

impl Strategy for Random {
    fn name(&self) -> &'static str {
        "random"
    }
    fn next(&mut self, space: &[Candidate], history: &[Trial]) -> Option<usize> {
        self.seen.update(space.len(), history);
        let rng = &mut self.rng;
        let order = self.order.get_or_insert_with(|| {
            let mut v: Vec<usize> = (0..space.len()).collect();
            rng.shuffle(&mut v);
            v
        });
        while let Some(&i) = order.get(self.cursor) {
            if !self.seen.tried(i) {
                return Some(i);
            }
            self.cursor += 1;
        }
        None
    }
}
