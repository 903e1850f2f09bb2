//! Unit tests of [`super`] (`merge.rs`).

use super::super::fixtures::*;
use super::*;
use crate::problem::Shape;

#[test]
fn merge_keeps_the_faster_and_counts() {
    let mut db = sample_db();
    let mut other = Database::new();
    let mut l40 = gpu("NVIDIA L40S");
    l40.arch = "sm_89".to_string();
    other.upsert_gpu(l40);
    // Faster than 0.41: replaces.
    let mut faster = entry("NVIDIA H100 80GB HBM3", Op::Gemm, "2048x2048x2048", 0.40);
    faster.date = "2026-04-21T12:00:00Z".to_string();
    other.upsert(faster);
    // Slower than 0.031: kept.
    other.upsert(entry("NVIDIA H100 80GB HBM3", Op::Gemv, "4096x4096", 0.05));
    // Equal time, another run: kept, both recorded.
    let mut tie = entry("NVIDIA A100-SXM4-40GB", Op::Gemm, "512x256x128", 0.02);
    tie.date = "2026-04-22T12:00:00Z".to_string();
    other.upsert(tie);
    // New.
    other.upsert(entry("NVIDIA L40S", Op::Gemm, "1024x1024x1024", 0.2));
    let report = db
        .merge("a.toml", other, "b.toml", MergeOptions::default())
        .unwrap();
    assert_eq!(
        (report.added, report.replaced, report.kept, report.identical),
        (1, 1, 2, 0)
    );
    assert_eq!(report.conflicts.len(), 3);
    let c = report
        .conflicts
        .iter()
        .find(|c| c.shape == "2048x2048x2048")
        .unwrap();
    assert!(c.replaced);
    assert_eq!((c.kept.source.as_str(), c.kept.median_ms), ("b.toml", 0.40));
    assert_eq!(
        (c.dropped.source.as_str(), c.dropped.median_ms),
        ("a.toml", 0.41)
    );
    let line = c.to_string();
    assert_eq!(line, "NVIDIA H100 80GB HBM3 gemm 2048x2048x2048: b.toml's gemm_tile2d BK=8 BM=128 BN=64 at 0.4000 ms replaces a.toml's gemm_tile2d BK=8 BM=128 BN=64 at 0.4100 ms (2.5% slower); both times recorded");
    assert_eq!(report.conflicts.iter().filter(|c| c.replaced).count(), 1);
    assert_eq!(db.entries.len(), 4);
    assert_eq!(db.gpus.len(), 3);
    assert_eq!(db.gpu("NVIDIA L40S").unwrap().arch, "sm_89");
    let h = "NVIDIA H100 80GB HBM3";
    let gemm = db.get(h, Op::Gemm, Shape::new(Op::Gemm, 2048, 2048, 2048).unwrap());
    let gemm = gemm.unwrap();
    assert_eq!(gemm.median_ms, 0.40);
    assert_eq!(gemm.also_measured.len(), 1);
    assert_eq!(gemm.also_measured[0].median_ms, 0.41);
    assert_eq!(gemm.also_measured[0].source, "a.toml");
    let gemv = db
        .get(h, Op::Gemv, Shape::new(Op::Gemv, 4096, 1, 4096).unwrap())
        .unwrap();
    assert_eq!(gemv.median_ms, 0.031);
    assert_eq!(gemv.partial, Some(true));
    assert_eq!(gemv.also_measured[0].median_ms, 0.05);
    assert_eq!(gemv.also_measured[0].source, "b.toml");
    // Both times survive a save and a load, as a readable inline array.
    let text = db.to_toml_string().unwrap();
    assert!(text.contains("also_measured = [{ "), "{text}");
    assert!(text.contains("source = \"a.toml\""), "{text}");
    assert_eq!(Database::from_toml_str(&text, "m").unwrap(), db);
}

#[test]
fn merging_a_copy_changes_nothing_and_is_idempotent() {
    let db = sample_db();
    let (once, r) = Database::merge_all(
        vec![("a".into(), db.clone()), ("a-copy".into(), db.clone())],
        MergeOptions::default(),
    )
    .unwrap();
    assert_eq!(r.identical, db.entries.len());
    assert!(r.conflicts.is_empty());
    assert_eq!(once, db);
    // A merged database merged again with one of its inputs gains nothing twice.
    let mut b = sample_db();
    b.entries[0].median_ms *= 0.5;
    b.entries[0].date = "2026-05-01T00:00:00Z".to_string();
    let (ab, _) = Database::merge_all(
        vec![("a".into(), db.clone()), ("b".into(), b.clone())],
        MergeOptions::default(),
    )
    .unwrap();
    let (again, r) = Database::merge_all(
        vec![("ab".into(), ab.clone()), ("a".into(), db)],
        MergeOptions::default(),
    )
    .unwrap();
    assert_eq!(again, ab);
    assert_eq!(r.kept, 1);
    assert_eq!(ab.entries[0].also_measured.len(), 1);
}

#[test]
fn merging_two_gpu_models_keeps_both_entries() {
    // The same shape tuned on an H100 and an H200: two keys, nothing in also_measured.
    let shape = "2048x2048x2048";
    let mut a = Database::new();
    a.upsert_gpu(gpu("NVIDIA H100 80GB HBM3"));
    let mut e = entry("NVIDIA H100 80GB HBM3", Op::Gemm, shape, 0.41);
    e.produced_by = Some(producer("node01", 0, Some("0/2")));
    a.upsert(e);
    let mut b = Database::new();
    b.upsert_gpu(gpu("NVIDIA H200"));
    let mut e = entry("NVIDIA H200", Op::Gemm, shape, 0.40);
    e.produced_by = Some(producer("node02", 0, Some("1/2")));
    b.upsert(e);
    let (db, r) = Database::merge_all(
        vec![("a".into(), a.clone()), ("b".into(), b.clone())],
        MergeOptions::default(),
    )
    .unwrap();
    assert_eq!((r.added, r.replaced, r.kept), (2, 0, 0));
    assert!(r.conflicts.is_empty());
    assert_eq!(db.entries.len(), 2);
    assert_eq!(db.gpus.len(), 2);
    let s = Shape::parse(Op::Gemm, shape).unwrap();
    for (name, src) in [("NVIDIA H100 80GB HBM3", &a), ("NVIDIA H200", &b)] {
        let got = db.get(name, Op::Gemm, s).unwrap();
        assert_eq!(got, &src.entries[0]);
        assert!(got.also_measured.is_empty());
    }
}

#[test]
fn same_model_from_two_devices_merges_under_one_key_with_producers() {
    let h = "NVIDIA H100 80GB HBM3";
    let shape = "2048x2048x2048";
    let mut a = Database::new();
    a.upsert_gpu(gpu(h));
    let mut slow = entry(h, Op::Gemm, shape, 0.41);
    slow.produced_by = Some(producer("node01", 0, Some("0/2")));
    a.upsert(slow);
    let mut b = Database::new();
    b.upsert_gpu(gpu(h));
    let mut fast = entry(h, Op::Gemm, shape, 0.39);
    fast.date = "2026-04-21T12:00:00Z".to_string();
    fast.produced_by = Some(producer("node02", 3, Some("1/2")));
    b.upsert(fast.clone());
    let (db, r) = Database::merge_all(
        vec![
            ("shard-0.toml".into(), a.clone()),
            ("shard-1.toml".into(), b.clone()),
        ],
        MergeOptions::default(),
    )
    .unwrap();
    assert_eq!((r.added, r.replaced, r.kept), (1, 1, 0));
    assert_eq!(db.entries.len(), 1);
    let got = &db.entries[0];
    assert_eq!(got.produced_by, fast.produced_by);
    assert_eq!(got.median_ms, 0.39);
    assert_eq!(got.also_measured.len(), 1);
    let m = &got.also_measured[0];
    assert_eq!((m.source.as_str(), m.median_ms), ("shard-0.toml", 0.41));
    assert_eq!(m.produced_by, a.entries[0].produced_by);
    let line = r.conflicts[0].to_string();
    assert!(
        line.contains("at 0.3900 ms (node02 device 3, shard 1/2) replaces")
            && line.contains("at 0.4100 ms (node01 device 0, shard 0/2)"),
        "{line}"
    );
    // Either merge order gives the same database, and it survives a save and a load.
    let (other, _) = Database::merge_all(
        vec![("shard-1.toml".into(), b), ("shard-0.toml".into(), a)],
        MergeOptions::default(),
    )
    .unwrap();
    assert_eq!(other, db);
    let text = db.to_toml_string().unwrap();
    assert_eq!(Database::from_toml_str(&text, "m").unwrap(), db);
}

#[test]
fn merge_refuses_mixed_checksums_and_schemas_and_changes_nothing() {
    let mut a = sample_db();
    let before = a.clone();
    let mut b = Database::new();
    let mut e = entry("NVIDIA L40S", Op::Gemm, "64x64x64", 0.01);
    e.checksum = "cd".repeat(32);
    b.upsert(e);
    let err = a
        .merge("a.toml", b.clone(), "b.toml", MergeOptions::default())
        .unwrap_err();
    assert_eq!(a, before);
    let MergeError::ChecksumMismatch { conflicts } = &err else {
        panic!("expected ChecksumMismatch, got {err:?}");
    };
    assert_eq!(conflicts.len(), 1);
    assert_eq!(conflicts[0].family, "gemm_tile2d");
    let msg = err.to_string();
    for needle in [
        "a.toml",
        "b.toml",
        "gemm_tile2d",
        &"ab".repeat(32),
        &"cd".repeat(32),
        "NVIDIA L40S gemm 64x64x64",
    ] {
        assert!(msg.contains(needle), "{needle:?} missing from: {msg}");
    }
    assert!(!msg.contains("--"), "the library names no option: {msg}");
    assert!(!msg.contains("revision"), "no revision recorded: {msg}");
    // Entries that record their family revision name it, so the reader sees which is newer.
    let (mut a2, mut b2) = (a.clone(), b.clone());
    a2.entries.iter_mut().for_each(|e| e.revision = Some(1));
    b2.entries.iter_mut().for_each(|e| e.revision = Some(2));
    let msg = a2
        .merge("a.toml", b2, "b.toml", MergeOptions::default())
        .unwrap_err()
        .to_string();
    for needle in [
        format!("a.toml has checksum {} (revision 1)", "ab".repeat(32)),
        format!("b.toml has checksum {} (revision 2)", "cd".repeat(32)),
    ] {
        assert!(msg.contains(&needle), "{needle:?} missing from: {msg}");
    }
    // Allowed on request: merged, and the report says which families were mixed.
    let r = a
        .merge(
            "a.toml",
            b,
            "b.toml",
            MergeOptions {
                allow_mixed_checksums: true,
            },
        )
        .unwrap();
    assert_eq!(r.added, 1);
    assert_eq!(r.mixed_checksums.len(), 1);
    // Mixed checksums inside one input alone are not the merge's doing.
    let mut c = Database::new();
    let mut e1 = entry("G", Op::Gemm, "8x8x8", 0.1);
    e1.checksum = "11".repeat(32);
    let mut e2 = entry("G", Op::Gemm, "16x16x16", 0.1);
    e2.checksum = "22".repeat(32);
    c.upsert(e1);
    c.upsert(e2);
    assert!(Database::merge_all(
        vec![("c".into(), c), ("empty".into(), Database::new())],
        MergeOptions::default()
    )
    .is_ok());

    // A version 1 file loads into the same records: it merges with a version 2 one.
    let mut v1 = sample_db();
    v1.schema_version = 1;
    assert!(Database::merge_all(
        vec![("new.toml".into(), sample_db()), ("v1.toml".into(), v1)],
        MergeOptions::default()
    )
    .is_ok());
    let mut old = sample_db();
    old.schema_version = SCHEMA_VERSION + 1;
    let err = Database::merge_all(
        vec![("new.toml".into(), sample_db()), ("old.toml".into(), old)],
        MergeOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(
        err,
        MergeError::SchemaMismatch {
            first_version: SCHEMA_VERSION,
            ..
        }
    ));
    let msg = err.to_string();
    assert!(
        msg.contains("new.toml") && msg.contains("old.toml"),
        "{msg}"
    );
}

#[test]
fn merge_notes_differing_gpu_records() {
    let mut a = sample_db();
    let mut b = Database::new();
    let mut rec = gpu("NVIDIA H100 80GB HBM3");
    rec.driver_version = "13.1".to_string();
    b.upsert_gpu(rec);
    let r = a.merge("a", b, "b", MergeOptions::default()).unwrap();
    assert_eq!(r.gpu_notes.len(), 1, "{:?}", r.gpu_notes);
    assert!(
        r.gpu_notes[0].contains("driver_version"),
        "{:?}",
        r.gpu_notes
    );
    // The measured bandwidth of the old record stays when the new one has none.
    assert_eq!(
        a.gpu("NVIDIA H100 80GB HBM3").unwrap().copy_bandwidth_gbs,
        Some(2890.5)
    );
}

#[test]
fn in_several_counts_keys_held_by_more_than_one_input() {
    let a = sample_db();
    let mut b = Database::new();
    b.upsert(entry(
        "NVIDIA H100 80GB HBM3",
        Op::Gemm,
        "2048x2048x2048",
        0.5,
    ));
    b.upsert(entry("G", Op::Gemm, "8x8x8", 0.5));
    let (db, r) = Database::merge_all(
        vec![
            ("a".into(), a.clone()),
            ("b".into(), b.clone()),
            ("a2".into(), a),
        ],
        MergeOptions::default(),
    )
    .unwrap();
    assert_eq!(db.entries.len(), 4);
    // The three keys of `a` (one of them in `b` too); `G` is in `b` only.
    assert_eq!(r.in_several, 3);
    let mut c = Database::new();
    assert_eq!(
        c.merge("c", b, "b", MergeOptions::default())
            .unwrap()
            .in_several,
        0
    );
}

#[test]
fn coverage_merges_per_gpu_op_and_form_keeping_the_newer_run() {
    use crate::db::{Coverage, CoverageConfig, CoveragePoint};
    use crate::problem::Form;
    let cov = |gpu: &str, date: &str, ms: f64| Coverage {
        gpu: gpu.into(),
        op: Op::Gemm,
        form: crate::problem::Form::PLAIN,
        date: date.into(),
        tool_version: "0".into(),
        seed: 1,
        produced_by: None,
        configs: vec![CoverageConfig {
            family: "f".into(),
            params: Default::default(),
            checksum: "ab".repeat(32),
        }],
        points: vec![CoveragePoint {
            shape: "8x8x8".into(),
            cublas_ms: 1.0,
            ms: vec![ms],
        }],
    };
    let mut a = sample_db();
    a.upsert_coverage(cov("G1", "2026-11-02T00:00:00Z", 2.0));
    let mut b = sample_db();
    b.upsert_coverage(cov("G1", "2026-11-01T00:00:00Z", 3.0));
    b.upsert_coverage(cov("G2", "2026-11-01T00:00:00Z", 4.0));
    let (m, report) = Database::merge_all(
        vec![("a".into(), a.clone()), ("b".into(), b.clone())],
        MergeOptions::default(),
    )
    .unwrap();
    assert_eq!(m.coverage.len(), 2);
    assert_eq!(
        m.coverage("G1", Op::Gemm, &Form::PLAIN).unwrap().points[0].ms,
        vec![2.0]
    );
    assert_eq!(
        m.coverage("G2", Op::Gemm, &Form::PLAIN).unwrap().points[0].ms,
        vec![4.0]
    );
    assert!(
        report
            .gpu_notes
            .iter()
            .any(|n| n.contains("kept the newer one")),
        "{:?}",
        report.gpu_notes
    );
    // Whatever the order, the newer run stays.
    let (m, _) = Database::merge_all(
        vec![("b".into(), b), ("a".into(), a)],
        MergeOptions::default(),
    )
    .unwrap();
    assert_eq!(
        m.coverage("G1", Op::Gemm, &Form::PLAIN).unwrap().points[0].ms,
        vec![2.0]
    );
    // Records of different forms are kept apart: an older NT grid does not give way to a
    // newer plain one, nor replace it.
    let nt = Form {
        layout: crate::problem::Layout::Nt,
        ..Form::PLAIN
    };
    let mut c = sample_db();
    c.upsert_coverage(Coverage {
        form: nt,
        ..cov("G1", "2026-10-01T00:00:00Z", 5.0)
    });
    let (m, report) = Database::merge_all(
        vec![("m".into(), m), ("c".into(), c)],
        MergeOptions::default(),
    )
    .unwrap();
    assert_eq!(m.coverage.len(), 3);
    assert_eq!(
        m.coverage("G1", Op::Gemm, &Form::PLAIN).unwrap().points[0].ms,
        vec![2.0]
    );
    assert_eq!(
        m.coverage("G1", Op::Gemm, &nt).unwrap().points[0].ms,
        vec![5.0]
    );
    assert!(
        report.gpu_notes.iter().all(|n| !n.contains("gemm:nt")),
        "{:?}",
        report.gpu_notes
    );
}

#[test]
fn merge_into_file_reads_the_output_when_it_is_an_input() {
    let dir = tempfile::tempdir().unwrap();
    let (out, other) = (dir.path().join("out.toml"), dir.path().join("b.toml"));
    sample_db().save(&out).unwrap();
    let mut b = Database::new();
    b.upsert(entry("G", Op::Gemm, "8x8x8", 0.1));
    b.save(&other).unwrap();
    let (db, r) =
        Database::merge_into_file(&out, &[&out, &other], MergeOptions::default()).unwrap();
    assert_eq!((r.added, r.in_several), (4, 0));
    assert_eq!(Database::load(&out).unwrap(), db);
    assert_eq!(db.entries.len(), 4);
    assert_eq!(listing(dir.path()), ["b.toml", "out.toml"]);
    // An output that is not an input is replaced, not merged.
    let fresh = dir.path().join("fresh.toml");
    sample_db().save(&fresh).unwrap();
    let (db, _) = Database::merge_into_file(&fresh, &[&other], MergeOptions::default()).unwrap();
    assert_eq!(db.entries.len(), 1);
    assert_eq!(Database::load(&fresh).unwrap(), db);
}

#[test]
fn merge_into_file_writes_nothing_when_it_fails() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sub/out.toml");
    let missing = dir.path().join("missing.toml");
    let err = Database::merge_into_file(&out, &[&missing], MergeOptions::default()).unwrap_err();
    assert!(
        matches!(err, DbError::NotFound { ref path } if *path == missing),
        "{err:?}"
    );
    // Not even the output's directory (the lock would have created it).
    assert_eq!(listing(dir.path()), Vec::<String>::new());

    let out = dir.path().join("out.toml");
    sample_db().save(&out).unwrap();
    let before = fs::read(&out).unwrap();
    let odd = dir.path().join("odd.toml");
    let mut e = entry("G", Op::Gemm, "8x8x8", 0.1);
    e.checksum = "cd".repeat(32);
    let mut b = Database::new();
    b.upsert(e);
    b.save(&odd).unwrap();
    let err = Database::merge_into_file(&out, &[&out, &odd], MergeOptions::default()).unwrap_err();
    assert!(
        matches!(err, DbError::Merge(MergeError::ChecksumMismatch { .. })),
        "{err:?}"
    );
    assert!(err.to_string().contains("Nothing was written"), "{err}");
    assert_eq!(fs::read(&out).unwrap(), before);
    assert_eq!(listing(dir.path()), ["odd.toml", "out.toml"]);
}

/// Threads merging into one file that each also name as an input keep every entry.
#[test]
fn concurrent_merge_into_file_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.toml");
    Database::new().save(&out).unwrap();
    let inputs: Vec<_> = (0..8)
        .map(|i| {
            let path = dir.path().join(format!("in{i}.toml"));
            let mut db = Database::new();
            db.upsert(entry(&format!("GPU {i}"), Op::Gemm, "8x8x8", 0.1));
            db.save(&path).unwrap();
            path
        })
        .collect();
    std::thread::scope(|s| {
        for input in &inputs {
            let out = &out;
            s.spawn(move || {
                Database::merge_into_file(out, &[out, input], MergeOptions::default()).unwrap();
            });
        }
    });
    assert_eq!(Database::load(&out).unwrap().entries.len(), inputs.len());
}
