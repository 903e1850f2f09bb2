//! Unit tests of [`super`] (`cover.rs`).

use super::*;
use crate::problem::Layout;
use std::path::Path;

/// A grid file of configs/coverage/, loaded as `autotune cover --grid` loads it.
fn shipped_grid(name: &str) -> Grid {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("configs/coverage")
        .join(name);
    Grid::load(&path).unwrap()
}

fn c(bm: i64) -> Config {
    Config {
        family: "f".into(),
        params: [("BM".to_string(), bm)].into(),
    }
}

/// A current winner of `family` on `gpu` (its STAGES telling it apart), at `vs` x cuBLAS.
fn winner(
    cat: &Catalog,
    gpu: &str,
    shape: &str,
    family: &str,
    vs: f64,
    stages: i64,
) -> crate::db::Entry {
    crate::db::Entry {
        family: family.into(),
        checksum: cat.get(family).unwrap().checksum.clone(),
        params: [("STAGES".to_string(), stages)].into(),
        vs_cublas: vs,
        ..crate::db::fixtures::entry(gpu, Op::Gemm, shape, 1.0)
    }
}

#[test]
fn the_portfolio_starts_with_the_best_all_rounder_then_fills_the_gaps() {
    // Shape 0 is won by 1, shape 1 by 3; 2 is close to the best on shape 0 and better
    // than 1 on shape 1, so it comes first, and 3 closes the gap on shape 1.
    let pool = vec![
        vec![(c(1), 1.0), (c(2), 1.01), (c(3), 3.0)],
        vec![(c(1), 3.0), (c(2), 2.9), (c(3), 1.0)],
    ];
    assert_eq!(choose_portfolio(&[], &pool, 2), vec![c(2), c(3)]);
    assert_eq!(choose_portfolio(&[], &pool, 1), vec![c(2)]);
    // Seeds come first, then the greedy fills the gaps they leave.
    assert_eq!(choose_portfolio(&[c(1)], &pool, 2), vec![c(1), c(3)]);
    assert_eq!(choose_portfolio(&[c(9), c(1)], &pool, 1), vec![c(9)]);
    // Asking for more than there are gives them all, once each.
    let all = choose_portfolio(&[], &pool, 10);
    assert_eq!(all.len(), 3);
    // Failed measurements (0, NaN) are not evidence.
    let bad = vec![vec![(c(1), 0.0), (c(2), f64::NAN), (c(3), 2.0)]];
    assert_eq!(choose_portfolio(&[], &bad, 1), vec![c(3)]);
    assert!(choose_portfolio(&[], &[], 3).is_empty());
}

#[test]
fn builtin_grids_load_cap_and_thin() {
    let g = Grid::builtin(Op::Gemm).unwrap();
    let shapes = g.shapes();
    assert!(shapes.len() > 100 && shapes.len() < 400, "{}", shapes.len());
    assert!(shapes
        .iter()
        .all(|s| s.m * s.n <= g.max_output && s.m * s.n * s.k <= g.max_macs));
    let pool = g.pool();
    assert!(!pool.is_empty() && pool.len() <= shapes.len().div_ceil(2));
    // The pool spans every scale of M.
    for m in &g.m {
        assert!(pool.iter().any(|s| s.m == *m), "no pool shape with M = {m}");
    }
    assert!(pool.iter().all(|s| shapes.contains(s)));
    let odd = shipped_grid("gemm-unaligned.toml");
    assert!(odd
        .shapes()
        .iter()
        .all(|s| s.n % 2 == 1 && s.k % 2 == 1 && !shapes.contains(s)));
    let v = Grid::builtin(Op::Gemv).unwrap();
    assert!(v.shapes().iter().all(|s| s.n == 1));
    assert!(!v.pool().is_empty());
}

#[test]
fn the_nt_grid_is_the_layer_call_and_each_form_gets_its_grid() {
    let nt = Form {
        layout: Layout::Nt,
        ..Form::PLAIN
    };
    let g = Grid::builtin_for(Op::Gemm, nt).unwrap();
    let shapes = g.shapes();
    // No more points than the plain grid: about the same GPU time.
    let plain = Grid::builtin(Op::Gemm).unwrap().shapes().len();
    assert!(
        shapes.len() > 100 && shapes.len() <= plain,
        "{}",
        shapes.len()
    );
    assert!(shapes.iter().all(|s| s.form == nt));
    assert!(shapes
        .iter()
        .all(|s| s.m * s.n <= g.max_output && s.m * s.n * s.k <= g.max_macs));
    // Decode-sized M (1 to 16) on many widths, and every M in the pool.
    for m in [1u64, 2, 3, 4, 6, 8, 12, 16, 32, 64, 256, 1024, 4096, 8192] {
        assert!(
            g.pool().iter().any(|s| s.m == m),
            "no pool shape with M = {m}"
        );
    }
    assert!(shapes.iter().filter(|s| s.m <= 16).count() >= shapes.len() / 3);
    // The file names its form, so --grid alone measures NT.
    let file = shipped_grid("gemm-nt.toml");
    assert_eq!(file.form, nt);
    // Few tokens between the NT grid's widths: every new (N, K) pair has a width of 3 x 4^i.
    let between = shipped_grid("gemm-nt-between.toml");
    let fresh: Vec<Shape> = between
        .shapes()
        .into_iter()
        .filter(|s| !shapes.contains(s))
        .collect();
    assert!(fresh.len() >= 100, "{}", fresh.len());
    let third = |d: u64| [768u64, 3072, 12288].contains(&d);
    assert!(fresh
        .iter()
        .all(|s| s.form == nt && s.m <= 16 && (third(s.n) || third(s.k))));
    // The row counts between powers of two at those widths: new points only off both files.
    let between_m = shipped_grid("gemm-nt-between-m.toml");
    assert_eq!(between_m.form, nt);
    let fresh_m: Vec<Shape> = between_m
        .shapes()
        .into_iter()
        .filter(|s| !shapes.contains(s) && !fresh.contains(s))
        .collect();
    assert_eq!(
        fresh_m.len(),
        3 * (36 - 9),
        "every width pair but the powers of four"
    );
    assert!(fresh_m
        .iter()
        .all(|s| [3, 6, 12].contains(&s.m) && (third(s.n) || third(s.k))));
    // The NT file with a flag for beta; a batched form takes gemm-batched.toml's counts;
    // another layout, and every other form but the plain one, takes gemm-forms.toml's sizes
    // in its form.
    let nt_beta = Form { beta: true, ..nt };
    let g = Grid::builtin_for(Op::Gemm, nt_beta).unwrap();
    assert_eq!(g.shapes().len(), shapes.len());
    assert!(g.shapes().iter().all(|s| s.form == nt_beta));
    let nt_beta_b4 = Form {
        batch: 4,
        ..nt_beta
    };
    let g = Grid::builtin_for(Op::Gemm, nt_beta_b4).unwrap();
    assert_eq!(g.form, nt_beta_b4);
    assert!(!g.batches.is_empty());
    assert!(g.shapes().iter().all(|s| s.form
        == Form {
            batch: s.form.batch,
            ..nt_beta
        }
        && s.form.batch > 1));
    let tn = Form {
        layout: Layout::Tn,
        ..Form::PLAIN
    };
    let g = Grid::builtin_for(Op::Gemm, tn).unwrap();
    let forms = g.shapes().len();
    assert!(g.shapes().iter().all(|s| s.form == tn));
    assert!((80..plain / 2).contains(&forms), "{forms} of {plain}");
    for other in [
        Form {
            scaled: true,
            ..Form::PLAIN
        },
        Form {
            layout: Layout::Tt,
            beta: true,
            ..Form::PLAIN
        },
    ] {
        let g = Grid::builtin_for(Op::Gemm, other).unwrap();
        assert_eq!(g.shapes().len(), forms);
        assert!(g.shapes().iter().all(|s| s.form == other));
    }
    assert_eq!(
        Grid::builtin_for(Op::Gemm, Form::PLAIN).unwrap(),
        Grid::builtin(Op::Gemm).unwrap()
    );
    let gemv_t = Grid::builtin_for(Op::Gemv, tn).unwrap();
    assert!(gemv_t.shapes().iter().all(|s| s.form == tn && s.n == 1));
    assert!(Grid::builtin_for(Op::Gemv, nt).is_err());
}

#[test]
fn the_forms_grid_between_adds_shapes_between_every_size_of_the_forms_grid() {
    let forms = shipped_grid("gemm-forms.toml");
    let between = shipped_grid("gemm-forms-between.toml");
    // No form of its own: `cover --extend` with the form's flags measures it in that form.
    assert_eq!(between.form, Form::PLAIN);
    assert_eq!(
        (between.max_macs, between.max_output),
        (forms.max_macs, forms.max_output)
    );
    // Each size lies strictly between two neighbouring sizes of the 8x grid, and each gap of
    // the 8x grid gets one.
    let inside = |sizes: &[u64], of: &[u64]| {
        sizes
            .iter()
            .all(|d| of.windows(2).any(|w| w[0] < *d && *d < w[1]))
            && of
                .windows(2)
                .all(|w| sizes.iter().any(|d| w[0] < *d && *d < w[1]))
    };
    assert!(inside(&between.m, &forms.m), "{:?}", between.m);
    assert!(inside(&between.n, &forms.n), "{:?}", between.n);
    assert!(inside(&between.k, &forms.k), "{:?}", between.k);
    let old = forms.shapes();
    let new = between.shapes();
    assert!(new.len() >= 50, "{}", new.len());
    assert!(new.iter().all(|s| !old.contains(s)));
    // Rows of both alignments (16-byte multiples or not), as the guard needs evidence of each.
    assert!(new.iter().any(|s| s.n % 4 == 0 && s.k % 4 == 0));
    assert!(new.iter().any(|s| s.n % 4 != 0 || s.k % 4 != 0));
}

#[test]
fn a_form_is_searched_and_seeded_with_the_families_that_compute_it() {
    let cat = Catalog::builtin().unwrap();
    let nt = Form {
        layout: Layout::Nt,
        ..Form::PLAIN
    };
    let full = families_for(&cat, Op::Gemm, &nt, &[]).unwrap();
    assert!(full.contains(&"gemm_general".to_string()));
    assert!(full
        .iter()
        .all(|f| cat.get(f).unwrap().space.interface.computes(&nt)));
    let all = families_for(&cat, Op::Gemm, &Form::PLAIN, &[]).unwrap();
    assert!(all.len() > full.len() && all.contains(&"gemm_tile2d".to_string()));
    let err = families_for(&cat, Op::Gemm, &nt, &["gemm_tile2d".into()])
        .unwrap_err()
        .to_string();
    assert!(err.contains("gemm_tile2d") && err.contains("nt"), "{err}");
    // Seeds: current winners of families that compute the form, the form's own first.
    let mut db = crate::db::Database::new();
    let gpu = "NVIDIA Test GPU";
    let entry = |shape: &str, family: &str, vs: f64, stages: i64| {
        winner(&cat, gpu, shape, family, vs, stages)
    };
    db.upsert(entry("512x512x512", "gemm_tile2d", 2.0, 1));
    db.upsert(entry("512x512x512:tn", "gemm_general", 1.5, 2));
    db.upsert(entry("256x256x256:nt", "gemm_general", 1.1, 3));
    let stages =
        |seeds: Vec<Config>| -> Vec<i64> { seeds.iter().map(|c| c.params["STAGES"]).collect() };
    assert_eq!(
        stages(portfolio_seeds(&db, &cat, gpu, Op::Gemm, &nt, 5)),
        vec![3, 2]
    );
    assert_eq!(
        stages(portfolio_seeds(&db, &cat, gpu, Op::Gemm, &nt, 1)),
        vec![3]
    );
    assert_eq!(
        stages(portfolio_seeds(&db, &cat, gpu, Op::Gemm, &Form::PLAIN, 5)),
        vec![1, 2, 3]
    );
}

#[test]
fn bad_grids_are_refused_with_the_reason() {
    let base = "op = \"gemm\"\nm = [1, 4]\nn = [1]\nk = [8]\nmax_macs = 1000\npool_every = 1\n";
    assert!(Grid::from_toml_str(base, "g").is_ok());
    for (from, to, want) in [
        ("m = [1, 4]", "m = []", "`m` needs"),
        ("k = [8]", "k = [0]", "`k` needs"),
        ("pool_every = 1", "pool_every = 0", "pool_every"),
        ("max_macs = 1000", "max_macs = 1", "no shape"),
        ("pool_every = 1", "pool_every = 1\ntypo = 2", "typo"),
        (
            "pool_every = 1",
            "pool_every = 1\nform = { batch = 0 }",
            "batch",
        ),
        (
            "pool_every = 1",
            "pool_every = 1\nform = { layout = \"xy\" }",
            "xy",
        ),
    ] {
        let err = Grid::from_toml_str(&base.replace(from, to), "g.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains(want) && err.contains("g.toml"), "{err}");
    }
    let gemv = "op = \"gemv\"\nm = [4]\nn = [2]\nk = [8]\nmax_macs = 1000\npool_every = 1\n";
    assert!(Grid::from_toml_str(gemv, "v").is_err());
    let gemv_nt = "op = \"gemv\"\nform = { layout = \"nt\" }\nm = [4]\nk = [8]\nmax_macs = 1000\npool_every = 1\n";
    let err = Grid::from_toml_str(gemv_nt, "v").unwrap_err().to_string();
    assert!(err.contains("gemv has no layout nt"), "{err}");
}

fn coverage_of(gpu: &str, configs: &[Config], points: &[(&str, f64, &[f64])]) -> Coverage {
    Coverage {
        gpu: gpu.into(),
        op: Op::Gemm,
        form: Form::PLAIN,
        date: "2026-01-01T00:00:00Z".into(),
        tool_version: "0".into(),
        seed: 1,
        produced_by: None,
        configs: configs
            .iter()
            .map(|c| CoverageConfig {
                family: c.family.clone(),
                params: c.params.clone(),
                checksum: "x".into(),
            })
            .collect(),
        points: points
            .iter()
            .map(|(shape, cublas_ms, ms)| CoveragePoint {
                shape: shape.to_string(),
                cublas_ms: *cublas_ms,
                ms: ms.to_vec(),
            })
            .collect(),
    }
}

#[test]
fn widening_appends_each_new_config_at_its_ratio_to_the_cublas_of_its_own_run() {
    let base = coverage_of(
        "G",
        &[c(1), c(2)],
        &[
            ("64x64x64", 1.0, &[2.0, 0.0]),
            ("256x256x256", 4.0, &[3.0, 5.0]),
        ],
    );
    // Measured in another process: cuBLAS 2% slower at the first point, 1% faster at the
    // second; c(2) is measured again (it stays as it was), c(3) failed at the second point.
    let added = coverage_of(
        "G",
        &[c(2), c(3), c(4)],
        &[
            ("256x256x256", 3.96, &[5.0, 0.0, 1.98]),
            ("64x64x64", 1.02, &[9.0, 0.51, 2.04]),
        ],
    );
    let out = append_configs(&base, &added);
    assert_eq!(out.configs.len(), 4);
    assert_eq!(out.configs[2].params["BM"], 3);
    assert_eq!(out.configs[3].params["BM"], 4);
    let near = |a: f64, b: f64| (a - b).abs() < 1e-12;
    let p = &out.points[0];
    assert_eq!(p.shape, "64x64x64");
    assert_eq!(&p.ms[..2], &[2.0, 0.0]);
    assert!(near(p.ms[2], 0.5) && near(p.ms[3], 2.0), "{:?}", p.ms);
    let q = &out.points[1];
    assert_eq!(q.cublas_ms, 4.0);
    assert_eq!(q.ms[2], 0.0);
    assert!(near(q.ms[3], 2.0), "{:?}", q.ms);
    // A point the new run lacks records the new configs as failed there; the record stays
    // whole (one time per config everywhere).
    let partial = coverage_of("G", &[c(3)], &[("64x64x64", 1.0, &[0.5])]);
    let out = append_configs(&base, &partial);
    assert_eq!(out.points[1].ms, vec![3.0, 5.0, 0.0]);
    assert!(out.points.iter().all(|p| p.ms.len() == out.configs.len()));
    // Nothing new: the record is unchanged but for its date.
    let same = append_configs(
        &base,
        &coverage_of("G", &[c(1)], &[("64x64x64", 1.0, &[1.0])]),
    );
    assert_eq!(same.configs, base.configs);
    assert_eq!(same.points, base.points);
}

#[test]
fn a_widened_record_is_dated_when_it_was_widened() {
    // A merge keeps the newer of two records of one grid: the widened one must be newer than
    // the record it widened, or a merge may bring back the narrower one.
    let cat = Catalog::builtin().unwrap();
    let base = coverage_of("G", &[c(1)], &[("64x64x64", 1.0, &[2.0])]);
    let fresh = super::widen::widening_record(&cat, &base, &[c(2)]);
    assert!(
        fresh.date > base.date,
        "{} not after {}",
        fresh.date,
        base.date
    );
    assert_eq!(fresh.tool_version, env!("CARGO_PKG_VERSION"));
    assert!(fresh.points.is_empty());
    assert_eq!(fresh.configs.len(), 1);
    assert_eq!(fresh.configs[0].params["BM"], 2);
    let widened = append_configs(&base, &fresh);
    assert_eq!(widened.date, fresh.date);
}

#[test]
fn the_winners_a_coverage_lacks_are_added_fastest_first() {
    let cat = Catalog::builtin().unwrap();
    let gpu = "NVIDIA Test GPU";
    let mut db = crate::db::Database::new();
    let entry = |shape: &str, family: &str, vs: f64, stages: i64| {
        winner(&cat, gpu, shape, family, vs, stages)
    };
    db.upsert(entry("512x512x512", "gemm_tile2d", 2.0, 1));
    db.upsert(entry("1024x1024x1024", "gemm_general", 1.5, 2));
    db.upsert(entry("2048x2048x2048", "gemm_general", 1.7, 3));
    db.upsert(entry("4096x4096x4096", "gemm_general", 1.2, 4));
    let cfg = |family: &str, stages: i64| Config {
        family: family.into(),
        params: [("STAGES".to_string(), stages)].into(),
    };
    let base = coverage_of(gpu, &[cfg("gemm_general", 3)], &[("64x64x64", 1.0, &[1.0])]);
    let stages =
        |add: Vec<Config>| -> Vec<i64> { add.iter().map(|c| c.params["STAGES"]).collect() };
    assert_eq!(
        stages(winners_to_add(&db, &cat, &base, &[], 10)),
        vec![1, 2, 4]
    );
    assert_eq!(stages(winners_to_add(&db, &cat, &base, &[], 1)), vec![1]);
    assert_eq!(
        stages(winners_to_add(
            &db,
            &cat,
            &base,
            &["gemm_general".into()],
            10
        )),
        vec![2, 4]
    );
    // Another GPU's winners are not this coverage's.
    let other = coverage_of("NVIDIA Other", &[], &[("64x64x64", 1.0, &[])]);
    assert!(winners_to_add(&db, &cat, &other, &[], 10).is_empty());
}

#[test]
fn winners_the_runtime_never_predicts_untuned_are_not_added() {
    // gemm_tf32x3_wgmma_pipe serves untuned shapes with chains of one K tile only: its
    // faster winner with chains of 4 would be timed on every grid point for nothing.
    let cat = Catalog::builtin().unwrap();
    let gpu = "NVIDIA Test GPU";
    let mut db = crate::db::Database::new();
    db.upsert_gpu(crate::db::fixtures::gpu(gpu));
    let pipe = |shape: &str, chain: i64, vs: f64| crate::db::Entry {
        family: "gemm_tf32x3_wgmma_pipe".into(),
        checksum: cat.get("gemm_tf32x3_wgmma_pipe").unwrap().checksum.clone(),
        params: crate::db::fixtures::pipe_params(chain),
        vs_cublas: vs,
        ..crate::db::fixtures::entry(gpu, Op::Gemm, shape, 1.0)
    };
    db.upsert(pipe("2048x2048x2048", 4, 2.0));
    db.upsert(pipe("4096x4096x4096", 1, 1.5));
    let base = coverage_of(gpu, &[], &[("1024x1024x1024", 1.0, &[])]);
    let chains: Vec<i64> = winners_to_add(&db, &cat, &base, &[], 10)
        .iter()
        .map(|c| c.params["CHAIN"])
        .collect();
    assert_eq!(chains, vec![1]);
}

#[test]
fn winners_split_wholly_by_truncation_are_not_added() {
    // gemm_tf32x3_wgmma_trunc serves untuned shapes with TRUNC 1 (and chains of one K tile)
    // only: its faster TRUNC 2 winner keeps to the shape it was validated on.
    let cat = Catalog::builtin().unwrap();
    let gpu = "NVIDIA Test GPU";
    let family = "gemm_tf32x3_wgmma_trunc";
    let mut db = crate::db::Database::new();
    db.upsert_gpu(crate::db::fixtures::gpu(gpu));
    let trunc = |shape: &str, trunc: i64, vs: f64| {
        let mut params = crate::db::fixtures::pipe_params(1);
        params.extend([("SMALL_FIRST".to_string(), 1), ("TRUNC".to_string(), trunc)]);
        crate::db::Entry {
            family: family.into(),
            checksum: cat.get(family).unwrap().checksum.clone(),
            params,
            vs_cublas: vs,
            ..crate::db::fixtures::entry(gpu, Op::Gemm, shape, 1.0)
        }
    };
    db.upsert(trunc("2048x2048x2048", 2, 2.0));
    db.upsert(trunc("4096x4096x4096", 1, 1.5));
    let base = coverage_of(gpu, &[], &[("1024x1024x1024", 1.0, &[])]);
    let truncs: Vec<i64> = winners_to_add(&db, &cat, &base, &[], 10)
        .iter()
        .map(|c| c.params["TRUNC"])
        .collect();
    assert_eq!(truncs, vec![1]);
}

#[test]
fn another_gpus_portfolio_is_taken_current_configs_only_or_refused_with_what_there_is() {
    let cat = Catalog::builtin().unwrap();
    let fresh = |stages: i64| Config {
        family: "gemm_general".into(),
        params: [("STAGES".to_string(), stages)].into(),
    };
    let mut cov = coverage_of("A", &[fresh(2), fresh(3), fresh(4)], &[]);
    cov.configs[0].checksum = cat.get("gemm_general").unwrap().checksum.clone();
    cov.configs[2].checksum = cov.configs[0].checksum.clone();
    let db = crate::db::Database {
        coverage: vec![cov],
        ..Default::default()
    };
    // The config whose family changed since it was measured is left out.
    let got = portfolio_of(&db, &cat, "A", Op::Gemm, &Form::PLAIN).unwrap();
    assert_eq!(got, vec![fresh(2), fresh(4)]);
    // Another form, another GPU: refused, naming what the database has.
    let nt = Form {
        layout: Layout::Nt,
        ..Form::PLAIN
    };
    let err = portfolio_of(&db, &cat, "A", Op::Gemm, &nt)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no gemm coverage of the nt form"), "{err}");
    assert!(err.contains("the database has: "), "{err}");
    let err = portfolio_of(&db, &cat, "B", Op::Gemm, &Form::PLAIN)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("B has no gemm coverage"), "{err}");
    // Every config stale: refused, not an empty portfolio.
    let stale = crate::db::Database {
        coverage: vec![coverage_of("A", &[fresh(2)], &[])],
        ..Default::default()
    };
    let err = portfolio_of(&stale, &cat, "A", Op::Gemm, &Form::PLAIN)
        .unwrap_err()
        .to_string();
    assert!(err.contains("all of families changed since"), "{err}");
}

#[test]
fn a_batched_grid_measures_each_count_and_labels_the_points_with_theirs() {
    let tt16 = Form {
        layout: Layout::Tt,
        batch: 16,
        ..Form::PLAIN
    };
    let g = Grid::builtin_for(Op::Gemm, tt16).unwrap();
    let shapes = g.shapes();
    let counts: std::collections::BTreeSet<u64> = shapes.iter().map(|s| s.form.batch).collect();
    assert_eq!(counts, g.batches.iter().copied().collect());
    assert!(counts.len() >= 3 && !counts.contains(&1), "{counts:?}");
    assert!(shapes.len() >= 80, "{}", shapes.len());
    for s in &shapes {
        assert_eq!(
            Form {
                batch: 16,
                ..s.form
            },
            tt16,
            "{s:?}"
        );
        assert!(s.dims().flops() / 2.0 * s.form.batch as f64 <= g.max_macs as f64);
        assert!(s.m * s.n * s.form.batch <= g.max_output, "{s:?}");
        assert!(s.lens(Op::Gemm).iter().all(|&e| e <= 1 << 28), "{s:?}");
    }
    // A face-centred lattice over the four axes: about half the product of the axes.
    let full = g.batches.len() * g.m.len() * g.n.len() * g.k.len();
    assert!(shapes.len() <= full / 2, "{} of {full}", shapes.len());
    // Points of another count than the record's name theirs; the record's own count is implied.
    let b2 = Shape::mnk(4, 5, 16).with_form(Form { batch: 2, ..tt16 });
    assert_eq!(point_label(Op::Gemm, &tt16, b2), "4x5x16:b2");
    let b16 = Shape::mnk(4, 5, 16).with_form(tt16);
    assert_eq!(point_label(Op::Gemm, &tt16, b16), "4x5x16");
    // Counts of one product, or on a grid of one product, are refused.
    let base = "op = \"gemm\"\nm = [1, 4]\nn = [1]\nk = [8]\nmax_macs = 1000\npool_every = 1\n";
    for extra in [
        "form = { batch = 4 }\nbatches = [1, 4]\n",
        "batches = [4, 8]\n",
    ] {
        let err = Grid::from_toml_str(&format!("{base}{extra}"), "b.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`batches`") && err.contains("b.toml"), "{err}");
    }
    let ok = Grid::from_toml_str(
        &format!("{base}form = {{ batch = 4 }}\nbatches = [2, 8]\n"),
        "b",
    )
    .unwrap();
    assert_eq!(ok.shapes().len(), 4);
}

#[test]
fn a_batched_form_takes_the_unbatched_portfolio_configs_that_compute_batches() {
    let cat = Catalog::builtin().unwrap();
    let current = |family: &str, c: Config| CoverageConfig {
        checksum: cat.get(family).unwrap().checksum.clone(),
        family: family.into(),
        params: c.params,
    };
    let general = Config {
        family: "gemm_general".into(),
        params: [("STAGES".to_string(), 3)].into(),
    };
    let (plain_family, plain_params) = crate::product::lookup::default_config(Op::Gemm);
    let plain = Config {
        family: plain_family.clone(),
        params: plain_params,
    };
    assert!(!cat
        .get(&plain_family)
        .unwrap()
        .space
        .interface
        .computes(&Form {
            batch: 16,
            ..Form::PLAIN
        }));
    let mut cov = coverage_of("A", &[], &[]);
    cov.configs = vec![
        current(&plain_family, plain),
        current("gemm_general", general.clone()),
    ];
    let db = crate::db::Database {
        coverage: vec![cov],
        ..Default::default()
    };
    let b16 = Form {
        batch: 16,
        ..Form::PLAIN
    };
    assert_eq!(
        portfolio_of(&db, &cat, "A", Op::Gemm, &b16).unwrap(),
        vec![general.clone()]
    );
    // Of the records of its layout and beta, the one with the most configs that compute it:
    // here the scaled one.
    let mut scaled = coverage_of("A", &[], &[]);
    scaled.form.scaled = true;
    let stages4 = Config {
        family: "gemm_general".into(),
        params: [("STAGES".to_string(), 4)].into(),
    };
    scaled.configs = vec![
        current("gemm_general", stages4.clone()),
        current("gemm_general", general.clone()),
    ];
    let mut db = db;
    db.coverage.push(scaled);
    assert_eq!(
        portfolio_of(&db, &cat, "A", Op::Gemm, &b16).unwrap(),
        vec![stages4, general]
    );
    // Another layout batched has no unbatched record to take from.
    let tt16 = Form {
        layout: Layout::Tt,
        ..b16
    };
    assert!(portfolio_of(&db, &cat, "A", Op::Gemm, &tt16).is_err());
}
