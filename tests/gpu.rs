//! GPU checks: every config of every family validated on awkward shapes, and a small tune end
//! to end. Each test is `#[ignore]`d, so that `cargo test` without a GPU shows them as ignored
//! rather than passed; `cargo test --test gpu -- --include-ignored` (scripts/gpu.sh) runs them,
//! and there a missing GPU fails them.

mod common;

use autotune::cuda::device::Device;
use autotune::cuda::isolate::WorkerSettings;
use autotune::cuda::nvrtc::{self, Cache, Target};
use autotune::db::Database;
use autotune::family::catalog::{Catalog, Family};
use autotune::family::expr::Expr;
use autotune::family::space::Interface;
use autotune::measure::outcome::Stage;
use autotune::measure::timing::TimingSettings;
use autotune::problem::{Op, Shape};
use autotune::search::Exhaustive;
use autotune::tuning::sweep;
use autotune::tuning::tune::{self, Silent, TuneOptions};
use std::collections::BTreeSet;

/// GPU 0; fails the test where there is none.
fn device() -> Device {
    common::require_gpu();
    Device::open(0)
        .unwrap_or_else(|e| panic!("a GPU seems present, but device 0 does not open: {e}"))
}

/// An exhaustive, silent gemm tune of `shape` with `opts`.
fn tune_gemm(
    dev: &Device,
    cat: &Catalog,
    cache: &Cache,
    shape: Shape,
    opts: &TuneOptions,
) -> autotune::plan::outcome::TuneReport {
    tune::tune(
        dev,
        cat,
        cache,
        Op::Gemm,
        shape,
        opts,
        &mut Exhaustive::default(),
        &Silent,
    )
    .unwrap()
}

/// Validates every valid config of every family of `op` on each shape of `list`: all must
/// pass, and every family of the op must have been checked.
fn validate_every_config(op: Op, list: &[&str]) {
    let dev = device();
    let cat = Catalog::builtin().unwrap();
    validate_catalog(&dev, &cat, op, list, &[]);
}

/// Whether `family`'s space offers a config for `shape` on `dev`.
fn offers(dev: &Device, family: &Family, shape: &Shape) -> bool {
    common::offered(family, *shape, &dev.info.limits).unwrap()
}

/// Validates every valid config of `cat`'s families of `op` (those named in `only`, or all) on
/// each shape of `list`: all must pass, every family must have been checked, and on each shape
/// every family whose space offers a config there (all but the GEMV-shaped gemm families,
/// which offer configs only on shapes with few rows or columns).
fn validate_catalog(dev: &Device, cat: &Catalog, op: Op, list: &[&str], only: &[String]) {
    let shapes: Vec<Shape> = list.iter().map(|s| Shape::parse(op, s).unwrap()).collect();
    let results = tune::validate_all(
        dev,
        cat,
        op,
        &shapes,
        only,
        7,
        Some(&WorkerSettings::new(common::bin())),
    )
    .unwrap();
    let chosen: Vec<_> = cat
        .for_op(op)
        .filter(|f| only.is_empty() || only.iter().any(|n| n == f.name()))
        .collect();
    let families: BTreeSet<_> = results.iter().map(|r| r.family.clone()).collect();
    // Every family whose space offers a config on one of the shapes (a family offered only on
    // other forms, such as the NT layer-call family on plain shapes, is checked where it is).
    let expected: BTreeSet<_> = chosen
        .iter()
        .filter(|f| shapes.iter().any(|s| offers(dev, f, s)))
        .map(|f| f.name().to_string())
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(families, expected, "every {op} family must be checked");
    for s in &shapes {
        let on_shape: BTreeSet<_> = results
            .iter()
            .filter(|r| r.shape == *s)
            .map(|r| r.family.clone())
            .collect();
        let offered: BTreeSet<_> = chosen
            .iter()
            .filter(|f| offers(dev, f, s))
            .map(|f| f.name().to_string())
            .collect();
        assert_eq!(
            on_shape,
            offered,
            "every family with a valid config on {} must be checked there",
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
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
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
            // Few rows or few columns, odd extents and very short K: where the GEMV-shaped
            // families (gemm_small_m, gemm_small_n) offer configs, on their scalar paths
            // (odd N, odd K) and float4 paths (7x1x3000: K % 4 == 0).
            "1x2047x2049",
            "7x1x3000",
            "16x4097x5",
            "2049x16x7",
            "8x1024x1000",
        ],
    );
}

/// Awkward gemm problems of every layout, with padded leading dimensions, beta != 0 and strided
/// batches (past the grid's z limit, with and without a split K).
fn every_form_gemm_shapes() -> Vec<String> {
    let mut gemm = Vec::new();
    for l in ["nn", "nt", "tn", "tt"] {
        for s in [
            "1x1x1:{l}:beta",
            "3x5x7:{l}:pad",
            "33x65x129:{l}:beta:pad",
            "130x7x1001:{l}:b3",
            "2x3x5:{l}:b65537:beta",
            // Split K past the grid's z limit: the later batches of a slot run unsplit.
            "2x3x300:{l}:b65537",
            "257x250x66:{l}:b2:pad",
        ] {
            gemm.push(s.replace("{l}", l));
        }
    }
    gemm
}

/// The tensor-core families alone on every form (also in the test below), and on square and
/// long-K problems where their tiles are full: the first GPU check of a new family, quicker
/// than the whole catalog. `AUTOTUNE_TF32X3_FAMILIES=A,B` checks those of them alone.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
fn tf32x3_validates_every_form() {
    let dev = device();
    let cat = Catalog::builtin().unwrap();
    let mut shapes = every_form_gemm_shapes();
    shapes.extend(["512x512x512", "256x384x2048:nt", "1000x1000x1000:tn:beta"].map(String::from));
    let shapes: Vec<&str> = shapes.iter().map(String::as_str).collect();
    let families: Vec<String> = match std::env::var("AUTOTUNE_TF32X3_FAMILIES") {
        Ok(list) => list
            .split(',')
            .map(|one| {
                assert!(
                    common::TF32X3_FAMILIES.contains(&one),
                    "AUTOTUNE_TF32X3_FAMILIES: {one} is not a 3xTF32 family"
                );
                one.to_string()
            })
            .collect(),
        Err(_) => common::TF32X3_FAMILIES.map(String::from).to_vec(),
    };
    // The forms the chosen families compute (gemm_tf32x3_wgmma_cols: not NT).
    let offered = |s: &&str| {
        let shape = Shape::parse(Op::Gemm, s).unwrap();
        families
            .iter()
            .any(|f| offers(&dev, cat.get(f).unwrap(), &shape))
    };
    let shapes: Vec<&str> = shapes.into_iter().filter(offered).collect();
    validate_catalog(&dev, &cat, Op::Gemm, &shapes, &families);
}

/// The families of the full interface (gemm_general, the split-K and few-row ones, gemv_general)
/// on every layout, with padded leading dimensions, beta != 0 and strided batches (of more than
/// 65535 products, past the grid's z limit, with and without a split K), on awkward extents: every valid config must pass, and must leave
/// the padding between C's rows alone.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
fn full_interface_families_validate_every_form() {
    let dev = device();
    let cat = Catalog::builtin().unwrap();
    let gemm = every_form_gemm_shapes();
    let gemm: Vec<&str> = gemm.iter().map(String::as_str).collect();
    let full = |op: Op| -> Vec<String> {
        cat.for_op(op)
            .filter(|f| f.space.interface == Interface::Full)
            .map(|f| f.name().to_string())
            .collect()
    };
    assert!(full(Op::Gemm).contains(&"gemm_general".to_string()));
    validate_catalog(&dev, &cat, Op::Gemm, &gemm, &full(Op::Gemm));
    let gemv = [
        "1x1:beta",
        "1x1:t",
        "3x5:t:beta:pad",
        "33x4097:b3:beta",
        "4097x33:t:b5",
        "1000x999:t:pad",
        "999x1000:pad",
        "2x3:t:b65537",
        "2x3:b65537:beta",
        "20000x64:t:beta",
    ];
    assert!(full(Op::Gemv).contains(&"gemv_general".to_string()));
    validate_catalog(&dev, &cat, Op::Gemv, &gemv, &full(Op::Gemv));
}

/// The GEMV-shaped gemm families offer configs only on shapes with few rows (gemm_small_m and
/// its splits, gemm_small_m_splitk and gemm_small_m_stream) or few columns (gemm_small_n), and only tiles that fit the shape; their templates are correct
/// on every shape all the same (a runtime may launch a config on a shape nobody tuned). Here
/// every config their spaces allow on some shape is validated on shapes the constraints skip:
/// several row or column tiles, tiles far larger than the matrix, K shorter than one
/// iteration.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
fn gemv_shaped_gemm_configs_are_correct_on_shapes_their_spaces_skip() {
    let dev = device();
    let families = [
        "gemm_small_m",
        "gemm_small_m_splitk",
        "gemm_small_m_stream",
        "gemm_small_n",
    ];
    let (_tmp, cat) = without_shape_constraints(&families);
    let only: Vec<String> = families.iter().map(|s| s.to_string()).collect();
    validate_catalog(
        &dev,
        &cat,
        Op::Gemm,
        &["33x65x129", "3x2x1", "130x7x1001"],
        &only,
    );
}

/// The built-in `families` rebuilt from the built-in texts (the source tree may not be on the
/// GPU machine): each template with its includes inlined, each space without the constraints
/// that read the shape (the device limits stay). The directory must outlive the catalog's use.
fn without_shape_constraints(families: &[&str]) -> (tempfile::TempDir, Catalog) {
    let builtin = Catalog::builtin().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let (templates, spaces) = (
        tmp.path().join("templates"),
        tmp.path().join("configs/spaces"),
    );
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::create_dir_all(&spaces).unwrap();
    for &name in families {
        let fam = builtin.get(name).unwrap();
        std::fs::write(templates.join(&fam.space.template), &fam.inlined).unwrap();
        let mut space: toml::Table = toml::from_str(&fam.space.source).unwrap();
        let constraints = space["constraints"].as_array().unwrap().clone();
        let kept: Vec<toml::Value> = constraints
            .into_iter()
            .filter(|c| {
                let e = Expr::parse(c.as_str().unwrap()).unwrap();
                // M, N, K, directly or through derived values (the stream-K partition).
                !reads_shape(&e, &space)
            })
            .collect();
        space.insert("constraints".into(), toml::Value::Array(kept));
        std::fs::write(
            spaces.join(format!("{name}.toml")),
            toml::to_string(&space).unwrap(),
        )
        .unwrap();
    }
    let cat = Catalog::from_dir(tmp.path()).unwrap();
    (tmp, cat)
}

/// Whether `e` reads M, N or K, directly or through the space's derived values.
fn reads_shape(e: &Expr, space: &toml::Table) -> bool {
    e.names().iter().any(|n| {
        ["M", "N", "K"].contains(&n.as_str())
            || space
                .get("derived")
                .and_then(|d| d.get(n))
                .and_then(|v| v.as_str())
                .and_then(|t| Expr::parse(t).ok())
                .is_some_and(|d| reads_shape(&d, space))
    })
}

#[test]
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
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
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
fn small_tune_writes_a_valid_entry() {
    let dev = device();
    let cat = Catalog::builtin().unwrap();
    let shape = Shape::parse(Op::Gemm, "256x192x320").unwrap();
    let opts = TuneOptions {
        timing: TimingSettings::quick(),
        ..TuneOptions::default()
    };
    let cache = Cache::new();
    let run = || tune_gemm(&dev, &cat, &cache, shape, &opts);
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

/// The fault suite (tests/data/faults): every broken config is recorded with its reason, a
/// good config wins, and the run goes on after faults that kill the worker. Then a run cut
/// short after 4 candidates resumes from its journal without running them again.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
fn fault_suite_is_survived_and_resume_skips_finished_candidates() {
    let dev = device();
    let cat = Catalog::from_dir(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/faults"
    )))
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("faults.jsonl");
    let shape = Shape::mnk(256, 256, 256);
    let mut opts = TuneOptions {
        timing: TimingSettings::quick(),
        isolation: Some(WorkerSettings::new(common::bin())),
        journal: Some(journal.clone()),
        budget: Some(4),
        ..TuneOptions::default()
    };
    let cache = Cache::new();
    let run = |opts: &TuneOptions| tune_gemm(&dev, &cat, &cache, shape, opts);
    let first = run(&opts);
    assert_eq!(first.results.len(), 4);
    opts.budget = None;
    opts.resume = true;
    let r = run(&opts);
    assert_eq!(
        r.resumed, 4,
        "the 4 finished candidates come from the journal"
    );
    assert_eq!(r.results.len(), 9);
    let fault = |c: &autotune::plan::outcome::CandidateResult| c.params["FAULT"];
    for c in &r.results {
        println!(
            "FAULT={} {}: {:?}",
            fault(c),
            c.kernel,
            c.outcome.as_ref().map(|m| m.stats.median_ms)
        );
    }
    let reason = |f: i64| {
        let c = r.results.iter().find(|c| fault(c) == f).unwrap();
        let e = c.outcome.as_ref().expect_err(&c.kernel);
        (e.stage, e.reason.clone())
    };
    let (stage, why) = reason(1);
    assert!(
        stage == Stage::Validate && why.contains("out of bounds"),
        "{why}"
    );
    let (stage, why) = reason(2);
    assert!(
        stage == Stage::Crash && why.to_lowercase().contains("illegal"),
        "{why}"
    );
    let (stage, why) = reason(3);
    assert!(
        stage == Stage::Timeout && why.contains("time limit"),
        "{why}"
    );
    let (stage, _) = reason(4);
    assert_eq!(stage, Stage::Validate);
    let (stage, why) = reason(5);
    assert!(stage == Stage::Compile && why.contains("error"), "{why}");
    let (stage, why) = reason(6);
    assert!(
        matches!(stage, Stage::Load | Stage::Launch),
        "{stage:?}: {why}"
    );
    let (stage, why) = reason(7);
    assert!(stage == Stage::Validate && why.contains("NaN"), "{why}");
    let winner = r
        .to_entry("2026-01-01T00:00:00Z")
        .expect("a good config wins");
    assert_eq!(winner.params["FAULT"], 0);
    assert_eq!(r.failures().count(), 7);
    // The budgeted first run may already have met one of them.
    assert!(
        first.worker_restarts + r.worker_restarts >= 2,
        "illegal address and hang each cost a worker"
    );
    println!(
        "fault suite: {} candidates, {} failed, {} worker restarts, winner {}",
        r.results.len(),
        r.failures().count(),
        r.worker_restarts,
        winner.kernel
    );
}

/// `cross` runs other GPUs' winners through the isolating evaluator: winners that fault, hang
/// or give wrong results (the fault suite's configs, recorded as winners of made-up GPUs) are
/// failed rows, and the run goes on to measure the good one.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
fn cross_isolates_faulting_winners() {
    use autotune::tuning::cross::{self, CrossOptions};
    let dev = device();
    let cat = Catalog::from_dir(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/faults"
    )))
    .unwrap();
    let checksum = cat.get("gemm_faults").unwrap().checksum.clone();
    let fixture = Database::load(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/h200-db.toml"
    )))
    .unwrap();
    let shape = Shape::mnk(256, 256, 256);
    let mut db = Database::new();
    for fault in 0..=7 {
        let mut e = fixture.entries[0].clone();
        e.gpu = format!("Made-up GPU {fault}");
        e.op = Op::Gemm;
        (e.m, e.n, e.k) = (shape.m, shape.n, shape.k);
        e.shape = shape.label(Op::Gemm);
        e.family = "gemm_faults".into();
        e.params = [("TILE".to_string(), 16), ("FAULT".to_string(), fault)].into();
        e.checksum = checksum.clone();
        db.upsert(e);
    }
    let opts = CrossOptions {
        seed: 1,
        timing: TimingSettings::quick(),
        isolation: Some(WorkerSettings::new(common::bin())),
    };
    let rows = cross::run(
        &dev,
        &cat,
        &Cache::new(),
        &db,
        Op::Gemm,
        &[shape],
        &opts,
        "2026-11-23T00:00:00Z",
        &|line| eprintln!("{line}"),
    )
    .expect("a faulting winner must not end the cross run");
    assert_eq!(rows.len(), 8, "{rows:?}");
    for r in &rows {
        eprintln!(
            "FAULT={} {:?} {:?}",
            r.params["FAULT"], r.median_ms, r.failure
        );
        if r.params["FAULT"] == 0 {
            assert!(r.median_ms.is_some(), "the good config failed: {r:?}");
        } else {
            assert!(r.failure.is_some(), "a broken config passed: {r:?}");
        }
    }
}

/// gemm_tf32x3 through the runtime on operands with inf, -inf, NaN, FLT_MAX (which TF32 rounds
/// to inf), large and subnormal values: every element is what IEEE FP32 arithmetic gives (NaN,
/// the same infinity, or within the FP32 tolerance of the float64 reference), in the tiles that
/// recompute in FP32 and in the clean ones that stay on the tensor cores.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
fn tf32x3_gives_ieee_results_for_special_values() {
    let dev = device();
    let cat = Catalog::builtin().unwrap();
    for name in common::TF32X3_FAMILIES {
        tf32x3_special_values(&dev, cat.get(name).unwrap());
    }
}

fn tf32x3_special_values(dev: &Device, family: &autotune::family::catalog::Family) {
    let nvrtc = autotune::cuda::nvrtc::nvrtc_version().unwrap();
    let (m, n, k) = common::SPECIAL_MNK;
    let shape = Shape::parse(Op::Gemm, &format!("{m}x{n}x{k}")).unwrap();
    let valid = family.space.prune(shape, &dev.info.limits).unwrap().valid;
    let config = common::smallest_tile(&valid);
    let mut db = Database::new();
    db.upsert_gpu(dev.info.record(&nvrtc));
    db.upsert(autotune::db::Entry {
        family: family.name().to_string(),
        kernel: family.kernel_name_for(&config, shape),
        params: config.params.clone(),
        checksum: family.checksum.clone(),
        ..common::entry(&dev.info.name, Op::Gemm, &shape.label(Op::Gemm))
    });
    let tuned = autotune::Tuned::new(&dev.ctx, db)
        .unwrap()
        .quiet()
        .vendor_guard(false);
    assert_eq!(tuned.explain(Op::Gemm, shape).family, family.name());
    let mut a: Vec<f32> = (0..m * k)
        .map(|i| ((i * 7 % 13) as f32 - 6.0) / 8.0)
        .collect();
    let mut b: Vec<f32> = (0..k * n)
        .map(|i| ((i * 5 % 11) as f32 - 5.0) / 8.0)
        .collect();
    common::plant_special_values(&mut a, &mut b, false);
    let s = &dev.stream;
    let (da, db_) = (s.clone_htod(&a).unwrap(), s.clone_htod(&b).unwrap());
    let mut dc = s.alloc_zeros::<f32>(m * n).unwrap();
    tuned.gemm(s, m, n, k, &da, &db_, &mut dc).unwrap();
    let c = s.clone_dtoh(&dc).unwrap();
    let tolerance = autotune::measure::verify::tolerance(k as u64);
    for i in 0..m {
        for j in 0..n {
            let terms = (0..k).map(|p| a[i * k + p] as f64 * b[p * n + j] as f64);
            let want: f64 = terms.clone().sum();
            let bound: f64 = terms.map(f64::abs).sum();
            let got = c[i * n + j];
            let ok = common::ieee_matches(got, want, bound, tolerance);
            assert!(ok, "C[{i},{j}] = {got}, IEEE gives {want} (bound {bound})");
        }
    }
}

/// The runtime's opt-ins on a real GPU: the vendor guard calls cuBLAS where the exact entry
/// lost to it, online tuning tunes an unseen shape on its first call and keeps it on disk for
/// the next runtime, and recording writes the shapes called as a suite. Every result is
/// checked against a CPU reference.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
fn runtime_vendor_guard_online_tuning_and_recording() {
    use autotune::product::online::OnlineTuning;
    use autotune::suite::Suite;
    let dev = device();
    let cat = Catalog::builtin().unwrap();
    let nvrtc = autotune::cuda::nvrtc::nvrtc_version().unwrap();
    let gpu = dev.info.name.clone();
    let mut db = Database::new();
    db.upsert_gpu(dev.info.record(&nvrtc));
    let (family, params) = autotune::product::lookup::default_config(Op::Gemm);
    let lost = autotune::db::Entry {
        vs_cublas: 0.5,
        checksum: cat.get(&family).unwrap().checksum.clone(),
        family,
        params,
        ..common::entry(&gpu, Op::Gemm, "96x80x200")
    };
    db.upsert(lost);
    let dir = tempfile::tempdir().unwrap();
    let online = dir.path().join("online.toml");
    let rec = dir.path().join("recorded");
    let opts = OnlineTuning {
        candidates: 3,
        ..OnlineTuning::new(&online)
    };
    let tuned = autotune::Tuned::new(&dev.ctx, db.clone())
        .unwrap()
        .quiet()
        .record_to(&rec)
        .online_tuning(opts.clone())
        .unwrap();
    let s = &dev.stream;
    let run = |m: usize, n: usize, k: usize| {
        let a: Vec<f32> = (0..m * k)
            .map(|i| ((i * 7 % 13) as f32 - 6.0) / 8.0)
            .collect();
        let b: Vec<f32> = (0..k * n)
            .map(|i| ((i * 5 % 11) as f32 - 5.0) / 8.0)
            .collect();
        let (da, db_) = (s.clone_htod(&a).unwrap(), s.clone_htod(&b).unwrap());
        let mut dc = s.alloc_zeros::<f32>(m * n).unwrap();
        tuned.gemm(s, m, n, k, &da, &db_, &mut dc).unwrap();
        let c = s.clone_dtoh(&dc).unwrap();
        for i in 0..m {
            for j in 0..n {
                let want: f64 = (0..k)
                    .map(|p| a[i * k + p] as f64 * b[p * n + j] as f64)
                    .sum();
                let got = c[i * n + j] as f64;
                assert!(
                    (got - want).abs() <= 1e-3 * (1.0 + want.abs()),
                    "{m}x{n}x{k} C[{i},{j}] = {got}, want {want}"
                );
            }
        }
    };
    let lost_shape = Shape::parse(Op::Gemm, "96x80x200").unwrap();
    let choice = tuned.explain(Op::Gemm, lost_shape);
    assert!(choice.vendor, "{choice:?}");
    run(96, 80, 200);
    // Off, the guard launches the entry's kernel.
    let unguarded = autotune::Tuned::new(&dev.ctx, db.clone())
        .unwrap()
        .quiet()
        .vendor_guard(false);
    assert!(!unguarded.explain(Op::Gemm, lost_shape).vendor);

    let fresh = Shape::parse(Op::Gemm, "33x65x17").unwrap();
    assert_ne!(
        tuned.explain(Op::Gemm, fresh).rule,
        autotune::product::lookup::Rule::Exact
    );
    run(33, 65, 17);
    assert_eq!(
        tuned.explain(Op::Gemm, fresh).rule,
        autotune::product::lookup::Rule::Exact
    );
    let kept = Database::load(&online).unwrap();
    let e = kept
        .get(&gpu, Op::Gemm, fresh)
        .expect("the online entry is on disk");
    assert!(e.vs_cublas > 0.0 && e.tried >= 1);
    // The next runtime starts tuned.
    let next = autotune::Tuned::new(&dev.ctx, db)
        .unwrap()
        .quiet()
        .online_tuning(opts)
        .unwrap();
    assert_eq!(
        next.explain(Op::Gemm, fresh).rule,
        autotune::product::lookup::Rule::Exact
    );

    let suite = Suite::load(&rec.join("gemm.toml")).unwrap();
    assert_eq!(suite.shapes, vec![lost_shape, fresh]);
}

/// The PTX target `AUTOTUNE_PTX_ARCH` names (`compute_75`: the templates' older-arch paths,
/// JIT-compiled by the driver), or `None` when it is unset or empty.
fn ptx_from_env() -> Option<Target> {
    let v = std::env::var("AUTOTUNE_PTX_ARCH").ok()?;
    if v.trim().is_empty() {
        return None;
    }
    match v.parse::<Target>() {
        Ok(t @ Target::Ptx(_)) => Some(t),
        _ => panic!("AUTOTUNE_PTX_ARCH={v}: give a virtual arch, compute_XY (e.g. compute_75)"),
    }
}

/// The randomized correctness sweep ([`autotune::tuning::sweep`]): every family of both ops,
/// a fixed set of configs per family compiled once each for `target` and loaded once, run on
/// seeded random problems (tiny, odd and prime sizes first) against the float64 reference.
/// Prints one parseable line, `sweep: ...`, with the counts; every failure is listed.
fn run_sweep(dev: &Device, mode: sweep::Mode, target: Target, label: &str) {
    use autotune::cuda::bench::{Bench, Loaded};
    use std::collections::HashMap;
    assert!(
        !(target.is_ptx() && target.arch() > dev.info.arch),
        "{label}: PTX for {target} cannot run on {} ({})",
        dev.info.name,
        dev.info.arch
    );
    if let Err(e) = nvrtc::check_arch(target) {
        panic!("{label}: {e}");
    }
    let nvrtc = nvrtc::describe().unwrap_or_else(|e| panic!("{e}"));
    let cat = Catalog::builtin().unwrap();
    let cache = Cache::new();
    // Validation only: one event pair, no L2 flush.
    let timing = TimingSettings {
        warmup: 0,
        min_samples: 1,
        max_samples: 1,
        budget_ms: 1.0,
        flush_l2: false,
    };
    let start = std::time::Instant::now();
    let (mut problems, mut runs, mut configs, mut compile_s) = (0usize, 0usize, 0usize, 0.0);
    let mut failures: Vec<String> = Vec::new();
    for (i, op) in [Op::Gemm, Op::Gemv].into_iter().enumerate() {
        let plan = sweep::plan(
            &cat,
            op,
            &dev.info.limits,
            mode.problems_per_op(),
            4,
            2,
            0x5EED_0019 + i as u64,
        )
        .unwrap();
        // Each config compiled once (in parallel) and loaded once, then run on many shapes.
        let mut index = Vec::new();
        let mut sources = Vec::new();
        for (fi, f) in plan.families.iter().enumerate() {
            let family = cat.get(&f.family).unwrap();
            for (ci, c) in f.configs.iter().enumerate() {
                index.push((fi, ci));
                sources.push(family.instantiate(c));
            }
        }
        let t = std::time::Instant::now();
        let compiled: HashMap<(usize, usize), _> = index
            .iter()
            .copied()
            .zip(
                nvrtc::compile_all(&sources, target, nvrtc::Caches::memory(&cache), &|_| {})
                    .results,
            )
            .collect();
        compile_s += t.elapsed().as_secs_f64();
        configs += sources.len();
        let mut loaded: HashMap<(usize, usize), Loaded> = HashMap::new();
        for (pi, (shape, plan_runs)) in plan.problems.iter().enumerate() {
            let what = |fi: usize, ci: usize| {
                let c = plan.config(fi, ci);
                format!(
                    "{} {} on {op} {}",
                    c.family,
                    c.params_label(),
                    shape.label(op)
                )
            };
            let mut bench = Bench::new(dev, op, *shape, 19 + pi as u64, timing)
                .unwrap_or_else(|e| panic!("{label}: {op} {}: {e}", shape.label(op)));
            for &(fi, ci) in plan_runs {
                runs += 1;
                let config = plan.config(fi, ci);
                let family = cat.get(&config.family).unwrap();
                let launch = match family.space.launch(config, *shape, &dev.info.limits) {
                    Ok(l) => l,
                    Err(e) => {
                        failures.push(format!("{}: no launch: {e}", what(fi, ci)));
                        continue;
                    }
                };
                let kernel = match loaded.get(&(fi, ci)) {
                    Some(l) => l.with_launch(launch),
                    None => {
                        let c = match compiled[&(fi, ci)].as_ref() {
                            Ok(c) => c,
                            Err(e) => {
                                failures.push(format!("{}: {e}", what(fi, ci)));
                                continue;
                            }
                        };
                        match bench.load(c, launch) {
                            Ok(l) => {
                                loaded.insert((fi, ci), l.with_launch(launch));
                                l
                            }
                            Err(f) => {
                                failures.push(format!(
                                    "{}: {:?}: {}",
                                    what(fi, ci),
                                    f.stage,
                                    f.reason
                                ));
                                continue;
                            }
                        }
                    }
                };
                match bench.check(&kernel) {
                    Ok(Ok(_)) => {}
                    Ok(Err(f)) => failures.push(format!(
                        "{}: {:?}: {}",
                        what(fi, ci),
                        f.stage,
                        f.reason.lines().next().unwrap_or_default()
                    )),
                    Err(e) => panic!(
                        "{label}: {} broke the CUDA context: {e}\nfailures before it:\n{}",
                        what(fi, ci),
                        failures.join("\n")
                    ),
                }
            }
            problems += 1;
        }
    }
    for f in &failures {
        eprintln!("sweep failure: {f}");
    }
    println!(
        "sweep: {label}, mode {}, target {target} (NVRTC {nvrtc}): {problems} problems x configs = {runs} runs of {configs} configs, {} failures, compile {compile_s:.1} s, total {:.1} s",
        match mode {
            sweep::Mode::Quick => "quick",
            sweep::Mode::Full => "full",
        },
        failures.len(),
        start.elapsed().as_secs_f64()
    );
    assert!(
        failures.is_empty(),
        "{label}: {} of {runs} runs failed",
        failures.len()
    );
}

/// The sweep mode `AUTOTUNE_SWEEP` names: `quick` (the default, about 100 problems) or `full`
/// (at least 1,000).
fn sweep_mode() -> sweep::Mode {
    let v = std::env::var("AUTOTUNE_SWEEP").ok();
    sweep::Mode::parse(v.as_deref()).unwrap_or_else(|e| panic!("AUTOTUNE_SWEEP: {e}"))
}

/// Every family on seeded random problems, compiled as the device runs them (a cubin for its
/// arch), or as PTX for `AUTOTUNE_PTX_ARCH` when that is set.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
fn randomized_sweep_validates_every_family() {
    let dev = device();
    let target = ptx_from_env().unwrap_or(Target::Cubin(dev.info.arch));
    run_sweep(&dev, sweep_mode(), target, "device");
}

/// The same sweep through PTX for an older virtual arch (`AUTOTUNE_PTX_ARCH`, default
/// compute_75, the oldest NVRTC 13 targets): the driver JIT-compiles it, so the templates'
/// `__CUDA_ARCH__ < 800` paths (no cp.async, scalar atomics) run and are validated here.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
fn randomized_sweep_through_older_ptx() {
    let dev = device();
    let target = ptx_from_env().unwrap_or(Target::Ptx(autotune::gpu::Arch { major: 7, minor: 5 }));
    run_sweep(&dev, sweep_mode(), target, "older PTX");
}

/// The deterministic split-K family (`gemm_warptile_splitk_det`): every config validates on
/// edge shapes (validation launches it twice on one workspace, so a kernel that leaves its tile
/// counters dirty fails), and two launches of one config on the same inputs give bit-identical
/// outputs on a shape with several splits, run directly and through the runtime (which brings
/// its own workspace). The atomic split-K family runs twice too; whether its outputs differed
/// is printed, not asserted.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
fn deterministic_split_k_validates_and_repeats_bit_for_bit() {
    use autotune::family::space::Config;
    let dev = device();
    let cat = Catalog::builtin().unwrap();
    const DET: &str = "gemm_warptile_splitk_det";
    const ATOMIC: &str = "gemm_warptile_splitk";

    // 1. Every config on edge shapes: fewer non-empty K chunks than SPLIT_K (130, 1001), a
    //    single chunk (K = 1, 7), ragged M and N, and the long-K shape of part 2.
    let list = [
        "1x1x1",
        "3x5x7",
        "2049x2047x1",
        "33x65x129",
        "70x130x130",
        "130x7x1001",
        "257x130x4099",
        "256x256x16384",
    ];
    let shapes: Vec<Shape> = list
        .iter()
        .map(|s| Shape::parse(Op::Gemm, s).unwrap())
        .collect();
    let results = tune::validate_all(
        &dev,
        &cat,
        Op::Gemm,
        &shapes,
        &[DET.to_string()],
        11,
        Some(&WorkerSettings::new(common::bin())),
    )
    .unwrap();
    let failed: Vec<_> = results.iter().filter(|r| r.outcome.is_err()).collect();
    for f in &failed {
        eprintln!(
            "{} on {}: {:?}",
            f.kernel,
            f.shape.label(Op::Gemm),
            f.outcome
        );
    }
    for s in &shapes {
        assert!(
            results.iter().any(|r| r.shape == *s),
            "no config of {DET} on {}",
            s.label(Op::Gemm)
        );
    }
    println!(
        "{DET}: validated {} (config, shape) pairs; {} failed",
        results.len(),
        failed.len()
    );
    assert!(failed.is_empty(), "{} validations failed", failed.len());

    // 2. Bit-for-bit repeats on a shape with several splits: one config per SPLIT_K value.
    let shape = Shape::parse(Op::Gemm, "256x256x16384").unwrap();
    let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
    let s = &dev.stream;
    let a: Vec<f32> = (0..m * k)
        .map(|i| ((i * 7919 % 2003) as f32 - 1001.0) / 1000.0)
        .collect();
    let b: Vec<f32> = (0..k * n)
        .map(|i| ((i * 104_729 % 1999) as f32 - 999.0) / 1000.0)
        .collect();
    let da = s.clone_htod(&a).unwrap();
    let db_ = s.clone_htod(&b).unwrap();
    let mut dc = s.alloc_zeros::<f32>(m * n).unwrap();
    let poison = vec![f32::NAN; m * n];
    let det = cat.get(DET).unwrap();
    let valid = det.space.prune(shape, &dev.info.limits).unwrap().valid;
    let mut picked: Vec<Config> = Vec::new();
    for c in valid {
        if !picked
            .iter()
            .any(|p| p.params["SPLIT_K"] == c.params["SPLIT_K"])
        {
            picked.push(c);
        }
    }
    assert!(
        picked.iter().any(|c| c.params["SPLIT_K"] >= 8),
        "{picked:?}"
    );
    let twice = |family: &str, config: &Config| {
        launch_twice(&dev, &cat, family, &config.params, shape, &da, &db_)
    };
    for c in &picked {
        let (first, second) = twice(DET, c);
        assert!(first.iter().all(|v| v.is_finite()), "{}", c.params_label());
        let diff = differing(&first, &second);
        println!(
            "{DET} {}: two runs, {diff} of {} outputs differ in their bits",
            c.params_label(),
            first.len()
        );
        assert_eq!(diff, 0, "{DET} {} is not deterministic", c.params_label());
        // The atomic family with the same parameters, for comparison only.
        let (first, second) = twice(ATOMIC, c);
        println!(
            "{ATOMIC} {}: two runs, {} of {} outputs differ in their bits (informative)",
            c.params_label(),
            differing(&first, &second),
            first.len()
        );
    }

    // 3. Through the runtime: its own workspace, allocated per stream and reused.
    let nvrtc = autotune::cuda::nvrtc::nvrtc_version().unwrap();
    let gpu = dev.info.name.clone();
    let mut db = Database::new();
    db.upsert_gpu(dev.info.record(&nvrtc));
    let pick = picked
        .iter()
        .max_by_key(|c| c.params["SPLIT_K"])
        .unwrap()
        .clone();
    db.upsert(autotune::db::Entry {
        vs_cublas: 2.0,
        checksum: det.checksum.clone(),
        family: DET.to_string(),
        kernel: det.kernel_name(&pick),
        params: pick.params.clone(),
        deterministic: Some(true),
        ..common::entry(&gpu, Op::Gemm, "256x256x16384")
    });
    let tuned = autotune::Tuned::new(&dev.ctx, db)
        .unwrap()
        .quiet()
        .vendor_guard(false);
    let choice = tuned.explain(Op::Gemm, shape);
    assert_eq!(choice.family, DET, "{choice:?}");
    let mut outs = Vec::new();
    for _ in 0..3 {
        s.memcpy_htod(&poison, &mut dc).unwrap();
        tuned.gemm(s, m, n, k, &da, &db_, &mut dc).unwrap();
        outs.push(s.clone_dtoh(&dc).unwrap());
    }
    // A small shape in between (the nearest entry's kernel, or the default, on the same
    // stream's workspace), then the big one again: the runtime re-zeroes the workspace for
    // each switch.
    let (sm, sn, sk) = (33usize, 65usize, 4099usize);
    let sa = s.clone_htod(&a[..sm * sk]).unwrap();
    let sb = s.clone_htod(&b[..sk * sn]).unwrap();
    let mut sc = s.alloc_zeros::<f32>(sm * sn).unwrap();
    tuned.gemm(s, sm, sn, sk, &sa, &sb, &mut sc).unwrap();
    let small = s.clone_dtoh(&sc).unwrap();
    for i in 0..sm {
        for j in 0..sn {
            let want: f64 = (0..sk)
                .map(|p| a[i * sk + p] as f64 * b[p * sn + j] as f64)
                .sum();
            let got = small[i * sn + j] as f64;
            assert!(
                (got - want).abs() <= 1e-3 * (1.0 + want.abs()),
                "{sm}x{sn}x{sk} C[{i},{j}] = {got}, want {want}"
            );
        }
    }
    s.memcpy_htod(&poison, &mut dc).unwrap();
    tuned.gemm(s, m, n, k, &da, &db_, &mut dc).unwrap();
    outs.push(s.clone_dtoh(&dc).unwrap());
    for (i, o) in outs.iter().enumerate().skip(1) {
        assert_eq!(
            differing(&outs[0], o),
            0,
            "runtime call {} differs from the first",
            i + 1
        );
    }
    // And the runtime's result is the direct launch's, bit for bit (same kernel, same order).
    let (direct, _) = twice(DET, &pick);
    assert_eq!(differing(&outs[0], &direct), 0);
    println!(
        "runtime: {} calls of {DET} {} bit-identical",
        outs.len(),
        pick.params_label()
    );
}

/// How many of two outputs' elements differ in their bits.
fn differing(x: &[f32], y: &[f32]) -> usize {
    x.iter()
        .zip(y)
        .filter(|(p, q)| p.to_bits() != q.to_bits())
        .count()
}

/// Runs `params` of `family` on `shape` twice on one workspace (zeroed once, as the runtime
/// zeroes it), the output poisoned with NaN before each launch, and returns both outputs.
fn launch_twice(
    dev: &Device,
    cat: &Catalog,
    family: &str,
    params: &std::collections::BTreeMap<String, i64>,
    shape: Shape,
    da: &cudarc::driver::CudaSlice<f32>,
    db: &cudarc::driver::CudaSlice<f32>,
) -> (Vec<f32>, Vec<f32>) {
    use autotune::cuda::launch;
    let s = &dev.stream;
    let len = shape.m as usize * shape.n as usize;
    let poison = vec![f32::NAN; len];
    let mut out = s.alloc_zeros::<f32>(len).unwrap();
    let fam = cat.get(family).unwrap();
    let config = autotune::family::space::Config {
        family: family.to_string(),
        params: params.clone(),
    };
    let kern = fam.kernel(&config, shape, &dev.info.limits).unwrap();
    let compiled = autotune::cuda::nvrtc::compile(&kern.source, dev.info.arch).unwrap();
    let func = launch::load_function(
        &dev.ctx,
        &compiled.cubin,
        &compiled.kernel_name,
        kern.launch.dynamic_shared_bytes,
    )
    .unwrap();
    let ws_len = kern.launch.workspace_bytes.unwrap_or(0).max(16) as usize;
    let mut ws = s.alloc_zeros::<u8>(ws_len).unwrap();
    let mut run = || {
        s.memcpy_htod(&poison, &mut out).unwrap();
        let mut view = ws.as_view_mut();
        let workspace = kern.launch.workspace_bytes.map(|_| &mut view);
        launch::launch(
            s,
            &func,
            kern.launch,
            Op::Gemm,
            shape,
            &shape.tuning_call(Op::Gemm),
            da,
            db,
            &mut out.as_view_mut(),
            workspace,
        )
        .unwrap();
        s.clone_dtoh(&out).unwrap()
    };
    let first = run();
    let second = run();
    (first, second)
}

/// Every deterministic gemm family whose kernels take a workspace (split-K reduced in fixed
/// order, stream-K, the small-M family's cross-block split) gives bit-identical outputs on two
/// launches sharing one workspace, on shapes of the kinds such kernels are for (few rows,
/// partial waves, long K, odd extents): up to 8 configs per shape, spread over the space.
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
fn deterministic_families_with_a_workspace_repeat_bit_for_bit() {
    let dev = device();
    let cat = Catalog::builtin().unwrap();
    let shapes = [
        "1x8191x4097",
        "8x4096x4096",
        "13x3001x2003",
        "128x128x8192",
        "1025x1023x1021",
        "1664x1536x4096",
    ];
    let s = &dev.stream;
    let mut checked = 0;
    for label in shapes {
        let shape = Shape::parse(Op::Gemm, label).unwrap();
        let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
        let a = autotune::measure::verify::random_values(m * k, 41, 0);
        let b = autotune::measure::verify::random_values(k * n, 41, 1);
        let (da, db_) = (s.clone_htod(&a).unwrap(), s.clone_htod(&b).unwrap());
        for fam in cat.for_op(Op::Gemm).filter(|f| f.space.deterministic) {
            let with_workspace: Vec<_> = fam
                .space
                .prune(shape, &dev.info.limits)
                .unwrap()
                .valid
                .into_iter()
                .filter(|c| {
                    fam.kernel(c, shape, &dev.info.limits)
                        .is_ok_and(|k| k.launch.workspace_bytes.is_some())
                })
                .collect();
            let step = with_workspace.len().div_ceil(8).max(1);
            for c in with_workspace.iter().step_by(step) {
                let (first, second) =
                    launch_twice(&dev, &cat, fam.name(), &c.params, shape, &da, &db_);
                assert!(
                    first.iter().all(|v| v.is_finite()),
                    "{} {} on {label}: an output is not finite (unwritten?)",
                    fam.name(),
                    c.params_label()
                );
                let diff = differing(&first, &second);
                assert_eq!(
                    diff,
                    0,
                    "{} {} on {label}: {diff} outputs differ between two runs",
                    fam.name(),
                    c.params_label()
                );
                checked += 1;
            }
        }
    }
    println!("deterministic families with a workspace: {checked} (config, shape) pairs bit-identical over two runs");
    assert!(checked > 0, "no deterministic family with a workspace");
}

/// The stream-K family (`gemm_warptile_streamk`): every config of its space, with the
/// constraints that read the shape dropped, validates on edge shapes (one tile shared by fewer
/// blocks than SK_BLOCKS, K shorter than one BK iteration, ragged M and N, odd N and K) and on
/// partial-wave shapes with and without data-parallel tiles (validation launches each kernel
/// twice on one workspace, so tile counters left dirty fail). Its bit-for-bit repeats are
/// checked with every deterministic family's (`deterministic_families_with_a_workspace_...`).
#[test]
#[ignore = "needs a GPU: run with --include-ignored on a machine with one (scripts/gpu.sh)"]
fn stream_k_validates_on_every_shape() {
    const SK: &str = "gemm_warptile_streamk";
    let dev = device();
    let (_tmp, cat) = without_shape_constraints(&[SK]);
    validate_catalog(
        &dev,
        &cat,
        Op::Gemm,
        &[
            "1x1x1",
            "3x5x7",
            "2049x2047x1",
            "33x65x129",
            "130x7x1001",
            "1025x1023x1021",
            "1792x1792x1025",
            "1664x1536x4096",
            "3001x2999x517",
        ],
        &[SK.to_string()],
    );
}
