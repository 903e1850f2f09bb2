//! Every kernel family validated without a GPU: each kernel, instantiated as the tuner
//! instantiates it, is compiled as C++ against a CPU emulation of the CUDA it uses
//! (`tests/emu/`: a block's threads as fibers switched where they wait, in a seeded shuffled
//! order, blocks one at a time in a shuffled order, shared memory poisoned for every block,
//! warp-level calls that check their masks, queued cp.async copies) under AddressSanitizer and
//! UBSan, run on the op's edge shapes (and, for the families of the full interface, on every
//! layout, padded leading dimensions, beta and batches), and its output judged like a GPU run's:
//! against the float64 reference within the tolerance, the padding between C's rows untouched,
//! and a kernel whose workspace is zeroed `once` launched twice on it, both outputs passing and
//! bit-identical. An access outside a buffer, a misaligned float4, float2, cp.async or red.v4,
//! a shuffle mask that does not hold, a deadlock and a hang (past the watchdog,
//! `AUTOTUNE_EMU_WATCHDOG` seconds, default 600) fail the run, naming the kernel.
//!
//! This checks indexing, edges, races within a block and block-level protocols (split-K and
//! stream-K fix-ups) on every machine CI runs on; it cannot see what only a GPU shows (timing,
//! the memory model of concurrent blocks, the hardware's own checks), which the GPU tests
//! cover. The mutant tests plant each kind of fault in real templates and require that
//! validation or the check meant for it stops the run (a mutant that does not compile fails
//! the test).
//!
//! Needs g++ (C++20), so each test is `#[ignore = "needs g++: ..."]`: a plain `cargo test`
//! lists them as ignored; scripts/test.sh (CI) runs them (`cargo test --release --test emulate
//! -- --ignored`), and without g++ they fail. `AUTOTUNE_EMU_FAMILY=name` runs one family;
//! `AUTOTUNE_EMU_SEED=n` sets the seed of the blocks' and threads' order (default 1; 0:
//! ascending), which every failure names.

mod common;
mod emu;

use autotune::family::catalog::{Catalog, Family};
use autotune::family::space::{Config, Interface, Limits};
use autotune::problem::{Form, Layout, Op, Shape};
use autotune::tuning::sweep;
use emu::{caught, check, check_with, require_gxx, Catch, Emulation, Failure};
use rayon::prelude::*;
use std::time::Duration;

/// A form of the full interface (alpha != 1 always, so the scaling is checked too).
fn full(layout: Layout, padded: bool, beta: bool, batch: u64) -> Form {
    Form {
        layout,
        padded,
        beta,
        scaled: true,
        batch,
    }
}

fn s(m: u64, n: u64, k: u64) -> Shape {
    Shape::mnk(m, n, k)
}

/// Whether `family`'s space offers a config on `shape` (for sm_90).
fn offers(family: &Family, shape: Shape) -> bool {
    common::offered(family, shape, &Limits::for_arch(90).unwrap()).unwrap_or(false)
}

/// The problems each family runs on: the op's edges; GEMV-shaped families' few rows or
/// columns; the full interface's layouts, padding, beta and batches (for a family offered
/// only on few rows or columns, also on a problem where it is offered).
fn problems(family: &Family) -> Vec<Shape> {
    let op = family.space.op;
    // Edges of every kind (1x1x1, sizes 2^k +- 1, odd and prime sizes, few rows or columns,
    // long K), with grids of at most a few thousand blocks: the emulator pays per block, so
    // `autotune verify`'s 2049x2047x1 and 100000x3 (up to 200,000 blocks) stay on the GPU.
    let mut v = match op {
        Op::Gemm => vec![
            s(1, 1, 1),
            s(3, 5, 7),
            s(33, 65, 129),
            s(130, 7, 1001),
            s(257, 131, 37),
            s(1, 37, 300),
            s(8, 130, 77),
            s(130, 3, 99),
            // Rows of 16-byte multiples: the vectorised paths, interior and edge tiles.
            s(96, 128, 64),
            s(200, 136, 260),
        ],
        Op::Gemv => vec![
            s(1, 1, 1),
            s(3, 1, 5),
            s(33, 1, 129),
            s(1000, 1, 999),
            s(17, 1, 10_001),
            s(3000, 1, 3),
            s(256, 1, 512),
        ],
    };
    if family.space.interface == Interface::Full {
        let layouts: &[Layout] = match op {
            Op::Gemm => &[Layout::Nn, Layout::Nt, Layout::Tn, Layout::Tt],
            Op::Gemv => &[Layout::Nn, Layout::Tn],
        };
        for (i, &l) in layouts.iter().enumerate() {
            let base = match op {
                Op::Gemm => s(67, 45, 93),
                Op::Gemv => s(67, 1, 93),
            };
            let forms = [
                full(l, i % 2 == 1, i >= 1, 1),
                full(l, i % 2 == 0, i != 1, 3),
            ];
            let mut bases = vec![base];
            if op == Op::Gemm && !offers(family, base.with_form(forms[0])) {
                bases.extend(
                    [s(7, 45, 93), s(67, 7, 93)]
                        .into_iter()
                        .find(|b| offers(family, b.with_form(forms[0]))),
                );
            }
            for b in bases {
                for f in forms {
                    v.push(b.with_form(f));
                }
            }
        }
    }
    v
}

/// Valid configs of `family` on `shape` that between them take every value each parameter
/// takes among the valid ones (greedy: each next config adds the most values not yet taken).
fn covering(family: &Family, shape: Shape, limits: &Limits) -> Vec<Config> {
    let valid = family.space.prune(shape, limits).unwrap().valid;
    let mut left: std::collections::BTreeSet<(String, i64)> = valid
        .iter()
        .flat_map(|c| c.params.iter().map(|(k, v)| (k.clone(), *v)))
        .collect();
    let mut out: Vec<Config> = Vec::new();
    while !left.is_empty() {
        let gain = |c: &Config| {
            c.params
                .iter()
                .filter(|(k, v)| left.contains(&((*k).clone(), **v)))
                .count()
        };
        let Some(best) = valid.iter().max_by_key(|c| gain(c)) else {
            break;
        };
        for (k, v) in &best.params {
            left.remove(&(k.clone(), *v));
        }
        out.push(best.clone());
    }
    out
}

#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn every_family_validates_on_edge_shapes_in_the_emulator() {
    require_gxx();
    let catalog = Catalog::builtin().unwrap();
    let limits = Limits::for_arch(90).unwrap();
    let only = std::env::var("AUTOTUNE_EMU_FAMILY").ok();
    let mut jobs = Vec::new();
    for family in catalog.families() {
        if only.as_deref().is_some_and(|o| o != family.name()) {
            continue;
        }
        let ends = sweep::family_ends(family, &limits).unwrap();
        assert!(!ends.is_empty(), "{}: no config to emulate", family.name());
        // Templates with an sm_80+ path (cp.async) also run their older archs' path (the GTX
        // 1080 Ti's) on a few problems, unless the family is not offered there (tensor cores).
        let older = family.inlined.contains("__CUDA_ARCH__")
            && !sweep::family_ends(family, &Limits::for_arch(61).unwrap())
                .unwrap()
                .is_empty();
        let problems = problems(family);
        for (i, &shape) in problems.iter().enumerate() {
            // The ends of what the space offers on this problem (a layout may open parameters
            // others do not), else the family's.
            let here = sweep::space_ends(family, shape, &limits).unwrap();
            for config in if here.is_empty() { &ends } else { &here } {
                jobs.push((family, config.clone(), shape, 900));
                if older && i % 3 == 2 {
                    jobs.push((family, config.clone(), shape, 610));
                }
            }
        }
        // Every value of every parameter on one problem of each layout: one with 16-byte rows
        // (padded leading dimensions for the full interface, with beta and two products),
        // interior tiles up to 256 x 256 (the unchecked copies) and edge tiles in M, N and K.
        let mut layouts = Vec::new();
        for p in &problems {
            if !layouts.contains(&p.form.layout) {
                layouts.push(p.form.layout);
            }
        }
        for layout in layouts {
            let form = if family.space.interface == Interface::Full {
                full(layout, true, true, 2)
            } else {
                Form::default()
            };
            // The first problem the family is offered on: families for few rows or a short
            // K sit the square one out.
            let candidates = match family.space.op {
                Op::Gemm => vec![s(520, 264, 152), s(13, 520, 152), s(520, 264, 7)],
                Op::Gemv => vec![s(520, 1, 152)],
            };
            let offered = candidates
                .into_iter()
                .map(|c| c.with_form(form))
                .find(|&c| offers(family, c));
            let Some(shape) = offered else { continue };
            for config in covering(family, shape, &limits) {
                jobs.push((family, config, shape, 900));
            }
        }
    }
    let failures: Vec<String> = jobs
        .par_iter()
        .filter_map(|(family, config, shape, arch)| {
            let op = family.space.op;
            check(family, config, *shape, *arch).err().map(|e| {
                format!(
                    "{} {} on {} (__CUDA_ARCH__ {arch}): {e}",
                    family.name(),
                    autotune::family::space::params_label(&config.params),
                    shape.label(op)
                )
            })
        })
        .collect();
    println!(
        "emulated {} (config, problem) pairs, {} failed; {}",
        jobs.len(),
        failures.len(),
        emu::TALLY.lock().unwrap().summary()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// gemv_warp_row's early exit (`if (row >= M) return;`, warp-uniform) made `to`, on 37 rows.
fn at_warp_row_exit(to: &'static str, by: Catch) -> Mutant {
    mutant("gemv_warp_row", "if (row >= M) return;", to, s(37, 1, 100)).by(by)
}

/// A deadlocked block fails at once, naming the kernel and where its threads wait: lane 0 of
/// each warp waits at a block barrier while the other lanes wait for it at the warp's shuffle.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn a_deadlocked_kernel_fails_at_once_saying_where_threads_wait() {
    require_gxx();
    let catalog = Catalog::builtin().unwrap();
    let m = at_warp_row_exit(
        "if (row >= M) return; if (lane == 0) __syncthreads();",
        Catch::Check("deadlock"),
    );
    let report = m
        .run(&catalog, Emulation::new(900))
        .unwrap_or_else(|e| panic!("{e}"));
    for what in [
        "gemv_warp_row_",
        "thread 0 at __syncthreads",
        "thread 1 at __shfl_xor_sync with mask 0xffffffff",
    ] {
        assert!(report.contains(what), "{what:?} not in {report}");
    }
}

/// A kernel that never returns (threads spinning on a flag no one sets) fails within the
/// watchdog's limit, naming the kernel, instead of hanging the test.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn a_hung_kernel_fails_within_the_watchdog_with_its_name() {
    require_gxx();
    let catalog = Catalog::builtin().unwrap();
    let m = at_warp_row_exit(
        "if (row >= M) return; for (volatile int spin = 1; spin;) {}",
        Catch::Check("watchdog"),
    );
    let emu = Emulation {
        watchdog: Duration::from_secs(20),
        ..Emulation::new(900)
    };
    let start = std::time::Instant::now();
    let report = m.run(&catalog, emu).unwrap_or_else(|e| panic!("{e}"));
    assert!(report.contains("gemv_warp_row_"), "{report}");
    // Compiling is not timed by the watchdog: only the run is cut at the limit.
    println!(
        "{report} (after {:.1} s in all)",
        start.elapsed().as_secs_f64()
    );
}

/// A fault planted in a family: `from` replaced with `to` in its source (includes inlined),
/// run on `shape` for `__CUDA_ARCH__` `arch` with the last config the space offers there that
/// has the `want`ed parameter value (the most split, where a family has splits, so the
/// workspace is used); `by` says what must stop it.
struct Mutant {
    family: &'static str,
    from: &'static str,
    to: &'static str,
    shape: Shape,
    arch: u32,
    want: Option<(&'static str, i64)>,
    by: Catch,
}

/// [`Mutant`] with the common defaults (sm_90, any config).
fn mutant(family: &'static str, from: &'static str, to: &'static str, shape: Shape) -> Mutant {
    Mutant {
        family,
        from,
        to,
        shape,
        arch: 900,
        want: None,
        by: Catch::Validation,
    }
}

impl Mutant {
    fn by(self, by: Catch) -> Self {
        Mutant { by, ..self }
    }
    fn want(self, param: &'static str, value: i64) -> Self {
        Mutant {
            want: Some((param, value)),
            ..self
        }
    }
    fn arch(self, arch: u32) -> Self {
        Mutant { arch, ..self }
    }
    fn label(&self) -> String {
        format!("{} with {:?}", self.family, self.to)
    }

    /// The family's config for the mutant, checked to pass unmutated, and the mutated family.
    fn plant(&self, catalog: &Catalog, emu: Emulation) -> Result<(Config, Family), String> {
        let limits = Limits::for_arch(90).unwrap();
        let family = catalog.get(self.family).unwrap();
        let op = family.space.op;
        let valid = family.space.prune(self.shape, &limits).unwrap().valid;
        let config = valid
            .into_iter()
            .rev()
            .find(|c| self.want.is_none_or(|(k, v)| c.params.get(k) == Some(&v)))
            .ok_or_else(|| {
                format!(
                    "{}: no valid config on {}",
                    self.family,
                    self.shape.label(op)
                )
            })?;
        check_with(family, &config, self.shape, emu)
            .map_err(|e| format!("{} unmutated on {}: {e}", self.family, self.shape.label(op)))?;
        if !family.inlined.contains(self.from) {
            return Err(format!("{} no longer holds {:?}", self.family, self.from));
        }
        let mut mutated = family.clone();
        mutated.inlined = family.inlined.replace(self.from, self.to);
        Ok((config, mutated))
    }

    /// Runs the mutant as `emu` says: what stopped it, or why it is not caught as it must be.
    fn run(&self, catalog: &Catalog, emu: Emulation) -> Result<String, String> {
        let (config, mutated) = self.plant(catalog, emu)?;
        caught(check_with(&mutated, &config, self.shape, emu), self.by)
            .map_err(|e| format!("{}: {e}", self.label()))
    }
}

/// Runs each mutant (in parallel) and fails the test with every one not caught as it must be.
fn all_caught(mutants: &[Mutant]) {
    let catalog = Catalog::builtin().unwrap();
    let failures: Vec<String> = mutants
        .par_iter()
        .filter_map(|m| match m.run(&catalog, Emulation::new(m.arch)) {
            Ok(report) => {
                // The check's own line, else the first.
                let line = match m.by {
                    Catch::Check(what) => report.lines().find(|l| l.contains(what)),
                    Catch::Validation => None,
                };
                let line = line.or(report.lines().next()).unwrap_or_default();
                println!("{} caught ({:?}): {}", m.label(), m.by, line.trim());
                None
            }
            Err(e) => Some(e),
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The tensor-core family's own faults fail validation: A's fragment read with its row and k
/// offsets swapped (a wrong fragment mapping), and a product without its small_a * big_b term
/// (the error of TF32, about 2^-11, where FP32's is asked for; short K, so it shows).
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn tf32x3_faults_are_caught() {
    require_gxx();
    let shape = s(64, 64, 32);
    all_caught(&[
        mutant(
            "gemm_tf32x3",
            "(kk + t + (r >> 1) * 4) * AS_LD + i * 16 + (r & 1) * 8",
            "(kk + t + (r & 1) * 4) * AS_LD + i * 16 + (r >> 1) * 8",
            shape,
        ),
        mutant("gemm_tf32x3", "mma_tf32(t, a_small[i], b_big);", "", shape),
    ]);
}

/// The wgmma family's faults are caught: a tile stored with the 128-byte swizzle's row term
/// wrong (the descriptors read another layout), a product without its big_a * small_b term, a K
/// tile's chain not started from 0 (the previous tile's sums added twice) fail validation; the
/// wait for a tile's wgmma dropped (its sums read while in flight) is stopped by the emulator,
/// as the threads return with wgmma never waited for. Not here: a ring slot
/// split before its copies arrive. Its first read of each block finds the poison, a NaN, which
/// sends the block to the FP32 recomputation and so gives right results; the shuffled-order
/// and poison tests of the emulator cover cp.async waits in the other families.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn tf32x3_wgmma_faults_are_caught() {
    require_gxx();
    let shape = s(128, 128, 96);
    let family = "gemm_tf32x3_wgmma";
    all_caught(&[
        mutant(family, "(r & 7) : ((r >> 1) & 3)", "(r & 3) : ((r >> 1) & 3)", shape)
            .want("BK", 32),
        mutant(
            family,
            "WGMMA(tile_acc, wgmma_desc<ROW_BYTES>(a_big + 4 * kk),\n                      wgmma_desc<ROW_BYTES>(b_small + 4 * kk), 1);",
            "",
            shape,
        ),
        mutant(
            family,
            "(b_big + 4 * kk), kk > 0 || kt % CHAIN != 0);",
            "(b_big + 4 * kk), 1);",
            shape,
        ),
        mutant(family, "wgmma_wait<0>();", "", shape).by(Catch::Check("not waited for")),
    ]);
}

/// gemm_tf32x3_wgmma_pipe (one wgmma chain over CHAIN K tiles, three stages): a chain restarted
/// at every tile, and a chain never added into the FP32 sums before the last tile, drop earlier
/// tiles' products; two stages under the deeper pipeline let a tile's split overwrite the
/// stage a wgmma still in flight reads; with EARLY, loads never issued for the tile after next
/// leave the registers holding the tile before. Validation stops all four.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn tf32x3_wgmma_pipe_faults_are_caught() {
    require_gxx();
    // Three K tiles of 32: chains of two tiles and one (CHAIN 2) or one of three (CHAIN 4).
    let shape = s(128, 128, 96);
    let family = "gemm_tf32x3_wgmma_pipe";
    all_caught(&[
        mutant(family, "kk > 0 || kt % CHAIN != 0);", "kk > 0);", shape).want("BK", 32),
        mutant(
            family,
            "if (kt % CHAIN != CHAIN - 1 && more) {",
            "if (more) {",
            shape,
        )
        .want("CHAIN", 2),
        mutant(family, "#define STAGES 3", "#define STAGES 2", shape).want("BK", 32),
        mutant(
            family,
            "if (RING == 0 && kt + 2 < num_tiles) read(kt + 2);",
            "",
            shape,
        )
        .want("EARLY", 1),
    ]);
}

/// gemm_tf32x3_wgmma_promote (a K tile's small terms issued before its big products, chains of
/// one or two tiles): a tile's last big product dropped, a chain of two restarted at its second
/// tile (the first tile lost), and a chain of one never restarted (each tile's sums added into
/// the FP32 ones again with every later tile) fail validation; so do, in its split-K variant
/// (gemm_tf32x3_wgmma_promote_splitk), a dropped big product and a reduction without the last
/// split.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn tf32x3_wgmma_promote_faults_are_caught() {
    require_gxx();
    // Five K tiles of 32: chains of two tiles and one (CHAIN 2), or five of one.
    let shape = s(64, 128, 160);
    let family = "gemm_tf32x3_wgmma_promote";
    all_caught(&[
        mutant(
            family,
            "for (int kk = 0; kk < BK; kk += 8)\n                    WGMMA(",
            "for (int kk = 0; kk < BK - 8; kk += 8)\n                    WGMMA(",
            shape,
        ),
        mutant(family, "kk > 0 || kt % CHAIN != 0);", "kk > 0);", shape).want("CHAIN", 2),
        mutant(family, "kk > 0 || kt % CHAIN != 0);", "1);", shape).want("CHAIN", 1),
        mutant(
            "gemm_tf32x3_wgmma_promote_splitk",
            "for (int kk = 0; kk < BK; kk += 8)\n                    WGMMA(",
            "for (int kk = 0; kk < BK - 8; kk += 8)\n                    WGMMA(",
            s(128, 192, 256),
        ),
        mutant(
            "gemm_tf32x3_wgmma_promote_splitk",
            "for (int z = 0; z < splits; ++z) {",
            "for (int z = 0; z < splits - 1; ++z) {",
            s(128, 192, 256),
        )
        .want("SPLIT_K", 3),
    ]);
}

/// gemm_tf32x3_wgmma_splitk (K cut into chunks across grid y, the partial sums reduced by the
/// last split to count in): a reduction that leaves out the last split, and chunks that all
/// start at k = 0, fail validation.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn tf32x3_wgmma_splitk_faults_are_caught() {
    require_gxx();
    // Eight K tiles of 32: three splits of 96, 96 and 64.
    let shape = s(128, 192, 256);
    let family = "gemm_tf32x3_wgmma_splitk";
    all_caught(&[
        mutant(
            family,
            "for (int z = 0; z < splits; ++z) {",
            "for (int z = 0; z < splits - 1; ++z) {",
            shape,
        )
        .want("SPLIT_K", 3),
        mutant(
            family,
            "SPLIT_K_BATCH_RANGE(ks)",
            "SPLIT_K_BATCH_RANGE(ks * 0)",
            shape,
        )
        .want("SPLIT_K", 2),
    ]);
}

/// gemm_tf32x3_wgmma_rs (A split in registers): a dropped small term and an A fragment read
/// from the wrong row fail validation; A's registers split anew before the wait that retires
/// the wgmma reading them (the tensor cores read registers asynchronously) is stopped by the
/// emulator.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn tf32x3_wgmma_rs_faults_are_caught() {
    require_gxx();
    let shape = s(128, 128, 96);
    let family = "gemm_tf32x3_wgmma_rs";
    all_caught(&[
        mutant(
            family,
            "WGMMA_RS(tile_acc, a_big[j], wgmma_desc<ROW_BYTES>(b_small + 32 * j), 1);",
            "",
            shape,
        ),
        mutant(
            family,
            "ta.at(s, row0 + 8, 8 * j + kt0 + 4)",
            "ta.at(s, row0, 8 * j + kt0 + 4)",
            shape,
        ),
        mutant(
            family,
            "wgmma_wait<0>();\n#pragma unroll\n            for (int i = 0; i < WN / 2; ++i) acc[i] += tile_acc[i];\n            if (more) split_a();",
            "if (more) split_a();\n            wgmma_wait<0>();\n#pragma unroll\n            for (int i = 0; i < WN / 2; ++i) acc[i] += tile_acc[i];",
            shape,
        )
        .by(Catch::Check("changed before the wgmma.wait_group")),
    ]);
}

/// gemm_tf32x3_wgmma_cols (B of NN read by columns, A of TN and TT too): a lane's chunk stored
/// into the next chunk of its row, or its third k read from the second's row, fails
/// validation, on NN (B by columns) and TT (A by columns).
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn tf32x3_wgmma_cols_faults_are_caught() {
    require_gxx();
    let family = "gemm_tf32x3_wgmma_cols";
    let tt = Shape::parse(Op::Gemm, "128x128x96:tt").unwrap();
    all_caught(&[
        mutant(
            family,
            "(tid & 31), u % KQ, v[i], finite);",
            "(tid & 31), (u + 1) % KQ, v[i], finite);",
            s(128, 128, 96),
        ),
        mutant(family, "__ldg(p + 2 * (long long)ld)", "__ldg(p + ld)", tt),
    ]);
}

/// gemm_tf32x3_wgmma_trunc (each value's big part truncated): a small part left at zero
/// (TRUNC 2), and a big part kept whole so that the rest is zero and the tensor cores drop its
/// low bits (TRUNC 1), fail validation, as does the latter in the plain-layout family that reads
/// B by columns (gemm_tf32x3_wgmma_cols_trunc). So do the unchecked reads of tiles inside the
/// matrices (FASTLOAD 1 and 2) with a piece of a k-contiguous row taken from the next chunk, or
/// a column read from the next chunk of k.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn tf32x3_wgmma_trunc_faults_are_caught() {
    require_gxx();
    let shape = s(64, 128, 160);
    let whole = "big = __float_as_uint(x);";
    // A piece of a k-contiguous row read from the next chunk, in the unchecked reads.
    let (row_piece, next_chunk) = (
        "* ld + k0 + 4 * (c % KQ)));",
        "* ld + k0 + 4 * ((c + 1) % KQ)));",
    );
    all_caught(&[
        mutant(
            "gemm_tf32x3_wgmma_trunc",
            "small = rest;",
            "small = 0u;",
            shape,
        )
        .want("TRUNC", 2),
        mutant(
            "gemm_tf32x3_wgmma_trunc",
            "big = __float_as_uint(x) & 0xffffe000u;",
            whole,
            shape,
        )
        .want("TRUNC", 1),
        mutant(
            "gemm_tf32x3_wgmma_cols_trunc",
            "big = __float_as_uint(x) & 0xffffe000u;",
            whole,
            s(128, 128, 96),
        )
        .want("TRUNC", 1),
        // NN: the row pieces are A's alone (on NT both operands' k would move alike, leaving
        // every dot product as it was).
        mutant(
            "gemm_tf32x3_wgmma_trunc",
            row_piece,
            next_chunk,
            s(256, 256, 96),
        )
        .want("FASTLOAD", 1),
        mutant(
            "gemm_tf32x3_wgmma_cols_trunc",
            "src + (long long)(k0 + 4 * (u % KQ)) * ld",
            "src + (long long)(k0 + 4 * ((u + 1) % KQ)) * ld",
            s(256, 256, 96),
        )
        .want("FASTLOAD", 1),
        // FASTLOAD 2 (the same reads, their inputs hidden from the optimizer) on a split K.
        mutant(
            "gemm_tf32x3_wgmma_splitk_trunc",
            row_piece,
            next_chunk,
            s(256, 256, 512),
        )
        .want("FASTLOAD", 2),
    ]);
}

/// gemm_tf32x3 on operands with inf, -inf, NaN, FLT_MAX (which TF32 rounds to inf), large and
/// subnormal values gives what IEEE FP32 arithmetic gives (NaN, the same infinity, or a finite
/// value within the tolerance): its blocks that read such values compute their tile again in
/// FP32, the others (clean tiles of the same launch) stay on the tensor cores.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn tf32x3_gives_ieee_results_for_special_values() {
    require_gxx();
    let catalog = Catalog::builtin().unwrap();
    for name in common::TF32X3_FAMILIES {
        tf32x3_special_values(catalog.get(name).unwrap());
    }
}

fn tf32x3_special_values(family: &Family) {
    let limits = Limits::for_arch(90).unwrap();
    let (m, n, k) = common::SPECIAL_MNK;
    let mut checked = 0;
    for layout in ["nn", "nt"] {
        let shape = Shape::parse(Op::Gemm, &format!("{m}x{n}x{k}:{layout}")).unwrap();
        // The smallest tiles: several blocks, some of them clean. A family offered on one of
        // the two layouts only (gemm_tf32x3_wgmma_cols: not NT) checks that one.
        let valid = family.space.prune(shape, &limits).unwrap().valid;
        if valid.is_empty() {
            continue;
        }
        checked += 1;
        let config = common::smallest_tile(&valid);
        let nt = layout == "nt";
        let plant = move |a: &mut [f32], b: &mut [f32]| common::plant_special_values(a, b, nt);
        tf32x3_check(family, &config, shape, &plant);
    }
    assert!(
        checked > 0,
        "{}: offered on neither NN nor NT",
        family.name()
    );
}

fn tf32x3_check(family: &Family, config: &Config, shape: Shape, plant: emu::Plant) {
    emu::check_special(family, config, shape, Emulation::new(900), plant)
        .unwrap_or_else(|e| panic!("{e}"));
}

/// What stops a misaligned vector access or 16-byte copy: UBSan's report of a float4 or float2
/// at a misaligned address, or the emulator's of a cp.async or red.v4.
const MISALIGNED: Catch = Catch::Check("misaligned");

/// gemm_general_splitk past 16 splits reduces in two levels (groups of about sqrt(SPLIT_K)
/// splits, then the groups). K = 4100: 48 splits of 96 leave 43 (groups of 7, the last of
/// 1), 128 splits of 48 leave 86 (groups of 12, the last of 2), 32 splits of 144 or 160 (BK
/// 16 or 32) leave 29 or 26 (groups of 6, the last of 5 or 2): fewer splits than SPLIT_K,
/// uneven last groups.
/// Each layout once (padded leading dimensions, beta and two products on some); each mutant
/// runs its config unmutated first, so the NT, TN and TT problems are validated there: a group
/// that drops its last partial, a final sum that drops the last group, and a group counter
/// left set for the next launch fail validation.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn two_level_split_k_validates_and_its_faults_are_caught() {
    require_gxx();
    let catalog = Catalog::builtin().unwrap();
    let family = catalog.get("gemm_general_splitk").unwrap();
    let limits = Limits::for_arch(90).unwrap();
    let nn = s(77, 42, 4100).with_form(full(Layout::Nn, true, false, 2));
    let config = family
        .space
        .prune(nn, &limits)
        .unwrap()
        .valid
        .into_iter()
        .find(|c| c.params.get("SPLIT_K") == Some(&64))
        .expect("a SPLIT_K = 64 config on 77x42x4100");
    if let Err(e) = check(family, &config, nn, 900) {
        panic!(
            "{} on {}: {e}",
            autotune::family::space::params_label(&config.params),
            nn.label(Op::Gemm)
        );
    }
    all_caught(&[
        mutant(
            "gemm_general_splitk",
            "for (int z = g0 + 1; z < g0 + gn; ++z)",
            "for (int z = g0 + 1; z < g0 + gn - 1; ++z)",
            s(27, 42, 4100).with_form(full(Layout::Nt, false, true, 1)),
        )
        .want("SPLIT_K", 48),
        mutant(
            "gemm_general_splitk",
            "for (int g = 1; g < groups; ++g)",
            "for (int g = 1; g < groups - 1; ++g)",
            s(27, 42, 4100).with_form(full(Layout::Tn, true, true, 2)),
        )
        .want("SPLIT_K", 128),
        mutant(
            "gemm_general_splitk",
            "atomicExch(gcounter, 0u)",
            "(void)(gcounter)",
            s(77, 42, 4100).with_form(full(Layout::Tt, false, true, 2)),
        )
        .want("SPLIT_K", 32),
    ]);
}

/// The emulator catches what it exists for, each mutant of a real template by what must stop
/// it: out-of-bounds reads and writes (AddressSanitizer), a cp.async stage read before its
/// copies are waited for, split-K tile counters not reset for the next launch and a 16-byte
/// copy of the wrong chunk (validation), float4 stores of C not checked against N (their
/// misalignment, UBSan), and shared memory never written read (validation: the poison).
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn the_emulator_catches_injected_faults() {
    require_gxx();
    let oob = Catch::Check("AddressSanitizer");
    all_caught(&[
        mutant(
            "gemm_tiled",
            "(row < M && ak < K) ? A[(size_t)row * K + ak]",
            "(row <= M && ak < K) ? A[(size_t)row * K + ak]",
            s(33, 65, 129),
        )
        .by(oob),
        mutant(
            "gemm_tiled",
            "if (row < M && col < N) {",
            "if (row <= M && col < N) {",
            s(33, 65, 129),
        )
        .by(oob),
        mutant(
            "gemm_warptile",
            "::\"n\"(N_) : \"memory\"",
            "::\"n\"(N_ + 1) : \"memory\"",
            s(257, 131, 200),
        ),
        mutant(
            "gemm_warptile_splitk_det",
            "atomicExch(",
            "(void)(",
            s(130, 7, 1001),
        ),
        mutant(
            "gemm_general",
            "cp_async16(o##s_dst + 4u * (l * X##_KSTEP * X##S_LD), p##o + l * o##_kstep);",
            "cp_async16(o##s_dst + 4u * (l * X##_KSTEP * X##S_LD), p##o + l * o##_kstep + 4);",
            // Interior tiles (the unchecked copies) for tiles up to 256 x 256.
            s(520, 264, 152).with_form(full(Layout::Tn, true, true, 2)),
        ),
        // float4 stores of C without the check that the columns are inside N and aligned.
        mutant(
            "gemm_general_small_k",
            "const bool cvec = full &&",
            "const bool cvec = true || full &&",
            s(37, 67, 3),
        )
        .want("VEC", 4)
        .by(MISALIGNED),
        // A's tile not zero-filled past K: the static __shared__ array keeps what it held (the
        // poison), and poison times B's zeros is NaN.
        mutant(
            "gemm_tiled",
            "As[ty][tx] = (row < M && ak < K) ? A[(size_t)row * K + ak] : 0.0f;",
            "if (row < M && ak < K) As[ty][tx] = A[(size_t)row * K + ak];",
            // One tile along K: the slots past K were written by no earlier tile either.
            s(33, 65, 7),
        ),
    ]);
}

/// A misaligned vector access or 16-byte copy is reported, in each family that makes one: a
/// 16-byte cp.async from a source or to a destination one float off, float4 loads from global
/// and shared memory and float2 loads one float off, a red.global.add.v4 one float off.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn misaligned_vector_accesses_are_caught() {
    require_gxx();
    all_caught(&[
        mutant(
            "gemm_general",
            "cp_async16(o##s_dst + 4u * (l * X##_KSTEP * X##S_LD), p##o + l * o##_kstep);",
            "cp_async16(o##s_dst + 4u * (l * X##_KSTEP * X##S_LD), p##o + l * o##_kstep + 1);",
            s(520, 264, 152).with_form(full(Layout::Tn, true, true, 2)),
        )
        .by(Catch::Check("misaligned cp.async: a 16-byte copy from")),
        mutant(
            "gemm_warptile_splitk_det",
            r#"16, %2;\n" ::"r"(dst), "l"(src),"#,
            r#"16, %2;\n" ::"r"(dst + 4u), "l"(src),"#,
            s(200, 136, 260),
        )
        .by(Catch::Check("misaligned cp.async: a 16-byte copy to")),
        mutant(
            "gemm_warptile",
            "__ldg(reinterpret_cast<const float4*>(p))",
            "__ldg(reinterpret_cast<const float4*>(p + 1))",
            s(96, 128, 64),
        )
        .arch(610)
        .by(MISALIGNED),
        mutant(
            "gemm_tile2d",
            "*reinterpret_cast<const float4*>(&As[k * AS_STRIDE + ty * TM + i]);",
            "*reinterpret_cast<const float4*>(&As[k * AS_STRIDE + ty * TM + i + 1]);",
            s(96, 128, 64),
        )
        .by(MISALIGNED),
        mutant(
            "gemm_small_m",
            "const float2 t = ld_b2(row + col[0]);",
            "const float2 t = ld_b2(row + col[0] + 1);",
            s(8, 128, 64),
        )
        .want("VEC", 2)
        .by(MISALIGNED),
        mutant(
            "gemv_thread_row",
            "const float4* xs4 = reinterpret_cast<const float4*>(xs);",
            "const float4* xs4 = reinterpret_cast<const float4*>(xs + 1);",
            s(256, 1, 512),
        )
        .want("X_TILE", 256)
        .by(MISALIGNED),
        mutant(
            "gemm_warptile_splitk",
            r#"::"l"(p), "f"(v.x),"#,
            r#"::"l"(p + 1), "f"(v.x),"#,
            s(96, 128, 64),
        )
        .by(Catch::Check("misaligned red.global.add.v4")),
    ]);
}

/// Every shared array is poisoned when each block starts, not only when first used: blocks
/// after the first that skip loading x into their static `__shared__` tile (the blocks before
/// loaded the same x) read the poison, in ascending block order too.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn shared_memory_is_poisoned_for_every_block() {
    require_gxx();
    let catalog = Catalog::builtin().unwrap();
    let m = mutant(
        "gemv_thread_row",
        "for (int i = threadIdx.x; i < n; i += BLOCK) xs[i] = __ldg(x + k0 + i);",
        "if (blockIdx.x == 0) for (int i = threadIdx.x; i < n; i += BLOCK) xs[i] = __ldg(x + k0 + i);",
        s(1000, 1, 200),
    )
    .want("X_TILE", 256);
    let ascending = Emulation {
        seed: 0,
        ..Emulation::new(900)
    };
    let report = m.run(&catalog, ascending).unwrap_or_else(|e| panic!("{e}"));
    println!("{}: {report}", m.label());
}

/// Blocks run in a shuffled order: a split-K fix-up in which the block of the last split
/// reduces (assuming the others finished, as they do in ascending order) instead of the block
/// that counts last passes with seed 0 (ascending) and fails with the default seed and others;
/// the failure names the seed.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn blocks_run_in_a_shuffled_order() {
    require_gxx();
    let catalog = Catalog::builtin().unwrap();
    let m = mutant(
        "gemm_warptile_splitk_det",
        "SPLIT_COUNT_IN(last, counters + tile, splits - 1)",
        "__threadfence(); __syncthreads(); const int last = split == splits - 1;",
        s(130, 7, 1001),
    );
    let (config, mutated) = m.plant(&catalog, Emulation::new(900)).unwrap();
    let with = |seed| Emulation {
        seed,
        ..Emulation::new(900)
    };
    check_with(&mutated, &config, m.shape, with(0))
        .unwrap_or_else(|e| panic!("{} in ascending order: {e}", m.label()));
    for seed in [emu::DEFAULT_SEED, 2, 3] {
        let report = caught(check_with(&mutated, &config, m.shape, with(seed)), m.by)
            .unwrap_or_else(|e| panic!("{} with seed {seed}: {e}", m.label()));
        assert!(report.contains(&format!("order seed {seed}")), "{report}");
    }
}

/// A missing barrier is a race the emulator catches: a block's threads run one at a time, each
/// until it waits, in a shuffled order, so without the barrier after the tile loads a thread
/// reads slots others have not yet written (the poison), and without the one after the sums a
/// thread overwrites the tile others have still to read.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn missing_barriers_are_caught() {
    require_gxx();
    let loads = "Bs[ty][tx] = (bk < K && col < N) ? B[(size_t)bk * N + col] : 0.0f;\n        __syncthreads();";
    let sums = "acc = fmaf(As[ty][k], Bs[k][tx], acc);\n        }\n        __syncthreads();";
    all_caught(&[
        mutant(
            "gemm_tiled",
            loads,
            "Bs[ty][tx] = (bk < K && col < N) ? B[(size_t)bk * N + col] : 0.0f;",
            s(33, 65, 129),
        ),
        mutant(
            "gemm_tiled",
            sums,
            "acc = fmaf(As[ty][k], Bs[k][tx], acc);\n        }",
            s(33, 65, 129),
        ),
    ]);
}

/// The sum of `warp_sum` in the GEMV families, which the mask mutants rewrite.
const WARP_SUM: &str =
    "for (int o = WIDTH / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o, WIDTH);";

/// Warp-level calls check their masks, naming the kernel: a lane whose mask leaves it out, a
/// shuffle reading a lane its mask does not name, lanes named in each other's masks with
/// different masks or at different calls, and a mask naming a lane that has returned.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn warp_calls_check_their_masks() {
    require_gxx();
    let row = s(37, 1, 100);
    let on_row = |to, by| mutant("gemv_warp_row", WARP_SUM, to, row).by(Catch::Check(by));
    all_caught(&[
        on_row(
            "for (int o = WIDTH / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu ^ (1u << (threadIdx.x & 31)), v, o, WIDTH);",
            "which does not include the lane",
        ),
        on_row(
            "for (int o = WIDTH / 2; o > 0; o >>= 1) v += __shfl_xor_sync((threadIdx.x & 16) ? 0xffff0000u : 0xffffu, v, o, WIDTH);",
            "does not name",
        ),
        on_row(
            "for (int o = WIDTH / 2; o > 0; o >>= 1) v += __shfl_xor_sync((threadIdx.x & 16) ? 0xfffffffeu : 0xffffffffu, v, o, WIDTH);",
            "but lane",
        ),
        on_row(
            "for (int o = WIDTH / 2; o > 0; o >>= 1) v += (threadIdx.x & 31) == 3 ? (float)__ballot_sync(0xffffffffu, 1) : __shfl_xor_sync(0xffffffffu, v, o, WIDTH);",
            "__ballot_sync with mask 0xffffffff",
        ),
        at_warp_row_exit(
            "if (row >= M || lane == 7) return;",
            Catch::Check("lane 7, which has exited"),
        ),
    ]);
}

/// The warp-level calls compute what CUDA's do, and masks that name only a lane's group pass:
/// `warp_sum` rewritten as a shuffle-down sum and a broadcast, as a shuffle-up scan and a
/// broadcast of its last lane, with each group's own mask, and behind ballot, any, all and
/// syncwarp checks, gives the same sums on warps (gemv_warp_row) and groups of lanes
/// (gemv_multi_row_warp, 4 rows a warp: groups of 8 lanes).
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn warp_calls_compute_what_cuda_does() {
    require_gxx();
    let catalog = Catalog::builtin().unwrap();
    let rewrites = [
        "for (int o = WIDTH / 2; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o, WIDTH);
         v = __shfl_sync(0xffffffffu, v, 0, WIDTH);",
        "for (int o = 1; o < WIDTH; o <<= 1) {
             const float t = __shfl_up_sync(0xffffffffu, v, o, WIDTH);
             if ((threadIdx.x & (WIDTH - 1)) >= o) v += t;
         }
         v = __shfl_sync(0xffffffffu, v, WIDTH - 1 + 32, WIDTH);",
        "const unsigned g = WIDTH == 32 ? 0xffffffffu
             : ((1u << (WIDTH % 32)) - 1u) << ((threadIdx.x & 31) & ~(WIDTH - 1));
         for (int o = WIDTH / 2; o > 0; o >>= 1) v += __shfl_xor_sync(g, v, o, WIDTH);",
        "__syncwarp();
         if (__ballot_sync(0xffffffffu, threadIdx.x & 1) != 0xaaaaaaaau ||
             __all_sync(0xffffffffu, threadIdx.x & 1) || !__all_sync(0xffffffffu, 1) ||
             !__any_sync(0xffffffffu, (threadIdx.x & 31) == 5) || __any_sync(0xffffffffu, 0))
             v = 1e30f;
         __syncwarp(0xffffffffu);
         for (int o = WIDTH / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o, WIDTH);",
    ];
    let shape = s(37, 1, 100);
    let runs: Vec<Mutant> = rewrites
        .iter()
        .flat_map(|&to| {
            [
                mutant("gemv_warp_row", WARP_SUM, to, shape),
                mutant("gemv_multi_row_warp", WARP_SUM, to, shape).want("ROW_PER_WARP", 4),
            ]
        })
        .collect();
    let failures: Vec<String> = runs
        .par_iter()
        .filter_map(|m| {
            let (config, mutated) = match m.plant(&catalog, Emulation::new(900)) {
                Ok(p) => p,
                Err(e) => return Some(e),
            };
            check(&mutated, &config, m.shape, 900)
                .err()
                .map(|e| format!("{}: {e}", m.label()))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A mutant is caught only when validation or a check stops its run: one that does not compile
/// fails the test ("fix the mutant"), as do one that passes, one that crashes without a check's
/// report, and one stopped by another check than the one it must meet.
#[test]
#[ignore = "needs g++: bash scripts/test.sh runs them"]
fn a_mutant_is_caught_only_by_validation_or_a_check() {
    let bad = |f: Failure, want| caught(Err(f), want).unwrap_err();
    assert!(bad(Failure::Build("g++ failed".into()), Catch::Validation)
        .contains("does not compile: fix the mutant"));
    assert!(caught(Ok(()), Catch::Validation)
        .unwrap_err()
        .contains("passed"));
    assert!(bad(Failure::Crash("SIGILL".into()), Catch::Validation).contains("crashed"));
    assert!(bad(Failure::Validation("off".into()), MISALIGNED).contains("wrong output"));
    assert!(bad(Failure::Check("AddressSanitizer".into()), MISALIGNED).contains("check"));
    assert!(caught(
        Err(Failure::Check("misaligned cp.async".into())),
        MISALIGNED
    )
    .is_ok());
    assert!(caught(Err(Failure::Validation("off".into())), Catch::Validation).is_ok());
    require_gxx();
    // The real thing: g++'s error is a build failure, a trap without a report a crash.
    let catalog = Catalog::builtin().unwrap();
    let on_tiled = |to| mutant("gemm_tiled", "float acc = 0.0f;", to, s(33, 65, 129));
    let typo = on_tiled("float acc = 0.0f");
    let err = typo.run(&catalog, Emulation::new(900)).unwrap_err();
    assert!(err.contains("does not compile: fix the mutant"), "{err}");
    let trap = on_tiled("float acc = 0.0f; if (blockIdx.x == 1) __builtin_trap();");
    let err = trap.run(&catalog, Emulation::new(900)).unwrap_err();
    assert!(err.contains("crashed without a check's report"), "{err}");
}
