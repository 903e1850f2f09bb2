//! Coverage per form: a problem is predicted, and guarded, from a grid that serves its form
//! (same layout, beta and batch); a form no grid serves is predicted from the nearest form's
//! grid, and that prediction never launches under the guard.

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
    // TN has no grid: the plain one is a transpose away (NT two), and its gemm_general config
    // computes TN.
    let tn = Form {
        layout: Layout::Tn,
        ..Form::PLAIN
    };
    let sel = selector_for(&db, &cat(), GPU, Op::Gemm, &tn).unwrap();
    assert_eq!(sel.form(), Form::PLAIN);
    assert!(!sel.serves(&tn));
    assert_eq!((sel.usable(), sel.usable_for(&tn)), (2, 1));
    assert!(sel.rank(problem("512x2048x2048:tn")).is_none());
    let r = sel.rank_across(problem("512x2048x2048:tn")).unwrap();
    assert_eq!(r.configs.len(), 1);
    assert_eq!(
        sel.config(r.configs[0].index).unwrap().family,
        "gemm_general"
    );
}

#[test]
fn a_grid_of_another_layout_predicts_but_never_launches_under_the_guard() {
    // Only an NT grid: the plain problem is predicted from it, and the guard calls cuBLAS
    // though every NT point says our kernel is twice as fast.
    let only_nt = db(vec![nt_coverage()]);
    let c = pick(&only_nt, "512x2048x2048");
    assert_eq!(
        (c.rule, c.family.as_str()),
        (Rule::OtherForm, "gemm_general")
    );
    // Evidence that would pass the guard on a grid of the problem's own form.
    let margin = crate::product::select::GUARD_MARGIN;
    assert!(c.prediction.is_some_and(|p| p.doubt < margin), "{c:?}");
    assert!(c.vendor && !c.beats_cublas(), "{c:?}");
    assert!(c
        .describe(Op::Gemm, problem("512x2048x2048"))
        .contains("another form"));
    // Only a plain grid: the NT problem is predicted from the one config that computes NT.
    let only_plain = db(vec![plain_coverage()]);
    let c = pick(&only_plain, "512x2048x2048:nt");
    assert_eq!(
        (c.rule, c.family.as_str(), c.params["STAGES"]),
        (Rule::OtherForm, "gemm_general", 3)
    );
    assert!(c.vendor, "{c:?}");
    // Without the guard it launches: the prediction beats the nearest-shape rule's guess.
    let plain_sel = selector_for(&only_plain, &cat(), GPU, Op::Gemm, &nt()).unwrap();
    let c = lookup_with(
        &only_plain,
        &cat(),
        GPU,
        Some("sm_90"),
        Op::Gemm,
        problem("512x2048x2048:nt"),
        LookupOptions {
            vendor_guard: false,
            ..LookupOptions::default()
        },
        Some(&plain_sel),
    );
    assert_eq!((c.rule, c.vendor), (Rule::OtherForm, false), "{c:?}");
    // A grid whose portfolio computes nothing of the form is passed over: only plain
    // configs, and a TN problem falls to the default.
    let (family, params) = default_config(Op::Gemm);
    let plain_only = db(vec![coverage(Form::PLAIN, vec![cfg(&family, params)])]);
    assert!(selector_for(&plain_only, &cat(), GPU, Op::Gemm, &nt()).is_none());
    assert_eq!(pick(&plain_only, "512x2048x2048:tn").rule, Rule::Default);
}

#[test]
fn a_grid_serves_its_layout_beta_and_batch_with_alpha_free_and_padding_served_by_packed_rows() {
    let db = db(vec![plain_coverage(), nt_coverage()]);
    for s in [
        "512x2048x2048:nt:b4",
        "512x2048x2048:nt:beta",
        "512x2048x2048:tn",
        "512x2048x2048:tt:pad",
    ] {
        let c = pick(&db, s);
        assert_eq!(c.rule, Rule::OtherForm, "{s}: {c:?}");
        assert_eq!(c.family, "gemm_general", "{s}");
        assert!(c.vendor, "{s}: {c:?}");
    }
    for s in [
        "512x2048x2048:nt:pad",
        "512x2048x2048:nt:alpha",
        "512x2048x2048:nt:alpha:pad",
    ] {
        let c = pick(&db, s);
        assert_eq!(c.rule, Rule::Predicted, "{s}: {c:?}");
        assert_eq!(c.params["STAGES"], 4, "{s}");
        assert!(!c.vendor, "{s}: {c:?}");
    }
    // A plain problem with alpha or padding: the plain grid serves it with the one config of
    // its portfolio that computes it (the slower one: the guard calls cuBLAS).
    for s in ["512x2048x2048:alpha", "512x2048x2048:pad"] {
        let c = pick(&db, s);
        assert_eq!(
            (c.rule, c.family.as_str(), c.params["STAGES"]),
            (Rule::Predicted, "gemm_general", 3),
            "{s}"
        );
        assert!(c.vendor, "{s}: {c:?}");
    }
    // A padded grid serves padded problems only.
    let padded = Form {
        padded: true,
        ..nt()
    };
    let db = self::db(vec![coverage(padded, vec![general(4), general(3)])]);
    assert_eq!(pick(&db, "512x2048x2048:nt:pad").rule, Rule::Predicted);
    assert_eq!(pick(&db, "512x2048x2048:nt").rule, Rule::OtherForm);
    // A grid of the batched form predicts for that batch count.
    let b4 = Form { batch: 4, ..nt() };
    let db = self::db(vec![coverage(b4, vec![general(4), general(3)])]);
    assert_eq!(pick(&db, "512x2048x2048:nt:b4").rule, Rule::Predicted);
    assert_ne!(pick(&db, "512x2048x2048:nt").rule, Rule::Predicted);
}

#[test]
fn an_nt_problem_without_an_nt_grid_takes_a_near_entry_of_its_form_before_another_forms_grid() {
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
    // An entry farther than a factor of two: the plain grid's prediction goes first.
    let c = pick(&db, "128x2048x2048:nt");
    assert_eq!(c.rule, Rule::OtherForm, "{c:?}");
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

/// A batched NT coverage keyed by a batch of 16 whose points take the counts 2 and 64 (each
/// label names its count): the first config is twice as fast as cuBLAS at 64 and slower at 2,
/// the second the reverse.
fn batched_coverage() -> Coverage {
    let b16 = Form { batch: 16, ..nt() };
    let mut cov = coverage(b16, vec![general(4), general(3)]);
    let dims: Vec<Shape> = cov.point_shapes();
    cov.points = [2u64, 64]
        .iter()
        .flat_map(|&count| {
            dims.iter().map(move |s| {
                let cublas = s.dims().flops() * count as f64 / 40e12 * 1e3 + 0.005;
                let (fast, slow) = (0.5 * cublas, 1.2 * cublas);
                CoveragePoint {
                    shape: format!("{}:b{count}", s.dims().label(Op::Gemm)),
                    cublas_ms: cublas,
                    ms: if count == 64 {
                        vec![fast, slow]
                    } else {
                        vec![slow, fast]
                    },
                }
            })
        })
        .collect();
    cov
}

#[test]
fn a_batched_grid_serves_the_counts_it_reaches_and_interpolates_in_the_count() {
    let cov = batched_coverage();
    assert_eq!(cov.batch_counts(), 2..=64);
    let db = db(vec![nt_coverage(), cov]);
    // Near the points of 64 products the first config wins, near those of 2 the second: the
    // count is a coordinate of the prediction, and the guard has evidence of the form.
    for (s, stages) in [("512x2048x2048:nt:b48", 4), ("512x2048x2048:nt:b3", 3)] {
        let c = pick(&db, s);
        assert_eq!(c.rule, Rule::Predicted, "{s}: {c:?}");
        assert_eq!(c.params["STAGES"], stages, "{s}: {c:?}");
        assert!(!c.vendor, "{s}: {c:?}");
    }
    // Half the smallest count to twice the largest; past them, and for one product, the grid
    // serves nothing (an unbatched problem goes to the NT grid).
    for s in ["512x2048x2048:nt:b1000", "512x2048x2048:nt:b200"] {
        assert_ne!(pick(&db, s).rule, Rule::Predicted, "{s}");
    }
    assert_eq!(pick(&db, "512x2048x2048:nt:b128").rule, Rule::Predicted);
    let c = pick(&db, "512x2048x2048:nt");
    assert_eq!((c.rule, c.params["STAGES"]), (Rule::Predicted, 4), "{c:?}");
    // The points' own counts are what was measured.
    assert!(db.measured(GPU, Op::Gemm, problem("64x256x256:nt:b2")));
    assert!(db.measured(GPU, Op::Gemm, problem("64x256x256:nt:b64")));
    assert!(!db.measured(GPU, Op::Gemm, problem("64x256x256:nt:b16")));
    assert!(!db.measured(GPU, Op::Gemm, problem("64x256x256:nt:b3")));
}
