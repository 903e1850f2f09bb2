//! Command-line behaviour that works without a GPU or NVRTC: `--help`, `best` and `export`
//! against a committed database. What the command line refuses (bad shapes, options,
//! databases, suites...) is the table of tests/offline/hostile.rs.

use crate::common;
use common::{ok, root, run, H200_DB};
use std::fs;
use std::path::{Path, PathBuf};

#[test]
fn help_lists_the_commands_and_tune_help_the_tuning_options() {
    let top = ok(&["--help"]);
    for cmd in ["tune ", "merge ", "verify ", "autotune tune --help"] {
        assert!(top.contains(cmd), "--help lacks {cmd}:\n{top}");
    }
    let tune = ok(&["tune", "--help"]);
    for opt in ["--shape", "--op", "--db", "--dry-run", "--arch", "--json"] {
        assert!(tune.contains(opt), "tune --help lacks {opt}:\n{tune}");
    }
    for heading in [
        "Problem:",
        "Search:",
        "Run:",
        "Database:",
        "Output:",
        "Examples:",
    ] {
        assert!(
            tune.contains(heading),
            "tune --help lacks {heading}:\n{tune}"
        );
    }
}

/// The visible subcommands, as `autotune --help` lists them (and the hidden `fingerprint`).
fn subcommands() -> Vec<String> {
    let top = ok(&["--help"]);
    let mut names: Vec<String> = top
        .lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|n| n != "help")
        .collect();
    names.push("fingerprint".into());
    names
}

/// No line of any `--help` (or `-h`) is over 100 characters, and `tune --help` holds the
/// tuning options only.
#[test]
fn every_help_fits_100_columns_and_tune_help_holds_tuning_options_only() {
    let commands = subcommands();
    assert!(commands.len() >= 12, "{commands:?}");
    let mut helps = vec![("autotune --help".to_string(), ok(&["--help"]))];
    helps.push(("autotune -h".to_string(), ok(&["-h"])));
    for c in &commands {
        helps.push((format!("autotune {c} --help"), ok(&[c, "--help"])));
        helps.push((format!("autotune {c} -h"), ok(&[c, "-h"])));
    }
    for (what, text) in &helps {
        for line in text.lines() {
            assert!(
                line.chars().count() <= 100,
                "`{what}` has a line of {} characters:\n{line}",
                line.chars().count()
            );
        }
    }
    let tune = ok(&["tune", "--help"]);
    for other in [
        "--rescore",
        "--loo",
        "--max-slowdown",
        "--portfolio",
        "--check-compile",
    ] {
        assert!(!tune.contains(other), "tune --help lists {other}:\n{tune}");
    }
}

/// `autotune tune ...` and the bare `autotune ...` are one command: the same output and exit
/// code for the same options (each case fails before NVRTC or a GPU is needed).
#[test]
fn tune_and_the_bare_form_are_the_same_command() {
    let cases: [&[&str]; 6] = [
        &["--shape", "64x64x64", "--dry-run"],
        &["--shape", "64x64x64", "--strategy", "nonsense", "--no-save"],
        &["--shape", "64x64x64", "--arch", "sm_90", "--no-save"],
        &["--shape", "0x64x64", "--dry-run", "--arch", "sm_90"],
        &["--suite", "no/such/suite.toml"],
        &["--shape", "64x64x64", "--budget", "0"],
    ];
    for args in cases {
        let bare = run(args);
        let mut with = vec!["tune"];
        with.extend_from_slice(args);
        let tune = run(&with);
        assert_ne!(bare.code, Some(0), "{args:?} should fail: {}", bare.stderr);
        assert_eq!(
            bare.code, tune.code,
            "{args:?}: {} / {}",
            bare.stderr, tune.stderr
        );
        assert_eq!(bare.stdout, tune.stdout, "{args:?}");
        // clap's usage line names the command it parsed for: the rest is the same.
        let usage = |s: &str| s.replace("autotune tune [OPTIONS]", "USAGE");
        let bare_err = usage(&bare.stderr.replace(
            "autotune [tune] (--shape MxNxK | --suite FILE) [OPTIONS]\n       autotune <COMMAND> [OPTIONS]",
            "autotune tune [OPTIONS]",
        ));
        assert_eq!(bare_err, usage(&tune.stderr), "{args:?}");
    }
}

/// [`common::current_h200_db`] written to `dir`.
fn current_h200_db(dir: &Path) -> PathBuf {
    let path = dir.join("h200-current.toml");
    fs::write(&path, common::current_h200_db()).unwrap();
    path
}

/// `autotune best` against a committed database (with current checksums): every lookup rule,
/// no GPU needed.
#[test]
fn best_explains_each_lookup_rule_without_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let current = current_h200_db(dir.path());
    let db = current.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut all = vec!["best", "--db", db];
        all.extend_from_slice(args);
        ok(&all)
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
    let out = ok(&[
        "best",
        "--db",
        H200_DB,
        "--gpu",
        "NVIDIA H200",
        "--shape",
        "2048x2048x2048",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    // The committed fixture predates the current templates: none of its entries is current.
    assert_ne!(v["rule"], "exact", "{v}");
    assert_eq!(v["skipped"][0]["rule"], "exact", "{v}");
    assert_eq!(v["skipped"][0]["freshness"], "stale", "{v}");
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

/// The shipped database's coverage predicts shapes nobody tuned, and `cover --loo` checks it on
/// its own grid: no GPU needed.
#[test]
fn shipped_coverage_predicts_untuned_shapes_without_a_gpu() {
    let db = "results/tuning.toml";
    for gpu in ["NVIDIA H100 80GB HBM3", "NVIDIA H200"] {
        let loo = ok(&["cover", "--loo", "--db", db, "--op", "gemm", "--gpu", gpu]);
        assert!(
            loo.contains("leave-one-out on ")
                && loo.contains(" grid points of ")
                && loo.contains("regret (chosen"),
            "{loo}"
        );
        let out = ok(&[
            "best",
            "--db",
            db,
            "--gpu",
            gpu,
            "--shape",
            "777x1333x555",
            "--json",
        ]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["rule"], "predicted", "{v}");
        assert!(v["prediction"]["ranked"].as_u64().unwrap() > 1, "{v}");
        assert!(v["vendor"].is_boolean(), "{v}");
        let text = ok(&["best", "--db", db, "--gpu", gpu, "--shape", "777x1333x555"]);
        assert!(
            text.contains("predicted from the coverage grid") || text.contains("vendor guard"),
            "{text}"
        );
    }
    common::fails_with(
        &[
            "cover",
            "--loo",
            "--db",
            db,
            "--op",
            "gemm",
            "--gpu",
            "Mystery GPU",
        ],
        &["matches 'Mystery GPU'", "NVIDIA H200", "a part of one"],
    );
    // A GPU the database has, without a grid of that form.
    common::fails_with(
        &[
            "cover", "--loo", "--db", db, "--op", "gemm", "--layout", "tt", "--batch", "4",
            "--beta", "1", "--gpu", "h200",
        ],
        &[
            "no gemm:tt:b4:beta coverage for 'NVIDIA H200'",
            "autotune cover --op gemm",
        ],
    );
}

/// Coverage is per form: `cover --layout nt` measures the layer call's grid (a dry run lists it
/// without a GPU), and where the shipped database has no grid of a form for a GPU (a strided
/// batch of TT products with beta on the H200), there is none to check or to predict that
/// form's problems from.
#[test]
fn cover_measures_one_form_per_grid() {
    let db = "results/tuning.toml";
    let dry = ok(&["cover", "--op", "gemm", "--layout", "nt", "--dry-run"]);
    let first = dry.lines().next().unwrap();
    assert!(
        first.starts_with("cover --dry-run: gemm:nt grid, ")
            && first.contains("gemm_general")
            && !first.contains("gemm_tile2d"),
        "{first}"
    );
    // Every listed shape is NT, as many as the first line says, the first one in the pool.
    let listed = dry
        .lines()
        .filter(|l| l.ends_with(":nt") || l.ends_with(":nt *"))
        .count();
    assert_eq!(listed + 1, dry.lines().count(), "{dry}");
    assert!(first.contains(&format!(" {listed} shapes, ")), "{first}");
    assert!(dry.contains("\n  1x256x256:nt *\n"), "{dry}");
    let dry = ok(&[
        "cover",
        "--op",
        "gemm",
        "--layout",
        "tn",
        "--beta",
        "1",
        "--batch",
        "4",
        "--dry-run",
    ]);
    // A batched form: gemm-batched.toml, its points at several counts, each labelled with its.
    assert!(dry.contains("gemm:tn:b4:beta grid, 108 shapes"), "{dry}");
    assert!(dry.contains("\n  4x5x16:tn:b2:beta *\n"), "{dry}");
    assert!(dry.contains(":tn:b512:beta\n"), "{dry}");
    // Alpha != 1: the families of the full interface on gemm-forms.toml's shapes.
    let dry = ok(&["cover", "--op", "gemm", "--alpha", "2", "--dry-run"]);
    let first = dry.lines().next().unwrap_or_default();
    assert!(first.contains("gemm:alpha grid, 103 shapes"), "{first}");
    assert!(
        first.contains("gemm_general") && !first.contains("gemm_tile2d"),
        "{first}"
    );
    common::fails_with(
        &[
            "cover",
            "--op",
            "gemm",
            "--layout",
            "nt",
            "--family",
            "gemm_tile2d",
            "--dry-run",
        ],
        &["no gemm family named gemm_tile2d computes the form nt"],
    );
    common::fails_with(
        &[
            "cover",
            "--loo",
            "--db",
            db,
            "--op",
            "gemm",
            "--layout",
            "tt",
            "--batch",
            "4",
            "--beta",
            "1",
            "--gpu",
            "NVIDIA H200",
        ],
        &[
            "no gemm:tt:b4:beta coverage for 'NVIDIA H200'",
            "NVIDIA H200 gemm coverage",
        ],
    );
    let out = ok(&[
        "best",
        "--db",
        db,
        "--gpu",
        "NVIDIA H200",
        "--shape",
        "777x1333x555:tt:b4:beta",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_ne!(v["rule"], "predicted", "{v}");
}

/// `best` and `export` match `--gpu` as `compare --gpus` and the CSV export do: the exact
/// name, else the only name containing it, ignoring case; a GPU the database lacks is an error,
/// or with `--arch` a warning that the answer is for an unseen GPU of that arch.
#[test]
fn gpu_names_match_by_one_rule_everywhere() {
    let db = "results/tuning.toml";
    let short = ok(&[
        "best",
        "--db",
        db,
        "--gpu",
        "h200",
        "--shape",
        "2048x2048x2048",
    ]);
    assert!(short.contains("on NVIDIA H200 (sm_90)"), "{short}");
    common::fails_with(
        &[
            "best",
            "--db",
            db,
            "--gpu",
            "nvidia",
            "--shape",
            "2048x2048x2048",
        ],
        &["nvidia", "NVIDIA H100 80GB HBM3", "NVIDIA H200"],
    );
    common::fails_with(
        &[
            "best",
            "--db",
            db,
            "--gpu",
            "Mystery GPU",
            "--shape",
            "64x64x64",
        ],
        &["--gpu 'Mystery GPU' names no GPU of the database", "--arch"],
    );
    let r = run(&[
        "best",
        "--db",
        db,
        "--gpu",
        "Mystery GPU",
        "--arch",
        "sm_90",
        "--shape",
        "64x64x64",
    ]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("no GPU named 'Mystery GPU'") && r.stderr.contains("unseen GPU"),
        "{}",
        r.stderr
    );
    let csv = ok(&["export", "--format", "csv", "--db", db, "--gpu", "h100"]);
    assert!(
        csv.contains("NVIDIA H100 80GB HBM3") && !csv.contains("NVIDIA H200,"),
        "{csv}"
    );
    // summary and cover --loo match the same way.
    let suite = "configs/suites/gemm.toml";
    let summary = ok(&["summary", "--suite", suite, "--db", db, "--gpu", "h200"]);
    assert!(
        summary.starts_with("gemm suite on NVIDIA H200 (sm_90"),
        "{summary}"
    );
    common::fails_with(
        &["summary", "--suite", suite, "--db", db, "--gpu", "nvidia"],
        &["nvidia", "NVIDIA H100 80GB HBM3", "NVIDIA H200"],
    );
    let loo = ok(&[
        "cover", "--loo", "--db", db, "--gpu", "h100", "--op", "gemv",
    ]);
    // The grid's size follows the shipped database (an --extend adds points): not pinned here.
    assert!(
        loo.starts_with("leave-one-out on ")
            && loo.contains(" grid points of NVIDIA H100 80GB HBM3 gemv "),
        "{loo}"
    );
}

/// A negative dimension reaches the shape parser, whose message says what is accepted, rather
/// than clap's "unexpected argument '-5'".
#[test]
fn a_negative_shape_gets_the_shape_error() {
    for args in [
        vec!["--shape", "-5x10x10", "--dry-run", "--arch", "sm_90"],
        vec!["best", "--shape", "-5x10x10"],
        vec!["verify", "--shape", "-5x10x10"],
    ] {
        common::fails_with(
            &args,
            &["shape '-5x10x10': every dimension must be at least 1"],
        );
    }
}

/// `--where` takes an expression of the spaces' language: one that does not parse is a usage
/// error, and one naming a parameter a chosen family lacks fails before anything is compiled,
/// naming the family.
#[test]
fn where_conditions_are_checked_before_any_work() {
    common::check_usage(
        &run(&["--shape", "64x64x64", "--where", "FASTLOAD =="]),
        &["--where <EXPR>", "cannot parse expression 'FASTLOAD =='"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    common::fails_with(
        &[
            "--shape",
            "256x256x256",
            "--dry-run",
            "--arch",
            "sm_90",
            "--family",
            "gemm_tiled",
            "--where",
            "FASTLOAD == 2",
        ],
        &["space 'gemm_tiled'", "unknown name 'FASTLOAD'"],
    );
}

/// `--covering` chooses what a dry run compiles, so without `--dry-run` it is a usage error
/// (before any GPU or NVRTC work), and `tune --help` lists it under the dry run's heading.
#[test]
fn covering_needs_a_dry_run() {
    common::check_usage(
        &run(&["--shape", "64x64x64", "--covering"]),
        &["required arguments were not provided", "--dry-run"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let help = common::ok(&["tune", "--help"]);
    let heading = help
        .find("Dry run (no GPU)")
        .expect("the dry run's heading");
    let flag = help.find("--covering").expect("--covering in tune --help");
    assert!(flag > heading, "{help}");
}

/// `tune --math` takes any, simt or tf32x3, and says so; a family the math filter leaves out
/// is refused by name before any GPU or NVRTC work.
#[test]
fn tune_math_lists_the_accepted_values_and_refuses_an_excluded_family() {
    common::check_usage(
        &run(&["tune", "--math", "bogus", "--shape", "64x64x64"]),
        &["--math", "unknown math 'bogus'", "any, simt, tf32x3"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    common::fails_with(
        &[
            "tune",
            "--shape",
            "64x64x64",
            "--math",
            "simt",
            "--family",
            "gemm_tf32x3",
            "--dry-run",
            "--arch",
            "sm_90",
        ],
        &["'gemm_tf32x3'", "tf32x3", "simt", "gemm_warptile"],
    );
    let help = common::ok(&["tune", "--help"]);
    assert!(help.contains("--math <MATH>"), "{help}");
}

/// `verify` refuses bad options before it needs a GPU: a slowdown below 1, a real arch given
/// as --ptx-arch, a database that does not exist, a family the build lacks.
#[test]
fn verify_checks_its_options_before_the_gpu() {
    common::check_usage(
        &run(&["verify", "--max-slowdown", "0.5"]),
        &["--max-slowdown", "a number >= 1"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    common::fails_with(
        &["verify", "--ptx-arch", "sm_75"],
        &["--ptx-arch takes a virtual arch, compute_XY"],
    );
    common::fails_with(
        &["verify", "--db", "/nonexistent/tuning.toml"],
        &["/nonexistent/tuning.toml does not exist"],
    );
    common::fails_with(
        &["verify", "--family", "gemm_nonesuch"],
        &["gemm_nonesuch", "gemm_warptile"],
    );
}

/// `evaluate --rescore`: the report of a committed evaluation (`results/untuned/`) made again
/// from its recorded times under today's rules and the shipped database, no GPU needed. What
/// ships must keep its claim on those shapes: with the vendor guard, no gemm shape slower than
/// cuBLAS.
#[test]
fn evaluate_rescores_a_committed_measurement_without_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("rescored.json");
    let md = dir.path().join("rescored.md");
    let rec = "results/untuned/evaluate-gemm-2026-h100.json";
    let out = ok(&[
        "evaluate",
        "--rescore",
        rec,
        "--db",
        "results/tuning.toml",
        "--json",
        json.to_str().unwrap(),
        "--out",
        md.to_str().unwrap(),
    ]);
    assert!(
        out.contains("summary (gemm, 50 shapes, NVIDIA H100 80GB HBM3)"),
        "{out}"
    );
    let written = fs::read_to_string(&json).unwrap();
    // One compact line: the records are kept per seed and GPU, for programs.
    assert_eq!(
        written.lines().count(),
        1,
        "{}",
        &written[..written.len().min(200)]
    );
    let v: serde_json::Value = serde_json::from_str(&written).unwrap();
    let recorded: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(rec).unwrap()).unwrap();
    assert_eq!(v["gpu"], recorded["gpu"]);
    assert_eq!(v["seed"], recorded["seed"]);
    let shapes = v["shapes"].as_array().unwrap();
    assert_eq!(shapes.len(), 50);
    // Every outcome that entered the summaries is one the recorded run measured.
    for (now, then) in shapes.iter().zip(recorded["shapes"].as_array().unwrap()) {
        assert_eq!(now["label"], then["label"]);
        for c in now["chosen"].as_array().unwrap() {
            if c["measured"] == false || c["vendor"] == true {
                continue;
            }
            let t = c["kernel_ms"].as_f64().unwrap();
            let seen = then["chosen"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|o| o["kernel_ms"].as_f64())
                .chain(then["best_ms"].as_f64())
                .any(|o| o == t);
            assert!(
                seen,
                "{} {}: {t} ms was not measured then",
                now["label"], c["policy"]
            );
        }
    }
    let runtime = &v["policies"][0];
    assert_eq!(runtime["policy"], "runtime");
    let count = runtime["vs_cublas"]["count"].as_u64().unwrap();
    assert!(
        count >= 40,
        "only {count} of 50 shapes re-scored: {runtime}"
    );
    assert!(
        runtime["vs_cublas"]["min"].as_f64().unwrap() >= 1.0,
        "with the guard a shape runs slower than cuBLAS: {runtime}"
    );
    let text = fs::read_to_string(&md).unwrap();
    assert!(text.contains("re-scored without a GPU"), "{text}");
    assert!(text.contains("| runtime | "), "{text}");

    // A file that is not an evaluation, and a GPU the database lacks, are clear errors.
    let bad = dir.path().join("bad.json");
    fs::write(&bad, "{\"gpu\": 1}").unwrap();
    common::fails_with(
        &["evaluate", "--rescore", bad.to_str().unwrap()],
        &["is not an evaluation written by `autotune evaluate --json`"],
    );
    let other = dir.path().join("other.json");
    fs::write(
        &other,
        fs::read_to_string(rec)
            .unwrap()
            .replace("NVIDIA H100 80GB HBM3", "Mystery GPU"),
    )
    .unwrap();
    common::fails_with(
        &["evaluate", "--rescore", other.to_str().unwrap()],
        &["no [[gpu]] record for 'Mystery GPU'"],
    );
}

/// `evaluate --rescore A B`: the parts of one run (`--part K/N`) read as one, in the order
/// given; parts of different GPUs are refused, and so is a part that is not K/N.
#[test]
fn evaluate_rescores_the_parts_of_one_run_together() {
    let dir = tempfile::tempdir().unwrap();
    let rec = "results/untuned/evaluate-gemm-2026-h100.json";
    let mut whole: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(rec).unwrap()).unwrap();
    let shapes = whole["shapes"].as_array().unwrap().clone();
    let (first, second) = shapes.split_at(20);
    let write = |name: &str, part: &[serde_json::Value], v: &mut serde_json::Value| {
        v["shapes"] = serde_json::Value::Array(part.to_vec());
        let p = dir.path().join(name);
        fs::write(&p, v.to_string()).unwrap();
        p
    };
    let a = write("a.json", first, &mut whole);
    let b = write("b.json", second, &mut whole);
    let json = dir.path().join("joined.json");
    let out = ok(&[
        "evaluate",
        "--rescore",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        out.contains("summary (gemm, 50 shapes, NVIDIA H100 80GB HBM3)"),
        "{out}"
    );
    let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&json).unwrap()).unwrap();
    let labels: Vec<&serde_json::Value> = v["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| &s["label"])
        .collect();
    let recorded: Vec<&serde_json::Value> = shapes.iter().map(|s| &s["label"]).collect();
    assert_eq!(labels, recorded);

    whole["gpu"] = "NVIDIA H200".into();
    let other = write("other.json", second, &mut whole);
    common::fails_with(
        &[
            "evaluate",
            "--rescore",
            a.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
        &["differ in their GPU", "NVIDIA H200"],
    );
    common::check_usage(
        &common::run(&["evaluate", "--random", "4", "--part", "3/2"]),
        &["give the part as K/N, 1 <= K <= N"],
    )
    .unwrap();
}

// ---------------------------------------------------------------------------------------------
// The docs: what they say the command line does, and where they point

/// The Markdown pages a newcomer reads: the README, docs/ and the results page.
fn doc_pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md"), root().join("results/README.md")];
    let mut docs: Vec<PathBuf> = fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    assert!(docs.len() >= 9, "docs/ lost pages: {docs:?}");
    pages.extend(docs);
    pages
}

/// The lines of `text` outside fenced code blocks, with their line numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            if l.trim_start().starts_with("```") {
                fenced = !fenced;
                return false;
            }
            !fenced
        })
        .map(|(i, l)| (i + 1, l))
        .collect()
}

/// The targets of the Markdown links `[text](target)` on `line`.
fn link_targets(line: &str) -> Vec<&str> {
    line.match_indices("](")
        .filter_map(|(i, _)| {
            let rest = &line[i + 2..];
            rest.find(')').map(|end| &rest[..end])
        })
        .collect()
}

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown file's headings.
fn anchors(path: &Path) -> Vec<String> {
    let text = fs::read_to_string(path).unwrap();
    prose_lines(&text)
        .into_iter()
        .filter(|(_, l)| l.starts_with('#'))
        .map(|(_, l)| anchor(l.trim_start_matches('#')))
        .collect()
}

#[test]
fn every_relative_link_in_the_docs_points_to_something_that_exists() {
    let mut bad = Vec::new();
    let mut checked = 0;
    for page in doc_pages() {
        let text = fs::read_to_string(&page).unwrap();
        let dir = page.parent().unwrap();
        for (n, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (file, frag) = target.split_once('#').unwrap_or((target, ""));
                let path = if file.is_empty() {
                    page.clone()
                } else {
                    dir.join(file)
                };
                let place = format!("{}:{n}: {target}", page.display());
                if !path.exists() {
                    bad.push(format!("{place}: no such file"));
                } else if !frag.is_empty()
                    && path.extension().is_some_and(|x| x == "md")
                    && !anchors(&path).iter().any(|a| a == frag)
                {
                    bad.push(format!("{place}: no heading with that anchor"));
                }
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: is the parser broken?"
    );
    assert!(bad.is_empty(), "broken links:\n{}", bad.join("\n"));
}

/// The lines of the code blocks of the README's section `heading`.
fn readme_commands(heading: &str) -> Vec<String> {
    let text = fs::read_to_string(root().join("README.md")).unwrap();
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| l.trim() != heading)
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect();
    let mut fenced = false;
    let mut lines = Vec::new();
    for l in section {
        if l.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if fenced {
            lines.push(l.trim().to_string());
        }
    }
    lines
}

/// The README's two commands are true: the tuning command is the set-up script with options
/// the binary takes, and the test command is what CI runs.
#[test]
fn the_readmes_two_commands_are_the_scripts_ci_and_the_cli_run() {
    let commands = readme_commands("## The two commands");
    assert_eq!(
        commands.len(),
        2,
        "the README's 'The two commands' should hold two commands: {commands:?}"
    );
    let (tune, test) = (&commands[0], &commands[1]);

    assert_eq!(test, "bash scripts/test.sh");
    let ci = fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == test),
        ".ci/run does not run the README's test command `{test}`:\n{ci}"
    );

    let args = tune
        .strip_prefix("bash scripts/tune.sh ")
        .unwrap_or_else(|| panic!("the tuning command is not scripts/tune.sh: {tune}"));
    let script = fs::read_to_string(root().join("scripts/tune.sh")).unwrap();
    assert!(
        script.contains("cargo run --release") && script.contains("-- \"$@\""),
        "scripts/tune.sh no longer hands its arguments to autotune"
    );
    let help = ok(&["tune", "--help"]);
    for flag in args.split_whitespace().filter(|a| a.starts_with("--")) {
        assert!(
            help.contains(&format!("{flag} ")),
            "`autotune tune --help` lacks {flag}"
        );
    }
    assert!(
        args.contains("--db ") && !args.contains("results/tuning.toml"),
        "a newcomer's first tune must not write the shipped database: {tune}"
    );
}

/// Replaces every `YYYY-MM-DD` with `DATE`, and "not committed" too.
fn mask_dates(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    while i < b.len() {
        if i + 10 <= b.len()
            && digits(i..i + 4)
            && b[i + 4] == b'-'
            && digits(i + 5..i + 7)
            && b[i + 7] == b'-'
            && digits(i + 8..i + 10)
        {
            out.push_str("DATE");
            i += 10;
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out.replace("not committed", "DATE")
}

/// results/README.md is generated, never typed: it must be what `scripts/results-readme.sh`
/// writes from the committed database and reports today. Its dates come from git; where the
/// history is missing (a shallow clone, a tarball) they are left out of the comparison.
#[test]
fn the_results_page_is_what_its_generator_writes() {
    let out = std::process::Command::new("bash")
        .arg(root().join("scripts/results-readme.sh"))
        .env("AUTOTUNE", common::bin())
        .env("OUT", "-")
        .current_dir(root())
        .output()
        .expect("bash runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "scripts/results-readme.sh failed:\n{stderr}"
    );
    let generated = String::from_utf8(out.stdout).unwrap();
    let committed = fs::read_to_string(root().join("results/README.md")).unwrap();
    let full_history = std::process::Command::new("git")
        .args(["rev-parse", "--is-shallow-repository"])
        .current_dir(root())
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).trim() == "false");
    let (generated, committed) = if full_history {
        (generated, committed)
    } else {
        (mask_dates(&generated), mask_dates(&committed))
    };
    if generated != committed {
        let first = generated
            .lines()
            .zip(committed.lines())
            .position(|(g, c)| g != c)
            .unwrap_or(generated.lines().count().min(committed.lines().count()));
        panic!(
            "results/README.md is out of date: run `bash scripts/results-readme.sh` and commit it.\n\
             First difference at line {}:\n  generated: {:?}\n  committed: {:?}",
            first + 1,
            generated.lines().nth(first),
            committed.lines().nth(first)
        );
    }
    for needle in [
        "## Suites",
        "geometric mean x cuBLAS over",
        "## Shapes nobody tuned",
    ] {
        assert!(
            committed.contains(needle),
            "results/README.md lacks {needle:?}"
        );
    }
}
