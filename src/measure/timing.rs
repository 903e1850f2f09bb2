//! Timing policy and statistics. The sampling itself (CUDA events, L2 flush) lives in
//! [`crate::cuda::bench`]; this module decides how many samples to take and summarises them.

use serde::{Deserialize, Serialize};

/// How a candidate is timed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimingSettings {
    /// Untimed runs before sampling (module load, clocks, caches).
    pub warmup: u32,
    /// Fewest timed samples.
    pub min_samples: u32,
    /// Most timed samples.
    pub max_samples: u32,
    /// Stop adding samples once they add up to this much GPU time, milliseconds.
    pub budget_ms: f64,
    /// Flush L2 between samples (write a buffer twice its size), so inputs come from DRAM.
    pub flush_l2: bool,
}

impl Default for TimingSettings {
    fn default() -> Self {
        TimingSettings {
            warmup: 3,
            min_samples: 10,
            max_samples: 50,
            budget_ms: 200.0,
            flush_l2: true,
        }
    }
}

impl TimingSettings {
    /// Fewer samples, for quick runs and tests.
    pub fn quick() -> Self {
        TimingSettings {
            warmup: 1,
            min_samples: 5,
            max_samples: 10,
            budget_ms: 50.0,
            flush_l2: true,
        }
    }

    /// How many samples to take for a kernel whose warm-up ran in `estimate_ms`.
    pub fn samples_for(&self, estimate_ms: f64) -> u32 {
        let want = if estimate_ms > 0.0 {
            (self.budget_ms / estimate_ms).floor().min(u32::MAX as f64) as u32
        } else {
            self.max_samples
        };
        want.clamp(
            self.min_samples.max(1),
            self.max_samples.max(self.min_samples).max(1),
        )
    }
}

impl TimingSettings {
    /// Like [`samples_for`](Self::samples_for), raced against the best median so far: a
    /// candidate whose estimate is more than [`SLOW_FACTOR`] times it gets only
    /// [`SLOW_SAMPLES`] (it cannot win, and its median is still recorded); one more than
    /// [`NEAR_FACTOR`] times it gets `min_samples` (a one-sample estimate is not off by 10%, so
    /// it cannot win either, and its recorded median stays good enough for replays). Only the
    /// contenders get the full sampling that separates configs a percent apart.
    pub fn samples_for_candidate(&self, estimate_ms: f64, best_ms: Option<f64>) -> u32 {
        let full = self.samples_for(estimate_ms);
        match best_ms {
            Some(b) if estimate_ms > SLOW_FACTOR * b => SLOW_SAMPLES.min(full),
            Some(b) if estimate_ms > NEAR_FACTOR * b => self.min_samples.max(1).min(full),
            _ => full,
        }
    }
}

/// How much slower than the best so far a candidate must be to get the short sampling.
pub const SLOW_FACTOR: f64 = 1.5;
/// Samples a clearly slower candidate gets.
pub const SLOW_SAMPLES: u32 = 3;
/// How much slower than the best so far a candidate must be to get `min_samples` only.
pub const NEAR_FACTOR: f64 = 1.1;

/// A summary of timed samples, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// The median: what decides.
    pub median_ms: f64,
    /// The fastest sample.
    pub min_ms: f64,
    /// The slowest sample.
    pub max_ms: f64,
    /// (p90 - p10) / median, in percent: the noise of this measurement.
    pub spread_pct: f64,
    /// Number of samples.
    pub samples: u32,
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    // Linear interpolation between the closest ranks.
    let pos = p * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

impl Stats {
    /// Summarises samples; `None` when there are none or any is not a positive finite number.
    pub fn from_samples(samples: &[f64]) -> Option<Stats> {
        if samples.is_empty() || samples.iter().any(|s| !s.is_finite() || *s < 0.0) {
            return None;
        }
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let median = percentile(&s, 0.5);
        let spread = if median > 0.0 {
            (percentile(&s, 0.9) - percentile(&s, 0.1)) / median * 100.0
        } else {
            0.0
        };
        Some(Stats {
            median_ms: median,
            min_ms: s[0],
            max_ms: s[s.len() - 1],
            spread_pct: spread,
            samples: s.len() as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_samples() {
        let s = Stats::from_samples(&[3.0, 1.0, 2.0, 100.0, 2.0]).unwrap();
        assert_eq!(s.median_ms, 2.0);
        assert_eq!(s.min_ms, 1.0);
        assert_eq!(s.max_ms, 100.0);
        assert_eq!(s.samples, 5);
        // p10 = 1.4, p90 = 61.2 -> spread (61.2 - 1.4) / 2 = 2990 %.
        assert!((s.spread_pct - 2990.0).abs() < 1e-9, "{}", s.spread_pct);
        let even = Stats::from_samples(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(even.median_ms, 2.5);
        assert!(Stats::from_samples(&[]).is_none());
        assert!(Stats::from_samples(&[1.0, f64::NAN]).is_none());
    }

    #[test]
    fn sample_count_follows_budget() {
        let t = TimingSettings::default();
        assert_eq!(t.samples_for(100.0), t.min_samples);
        assert_eq!(t.samples_for(0.001), t.max_samples);
        assert_eq!(t.samples_for(10.0), 20);
        assert_eq!(t.samples_for(0.0), t.max_samples);
        assert_eq!(t.samples_for_candidate(1.0, Some(0.5)), SLOW_SAMPLES);
        assert_eq!(t.samples_for_candidate(1.0, Some(0.95)), t.samples_for(1.0));
        // Between NEAR_FACTOR and SLOW_FACTOR: the floor of the sampling, no more.
        assert_eq!(t.samples_for_candidate(1.0, Some(0.8)), t.min_samples);
        assert!(t.samples_for(1.0) > t.min_samples);
        assert_eq!(t.samples_for_candidate(1.0, None), t.samples_for(1.0));
    }
}
