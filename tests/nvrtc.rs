//! Compiles every built-in family for the archs the project targets, with the NVRTC each
//! needs, through `autotune --dry-run --covering` (no GPU needed): per family a pairwise
//! covering set of its valid configs (every value of each parameter beside every value of each
//! other one; `autotune::family::covering`), on shapes that open every family and every copy
//! path of the full-interface ones:
//!
//! * sm_90 (H100/H200) and sm_89 (RTX 4060) with NVRTC 13, from the directory in
//!   `AUTOTUNE_NVRTC13_DIR`;
//! * sm_61 (GTX 1080 Ti) with NVRTC 12, from the directory in `AUTOTUNE_NVRTC12_DIR`
//!   (NVRTC 13 dropped archs older than sm_75).
//!
//! A covering set rather than every config: every config is thousands of cubins per arch, too
//! many for CI on two cores, and the covering sets are a small fraction of them (each report row
//! gives both counts). A tuning run or `--dry-run` without `--covering` compiles every candidate
//! of a shape, and reports one that fails with NVRTC's log.
//!
//! NVRTC is loaded once per process, so each arch is compiled in its own `autotune` process
//! whose `LD_LIBRARY_PATH` holds only that one directory (and `AUTOTUNE_NVRTC` is emptied, so
//! the loader's search decides). The `AUTOTUNE_NVRTC` tests put both directories on
//! `LD_LIBRARY_PATH`, NVRTC 13 first, and choose NVRTC 12 with the variable: by file names
//! alone the loader takes `libnvrtc.so.13` whatever the directory order.
//!
//! `scripts/test.sh` installs both NVRTC wheels, sets the variables and runs these tests, which
//! are `#[ignore = "needs NVRTC: ..."]`: a plain `cargo test` lists them as ignored. Run
//! without the variables (`--include-ignored`), each fails, saying so.
//!
//! [`fingerprints`] compares every family's PTX with its committed fingerprint.

mod common;
#[path = "nvrtc/fingerprints.rs"]
mod fingerprints;

use autotune::family::catalog::Catalog;
use autotune::problem::Op;
use common::{check_error, nvrtc_dir, Run, H200_DB};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The shapes each op's families are compiled for: those the fingerprints take their probes
/// on (a square one, and for gemm shapes with few rows or few columns, where the GEMV-shaped
/// families (gemm_small_m, gemm_small_n) offer their spaces; 16x2048x16: the one-warp blocks
/// gemm_small_m keeps for K < 32), then other layouts. A kernel's source does not depend on the
/// shape (but for the full-interface families' layout), so the dry run compiles each config
/// once, whatever the number of shapes that plan it.
fn shapes_for(op: Op) -> Vec<&'static str> {
    let mut shapes = autotune::family::probe::probe_shapes(op).to_vec();
    shapes.extend_from_slice(match op {
        Op::Gemm => &[
            // The full-interface families compile per layout: TT has the loaders NN lacks (A
            // stored K x M, B stored N x K), so NN and TT compile every copy path.
            "2048x2048x2048:tt:beta",
            // The full-interface families for a short K and for few rows, on the layout that
            // opens their other loaders (B stored N x K: the layer call's path). TT again, so
            // gemm_general's kernels are compiled once (NT would add hundreds more).
            "16x2048x16:tt:beta",
        ],
        Op::Gemv => &["4096x4096:t:b4"],
    });
    shapes
}

/// Every op that has at least one built-in family, with the names of its families.
fn ops_with_families() -> Vec<(Op, BTreeSet<String>)> {
    let catalog = Catalog::builtin().expect("the built-in families load");
    let ops: BTreeSet<Op> = catalog.families().iter().map(|f| f.space.op).collect();
    assert!(!ops.is_empty(), "the catalog has no families");
    ops.into_iter()
        .map(|op| {
            let names = catalog
                .families()
                .iter()
                .filter(|f| f.space.op == op)
                .map(|f| f.name().to_string())
                .collect();
            (op, names)
        })
        .collect()
}

/// Runs `autotune args` with `LD_LIBRARY_PATH` set to `lib_dir` only (and `AUTOTUNE_NVRTC`
/// empty, which is unset: one in the caller's environment does not choose for the test).
fn autotune(lib_dir: &Path, args: &[&str]) -> Run {
    let lib_dir = lib_dir.to_str().expect("a UTF-8 library directory");
    common::run_env(
        args,
        &[("LD_LIBRARY_PATH", lib_dir), ("AUTOTUNE_NVRTC", "")],
    )
}

/// [`autotune`], which must succeed: a failure shows the command, the library path and the end
/// of its stderr.
fn autotune_ok(lib_dir: &Path, args: &[&str]) -> Run {
    let r = autotune(lib_dir, args);
    assert!(
        r.success(),
        "autotune {} (LD_LIBRARY_PATH={}): exit {:?}\nstderr:\n{}",
        args.join(" "),
        lib_dir.display(),
        r.code,
        tail(&r.stderr, 4000)
    );
    r
}

/// The last `n` characters of `s`, for messages.
fn tail(s: &str, n: usize) -> &str {
    let start = s.len().saturating_sub(n);
    let start = (start..=s.len())
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(s.len());
    &s[start..]
}

/// Compiles a covering set of every family's configs for `arch` with the NVRTC in `lib_dir`;
/// returns one problem description per thing that went wrong (empty when all compiled).
fn compile_covering_sets(arch: &str, lib_dir: &Path, nvrtc_major: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let tmp = tempfile::tempdir().expect("a temporary directory");
    for (op, families) in ops_with_families() {
        let shapes = shapes_for(op);
        let suite = tmp.path().join(format!("{}.toml", op.name()));
        let list = shapes
            .iter()
            .map(|s| format!("\"{s}\""))
            .collect::<Vec<_>>()
            .join(", ");
        std::fs::write(
            &suite,
            format!("op = \"{}\"\nshapes = [{list}]\n", op.name()),
        )
        .expect("writing the suite");
        let suite = suite.to_str().expect("a UTF-8 temporary path");
        let args = [
            "--suite",
            suite,
            "--dry-run",
            "--covering",
            "--arch",
            arch,
            "--json",
        ];
        let r = autotune(lib_dir, &args);
        let what = format!(
            "autotune {} (shapes {list}; LD_LIBRARY_PATH={})",
            args.join(" "),
            lib_dir.display()
        );
        let reports: Vec<Value> = match serde_json::Deserializer::from_str(&r.stdout)
            .into_iter::<Value>()
            .collect::<Result<Vec<Value>, _>>()
        {
            Ok(v) if v.len() == shapes.len() => v,
            parsed => {
                problems.push(format!(
                    "{what}: exit {:?}, stdout is not one JSON report per shape ({})\nstderr:\n{}\nstdout:\n{}",
                    r.code,
                    match parsed {
                        Ok(v) => format!("{} reports", v.len()),
                        Err(e) => e.to_string(),
                    },
                    tail(&r.stderr, 4000),
                    tail(&r.stdout, 2000)
                ));
                continue;
            }
        };
        if !r.success() {
            problems.push(format!(
                "{what}: exit {:?}, stderr:\n{}",
                r.code,
                tail(&r.stderr, 2000)
            ));
        }
        let want = Expected {
            op,
            arch,
            nvrtc_major,
            lib_dir,
            families: &families,
        };
        // Valid configs per family over all the shapes: each family must have some, unless
        // its space rules the arch out (a constraint on `sm`: `sm >= 80` for TF32 tensor
        // cores, `sm == 90` for wgmma), which the report must then give as the reason.
        let mut totals = Totals::default();
        for report in &reports {
            let shape = report["shape"].to_string();
            let mut problem = |p: String| problems.push(format!("{what}, shape {shape}: {p}"));
            check_report(report, &want, &mut totals, &mut problem);
        }
        for (family, valid) in &totals.valid {
            let arch_rule = totals
                .rejected_by
                .get(family)
                .is_some_and(|r| r.iter().any(|c| c.split_whitespace().next() == Some("sm")));
            if *valid == 0 && !arch_rule {
                problems.push(format!(
                    "{what}: family {family} has no valid config for {arch} on any shape"
                ));
            }
            if *valid == 0 {
                println!("{what}: family {family} is not offered for {arch} (its `sm` rule)");
            }
        }
    }
    problems
}

/// Per family, over every shape of one op and arch: its valid configs, and the constraints that
/// rejected the others.
#[derive(Default)]
struct Totals {
    valid: BTreeMap<String, u64>,
    rejected_by: BTreeMap<String, BTreeSet<String>>,
}

/// What every dry-run report of one op and arch must say.
struct Expected<'a> {
    op: Op,
    arch: &'a str,
    nvrtc_major: &'a str,
    lib_dir: &'a Path,
    /// The op's built-in families.
    families: &'a BTreeSet<String>,
}

/// Checks one shape's dry-run report against `want`: the op, arch and NVRTC it names, and for
/// each family that it was reported once and compiled every valid config (its count and the
/// constraints that rejected the rest are added to `totals`); `problem` receives what is wrong.
fn check_report(
    report: &Value,
    want: &Expected,
    totals: &mut Totals,
    problem: &mut dyn FnMut(String),
) {
    let Expected {
        op,
        arch,
        nvrtc_major,
        lib_dir,
        families,
    } = *want;
    if report["op"] != op.name() {
        problem(format!("report op is {}", report["op"]));
    }
    if report["arch"] != arch {
        problem(format!("report arch is {}", report["arch"]));
    }
    if report["selection"] != "covering" {
        problem(format!("report selection is {}", report["selection"]));
    }
    let nvrtc = report["nvrtc"].as_str().unwrap_or("");
    if !nvrtc.starts_with(&format!("{nvrtc_major}.")) {
        problem(format!(
            "compiled with NVRTC {nvrtc:?}, expected NVRTC {nvrtc_major}.x: another libnvrtc is found before {}",
            lib_dir.display()
        ));
    }
    let Some(rows) = report["families"].as_array() else {
        problem(format!("no `families` array in {report}"));
        return;
    };
    let mut seen = BTreeSet::new();
    let mut summary = Vec::new();
    for row in rows {
        let family = row["count"]["family"].as_str().unwrap_or("?").to_string();
        let total = row["count"]["total"].as_u64().unwrap_or(0);
        let valid = row["count"]["valid"].as_u64().unwrap_or(0);
        let selected = row["selected"].as_u64().unwrap_or(0);
        let compiled = row["compiled"].as_u64().unwrap_or(0);
        let failed = row["failed"].as_array().cloned().unwrap_or_default();
        summary.push(format!(
            "{family}: {total} configs, {valid} valid, {selected} selected, {compiled} compiled, {} failed",
            failed.len()
        ));
        *totals.valid.entry(family.clone()).or_insert(0) += valid;
        if let Some(by) = row["count"]["rejected_by"].as_object() {
            let reasons = totals.rejected_by.entry(family.clone()).or_default();
            reasons.extend(by.keys().cloned());
        }
        if valid > total {
            problem(format!("family {family}: valid {valid} > total {total}"));
        }
        if selected > valid || (valid > 0) != (selected > 0) {
            problem(format!(
                "family {family}: {selected} of {valid} valid configs selected"
            ));
        }
        if compiled != selected {
            problem(format!(
                "family {family}: {compiled} of the {selected} selected configs compiled"
            ));
        }
        for f in failed.iter().take(3) {
            problem(format!(
                "family {family}: {} failed to compile:\n{}",
                f[0].as_str().unwrap_or("?"),
                tail(f[1].as_str().unwrap_or(""), 1500)
            ));
        }
        if failed.len() > 3 {
            problem(format!(
                "family {family}: {} more compile failures",
                failed.len() - 3
            ));
        }
        if !seen.insert(family.clone()) {
            problem(format!("family {family} is reported twice"));
        }
    }
    let missing: Vec<_> = families.difference(&seen).collect();
    if !missing.is_empty() {
        problem(format!("families missing from the report: {missing:?}"));
    }
    let extra: Vec<_> = seen.difference(families).collect();
    if !extra.is_empty() {
        problem(format!("unknown families in the report: {extra:?}"));
    }
    println!(
        "{} {} for {arch} with NVRTC {nvrtc} in {:.1} s: {}",
        op.name(),
        report["shape"],
        report["wall_s"].as_f64().unwrap_or(0.0),
        summary.join("; ")
    );
}

/// [`compile_covering_sets`] for `arch` with the NVRTC in the directory named by `var`, which
/// must be NVRTC `nvrtc_major`; asserts that nothing went wrong.
fn assert_every_family_compiles(arch: &str, var: &str, nvrtc_major: &str) {
    let dir = nvrtc_dir(var);
    let problems = compile_covering_sets(arch, &dir, nvrtc_major);
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
#[ignore = "needs NVRTC: bash scripts/test.sh runs them"]
fn every_family_compiles_for_sm_90_with_nvrtc_13() {
    assert_every_family_compiles("sm_90", "AUTOTUNE_NVRTC13_DIR", "13");
}

#[test]
#[ignore = "needs NVRTC: bash scripts/test.sh runs them"]
fn every_family_compiles_for_sm_89_with_nvrtc_13() {
    assert_every_family_compiles("sm_89", "AUTOTUNE_NVRTC13_DIR", "13");
}

#[test]
#[ignore = "needs NVRTC: bash scripts/test.sh runs them"]
fn every_family_compiles_for_sm_61_with_nvrtc_12() {
    assert_every_family_compiles("sm_61", "AUTOTUNE_NVRTC12_DIR", "12");
}

#[test]
#[ignore = "needs NVRTC: bash scripts/test.sh runs them"]
fn nvrtc_13_refuses_sm_61_and_points_to_nvrtc_12() {
    let dir = nvrtc_dir("AUTOTUNE_NVRTC13_DIR");
    let r = autotune(
        &dir,
        &["--shape", "2048x2048x2048", "--dry-run", "--arch", "sm_61"],
    );
    let ctx = format!(
        "exit: {:?}\nstdout:\n{}\nstderr:\n{}",
        r.code,
        tail(&r.stdout, 2000),
        tail(&r.stderr, 2000)
    );
    assert!(!r.success(), "NVRTC 13 compiled for sm_61: {ctx}");
    assert_eq!(r.code, Some(1), "{ctx}");
    assert!(!r.stderr.contains("panicked"), "{ctx}");
    let errors: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| l.starts_with("Error: "))
        .collect();
    assert_eq!(errors.len(), 1, "expected one `Error: ...` line: {ctx}");
    for needle in ["NVRTC 13", "sm_61", "NVRTC 12", "nvidia-cuda-nvrtc-cu12"] {
        assert!(errors[0].contains(needle), "expected {needle:?}: {ctx}");
    }
}

/// `autotune export --format cuda-header` against the committed database: each header compiles
/// alone with NVRTC 13 for sm_90, and several headers (one included twice, two of one gemv
/// family whose `__device__` helpers share names) compile together in one translation unit.
#[test]
#[ignore = "needs NVRTC: bash scripts/test.sh runs them"]
fn exported_headers_compile_and_coexist_with_nvrtc_13() {
    let dir = nvrtc_dir("AUTOTUNE_NVRTC13_DIR");
    let db = H200_DB;
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let export = |op: &str, shape: &str, out: &Path, extra: &[&str]| {
        let out = out.to_str().expect("a UTF-8 temporary path");
        let mut args = vec![
            "export",
            "--format",
            "cuda-header",
            "--op",
            op,
            "--shape",
            shape,
            "--gpu",
            "NVIDIA H200",
            "--db",
            db,
            "-o",
            out,
            "--check-compile",
        ];
        args.extend_from_slice(extra);
        let r = autotune_ok(&dir, &args);
        assert!(
            r.stderr.contains("compiles for sm_90 with NVRTC 13."),
            "{}",
            r.stderr
        );
        std::fs::read_to_string(out).expect("the header was written")
    };
    let gemm = tmp.path().join("gemm.cuh");
    let gemv = tmp.path().join("gemv.cuh");
    let gemm_text = export("gemm", "2048x2048x2048", &gemm, &[]);
    let gemv_text = export("gemv", "4096x4096", &gemv, &[]);
    assert!(gemm_text.contains("autotune_gemm_2048x2048x2048("));
    assert!(gemv_text.contains("autotune_gemv_4096x4096("));
    assert!(gemv_text.contains("namespace autotune_gemv_warp_row_"));
    // gemm twice (its guards make the second a no-op), then gemv 4096x4096, then gemv
    // 16384x16384, which the database tunes to another gemv_warp_row config.
    let before = tmp.path().join("before.cu");
    std::fs::write(&before, format!("{gemm_text}{gemm_text}{gemv_text}"))
        .expect("writing the combined source");
    let before = before.to_str().expect("a UTF-8 temporary path");
    let big = export(
        "gemv",
        "16384x16384",
        &tmp.path().join("gemv_big.cuh"),
        &["--check-with", before],
    );
    assert!(big.contains("namespace autotune_gemv_warp_row_"), "{big}");
    assert_ne!(big, gemv_text);
    // The full interface: helpers with cuBLAS's arguments, beside the plain headers.
    let tn = export(
        "gemm",
        "512x512x64:tn:b8:beta",
        &tmp.path().join("gemm_tn.cuh"),
        &["--check-with", before],
    );
    assert!(
        tn.contains("autotune_gemm_512x512x64_tn_b8_beta(const float* A, int lda, long long strideA, const float* B, int ldb, long long strideB, float* C, int ldc, long long strideC, int batch, float alpha, float beta, cudaStream_t stream)"),
        "{tn}"
    );
    assert!(
        tn.contains("#define TRANS_A 1\n#define TRANS_B 0\n"),
        "{tn}"
    );
    let t = export(
        "gemv",
        "4096x4096:t:b4",
        &tmp.path().join("gemv_t.cuh"),
        &["--check-with", before],
    );
    assert!(t.contains("autotune_gemv_4096x4096_t_b4(const float* A, int lda, long long strideA, const float* x, long long strideX, float* y, long long strideY, int batch, float alpha, float beta"), "{t}");
}

/// `export --format cubin` writes the database's choice compiled by NVRTC (an ELF cubin for
/// cuobjdump), without a GPU.
#[test]
#[ignore = "needs NVRTC: bash scripts/test.sh runs them"]
fn exported_cubin_is_an_elf_for_the_arch() {
    let dir = nvrtc_dir("AUTOTUNE_NVRTC13_DIR");
    let db = H200_DB;
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let out = tmp.path().join("gemm.cubin");
    let out_s = out.to_str().expect("a UTF-8 temporary path");
    let args = [
        "export",
        "--format",
        "cubin",
        "--op",
        "gemm",
        "--shape",
        "2048x2048x2048",
        "--gpu",
        "NVIDIA H200",
        "--db",
        db,
        "-o",
        out_s,
    ];
    let r = autotune_ok(&dir, &args);
    assert!(
        r.stderr.contains("for sm_90 with NVRTC 13."),
        "{}",
        r.stderr
    );
    let bytes = std::fs::read(&out).expect("the cubin was written");
    assert!(bytes.len() > 1024, "{} bytes", bytes.len());
    assert_eq!(&bytes[..4], b"\x7fELF", "not an ELF file");
}

/// `--dry-run` over a suite compiles each kernel once: the second shape, which prunes to the
/// same configs, takes every kernel from the run's cache.
#[test]
#[ignore = "needs NVRTC: bash scripts/test.sh runs them"]
fn dry_run_over_a_suite_compiles_each_kernel_once() {
    let dir = nvrtc_dir("AUTOTUNE_NVRTC13_DIR");
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("two.toml");
    std::fs::write(
        &suite,
        "op = \"gemm\"\nshapes = [\"1024x1024x1024\", \"2048x2048x2048\"]\n",
    )
    .unwrap();
    let suite = suite.to_str().unwrap();
    let args = [
        "--suite",
        suite,
        "--family",
        "gemm_tiled",
        "--dry-run",
        "--arch",
        "sm_90",
        "--json",
    ];
    let r = autotune_ok(&dir, &args);
    let reports: Vec<Value> = serde_json::Deserializer::from_str(&r.stdout)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(reports.len(), 2, "{}", r.stdout);
    let planned = |v: &Value| {
        v["families"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["compiled"].as_u64().unwrap() + f["failed"].as_array().unwrap().len() as u64)
            .sum::<u64>()
    };
    assert_eq!(planned(&reports[0]), 3);
    assert_eq!(reports[0]["compiled_now"], 3, "{}", r.stdout);
    assert_eq!(planned(&reports[1]), 3);
    assert_eq!(reports[1]["compiled_now"], 0, "{}", r.stdout);
}

/// Both wheels' directories and a `LD_LIBRARY_PATH` of the two, NVRTC 13 first:
/// `(dir13, dir12, path)`.
fn both_nvrtcs() -> (PathBuf, PathBuf, String) {
    let dir13 = nvrtc_dir("AUTOTUNE_NVRTC13_DIR");
    let dir12 = nvrtc_dir("AUTOTUNE_NVRTC12_DIR");
    let path = format!("{}:{}", dir13.display(), dir12.display());
    (dir13, dir12, path)
}

/// A dry run of gemm_tiled on 64x64x64 for `arch` as JSON, with `env` set: the run and its
/// report (`Null` when stdout is not one).
fn small_dry_run(arch: &str, env: &[(&str, &str)]) -> (Run, Value) {
    small_dry_run_with(arch, &[], env)
}

/// [`small_dry_run`] with `extra` arguments.
fn small_dry_run_with(arch: &str, extra: &[&str], env: &[(&str, &str)]) -> (Run, Value) {
    let mut args = vec![
        "--shape",
        "64x64x64",
        "--family",
        "gemm_tiled",
        "--dry-run",
        "--arch",
        arch,
        "--json",
    ];
    args.extend_from_slice(extra);
    let r = common::run_env(&args, env);
    let report = serde_json::from_str(&r.stdout).unwrap_or(Value::Null);
    (r, report)
}

/// Issue 19: with NVRTC 13 and 12 both on `LD_LIBRARY_PATH` (13 first), `AUTOTUNE_NVRTC`
/// naming NVRTC 12 (its directory, or its file) compiles for sm_61 with NVRTC 12, and the run
/// says which library it loaded.
#[test]
#[ignore = "needs NVRTC: bash scripts/test.sh runs them"]
fn autotune_nvrtc_chooses_nvrtc_12_over_13_on_the_library_path() {
    let (_, dir12, path) = both_nvrtcs();
    let lib12 = dir12.join("libnvrtc.so.12");
    let lib12_s = lib12.to_str().expect("a UTF-8 library path");
    let dir12_s = dir12.to_str().expect("a UTF-8 library directory");
    for chosen in [dir12_s, lib12_s] {
        let env = [
            ("LD_LIBRARY_PATH", path.as_str()),
            ("AUTOTUNE_NVRTC", chosen),
        ];
        let (r, report) = small_dry_run("sm_61", &env);
        assert!(r.success(), "{}", r.context());
        let nvrtc = report["nvrtc"].as_str().unwrap_or("");
        assert!(nvrtc.starts_with("12."), "NVRTC {nvrtc:?}: {}", r.context());
        assert_eq!(report["nvrtc_library"], lib12_s, "{}", r.context());
        assert_eq!(report["families"][0]["compiled"], 3, "{}", r.context());
    }
    // The table's header line names the version and the library too.
    let args = [
        "--shape",
        "64x64x64",
        "--family",
        "gemm_tiled",
        "--dry-run",
        "--arch",
        "sm_61",
    ];
    let r = common::run_env(
        &args,
        &[
            ("LD_LIBRARY_PATH", path.as_str()),
            ("AUTOTUNE_NVRTC", dir12_s),
        ],
    );
    assert!(r.success(), "{}", r.context());
    let header = r.stdout.lines().next().unwrap_or("");
    assert!(
        header.starts_with("dry run: gemm 64x64x64 for sm_61 with NVRTC 12.")
            && header.ends_with(&format!("({lib12_s})")),
        "{}",
        r.context()
    );
}

/// A dry run compiles through the disk cache a tuning run and the runtime share: the second
/// run of the same kernels in a new process compiles none, and `--no-cache` compiles them all.
#[test]
#[ignore = "needs NVRTC: ..."]
fn a_second_dry_run_is_served_from_the_disk_cache() {
    let (dir13, _, _) = both_nvrtcs();
    let cache = tempfile::tempdir().expect("a temporary directory");
    let lib = dir13.to_str().expect("a UTF-8 library directory");
    let env = [
        ("AUTOTUNE_NVRTC", lib),
        (
            "AUTOTUNE_CACHE_DIR",
            cache.path().to_str().expect("a UTF-8 path"),
        ),
    ];
    let compiled_now = |extra: &[&str]| {
        let (r, report) = small_dry_run_with("sm_90", extra, &env);
        assert!(r.success(), "{}", r.context());
        assert_eq!(report["families"][0]["compiled"], 3, "{}", r.context());
        report["compiled_now"].as_u64().unwrap_or(u64::MAX)
    };
    assert_eq!(compiled_now(&[]), 3, "the first run compiles every kernel");
    assert_eq!(
        compiled_now(&[]),
        0,
        "the second run is served from the disk cache"
    );
    assert_eq!(compiled_now(&["--no-cache"]), 3, "--no-cache bypasses it");
}

/// Without `AUTOTUNE_NVRTC`, the same library path loads NVRTC 13 (cudarc's file-name order,
/// whatever the directory order): sm_90 compiles with it, and sm_61 is refused with the advice
/// to set `AUTOTUNE_NVRTC` to NVRTC 12.
#[test]
#[ignore = "needs NVRTC: bash scripts/test.sh runs them"]
fn without_autotune_nvrtc_the_library_path_loads_nvrtc_13() {
    let (dir13, _, path) = both_nvrtcs();
    let env = [("LD_LIBRARY_PATH", path.as_str()), ("AUTOTUNE_NVRTC", "")];
    let (r, report) = small_dry_run("sm_90", &env);
    assert!(r.success(), "{}", r.context());
    let nvrtc = report["nvrtc"].as_str().unwrap_or("");
    assert!(nvrtc.starts_with("13."), "NVRTC {nvrtc:?}: {}", r.context());
    // The loader's path is the real one (`/proc/self/maps`); the variable's may go through a
    // symbolic link (scripts/test.sh's `.venv`).
    let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let library = PathBuf::from(report["nvrtc_library"].as_str().unwrap_or(""));
    assert_eq!(
        library.parent().map(real),
        Some(real(&dir13)),
        "the loaded library is not the NVRTC 13 wheel's: {}",
        r.context()
    );
    let (r, _) = small_dry_run("sm_61", &env);
    check_error(
        &r,
        &[
            "NVRTC 13",
            "sm_61",
            "NVRTC 12",
            "AUTOTUNE_NVRTC",
            "libnvrtc.so.12",
        ],
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

/// `AUTOTUNE_NVRTC` naming a missing file, or a directory without libnvrtc, is a one-line
/// error naming it, with no fallback to the NVRTC on `LD_LIBRARY_PATH`. Needs no NVRTC: the
/// wheels go on the library path when the variables name them, to show that none is taken.
#[test]
fn autotune_nvrtc_naming_a_missing_library_is_an_error() {
    let path = ["AUTOTUNE_NVRTC13_DIR", "AUTOTUNE_NVRTC12_DIR"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .filter(|d| !d.is_empty())
        .collect::<Vec<_>>()
        .join(":");
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let missing = tmp.path().join("cuda-12/lib64/libnvrtc.so.12");
    let missing = missing.to_str().expect("a UTF-8 temporary path");
    let empty = tmp.path().to_str().expect("a UTF-8 temporary path");
    for (chosen, why) in [
        (missing, "no such file or directory"),
        (empty, "no libnvrtc.so"),
    ] {
        let env = [
            ("LD_LIBRARY_PATH", path.as_str()),
            ("AUTOTUNE_NVRTC", chosen),
        ];
        let (r, _) = small_dry_run("sm_61", &env);
        check_error(&r, &[&format!("AUTOTUNE_NVRTC={chosen}"), why])
            .unwrap_or_else(|e| panic!("{e}"));
    }
}

/// `--arch compute_XY` compiles PTX for that virtual arch (what `verify --ptx-arch` and the
/// GPU sweep load, JIT-compiled by the driver): compute_75 with NVRTC 13 (its oldest) and
/// compute_61 with NVRTC 12.
#[test]
#[ignore = "needs NVRTC: bash scripts/test.sh runs them"]
fn dry_run_compiles_ptx_for_older_virtual_archs() {
    let (dir13, dir12, _) = both_nvrtcs();
    for (arch, dir) in [("compute_75", &dir13), ("compute_61", &dir12)] {
        let dir = dir.to_str().expect("a UTF-8 directory");
        let (r, report) = small_dry_run(arch, &[("AUTOTUNE_NVRTC", dir)]);
        assert!(r.success(), "{}", r.context());
        assert_eq!(report["arch"], arch, "{}", r.context());
        assert_eq!(report["families"][0]["failed"], Value::Array(vec![]));
        assert!(report["families"][0]["compiled"].as_u64() >= Some(1));
    }
}

/// The tensor-core family compiles for the Ada generation (sm_89, the RTX 40 cards: TF32
/// mma.sync, 99 KiB of shared memory per block), and a dry run for sm_61 (no TF32 tensor
/// cores) offers none of its configs, giving its `sm` rule as the reason.
#[test]
#[ignore = "needs NVRTC: bash scripts/test.sh runs them"]
fn tf32x3_compiles_for_sm_89_and_is_pruned_on_sm_61() {
    let (dir13, dir12, _) = both_nvrtcs();
    let run = |arch: &str, dir: &Path| {
        let dir = dir.to_str().expect("a UTF-8 directory");
        let args = [
            "--shape",
            "1024x1024x1024:nt",
            "--family",
            "gemm_tf32x3",
            "--dry-run",
            "--arch",
            arch,
            "--json",
        ];
        common::run_env(&args, &[("AUTOTUNE_NVRTC", dir)])
    };
    let r = run("sm_89", &dir13);
    assert!(r.success(), "{}", r.context());
    let report: Value = serde_json::from_str(&r.stdout).expect("a JSON report");
    let ada = &report["families"][0];
    let valid = ada["count"]["valid"].as_u64().unwrap_or(0);
    assert!(valid > 0, "{}", r.context());
    assert_eq!(ada["compiled"].as_u64(), Some(valid), "{}", r.context());
    assert_eq!(ada["failed"], Value::Array(vec![]), "{}", r.context());
    // Nothing left to compile: the run stops with the reason.
    let r = run("sm_61", &dir12);
    assert_eq!(r.code, Some(1), "{}", r.context());
    assert!(
        r.stderr.contains("every config") && r.stderr.contains("gemm_tf32x3: {\"sm >= 80\""),
        "{}",
        r.context()
    );
}
