//! Command-line behaviour on bad input: every mistake gives a non-zero exit and one readable
//! `Error: ...` line naming what is wrong and what is accepted (where the advice names a flag,
//! a `hint: ...` line under it), never a panic. Needs no GPU and no NVRTC: every case here
//! fails before a CUDA library is loaded.

use assert_cmd::Command;
use std::fs;
use std::path::Path;

fn autotune() -> Command {
    Command::cargo_bin("autotune").expect("the autotune binary is built by cargo test")
}

/// What one run printed and how it ended.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Run {
    let out = autotune()
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("could not run autotune {args:?}: {e}"));
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `args`, expects exit code 1 and a single `Error: ...` line on stderr, maybe followed by
/// one `hint: ...` line, together containing every one of `needles`; returns those lines.
fn fails_with(args: &[&str], needles: &[&str]) -> String {
    let r = run(args);
    let ctx = format!(
        "autotune {args:?}\nexit: {:?}\nstdout:\n{}\nstderr:\n{}",
        r.code, r.stdout, r.stderr
    );
    assert!(
        !r.stderr.contains("panicked") && !r.stderr.contains("internal failure"),
        "panicked: {ctx}"
    );
    assert_eq!(r.code, Some(1), "expected exit code 1: {ctx}");
    let lines: Vec<&str> = r.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let hint_ok = lines.len() == 1 || (lines.len() == 2 && lines[1].starts_with("hint: "));
    assert!(
        hint_ok,
        "expected one error line and at most a hint line on stderr: {ctx}"
    );
    assert!(
        lines[0].starts_with("Error: "),
        "expected `Error: ...`: {ctx}"
    );
    let text = lines.join("\n");
    for needle in needles {
        assert!(
            text.contains(needle),
            "expected {needle:?} in the error or its hint: {ctx}"
        );
    }
    assert!(
        r.stdout.trim().is_empty(),
        "expected nothing on stdout: {ctx}"
    );
    text
}

#[test]
fn malformed_shapes_say_what_is_expected() {
    for shape in ["12", "axbxc", "1x1x", "x", "1xx1", "2048x2048"] {
        fails_with(
            &["--shape", shape],
            &[
                &format!("malformed shape '{shape}'"),
                "MxNxK",
                "2048x2048x2048",
            ],
        );
    }
    fails_with(
        &["--op", "gemv", "--shape", "4x4x4x4"],
        &["malformed shape", "MxK or Mx1xK"],
    );
}

#[test]
fn zero_and_negative_dimensions_are_rejected() {
    fails_with(&["--shape", "0x4x4"], &["0x4x4", "at least 1", "M = 0"]);
    fails_with(&["--shape", "4x-4x4"], &["4x-4x4", "at least 1", "N = -4"]);
    fails_with(&["--shape", "4x4x0"], &["4x4x0", "at least 1", "K = 0"]);
}

#[test]
fn overflowing_and_too_large_shapes_are_rejected() {
    fails_with(
        &["--shape", "4x4x99999999999999999999999"],
        &["4x4x99999999999999999999999", "too large", "2^31 - 1"],
    );
    fails_with(
        &["--shape", "100000x100000x1"],
        &["100000x100000x1", "too large", "C (MxN)", "2147483647"],
    );
    fails_with(
        &["--op", "gemv", "--shape", "100000x100000"],
        &["too large", "A (MxK)"],
    );
}

#[test]
fn unknown_op_lists_the_accepted_ones() {
    fails_with(
        &["--op", "conv", "--shape", "4x4x4"],
        &["unknown op 'conv'", "gemm", "gemv"],
    );
}

#[test]
fn gemv_needs_n_equal_to_one() {
    fails_with(
        &["--op", "gemv", "--shape", "4x2x4"],
        &["4x2x4", "N = 2", "MxK or Mx1xK"],
    );
}

#[test]
fn unknown_option_is_a_usage_error() {
    let r = run(&["--frobnicate"]);
    let ctx = format!("exit: {:?}\nstderr:\n{}", r.code, r.stderr);
    assert_eq!(r.code, Some(2), "clap's usage-error exit code: {ctx}");
    assert!(r.stderr.contains("'--frobnicate'"), "{ctx}");
    assert!(r.stderr.to_lowercase().contains("error:"), "{ctx}");
    assert!(r.stderr.contains("--help"), "{ctx}");
    assert!(!r.stderr.contains("panicked"), "{ctx}");
}

#[test]
fn missing_shape_is_a_usage_error() {
    let r = run(&[]);
    let ctx = format!("exit: {:?}\nstderr:\n{}", r.code, r.stderr);
    assert_eq!(r.code, Some(2), "{ctx}");
    assert!(r.stderr.contains("--shape"), "{ctx}");
    assert!(!r.stderr.contains("panicked"), "{ctx}");
}

#[test]
fn dry_run_needs_a_valid_arch() {
    fails_with(
        &["--shape", "64x64x64", "--dry-run"],
        &["--dry-run needs --arch", "sm_90", "sm_61"],
    );
    fails_with(
        &["--shape", "64x64x64", "--dry-run", "--arch", "hopper"],
        &["'hopper' is not an arch", "sm_XY", "sm_90"],
    );
}

#[test]
fn arch_without_dry_run_is_rejected() {
    fails_with(
        &["--shape", "64x64x64", "--arch", "sm_90"],
        &["--arch only applies with --dry-run"],
    );
}

/// A database whose line 3 is not TOML: the run stops before any GPU work, names the file and
/// the line, and leaves the file exactly as it was.
#[test]
fn corrupt_database_is_reported_with_its_line_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tuning.toml");
    let text = "schema_version = 1\n\n[[gpu]\nname = \"NVIDIA H100 80GB HBM3\"\narch = \"sm_90\"\n";
    fs::write(&db, text).unwrap();
    let line = fails_with(
        &["--shape", "64x64x64", "--db", db.to_str().unwrap()],
        &[db.to_str().unwrap(), "line 3", "left untouched"],
    );
    assert!(!line.contains("line 1,"), "{line}");
    assert_eq!(
        fs::read(&db).unwrap(),
        text.as_bytes(),
        "the file was changed"
    );
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        names,
        ["tuning.toml"],
        "stray files left next to the database"
    );
}

#[test]
fn newer_schema_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tuning.toml");
    let text = "schema_version = 99\n\n[[future_table]]\nx = 1\n";
    fs::write(&db, text).unwrap();
    fails_with(
        &["--shape", "64x64x64", "--db", db.to_str().unwrap()],
        &[db.to_str().unwrap(), "newer", "99"],
    );
    assert_eq!(
        fs::read(&db).unwrap(),
        text.as_bytes(),
        "the file was changed"
    );
}

#[test]
fn database_path_that_is_a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    fails_with(
        &["--shape", "64x64x64", "--db", path],
        &[path, "is a directory"],
    );
}

/// Whether this machine may have a usable GPU: device nodes, or the driver library.
fn gpu_present() -> Option<String> {
    for node in ["/dev/nvidiactl", "/dev/nvidia0"] {
        if Path::new(node).exists() {
            return Some(format!("{node} exists"));
        }
    }
    if let Ok(out) = std::process::Command::new("ldconfig").arg("-p").output() {
        if String::from_utf8_lossy(&out.stdout).contains("libcuda.so") {
            return Some("ldconfig lists libcuda.so".into());
        }
    }
    let ld = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    for dir in ld.split(':').filter(|d| !d.is_empty()) {
        if Path::new(dir).join("libcuda.so.1").exists()
            || Path::new(dir).join("libcuda.so").exists()
        {
            return Some(format!("{dir} holds libcuda.so"));
        }
    }
    None
}

#[test]
fn no_gpu_gives_a_clear_error_and_writes_no_database() {
    if let Some(why) = gpu_present() {
        println!("skipped: a GPU is present ({why})");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.toml");
    let line = fails_with(&["--shape", "64x64x64", "--db", db.to_str().unwrap()], &[]);
    assert!(
        line.contains("libcuda") || line.contains("no CUDA device"),
        "expected the missing driver or device to be named: {line}"
    );
    assert!(
        line.contains("--dry-run"),
        "expected the no-GPU alternative: {line}"
    );
    assert!(!db.exists(), "a failed run created the database");
}

#[test]
fn help_lists_the_main_options() {
    let r = run(&["--help"]);
    assert_eq!(r.code, Some(0), "stderr:\n{}", r.stderr);
    for opt in ["--shape", "--op", "--db", "--dry-run", "--arch", "--json"] {
        assert!(r.stdout.contains(opt), "--help lacks {opt}:\n{}", r.stdout);
    }
}

/// The committed H200 database with every entry's checksum set to this build's, so lookups
/// treat its entries as current whatever the templates' history.
fn current_h200_db(dir: &Path) -> std::path::PathBuf {
    let catalog = autotune::family::catalog::Catalog::builtin().unwrap();
    let mut db = autotune::db::Database::load(Path::new(H200_DB)).unwrap();
    for e in &mut db.entries {
        e.checksum = catalog.get(&e.family).unwrap().checksum.clone();
    }
    let path = dir.join("h200-current.toml");
    db.save(&path).unwrap();
    path
}

/// `autotune best` against a committed database: every lookup rule, no GPU needed.
#[test]
fn best_explains_each_lookup_rule_without_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let current = current_h200_db(dir.path());
    let db = current.to_str().unwrap();
    let run = |args: &[&str]| {
        let out = Command::cargo_bin("autotune")
            .unwrap()
            .args(["best", "--db", db])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let exact = run(&["--gpu", "NVIDIA H200", "--shape", "2048x2048x2048"]);
    assert!(exact.contains("(exact:"), "{exact}");
    assert!(exact.contains("launch gemm_"), "{exact}");
    let near = run(&["--gpu", "NVIDIA H200", "--shape", "3000x3000x3000"]);
    assert!(near.contains("nearest tuned shape on this GPU"), "{near}");
    assert!(near.contains("4096x4096x4096"), "{near}");
    let gemv = run(&[
        "--gpu",
        "NVIDIA H200",
        "--op",
        "gemv",
        "--shape",
        "16000x16000",
    ]);
    assert!(gemv.contains("16384x16384"), "{gemv}");
    let arch = run(&[
        "--gpu",
        "NVIDIA H100 80GB HBM3",
        "--arch",
        "sm_90",
        "--shape",
        "2048x2048x2048",
    ]);
    assert!(arch.contains("another GPU of the same arch"), "{arch}");
    let default = run(&[
        "--gpu",
        "NVIDIA GeForce GTX 1080 Ti",
        "--arch",
        "sm_61",
        "--shape",
        "64x64x64",
    ]);
    assert!(default.contains("built-in default"), "{default}");
    let json = run(&[
        "--gpu",
        "NVIDIA H200",
        "--shape",
        "2048x2048x2048",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["rule"], "exact");
}

/// An entry tuned against another version of its template is passed over, and `best` says so.
#[test]
fn best_passes_over_stale_entries_and_says_so() {
    let out = Command::cargo_bin("autotune")
        .unwrap()
        .args(["best", "--db", H200_DB, "--gpu", "NVIDIA H200"])
        .args(["--shape", "2048x2048x2048", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The committed fixture predates the current templates: none of its entries is current.
    assert_ne!(v["rule"], "exact", "{v}");
    assert_eq!(v["skipped"][0]["rule"], "exact", "{v}");
    assert_eq!(v["skipped"][0]["freshness"], "stale", "{v}");
}

/// The committed database the `best` and `export` tests read.
const H200_DB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/h200-db.toml");

#[test]
fn export_without_gpu_and_without_a_device_errors_clearly() {
    if let Some(why) = gpu_present() {
        println!("skipped: a GPU is present ({why})");
        return;
    }
    let line = fails_with(
        &[
            "export",
            "--format",
            "cuda-header",
            "--shape",
            "2048x2048x2048",
            "--db",
            H200_DB,
        ],
        &["no --gpu given"],
    );
    assert!(
        line.contains("libcuda") || line.contains("no CUDA device"),
        "expected the missing driver or device to be named: {line}"
    );
}

#[test]
fn export_unknown_format_lists_the_accepted_ones() {
    fails_with(
        &[
            "export",
            "--format",
            "ptx",
            "--shape",
            "2048x2048x2048",
            "--gpu",
            "NVIDIA H200",
            "--db",
            H200_DB,
        ],
        &[
            "unknown export format 'ptx'",
            "accepted formats: cuda-header",
        ],
    );
}

#[test]
fn export_of_a_cubin_needs_an_output_file() {
    fails_with(
        &[
            "export",
            "--format",
            "cubin",
            "--shape",
            "2048x2048x2048",
            "--gpu",
            "NVIDIA H200",
            "--db",
            H200_DB,
        ],
        &["--format cubin writes a binary file", "-o FILE.cubin"],
    );
}

#[test]
fn export_of_an_unknown_gpu_needs_its_arch() {
    fails_with(
        &[
            "export",
            "--format",
            "cuda-header",
            "--shape",
            "64x64x64",
            "--gpu",
            "Some Other GPU",
            "--db",
            H200_DB,
        ],
        &["Some Other GPU", "--arch sm_XY"],
    );
}

/// Export needs neither a GPU nor NVRTC: the header goes to stdout.
#[test]
fn export_writes_a_header_to_stdout_without_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let db = current_h200_db(dir.path());
    let r = run(&[
        "export",
        "--format",
        "cuda-header",
        "--op",
        "gemv",
        "--shape",
        "4096x4096",
        "--gpu",
        "NVIDIA H200",
        "--db",
        db.to_str().unwrap(),
    ]);
    assert_eq!(r.code, Some(0), "stderr:\n{}", r.stderr);
    for needle in [
        "// Generated by autotune",
        "Rule:     exact",
        "x cuBLAS",
        "extern \"C\" __global__",
        "#undef KERNEL_NAME",
        "static inline cudaError_t autotune_gemv_4096x4096(const float* A, const float* x, float* y, cudaStream_t stream)",
    ] {
        assert!(r.stdout.contains(needle), "expected {needle:?} in:\n{}", r.stdout);
    }
}
