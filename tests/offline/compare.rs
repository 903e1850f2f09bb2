//! `merge`, `compare`, `report`, `export --format csv|json|t4` and `cross --show` on committed
//! databases, without a GPU: `tests/data/h100-suites.toml` and `tests/data/h200-suites.toml`
//! are `results/tuning.toml` (as of issue 5) split per GPU, and `tests/data/h100-h200-suites.toml`
//! is the whole of it.

use crate::common;
use autotune::db::Database;
use autotune::problem::{Op, Shape};
use autotune::report::formats::JsonExport;
use autotune::tuning::cross::{CrossMeasurement, Portability};
use common::{data, fails_with, ok, run};
use std::fs;
use std::path::Path;

const H100: &str = "h100-suites.toml";
const H200: &str = "h200-suites.toml";
const BOTH: &str = "h100-h200-suites.toml";

fn s(p: &Path) -> &str {
    p.to_str().expect("test paths are UTF-8")
}

#[test]
fn merging_the_split_fixtures_gives_back_the_same_entries() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("merged.toml");
    let (h100, h200) = (data(H100), data(H200));
    // The real data mixes two versions of gemv_split_k: refused, naming both, nothing written.
    fails_with(
        &["merge", s(&h100), s(&h200), "-o", s(&out)],
        &[
            "gemv_split_k",
            s(&h100),
            s(&h200),
            "68a7e90d4e4e0c7645a802cbad6f34be341533603959bbde9fd499f891273008",
            "3509fdd012976bf3fd6854db3ca686b204824babd00dddb7a32ec75a366cae6f",
            "--allow-mixed-checksums",
            "Nothing was written",
        ],
    );
    assert!(!out.exists(), "a refused merge wrote {}", out.display());
    // Asked for explicitly, it merges, says what was mixed, and gives back the whole database.
    let stdout = ok(&[
        "merge",
        s(&h100),
        s(&h200),
        "-o",
        s(&out),
        "--allow-mixed-checksums",
    ]);
    assert!(
        stdout.contains(
            "warning: merged entries tuned with different kernel versions, family gemv_split_k"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("32 entries from 2 databases: 32 in one database only, 0 in several"),
        "{stdout}"
    );
    let merged = Database::load(&out).unwrap();
    let whole = Database::load(&data(BOTH)).unwrap();
    assert_eq!(merged.entries, whole.entries);
    assert_eq!(merged.gpus, whole.gpus);
    // The fixtures are schema version 1 files (before coverage); a merge writes the current
    // version, and nothing else changes.
    assert_eq!(
        fs::read_to_string(&out).unwrap(),
        fs::read_to_string(data(BOTH)).unwrap().replacen(
            "schema_version = 1\n",
            &format!("schema_version = {}\n", autotune::db::SCHEMA_VERSION),
            1
        ),
        "the merged file is byte for byte the original"
    );
}

#[test]
fn merge_keeps_the_faster_entry_and_records_both_times() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b, out) = (
        dir.path().join("a.toml"),
        dir.path().join("b.toml"),
        dir.path().join("out.toml"),
    );
    let h200 = Database::load(&data(H200)).unwrap();
    let shape = Shape::parse(Op::Gemm, "2048x2048x2048").unwrap();
    let gemv = Shape::parse(Op::Gemv, "4096x4096").unwrap();
    // b: a faster re-run of gemm 2048^3 and a slower one of gemv 4096x4096, nothing else.
    let mut other = Database::new();
    other.upsert_gpu(h200.gpus[0].clone());
    let mut faster = h200.get("NVIDIA H200", Op::Gemm, shape).unwrap().clone();
    faster.median_ms *= 0.9;
    faster.date = "2026-12-01T00:00:00Z".to_string();
    other.upsert(faster);
    let mut slower = h200.get("NVIDIA H200", Op::Gemv, gemv).unwrap().clone();
    slower.median_ms *= 1.5;
    slower.date = "2026-12-01T00:00:00Z".to_string();
    other.upsert(slower);
    h200.save(&a).unwrap();
    other.save(&b).unwrap();

    let stdout = ok(&["merge", s(&a), s(&b), "-o", s(&out)]);
    let lines: Vec<&str> = stdout.lines().collect();
    let gemm_line = lines
        .iter()
        .find(|l| l.starts_with("NVIDIA H200 gemm 2048x2048x2048: "))
        .unwrap_or_else(|| panic!("no line for gemm 2048^3:\n{stdout}"));
    assert!(
        gemm_line.contains(&format!("{}'s gemm_tile2d", s(&b))),
        "{gemm_line}"
    );
    assert!(gemm_line.contains(" replaces "), "{gemm_line}");
    assert!(
        gemm_line.contains("(11.1% slower); both times recorded"),
        "{gemm_line}"
    );
    let gemv_line = lines
        .iter()
        .find(|l| l.starts_with("NVIDIA H200 gemv 4096x4096: "))
        .unwrap_or_else(|| panic!("no line for gemv 4096x4096:\n{stdout}"));
    assert!(gemv_line.contains(" stays over "), "{gemv_line}");
    assert!(gemv_line.contains("(50.0% slower)"), "{gemv_line}");
    assert!(
        stdout.contains("16 entries from 2 databases: 14 in one database only, 2 in several (2 time(s) the faster kept"),
        "{stdout}"
    );

    let merged = Database::load(&out).unwrap();
    assert_eq!(merged.entries.len(), 16);
    let e = merged.get("NVIDIA H200", Op::Gemm, shape).unwrap();
    let original = h200.get("NVIDIA H200", Op::Gemm, shape).unwrap();
    assert_eq!(e.median_ms, original.median_ms * 0.9);
    assert_eq!(e.also_measured.len(), 1);
    assert_eq!(e.also_measured[0].median_ms, original.median_ms);
    assert_eq!(e.also_measured[0].source, s(&a));
    let v = merged.get("NVIDIA H200", Op::Gemv, gemv).unwrap();
    assert_eq!(v.also_measured[0].source, s(&b));
    let text = fs::read_to_string(&out).unwrap();
    assert!(text.contains("also_measured = [{ "), "{text}");

    // Merging the result with one of its inputs again changes nothing.
    let again = dir.path().join("again.toml");
    ok(&["merge", s(&out), s(&b), "-o", s(&again)]);
    assert_eq!(Database::load(&again).unwrap(), merged);
}

#[test]
fn merge_refuses_unreadable_inputs_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.toml");
    fs::write(&out, "schema_version = 1\n").unwrap();
    let newer = dir.path().join("newer.toml");
    fs::write(&newer, "schema_version = 99\n").unwrap();
    fails_with(
        &["merge", s(&data(H200)), s(&newer), "-o", s(&out)],
        &[s(&newer), "newer autotune"],
    );
    let missing = dir.path().join("missing.toml");
    fails_with(
        &["merge", s(&data(H200)), s(&missing), "-o", s(&out)],
        &[s(&missing), "does not exist"],
    );
    assert_eq!(fs::read_to_string(&out).unwrap(), "schema_version = 1\n");
    // One input is a usage error.
    let r = run(&["merge", s(&data(H200)), "-o", s(&out)]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
}

#[test]
fn compare_prints_one_table_per_op_with_geomean_summaries() {
    let db = data(BOTH);
    let out = ok(&["compare", "--db", s(&db)]);
    assert!(
        out.contains(
            "gemm on 2 GPUs, 8 shapes (throughput in GFLOP/s; % of each GPU's own FP32 peak)"
        ),
        "{out}"
    );
    assert!(
        out.contains(
            "  A = NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, FP32 peak 66.9 TFLOP/s, copy 2989 GB/s)"
        ),
        "{out}"
    );
    assert!(out.contains("gemm: NVIDIA H100 80GB HBM3 / NVIDIA H200 throughput 1.003x (geometric mean over 8 shared shapes); x cuBLAS (geometric mean): NVIDIA H100 80GB HBM3 0.867, NVIDIA H200 0.876"), "{out}");
    assert!(out.contains("gemv: NVIDIA H100 80GB HBM3 / NVIDIA H200 throughput 0.757x (geometric mean over 8 shared shapes); x cuBLAS (geometric mean): NVIDIA H100 80GB HBM3 1.119, NVIDIA H200 1.247"), "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("16384x16384"))
        .unwrap_or_else(|| panic!("no 16384x16384 row:\n{out}"));
    for needle in [
        "gemv_warp_row ROWS_PER_BLOCK=1 UNROLL=2 VEC=1",
        "2971",
        "99.4",
        "1.026",
        "4263",
        "0.697",
    ] {
        assert!(row.contains(needle), "{needle} missing from {row}");
    }
    // GPU names by part, in the order given: the ratio turns over.
    let out = ok(&[
        "compare",
        "--db",
        s(&db),
        "--gpus",
        "h200,H100",
        "--op",
        "gemv",
    ]);
    assert!(
        out.contains("gemv: NVIDIA H200 / NVIDIA H100 80GB HBM3 throughput 1.321x"),
        "{out}"
    );
    assert!(!out.contains("gemm"), "{out}");
    // Rows follow a suite when given.
    let out = ok(&[
        "compare",
        "--db",
        s(&db),
        "--suite",
        "configs/suites/gemm.toml",
        "--gpus",
        "h100",
    ]);
    let shapes: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .map(|l| l.split_whitespace().next().unwrap_or_default())
        .collect();
    assert_eq!(shapes[0], "1024x1024x1024", "{out}");
    assert_eq!(shapes.len(), 8, "{out}");
    assert!(out.contains("gemm: NVIDIA H100 80GB HBM3 on 8 shapes; x cuBLAS (geometric mean): NVIDIA H100 80GB HBM3 0.867"), "{out}");
}

#[test]
fn compare_formats_markdown_csv_json() {
    let db = data(BOTH);
    let md = ok(&["compare", "--db", s(&db), "--format", "markdown"]);
    assert!(
        md.starts_with("### gemm: NVIDIA H100 80GB HBM3 vs NVIDIA H200\n"),
        "{md}"
    );
    assert!(
        md.contains("\n### gemv: NVIDIA H100 80GB HBM3 vs NVIDIA H200\n"),
        "{md}"
    );
    assert!(md.contains("| H100 80GB HBM3 / H200 |"), "{md}");
    assert_eq!(
        md.matches("|---|---|---:|---:|---:|---|---:|---:|---:|---:|")
            .count(),
        2,
        "{md}"
    );
    let csv = ok(&["compare", "--db", s(&db), "--format", "csv"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "op,shape,m,n,k,gpu,family,params,median_ms,throughput,unit,pct_of_peak,vs_cublas"
    );
    assert_eq!(lines.len(), 1 + 32, "{csv}");
    assert!(lines.iter().any(|l| l.starts_with("gemv,16384x16384,16384,1,16384,NVIDIA H200,gemv_warp_row,ROWS_PER_BLOCK=1 UNROLL=4 VEC=4,")), "{csv}");
    let json = ok(&["compare", "--db", s(&db), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let all = v.as_array().unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[1]["op"], "gemv");
    assert_eq!(all[1]["summary"]["shared_shapes"], 8);
    let ratio = all[1]["summary"]["ratios"][0]["geomean"].as_f64().unwrap();
    assert!((ratio - 0.757).abs() < 5e-4, "{ratio}");
    assert_eq!(all[0]["rows"].as_array().unwrap().len(), 8);
}

#[test]
fn compare_errors_name_what_is_accepted() {
    let db = data(BOTH);
    fails_with(
        &["compare", "--db", s(&db), "--gpus", "a100"],
        &["'a100'", "NVIDIA H100 80GB HBM3", "NVIDIA H200"],
    );
    fails_with(
        &["compare", "--db", s(&db), "--gpus", "nvidia"],
        &["matches several GPUs", "NVIDIA H200"],
    );
    fails_with(
        &["compare", "--db", s(&db), "--format", "xml"],
        &["'xml'", "table, markdown, csv, json"],
    );
    fails_with(
        &["compare", "--db", "tests/data/none.toml"],
        &["tests/data/none.toml", "does not exist"],
    );
    fails_with(
        &[
            "compare",
            "--db",
            s(&db),
            "--op",
            "gemm",
            "--suite",
            "configs/suites/gemv.toml",
        ],
        &["--op gemm contradicts suite"],
    );
    // A database with gemv entries only has nothing to compare for gemm.
    let dir = tempfile::tempdir().unwrap();
    let gemv_only = dir.path().join("gemv.toml");
    let mut g = Database::load(&data("h200-db.toml")).unwrap();
    g.entries.retain(|e| e.op == Op::Gemv);
    g.save(&gemv_only).unwrap();
    fails_with(
        &["compare", "--db", s(&gemv_only), "--op", "gemm"],
        &["has no gemm entries for NVIDIA H200", "tune them first"],
    );
    assert!(ok(&["compare", "--db", s(&gemv_only)]).starts_with("gemv on 1 GPU, 8 shapes"));
}

#[test]
fn report_writes_markdown_and_charts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let stdout = ok(&[
        "report",
        "--db",
        s(&data(BOTH)),
        "--gpus",
        "h200,h100",
        "-o",
        s(&out),
    ]);
    assert!(
        stdout.contains("gemm: NVIDIA H200 / NVIDIA H100 80GB HBM3 throughput 0.997x"),
        "{stdout}"
    );
    let md = fs::read_to_string(out.join("report.md")).unwrap();
    for chart in [
        "gemm-throughput.svg",
        "gemm-vs-cublas.svg",
        "gemv-throughput.svg",
        "gemv-vs-cublas.svg",
    ] {
        assert!(md.contains(&format!("]({chart})")), "{chart} not linked");
        let svg = fs::read_to_string(out.join(chart)).unwrap();
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(
            svg.contains("\nNVIDIA H100 80GB HBM3\n"),
            "{chart} lacks the legend"
        );
    }
    assert!(md.contains("| shape | H200 config |"), "{md}");
}

#[test]
fn export_csv_has_a_header_and_one_line_per_entry() {
    let db = data(BOTH);
    let csv = ok(&["export", "--format", "csv", "--db", s(&db)]);
    let lines: Vec<&str> = csv.lines().collect();
    assert!(lines[0].starts_with("gpu,op,shape,m,n,k,family,kernel,params,median_ms,"));
    assert_eq!(lines.len(), 33);
    let columns = lines[0].split(',').count();
    assert!(
        lines.iter().all(|l| l.split(',').count() == columns),
        "{csv}"
    );
    assert!(lines[1].starts_with("NVIDIA H100 80GB HBM3,gemm,128x4096x4096,128,4096,4096,gemm_tile2d,gemm_tile2d_BK32_BM64_BN64_PREFETCH1_TM8_TN4,BK=32 BM=64 BN=64 PREFETCH=1 TM=8 TN=4,0.16529600322246552,"), "{}", lines[1]);
    // Filtered by a part of the GPU name and the op.
    let csv = ok(&[
        "export",
        "--format",
        "csv",
        "--db",
        s(&db),
        "--gpu",
        "h200",
        "--op",
        "gemm",
    ]);
    assert_eq!(csv.lines().count(), 1 + 8);
    assert!(csv
        .lines()
        .skip(1)
        .all(|l| l.starts_with("NVIDIA H200,gemm,")));
    fails_with(
        &["export", "--format", "csv", "--db", s(&db), "--gpu", "a100"],
        &["'a100'", "NVIDIA H200"],
    );
}

#[test]
fn export_json_round_trips() {
    let db_path = data(BOTH);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("all.json");
    ok(&[
        "export",
        "--format",
        "json",
        "--db",
        s(&db_path),
        "-o",
        s(&out),
    ]);
    let back: JsonExport = serde_json::from_str(&fs::read_to_string(&out).unwrap()).unwrap();
    let db = Database::load(&db_path).unwrap();
    assert_eq!(back.schema_version, autotune::db::SCHEMA_VERSION);
    assert_eq!(back.entries, db.entries);
    assert_eq!(back.gpus, db.gpus);
}

#[test]
fn export_t4_validates_against_the_t4_schema() {
    let schema: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(data("t4/results-schema.json")).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the T4 schema compiles");
    let text = ok(&["export", "--format", "t4", "--db", s(&data(BOTH))]);
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "T4 export is invalid: {errors:?}");
    assert_eq!(doc["schema_version"], "1.0.0");
    assert_eq!(doc["results"].as_array().unwrap().len(), 32);
    // The validator does reject what the schema forbids.
    let mut bad = doc.clone();
    bad["results"][0]["invalidity"] = "fine".into();
    assert!(!validator.is_valid(&bad));
    let mut bad = doc.clone();
    bad["results"][3]["measurements"][0]["value"] = "fast".into();
    assert!(!validator.is_valid(&bad));
    let mut bad = doc;
    bad["results"][1].as_object_mut().unwrap().remove("times");
    assert!(!validator.is_valid(&bad));
}

#[test]
fn cross_show_renders_the_matrix_from_the_portability_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("portability.json");
    let md = dir.path().join("portability.md");
    fails_with(
        &["cross", "--show", "--portability", s(&file)],
        &["holds no cross measurements yet"],
    );
    let m = |on: &str, bm: i64, winner_on: &str, ms: f64| CrossMeasurement {
        on_gpu: on.to_string(),
        on_arch: "sm_90".to_string(),
        op: Op::Gemm,
        shape: "2048x2048x2048".to_string(),
        family: "gemm_tile2d".to_string(),
        params: [("BM".to_string(), bm)].into_iter().collect(),
        winner_on: vec![winner_on.to_string()],
        median_ms: Some(ms),
        failure: None,
        stale: false,
        cublas_median_ms: 0.4,
        date: "2026-11-22T00:00:00Z".to_string(),
        tool_version: "0.1.0".to_string(),
    };
    let mut p = Portability::default();
    p.absorb(vec![
        m("NVIDIA H100 80GB HBM3", 128, "NVIDIA H100 80GB HBM3", 0.40),
        m("NVIDIA H100 80GB HBM3", 256, "NVIDIA H200", 0.50),
    ]);
    p.save(&file).unwrap();
    let out = ok(&[
        "cross",
        "--show",
        "--portability",
        s(&file),
        "--out",
        s(&md),
    ]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("gemm winner of \\ run on") && l.ends_with("H100 80GB HBM3")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("H200 ") && l.ends_with("80.0 % (1 shape)")),
        "{out}"
    );
    let text = fs::read_to_string(&md).unwrap();
    assert!(text.contains("| H200 | 80.0 % (1 shape) |"), "{text}");
}

#[test]
fn cross_without_a_suite_or_a_gpu_fails_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("portability.json");
    let r = run(&["cross", "--portability", s(&file)]);
    assert_eq!(
        r.code,
        Some(2),
        "missing --suite is a usage error: {}",
        r.stderr
    );
    // Without a GPU, a cross run fails before it writes the portability file.
    if !common::have_no_gpu() {
        return;
    }
    let r = run(&[
        "cross",
        "--suite",
        "configs/suites/gemm.toml",
        "--db",
        s(&data(BOTH)),
        "--portability",
        s(&file),
    ]);
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(r.stderr.starts_with("Error: "), "{}", r.stderr);
    assert!(!file.exists());
}
