//! Unit tests of the selector: prediction, the guard, leave-one-out.

use super::*;
use crate::db::{CoveragePoint, GpuRecord};

fn h100() -> GpuRecord {
    GpuRecord {
        copy_bandwidth_gbs: Some(3000.0),
        ..crate::db::fixtures::gpu("NVIDIA H100 80GB HBM3")
    }
}

fn cfg(cat: &Catalog, family: &str, params: &[(&str, i64)]) -> CoverageConfig {
    CoverageConfig {
        family: family.into(),
        params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        checksum: cat.get(family).unwrap().checksum.clone(),
    }
}

/// Two configs: a big tile that wins on big shapes, a small one that wins on small
/// shapes; times made from the model itself times a per-config factor, so the residuals
/// are constant and the prediction must be exact.
fn coverage(cat: &Catalog) -> (Coverage, Selector) {
    let configs = vec![
        cfg(
            cat,
            "gemm_tile2d",
            &[
                ("BM", 128),
                ("BN", 128),
                ("BK", 16),
                ("TM", 8),
                ("TN", 8),
                ("PREFETCH", 1),
            ],
        ),
        cfg(
            cat,
            "gemm_tile2d",
            &[
                ("BM", 32),
                ("BN", 32),
                ("BK", 16),
                ("TM", 2),
                ("TN", 2),
                ("PREFETCH", 1),
            ],
        ),
    ];
    let mut cov = Coverage {
        gpu: h100().name,
        op: Op::Gemm,
        form: crate::problem::Form::PLAIN,
        date: "2026-11-23T00:00:00Z".into(),
        tool_version: "0".into(),
        seed: 1,
        produced_by: None,
        configs,
        points: Vec::new(),
    };
    let probe = Selector::new(&cov, &h100(), cat).unwrap();
    for m in [16u64, 64, 256, 1024, 4096] {
        for k in [16u64, 256, 4096] {
            let shape = Shape::mnk(m, m, k);
            let ms: Vec<f64> = (0..2)
                .map(|i| probe.basis(i, shape).unwrap() * if i == 0 { 1.1 } else { 0.9 })
                .collect();
            cov.points.push(CoveragePoint {
                shape: shape.label(Op::Gemm),
                cublas_ms: 1.05 * roofline_ms(Op::Gemm, shape, &probe.machine),
                ms,
            });
        }
    }
    let sel = Selector::new(&cov, &h100(), cat).unwrap();
    (cov, sel)
}

#[test]
fn configs_a_family_keeps_from_untuned_shapes_are_never_predicted() {
    // Two configs of gemm_tf32x3_wgmma_pipe, whose space serves shapes nobody tuned with
    // chains of one K tile only: the chain of 4 is twice as fast at every grid point and
    // is still neither ranked nor chosen, by the guard or without it.
    let cat = Catalog::builtin().unwrap();
    let pipe = |chain| CoverageConfig {
        family: "gemm_tf32x3_wgmma_pipe".into(),
        params: crate::db::fixtures::pipe_params(chain),
        checksum: cat.get("gemm_tf32x3_wgmma_pipe").unwrap().checksum.clone(),
    };
    let mut cov = Coverage {
        gpu: h100().name,
        op: Op::Gemm,
        form: crate::problem::Form::PLAIN,
        date: "2026-11-28T00:00:00Z".into(),
        tool_version: "0".into(),
        seed: 1,
        produced_by: None,
        configs: vec![pipe(1), pipe(4)],
        points: Vec::new(),
    };
    for m in [1024u64, 2048, 4096] {
        for k in [1024u64, 4096] {
            let shape = Shape::mnk(m, m, k);
            let t = 2.0 * (m * m * k) as f64 / 40e9;
            cov.points.push(CoveragePoint {
                shape: shape.label(Op::Gemm),
                cublas_ms: 3.0 * t,
                ms: vec![t, t / 2.0],
            });
        }
    }
    let sel = Selector::new(&cov, &h100(), &cat).unwrap();
    assert_eq!(sel.usable(), 2);
    let r = sel.rank(Shape::mnk(3000, 3000, 3000)).unwrap();
    assert_eq!(
        r.configs.iter().map(|p| p.index).collect::<Vec<_>>(),
        vec![0],
        "{r:?}"
    );
    assert!(!r.prefers_cublas(), "{r:?}");
    // Held out, each point's choice is the chain of one tile: half the best's speed.
    let loo = sel.leave_one_out();
    assert_eq!(loo.len(), 6);
    assert!(loo.iter().all(|h| (h.regret - 2.0).abs() < 1e-9), "{loo:?}");
}

#[test]
fn constant_residuals_predict_exactly_and_leave_one_out_has_no_regret() {
    let cat = Catalog::builtin().unwrap();
    let (_, sel) = coverage(&cat);
    assert_eq!((sel.points(), sel.usable()), (15, 2));
    let shape = Shape::mnk(700, 700, 900);
    let r = sel.rank(shape).unwrap();
    assert_eq!(r.configs.len(), 2);
    for p in &r.configs {
        let want = sel.basis(p.index, shape).unwrap() * if p.index == 0 { 1.1 } else { 0.9 };
        assert!((p.ms / want - 1.0).abs() < 1e-9, "{p:?} vs {want}");
    }
    assert!(r.configs[0].ms <= r.configs[1].ms);
    let cub = 1.05 * roofline_ms(Op::Gemm, shape, &sel.machine);
    assert!((r.cublas_ms / cub - 1.0).abs() < 1e-9);
    // Every neighbour says the same: no spread, the doubt is the prediction itself.
    assert!(
        (r.doubt / (r.configs[0].ms / r.cublas_ms) - 1.0).abs() < 1e-9,
        "{r:?}"
    );
    assert!((r.evidence / r.doubt - 1.0).abs() < 1e-9 && r.spread.abs() < 1e-9);
    let loo = sel.leave_one_out();
    assert_eq!(loo.len(), 15);
    assert!(
        loo.iter().all(|h| (h.regret - 1.0).abs() < 1e-12),
        "{loo:?}"
    );
}

#[test]
fn rows_of_an_alignment_no_neighbour_has_are_no_evidence_for_the_guard() {
    let cat = Catalog::builtin().unwrap();
    // Every grid point's rows are 16-byte multiples.
    let (_, sel) = coverage(&cat);
    let aligned = sel.rank(Shape::mnk(700, 700, 900)).unwrap();
    assert!(aligned.doubt.is_finite(), "{aligned:?}");
    // N or K odd: ranked as before, but the guard has no evidence.
    for shape in [Shape::mnk(700, 701, 900), Shape::mnk(700, 700, 899)] {
        let r = sel.rank(shape).unwrap();
        assert_eq!(r.configs.len(), 2);
        assert!(
            r.doubt.is_infinite() && r.spread.is_infinite() && r.prefers_cublas(),
            "{shape:?}: {r:?}"
        );
    }
    // M odd does not change a row of NN's A, B or C; padded rows are always aligned.
    assert!(sel
        .rank(Shape::mnk(701, 700, 900))
        .unwrap()
        .doubt
        .is_finite());
    let padded = Shape::mnk(700, 701, 899).with_form(crate::problem::Form {
        padded: true,
        ..crate::problem::Form::PLAIN
    });
    assert_eq!(alignment(Op::Gemm, padded), [true; 3]);
    // By layout: TT stores A as K x M, so an odd M misaligns A's rows there.
    let tt = crate::problem::Form {
        layout: crate::problem::Layout::Tt,
        ..crate::problem::Form::PLAIN
    };
    assert_eq!(
        alignment(Op::Gemm, Shape::mnk(701, 700, 900).with_form(tt)),
        [false, true, true]
    );
    assert_eq!(
        alignment(Op::Gemm, Shape::mnk(700, 700, 899).with_form(tt)),
        [true, false, true]
    );
}

#[test]
fn a_padded_gemv_is_judged_by_the_grids_aligned_rows() {
    let parse = |op, text| Shape::parse(op, text).unwrap();
    // A gemv's vectors are one float per row: they never decide its class. Padded rows are
    // like packed rows of a multiple of 4 floats (a grid point), not unlike every point.
    let packed = parse(Op::Gemv, "700x1024");
    for text in ["700x1023:pad", "701x1023:t:pad", "3x5:beta:pad"] {
        assert_eq!(
            alignment(Op::Gemv, parse(Op::Gemv, text)),
            alignment(Op::Gemv, packed),
            "{text}"
        );
    }
    assert_eq!(
        alignment(Op::Gemv, parse(Op::Gemv, "700x1023")),
        [false, true, true]
    );
    assert_eq!(
        alignment(Op::Gemv, parse(Op::Gemv, "700x1023:t")),
        [false, true, true]
    );
    // gemm's vectors are matrices: a padded gemm is aligned, a packed odd N is not.
    assert_eq!(
        alignment(Op::Gemm, parse(Op::Gemm, "7x701x5:pad")),
        [true; 3]
    );
    assert_eq!(
        alignment(Op::Gemm, parse(Op::Gemm, "8x701x8")),
        [true, false, false]
    );
}

#[test]
fn a_config_that_failed_nearby_is_not_predicted_and_a_stale_one_never() {
    let cat = Catalog::builtin().unwrap();
    let (mut cov, _) = coverage(&cat);
    // Config 1 failed on the small shapes.
    for p in cov.points.iter_mut().take(3) {
        p.ms[1] = 0.0;
    }
    let sel = Selector::new(&cov, &h100(), &cat).unwrap();
    let small = sel.rank(Shape::mnk(16, 16, 100)).unwrap();
    assert!(small.configs.iter().all(|p| p.index == 0), "{small:?}");
    let big = sel.rank(Shape::mnk(4096, 4096, 4096)).unwrap();
    assert_eq!(big.configs.len(), 2);

    cov.configs[0].checksum = "0".repeat(64);
    let sel = Selector::new(&cov, &h100(), &cat).unwrap();
    assert_eq!(sel.usable(), 1);
    let r = sel.rank(Shape::mnk(4096, 4096, 4096)).unwrap();
    assert!(r.configs.iter().all(|p| p.index == 1), "{r:?}");
}

#[test]
fn the_guard_prefers_cublas_unless_clearly_faster() {
    // The mean prediction says 0.8x cuBLAS's time; what decides is the doubt.
    let r = |doubt: f64| Ranking {
        configs: vec![Predicted { index: 0, ms: 0.8 }],
        cublas_ms: 1.0,
        nearest: 0.0,
        doubt,
        margin: GUARD_MARGIN,
        evidence: 0.8,
        spread: 0.1,
    };
    assert!(r(0.99).prefers_cublas());
    assert!(r(1.2).prefers_cublas());
    assert!(!r(0.9).prefers_cublas());
    let none = Ranking {
        configs: Vec::new(),
        cublas_ms: 1.0,
        nearest: 0.0,
        doubt: 0.5,
        margin: GUARD_MARGIN,
        evidence: 0.5,
        spread: 0.0,
    };
    assert!(none.prefers_cublas());
    // Doubt that is not a number is no evidence.
    assert!(r(f64::NAN).prefers_cublas());
    // A gemv call's guard is stricter: doubt a gemm call passes, a gemv call does not.
    let gemv = Ranking {
        margin: guard_margin(Op::Gemv),
        ..r(0.95)
    };
    assert!(!r(0.95).prefers_cublas() && gemv.prefers_cublas());
    assert!(!Ranking {
        doubt: 0.93,
        ..gemv
    }
    .prefers_cublas());
}

#[test]
fn where_the_fastest_is_vetoed_the_least_doubted_alternative_is_chosen() {
    let cat = Catalog::builtin().unwrap();
    let (mut cov, sel) = coverage(&cat);
    let shape = Shape::mnk(700, 700, 900);
    // Times that make each neighbour's evidence for `shape` (a config's time over
    // cuBLAS's there) exactly `ratio[config]` at even points and `ratio[2 + config]` at odd
    // ones: the grid's cuBLAS is 1.05x the roofline, a time is a multiple of its basis.
    let roof = roofline_ms(Op::Gemm, shape, &sel.machine);
    let scale: Vec<f64> = (0..2)
        .map(|i| 1.05 * roof / sel.basis(i, shape).unwrap())
        .collect();
    let set = |cov: &mut Coverage, ratio: [f64; 4]| {
        let probe = Selector::new(cov, &h100(), &cat).unwrap();
        for (g, p) in cov.points.iter_mut().enumerate() {
            let s = Shape::parse(Op::Gemm, &p.shape).unwrap();
            let odd = 2 * (g % 2);
            p.ms = (0..2)
                .map(|i| ratio[odd + i] * scale[i] * probe.basis(i, s).unwrap())
                .collect();
        }
        Selector::new(cov, &h100(), &cat)
            .unwrap()
            .rank(shape)
            .unwrap()
    };
    // Config 0 is 0.4x or 1.3x by turns (faster on average, doubted), config 1 0.85x.
    let r = set(&mut cov, [0.4, 0.85, 1.3, 0.85]);
    assert_eq!(
        r.configs.iter().map(|p| p.index).collect::<Vec<_>>(),
        [1, 0],
        "{r:?}"
    );
    assert!(
        r.configs[1].ms < r.configs[0].ms,
        "config 0 is the faster predicted: {r:?}"
    );
    assert!(
        !r.prefers_cublas() && (r.doubt - 0.85).abs() < 1e-6,
        "{r:?}"
    );
    assert!(r.spread.abs() < 1e-6, "{r:?}");
    // Config 0 steady at 0.7x: the fastest and not vetoed, so chosen.
    let r = set(&mut cov, [0.7, 0.85, 0.7, 0.85]);
    assert_eq!(r.configs[0].index, 0, "{r:?}");
    assert!((r.doubt - 0.7).abs() < 1e-6, "{r:?}");
    // Every config doubted: the fastest stays first, with its doubt, and the guard calls
    // cuBLAS.
    let r = set(&mut cov, [0.4, 0.6, 1.3, 1.4]);
    assert_eq!(r.configs[0].index, 0, "{r:?}");
    assert!(r.prefers_cublas() && r.spread > 0.3, "{r:?}");
    // Config 0 at 0.08x or 0.6x by turns: far faster on every neighbour, but they disagree by
    // more than GUARD_MAX_SPREAD, so it is no evidence; the steady config 1 is chosen.
    let r = set(&mut cov, [0.08, 0.9, 0.6, 0.9]);
    assert_eq!(r.configs[0].index, 1, "{r:?}");
    assert!(!r.prefers_cublas() && (r.doubt - 0.9).abs() < 1e-6, "{r:?}");
    // Both scattered past it: cuBLAS, with an infinite doubt.
    let r = set(&mut cov, [0.08, 0.07, 0.6, 0.7]);
    assert_eq!(r.configs[0].index, 0, "{r:?}");
    assert!(r.prefers_cublas() && r.doubt.is_infinite(), "{r:?}");
    assert!(r.spread > GUARD_MAX_SPREAD, "{r:?}");
}

#[test]
fn a_record_built_in_code_with_bad_times_never_panics() {
    let cat = Catalog::builtin().unwrap();
    let (mut cov, _) = coverage(&cat);
    cov.points[0].ms.truncate(1);
    cov.points[1].ms = vec![f64::NAN, -1.0, 5.0];
    cov.points[2].cublas_ms = 0.0;
    let sel = Selector::new(&cov, &h100(), &cat).unwrap();
    assert_eq!(sel.points(), 14);
    assert!(sel.rank(Shape::mnk(16, 16, 16)).is_some());
    let loo = sel.leave_one_out();
    assert!(!loo.is_empty() && loo.len() <= 14, "{loo:?}");
}

#[test]
fn an_unknown_arch_is_an_error() {
    let cat = Catalog::builtin().unwrap();
    let (cov, _) = coverage(&cat);
    let mut g = h100();
    g.arch = "sm_12".into();
    assert!(matches!(
        Selector::new(&cov, &g, &cat),
        Err(SelectError::Arch(..))
    ));
}

#[test]
fn a_long_batched_call_keeps_the_full_spread() {
    // A long unbatched gemm call takes half a deviation, a short one or a gemv the full one;
    // a batched call, whose neighbours lie a batched grid's steps apart, the full one too.
    assert_eq!(
        guard_spread(Op::Gemm, LONG_CALL_MS, false),
        GUARD_SPREAD_LONG
    );
    assert_eq!(
        guard_spread(Op::Gemm, LONG_CALL_MS / 2.0, false),
        GUARD_SPREAD
    );
    assert_eq!(
        guard_spread(Op::Gemv, 10.0 * LONG_CALL_MS, false),
        GUARD_SPREAD
    );
    assert_eq!(
        guard_spread(Op::Gemm, 10.0 * LONG_CALL_MS, true),
        GUARD_SPREAD
    );
    // The evidence of 739x3617x157:tn:b36 (seed 3136 on the H200, 0.848x cuBLAS when
    // launched): mean 0.72, spread 0.39 pass the margin at half a deviation, not at one.
    let doubt = |k: f64| (0.72f64.ln() + k * 0.39).exp();
    assert!(doubt(GUARD_SPREAD_LONG) <= GUARD_MARGIN);
    assert!(doubt(guard_spread(Op::Gemm, 0.79, true)) > GUARD_MARGIN);
}
