//! Hostile inputs, in one table: every way a user can hand `autotune` something unusable
//! (shapes, ops, options, devices, database paths and contents, suite files, missing CUDA
//! libraries) ends with exit code 1 and one `Error: ...` line that says what is wrong, and what
//! to do (in a `hint: ...` line under it where the advice names a flag; clap's usage error with
//! exit code 2 for options it cannot parse), never a panic, and changes nothing on disk. Needs
//! no GPU and no NVRTC.
//!
//! A row is a name, a command line (split on spaces; `'...'` quotes), the files it runs on and
//! what it must print. Each row runs in its own scratch directory holding its files; `$DIR` in
//! its arguments, variables and expected text stands for that directory, which must hold
//! exactly what it held before once the run is over (`$H200_DB`, `$GEMM_SUITE` and
//! `$GEMV_SUITE` stand for committed files). Rows that need this machine to lack a GPU (or a
//! system-wide NVRTC) print `skipped: <row>: <why>` where it has one, and fail instead under
//! `AUTOTUNE_REQUIRE_NO_CUDA=1`. Every row runs; the test fails at the end, listing each row
//! that failed.

use crate::common;
use common::{GEMM_SUITE, GEMV_SUITE, H200_DB, REQUIRE_NO_CUDA};
use std::fs;
use std::path::Path;

/// What a row's run must do.
enum Expect {
    /// Exit code 1, one `Error: ...` line (and at most a `hint: ...` line) on stderr holding
    /// every needle, nothing on stdout.
    Error(Vec<String>),
    /// Like [`Expect::Error`], but stdout may hold what the command printed before it failed.
    ErrorAfterOutput(Vec<String>),
    /// A clap usage error: exit code 2, `error:` and every needle on stderr.
    Usage(Vec<String>),
    /// Exit code 0 and every needle on stdout or stderr: input that must not stop this command.
    Succeeds(Vec<String>),
}

impl Expect {
    fn needles(&self) -> &[String] {
        match self {
            Expect::Error(n)
            | Expect::ErrorAfterOutput(n)
            | Expect::Usage(n)
            | Expect::Succeeds(n) => n,
        }
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn error(needles: &[&str]) -> Expect {
    Expect::Error(strings(needles))
}

/// What a row needs this machine to lack.
#[derive(Clone, Copy)]
enum Needs {
    Nothing,
    /// No GPU and no NVIDIA driver ([`common::gpu_present`] finds none).
    NoGpu,
    /// No NVRTC the loader finds without LD_LIBRARY_PATH (it cannot be hidden from the run).
    NoSystemNvrtc,
}

/// What a row puts in its scratch directory before the run.
enum Content {
    File(Vec<u8>),
    Dir,
    /// A Unix socket: `stat` works, `open` fails with ENXIO, also for root.
    Socket,
}

/// One row of the table.
struct Case {
    name: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    files: Vec<(String, Content)>,
    needs: Needs,
    expect: Expect,
    /// Text stderr must not hold.
    absent: Vec<String>,
}

/// Splits a command line on spaces; `'...'` quotes (`''` is an empty argument).
fn argv(line: &str) -> Vec<String> {
    let (mut args, mut arg, mut quoted) = (Vec::new(), None::<String>, false);
    for c in line.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                arg.get_or_insert_with(String::new);
            }
            ' ' if !quoted => args.extend(arg.take()),
            c => arg.get_or_insert_with(String::new).push(c),
        }
    }
    assert!(!quoted, "unbalanced quote in {line:?}");
    args.extend(arg);
    args
}

/// A row running `autotune <line>`.
fn case(name: impl Into<String>, line: &str, expect: Expect) -> Case {
    Case {
        name: name.into(),
        args: argv(line),
        env: Vec::new(),
        files: Vec::new(),
        needs: Needs::Nothing,
        expect,
        absent: Vec::new(),
    }
}

impl Case {
    fn file(mut self, name: &str, bytes: impl Into<Vec<u8>>) -> Case {
        self.files.push((name.into(), Content::File(bytes.into())));
        self
    }

    fn dir(mut self, name: &str) -> Case {
        self.files.push((name.into(), Content::Dir));
        self
    }

    fn socket(mut self, name: &str) -> Case {
        self.files.push((name.into(), Content::Socket));
        self
    }

    fn env(mut self, key: &str, value: &str) -> Case {
        self.env.push((key.into(), value.into()));
        self
    }

    fn needs(mut self, needs: Needs) -> Case {
        self.needs = needs;
        self
    }

    fn without(mut self, text: &str) -> Case {
        self.absent.push(text.into());
        self
    }
}

/// Every command that takes a shape, with `op` and `shape` filled in.
fn shape_commands(op: &str, shape: &str) -> [(&'static str, String); 4] {
    let target = format!("--op '{op}' '--shape={shape}'");
    [
        ("tune", target.clone()),
        ("dry-run", format!("{target} --dry-run --arch sm_90")),
        (
            "best",
            format!("best --db $H200_DB --gpu 'NVIDIA H200' {target}"),
        ),
        (
            "export",
            format!("export --format cuda-header --db $H200_DB --gpu 'NVIDIA H200' {target}"),
        ),
    ]
}

/// Every command that reads a database, on `db`; the last three only read it.
fn db_commands(db: &str) -> [(&'static str, String); 5] {
    [
        ("tune", format!("--shape 64x64x64 --db {db}")),
        ("suite", format!("--op gemv --suite $GEMV_SUITE --db {db}")),
        (
            "best",
            format!("best --gpu 'NVIDIA H200' --shape 64x64x64 --db {db}"),
        ),
        (
            "export",
            format!("export --format cuda-header --gpu 'NVIDIA H200' --shape 64x64x64 --db {db}"),
        ),
        (
            "summary",
            format!("summary --suite $GEMM_SUITE --gpu 'NVIDIA H200' --db {db}"),
        ),
    ]
}

/// Every command that reads a suite, on `suite`.
fn suite_commands(suite: &str) -> [(&'static str, String); 3] {
    [
        ("tune", format!("--suite {suite}")),
        ("dry-run", format!("--suite {suite} --dry-run --arch sm_90")),
        (
            "summary",
            format!("summary --suite {suite} --gpu 'NVIDIA H200' --db $H200_DB"),
        ),
    ]
}

/// The 1-based line of the first line of `text` that starts with `prefix`.
fn line_of(text: &str, prefix: &str) -> usize {
    text.lines()
        .position(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starts with {prefix:?}"))
        + 1
}

/// Bad shapes: refused with their reason by the tuning run, the dry run, `best` and `export`
/// alike; unknown ops too.
fn shape_cases(cases: &mut Vec<Case>) {
    let shapes: &[(&str, &str, &[&str])] = &[
        ("gemm", "", &["malformed shape ''", "MxNxK"]),
        ("gemm", "abc", &["malformed shape 'abc'", "MxNxK"]),
        ("gemm", "2x2x2x2", &["malformed shape", "MxNxK"]),
        ("gemm", "1.5x2x2", &["malformed shape", "positive integers"]),
        ("gemm", "1e3x2x2", &["malformed shape", "positive integers"]),
        ("gemm", "0x2x2", &["at least 1", "M = 0"]),
        ("gemm", "-2x2x2", &["at least 1", "M = -2"]),
        ("gemm", "2x2x-0", &["at least 1"]),
        ("gemm", "0x4x4", &["0x4x4", "at least 1", "M = 0"]),
        ("gemm", "4x-4x4", &["4x-4x4", "at least 1", "N = -4"]),
        ("gemm", "4x4x0", &["4x4x0", "at least 1", "K = 0"]),
        (
            "gemm",
            "99999999999999999999x2x2",
            &["99999999999999999999x2x2", "too large", "2^31 - 1"],
        ),
        (
            "gemm",
            "4x4x99999999999999999999999",
            &["4x4x99999999999999999999999", "too large", "2^31 - 1"],
        ),
        (
            "gemm",
            "46341x46341x1",
            &["too large", "C (MxN)", "2147483647", "split the problem"],
        ),
        (
            "gemm",
            "100000x100000x1",
            &["100000x100000x1", "too large", "C (MxN)", "2147483647"],
        ),
        ("gemm", "65536x1x65536", &["too large", "A (MxK)", "32-bit"]),
        // Every matrix fits, but K would overflow the kernels' 32-bit K loop.
        (
            "gemm",
            "1x1x2147483647",
            &["K = 2147483647", "1073741824 (2^30", "split the problem"],
        ),
        ("gemv", "100000x100000", &["too large", "A (MxK)"]),
        ("gemv", "1073741825x1", &["M = 1073741825", "2^30"]),
        ("gemv", "4x2x4", &["4x2x4", "N = 2", "MxK or Mx1xK"]),
        ("gemv", "4x4x4x4", &["malformed shape", "MxK or Mx1xK"]),
        // Form tags after the dimensions.
        (
            "gemm",
            "64x64x64:xx",
            &["unknown tag 'xx'", "nn, nt, tn, tt", "bN"],
        ),
        ("gemm", "64x64x64:tn:b0", &["batch count must be between 1"]),
        (
            "gemm",
            "64x64x64:b99999999999",
            &["batch count must be between 1"],
        ),
        ("gemv", "64x64:nt", &["unknown tag 'nt'", "n, t"]),
    ];
    for (op, shape, needles) in shapes {
        for (cmd, line) in shape_commands(op, shape) {
            let name = format!("bad shape: {op} '{shape}' [{cmd}]");
            cases.push(case(name, &line, error(needles)));
        }
    }
    // Malformed gemm shapes also name the form expected and an example.
    for shape in ["12", "axbxc", "1x1x", "x", "1xx1", "2048x2048"] {
        let malformed = format!("malformed shape '{shape}'");
        for (cmd, line) in shape_commands("gemm", shape) {
            let name = format!("bad shape: gemm '{shape}' [{cmd}]");
            cases.push(case(
                name,
                &line,
                error(&[&malformed, "MxNxK", "2048x2048x2048"]),
            ));
        }
    }
    // The form flags of a tuning run.
    for (flags, needles) in [
        ("--batch 0", &["--batch 0", "between 1 and"][..]),
        (
            "--layout qq",
            &["unknown gemm layout 'qq'", "nn, nt, tn and tt"][..],
        ),
        (
            "--op gemv --layout nt",
            &["unknown gemv layout 'nt'", "n (y = A x)"][..],
        ),
        ("--beta inf", &["--beta inf", "finite"][..]),
    ] {
        let line = format!("--shape 64x64x64 {flags} --dry-run --arch sm_90");
        let line = line.replace("64x64x64 --op gemv", "64x64 --op gemv");
        cases.push(case(
            format!("bad form flag: {flags}"),
            &line,
            error(needles),
        ));
    }
    for op in ["fft", "", "gemm2", "conv"] {
        let unknown = format!("unknown op '{op}'");
        for (cmd, line) in shape_commands(op, "64x64x64") {
            let name = format!("unknown op '{op}' [{cmd}]");
            cases.push(case(name, &line, error(&[&unknown, "gemm and gemv"])));
        }
    }
}

/// Options: usage errors clap reports, `--dry-run`/`--arch`, devices and device lists, and
/// what the run says without a GPU or NVRTC.
fn option_cases(cases: &mut Vec<Case>) {
    for (line, needles) in [
        ("--frobnicate", &["'--frobnicate'", "--help"][..]),
        ("", &["--shape"]),
        ("--shape 64x64x64 --device -1", &["-1"]),
        (
            "--shape 64x64x64 --device 99999999999999999999999",
            &["--device"],
        ),
        ("--shape 64x64x64 --top many", &["--top"]),
        ("--shape 64x64x64 --seed=-1", &["--seed"]),
        ("--shape 64x64x64 --seed 18446744073709551615", &["--seed"]),
        // A re-scoring reads its shapes from the recorded run and times nothing.
        (
            "evaluate --rescore e.json --random 5",
            &["--rescore", "--random"],
        ),
        (
            "evaluate --rescore e.json --tune-budget 5",
            &["--rescore", "--tune-budget"],
        ),
        // The forms of a random draw: all or plain, and only for --random.
        (
            "evaluate --random 5 --forms bogus",
            &["unknown forms 'bogus'", "all", "plain"],
        ),
        (
            "evaluate --shapes s.toml --forms all",
            &["--forms", "--shapes"],
        ),
        (
            "evaluate --rescore e.json --forms plain",
            &["--rescore", "--forms"],
        ),
    ] {
        let name = format!("usage error: '{line}'");
        cases.push(case(name, line, Expect::Usage(strings(needles))));
    }
    for (line, needles) in [
        (
            "--shape 64x64x64 --dry-run",
            &["--dry-run needs --arch", "sm_90", "sm_61"][..],
        ),
        (
            "--shape 64x64x64 --dry-run --arch hopper",
            &["'hopper' is not an arch", "sm_XY", "sm_90"],
        ),
        (
            "--shape 64x64x64 --arch sm_90",
            &["--arch only applies with --dry-run"],
        ),
        (
            "--shape 64x64x64 --dry-run --arch sm_90 --deterministic --family gemm_warptile_splitk",
            &[
                "'gemm_warptile_splitk' is not deterministic",
                "gemm_warptile_splitk_det",
            ],
        ),
    ] {
        cases.push(case(
            format!("dry run and arch: '{line}'"),
            line,
            error(needles),
        ));
    }

    // `--device 99`: without a GPU the missing driver is named; with one, the missing device.
    let (tune, others) = match common::gpu_present() {
        Some(_) => (["no CUDA device 99", "--device"], "no CUDA device 99"),
        None => (["libcuda", "--dry-run --arch"], "libcuda"),
    };
    let device = "--shape 64x64x64 --device 99 --db";
    for (cmd, line, needles) in [
        ("tune", format!("{device} $DIR/tuning.toml"), &tune[..]),
        (
            "best",
            format!("best {device} $H200_DB"),
            &["no --gpu given", others],
        ),
        (
            "export",
            format!("export --format cuda-header {device} $H200_DB"),
            &["no --gpu given", others],
        ),
    ] {
        cases.push(case(
            format!("missing device 99 [{cmd}]"),
            &line,
            error(needles),
        ));
    }
    // `--devices` lists that are not device numbers, or name one twice.
    for list in ["x,y", "", ",", "0,0", "99999999999999999999999"] {
        let line = format!("--shape 64x64x64 --db $DIR/tuning.toml --devices '{list}'");
        let named = format!("--devices '{list}'");
        cases.push(case(
            format!("bad device list '{list}'"),
            &line,
            error(&[&named]),
        ));
    }
    // Without a GPU: the driver is named with the no-GPU alternative.
    cases.push(
        case(
            "no GPU: the tuning run names libcuda",
            "--shape 64x64x64 --db $DIR/tuning.toml",
            error(&["libcuda", "install the NVIDIA driver", "--dry-run --arch"]),
        )
        .env("LD_LIBRARY_PATH", "$DIR")
        .needs(Needs::NoGpu),
    );
    cases.push(
        case(
            "no GPU: export without --gpu names libcuda",
            "export --format cuda-header --shape 2048x2048x2048 --db $H200_DB",
            error(&["no --gpu given", "libcuda"]),
        )
        .needs(Needs::NoGpu),
    );
    // Without NVRTC on the library path: dry runs and `export --check-compile` name NVRTC and
    // how to install it, and write no header.
    let nvrtc = [
        "NVRTC",
        "libnvrtc",
        "pip install nvidia-cuda-nvrtc",
        "LD_LIBRARY_PATH",
    ];
    for (what, line) in [
        ("dry run", "--shape 64x64x64 --dry-run --arch sm_90"),
        ("suite dry run", "--op gemv --suite $GEMV_SUITE --dry-run --arch sm_61"),
        (
            "export --check-compile",
            "export --format cuda-header --gpu 'NVIDIA H200' --shape 2048x2048x2048 --db $H200_DB --check-compile --output $DIR/k.cuh",
        ),
    ] {
        cases.push(
            case(format!("missing NVRTC [{what}]"), line, error(&nvrtc))
                .env("LD_LIBRARY_PATH", "$DIR")
                // Empty is unset: one in the caller's environment would choose an NVRTC.
                .env("AUTOTUNE_NVRTC", "")
                .needs(Needs::NoSystemNvrtc),
        );
    }
}

/// Database paths and contents: corrupt, newer, not a file, missing, unreadable, unlockable.
fn database_cases(cases: &mut Vec<Case>) {
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
    let newer = good.replacen("schema_version = 1", "schema_version = 7", 1);
    // Current checksums: a stale entry would be passed over, not used.
    let current = common::current_h200_db();
    let broken_header =
        "schema_version = 1\n\n[[gpu]\nname = \"NVIDIA H100 80GB HBM3\"\narch = \"sm_90\"\n";
    let corrupt: &[(&str, &[u8], &[&str])] = &[
        (
            "garbage",
            b"this is not a tuning database\n",
            &[
                "line 1",
                "not a valid tuning database",
                "left untouched",
                "--db",
            ],
        ),
        (
            "broken table header on line 3",
            broken_header.as_bytes(),
            &["line 3", "left untouched"],
        ),
        (
            "binary",
            b"schema_version = 1\n\x00\xff\xfe binary",
            &["not UTF-8", "line 2", "--db"],
        ),
        (
            "truncated",
            truncated.as_bytes(),
            &[&truncated_line, "left untouched", "--db"],
        ),
        (
            "wrong type",
            wrong_type.as_bytes(),
            &[&wrong_type_line, "expected", "--db"],
        ),
        (
            "negative dimension",
            negative.as_bytes(),
            &[&negative_line, "left untouched"],
        ),
        (
            "shape contradicts m, n, k",
            contradiction.as_bytes(),
            &["shape = \"1x1x1\"", "make them agree"],
        ),
        (
            "unusable K",
            huge.as_bytes(),
            &["unusable shape", "K = 9223372036854775807", "2^30"],
        ),
        (
            "newer schema",
            newer.as_bytes(),
            &["newer autotune", "schema 7", "upgrade autotune"],
        ),
        (
            "newer schema with unknown tables",
            b"schema_version = 99\n\n[[future_table]]\nx = 1\n",
            &["newer", "99"],
        ),
        (
            "no schema_version",
            b"[[gpu]]\nname = \"x\"\n",
            &["no top-level `schema_version`"],
        ),
    ];
    for (what, bytes, needles) in corrupt {
        for (cmd, line) in db_commands("$DIR/tuning.toml") {
            let mut needles = needles.to_vec();
            needles.push("$DIR/tuning.toml");
            let name = format!("corrupt database: {what} [{cmd}]");
            let mut c = case(name, &line, error(&needles)).file("tuning.toml", *bytes);
            if bytes == &broken_header.as_bytes() {
                c = c.without("line 1,");
            }
            cases.push(c);
        }
    }
    for (cmd, line) in db_commands("$DIR") {
        let name = format!("database path is a directory [{cmd}]");
        cases.push(case(
            name,
            &line,
            error(&["$DIR", "is a directory", "--db"]),
        ));
    }
    // `best`, `export` and `summary` only read: a database that does not exist is a mistake (a
    // typo in --db), not an empty database.
    for (cmd, line) in db_commands("$DIR/typo.toml").into_iter().skip(2) {
        let name = format!("missing database [{cmd}]");
        cases.push(case(
            name,
            &line,
            error(&["$DIR/typo.toml", "does not exist", "--db"]),
        ));
    }
    // Unreadable databases, in ways that hold for root too: the path runs through a regular
    // file (stat fails: ENOTDIR), or names a socket (stat works, open fails: ENXIO).
    for (cmd, line) in db_commands("$DIR/results/tuning.toml") {
        let name = format!("unreadable database: its directory is a file [{cmd}]");
        let needles = [
            "$DIR/results/tuning.toml",
            "could not read",
            "Not a directory",
            "permissions",
            "--db",
        ];
        cases.push(case(name, &line, error(&needles)).file("results", "a file\n"));
    }
    for (cmd, line) in db_commands("$DIR/tuning.toml") {
        let name = format!("unreadable database: a socket [{cmd}]");
        let needles = [
            "$DIR/tuning.toml",
            "could not read",
            "No such device or address",
            "--db",
        ];
        cases.push(case(name, &line, error(&needles)).socket("tuning.toml"));
    }
    // A database whose write lock cannot be created (its path is taken by a directory, which
    // holds for root too) stops a tuning run before any GPU work; reading still works, since
    // the read-only commands do not lock.
    let unlockable = |name: &str, line: &str, expect: Expect| {
        case(name, line, expect)
            .dir("results")
            .file("results/tuning.toml", current.clone())
            .dir("results/tuning.toml.lock")
    };
    let lock = [
        "could not lock",
        "$DIR/results/tuning.toml.lock",
        "Is a directory",
        "make the directory writable",
        "--db",
    ];
    for (cmd, line) in [
        ("tune", "--shape 64x64x64 --db $DIR/results/tuning.toml"),
        ("suite", "--suite $GEMM_SUITE --db $DIR/results/tuning.toml"),
    ] {
        cases.push(unlockable(
            &format!("unlockable database [{cmd}]"),
            line,
            error(&lock),
        ));
    }
    cases.push(unlockable(
        "unlockable database is still read [best]",
        "best --gpu 'NVIDIA H200' --shape 2048x2048x2048 --db $DIR/results/tuning.toml",
        Expect::Succeeds(strings(&["(exact:"])),
    ));

    // Entries whose parameters their family cannot launch (zero, overflowing, `i64::MIN / -1`,
    // missing): `best` prints the choice, then fails to compute the launch; so does `export`.
    let params = "params = { BK = 16, BM = 256, BN = 128, PREFETCH = 1, TM = 8, TN = 16 }";
    assert!(current.contains(params));
    let target = "--gpu 'NVIDIA H200' --shape 2048x2048x2048 --db $DIR/tuning.toml";
    for (what, bad) in [
        ("BM = 0", "params = { BK = 16, BM = 0, BN = 128, PREFETCH = 1, TM = 8, TN = 16 }"),
        (
            "BM = i64::MAX",
            "params = { BK = 16, BM = 9223372036854775807, BN = 128, PREFETCH = 1, TM = 8, TN = 16 }",
        ),
        (
            "BM = i64::MIN, TM = -1",
            "params = { BK = 16, BM = -9223372036854775808, BN = 128, PREFETCH = 1, TM = -1, TN = 16 }",
        ),
        ("only BK", "params = { BK = 16 }"),
    ] {
        let text = current.replacen(params, bad, 1);
        let best = ["gemm_tile2d BK=16", "cannot be launched", "re-tune", "$DIR/tuning.toml"];
        cases.push(
            case(
                format!("unlaunchable entry: {what} [best]"),
                &format!("best {target}"),
                Expect::ErrorAfterOutput(strings(&best)),
            )
            .file("tuning.toml", text.clone()),
        );
        cases.push(
            case(
                format!("unlaunchable entry: {what} [export]"),
                &format!("export --format cuda-header {target}"),
                error(&["cannot compute the launch", "gemm_tile2d"]),
            )
            .file("tuning.toml", text),
        );
    }
    // An entry naming a family this build does not have is passed over, and said so.
    let magic = current.replacen("family = \"gemm_tile2d\"", "family = \"gemm_magic\"", 1);
    for (cmd, line) in [("best", "best"), ("export", "export --format cuda-header")] {
        let said = ["passed over", "gemm_magic", "unknown family"];
        cases.push(
            case(
                format!("unknown family in an entry is passed over [{cmd}]"),
                &format!("{line} {target}"),
                Expect::Succeeds(strings(&said)),
            )
            .file("tuning.toml", magic.clone()),
        );
    }
}

/// Other bad arguments of `best`, `export` and `summary`.
fn subcommand_cases(cases: &mut Vec<Case>) {
    for arch in [
        "hopper",
        "sm_",
        "sm_9",
        "sm_4294967299",
        "sm_99999999999999999999",
    ] {
        let line = format!("best --gpu x --arch {arch} --shape 64x64x64 --db $H200_DB");
        let named = format!("'{arch}' is not an arch");
        cases.push(case(
            format!("best: bad arch '{arch}'"),
            &line,
            error(&[&named, "sm_90"]),
        ));
    }
    let h200 = "--gpu 'NVIDIA H200' --shape 2048x2048x2048 --db $H200_DB";
    for (name, line, needles) in [
        (
            "export: arch without launch limits",
            "export --format cuda-header --gpu 'Unknown GPU' --arch sm_12 --shape 64x64x64 --db $H200_DB".to_string(),
            &["no launch limits are known for sm_12", "--arch"][..],
        ),
        (
            "export: unknown format",
            format!("export --format ptx {h200}"),
            &["unknown export format 'ptx'", "accepted formats: cuda-header"],
        ),
        (
            "export: a cubin needs an output file",
            format!("export --format cubin {h200}"),
            &["--format cubin writes a binary file", "-o FILE.cubin"],
        ),
        (
            "export: an unknown GPU needs its arch",
            "export --format cuda-header --shape 64x64x64 --gpu 'Some Other GPU' --db $H200_DB".to_string(),
            &["Some Other GPU", "--arch sm_XY"],
        ),
        (
            "export: output directory does not exist",
            format!("export --format cuda-header {h200} --output $DIR/no/such/dir/k.cuh"),
            &["$DIR/no/such/dir/k.cuh", "No such file or directory"],
        ),
        (
            "export: --check-with a missing file",
            format!("export --format cuda-header {h200} --check-compile --check-with $DIR/missing.cuh"),
            &["--check-with", "$DIR/missing.cuh"],
        ),
        (
            "summary: unknown GPU",
            "summary --suite $GEMM_SUITE --gpu 'GTX 9999' --db $H200_DB".to_string(),
            &["matches 'GTX 9999'", "it has: NVIDIA H200", "a part of one"],
        ),
    ] {
        cases.push(case(name, &line, error(needles)));
    }
    cases.push(
        case(
            "summary: a database without that GPU",
            "summary --suite $GEMM_SUITE --gpu 'NVIDIA H200' --db $DIR/empty.toml",
            error(&["holds no tuning results yet", "tune first"]),
        )
        .file("empty.toml", "schema_version = 1\n"),
    );
}

/// Malformed suite files: reported by the tuning run, the dry run and `summary`, with the file,
/// the line where there is one, and how a suite looks.
fn suite_cases(cases: &mut Vec<Case>) {
    let suites: &[(&str, &[u8], &[&str])] = &[
        (
            "binary.toml",
            b"op = \"gemm\"\n\xff\xfe",
            &["not UTF-8", "configs/suites/gemm.toml"],
        ),
        (
            "truncated.toml",
            b"op = \"gemm\"\nshapes = [\"64x64x64\",\n",
            &["line 3", "shapes = ["],
        ),
        (
            "type.toml",
            b"op = \"gemm\"\nshapes = \"64x64x64\"\n",
            &["line 2, column 10", "expected a sequence"],
        ),
        (
            "number.toml",
            b"op = \"gemm\"\nshapes = [64]\n",
            &["line 2", "expected a string"],
        ),
        (
            "field.toml",
            b"op = \"gemm\"\nshape = [\"64x64x64\"]\n",
            &["line 2", "unknown field `shape`"],
        ),
        (
            "noop.toml",
            b"shapes = [\"64x64x64\"]\n",
            &["missing field `op`"],
        ),
        (
            "op.toml",
            b"op = \"conv\"\nshapes = [\"64x64x64\"]\n",
            &["unknown op 'conv'", "gemm and gemv"],
        ),
        (
            "shape.toml",
            b"op = \"gemm\"\nshapes = [\"64x64x64\", \"64x0x64\"]\n",
            &["shape 2 of `shapes`", "64x0x64", "at least 1"],
        ),
        (
            "huge.toml",
            b"op = \"gemv\"\nshapes = [\"99999999999999999999x2\"]\n",
            &["shape 1 of `shapes`", "too large"],
        ),
        (
            "empty.toml",
            b"op = \"gemm\"\nshapes = []\n",
            &["lists no shapes", "shapes = ["],
        ),
    ];
    for (file, bytes, needles) in suites {
        let path = format!("$DIR/{file}");
        for (cmd, line) in suite_commands(&path) {
            let mut needles = needles.to_vec();
            needles.push(&path);
            let name = format!("malformed suite {file} [{cmd}]");
            cases.push(case(name, &line, error(&needles)).file(file, *bytes));
        }
    }
    for (what, path, needles) in [
        (
            "missing",
            "$DIR/missing.toml",
            &["cannot read suite", "No such file", "--suite"][..],
        ),
        ("a directory", "$DIR", &["is a directory", "--suite"]),
    ] {
        for (cmd, line) in suite_commands(path) {
            let mut needles = needles.to_vec();
            needles.push(path);
            cases.push(case(
                format!("suite path {what} [{cmd}]"),
                &line,
                error(&needles),
            ));
        }
    }
}

/// Every file and directory under `root`, with the contents of the files.
fn snapshot(root: &Path) -> Vec<(String, Option<Vec<u8>>)> {
    let mut out = Vec::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in fs::read_dir(&dir).unwrap().flatten() {
            let path = e.path();
            let name = path.strip_prefix(root).unwrap().display().to_string();
            let kind = e.file_type().unwrap();
            if kind.is_dir() {
                out.push((format!("{name}/"), None));
                todo.push(path);
            } else if kind.is_file() {
                out.push((name, Some(fs::read(&path).unwrap())));
            } else {
                out.push((name, None));
            }
        }
    }
    out.sort();
    out
}

/// What became of a row.
enum Outcome {
    Passed,
    Skipped,
}

/// Runs one row: sets up its files, runs it, checks the result and that nothing on disk
/// changed.
fn check(c: &Case) -> Result<Outcome, String> {
    let missing = match c.needs {
        Needs::Nothing => None,
        Needs::NoGpu => {
            common::gpu_present().map(|why| format!("a GPU or its driver is present ({why})"))
        }
        Needs::NoSystemNvrtc => common::system_library("libnvrtc").map(|found| {
            format!("NVRTC is installed system-wide ({found}), so it cannot be hidden")
        }),
    };
    if let Some(why) = missing {
        common::skip_or_fail(REQUIRE_NO_CUDA, &format!("{}: {why}", c.name))?;
        return Ok(Outcome::Skipped);
    }
    let scratch = tempfile::tempdir().map_err(|e| e.to_string())?;
    let root = scratch.path();
    let dir = root.to_str().expect("a UTF-8 temporary path");
    for (name, content) in &c.files {
        let path = root.join(name);
        match content {
            Content::File(bytes) => fs::write(&path, bytes).unwrap(),
            Content::Dir => fs::create_dir(&path).unwrap(),
            Content::Socket => drop(std::os::unix::net::UnixListener::bind(&path).unwrap()),
        }
    }
    let before = snapshot(root);
    let fill_one = |s: &str| {
        s.replace("$DIR", dir)
            .replace("$H200_DB", H200_DB)
            .replace("$GEMM_SUITE", GEMM_SUITE)
            .replace("$GEMV_SUITE", GEMV_SUITE)
    };
    let fill = |v: &[String]| -> Vec<String> { v.iter().map(|s| fill_one(s)).collect() };
    let args = fill(&c.args);
    let env: Vec<(String, String)> = c
        .env
        .iter()
        .map(|(k, v)| (k.clone(), fill_one(v)))
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let r = common::run_env(&args, &env);
    let needles = fill(c.expect.needles());
    let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
    match &c.expect {
        Expect::Error(_) => {
            common::check_error(&r, &needles)?;
        }
        Expect::ErrorAfterOutput(_) => {
            common::error_line(&r, &needles)?;
        }
        Expect::Usage(_) => common::check_usage(&r, &needles)?,
        Expect::Succeeds(_) => {
            if !r.success() {
                return Err(format!("expected success: {}", r.context()));
            }
            let said = format!("{}{}", r.stdout, r.stderr);
            if let Some(n) = needles.iter().find(|n| !said.contains(**n)) {
                return Err(format!("expected {n:?} in the output: {}", r.context()));
            }
        }
    }
    for text in fill(&c.absent) {
        if r.stderr.contains(&text) {
            return Err(format!("{text:?} must not be on stderr: {}", r.context()));
        }
    }
    let after = snapshot(root);
    if after != before {
        let names = |s: &[(String, Option<Vec<u8>>)]| -> Vec<String> {
            s.iter().map(|(n, _)| n.clone()).collect()
        };
        return Err(format!(
            "the run changed its directory (before: {:?}, after: {:?}, contents compared too): {}",
            names(&before),
            names(&after),
            r.context()
        ));
    }
    Ok(Outcome::Passed)
}

/// Every row of the table; the failures are listed together at the end.
#[test]
fn hostile_inputs_fail_clearly_and_change_nothing() {
    let mut cases = Vec::new();
    shape_cases(&mut cases);
    option_cases(&mut cases);
    database_cases(&mut cases);
    subcommand_cases(&mut cases);
    suite_cases(&mut cases);
    let mut names = std::collections::BTreeSet::new();
    for c in &cases {
        assert!(names.insert(&c.name), "two rows are named {:?}", c.name);
    }
    let (mut passed, mut skipped, mut failed) = (0, 0, Vec::new());
    for c in &cases {
        match check(c) {
            Ok(Outcome::Passed) => passed += 1,
            Ok(Outcome::Skipped) => skipped += 1,
            Err(e) => failed.push(format!("row {:?}: {e}", c.name)),
        }
    }
    println!(
        "{} rows: {passed} passed, {skipped} skipped, {} failed",
        cases.len(),
        failed.len()
    );
    assert!(
        failed.is_empty(),
        "{} of {} rows failed:\n\n{}",
        failed.len(),
        cases.len(),
        failed.join("\n\n")
    );
}
