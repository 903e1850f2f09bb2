//! What the integration tests share: running the `autotune` binary and checking its `Error:`
//! (and `hint:`) lines, the probes for what a test needs (a GPU, NVRTC, or their absence), and
//! database and journal fixtures.
//!
//! A test that needs a GPU, NVRTC or g++ is `#[ignore = "needs ..."]`: `cargo test` lists it as
//! ignored where nothing says the requirement is met, and whoever runs it (`--include-ignored`,
//! `--ignored`: scripts/test.sh, scripts/gpu.sh) asks for it, so a missing requirement fails it
//! ([`require_gpu`], [`nvrtc_dir`]). Only rows that need this machine to *lack* something, and
//! the replays of committed journals, still print `skipped: ...` ([`skip_or_fail`]).
//!
//! Each test binary includes this with `mod common;` and uses part of it, hence the
//! `dead_code` allowance.
#![allow(dead_code)]

use autotune::db::{Database, Entry, GpuRecord};
use autotune::family::catalog::Catalog;
use autotune::measure::outcome::{Failure, Measured};
use autotune::measure::timing::{Stats, TimingSettings};
use autotune::problem::{Op, Shape};
use autotune::tuning::journal::{CandidateRecord, Header, Record, Writer, JOURNAL_VERSION};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The committed database of one H200 that the `best` and `export` tests read.
pub const H200_DB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/h200-db.toml");
/// A shipped gemm suite.
pub const GEMM_SUITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/suites/gemm.toml");
/// A shipped gemv suite.
pub const GEMV_SUITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/suites/gemv.toml");
/// The families of 3xTF32 math (tensor cores, FP32 accuracy), each tested on special values and
/// on every form.
pub const TF32X3_FAMILIES: [&str; 13] = [
    "gemm_tf32x3",
    "gemm_tf32x3_wgmma",
    "gemm_tf32x3_wgmma_cols",
    "gemm_tf32x3_wgmma_cols_splitk",
    "gemm_tf32x3_wgmma_cols_splitk_trunc",
    "gemm_tf32x3_wgmma_cols_trunc",
    "gemm_tf32x3_wgmma_pipe",
    "gemm_tf32x3_wgmma_promote",
    "gemm_tf32x3_wgmma_promote_splitk",
    "gemm_tf32x3_wgmma_rs",
    "gemm_tf32x3_wgmma_splitk",
    "gemm_tf32x3_wgmma_splitk_trunc",
    "gemm_tf32x3_wgmma_trunc",
];

/// Whether `family`'s space offers a config for `shape` under `limits` (an error: the space
/// could not be evaluated there; each caller says what that means to it).
pub fn offered(
    family: &autotune::family::catalog::Family,
    shape: Shape,
    limits: &autotune::gpu::Limits,
) -> Result<bool, autotune::family::space::SpaceError> {
    family
        .space
        .prune(shape, limits)
        .map(|p| !p.valid.is_empty())
}

/// The config of the smallest tiles among `valid` (64 x 64 where offered, else the fewest
/// elements): several blocks on [`SPECIAL_MNK`], some of them clean.
pub fn smallest_tile(valid: &[autotune::family::space::Config]) -> autotune::family::space::Config {
    let tile = |c: &autotune::family::space::Config| {
        let at = |k: &str| c.params.get(k).copied().unwrap_or(i64::MAX);
        (
            at("BM") != 64 || at("BN") != 64,
            at("BM").saturating_mul(at("BN")),
        )
    };
    valid
        .iter()
        .min_by_key(|c| tile(c))
        .cloned()
        .expect("a config with tiles")
}

/// The repository root (the crate's manifest directory).
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The committed test file `tests/data/<name>`.
pub fn data(name: &str) -> PathBuf {
    root().join("tests/data").join(name)
}

// ---------------------------------------------------------------------------------------------
// Running the binary

/// The `autotune` executable: `$AUTOTUNE_BIN` where set (scripts/gpu.sh points it at the binary
/// carried to the GPU machine), else the one cargo built with these tests.
pub fn bin() -> PathBuf {
    std::env::var_os("AUTOTUNE_BIN")
        .map(Into::into)
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_autotune").into())
}

/// What one run printed and how it ended.
#[derive(Debug)]
pub struct Run {
    /// The command line (and the variables set for it), for messages.
    pub command: String,
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Whether it exited with code 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// The command, its exit code and everything it printed, for assertion messages.
    pub fn context(&self) -> String {
        format!(
            "{}\nexit: {:?}\nstdout:\n{}\nstderr:\n{}",
            self.command, self.code, self.stdout, self.stderr
        )
    }
}

/// Runs `autotune args` in the crate root.
pub fn run(args: &[&str]) -> Run {
    run_env(args, &[])
}

/// Runs `autotune args` in the crate root (where it exists: not on the GPU machine) with `env`
/// added to its environment.
///
/// Unless `env` names `AUTOTUNE_CACHE_DIR`, the run gets a fresh, empty compile cache: what an
/// earlier run (another test, or another CI run on the same machine) left in the user's cache
/// must not change what a test sees.
pub fn run_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(bin());
    if root().is_dir() {
        cmd.current_dir(root());
    }
    cmd.args(args);
    let fresh_cache = tempfile::tempdir().expect("a temporary directory for the compile cache");
    if !env.iter().any(|(k, _)| *k == "AUTOTUNE_CACHE_DIR") {
        cmd.env("AUTOTUNE_CACHE_DIR", fresh_cache.path());
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let vars: String = env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
    let command = format!("{vars}autotune {args:?}");
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not run {command}: {e}"));
    Run {
        command,
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `autotune args`, which must succeed; returns its stdout.
pub fn ok(args: &[&str]) -> String {
    let r = run(args);
    assert!(r.success(), "expected success: {}", r.context());
    r.stdout
}

/// Whether `r` is autotune's report of a failure: exit code 1, no panic, and on stderr one
/// `Error: ...` line, maybe followed by one `hint: ...` line (the advice that names flags),
/// which together contain every one of `needles`. Returns those lines, or what is wrong (with
/// the run's context). Says nothing of stdout: see [`check_error`].
pub fn error_line(r: &Run, needles: &[&str]) -> Result<String, String> {
    let fail = |what: String| Err(format!("{what}: {}", r.context()));
    if r.stderr.contains("panicked") || r.stderr.contains("internal failure") {
        return fail("panicked".into());
    }
    if r.code != Some(1) {
        return fail("expected exit code 1".into());
    }
    let lines: Vec<&str> = r.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let hint_ok = lines.len() == 1 || (lines.len() == 2 && lines[1].starts_with("hint: "));
    if !hint_ok {
        return fail("expected one `Error: ...` line and at most a `hint: ...` line".into());
    }
    if !lines[0].starts_with("Error: ") {
        return fail("expected `Error: ...`".into());
    }
    let text = lines.join("\n");
    let missing: Vec<&&str> = needles.iter().filter(|n| !text.contains(**n)).collect();
    if !missing.is_empty() {
        return fail(format!("expected {missing:?} in the error or its hint"));
    }
    Ok(text)
}

/// [`error_line`], and nothing on stdout.
pub fn check_error(r: &Run, needles: &[&str]) -> Result<String, String> {
    if !r.stdout.trim().is_empty() {
        return Err(format!("expected nothing on stdout: {}", r.context()));
    }
    error_line(r, needles)
}

/// Whether `r` is a usage error from clap: exit code 2, clap's `error:` and every one of
/// `needles` on stderr, no panic.
pub fn check_usage(r: &Run, needles: &[&str]) -> Result<(), String> {
    let fail = |what: String| Err(format!("{what}: {}", r.context()));
    if r.stderr.contains("panicked") {
        return fail("panicked".into());
    }
    if r.code != Some(2) {
        return fail("expected clap's usage-error exit code 2".into());
    }
    if !r.stderr.contains("error:") {
        return fail("expected clap's `error:`".into());
    }
    let missing: Vec<&&str> = needles.iter().filter(|n| !r.stderr.contains(**n)).collect();
    if !missing.is_empty() {
        return fail(format!("expected {missing:?} on stderr"));
    }
    Ok(())
}

/// Runs `autotune args` and asserts [`check_error`]: exit code 1, one `Error: ...` line (and at
/// most a `hint: ...` line) holding every one of `needles`, nothing on stdout, no panic.
/// Returns those lines.
pub fn fails_with(args: &[&str], needles: &[&str]) -> String {
    check_error(&run(args), needles).unwrap_or_else(|e| panic!("{e}"))
}

// ---------------------------------------------------------------------------------------------
// Whether a test can run here

/// `1`: a GPU, NVIDIA driver or system-wide NVRTC on this machine fails the tests of what
/// happens without them instead of skipping them (set by .ci/run, which has none of them).
pub const REQUIRE_NO_CUDA: &str = "AUTOTUNE_REQUIRE_NO_CUDA";
/// `1`: missing recorded journals fail the strategy replays instead of skipping them (set in
/// CI).
pub const REQUIRE_JOURNALS: &str = "AUTOTUNE_REQUIRE_JOURNALS";

/// Whether the variable `force` is `1`.
pub fn forced(force: &str) -> bool {
    std::env::var(force).as_deref() == Ok("1")
}

/// A test (or a row of one) cannot run here because of `reason`: prints `skipped: <reason>`
/// and returns `Ok`, or, when `force` is `1`, returns the failure instead.
pub fn skip_or_fail(force: &str, reason: &str) -> Result<(), String> {
    if forced(force) {
        return Err(format!("{force}=1 but {reason}"));
    }
    println!("skipped: {reason}");
    Ok(())
}

/// [`skip_or_fail`] for a whole test: panics when `force` is `1`.
pub fn skip(force: &str, reason: &str) {
    if let Err(e) = skip_or_fail(force, reason) {
        panic!("{e}");
    }
}

/// The GPU probe: why this machine may have a usable GPU (a device node, or the driver library
/// libcuda where the loader finds it), or `None`.
pub fn gpu_present() -> Option<String> {
    for node in ["/dev/nvidiactl", "/dev/nvidia0"] {
        if Path::new(node).exists() {
            return Some(format!("{node} exists"));
        }
    }
    if let Some(found) = system_library("libcuda.so") {
        return Some(found);
    }
    let ld = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    ld.split(':')
        .filter(|d| !d.is_empty())
        .find(|d| {
            Path::new(d).join("libcuda.so.1").exists() || Path::new(d).join("libcuda.so").exists()
        })
        .map(|d| format!("{d} (on LD_LIBRARY_PATH) holds libcuda.so"))
}

/// For a test that needs a GPU (`#[ignore]`d, so run only when asked for): fails it unless
/// [`gpu_present`] finds one.
pub fn require_gpu() {
    if gpu_present().is_none() {
        panic!("needs a GPU: no /dev/nvidia* and no libcuda on this machine");
    }
}

/// For a test of what happens without a GPU: `true` when [`gpu_present`] finds none; otherwise
/// the test is skipped (`false`), or fails under `AUTOTUNE_REQUIRE_NO_CUDA=1`.
pub fn have_no_gpu() -> bool {
    let Some(why) = gpu_present() else {
        return true;
    };
    skip(
        REQUIRE_NO_CUDA,
        &format!("a GPU or its driver is present ({why})"),
    );
    false
}

/// Where the dynamic loader finds a library whose file name starts with `lib` without
/// LD_LIBRARY_PATH (the ldconfig cache, the system library directories), if it does.
pub fn system_library(lib: &str) -> Option<String> {
    if let Ok(out) = Command::new("ldconfig").arg("-p").output() {
        if String::from_utf8_lossy(&out.stdout).contains(lib) {
            return Some(format!("ldconfig lists {lib}"));
        }
    }
    for dir in [
        "/lib",
        "/lib64",
        "/usr/lib",
        "/usr/lib64",
        "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu",
        "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
    ] {
        let Ok(entries) = fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(lib) {
                return Some(format!("{} exists", e.path().display()));
            }
        }
    }
    None
}

/// The NVRTC lib directory named by `var` (`AUTOTUNE_NVRTC13_DIR` or `AUTOTUNE_NVRTC12_DIR`,
/// which scripts/test.sh sets), for a test that needs it (`#[ignore]`d, so run only when asked
/// for): fails the test where the variable names no directory.
pub fn nvrtc_dir(var: &str) -> PathBuf {
    let reason = match std::env::var_os(var) {
        None => format!("{var} is not set"),
        Some(d) if d.is_empty() => format!("{var} is empty"),
        Some(d) => {
            let dir = PathBuf::from(d);
            if dir.is_dir() {
                return dir;
            }
            format!("{var}={} is not a directory", dir.display())
        }
    };
    panic!(
        "needs NVRTC: {reason}; run these tests through scripts/test.sh, which installs NVRTC \
         12 and 13 and sets AUTOTUNE_NVRTC13_DIR and AUTOTUNE_NVRTC12_DIR"
    );
}

// ---------------------------------------------------------------------------------------------
// Database and journal fixtures

/// The committed H200 database ([`H200_DB`]) as TOML text, with every entry's checksum set to
/// this build's, so that lookups treat its entries as current whatever the templates' history.
pub fn current_h200_db() -> String {
    let catalog = Catalog::builtin().expect("the built-in families load");
    let mut db = Database::load(Path::new(H200_DB)).expect("the committed database loads");
    for e in &mut db.entries {
        e.checksum = catalog
            .get(&e.family)
            .unwrap_or_else(|err| panic!("{err}"))
            .checksum
            .clone();
    }
    db.to_toml_string().expect("the database serialises")
}

/// A GPU record for `name` with an H100's figures.
pub fn gpu_record(name: &str) -> GpuRecord {
    GpuRecord {
        name: name.to_string(),
        arch: "sm_90".to_string(),
        sms: 132,
        clock_mhz: 1980,
        fp32_peak_gflops: 66_908.16,
        memory_mib: 81_559,
        driver_version: "13.0".to_string(),
        nvrtc_version: "13.0".to_string(),
        copy_bandwidth_gbs: Some(2989.0),
    }
}

/// A fully filled entry for `gpu`, `op` and `shape` (as `op` parses it: `MxNxK`, or `MxK` for
/// gemv) that loads and saves: a 1 ms winner of the op's first family. Tests change what they
/// need with struct update syntax: `Entry { median_ms: 0.5, ..entry(gpu, op, shape) }`.
pub fn entry(gpu: &str, op: Op, shape: &str) -> Entry {
    let s = Shape::parse(op, shape).unwrap_or_else(|e| panic!("fixture shape {shape}: {e}"));
    let (family, params): (&str, &[(&str, i64)]) = match op {
        Op::Gemm => (
            "gemm_tile2d",
            &[
                ("BK", 8),
                ("BM", 64),
                ("BN", 64),
                ("PREFETCH", 0),
                ("TM", 4),
                ("TN", 4),
            ],
        ),
        Op::Gemv => (
            "gemv_warp_row",
            &[("ROWS_PER_BLOCK", 1), ("UNROLL", 2), ("VEC", 4)],
        ),
    };
    let kernel = params
        .iter()
        .fold(family.to_string(), |k, (name, v)| format!("{k}_{name}{v}"));
    let median_ms = 1.0;
    Entry {
        gpu: gpu.to_string(),
        op,
        shape: s.label(op),
        m: s.m,
        n: s.n,
        k: s.k,
        form: s.form,
        family: family.to_string(),
        kernel,
        params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        median_ms,
        min_ms: median_ms * 0.98,
        spread_pct: 1.5,
        samples: 50,
        gflops: s.flops() / (median_ms * 1e6),
        gbs: s.min_bytes(op) / (median_ms * 1e6),
        cublas_median_ms: 0.9,
        vs_cublas: 0.9 / median_ms,
        pct_of_peak: 12.5,
        max_rel_error: 1.5e-7,
        mean_rel_error: None,
        cublas_max_rel_error: None,
        cublas_mean_rel_error: None,
        tolerance: 4.5e-5,
        tried: 100,
        failed: 2,
        seed: 24_301,
        date: "2026-01-01T00:00:00Z".to_string(),
        tool_version: "0.1.0".to_string(),
        checksum: "ab".repeat(32),
        revision: None,
        partial: None,
        produced_by: None,
        deterministic: None,
        math: Default::default(),
        also_measured: Vec::new(),
    }
}

/// The header of a journal of a gemm 256x256x256 run on `gpu`, with an H100's arch and SM
/// count; tests change fields with struct update syntax.
pub fn journal_header(gpu: &str) -> Header {
    Header {
        journal: JOURNAL_VERSION,
        gpu: gpu.into(),
        op: Op::Gemm,
        shape: Shape::mnk(256, 256, 256),
        seed: 1,
        timing: TimingSettings::quick(),
        tool_version: "test".into(),
        arch: Some("sm_90".into()),
        sms: Some(132),
    }
}

/// Writes a finished journal at `path` under `header`: for each of `outcomes` in turn (a time in
/// milliseconds, or a failure), candidate `toy_X<x>` of the family `toy` with parameter X = x.
pub fn write_toy_journal(
    path: &Path,
    header: &Header,
    outcomes: impl IntoIterator<Item = Result<f64, Failure>>,
) {
    let mut w = Writer::create(path, header).expect("creating the journal");
    for (x, outcome) in (0i64..).zip(outcomes) {
        let outcome = outcome.map(|ms| Measured {
            stats: Stats::from_samples(&[ms, ms, ms]).unwrap(),
            max_rel_error: 1e-7,
            mean_rel_error: None,
            registers: 40,
            local_bytes: 0,
        });
        w.record(&Record::Candidate(CandidateRecord {
            family: "toy".into(),
            kernel: format!("toy_X{x}"),
            params: [("X".to_string(), x)].into_iter().collect(),
            checksum: "c".into(),
            outcome,
        }))
        .expect("writing a candidate");
    }
    w.record(&Record::End { partial: false })
        .expect("writing the end");
}

// ---------------------------------------------------------------------------------------------
// Special values (the tensor-core family's tests, in the emulator and on the GPU)

/// The product the special-value tests run: several 64 x 64 tiles, some with special inputs
/// and some clean.
pub const SPECIAL_MNK: (usize, usize, usize) = (130, 136, 40);

/// Plants special values into operands of [`SPECIAL_MNK`]: A is M x K; B is K x N, or N x K when
/// `nt`. Rows 0 to 2 of A get inf, NaN and FLT_MAX (which TF32 rounds to inf; B's row 2 is
/// 0.25, so the products stay finite), row 70 (a clean tile row) a large value that goes through
/// the tensor cores; row 5 gets inf where B's row 11 is zeros (inf times 0: NaN across C's row
/// 5); B's column 0 gets -inf, column 70 a subnormal.
pub fn plant_special_values(a: &mut [f32], b: &mut [f32], nt: bool) {
    let (_, n, k) = SPECIAL_MNK;
    let b_at = |kk: usize, nn: usize| if nt { nn * k + kk } else { kk * n + nn };
    a[3] = f32::INFINITY;
    a[k + 1] = f32::NAN;
    a[2 * k + 2] = f32::MAX;
    a[70 * k + 5] = 1e37;
    a[5 * k + 11] = f32::INFINITY;
    for nn in 0..n {
        b[b_at(2, nn)] = 0.25;
        b[b_at(11, nn)] = 0.0;
    }
    b[b_at(7, 0)] = f32::NEG_INFINITY;
    b[b_at(9, 70)] = 1e-40;
}

/// Whether `got` is what IEEE FP32 arithmetic gives for a float64 reference `want` whose terms'
/// magnitudes sum to `bound`: NaN for NaN, the same infinity, else finite and within
/// `tolerance` of the bound.
pub fn ieee_matches(got: f32, want: f64, bound: f64, tolerance: f64) -> bool {
    if want.is_nan() {
        got.is_nan()
    } else if want.is_infinite() {
        got as f64 == want
    } else if bound.is_finite() {
        got.is_finite() && (got as f64 - want).abs() <= tolerance * bound.max(f64::MIN_POSITIVE)
    } else {
        true
    }
}
