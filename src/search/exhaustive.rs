//! Every candidate once, in list order.

use super::{Candidate, Seen, Strategy, Trial};

/// Every candidate once, in order (skipping those a resumed run already tried).
#[derive(Debug, Default, Clone)]
pub struct Exhaustive {
    seen: Seen,
    cursor: usize,
}

impl Strategy for Exhaustive {
    fn name(&self) -> &'static str {
        "exhaustive"
    }
    fn next(&mut self, space: &[Candidate], history: &[Trial]) -> Option<usize> {
        self.seen.update(space.len(), history);
        while self.cursor < space.len() && self.seen.tried(self.cursor) {
            self.cursor += 1;
        }
        (self.cursor < space.len()).then_some(self.cursor)
    }
}
