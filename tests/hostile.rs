//! Hostile inputs: every way a user can hand `autotune` something unusable (shapes, ops,
//! devices, database paths and contents, suite files, missing CUDA libraries) ends with exit
//! code 1 and one `Error: ...` line that says what is wrong, and what to do (in a `hint: ...`
//! line under it where the advice names a flag), never a panic.
//! Needs no GPU and no NVRTC; cases that depend on one say `skipped: <why>` where it is present.

use assert_cmd::Command;
use std::fs;
use std::path::{Path, PathBuf};

/// The committed database the `best`, `export` and `summary` cases read.
const H200_DB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/h200-db.toml");
/// A shipped suite.
const GEMM_SUITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/suites/gemm.toml");

/// What one run printed and how it ended.
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

fn run_env(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::cargo_bin("autotune").expect("the autotune binary is built");
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not run autotune {args:?}: {e}"));
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `args` with `env`; expects exit code 1, no panic, nothing on stdout and exactly one
/// `Error: ...` line on stderr (maybe with a `hint: ...` line) that contains every one of
/// `needles`; returns those lines.
fn fails_env(args: &[&str], env: &[(&str, &str)], needles: &[&str]) -> String {
    let r = run_env(args, env);
    assert!(
        r.stdout.trim().is_empty(),
        "expected nothing on stdout: autotune {args:?}\nstdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
    error_line(args, &r, needles)
}

/// Checks that `r` failed with exit code 1, without a panic, and exactly one `Error: ...` line
/// on stderr, maybe followed by one `hint: ...` line, together containing every one of
/// `needles`; returns those lines.
fn error_line(args: &[&str], r: &Run, needles: &[&str]) -> String {
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
    text
}

fn fails(args: &[&str], needles: &[&str]) -> String {
    fails_env(args, &[], needles)
}

/// A clap usage error: exit code 2, clap's `error:` line, no panic.
fn usage_error(args: &[&str], needle: &str) {
    let r = run_env(args, &[]);
    let ctx = format!(
        "autotune {args:?}\nexit: {:?}\nstderr:\n{}",
        r.code, r.stderr
    );
    assert_eq!(r.code, Some(2), "clap's usage-error exit code: {ctx}");
    assert!(r.stderr.contains("error:"), "{ctx}");
    assert!(r.stderr.contains(needle), "expected {needle:?}: {ctx}");
    assert!(!r.stderr.contains("panicked"), "{ctx}");
}

/// Every command that takes a shape, with `shape` (and `op`) filled in.
fn shape_commands(op: &str, shape: &str) -> Vec<Vec<String>> {
    let shape = format!("--shape={shape}");
    let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    vec![
        own(&["--op", op, &shape]),
        own(&["--op", op, &shape, "--dry-run", "--arch", "sm_90"]),
        own(&[
            "best",
            "--db",
            H200_DB,
            "--gpu",
            "NVIDIA H200",
            "--op",
            op,
            &shape,
        ]),
        own(&[
            "export",
            "--format",
            "cuda-header",
            "--db",
            H200_DB,
            "--gpu",
            "NVIDIA H200",
            "--op",
            op,
            &shape,
        ]),
    ]
}

/// Bad shapes are refused with their reason by the tuning run, the dry run, `best` and
/// `export` alike.
#[test]
fn bad_shapes_are_refused_by_every_command() {
    let cases: &[(&str, &str, &[&str])] = &[
        ("gemm", "", &["malformed shape ''", "MxNxK"]),
        ("gemm", "abc", &["malformed shape 'abc'", "MxNxK"]),
        ("gemm", "2x2x2x2", &["malformed shape", "MxNxK"]),
        ("gemm", "1.5x2x2", &["malformed shape", "positive integers"]),
        ("gemm", "1e3x2x2", &["malformed shape", "positive integers"]),
        ("gemm", "0x2x2", &["at least 1", "M = 0"]),
        ("gemm", "-2x2x2", &["at least 1", "M = -2"]),
        ("gemm", "2x2x-0", &["at least 1"]),
        (
            "gemm",
            "99999999999999999999x2x2",
            &["99999999999999999999x2x2", "too large", "2^31 - 1"],
        ),
        (
            "gemm",
            "46341x46341x1",
            &["too large", "C (MxN)", "2147483647", "split the problem"],
        ),
        ("gemm", "65536x1x65536", &["too large", "A (MxK)", "32-bit"]),
        // Every matrix fits, but K would overflow the kernels' 32-bit K loop.
        (
            "gemm",
            "1x1x2147483647",
            &["K = 2147483647", "1073741824 (2^30", "split the problem"],
        ),
        ("gemv", "1073741825x1", &["M = 1073741825", "2^30"]),
        ("gemv", "4x2x4", &["N = 2", "MxK or Mx1xK"]),
        ("gemv", "4x4x4x4", &["malformed shape", "MxK or Mx1xK"]),
    ];
    for (op, shape, needles) in cases {
        for args in shape_commands(op, shape) {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            fails(&args, needles);
        }
    }
}

#[test]
fn unknown_ops_list_the_accepted_ones() {
    for op in ["fft", "", "gemm2"] {
        for args in shape_commands(op, "64x64x64") {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            fails(&args, &[&format!("unknown op '{op}'"), "gemm and gemv"]);
        }
    }
}

/// Whether this machine may have a usable GPU: device nodes, or the driver library.
fn gpu_present() -> Option<String> {
    for node in ["/dev/nvidiactl", "/dev/nvidia0"] {
        if Path::new(node).exists() {
            return Some(format!("{node} exists"));
        }
    }
    system_library("libcuda.so").map(|p| format!("{p} exists"))
}

/// Where the dynamic loader finds `lib` without LD_LIBRARY_PATH, if it does.
fn system_library(lib: &str) -> Option<String> {
    if let Ok(out) = std::process::Command::new("ldconfig").arg("-p").output() {
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
                return Some(e.path().display().to_string());
            }
        }
    }
    None
}

/// `--device 99`: without a GPU the missing driver is named; with one, the missing device.
#[test]
fn missing_device_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tuning.toml");
    let line = fails(
        &[
            "--shape",
            "64x64x64",
            "--device",
            "99",
            "--db",
            db.to_str().unwrap(),
        ],
        &[],
    );
    match gpu_present() {
        None => {
            assert!(line.contains("libcuda"), "{line}");
            assert!(line.contains("--dry-run --arch"), "{line}");
        }
        Some(_) => {
            assert!(line.contains("no CUDA device 99"), "{line}");
            assert!(line.contains("--device"), "{line}");
        }
    }
    assert!(!db.exists(), "a failed run created the database");
    for sub in [
        &["best", "--shape", "64x64x64", "--device", "99"][..],
        &[
            "export",
            "--format",
            "cuda-header",
            "--shape",
            "64x64x64",
            "--device",
            "99",
        ],
    ] {
        let mut args = sub.to_vec();
        args.extend(["--db", H200_DB]);
        let line = fails(&args, &["no --gpu given"]);
        assert!(
            line.contains("libcuda") || line.contains("no CUDA device 99"),
            "{line}"
        );
    }
}

/// `--devices` lists that are not device numbers, or name one twice, are refused before any
/// GPU work.
#[test]
fn bad_device_lists_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tuning.toml");
    for list in ["x,y", "", ",", "0,0", "99999999999999999999999"] {
        fails(
            &[
                "--shape",
                "64x64x64",
                "--db",
                db.to_str().unwrap(),
                "--devices",
                list,
            ],
            &[&format!("--devices '{list}'")],
        );
    }
    assert!(!db.exists(), "a failed run created the database");
}

/// Numbers clap cannot take are usage errors (exit 2), not panics.
#[test]
fn unparsable_numbers_are_usage_errors() {
    usage_error(&["--shape", "64x64x64", "--device", "-1"], "-1");
    usage_error(
        &["--shape", "64x64x64", "--device", "99999999999999999999999"],
        "--device",
    );
    usage_error(&["--shape", "64x64x64", "--top", "many"], "--top");
    usage_error(&["--shape", "64x64x64", "--seed=-1"], "--seed");
    usage_error(
        &["--shape", "64x64x64", "--seed", "18446744073709551615"],
        "--seed",
    );
}

/// A broken database next to which nothing may appear, and which must stay as it is.
struct BadDb {
    _dir: tempfile::TempDir,
    path: PathBuf,
    bytes: Vec<u8>,
}

impl BadDb {
    fn new(bytes: &[u8]) -> BadDb {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tuning.toml");
        fs::write(&path, bytes).unwrap();
        BadDb {
            _dir: dir,
            path,
            bytes: bytes.to_vec(),
        }
    }

    fn arg(&self) -> &str {
        self.path.to_str().unwrap()
    }

    /// The file is unchanged and alone in its directory.
    fn untouched(&self) {
        assert_eq!(
            fs::read(&self.path).unwrap(),
            self.bytes,
            "the file changed"
        );
        let dir = self.path.parent().unwrap();
        let names: Vec<_> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["tuning.toml"], "files left next to the database");
    }
}

/// Every command that reads a database, on `db`.
fn db_commands(db: &str) -> Vec<Vec<&str>> {
    vec![
        vec!["--shape", "64x64x64", "--db", db],
        vec!["--op", "gemv", "--suite", GEMV_SUITE, "--db", db],
        vec![
            "best",
            "--gpu",
            "NVIDIA H200",
            "--shape",
            "64x64x64",
            "--db",
            db,
        ],
        vec![
            "export",
            "--format",
            "cuda-header",
            "--gpu",
            "NVIDIA H200",
            "--shape",
            "64x64x64",
            "--db",
            db,
        ],
        vec![
            "summary",
            "--suite",
            GEMM_SUITE,
            "--gpu",
            "NVIDIA H200",
            "--db",
            db,
        ],
    ]
}

/// A shipped gemv suite.
const GEMV_SUITE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/suites/gemv.toml");

/// The 1-based line of the first line of `text` that starts with `prefix`.
fn line_of(text: &str, prefix: &str) -> usize {
    text.lines()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starts with {prefix:?}"))
        + 1
}

/// Corrupt databases (garbage, binary, truncated, wrong types, inconsistent, newer schema, no
/// schema) are reported by every command with the file, the line where there is one, and
/// what to do; the file is left exactly as it was and nothing is created next to it.
#[test]
fn corrupt_databases_are_reported_with_their_line_and_left_untouched() {
    let good = fs::read_to_string(H200_DB).unwrap();
    let wrong_type = good.replacen("sms = 132", "sms = \"many\"", 1);
    let wrong_type_line = format!("line {}", line_of(&wrong_type, "sms = \"many\""));
    // Cut inside the second entry's `median_ms = ...` line.
    let cut = good.match_indices("median_ms = ").nth(1).unwrap().0 + "median_ms = 0.".len();
    let truncated = &good[..cut];
    let truncated_line = format!("line {}", truncated.lines().count());
    let negative = good.replacen("m = 2048\n", "m = -2048\n", 1);
    let negative_line = format!("line {}", line_of(&negative, "m = -2048"));
    let contradiction = good.replacen("shape = \"2048x2048x2048\"", "shape = \"1x1x1\"", 1);
    let huge = good.replacen("k = 2048\n", "k = 9223372036854775807\n", 1);
    let cases: Vec<(Vec<u8>, Vec<&str>)> = vec![
        (
            b"this is not a tuning database\n".to_vec(),
            vec![
                "line 1",
                "not a valid tuning database",
                "left untouched",
                "--db",
            ],
        ),
        (
            b"schema_version = 1\n\x00\xff\xfe binary".to_vec(),
            vec!["not UTF-8", "line 2", "--db"],
        ),
        (
            truncated.as_bytes().to_vec(),
            vec![&truncated_line, "left untouched", "--db"],
        ),
        (
            wrong_type.into_bytes(),
            vec![&wrong_type_line, "expected", "--db"],
        ),
        (
            negative.into_bytes(),
            vec![&negative_line, "left untouched"],
        ),
        (
            contradiction.into_bytes(),
            vec!["shape = \"1x1x1\"", "make them agree"],
        ),
        (
            huge.into_bytes(),
            vec!["unusable shape", "K = 9223372036854775807", "2^30"],
        ),
        (
            good.replacen("schema_version = 1", "schema_version = 7", 1)
                .into_bytes(),
            vec!["newer autotune", "schema 7", "upgrade autotune"],
        ),
        (
            b"[[gpu]]\nname = \"x\"\n".to_vec(),
            vec!["no top-level `schema_version`"],
        ),
    ];
    for (bytes, needles) in &cases {
        let db = BadDb::new(bytes);
        for args in db_commands(db.arg()) {
            let mut needles = needles.clone();
            needles.push(db.arg());
            fails(&args, &needles);
            db.untouched();
        }
    }
}

#[test]
fn database_path_that_is_a_directory_is_refused_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_str().unwrap();
    for args in db_commands(path) {
        fails(&args, &[path, "is a directory", "--db"]);
    }
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// `best`, `export` and `summary` only read: a database that does not exist is a mistake
/// (a typo in --db), not an empty database.
#[test]
fn read_only_commands_refuse_a_missing_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("typo.toml");
    let db = db.to_str().unwrap();
    for args in db_commands(db).into_iter().skip(2) {
        fails(&args, &[db, "does not exist", "--db"]);
    }
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Restores a path's permissions when dropped, so the temporary directory can be removed.
struct Restore(PathBuf, u32);

impl Drop for Restore {
    fn drop(&mut self) {
        use std::os::unix::fs::PermissionsExt;
        let _ = fs::set_permissions(&self.0, fs::Permissions::from_mode(self.1));
    }
}

fn chmod(path: &Path, mode: u32) -> Restore {
    use std::os::unix::fs::PermissionsExt;
    let old = fs::metadata(path).unwrap().permissions().mode() & 0o7777;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
    Restore(path.to_path_buf(), old)
}

/// An unreadable database (mode 000), or one in an unreadable directory, is named with what to
/// check. Skipped where permissions are not enforced (root).
#[test]
fn unreadable_database_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("results");
    fs::create_dir(&sub).unwrap();
    let path = sub.join("tuning.toml");
    fs::copy(H200_DB, &path).unwrap();
    let db = path.to_str().unwrap();
    {
        let _restore = chmod(&path, 0o000);
        if fs::read(&path).is_ok() {
            println!("skipped: file permissions are not enforced here (running as root?)");
            return;
        }
        for args in db_commands(db) {
            fails(&args, &[db, "could not read", "permission", "--db"]);
        }
    }
    {
        let _restore = chmod(&sub, 0o000);
        for args in db_commands(db) {
            fails(&args, &[db, "permission", "--db"]);
        }
    }
    assert_eq!(fs::read(&path).unwrap(), fs::read(H200_DB).unwrap());
}

/// A database whose directory is read-only stops a tuning run before any GPU work (the write
/// lock cannot be created), and the file is left as it was. Skipped where permissions are not
/// enforced (root).
#[test]
fn unwritable_database_directory_stops_the_run_before_tuning() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("results");
    fs::create_dir(&sub).unwrap();
    let path = sub.join("tuning.toml");
    fs::copy(H200_DB, &path).unwrap();
    let db = path.to_str().unwrap();
    let _restore = chmod(&sub, 0o555);
    let probe = sub.join("probe");
    if fs::write(&probe, "").is_ok() {
        let _ = fs::remove_file(&probe);
        println!("skipped: directory permissions are not enforced here (running as root?)");
        return;
    }
    for args in [
        vec!["--shape", "64x64x64", "--db", db],
        vec!["--suite", GEMM_SUITE, "--db", db],
    ] {
        fails(
            &args,
            &[
                "could not lock",
                "tuning.toml.lock",
                "Permission denied",
                "make the directory writable",
                "--db",
            ],
        );
    }
    // Reading still works: the read-only commands do not lock.
    let r = run_env(
        &[
            "best",
            "--gpu",
            "NVIDIA H200",
            "--shape",
            "2048x2048x2048",
            "--db",
            db,
        ],
        &[],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(fs::read(&path).unwrap(), fs::read(H200_DB).unwrap());
    assert_eq!(fs::read_dir(&sub).unwrap().count(), 1);
}

/// With no NVRTC on the library path, a dry run (and `export --check-compile`) names NVRTC
/// and how to install it.
#[test]
fn missing_nvrtc_is_named_with_how_to_install_it() {
    if let Some(found) = system_library("libnvrtc") {
        println!("skipped: NVRTC is installed system-wide ({found}), so it cannot be hidden");
        return;
    }
    let empty = tempfile::tempdir().unwrap();
    let env = [("LD_LIBRARY_PATH", empty.path().to_str().unwrap())];
    let needles = [
        "NVRTC",
        "libnvrtc",
        "pip install nvidia-cuda-nvrtc",
        "LD_LIBRARY_PATH",
    ];
    fails_env(
        &["--shape", "64x64x64", "--dry-run", "--arch", "sm_90"],
        &env,
        &needles,
    );
    fails_env(
        &[
            "--op",
            "gemv",
            "--suite",
            GEMV_SUITE,
            "--dry-run",
            "--arch",
            "sm_61",
        ],
        &env,
        &needles,
    );
    let out = empty.path().join("k.cuh");
    fails_env(
        &[
            "export",
            "--format",
            "cuda-header",
            "--gpu",
            "NVIDIA H200",
            "--shape",
            "2048x2048x2048",
            "--db",
            H200_DB,
            "--check-compile",
            "--output",
            out.to_str().unwrap(),
        ],
        &env,
        &needles,
    );
    assert!(!out.exists(), "a header that was not checked was written");
}

/// With no driver library, a real run names libcuda and the no-GPU alternative, and writes no
/// database.
#[test]
fn missing_libcuda_is_named() {
    if let Some(why) = gpu_present() {
        println!("skipped: a GPU or its driver is present ({why})");
        return;
    }
    let empty = tempfile::tempdir().unwrap();
    let db = empty.path().join("tuning.toml");
    fails_env(
        &["--shape", "64x64x64", "--db", db.to_str().unwrap()],
        &[("LD_LIBRARY_PATH", empty.path().to_str().unwrap())],
        &["libcuda", "install the NVIDIA driver", "--dry-run --arch"],
    );
    assert!(!db.exists());
    assert_eq!(fs::read_dir(empty.path()).unwrap().count(), 0);
}

/// A database whose entry carries parameters its family cannot launch (zero, overflowing,
/// `i64::MIN / -1`, missing) is reported by `best` and `export` with what to do.
#[test]
fn unlaunchable_database_entries_are_reported() {
    // Current checksums: a stale entry would be passed over, not launched.
    let good = {
        let catalog = autotune::family::catalog::Catalog::builtin().unwrap();
        let mut db = autotune::db::Database::load(std::path::Path::new(H200_DB)).unwrap();
        for e in &mut db.entries {
            e.checksum = catalog.get(&e.family).unwrap().checksum.clone();
        }
        db.to_toml_string().unwrap()
    };
    let params = "params = { BK = 16, BM = 256, BN = 128, PREFETCH = 1, TM = 8, TN = 16 }";
    assert!(good.contains(params));
    for bad in [
        "params = { BK = 16, BM = 0, BN = 128, PREFETCH = 1, TM = 8, TN = 16 }",
        "params = { BK = 16, BM = 9223372036854775807, BN = 128, PREFETCH = 1, TM = 8, TN = 16 }",
        "params = { BK = 16, BM = -9223372036854775808, BN = 128, PREFETCH = 1, TM = -1, TN = 16 }",
        "params = { BK = 16 }",
    ] {
        let db = BadDb::new(good.replacen(params, bad, 1).as_bytes());
        let target = [
            "--gpu",
            "NVIDIA H200",
            "--shape",
            "2048x2048x2048",
            "--db",
            db.arg(),
        ];
        let mut best = vec!["best"];
        best.extend(target);
        // `best` prints the choice before it computes the launch.
        let r = run_env(&best, &[]);
        error_line(
            &best,
            &r,
            &[
                "gemm_tile2d BK=16",
                "cannot be launched",
                "re-tune",
                db.arg(),
            ],
        );
        let mut export = vec!["export", "--format", "cuda-header"];
        export.extend(target);
        fails(&export, &["cannot compute the launch", "gemm_tile2d"]);
        db.untouched();
    }
    // An entry naming a family this build does not have is passed over, and said so.
    let db = BadDb::new(
        good.replacen("family = \"gemm_tile2d\"", "family = \"gemm_magic\"", 1)
            .as_bytes(),
    );
    for cmd in [&["best"][..], &["export", "--format", "cuda-header"]] {
        let mut args = cmd.to_vec();
        args.extend([
            "--gpu",
            "NVIDIA H200",
            "--shape",
            "2048x2048x2048",
            "--db",
            db.arg(),
        ]);
        let r = run_env(&args, &[]);
        assert_eq!(r.code, Some(0), "{args:?}: {}", r.stderr);
        let said = format!("{}{}", r.stdout, r.stderr);
        for needle in ["passed over", "gemm_magic", "unknown family"] {
            assert!(said.contains(needle), "{args:?} lacks {needle:?}:\n{said}");
        }
    }
}

/// Other bad arguments of `best`, `export` and `summary`.
#[test]
fn bad_subcommand_arguments_are_reported() {
    for arch in [
        "hopper",
        "sm_",
        "sm_9",
        "sm_4294967299",
        "sm_99999999999999999999",
    ] {
        fails(
            &[
                "best", "--gpu", "x", "--arch", arch, "--shape", "64x64x64", "--db", H200_DB,
            ],
            &[&format!("'{arch}' is not an arch"), "sm_90"],
        );
    }
    fails(
        &[
            "export",
            "--format",
            "cuda-header",
            "--gpu",
            "Unknown GPU",
            "--arch",
            "sm_12",
            "--shape",
            "64x64x64",
            "--db",
            H200_DB,
        ],
        &["no launch limits are known for sm_12", "--arch"],
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("no/such/dir/k.cuh");
    fails(
        &[
            "export",
            "--format",
            "cuda-header",
            "--gpu",
            "NVIDIA H200",
            "--shape",
            "2048x2048x2048",
            "--db",
            H200_DB,
            "--output",
            out.to_str().unwrap(),
        ],
        &[out.to_str().unwrap(), "No such file or directory"],
    );
    let missing = dir.path().join("missing.cuh");
    fails(
        &[
            "export",
            "--format",
            "cuda-header",
            "--gpu",
            "NVIDIA H200",
            "--shape",
            "2048x2048x2048",
            "--db",
            H200_DB,
            "--check-compile",
            "--check-with",
            missing.to_str().unwrap(),
        ],
        &["--check-with", missing.to_str().unwrap()],
    );
    fails(
        &[
            "summary", "--suite", GEMM_SUITE, "--gpu", "GTX 9999", "--db", H200_DB,
        ],
        &["no GPU named 'GTX 9999'", "pass --gpu", "'NVIDIA H200'"],
    );
    let empty = dir.path().join("empty.toml");
    fs::write(&empty, "schema_version = 1\n").unwrap();
    fails(
        &[
            "summary",
            "--suite",
            GEMM_SUITE,
            "--gpu",
            "NVIDIA H200",
            "--db",
            empty.to_str().unwrap(),
        ],
        &["no GPU named 'NVIDIA H200'", "tune on that GPU first"],
    );
}

/// Malformed suite files are reported by the tuning run, the dry run and `summary`, with the
/// file, the line where there is one, and how a suite looks.
#[test]
fn malformed_suites_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, bytes: &[u8]| {
        let p = dir.path().join(name);
        fs::write(&p, bytes).unwrap();
        p.to_str().unwrap().to_string()
    };
    let missing = dir
        .path()
        .join("missing.toml")
        .to_str()
        .unwrap()
        .to_string();
    let directory = dir.path().to_str().unwrap().to_string();
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            missing,
            vec!["cannot read suite", "No such file", "--suite"],
        ),
        (directory, vec!["is a directory", "--suite"]),
        (
            write("binary.toml", b"op = \"gemm\"\n\xff\xfe"),
            vec!["not UTF-8", "configs/suites/gemm.toml"],
        ),
        (
            write(
                "truncated.toml",
                b"op = \"gemm\"\nshapes = [\"64x64x64\",\n",
            ),
            vec!["line 3", "shapes = ["],
        ),
        (
            write("type.toml", b"op = \"gemm\"\nshapes = \"64x64x64\"\n"),
            vec!["line 2, column 10", "expected a sequence"],
        ),
        (
            write("number.toml", b"op = \"gemm\"\nshapes = [64]\n"),
            vec!["line 2", "expected a string"],
        ),
        (
            write("field.toml", b"op = \"gemm\"\nshape = [\"64x64x64\"]\n"),
            vec!["line 2", "unknown field `shape`"],
        ),
        (
            write("noop.toml", b"shapes = [\"64x64x64\"]\n"),
            vec!["missing field `op`"],
        ),
        (
            write("op.toml", b"op = \"conv\"\nshapes = [\"64x64x64\"]\n"),
            vec!["unknown op 'conv'", "gemm and gemv"],
        ),
        (
            write(
                "shape.toml",
                b"op = \"gemm\"\nshapes = [\"64x64x64\", \"64x0x64\"]\n",
            ),
            vec!["shape 2 of `shapes`", "64x0x64", "at least 1"],
        ),
        (
            write(
                "huge.toml",
                b"op = \"gemv\"\nshapes = [\"99999999999999999999x2\"]\n",
            ),
            vec!["shape 1 of `shapes`", "too large"],
        ),
        (
            write("empty.toml", b"op = \"gemm\"\nshapes = []\n"),
            vec!["lists no shapes", "shapes = ["],
        ),
    ];
    for (suite, needles) in &cases {
        for args in [
            vec!["--suite", suite],
            vec!["--suite", suite, "--dry-run", "--arch", "sm_90"],
            vec![
                "summary",
                "--suite",
                suite,
                "--gpu",
                "NVIDIA H200",
                "--db",
                H200_DB,
            ],
        ] {
            let mut needles = needles.clone();
            needles.push(suite);
            fails(&args, &needles);
        }
    }
}
