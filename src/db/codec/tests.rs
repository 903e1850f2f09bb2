//! Unit tests of [`super`] (`codec.rs`).

use super::super::fixtures::*;
use super::*;
use crate::db::{Measurement, Producer};
use std::fs;

#[test]
fn extreme_floats_round_trip_exactly() {
    let mut db = sample_db();
    let values = [
        1.2e-7,
        1e-300,
        5e-324,
        1e300,
        f64::MAX,
        0.1 + 0.2,
        -0.0,
        1e16,
        3.0,
    ];
    for (i, v) in values.iter().enumerate() {
        let mut e = entry("G", Op::Gemm, &format!("{}x1x1", i + 1), 1.0);
        e.max_rel_error = *v;
        db.upsert(e);
    }
    let text = db.to_toml_string().unwrap();
    assert!(text.contains("max_rel_error = 1.2e-7\n"), "{text}");
    let loaded = Database::from_toml_str(&text, "mem").unwrap();
    for (i, v) in values.iter().enumerate() {
        let got = loaded
            .get("G", Op::Gemm, Shape::mnk(i as u64 + 1, 1, 1))
            .unwrap()
            .max_rel_error;
        assert_eq!(got.to_bits(), v.to_bits(), "{v:?} came back as {got:?}");
    }
}

#[test]
fn text_order_is_stable_whatever_the_insertion_order() {
    let a = sample_db();
    let mut b = Database::new();
    for e in a.entries.iter().rev() {
        b.upsert(e.clone());
    }
    for g in a.gpus.iter().rev() {
        b.upsert_gpu(g.clone());
    }
    // Also a database whose vectors were filled directly, unsorted.
    let mut c = Database::new();
    c.entries = a.entries.iter().rev().cloned().collect();
    c.gpus = a.gpus.iter().rev().cloned().collect();
    let ta = a.to_toml_string().unwrap();
    assert_eq!(ta, b.to_toml_string().unwrap());
    assert_eq!(ta, c.to_toml_string().unwrap());
    // Sorted: gpus by name, entries by (gpu, op, m, n, k).
    let a100_gpu = ta.find("name = \"NVIDIA A100").unwrap();
    let h100_gpu = ta.find("name = \"NVIDIA H100").unwrap();
    assert!(a100_gpu < h100_gpu);
    let gemm = ta.find("shape = \"2048x2048x2048\"").unwrap();
    let gemv = ta.find("shape = \"4096x4096\"").unwrap();
    let a100 = ta.find("shape = \"512x256x128\"").unwrap();
    assert!(a100 < gemm && gemm < gemv, "{ta}");
    // Keys in declared order within a table.
    let median = ta.find("median_ms = ").unwrap();
    let checksum = ta.find("checksum = ").unwrap();
    assert!(median < checksum);
}

#[test]
fn field_order_lists_cover_every_field() {
    let mut e = entry("G", Op::Gemm, "1x2x3", 1.0);
    e.partial = Some(false);
    e.deterministic = Some(true);
    e.revision = Some(1);
    e.math = crate::family::math::Math::Tf32x3;
    e.mean_rel_error = Some(1e-7);
    e.cublas_max_rel_error = Some(2e-6);
    e.cublas_mean_rel_error = Some(2e-7);
    e.produced_by = Some(producer("h", 0, Some("0/1")));
    e.also_measured = vec![Measurement::of(&e, "other.toml")];
    e.form.beta = true;
    let t = toml::Table::try_from(&e).unwrap();
    for k in t.keys() {
        assert!(ENTRY_FIELDS.contains(&k.as_str()), "ENTRY_FIELDS lacks {k}");
    }
    assert_eq!(t.len(), ENTRY_FIELDS.len());
    let mut g = gpu("G");
    g.copy_bandwidth_gbs = Some(1.0);
    let t = toml::Table::try_from(&g).unwrap();
    for k in t.keys() {
        assert!(GPU_FIELDS.contains(&k.as_str()), "GPU_FIELDS lacks {k}");
    }
    assert_eq!(t.len(), GPU_FIELDS.len());
}

#[test]
fn old_files_without_also_measured_still_load() {
    let text = sample_db().to_toml_string().unwrap();
    assert!(!text.contains("also_measured"), "{text}");
    let db = Database::from_toml_str(&text, "old.toml").unwrap();
    assert!(db.entries.iter().all(|e| e.also_measured.is_empty()));
}

#[test]
fn producer_round_trips_and_old_entries_without_it_still_load() {
    // An entry as files written before `produced_by` existed have it.
    let old = r#"schema_version = 1

[[entry]]
gpu = "G"
op = "gemm"
shape = "8x8x8"
m = 8
n = 8
k = 8
family = "f"
kernel = "k"
params = { BM = 8 }
median_ms = 0.5
min_ms = 0.5
spread_pct = 1.0
samples = 10
gflops = 1.0
gbs = 1.0
cublas_median_ms = 0.5
vs_cublas = 1.0
pct_of_peak = 1.0
max_rel_error = 0.0
tolerance = 0.0001
tried = 1
failed = 0
seed = 1
date = "2026-01-01T00:00:00Z"
tool_version = "0.1.0"
checksum = "ab"
also_measured = [{ source = "a.toml", median_ms = 0.6, cublas_median_ms = 0.5, family = "f", params = { BM = 16 }, date = "2026-01-01T00:00:00Z" }]
"#;
    let db = Database::from_toml_str(old, "old.toml").unwrap();
    assert_eq!(db.entries[0].produced_by, None);
    assert_eq!(db.entries[0].also_measured[0].produced_by, None);
    // Nothing is written for an entry without a producer.
    assert!(!db.to_toml_string().unwrap().contains("produced_by"));

    let mut db = sample_db();
    db.entries[0].produced_by = Some(producer("node07", 1, Some("2/8")));
    db.entries[1].produced_by = Some(Producer {
        pci_bus_id: None,
        uuid: None,
        ..producer("node01", 0, None)
    });
    let text = db.to_toml_string().unwrap();
    assert!(
            text.contains("produced_by = { device = 1, host = \"node07\", pci_bus_id = \"0000:19:00.0\", shard = \"2/8\", uuid = \"GPU-00000001-0000-0000-0000-000000000000\" }\n"),
            "{text}"
        );
    assert!(
        text.contains("produced_by = { device = 0, host = \"node01\" }\n"),
        "{text}"
    );
    assert_eq!(Database::from_toml_str(&text, "new.toml").unwrap(), db);
    assert_eq!(
        producer("node07", 1, Some("2/8")).to_string(),
        "node07 device 1, shard 2/8"
    );
    assert_eq!(producer("n", 0, None).to_string(), "n device 0");
}

#[test]
fn deterministic_round_trips_and_older_entries_load_as_unknown() {
    let mut db = sample_db();
    db.entries[0].deterministic = Some(true);
    db.entries[1].deterministic = Some(false);
    let text = db.to_toml_string().unwrap();
    assert!(text.contains("schema_version = 6\n"), "{text}");
    // Right after the checksum, a plain key = value line.
    assert!(
        text.contains(&format!(
            "checksum = \"{}\"\ndeterministic = true\n",
            "ab".repeat(32)
        )),
        "{text}"
    );
    assert!(text.contains("\ndeterministic = false\n"), "{text}");
    let back = Database::from_toml_str(&text, "new.toml").unwrap();
    assert_eq!(back, db);
    assert_eq!(back.to_toml_string().unwrap(), text);

    // A version 2 file (written before the flag existed): unknown, derived from the family.
    let mut old = sample_db();
    old.schema_version = 2;
    let v2 = old
        .to_toml_string()
        .unwrap()
        .replacen("schema_version = 6", "schema_version = 2", 1);
    assert!(!v2.contains("deterministic"), "{v2}");
    let db = Database::from_toml_str(&v2, "v2.toml").unwrap();
    assert_eq!(db.schema_version, 2);
    let e = &db.entries[0];
    assert_eq!(e.deterministic, None);
    assert_eq!(e.is_deterministic(|_| None), None);
    assert_eq!(
        e.is_deterministic(|f| (f == "gemm_tile2d").then_some(true)),
        Some(true)
    );
    // A recorded flag wins over the family's.
    let mut e = e.clone();
    e.deterministic = Some(false);
    assert_eq!(e.is_deterministic(|_| Some(true)), Some(false));
    // Saved again, it is written at the current version.
    assert!(db
        .to_toml_string()
        .unwrap()
        .contains("schema_version = 6\n"));
}

#[test]
fn wrong_type_reports_its_line() {
    let mut text = sample_db().to_toml_string().unwrap();
    text = text.replacen("sms = 132", "sms = \"many\"", 1);
    let line = text
        .lines()
        .position(|l| l.starts_with("sms = \"many\""))
        .unwrap()
        + 1;
    let err = Database::from_toml_str(&text, "x.toml").unwrap_err();
    match err {
        DbError::Parse {
            line: l, column, ..
        } => {
            assert_eq!(l, line);
            assert_eq!(column, 7);
        }
        other => panic!("expected Parse, got {other:?}"),
    }
    // A typo in the top-level table names is caught too.
    let err = Database::from_toml_str("schema_version = 1\n\n[[entries]]\n", "x").unwrap_err();
    assert!(matches!(err, DbError::Parse { line: 3, .. }), "{err:?}");
}

#[test]
fn newer_schema_is_reported_before_unknown_fields() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.toml");
    let text = "schema_version = 99\nfuture = { x = 1 }\n\n[[entry]]\nwhatever = true\n";
    fs::write(&path, text).unwrap();
    let err = Database::load(&path).unwrap_err();
    assert!(
        matches!(
            err,
            DbError::NewerSchema {
                found: 99,
                supported: SCHEMA_VERSION,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("newer autotune"), "{msg}");
    assert!(msg.contains("upgrade autotune"), "{msg}");
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn missing_or_invalid_schema_is_an_error() {
    let err = Database::from_toml_str("[[gpu]]\nname = \"x\"\n", "db.toml").unwrap_err();
    assert!(matches!(err, DbError::MissingSchema { .. }), "{err:?}");
    let err = Database::from_toml_str("", "db.toml").unwrap_err();
    assert!(matches!(err, DbError::MissingSchema { .. }), "{err:?}");
    let err = Database::from_toml_str("schema_version = 0\n", "db.toml").unwrap_err();
    assert!(matches!(err, DbError::Invalid { .. }), "{err:?}");
    let err = Database::from_toml_str("schema_version = \"1\"\n", "db.toml").unwrap_err();
    assert!(matches!(err, DbError::Parse { line: 1, .. }), "{err:?}");
    // A version 1 file (before coverage) still loads, and is written at the new version.
    let db = Database::from_toml_str("schema_version = 1\n", "db.toml").unwrap();
    assert_eq!((db.schema_version, db.coverage.len()), (1, 0));
    assert_eq!(
        Database {
            schema_version: SCHEMA_VERSION,
            ..db
        },
        Database::new()
    );
}

fn coverage_db() -> Database {
    use crate::db::{Coverage, CoverageConfig, CoveragePoint};
    let mut db = sample_db();
    db.upsert_coverage(Coverage {
        gpu: "NVIDIA H100 80GB HBM3".into(),
        op: Op::Gemm,
        form: crate::problem::Form::PLAIN,
        date: "2026-11-23T00:00:00Z".into(),
        tool_version: "0.1.0".into(),
        seed: 7,
        produced_by: None,
        configs: vec![
            CoverageConfig {
                family: "gemm_tile2d".into(),
                params: [("BM".to_string(), 64), ("BN".to_string(), 32)].into(),
                checksum: "ab".repeat(32),
            },
            CoverageConfig {
                family: "gemm_tiled".into(),
                params: [("TILE".to_string(), 16)].into(),
                checksum: "cd".repeat(32),
            },
        ],
        points: vec![
            CoveragePoint {
                shape: "1x64x4096".into(),
                cublas_ms: 0.0123,
                ms: vec![0.02, 0.0],
            },
            CoveragePoint {
                shape: "64x64x64".into(),
                cublas_ms: 1.5e-3,
                ms: vec![2.25e-3, 3.0],
            },
        ],
    });
    db
}

#[test]
fn coverage_round_trips_byte_for_byte_with_one_point_per_line() {
    let db = coverage_db();
    let text = db.to_toml_string().unwrap();
    assert!(text.contains("schema_version = 6\n"), "{text}");
    assert!(
        text.contains("\n[[coverage]]\ngpu = \"NVIDIA H100 80GB HBM3\"\nop = \"gemm\"\n"),
        "{text}"
    );
    assert!(
        text.contains("    { shape = \"1x64x4096\", cublas_ms = 0.0123, ms = [0.02, 0.0] },\n"),
        "{text}"
    );
    assert!(
        text.contains("{ family = \"gemm_tile2d\", params = { BM = 64, BN = 32 }, checksum = "),
        "{text}"
    );
    let back = Database::from_toml_str(&text, "mem").unwrap();
    assert_eq!(back, db);
    assert_eq!(back.to_toml_string().unwrap(), text);
}

#[test]
fn coverage_of_a_form_round_trips_and_is_kept_apart_from_the_plain_one() {
    use crate::problem::{Form, Layout};
    let nt = Form {
        layout: Layout::Nt,
        ..Form::PLAIN
    };
    let g = "NVIDIA H100 80GB HBM3";
    let mut db = coverage_db();
    let plain = db.coverage[0].clone();
    let mut other = Coverage {
        form: nt,
        seed: 9,
        ..plain.clone()
    };
    assert!(db.upsert_coverage(other.clone()).is_none());
    assert_eq!(db.coverage.len(), 2);
    // Found by form; a form without a record has none.
    assert_eq!(db.coverage(g, Op::Gemm, &Form::PLAIN).unwrap().seed, 7);
    assert_eq!(db.coverage(g, Op::Gemm, &nt).unwrap().seed, 9);
    let nt_b2 = Form { batch: 2, ..nt };
    assert!(db.coverage(g, Op::Gemm, &nt_b2).is_none());
    let s = |t: &str| Shape::parse(Op::Gemm, t).unwrap();
    assert_eq!(
        db.coverage_for(g, Op::Gemm, s("5x6x7:nt")).unwrap().form,
        nt
    );
    // A point of the NT grid is measured for the NT problem only.
    assert!(db.measured(g, Op::Gemm, s("64x64x64:nt")));
    assert!(!db.measured(g, Op::Gemm, s("64x64x64:tn")));
    // Upserting replaces only the record of the same key.
    other.seed = 11;
    assert_eq!(db.upsert_coverage(other).unwrap().seed, 9);
    assert_eq!(db.coverage(g, Op::Gemm, &Form::PLAIN).unwrap().seed, 7);
    // The form is written after op, the plain record (no `form`) first.
    let text = db.to_toml_string().unwrap();
    let plain_at = text
        .find("[[coverage]]\ngpu = \"NVIDIA H100 80GB HBM3\"\nop = \"gemm\"\ndate")
        .unwrap();
    let nt_at = text
            .find("[[coverage]]\ngpu = \"NVIDIA H100 80GB HBM3\"\nop = \"gemm\"\nform = { batch = 1, beta = false, layout = \"nt\", padded = false, scaled = false }\n")
            .unwrap();
    assert!(plain_at < nt_at, "{text}");
    let back = Database::from_toml_str(&text, "mem").unwrap();
    assert_eq!(back, db);
    assert_eq!(back.to_toml_string().unwrap(), text);
    // Two records of one key are refused; a point with form tags too; a gemv grid of a
    // layout gemv lacks too.
    let twice = format!("{text}{}", &text[text.rfind("\n[[coverage]]").unwrap()..]);
    let err = Database::from_toml_str(&twice, "db.toml")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("both for") && err.contains("gemm:nt coverage"),
        "{err}"
    );
    let tagged = text.replacen("shape = \"64x64x64\"", "shape = \"64x64x64:nt\"", 1);
    let err = Database::from_toml_str(&tagged, "db.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("dimensions only"), "{err}");
}

#[test]
fn the_shipped_database_saves_byte_for_byte() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/results/tuning.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let db = Database::from_toml_str(&text, path).unwrap();
    assert!(db.coverage.iter().any(|c| c.form.is_plain()));
    // The H100's NT grid (the layer call) ships beside the plain ones, and re-saves as read.
    assert!(db.coverage.iter().any(|c| !c.form.is_plain()));
    // Saved by an older build, it is written at this build's schema version: nothing else
    // changes.
    let text = text.replacen(
        &format!("schema_version = {}\n", db.schema_version),
        &format!("schema_version = {SCHEMA_VERSION}\n"),
        1,
    );
    assert_eq!(db.to_toml_string().unwrap(), text);
}

#[test]
fn measured_means_an_entry_or_a_coverage_point_of_that_gpu() {
    let db = coverage_db();
    let g = "NVIDIA H100 80GB HBM3";
    let s = |t: &str| Shape::parse(Op::Gemm, t).unwrap();
    assert!(db.measured(g, Op::Gemm, s("64x64x64")));
    assert!(db.measured(g, Op::Gemm, s("1x64x4096")));
    assert!(!db.measured(g, Op::Gemm, s("65x64x64")));
    assert!(!db.measured("NVIDIA H200", Op::Gemm, s("64x64x64")));
    let e = &db.entries[0];
    assert!(db.measured(&e.gpu, e.op, e.shape()));
}

#[test]
fn broken_coverage_is_refused_naming_the_record() {
    let text = coverage_db().to_toml_string().unwrap();
    for (from, to, want) in [
        ("ms = [0.02, 0.0]", "ms = [0.02]", "1 times for 2 configs"),
        (
            "ms = [0.02, 0.0]",
            "ms = [0.02, -1.0]",
            "finite and positive",
        ),
        (
            "ms = [0.02, 0.0]",
            "ms = [0.02, nan]",
            "finite and positive",
        ),
        (
            "cublas_ms = 0.0123",
            "cublas_ms = 0.0",
            "finite and positive",
        ),
        (
            "shape = \"1x64x4096\"",
            "shape = \"64x64x64\"",
            "listed twice",
        ),
        (
            "shape = \"1x64x4096\"",
            "shape = \"0x64\"",
            "not a gemm shape",
        ),
        (
            "shape = \"1x64x4096\"",
            "shape = \"1x64x4096:nt\"",
            "the dimensions only",
        ),
        (
            "shape = \"1x64x4096\"",
            "shape = \"1x64x4096:b8\"",
            "give the record a batched `form`",
        ),
    ] {
        let bad = text.replacen(from, to, 1);
        assert_ne!(bad, text);
        let err = Database::from_toml_str(&bad, "db.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(want) && err.contains("NVIDIA H100 80GB HBM3 gemm coverage"),
            "{to}: {err}"
        );
    }
    // A batched record's points may name their own counts, the same dimensions at each.
    let batched = text
        .replacen("[[coverage]]\n", "[[coverage]]\nform = { batch = 4 }\n", 1)
        .replacen("shape = \"1x64x4096\"", "shape = \"64x64x64:b2\"", 1);
    let db = Database::from_toml_str(&batched, "db.toml").unwrap();
    let cov = &db.coverage[0];
    assert_eq!(cov.batch_counts(), 2..=4);
    let counts: Vec<u64> = cov.point_shapes().iter().map(|s| s.form.batch).collect();
    assert!(counts.contains(&2) && counts.contains(&4), "{counts:?}");
    let twice = format!("{text}{}", &text[text.find("\n[[coverage]]").unwrap()..]);
    let err = Database::from_toml_str(&twice, "db.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("both for"), "{err}");
}

#[test]
fn inconsistent_content_is_rejected() {
    let good = sample_db().to_toml_string().unwrap();
    let bad = good.replacen("shape = \"4096x4096\"", "shape = \"4096x8192\"", 1);
    let err = Database::from_toml_str(&bad, "db.toml").unwrap_err();
    assert!(matches!(err, DbError::Invalid { .. }), "{err:?}");
    assert!(err.to_string().contains("4096x8192"));
    let dup = format!(
        "{good}\n[[entry]]\n{}",
        good.split("[[entry]]\n").nth(1).unwrap()
    );
    let err = Database::from_toml_str(&dup, "db.toml").unwrap_err();
    assert!(err.to_string().contains("keep one"), "{err}");
    let nan = good.replacen("median_ms = 0.41", "median_ms = nan", 1);
    assert_ne!(nan, good);
    let err = Database::from_toml_str(&nan, "db.toml").unwrap_err();
    assert!(err.to_string().contains("median_ms"), "{err}");
}

#[test]
fn revision_round_trips_after_the_checksum_and_older_entries_load_without() {
    let mut db = sample_db();
    db.entries[0].revision = Some(3);
    let text = db.to_toml_string().unwrap();
    assert!(
        text.contains(&format!(
            "checksum = \"{}\"\nrevision = 3\n",
            "ab".repeat(32)
        )),
        "{text}"
    );
    assert_eq!(text.matches("\nrevision = ").count(), 1, "{text}");
    let back = Database::from_toml_str(&text, "new.toml").unwrap();
    assert_eq!(back, db);
    // A version 4 file (written before revisions were recorded) loads with none.
    let v4 = sample_db().to_toml_string().unwrap().replacen(
        "schema_version = 6",
        "schema_version = 4",
        1,
    );
    assert!(!v4.contains("revision"), "{v4}");
    let old = Database::from_toml_str(&v4, "v4.toml").unwrap();
    assert_eq!(old.schema_version, 4);
    assert!(old.entries.iter().all(|e| e.revision.is_none()));
}

#[test]
fn math_and_error_statistics_round_trip_and_version_5_files_load_without() {
    use crate::family::math::Math;
    let mut db = sample_db();
    db.entries[0].math = Math::Tf32x3;
    db.entries[0].mean_rel_error = Some(1.5e-7);
    db.entries[0].cublas_max_rel_error = Some(9.5e-7);
    db.entries[0].cublas_mean_rel_error = Some(1.25e-7);
    let text = db.to_toml_string().unwrap();
    // The errors side by side after the kernel's largest; the math after the kernel's other
    // properties; a simt entry and one without the statistics unchanged.
    assert!(
        text.contains(
            "max_rel_error = 1.2e-6\nmean_rel_error = 1.5e-7\ncublas_max_rel_error = 9.5e-7\ncublas_mean_rel_error = 1.25e-7\ntolerance = "
        ),
        "{text}"
    );
    assert_eq!(text.matches("\nmath = \"tf32x3\"\n").count(), 1, "{text}");
    assert!(!text.contains("math = \"simt\""), "{text}");
    assert_eq!(text.matches("mean_rel_error").count(), 2, "{text}");
    let back = Database::from_toml_str(&text, "new.toml").unwrap();
    assert_eq!(back, db);
    assert_eq!(back.entries[1].math, Math::Simt);
    // A version 5 file (before math and the error statistics were recorded) loads: every
    // entry simt as recorded (`Entry::math_with` asks the family), no statistics.
    let v5 = sample_db().to_toml_string().unwrap().replacen(
        &format!("schema_version = {SCHEMA_VERSION}"),
        "schema_version = 5",
        1,
    );
    assert!(
        !v5.contains("math") && !v5.contains("mean_rel_error"),
        "{v5}"
    );
    let old = Database::from_toml_str(&v5, "v5.toml").unwrap();
    assert_eq!(old.schema_version, 5);
    assert!(old.entries.iter().all(|e| e.math == Math::Simt
        && e.mean_rel_error.is_none()
        && e.cublas_max_rel_error.is_none()
        && e.cublas_mean_rel_error.is_none()));
    let e = &old.entries[0];
    assert_eq!(e.math_with(|_| Some(Math::Tf32x3)), Math::Tf32x3);
    assert_eq!(e.math_with(|_| None), Math::Simt);
    // An unknown math is refused with the accepted names.
    let bad = text.replacen("math = \"tf32x3\"", "math = \"tf16\"", 1);
    let err = Database::from_toml_str(&bad, "db.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("simt") && err.contains("tf32x3"), "{err}");
}
