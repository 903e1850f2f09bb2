//! GPU checks: every config of every family validated on awkward shapes, and a small tune end
//! to end. Without a GPU each test prints `skipped: <reason>` and passes, unless
//! `AUTOTUNE_REQUIRE_GPU=1` (set by scripts/gpu.sh) turns the skip into a failure.

use autotune::compile::Cache;
use autotune::db::Database;
use autotune::device::Device;
use autotune::search::Exhaustive;
use autotune::shape::{Op, Shape};
use autotune::template::Catalog;
use autotune::timing::TimingSettings;
use autotune::tune::{self, Silent, TuneOptions};
use std::collections::BTreeSet;

fn device() -> Option<Device> {
    match Device::open(0) {
        Ok(d) => Some(d),
        Err(e) => {
            if std::env::var("AUTOTUNE_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("AUTOTUNE_REQUIRE_GPU=1 but no GPU: {e}");
            }
            println!("skipped: {e}");
            None
        }
    }
}

/// Validates every valid config of every family of `op` on each shape of `list`: all must
/// pass, and every family of the op must have been checked.
fn validate_every_config(op: Op, list: &[&str]) {
    let Some(dev) = device() else { return };
    let cat = Catalog::builtin().unwrap();
    let shapes: Vec<Shape> = list.iter().map(|s| Shape::parse(op, s).unwrap()).collect();
    let results = tune::validate_all(&dev, &cat, op, &shapes, &[], 7).unwrap();
    let families: BTreeSet<_> = results.iter().map(|r| r.family.clone()).collect();
    let expected: BTreeSet<_> = cat.for_op(op).map(|f| f.name().to_string()).collect();
    assert!(!expected.is_empty());
    assert_eq!(families, expected, "every {op} family must be checked");
    for s in &shapes {
        let on_shape: BTreeSet<_> = results
            .iter()
            .filter(|r| r.shape == *s)
            .map(|r| r.family.clone())
            .collect();
        assert_eq!(
            on_shape,
            expected,
            "every family needs a valid config on {}",
            s.label(op)
        );
    }
    let failed: Vec<_> = results.iter().filter(|r| r.outcome.is_err()).collect();
    for f in &failed {
        eprintln!("{} on {}: {:?}", f.kernel, f.shape.label(op), f.outcome);
    }
    println!(
        "{op}: validated {} (config, shape) pairs over {} families; {} failed",
        results.len(),
        families.len(),
        failed.len()
    );
    assert!(failed.is_empty(), "{} validations failed", failed.len());
}

#[test]
fn every_gemm_config_validates_on_awkward_shapes() {
    validate_every_config(
        Op::Gemm,
        &[
            "1000x1000x1000",
            "1x1x1",
            "2049x2047x1",
            "3x5x7",
            "33x65x129",
            "130x7x1001",
        ],
    );
}

#[test]
fn every_gemv_config_validates_on_awkward_shapes() {
    validate_every_config(
        Op::Gemv,
        &[
            "1x1",
            "3x5",
            "1000x999",
            "100000x3",
            "17x100001",
            "4096x4096",
            "33x129",
        ],
    );
}

#[test]
fn small_tune_writes_a_valid_entry() {
    let Some(dev) = device() else { return };
    let cat = Catalog::builtin().unwrap();
    let shape = Shape::parse(Op::Gemm, "256x192x320").unwrap();
    let opts = TuneOptions {
        timing: TimingSettings::quick(),
        ..TuneOptions::default()
    };
    let cache = Cache::new();
    let run = || {
        tune::tune(
            &dev,
            &cat,
            &cache,
            Op::Gemm,
            shape,
            &opts,
            &mut Exhaustive,
            &Silent,
        )
        .unwrap()
    };
    let r = run();
    assert!(r.baseline.median_ms > 0.0);
    assert!(r.results.len() >= 3);
    assert_eq!(
        r.failures().count(),
        0,
        "{:?}",
        r.failures().collect::<Vec<_>>()
    );
    let entry = r.to_entry("2026-01-01T00:00:00Z").expect("a winner");
    let best = r.ranked()[0].median_ms().unwrap();
    assert_eq!(entry.median_ms, best);
    assert!(entry.vs_cublas > 0.0 && entry.gflops > 0.0);

    // A second tune of the same shape compiles nothing: the cache serves every kernel.
    let before = cache.hits();
    run();
    assert_eq!(cache.hits() - before, r.results.len());

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db.toml");
    Database::update_file(&path, |db| {
        db.upsert_gpu(r.gpu.clone());
        db.upsert(entry.clone());
        Ok(())
    })
    .unwrap();
    let db = Database::load(&path).unwrap();
    assert_eq!(db.get(&r.gpu.name, Op::Gemm, shape), Some(&entry));
}
