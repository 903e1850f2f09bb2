//! GPU checks: every family validated on awkward shapes, and a small tune end to end.
//! Without a GPU each test prints `skipped: <reason>` and passes, unless
//! `AUTOTUNE_REQUIRE_GPU=1` (set by scripts/gpu.sh) turns the skip into a failure.

use autotune::db::Database;
use autotune::device::Device;
use autotune::search::Exhaustive;
use autotune::shape::{Op, Shape};
use autotune::template::Catalog;
use autotune::timing::TimingSettings;
use autotune::tune::{self, Silent, TuneOptions};

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

fn shapes(op: Op, list: &[&str]) -> Vec<Shape> {
    list.iter().map(|s| Shape::parse(op, s).unwrap()).collect()
}

#[test]
fn every_gemm_config_validates_on_awkward_shapes() {
    let Some(dev) = device() else { return };
    let cat = Catalog::builtin().unwrap();
    let shapes = shapes(
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
    let results = tune::validate_all(&dev, &cat, Op::Gemm, &shapes, &[], 7).unwrap();
    let families: std::collections::BTreeSet<_> =
        results.iter().map(|r| r.family.clone()).collect();
    assert!(
        families.len() >= 2,
        "every gemm family must be checked: {families:?}"
    );
    let failed: Vec<_> = results.iter().filter(|r| r.outcome.is_err()).collect();
    for f in &failed {
        eprintln!(
            "{} on {}: {:?}",
            f.kernel,
            f.shape.label(Op::Gemm),
            f.outcome
        );
    }
    println!(
        "validated {} (config, shape) pairs over {} families; {} failed",
        results.len(),
        families.len(),
        failed.len()
    );
    assert!(failed.is_empty(), "{} validations failed", failed.len());
}

#[test]
fn small_tune_beats_nothing_but_writes_a_valid_entry() {
    let Some(dev) = device() else { return };
    let cat = Catalog::builtin().unwrap();
    let shape = Shape::parse(Op::Gemm, "256x192x320").unwrap();
    let opts = TuneOptions {
        timing: TimingSettings::quick(),
        ..TuneOptions::default()
    };
    let r = tune::tune(&dev, &cat, Op::Gemm, shape, &opts, &mut Exhaustive, &Silent).unwrap();
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
