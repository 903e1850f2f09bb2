//! The optional `[model]` section of a space file and the figures it gives the performance
//! model for one config on one shape.

use serde::Deserialize;

/// The optional `[model]` section: family-specific figures for the performance model
/// ([`crate::plan::model`]), as integer expressions over the same names as `[derived]`. Every
/// key is optional; the model derives a generic default for what is missing.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ModelFile {
    /// Registers per thread.
    #[serde(default)]
    registers: Option<String>,
    /// Bytes the kernel moves to and from device memory in all.
    #[serde(default)]
    global_bytes: Option<String>,
    /// Bytes of loads each thread keeps in flight (memory-level parallelism).
    #[serde(default)]
    bytes_in_flight: Option<String>,
    /// Percent of the model's generic FMA rate for its thread tile that the family's inner
    /// loop reaches (below 100 for loops that are not pipelined or issue more instructions
    /// per FMA than the generic figure assumes, as measured against the best family; above
    /// 100, up to 800, for a family on faster units than the FP32 pipes, e.g. tensor cores).
    #[serde(default)]
    fma_efficiency_pct: Option<String>,
    /// Outputs of C each block computes, padding included (a block tile's `BM * BN`).
    #[serde(default)]
    block_outputs: Option<String>,
    /// Slices K is cut into, each a block of its own (a split along grid y); without it, grid
    /// z past the batch's products is taken as the split.
    #[serde(default)]
    k_splits: Option<String>,
}

/// A family's figures for the performance model, for one config on one shape: what the space
/// file knows beyond the launch geometry. Absent values are left to the model's defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelHints {
    /// Static shared memory per block (`launch.shared_bytes`), bytes; 0 when not given.
    pub static_shared_bytes: i64,
    /// `[model] registers`: registers per thread.
    pub registers: Option<i64>,
    /// `[model] global_bytes`: bytes moved to and from device memory.
    pub global_bytes: Option<i64>,
    /// `[model] bytes_in_flight`: bytes of loads in flight per thread.
    pub bytes_in_flight: Option<i64>,
    /// `[model] fma_efficiency_pct`: percent of the FMA issue rate the inner loop reaches.
    pub fma_efficiency_pct: Option<i64>,
    /// `[model] block_outputs`: outputs of C each block computes, the rows and columns of its
    /// tile past the edges of C included (without it, the model takes a block's share of C).
    pub block_outputs: Option<i64>,
    /// `[model] k_splits`: slices of K, each a block of its own, per tile (without it, grid z
    /// past the batch's products).
    pub k_splits: Option<i64>,
}

impl ModelFile {
    /// The keys and their expression texts, in the order [`ModelHints::new`] takes the values.
    pub(super) fn texts(&self) -> [(&'static str, &Option<String>); 6] {
        [
            ("registers", &self.registers),
            ("global_bytes", &self.global_bytes),
            ("bytes_in_flight", &self.bytes_in_flight),
            ("fma_efficiency_pct", &self.fma_efficiency_pct),
            ("block_outputs", &self.block_outputs),
            ("k_splits", &self.k_splits),
        ]
    }
}

impl ModelHints {
    /// The hints from static shared memory and the `[model]` values in [`ModelFile::texts`]'s
    /// order.
    pub(super) fn new(static_shared_bytes: i64, values: [Option<i64>; 6]) -> Self {
        let [registers, global_bytes, bytes_in_flight, fma_efficiency_pct, block_outputs, k_splits] =
            values;
        Self {
            static_shared_bytes,
            registers,
            global_bytes,
            bytes_in_flight,
            fma_efficiency_pct,
            block_outputs,
            k_splits,
        }
    }
}
