//! Tuning: one run end to end ([`tune`]), its journal ([`journal`]), suites ([`suite`]) and
//! shards ([`shard`]), the analytic performance model ([`model`]), offline replay of journals
//! ([`replay`]), re-checks of a previous winner ([`recheck`]) and cross-GPU portability
//! ([`cross`]). [`outcome`] holds the results a run hands to reports; [`workload`] draws the
//! untuned shapes `autotune evaluate` measures a database on.

pub mod cover;
pub mod cross;
pub mod evaluate;
pub mod evaluator;
pub mod journal;
pub mod model;
pub mod outcome;
pub mod plan;
pub mod recheck;
pub mod replay;
pub mod session;
pub mod shard;
pub mod suite;
pub mod tune;
pub mod workload;
