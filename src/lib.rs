//! # autotune
//!
//! Finds the fastest tile parameters for CUDA SGEMM and SGEMV kernels on the GPU at hand, per
//! matrix shape, and writes them to a TOML tuning database that a product ships and loads.
//!
//! The folders read as the flow of one run:
//!
//! - [`problem`]: the op and shape, the key of everything below;
//! - [`family`]: the expression language, parameter spaces, the catalog of kernel families and
//!   their instantiation into source strings;
//! - [`gpu`]: the one per-architecture table and the facts of a device (pure data);
//! - [`cuda`]: the only users of cudarc: device, NVRTC and compile caches, the bench that loads,
//!   validates and times a kernel, the isolating worker process;
//! - [`measure`]: outcomes, the timing policy and statistics, the reference and tolerance;
//! - [`search`]: strategies over a space and a budget;
//! - [`plan`]: a shape's candidates, the analytic performance model, a run's records;
//!   [`suite`]: lists of problems in files;
//! - [`tuning`]: a tuning run end to end, journals, shards, replay of journals, re-checks,
//!   cross-GPU portability, coverage and its evaluation, verify;
//! - [`db`]: the tuning database (schema, TOML codec, merge, errors), written through
//!   [`fileio`] (locked, atomic file writes); [`provenance`] names the machine a result came from;
//! - [`product`]: what a product links: [`Tuned`], the lookup, the exports;
//! - [`report`]: tables, charts and GPU comparisons.
//!
//! Features: `cli` (on by default) holds what only the command line uses (clap, indicatif,
//! ctrlc, anyhow, and plotters for `report::chart`); a product that depends on this crate with
//! `default-features = false` gets the runtime and the tuning library alone. The C ABI over the
//! runtime is the crate in `capi/` (`libautotune`, `include/autotune.h`).
//!
//! Pure modules need no GPU and no CUDA: `docs/architecture.md` lists them, and
//! `tests/offline/architecture.rs` checks that they import nothing that does.

#![warn(missing_docs)]

pub mod cuda;
pub mod db;
pub mod family;
pub mod fileio;
pub mod gpu;
pub mod measure;
pub mod plan;
pub mod problem;
pub mod product;
pub mod provenance;
pub mod report;
pub mod search;
pub mod suite;
pub mod tuning;

pub use family::math::MathPolicy;
pub use problem::{Op, Shape};
pub use product::runtime::Tuned;
