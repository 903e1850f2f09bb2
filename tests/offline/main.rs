//! The integration tests that need nothing but this checkout: no GPU, no NVRTC, no g++. One
//! test binary (linking the library once, not once per file); each module is one subject, and
//! `cargo test --test offline cli::` runs one of them.
//!
//! The tests with a requirement are binaries of their own, `#[ignore]`d where it may be
//! missing: tests/nvrtc.rs (the NVRTC wheels), tests/emulate.rs (g++), tests/gpu.rs (a GPU).

#[path = "../common/mod.rs"]
mod common;

mod architecture;
mod cli;
mod compare;
mod db_safety;
mod errors;
mod fuzz;
mod hostile;
mod queue;
mod shard;
mod simulate;
