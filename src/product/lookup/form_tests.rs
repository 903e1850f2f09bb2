//! Coverage per form: a problem is predicted only from the grid measured on its own form.

use super::tests::{entry, gpu};
use super::*;
use crate::db::{Coverage, CoverageConfig, CoveragePoint};
use crate::problem::{Form, Layout};

const GPU: &str = "H100";

fn cat() -> Catalog {
    Catalog::builtin().unwrap()
}

fn cfg(family: &str, params: BTreeMap<String, i64>) -> CoverageConfig {
    CoverageConfig {
        checksum: cat().get(family).unwrap().checksum.clone(),
        family: family.into(),
        params,
    }
}

/// A coverage of `form` on a small grid (M, N, K in 64..4096), its first config twice as fast
/// as cuBLAS everywhere and its second slower than cuBLAS: `configs` are of families that
/// compute the form.
fn coverage(form: Form, configs: Vec<CoverageConfig>) -> Coverage {
    let mut points = Vec::new();
    for m in [64u64, 256, 1024, 4096] {
        for n in [256u64, 1024, 4096] {
            for k in [256u64, 1024, 4096] {
                let s = Shape::mnk(m, n, k);
                let cublas = s.flops() * form.batch as f64 / 40e12 * 1e3 + 0.005;
                points.push(CoveragePoint {
                    shape: s.label(Op::Gemm),
                    cublas_ms: cublas,
                    ms: vec![0.5 * cublas, 1.2 * cublas],
                });
            }
        }
    }
    Coverage {
        gpu: GPU.into(),
        op: Op::Gemm,
        form,
        date: "2026-11-23T00:00:00Z".into(),
        tool_version: "0".into(),
        seed: 1,
        produced_by: None,
        configs,
        points,
    }
}

fn general(stages: i64) -> CoverageConfig {
    let nt = Shape::mnk(1, 1, 1).with_form(nt());
    let (family, mut params) = default_config_for(Op::Gemm, nt);
    params.insert("STAGES".into(), stages);
    cfg(&family, params)
}

fn nt() -> Form {
    Form {
        layout: Layout::Nt,
        ..Form::PLAIN
    }
}

/// The plain grid's portfolio: the plain default (gemm_tile2d) first.
fn plain_coverage() -> Coverage {
    let (family, params) = default_config(Op::Gemm);
    coverage(Form::PLAIN, vec![cfg(&family, params), general(3)])
}

/// The NT grid's portfolio: gemm_general with 4 stages first (never a default).
fn nt_coverage() -> Coverage {
    coverage(nt(), vec![general(4), general(3)])
}

fn db(covs: Vec<Coverage>) -> Database {
    let mut db = Database::new();
    db.upsert_gpu(gpu(GPU, "sm_90"));
    for c in covs {
        db.upsert_coverage(c);
    }
    db
}

fn problem(s: &str) -> Shape {
    Shape::parse(Op::Gemm, s).unwrap()
}

fn pick(db: &Database, s: &str) -> Choice {
    lookup(db, &cat(), GPU, Some("sm_90"), Op::Gemm, problem(s))
}

#[test]
fn an_nt_problem_is_predicted_from_the_nt_grid_and_a_plain_one_from_the_plain_grid() {
    let db = db(vec![plain_coverage(), nt_coverage()]);
    let c = pick(&db, "512x2048x2048:nt");
    assert_eq!(c.rule, Rule::Predicted, "{c:?}");
    assert_eq!(
        (c.family.as_str(), c.params["STAGES"]),
        ("gemm_general", 4),
        "{c:?}"
    );
    assert_eq!(c.prediction.unwrap().index, 0);
    // Our kernel is predicted twice as fast as cuBLAS on every neighbour: it launches.
    assert!(!c.vendor, "{c:?}");
    assert!(c
        .describe(Op::Gemm, problem("512x2048x2048:nt"))
        .contains("predicted"));
    let c = pick(&db, "512x2048x2048");
    assert_eq!(
        (c.rule, c.family.as_str()),
        (Rule::Predicted, "gemm_tile2d")
    );
    // The selector of each form is found by the form.
    let sel = selector_for(&db, &cat(), GPU, Op::Gemm, &nt()).unwrap();
    assert_eq!((sel.form(), sel.points()), (nt(), 36));
    assert!(sel.rank(problem("512x2048x2048:nt")).is_some());
    assert!(sel.rank(problem("512x2048x2048")).is_none());
    assert!(selector_for(&db, &cat(), GPU, Op::Gemm, &Form::PLAIN).is_some());
    let tn = Form {
        layout: Layout::Tn,
        ..Form::PLAIN
    };
    assert!(selector_for(&db, &cat(), GPU, Op::Gemm, &tn).is_none());
}

#[test]
fn a_plain_problem_never_uses_an_nt_grid_nor_the_reverse() {
    // Only an NT grid: the plain problem falls to the later rules.
    let only_nt = db(vec![nt_coverage()]);
    let c = pick(&only_nt, "512x2048x2048");
    assert_eq!(c.rule, Rule::Default, "{c:?}");
    assert!(c.prediction.is_none());
    // Only a plain grid: the NT problem too.
    let only_plain = db(vec![plain_coverage()]);
    let c = pick(&only_plain, "512x2048x2048:nt");
    assert_eq!((c.rule, c.family.as_str()), (Rule::Default, "gemm_general"));
    // A selector of another form handed to the lookup is not used.
    let plain_sel = selector_for(&only_plain, &cat(), GPU, Op::Gemm, &Form::PLAIN).unwrap();
    let c = lookup_with(
        &only_plain,
        &cat(),
        GPU,
        Some("sm_90"),
        Op::Gemm,
        problem("512x2048x2048:nt"),
        LookupOptions::default(),
        Some(&plain_sel),
    );
    assert_eq!(c.rule, Rule::Default, "{c:?}");
}

#[test]
fn a_grid_serves_its_exact_form_only_batch_beta_and_padding_included() {
    let db = db(vec![plain_coverage(), nt_coverage()]);
    for s in [
        "512x2048x2048:nt:b4",
        "512x2048x2048:nt:beta",
        "512x2048x2048:nt:pad",
        "512x2048x2048:nt:alpha",
        "512x2048x2048:tn",
    ] {
        let c = pick(&db, s);
        assert_ne!(c.rule, Rule::Predicted, "{s}: {c:?}");
        assert_eq!(c.family, "gemm_general", "{s}");
    }
    // A grid of the batched form predicts for that batch count.
    let b4 = Form { batch: 4, ..nt() };
    let db = self::db(vec![coverage(b4, vec![general(4), general(3)])]);
    assert_eq!(pick(&db, "512x2048x2048:nt:b4").rule, Rule::Predicted);
    assert_ne!(pick(&db, "512x2048x2048:nt").rule, Rule::Predicted);
}

#[test]
fn an_nt_problem_without_an_nt_grid_falls_back_to_the_nearest_entry() {
    let mut db = db(vec![plain_coverage()]);
    // A gemm_general entry of this GPU for an NT problem twice the size.
    let mut e = entry(GPU, Op::Gemm, "1024x2048x2048:nt", 0, 1.2);
    let (family, params) = default_config_for(Op::Gemm, e.shape());
    e.checksum = cat().get(&family).unwrap().checksum.clone();
    e.family = family;
    e.params = params;
    db.upsert(e);
    let c = pick(&db, "512x2048x2048:nt");
    assert_eq!((c.rule, c.family.as_str()), (Rule::Nearest, "gemm_general"));
    assert!(c.prediction.is_none());
    // The plain problem still has its grid.
    assert_eq!(pick(&db, "512x2048x2048").rule, Rule::Predicted);
    // With the coverage rule off, the NT grid is not used either.
    let db = self::db(vec![nt_coverage()]);
    let sel = selector_for(&db, &cat(), GPU, Op::Gemm, &nt());
    let c = lookup_with(
        &db,
        &cat(),
        GPU,
        Some("sm_90"),
        Op::Gemm,
        problem("512x2048x2048:nt"),
        LookupOptions::nearest_only(),
        sel.as_ref(),
    );
    assert_eq!(c.rule, Rule::Default);
}
