//! Library errors are plain data: their messages say what went wrong (the file, the value, the
//! limit) and name no command-line flag and no `autotune ...` command, since a product that
//! links the library has neither. The binary adds the advice that names flags, as a `hint: ...`
//! line under the `Error: ...` line; the second half checks that it still reaches the user.
//! Needs no GPU and no NVRTC.
//!
//! Not covered yet: `Tuned::from_path` needs a CUDA context, and the database's own errors
//! (`DbError`, `MergeError` in src/db.rs) still carry their `--db` advice until that module is
//! split; the CLI's hints for them are ready and stay silent while the message has its own.

use crate::common;
use autotune::cuda::bench::RunError;
use autotune::cuda::device::DeviceError;
use autotune::cuda::nvrtc::CompileError;
use autotune::db::Database;
use autotune::gpu::Arch;
use autotune::problem::Op;
use autotune::report::gpus::{self as cmp, CompareError};
use autotune::suite::Suite;
use autotune::tuning::cross::Portability;
use autotune::tuning::journal::{Header, JournalError};
use autotune::tuning::replay::{self, SimulateOptions};
use autotune::tuning::shard::Shard;
use common::run;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The flag `text` names, if it names one: `--` followed by a letter.
fn flag_in(text: &str) -> Option<&str> {
    text.match_indices("--").find_map(|(i, _)| {
        let rest = &text[i + 2..];
        rest.starts_with(|c: char| c.is_ascii_lowercase()).then(|| {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
                .unwrap_or(rest.len());
            &text[i..i + 2 + end]
        })
    })
}

/// Checks that `e`'s message names no flag and no `autotune` command line.
fn plain(e: impl std::fmt::Display) -> String {
    let msg = e.to_string();
    assert_eq!(flag_in(&msg), None, "a library error names a flag: {msg}");
    assert!(
        !msg.contains("autotune --") && !msg.contains("`autotune "),
        "a library error names a command: {msg}"
    );
    msg
}

#[test]
fn flag_in_finds_flags_only() {
    assert_eq!(flag_in("pass --db with a file"), Some("--db"));
    assert_eq!(flag_in("e.g. --shard 0/4"), Some("--shard"));
    assert_eq!(flag_in("use --dry-run --arch sm_XY"), Some("--dry-run"));
    assert_eq!(flag_in("a -- b, 2--3, --"), None);
}

#[test]
fn suite_errors_name_the_file_not_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.toml");
    let msg = plain(Suite::load(&missing).unwrap_err());
    assert!(
        msg.contains("cannot read suite") && msg.contains("missing.toml"),
        "{msg}"
    );
    let msg = plain(Suite::load(dir.path()).unwrap_err());
    assert!(msg.contains("is a directory"), "{msg}");
}

#[test]
fn shard_errors_name_the_value_not_the_flag() {
    for bad in ["5/4", "1/0", "x/2", "1"] {
        let msg = plain(Shard::parse(bad).unwrap_err());
        assert!(msg.contains(&format!("'{bad}'")), "{msg}");
    }
    let env: HashMap<&str, &str> = [
        ("SLURM_ARRAY_TASK_ID", "9"),
        ("SLURM_ARRAY_TASK_COUNT", "4"),
    ]
    .into_iter()
    .collect();
    let msg = plain(Shard::from_slurm(|k| env.get(k).map(|v| v.to_string())).unwrap_err());
    assert!(msg.contains("SLURM_ARRAY_TASK_ID=9"), "{msg}");
}

#[test]
fn device_and_run_errors_carry_data_not_advice() {
    plain(DeviceError::NoDriver);
    for count in [0, 2] {
        let msg = plain(DeviceError::NoDevice { ordinal: 7, count });
        assert!(
            msg.contains("no CUDA device 7") && msg.contains(&format!("{count} device(s)")),
            "{msg}"
        );
    }
    let msg = plain(RunError::TooLarge {
        shape: "65536x65536x65536".into(),
        need_mib: 49152,
        free_mib: 80000 - 49152 - 1,
        ordinal: 1,
    });
    assert!(
        msg.contains("49152 MiB") && msg.contains("device 1"),
        "{msg}"
    );
    plain(RunError::ContextLost {
        kernel: "gemm_tile2d_BM64".into(),
        reason: "CUDA_ERROR_ILLEGAL_ADDRESS".into(),
    });
    plain(JournalError::Mismatch {
        path: PathBuf::from("journal/run.jsonl"),
        what: "seed",
        theirs: "1".into(),
        ours: "2".into(),
    });
    // Which NVRTC to install is the caller's business whatever the program: it stays.
    let msg = plain(CompileError::UnsupportedArch {
        arch: Arch { major: 6, minor: 1 }.into(),
        nvrtc: "13.0".into(),
        supported: "sm_75 to sm_120".into(),
        oldest: Some(75),
    });
    assert!(
        msg.contains("NVRTC 12")
            && msg.contains("nvidia-cuda-nvrtc-cu12")
            && msg.contains("AUTOTUNE_NVRTC"),
        "{msg}"
    );
    // The variable that chooses NVRTC is the caller's too: the errors name it and what to set.
    let msg = plain(CompileError::NvrtcChoice {
        value: "/opt/cuda-12/lib64/libnvrtc.so.12".into(),
        tried: "no such file or directory".into(),
    });
    assert!(
        msg.contains("AUTOTUNE_NVRTC=/opt/cuda-12/lib64/libnvrtc.so.12")
            && msg.contains("no such file"),
        "{msg}"
    );
    let msg = plain(CompileError::NvrtcMissing);
    assert!(msg.contains("AUTOTUNE_NVRTC"), "{msg}");
    // The same for cuBLAS: AUTOTUNE_CUBLAS, and cuBLAS 12 for the GPUs cuBLAS 13 dropped.
    let msg = plain(RunError::CublasChoice {
        value: "/opt/cuda-12/lib64/libcublas.so.12".into(),
        tried: "no such file or directory".into(),
    });
    assert!(
        msg.contains("AUTOTUNE_CUBLAS=/opt/cuda-12/lib64/libcublas.so.12")
            && msg.contains("failed to load: no such file"),
        "{msg}"
    );
    let msg = plain(RunError::NoCublas);
    assert!(
        msg.contains("AUTOTUNE_CUBLAS") && msg.contains("nvidia-cublas-cu12"),
        "{msg}"
    );
    plain(RunError::CublasUnusable {
        library: "/x/libfoo.so".into(),
        reason: "it has no cublasCreate_v2".into(),
    });
    let msg = plain(RunError::CublasLacks {
        library: "/x/libcublas.so.11".into(),
        symbol: "cublasSgemvStridedBatched",
    });
    assert!(msg.contains("cublasSgemvStridedBatched"), "{msg}");
}

#[test]
fn compare_and_portability_errors_name_the_file_not_the_flag() {
    let msg = plain(cmp::resolve_gpus(&Database::new(), "empty.toml", &[]).unwrap_err());
    assert!(msg.contains("empty.toml holds no tuning results"), "{msg}");
    plain(CompareError::NoEntries {
        op: Op::Gemv,
        gpus: "NVIDIA H200".into(),
        db: "db.toml".into(),
    });
    let dir = tempfile::tempdir().unwrap();
    let msg = plain(Portability::from_json("{", Path::new("p.json")).unwrap_err());
    assert!(msg.contains("p.json is not valid"), "{msg}");
    let msg = plain(Portability::load(dir.path()).unwrap_err());
    assert!(msg.contains("could not read the portability file"), "{msg}");
}

/// A journal recorded on `gpu` (with `arch`), holding `candidates` measured candidates.
fn journal(dir: &Path, name: &str, gpu: &str, arch: Option<&str>, candidates: i64) -> PathBuf {
    let path = dir.join(name);
    let header = Header {
        arch: arch.map(String::from),
        sms: None,
        ..common::journal_header(gpu)
    };
    common::write_toy_journal(&path, &header, (0..candidates).map(|x| Ok(1.0 + x as f64)));
    path
}

#[test]
fn replay_errors_and_notes_name_no_flag() {
    let dir = tempfile::tempdir().unwrap();
    let empty = journal(dir.path(), "empty.jsonl", "NVIDIA H200", None, 0);
    let msg = plain(replay::simulate(&[empty], &SimulateOptions::default()).unwrap_err());
    assert!(msg.contains("records no candidate"), "{msg}");
    let mystery = journal(dir.path(), "mystery.jsonl", "Mystery GPU", None, 3);
    let opts = SimulateOptions {
        seeds: 0,
        ..SimulateOptions::default()
    };
    plain(replay::simulate(std::slice::from_ref(&mystery), &opts).unwrap_err());
    let sim = replay::simulate(&[mystery], &SimulateOptions::default()).unwrap();
    let r = &sim.replays[0];
    assert!(r.arch_unknown);
    let note = plain(r.model_note.as_deref().unwrap());
    assert!(note.contains("'Mystery GPU'"), "{note}");
}

/// Runs `args`; expects exit code 1, an `Error: ...` line with every one of `error` and no
/// flag, and under it a `hint: ...` line with every one of `hint`.
fn fails_with_hint(args: &[&str], error: &[&str], hint: &[&str]) {
    let r = run(args);
    let ctx = r.context();
    assert_eq!(r.code, Some(1), "{ctx}");
    let lines: Vec<&str> = r.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 2, "expected an error and a hint: {ctx}");
    let (e, h) = (lines[0], lines[1]);
    assert!(e.starts_with("Error: ") && h.starts_with("hint: "), "{ctx}");
    for n in error {
        assert!(e.contains(n), "expected {n:?} in the error line: {ctx}");
    }
    for n in hint {
        assert!(h.contains(n), "expected {n:?} in the hint line: {ctx}");
    }
}

#[test]
fn the_cli_adds_the_advice_under_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_string();
    let missing = s(&dir.path().join("missing.toml"));
    fails_with_hint(
        &["--suite", &missing],
        &["cannot read suite", &missing, "No such file"],
        &["--suite configs/suites/gemm.toml"],
    );
    fails_with_hint(
        &["--suite", &s(dir.path())],
        &["is a directory"],
        &["pass --suite with a suite file"],
    );
    fails_with_hint(
        &["--suite", "configs/suites/gemm.toml", "--shard", "5/4"],
        &["shard '5/4'", "0 <= INDEX < COUNT"],
        &["--shard 0/4"],
    );
    let empty_db = dir.path().join("empty.toml");
    std::fs::write(&empty_db, "schema_version = 1\n").unwrap();
    fails_with_hint(
        &["compare", "--db", &s(&empty_db)],
        &["holds no tuning results yet"],
        &[
            "autotune --suite configs/suites/gemm.toml --db",
            "pass --db",
        ],
    );
    let bad = dir.path().join("portability.json");
    std::fs::write(&bad, "{").unwrap();
    fails_with_hint(
        &["cross", "--show", "--portability", &s(&bad)],
        &["portability.json is not valid", "left untouched"],
        &["pass --portability with another file"],
    );
    let empty = journal(dir.path(), "empty.jsonl", "NVIDIA H200", None, 0);
    fails_with_hint(
        &["simulate", "--journal", &s(&empty)],
        &["records no candidate"],
        &["--journal-dir", "without --budget"],
    );
}

#[test]
fn simulate_names_arch_in_a_hint_when_the_gpu_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let mystery = journal(dir.path(), "mystery.jsonl", "Mystery GPU", None, 3);
    let j = mystery.to_str().unwrap();
    let r = run(&["simulate", "--journal", j, "--seeds", "2"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("the arch of 'Mystery GPU' is unknown"),
        "{}",
        r.stdout
    );
    assert_eq!(flag_in(&r.stdout), None, "{}", r.stdout);
    assert!(
        r.stderr.contains("hint: pass --arch sm_XY") && r.stderr.contains("mystery.jsonl"),
        "{}",
        r.stderr
    );
    // With --arch the model has what it needs: no hint.
    let r = run(&[
        "simulate",
        "--journal",
        j,
        "--seeds",
        "2",
        "--arch",
        "sm_90",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(!r.stderr.contains("hint:"), "{}", r.stderr);
}

/// Without the NVIDIA driver a product gets an error value from the runtime, not a panic.
#[test]
fn the_runtime_reports_a_missing_driver_as_an_error() {
    if !common::have_no_gpu() {
        return;
    }
    let got = std::panic::catch_unwind(|| autotune::Tuned::context(0).map(|_| ()));
    let err = got
        .expect("Tuned::context panicked without a driver")
        .expect_err("no driver, yet a context");
    assert!(
        matches!(
            err,
            autotune::product::runtime::RuntimeError::Device(DeviceError::NoDriver)
                | autotune::product::runtime::RuntimeError::Device(DeviceError::NoDevice { .. })
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("driver") || err.to_string().contains("device"),
        "{err}"
    );
}

/// The examples a product copies report a missing driver or GPU as a message, not as a
/// `Debug` value (`Error: Device(NoDriver)`). Where a GPU is present they run and succeed.
#[test]
fn the_examples_print_errors_as_messages() {
    // cargo builds the examples beside the test binaries: target/<profile>/examples.
    let exe = std::env::current_exe().unwrap();
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .unwrap()
        .join("examples");
    for (name, args) in [
        ("ship", vec![]),
        (
            "online",
            vec!["results/tuning.toml", "/nonexistent/online.toml", "1", "1"],
        ),
    ] {
        let path = dir.join(name);
        if !path.exists() {
            // `cargo test --test offline` builds no example; a whole `cargo test` (CI) does.
            println!("skipped: {} was not built", path.display());
            continue;
        }
        let out = std::process::Command::new(&path)
            .args(&args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        if out.status.success() {
            continue;
        }
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("Error: ") && !last.contains("Device(") && !last.contains("Err("),
            "{name}: {err}"
        );
    }
}
