//! # autotune
//!
//! Finds the fastest tile parameters for CUDA SGEMM and SGEMV kernels on the GPU at hand, per
//! matrix shape, and writes them to a TOML tuning database that a product ships and loads.
//!
//! The flow of one run: shape + op → parameter spaces (`configs/spaces/*.toml`, [`space`]) →
//! pruning → instantiation of `templates/*.cu` ([`template`]) → NVRTC in parallel
//! ([`compile`]) → validation against a float64 reference and timing against cuBLAS
//! ([`runner`], [`verify`], [`timing`]) → search ([`search`], [`tune`]) → database ([`db`]) →
//! report ([`report`]).
//!
//! Pure modules (`shape`, `expr`, `space`, `template`, `db`, `search`, `model`, `simulate`,
//! `timing`, `verify`, `report`, `lookup`, `suite`, `recheck`) need no GPU; only `device`,
//! `compile`, `runner` and `runtime` touch CUDA. A product uses [`Tuned`] (module [`runtime`]).

#![warn(missing_docs)]

pub mod compile;
pub mod cross;
pub mod db;
pub mod device;
pub mod export;
pub mod expr;
pub mod fileio;
pub mod journal;
pub mod lookup;
pub mod model;
pub mod provenance;
pub mod recheck;
pub mod report;
pub mod runner;
pub mod runtime;
pub mod search;
pub mod shape;
pub mod shard;
pub mod simulate;
pub mod space;
pub mod suite;
pub mod template;
pub mod timing;
pub mod tune;
pub mod verify;
pub mod worker;

pub use runtime::Tuned;
pub use shape::{Op, Shape};
