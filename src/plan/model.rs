//! The analytic performance model: an estimate of a candidate's time from its launch geometry
//! and the device's figures, before anything is compiled. The model-guided search strategy
//! ([`crate::search::ModelGuided`]) times candidates in the order of this estimate; only the
//! order matters, not the absolute value.
//!
//! What it accounts for, all derived from the launch (grid, block, shared memory) and the
//! shape, so a family stays data:
//!
//! - **occupancy**: resident blocks per SM, limited by threads, blocks, shared memory and
//!   registers per SM ([`Machine`]);
//! - **wave quantization**: blocks run in waves of `blocks per SM x SMs`; a last, partial
//!   wave leaves SMs idle, and a grid smaller than the device leaves most of it idle;
//! - **per-thread work and arithmetic intensity** (gemm): a block computes its whole tile where
//!   the family says how large it is (`[model] block_outputs`: a shape just past a multiple of
//!   the tile pays a whole tile row more, tile quantization), else about
//!   `M * N * batch / tiles` outputs (tiles = blocks / the K split; grid z walks the products
//!   of a batch, and beyond them is taken as a split of K, the convention of every split-K
//!   family here), each thread `outputs / threads` of them. A
//!   thread tile of `o` outputs reads `2 sqrt(o)` shared-memory words per `o` FMAs, so small
//!   thread tiles are bound by shared memory, and a block tile of side `s` reads `2 s` words
//!   of global/L2 memory per `s^2` FMAs;
//! - **memory-level parallelism** (gemv): the bandwidth an SM draws grows with the bytes its
//!   resident threads keep in flight (Little's law), up to its share of the device's.
//!
//! - **workspace traffic**: a kernel with a workspace ([`Launch::workspace_bytes`]) is taken to
//!   write it once and read it once (split-K partials reduced by the last block of a tile),
//!   on top of the compulsory traffic; zeroing it every launch costs a launch and a pass.
//!
//! A space file may refine the per-config figures in an optional `[model]` section
//! (`registers`, `global_bytes`, `bytes_in_flight`, `block_outputs`, `k_splits`; see
//! [`crate::family::space::ModelHints`]); without
//! one the model uses the generic defaults described on [`estimate`]. The estimate is a
//! ranking heuristic: it knows nothing of coalescing, vector widths or instruction mixes.

use crate::family::catalog::Catalog;
use crate::family::space::{Config, Launch, Limits, ModelHints, WorkspaceZero};
use crate::gpu::{arch_facts, known_gpu, DeviceInfo};
use crate::problem::{Op, Shape};
use crate::search::Candidate;

/// A kernel launch costs about this much on its own, milliseconds.
const LAUNCH_MS: f64 = 0.003;
/// Loaded device-memory latency, seconds (about 600 ns on Volta to Hopper under load).
const DRAM_LATENCY_S: f64 = 600e-9;
/// L2-to-SM bandwidth as a multiple of device-memory bandwidth (about 2x as measured on
/// A100 and H100).
const L2_OVER_DRAM: f64 = 2.0;
/// Bytes per clock one SM can load from L2 (64 B/clk/SM on Volta to Hopper).
const L2_BYTES_PER_CLK_PER_SM: f64 = 64.0;
/// An SM can draw at most this multiple of its even share of device-memory bandwidth.
const SM_BANDWIDTH_SHARE: f64 = 2.0;
/// Resident warps (with 8 independent FMAs each) at which an SM reaches half its FMA rate.
const WARPS_TO_HIDE: f64 = 2.0;

/// The device figures the model reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    /// Streaming multiprocessors.
    pub sms: u32,
    /// SM clock, MHz.
    pub clock_mhz: u32,
    /// Most resident threads per SM.
    pub max_threads_per_sm: u32,
    /// Most resident blocks per SM.
    pub max_blocks_per_sm: u32,
    /// Shared memory per SM, bytes.
    pub shared_per_sm: u32,
    /// Shared memory the system reserves per block, bytes (1 KiB from sm_80 on).
    pub reserved_shared_per_block: u32,
    /// 32-bit registers per SM.
    pub regs_per_sm: u32,
    /// FP32 peak, GFLOP/s.
    pub fp32_gflops: f64,
    /// Device-memory bandwidth, GB/s.
    pub dram_gbs: f64,
}

impl Machine {
    /// The figures of an arch `sm` with `sms` SMs at `clock_mhz`; `dram_gbs` when known,
    /// else a typical FP32-to-bandwidth ratio of 15 FLOP/byte. `None` for an arch the
    /// per-SM table does not know.
    pub fn new(sm: i64, sms: u32, clock_mhz: u32, dram_gbs: Option<f64>) -> Option<Machine> {
        let facts = arch_facts(sm)?;
        let sms = sms.max(1);
        let clock_mhz = clock_mhz.max(1);
        let fp32_gflops =
            f64::from(sms) * f64::from(facts.fp32_lanes_per_sm) * 2.0 * f64::from(clock_mhz) / 1e3;
        Some(Machine {
            sms,
            clock_mhz,
            max_threads_per_sm: facts.max_threads_per_sm,
            max_blocks_per_sm: facts.max_blocks_per_sm,
            shared_per_sm: facts.shared_per_sm_kib * 1024,
            reserved_shared_per_block: facts.reserved_shared_per_block,
            regs_per_sm: 65536,
            fp32_gflops,
            dram_gbs: dram_gbs
                .filter(|b| b.is_finite() && *b > 0.0)
                .unwrap_or(fp32_gflops / 15.0),
        })
    }

    /// The figures of an opened device: its SMs and clock, the per-SM limits of its arch
    /// (those of sm_90 for an arch this build does not know), and its memory bandwidth from
    /// [`crate::gpu::KNOWN_GPUS`] when its name is there.
    pub fn for_device(info: &DeviceInfo) -> Machine {
        let dram = known_gpu(&info.name).map(|g| g.dram_gbs);
        Machine::new(info.limits.sm, info.sms, info.clock_mhz, dram)
            .or_else(|| Machine::new(90, info.sms, info.clock_mhz, dram))
            .unwrap_or_else(|| unreachable_machine(info.sms))
    }

    /// The figures of the GPU called `name` (as a journal records it), from [`crate::gpu::KNOWN_GPUS`],
    /// with `sm` and `sms` overriding what the table says (and standing in for it when the
    /// name is unknown: then `sm` is needed, and the SM count defaults to 132).
    pub fn for_gpu(name: &str, sm: Option<i64>, sms: Option<u32>) -> Option<Machine> {
        let known = known_gpu(name);
        let sm = sm.or(known.map(|g| g.sm))?;
        let sms = sms.or(known.map(|g| g.sms)).unwrap_or(132);
        let clock = known.map_or(1500, |g| g.boost_mhz);
        Machine::new(sm, sms, clock, known.map(|g| g.dram_gbs))
    }
}

/// sm_90's figures, for the impossible case that the table lost it.
fn unreachable_machine(sms: u32) -> Machine {
    Machine {
        sms: sms.max(1),
        clock_mhz: 1500,
        max_threads_per_sm: 2048,
        max_blocks_per_sm: 32,
        shared_per_sm: 228 * 1024,
        reserved_shared_per_block: 1024,
        regs_per_sm: 65536,
        fp32_gflops: f64::from(sms.max(1)) * 128.0 * 2.0 * 1.5,
        dram_gbs: f64::from(sms.max(1)) * 25.0,
    }
}

/// What the model knows of one candidate on one shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Footprint {
    /// Its launch geometry.
    pub launch: Launch,
    /// Figures from the space file (static shared memory, `[model]`).
    pub hints: ModelHints,
}

/// The model's verdict on one candidate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Estimated time, milliseconds.
    pub time_ms: f64,
    /// Resident blocks per SM.
    pub blocks_per_sm: u32,
    /// Resident warps per SM over the most an SM can hold.
    pub occupancy: f64,
    /// Waves of blocks (`ceil(blocks / (blocks per SM x SMs))`).
    pub waves: u64,
    /// Blocks over the slots of all waves: 1 when the last wave is full.
    pub wave_efficiency: f64,
    /// Time the arithmetic (and shared-memory traffic) needs, milliseconds.
    pub compute_ms: f64,
    /// Time the memory traffic needs, milliseconds.
    pub memory_ms: f64,
}

/// Seconds to run `blocks` blocks of `work` units each, `per_sm` resident per SM at most: an
/// SM holding `r` blocks gets through `rate(r)` units per second, the device through `cap`.
/// Each wave also pays `fill_s` once: the latency before its blocks' first FMA and after their
/// last (the blocks resident together fill and drain at the same time).
fn schedule(
    blocks: u64,
    per_sm: u32,
    sms: u32,
    work: f64,
    rate: impl Fn(u32) -> f64,
    cap: f64,
    fill_s: f64,
) -> f64 {
    let slots = u64::from(per_sm) * u64::from(sms);
    let full = blocks / slots;
    let rem = blocks % slots;
    let wave = |r: u32, n: u64| (f64::from(r) * work / rate(r)).max(n as f64 * work / cap) + fill_s;
    let mut t = full as f64 * wave(per_sm, slots);
    if rem > 0 {
        let r = rem.div_ceil(u64::from(sms)) as u32;
        t += wave(r, rem);
    }
    t
}

/// Estimates the time of a kernel launched as `fp` computing `op` on `shape` on `machine`.
///
/// Generic defaults where the space file gives no `[model]` figure: registers per thread
/// `o + 4 sqrt(o) + 40` for gemm (`o` outputs per thread: accumulators, fragments and
/// addressing, as the warp-tiled spaces budget them) and 32 for gemv; global traffic the
/// compulsory bytes (each matrix once, plus the read-modify-write of every K split when the
/// output is accumulated atomically); 16 bytes in flight per thread for gemv.
pub fn estimate(op: Op, shape: Shape, fp: &Footprint, machine: &Machine) -> Estimate {
    let l = &fp.launch;
    let h = &fp.hints;
    let threads = (u64::from(l.block.0) * u64::from(l.block.1) * u64::from(l.block.2)).max(1);
    let blocks = (u64::from(l.grid.0) * u64::from(l.grid.1) * u64::from(l.grid.2)).max(1);
    let warps = threads.div_ceil(32);
    let (m, n, k) = (shape.m as f64, shape.n as f64, shape.k as f64);
    let sms = machine.sms.max(1);
    let peak = machine.fp32_gflops.max(1e-3) * 1e9;
    let bw = machine.dram_gbs.max(1e-3) * 1e9;

    // Work per thread (gemm): outputs of C per block and per thread. Grid z walks the products
    // of a batch (one per slot, up to the grid's limit) and, beyond them, splits of K, unless
    // the family says how many slices of K there are (a split along grid y).
    let products = shape.form.batch.max(1);
    let batch = products as f64;
    let split = match (op, h.k_splits) {
        (Op::Gemm, Some(s)) if s > 0 => (s as u64).min(blocks),
        (Op::Gemm, _) => {
            let z = u64::from(l.grid.2).max(1);
            (z / z.min(products)).max(1)
        }
        _ => 1,
    };
    let tiles = (blocks / split).max(1) as f64;
    // A block computes its whole tile, the rows and columns past C's edges included, where the
    // family says how large it is: a shape just past a multiple of the tile pays a whole tile
    // row or column more (tile quantization), not the share of C the ragged tiles hold.
    let area = match h.block_outputs {
        Some(b) if op == Op::Gemm && b > 0 => b as f64,
        _ => (m * n * batch / tiles).max(1.0),
    };
    let outputs = (area / threads as f64).max(1.0);

    let regs = h.registers.map(|r| r as f64).unwrap_or(match op {
        Op::Gemm => outputs + 4.0 * outputs.sqrt() + 40.0,
        Op::Gemv => 32.0,
    });
    // Registers are allocated per warp in units of 256: 8 per thread.
    let regs = ((regs.clamp(1.0, 255.0) / 8.0).ceil() * 8.0) as u64;
    let smem = u64::from(l.dynamic_shared_bytes)
        + h.static_shared_bytes.max(0) as u64
        + u64::from(machine.reserved_shared_per_block);
    let by_threads = u64::from(machine.max_threads_per_sm) / (warps * 32);
    let by_smem = u64::from(machine.shared_per_sm)
        .checked_div(smem)
        .unwrap_or(u64::MAX);
    let by_regs = u64::from(machine.regs_per_sm) / (regs * warps * 32);
    let per_sm = [
        u64::from(machine.max_blocks_per_sm),
        by_threads,
        by_smem,
        by_regs,
    ]
    .into_iter()
    .min()
    .unwrap_or(1)
    .clamp(1, 1024) as u32;
    let slots = u64::from(per_sm) * u64::from(sms);
    let waves = blocks.div_ceil(slots);
    let wave_efficiency = blocks as f64 / (waves * slots) as f64;
    let occupancy = (f64::from(per_sm) * (warps * 32) as f64
        / f64::from(machine.max_threads_per_sm.max(32)))
    .min(1.0);

    let zero_ms = if l.zero_output {
        LAUNCH_MS + 4.0 * m * n / bw * 1e3
    } else {
        0.0
    };
    let workspace = l.workspace_bytes.unwrap_or(0) as f64;
    let zero_ms = zero_ms
        + match l.workspace_bytes {
            Some(_) if l.workspace_zero == WorkspaceZero::EveryLaunch => {
                LAUNCH_MS + workspace / bw * 1e3
            }
            _ => 0.0,
        };
    // Written once and read once, beyond what the family's own figure says.
    let workspace_traffic = 2.0 * workspace;
    let (compute_s, memory_s) = match op {
        Op::Gemm => {
            // Compute: an SM's FMA rate, reduced when too few warps x independent FMAs hide
            // latency, and by the instructions a thread issues besides its o FMAs per k step:
            // about 2 sqrt(o) shared-memory loads of fragments and 4 of loop and addressing.
            let ilp = outputs.min(8.0);
            // A space whose inner loop does worse than this (no pipelining, more instructions
            // per FMA) says by how much; one on faster units (tensor cores) by how much better.
            let efficiency = h
                .fma_efficiency_pct
                .map_or(1.0, |p| (p as f64 / 100.0).clamp(0.01, 8.0));
            let issue = efficiency * outputs / (outputs + 2.0 * outputs.sqrt() + 4.0);
            let sm_rate = peak / f64::from(sms);
            let rate = |r: u32| {
                // Latency hiding saturates softly with the warps (x their independent FMAs, up
                // to 8) resident per SM: half the rate at 2 such warps, 80% at 8, 94% at 32.
                let p = f64::from(r) * warps as f64 * ilp / 8.0;
                sm_rate * p / (p + WARPS_TO_HIDE) * issue
            };
            let flops_per_block = 2.0 * area * (k / split as f64);
            // A wave waits for its first K tiles from memory and writes its C tiles at the end:
            // about two memory latencies no other resident block's FMAs hide.
            let compute = schedule(
                blocks,
                per_sm,
                sms,
                flops_per_block,
                rate,
                peak,
                2.0 * DRAM_LATENCY_S,
            );
            // Memory: every tile reads an A panel and a B panel (2 sqrt(area) x K floats)
            // through L2; device memory sees each matrix once (unless the space says more).
            // A workspace passes through L2 as well (written and read once).
            let l2_per_block =
                4.0 * 2.0 * area.sqrt() * (k / split as f64) + workspace_traffic / blocks as f64;
            let sm_l2 = L2_BYTES_PER_CLK_PER_SM * f64::from(machine.clock_mhz) * 1e6;
            let l2 = schedule(
                blocks,
                per_sm,
                sms,
                l2_per_block,
                |_| sm_l2,
                L2_OVER_DRAM * bw,
                0.0,
            );
            let atomics = if l.zero_output {
                8.0 * m * n * batch * split as f64
            } else {
                0.0
            };
            let dram = h
                .global_bytes
                .map(|b| b as f64)
                .unwrap_or(4.0 * (m * k + k * n + m * n) * batch + atomics + workspace_traffic);
            (compute, l2.max(dram / bw))
        }
        Op::Gemv => {
            let atomics = if l.zero_output { 8.0 * m } else { 0.0 };
            let bytes = h
                .global_bytes
                .map(|b| b as f64)
                .unwrap_or(4.0 * (m * k + k + m) + atomics + workspace_traffic);
            let in_flight = h.bytes_in_flight.map_or(16.0, |b| b.max(1) as f64);
            let share = SM_BANDWIDTH_SHARE * bw / f64::from(sms);
            let rate =
                |r: u32| (f64::from(r) * threads as f64 * in_flight / DRAM_LATENCY_S).min(share);
            let memory = schedule(blocks, per_sm, sms, bytes / blocks as f64, rate, bw, 0.0);
            (2.0 * m * k / peak, memory)
        }
    };
    // Compute and memory overlap, imperfectly: a smooth maximum (the 4-norm), so of two
    // candidates with the same arithmetic the one that moves less data ranks first.
    let busy_s = (compute_s.powi(4) + memory_s.powi(4)).powf(0.25);
    Estimate {
        time_ms: busy_s * 1e3 + LAUNCH_MS + zero_ms,
        blocks_per_sm: per_sm,
        occupancy,
        waves,
        wave_efficiency,
        compute_ms: compute_s * 1e3,
        memory_ms: memory_s * 1e3,
    }
}

/// The search's view of planned candidates: family, parameters and the model's estimate for
/// each `(config, launch)` of `planned` (in order), computing `op` on `shape` on `machine`.
/// Static shared memory and `[model]` figures come from the family's space in `catalog`
/// (a family it lacks, or figures it cannot evaluate, get the generic defaults). The tuner
/// passes its planned candidates (`tune::Planned`) as
/// `planned.iter().map(|p| (&p.config, &p.launch))`.
pub fn candidates<'a>(
    catalog: &Catalog,
    planned: impl IntoIterator<Item = (&'a Config, &'a Launch)>,
    op: Op,
    shape: Shape,
    limits: &Limits,
    machine: &Machine,
) -> Vec<Candidate> {
    planned
        .into_iter()
        .map(|(config, launch)| {
            let hints = catalog
                .get(&config.family)
                .ok()
                .and_then(|f| f.space.model_hints(config, shape, limits).ok())
                .unwrap_or_default();
            let fp = Footprint {
                launch: *launch,
                hints,
            };
            Candidate {
                family: config.family.clone(),
                params: config.params.clone(),
                estimate_ms: Some(estimate(op, shape, &fp, machine).time_ms),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h100() -> Machine {
        Machine::for_gpu("NVIDIA H100 80GB HBM3", None, None).unwrap()
    }

    fn launch(blocks: u32, threads: u32, smem: u32) -> Footprint {
        Footprint {
            launch: Launch {
                grid: (blocks, 1, 1),
                block: (threads, 1, 1),
                dynamic_shared_bytes: smem,
                zero_output: false,
                workspace_bytes: None,
                workspace_zero: WorkspaceZero::Once,
                interface: Default::default(),
            },
            hints: ModelHints::default(),
        }
    }

    const SQUARE: Shape = Shape::mnk(4096, 4096, 4096);

    #[test]
    fn machines_from_names_and_archs() {
        let m = h100();
        assert_eq!(
            (m.sms, m.max_threads_per_sm, m.shared_per_sm),
            (132, 2048, 228 * 1024)
        );
        assert!((m.fp32_gflops - 66908.16).abs() < 1e-6);
        assert_eq!(m.dram_gbs, 3350.0);
        assert_eq!(known_gpu("NVIDIA GeForce RTX 4060 Ti").unwrap().sms, 34);
        assert_eq!(known_gpu("NVIDIA GeForce RTX 4060").unwrap().sms, 24);
        assert_eq!(known_gpu("NVIDIA H200").unwrap().dram_gbs, 4800.0);
        let p = Machine::for_gpu("NVIDIA GeForce GTX 1080 Ti", None, None).unwrap();
        assert_eq!((p.sms, p.reserved_shared_per_block), (28, 0));
        assert!(Machine::for_gpu("Mystery GPU", None, None).is_none());
        let x = Machine::for_gpu("Mystery GPU", Some(89), Some(10)).unwrap();
        assert_eq!((x.sms, x.max_blocks_per_sm), (10, 24));
        assert!(Machine::new(42, 1, 1, None).is_none());
    }

    #[test]
    fn one_block_on_a_big_gpu_ranks_below_a_full_grid() {
        let m = h100();
        // The same 4096^3 product: one block of 256 threads vs 1024 blocks of 128x128 tiles.
        let one = estimate(Op::Gemm, SQUARE, &launch(1, 256, 32 * 1024), &m);
        let full = estimate(Op::Gemm, SQUARE, &launch(1024, 256, 32 * 1024), &m);
        assert!(one.time_ms > 50.0 * full.time_ms, "{one:?} vs {full:?}");
        assert_eq!(one.waves, 1);
        assert!(one.wave_efficiency < 0.01);
        // Close to the FP32 peak, not above it.
        let ideal_ms = SQUARE.flops() / (m.fp32_gflops * 1e9) * 1e3;
        assert!(
            full.time_ms >= ideal_ms && full.time_ms < 3.0 * ideal_ms,
            "{full:?}"
        );
    }

    #[test]
    fn a_wave_quantized_grid_ranks_below_a_full_last_wave() {
        let m = h100();
        // 200 KiB of shared memory: one block per SM, 132 slots. 132 blocks fill one wave;
        // 133 blocks of (slightly) less work each need a second wave for one block.
        let shape = Shape::mnk(132 * 128, 256, 4096);
        let even = estimate(Op::Gemm, shape, &launch(132, 256, 200 * 1024), &m);
        let ragged = estimate(Op::Gemm, shape, &launch(133, 256, 200 * 1024), &m);
        assert_eq!((even.blocks_per_sm, even.waves, ragged.waves), (1, 1, 2));
        assert!(even.wave_efficiency == 1.0 && ragged.wave_efficiency < 0.51);
        assert!(
            ragged.time_ms > 1.5 * even.time_ms,
            "{ragged:?} vs {even:?}"
        );
    }

    #[test]
    fn occupancy_follows_threads_shared_memory_and_registers() {
        let m = h100();
        let e = estimate(Op::Gemm, SQUARE, &launch(4096, 256, 0), &m);
        // 16 outputs per thread: 16 + 16 + 40 = 72 registers -> 3 blocks of 256 by registers.
        assert_eq!(e.blocks_per_sm, 3);
        let e = estimate(Op::Gemm, SQUARE, &launch(4096, 128, 100 * 1024), &m);
        assert_eq!(e.blocks_per_sm, 2);
        let mut fp = launch(4096, 128, 0);
        fp.hints.registers = Some(255);
        assert_eq!(estimate(Op::Gemm, SQUARE, &fp, &m).blocks_per_sm, 2);
        fp.hints.static_shared_bytes = 120 * 1024;
        assert_eq!(estimate(Op::Gemm, SQUARE, &fp, &m).blocks_per_sm, 1);
    }

    #[test]
    fn gemm_prefers_bigger_thread_tiles_and_gemv_enough_parallelism() {
        let m = h100();
        // One thread per output (16x16 blocks) vs 64 outputs per thread (128x128, 256 threads).
        let tiny = estimate(Op::Gemm, SQUARE, &launch(65536, 256, 2048), &m);
        let big = estimate(Op::Gemm, SQUARE, &launch(1024, 256, 32 * 1024), &m);
        assert!(tiny.time_ms > 4.0 * big.time_ms, "{tiny:?} vs {big:?}");

        let v = Shape::mnk(4096, 1, 4096);
        // A warp per row (4096 blocks of 32) vs a thread per row (64 blocks of 64).
        let warp_rows = estimate(Op::Gemv, v, &launch(4096, 32, 0), &m);
        let thread_rows = estimate(Op::Gemv, v, &launch(64, 64, 0), &m);
        assert!(thread_rows.time_ms > 5.0 * warp_rows.time_ms);
        let ideal_ms = v.min_bytes(Op::Gemv) / (m.dram_gbs * 1e9) * 1e3;
        assert!(warp_rows.time_ms >= ideal_ms && warp_rows.time_ms < 2.0 * ideal_ms + 0.01);
    }

    #[test]
    fn a_less_efficient_family_and_more_waves_of_short_k_rank_lower() {
        let m = h100();
        let plain = estimate(Op::Gemm, SQUARE, &launch(1024, 256, 32 * 1024), &m);
        let mut fp = launch(1024, 256, 32 * 1024);
        fp.hints.fma_efficiency_pct = Some(80);
        let slow = estimate(Op::Gemm, SQUARE, &fp, &m);
        assert!(
            slow.compute_ms > 1.2 * plain.compute_ms,
            "{slow:?} vs {plain:?}"
        );
        // Each wave pays its fill and drain once, however many blocks it holds: 8 full
        // waves plus a partial one of 4 blocks per SM.
        let (work, rate, fill) = (1.0, |r: u32| f64::from(r) * 0.5, 1e-3);
        let bare = schedule(132 * 4 * 8 + 100, 4, 132, work, rate, f64::INFINITY, 0.0);
        let filled = schedule(132 * 4 * 8 + 100, 4, 132, work, rate, f64::INFINITY, fill);
        assert!(
            (filled - bare - 9.0 * fill).abs() < 1e-12,
            "{filled} vs {bare}"
        );
    }

    #[test]
    fn workspace_traffic_and_per_launch_zeroing_cost_time() {
        let m = h100();
        // Split-K on a small output with a long K: 16 tiles x 16 splits of 64x64.
        let shape = Shape::mnk(256, 256, 16384);
        let mut fp = launch(16, 128, 48 * 1024);
        fp.launch.grid.2 = 16;
        let bare = estimate(Op::Gemm, shape, &fp, &m);
        // Partials of 16 splits x 256 x 256 floats (4 MiB) plus a counter per tile, written
        // and read once: more memory time, and no less in all.
        let ws = 4 * 16 * 256 * 256 + 4 * 16;
        fp.launch.workspace_bytes = Some(ws);
        let once = estimate(Op::Gemm, shape, &fp, &m);
        // (The tiles' panels already pass 128 MiB through L2: 8 MiB more is ~6%.)
        assert!(
            once.memory_ms > 1.05 * bare.memory_ms,
            "{once:?} vs {bare:?}"
        );
        assert!(once.time_ms > bare.time_ms, "{once:?} vs {bare:?}");
        assert_eq!(once.compute_ms, bare.compute_ms);
        let base = 4.0 * (256.0 * 16384.0 * 2.0 + 256.0 * 256.0);
        fp.launch.workspace_zero = WorkspaceZero::EveryLaunch;
        let every = estimate(Op::Gemm, shape, &fp, &m);
        let zeroing = LAUNCH_MS + ws as f64 / (m.dram_gbs * 1e9) * 1e3;
        assert!(
            (every.time_ms - once.time_ms - zeroing).abs() < 1e-12,
            "{every:?} vs {once:?}"
        );
        // A family's own global_bytes figure replaces the device-memory traffic, workspace
        // included: a huge figure is taken as is.
        fp.launch.workspace_zero = WorkspaceZero::Once;
        fp.hints.global_bytes = Some(1000 * base as i64);
        let hinted = estimate(Op::Gemm, shape, &fp, &m);
        let dram_ms = 1000.0 * base / (m.dram_gbs * 1e9) * 1e3;
        assert!((hinted.memory_ms - dram_ms).abs() < 1e-12, "{hinted:?}");
    }

    #[test]
    fn candidates_carry_an_estimate_for_every_planned_config() {
        let cat = Catalog::builtin().unwrap();
        let limits = Limits::for_arch(90).unwrap();
        let shape = Shape::mnk(2048, 2048, 2048);
        let (_, planned) = crate::plan::plan(&cat, Op::Gemm, shape, &limits, &[]).unwrap();
        let space = candidates(
            &cat,
            planned.iter().map(|p| (&p.config, &p.launch)),
            Op::Gemm,
            shape,
            &limits,
            &h100(),
        );
        assert_eq!(space.len(), planned.len());
        assert!(space
            .iter()
            .all(|c| c.estimate_ms.is_some_and(|e| e.is_finite() && e > 0.0)));
        // The one-thread-per-output family is ranked below the best warp-tiled config.
        let best_of = |fam: &str| {
            space
                .iter()
                .filter(|c| c.family == fam)
                .filter_map(|c| c.estimate_ms)
                .fold(f64::INFINITY, f64::min)
        };
        assert!(best_of("gemm_tiled") > 2.0 * best_of("gemm_warptile"));
    }

    #[test]
    fn a_block_computes_its_whole_tile_and_a_batch_all_its_products() {
        let m = h100();
        // 128 x 128 tiles over N = 16384 (128 columns), K = 4096, one block per SM: 256 rows
        // fill 2 tile rows (2 waves), 261 rows need a third, mostly empty one (3 waves), which
        // computes whole tiles all the same.
        let tiled = |rows: u32| {
            let mut fp = launch(rows.div_ceil(128) * 128, 256, 64 * 1024);
            fp.hints.block_outputs = Some(128 * 128);
            fp
        };
        let mnk = |rows: u32| Shape::mnk(rows.into(), 16384, 4096);
        let at = estimate(Op::Gemm, mnk(256), &tiled(256), &m);
        let past = estimate(Op::Gemm, mnk(261), &tiled(261), &m);
        assert_eq!((at.waves, past.waves), (2, 3));
        assert!(past.compute_ms > 1.4 * at.compute_ms, "{past:?} vs {at:?}");
        // Without the figure a block computes its share of C: about the same work in all.
        let share = |rows: u32| {
            let fp = launch(rows.div_ceil(128) * 128, 256, 64 * 1024);
            estimate(Op::Gemm, mnk(rows), &fp, &m)
        };
        assert!(share(261).compute_ms < 1.1 * share(256).compute_ms);
        // A strided batch of 8 (grid z walks the products): each block still reduces the
        // whole K, so 8 products take about 8 times one, not one split 8 ways.
        let shape = mnk(256);
        let mut batched = tiled(256);
        batched.launch.grid.2 = 8;
        let mut shape8 = shape;
        shape8.form.batch = 8;
        let one = estimate(Op::Gemm, shape, &tiled(256), &m);
        let eight = estimate(Op::Gemm, shape8, &batched, &m);
        assert!(
            eight.compute_ms > 6.0 * one.compute_ms,
            "{eight:?} vs {one:?}"
        );
    }

    #[test]
    fn a_split_along_grid_y_is_a_split_of_k_where_the_family_says_so() {
        let m = h100();
        // 4 tiles of 128 x 128 over 256 x 256, K = 16384 cut into 16 slices: 64 blocks, each a
        // whole tile over a sixteenth of K.
        let shape = Shape::mnk(256, 256, 16384);
        let mut along_z = launch(4, 256, 64 * 1024);
        along_z.launch.grid.2 = 16;
        along_z.hints.block_outputs = Some(128 * 128);
        let mut along_y = launch(4, 256, 64 * 1024);
        along_y.launch.grid.1 = 16;
        along_y.hints.block_outputs = Some(128 * 128);
        let z = estimate(Op::Gemm, shape, &along_z, &m);
        let unsaid = estimate(Op::Gemm, shape, &along_y, &m);
        // Unsaid, a y split is taken as 64 tiles, each over the whole K: 16 times the work.
        assert!(
            unsaid.compute_ms > 8.0 * z.compute_ms,
            "{unsaid:?} vs {z:?}"
        );
        along_y.hints.k_splits = Some(16);
        let y = estimate(Op::Gemm, shape, &along_y, &m);
        assert!((y.time_ms - z.time_ms).abs() < 1e-12, "{y:?} vs {z:?}");
        // A figure past the blocks there are is held to them.
        along_y.hints.k_splits = Some(1 << 40);
        let capped = estimate(Op::Gemm, shape, &along_y, &m);
        assert!(capped.time_ms.is_finite() && capped.time_ms > 0.0);
    }
}
