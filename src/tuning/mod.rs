//! Tuning: one run end to end ([`tune`]), its journal ([`journal`]) and shards ([`shard`]),
//! offline replay of journals ([`replay`]), re-checks of a previous winner ([`recheck`]) and
//! cross-GPU portability ([`cross`]). What a run plans and records, and the analytic model, are
//! in [`crate::plan`], below the product runtime, which uses them too; [`workload`] draws the
//! untuned shapes `autotune evaluate` measures a database on, and [`rescore`] scores changed
//! rules against an evaluation's recorded times without a GPU. [`verify`] re-checks what a
//! database ships (validation on edge shapes, timing against the record, staleness) and
//! [`verdict`] judges it; [`sweep`] plans the randomized correctness sweep of the GPU tests.

pub mod cover;
pub mod cross;
pub mod devices;
pub mod evaluate;
pub mod evaluator;
pub mod journal;
pub mod queue;
pub mod recheck;
pub mod replay;
pub mod rescore;
pub mod session;
pub mod shard;
pub mod sweep;
pub mod tune;
pub mod verdict;
pub mod verify;
pub mod workload;
