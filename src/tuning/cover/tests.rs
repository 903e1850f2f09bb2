//! Unit tests of [`super`] (`cover.rs`).

use super::*;

fn c(bm: i64) -> Config {
    Config {
        family: "f".into(),
        params: [("BM".to_string(), bm)].into(),
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
    let odd = Grid::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/configs/coverage/gemm-unaligned.toml"
    )))
    .unwrap();
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
    use crate::problem::Layout;
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
    for m in [1u64, 2, 4, 8, 16, 64, 256, 1024, 4096, 8192] {
        assert!(
            g.pool().iter().any(|s| s.m == m),
            "no pool shape with M = {m}"
        );
    }
    assert!(shapes.iter().filter(|s| s.m <= 16).count() >= shapes.len() / 3);
    // The file names its form, so --grid alone measures NT.
    let file = Grid::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/configs/coverage/gemm-nt.toml"
    )))
    .unwrap();
    assert_eq!(file.form, nt);
    // The NT file with flags for beta and a batch; another layout, and every other form but
    // the plain one, takes gemm-forms.toml's sizes in its form.
    let nt_beta_b4 = Form {
        beta: true,
        batch: 4,
        ..nt
    };
    let g = Grid::builtin_for(Op::Gemm, nt_beta_b4).unwrap();
    assert_eq!(g.shapes().len(), shapes.len());
    assert!(g.shapes().iter().all(|s| s.form == nt_beta_b4));
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
fn a_form_is_searched_and_seeded_with_the_families_that_compute_it() {
    use crate::problem::Layout;
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
    let entry = |shape: &str, family: &str, vs: f64, stages: i64| crate::db::Entry {
        family: family.into(),
        checksum: cat.get(family).unwrap().checksum.clone(),
        params: [("STAGES".to_string(), stages)].into(),
        vs_cublas: vs,
        ..crate::db::fixtures::entry(gpu, Op::Gemm, shape, 1.0)
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
