//! Compiles every config of every built-in family for the archs the project targets, with the
//! NVRTC each needs, through `autotune --dry-run` (no GPU needed):
//!
//! * sm_90 (H100/H200) with NVRTC 13, from the directory in `AUTOTUNE_NVRTC13_DIR`;
//! * sm_61 (GTX 1080 Ti) with NVRTC 12, from the directory in `AUTOTUNE_NVRTC12_DIR`
//!   (NVRTC 13 dropped archs older than sm_75).
//!
//! cudarc loads libnvrtc once per process and tries `libnvrtc.so.13` before `.so.12`, so each
//! arch is compiled in its own `autotune` process whose `LD_LIBRARY_PATH` holds only that one
//! directory. `scripts/test.sh` installs both NVRTC wheels and sets the variables. When one is
//! unset or its directory is missing, the test prints `skipped: <reason>` and passes, unless
//! `AUTOTUNE_REQUIRE_NVRTC=1` (set in CI), which turns the skip into a failure.

mod common;

use autotune::family::catalog::Catalog;
use autotune::problem::Op;
use common::{nvrtc_dir, Run, H200_DB};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::Path;

/// The shape each op's families are compiled for.
fn shape_for(op: Op) -> &'static str {
    match op {
        Op::Gemm => "2048x2048x2048",
        Op::Gemv => "4096x4096",
    }
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

/// Runs `autotune args` with `LD_LIBRARY_PATH` set to `lib_dir` only.
fn autotune(lib_dir: &Path, args: &[&str]) -> Run {
    let lib_dir = lib_dir.to_str().expect("a UTF-8 library directory");
    common::run_env(args, &[("LD_LIBRARY_PATH", lib_dir)])
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

/// Compiles every config of every family for `arch` with the NVRTC in `lib_dir`; returns one
/// problem description per thing that went wrong (empty when all compiled).
fn compile_everything(arch: &str, lib_dir: &Path, nvrtc_major: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (op, families) in ops_with_families() {
        let shape = shape_for(op);
        let args = [
            "--op",
            op.name(),
            "--shape",
            shape,
            "--dry-run",
            "--arch",
            arch,
            "--json",
        ];
        let r = autotune(lib_dir, &args);
        let what = format!(
            "autotune {} (LD_LIBRARY_PATH={})",
            args.join(" "),
            lib_dir.display()
        );
        let report: Value = match serde_json::from_str(&r.stdout) {
            Ok(v) => v,
            Err(e) => {
                problems.push(format!(
                    "{what}: exit {:?}, stdout is not the JSON report ({e})\nstderr:\n{}\nstdout:\n{}",
                    r.code,
                    tail(&r.stderr, 4000),
                    tail(&r.stdout, 2000)
                ));
                continue;
            }
        };
        let mut problem = |p: String| problems.push(format!("{what}: {p}"));
        if !r.success() {
            problem(format!(
                "exit {:?}, stderr:\n{}",
                r.code,
                tail(&r.stderr, 2000)
            ));
        }
        if report["op"] != op.name() {
            problem(format!("report op is {}", report["op"]));
        }
        if report["arch"] != arch {
            problem(format!("report arch is {}", report["arch"]));
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
            continue;
        };
        let mut seen = BTreeSet::new();
        let mut summary = Vec::new();
        for row in rows {
            let family = row["count"]["family"].as_str().unwrap_or("?").to_string();
            let total = row["count"]["total"].as_u64().unwrap_or(0);
            let valid = row["count"]["valid"].as_u64().unwrap_or(0);
            let compiled = row["compiled"].as_u64().unwrap_or(0);
            let failed = row["failed"].as_array().cloned().unwrap_or_default();
            summary.push(format!(
                "{family}: {total} configs, {valid} valid, {compiled} compiled, {} failed",
                failed.len()
            ));
            if valid == 0 {
                problem(format!(
                    "family {family} has no valid config for {arch} (rejected_by: {})",
                    row["count"]["rejected_by"]
                ));
            }
            if valid > total {
                problem(format!("family {family}: valid {valid} > total {total}"));
            }
            if compiled != valid {
                problem(format!(
                    "family {family}: {compiled} of {valid} valid configs compiled"
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
        let extra: Vec<_> = seen.difference(&families).collect();
        if !extra.is_empty() {
            problem(format!("unknown families in the report: {extra:?}"));
        }
        println!(
            "{} {shape} for {arch} with NVRTC {nvrtc} in {:.1} s: {}",
            op.name(),
            report["wall_s"].as_f64().unwrap_or(0.0),
            summary.join("; ")
        );
    }
    problems
}

/// [`compile_everything`] for `arch` with the NVRTC in the directory named by `var`, which must
/// be NVRTC `nvrtc_major`; asserts that nothing went wrong.
fn assert_everything_compiles(arch: &str, var: &str, nvrtc_major: &str) {
    let Some(dir) = nvrtc_dir(var) else {
        return;
    };
    let problems = compile_everything(arch, &dir, nvrtc_major);
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn every_config_compiles_for_sm_90_with_nvrtc_13() {
    assert_everything_compiles("sm_90", "AUTOTUNE_NVRTC13_DIR", "13");
}

#[test]
fn every_config_compiles_for_sm_61_with_nvrtc_12() {
    assert_everything_compiles("sm_61", "AUTOTUNE_NVRTC12_DIR", "12");
}

#[test]
fn nvrtc_13_refuses_sm_61_and_points_to_nvrtc_12() {
    let Some(dir) = nvrtc_dir("AUTOTUNE_NVRTC13_DIR") else {
        return;
    };
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
fn exported_headers_compile_and_coexist_with_nvrtc_13() {
    let Some(dir) = nvrtc_dir("AUTOTUNE_NVRTC13_DIR") else {
        return;
    };
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
}

/// `export --format cubin` writes the database's choice compiled by NVRTC (an ELF cubin for
/// cuobjdump), without a GPU.
#[test]
fn exported_cubin_is_an_elf_for_the_arch() {
    let Some(dir) = nvrtc_dir("AUTOTUNE_NVRTC13_DIR") else {
        return;
    };
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
fn dry_run_over_a_suite_compiles_each_kernel_once() {
    let Some(dir) = nvrtc_dir("AUTOTUNE_NVRTC13_DIR") else {
        return;
    };
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
