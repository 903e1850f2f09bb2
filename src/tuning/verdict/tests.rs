//! Unit tests of [`super`] (`verdict.rs`).

use super::*;
use crate::problem::{Form, Layout};

#[test]
fn full_interface_configs_run_only_on_forms_their_space_offers_them_for() {
    use crate::family::catalog::Catalog;
    use crate::family::space::Limits;
    let cat = Catalog::builtin().unwrap();
    let limits = Limits::for_arch(90).unwrap();
    let cfg = |family: &str, params: &[(&str, i64)]| Config {
        family: family.into(),
        params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    };
    let gemv = cat.get("gemv_general").unwrap();
    let t_path = cfg(
        "gemv_general",
        &[
            ("WARPS", 8),
            ("VEC", 4),
            ("UNROLL", 4),
            ("TPR", 32),
            ("RY", 8),
            ("ROW_SPLIT", 16),
        ],
    );
    let shape = |op: Op, l: &str| Shape::parse(op, l).unwrap();
    let own = Some(shape(Op::Gemv, "4096x4096:t"));
    // The row split of y = A^T x is pinned to 1 on y = A x: not run there (several blocks
    // would add beta * y each), run on every transposed edge.
    for p in ["100000x3:beta:pad", "1000x999", "3x5:b3:alpha"] {
        assert!(
            !runs_on(gemv, &t_path, own, shape(Op::Gemv, p), &limits),
            "{p}"
        );
    }
    for p in ["33x129:t", "1000x999:t:beta:pad", "17x100001:t:b3"] {
        assert!(
            runs_on(gemv, &t_path, own, shape(Op::Gemv, p), &limits),
            "{p}"
        );
    }
    // A plain-interface family: every plain shape, no other form.
    let tile2d = cat.get("gemm_tile2d").unwrap();
    let (_, params) = crate::product::lookup::default_config(Op::Gemm);
    let c = Config {
        family: "gemm_tile2d".into(),
        params,
    };
    assert!(runs_on(tile2d, &c, None, shape(Op::Gemm, "3x5x7"), &limits));
    assert!(!runs_on(
        tile2d,
        &c,
        None,
        shape(Op::Gemm, "3x5x7:nt"),
        &limits
    ));
    // Every edge form has some config of each full-interface gemm family that runs on it,
    // unless the family's space offers that layout on no problem at all (a family for W's rows
    // along k, TRANS_B = 1, has nothing to verify on TRANS_B = 0).
    for f in cat.for_op(Op::Gemm).filter(|f| {
        f.space.interface.computes(&Form {
            layout: Layout::Tt,
            ..Form::PLAIN
        })
    }) {
        let ends = crate::tuning::sweep::family_ends(f, &limits).unwrap();
        for p in edge_forms(Op::Gemm) {
            let offers_layout = [
                "16x2048x2048",
                "2048x2048x2048",
                "16x2048x16",
                "2048x16x2048",
            ]
            .iter()
            .any(|s| {
                let probe = shape(Op::Gemm, s).with_form(p.form);
                f.space
                    .prune(probe, &limits)
                    .is_ok_and(|r| !r.valid.is_empty())
            });
            if !offers_layout {
                continue;
            }
            let pruned = f.space.prune(p, &limits).unwrap().valid;
            let any = ends
                .iter()
                .chain(&pruned)
                .any(|c| runs_on(f, c, None, p, &limits));
            assert!(any, "{}: nothing runs on {}", f.name(), p.label(Op::Gemm));
        }
    }
}

#[test]
fn the_form_edges_parse_and_cover_every_layout_beta_alpha_padding_and_batches() {
    let gemm = edge_forms(Op::Gemm);
    assert_eq!(gemm.len(), 9, "a label does not parse");
    assert_eq!(edge_forms(Op::Gemv).len(), 5, "a label does not parse");
    for layout in [Layout::Nt, Layout::Tn, Layout::Tt] {
        assert!(gemm.iter().any(|s| s.form.layout == layout));
    }
    assert!(gemm.iter().any(|s| s.form.beta));
    assert!(gemm.iter().any(|s| s.form.scaled));
    assert!(gemm.iter().any(|s| s.form.padded));
    assert!(gemm.iter().any(|s| s.form.batch > 1));
    assert!(gemm.iter().all(|s| !s.form.is_plain()));
    assert!(edge_forms(Op::Gemv)
        .iter()
        .any(|s| s.form.layout.trans_a() && s.form.batch > 1));
}

fn subject(fresh: Freshness, median_ms: f64, cublas_ms: f64) -> Subject {
    Subject {
        op: Op::Gemm,
        math: Default::default(),
        config: Config {
            family: "gemm_tile2d".into(),
            params: [("BM".to_string(), 64)].into(),
        },
        claim: Some(Claim {
            gpu: "G".into(),
            shape: Shape::mnk(64, 64, 64),
            median_ms,
            cublas_ms,
            checksum: "c".into(),
        }),
        freshness: fresh,
    }
}

fn measured(kernel_ms: f64, cublas_ms: f64, edges_ok: bool) -> Measurements {
    Measurements {
        problem: Some(Ok(Retimed {
            kernel_ms,
            cublas_ms,
            max_rel_error: 1e-6,
        })),
        edges: edge_shapes(Op::Gemm)
            .iter()
            .enumerate()
            .map(|(i, s)| Check {
                shape: s.label(Op::Gemm),
                outcome: if edges_ok || i != 1 {
                    Ok(1e-7)
                } else {
                    Err("max relative error 3e-1 > tolerance 5e-6 at (2, 4)\nmore".into())
                },
            })
            .collect(),
    }
}

#[test]
fn a_current_kernel_as_fast_as_recorded_passes() {
    let v = judge(
        &subject(Freshness::Current, 1.0, 1.0),
        &measured(1.1, 1.0, true),
        &Policy::default(),
    );
    assert!(v.ok(), "{v:?}");
    assert_eq!(v.status(), "ok");
    assert!((v.slowdown.unwrap() - 1.1).abs() < 1e-12);
}

#[test]
fn slowdown_is_judged_relative_to_cublas() {
    // The whole GPU is 40% slower today: kernel and cuBLAS alike. Not the kernel's fault.
    let v = judge(
        &subject(Freshness::Current, 1.0, 0.8),
        &measured(1.4, 1.12, true),
        &Policy::default(),
    );
    assert!(v.ok(), "{v:?}");
    assert!((v.raw_slowdown.unwrap() - 1.4).abs() < 1e-12);
    assert!((v.slowdown.unwrap() - 1.0).abs() < 1e-12);
    // An entry that claims twice the speed it has (time halved in the file) fails.
    let v = judge(
        &subject(Freshness::Current, 0.5, 1.0),
        &measured(1.0, 1.0, true),
        &Policy::default(),
    );
    assert_eq!(v.status(), "SLOWER");
    assert_eq!(
        v.findings,
        vec![Finding::Slower {
            slowdown: 2.0,
            max: 1.25
        }]
    );
    assert!(v.findings[0].to_string().contains("2.00x slower"));
}

#[test]
fn the_limit_is_the_users_and_met_exactly_passes() {
    let s = subject(Freshness::Current, 1.0, 1.0);
    let m = measured(1.25, 1.0, true);
    assert!(judge(&s, &m, &Policy::default()).ok());
    let strict = Policy {
        max_slowdown: 1.1,
        ..Policy::default()
    };
    assert!(!judge(&s, &m, &strict).ok());
    let lax = Policy {
        max_slowdown: 3.0,
        ..Policy::default()
    };
    assert!(judge(&s, &measured(2.9, 1.0, true), &lax).ok());
}

#[test]
fn stale_unknown_and_failed_validations_fail() {
    let v = judge(
        &subject(Freshness::Stale, 1.0, 1.0),
        &measured(1.0, 1.0, true),
        &Policy::default(),
    );
    assert_eq!(v.findings, vec![Finding::Stale]);
    assert_eq!(v.status(), "STALE");
    let v = judge(
        &subject(Freshness::UnknownFamily, 1.0, 1.0),
        &Measurements::default(),
        &Policy::default(),
    );
    assert_eq!(v.status(), "UNKNOWN");
    // A wrong result on an edge shape, with the first line of why.
    let v = judge(
        &subject(Freshness::Current, 1.0, 1.0),
        &measured(1.0, 1.0, false),
        &Policy::default(),
    );
    assert_eq!(v.status(), "FAILED");
    let text = v.findings[0].to_string();
    assert!(
        text.starts_with("failed on 3x5x7: max relative error"),
        "{text}"
    );
    assert!(!text.contains("more"), "{text}");
    // Failing on its own problem, and stale too: both reported.
    let m = Measurements {
        problem: Some(Err("Crash: illegal address".into())),
        edges: vec![],
    };
    let v = judge(&subject(Freshness::Stale, 1.0, 1.0), &m, &Policy::default());
    assert_eq!(v.status(), "STALE,FAILED");
    assert_eq!(v.slowdown, None);
}

#[test]
fn timings_of_another_arch_or_gpu_are_not_judged() {
    let policy = Policy {
        timing_not_comparable: Some("PTX for compute_75, JIT-compiled".into()),
        ..Policy::default()
    };
    let v = judge(
        &subject(Freshness::Current, 0.5, 1.0),
        &measured(1.0, 1.0, true),
        &policy,
    );
    assert!(v.ok(), "{v:?}");
    assert!(!v.timing_judged);
    assert_eq!(v.slowdown, Some(2.0));
    // Validation still decides.
    assert!(!judge(
        &subject(Freshness::Current, 0.5, 1.0),
        &measured(1.0, 1.0, false),
        &policy
    )
    .ok());
}

#[test]
fn unusable_records_and_missing_cublas_times() {
    let v = judge(
        &subject(Freshness::Current, 0.0, 1.0),
        &measured(1.0, 1.0, true),
        &Policy::default(),
    );
    assert_eq!(v.status(), "BAD RECORD");
    // No cuBLAS time recorded: the raw ratio decides.
    let s = subject(Freshness::Current, 1.0, 0.0);
    let v = judge(&s, &measured(1.3, 1.0, true), &Policy::default());
    assert_eq!(v.slowdown, Some(1.3));
    assert_eq!(v.status(), "SLOWER");
}

#[test]
fn representatives_are_validated_not_timed() {
    let s = Subject::representative(
        Op::Gemv,
        Config {
            family: "gemv_warp_row".into(),
            params: BTreeMap::new(),
        },
        true,
    );
    let m = Measurements {
        problem: None,
        edges: vec![Check {
            shape: "1x1".into(),
            outcome: Ok(0.0),
        }],
    };
    let v = judge(&s, &m, &Policy::default());
    assert!(v.ok());
    assert_eq!(v.slowdown, None);
}

#[test]
fn report_table_json_and_summary() {
    let report = Report::new(
        "NVIDIA H100 80GB HBM3".into(),
        "NVIDIA H100 80GB HBM3".into(),
        "sm_90".into(),
        "13.0 (/x/libnvrtc.so.13)".into(),
        "13.0.2 (/x/libcublas.so.13)".into(),
        Policy::default(),
        vec![
            (
                subject(Freshness::Current, 1.0, 1.0),
                measured(1.0, 1.0, true),
            ),
            (
                subject(Freshness::Current, 0.5, 1.0),
                measured(1.0, 1.0, true),
            ),
            (
                subject(Freshness::Stale, 1.0, 1.0),
                measured(1.0, 1.0, false),
            ),
        ],
    );
    assert_eq!(report.failures().count(), 2);
    let counts = report.counts();
    assert_eq!(counts["slower"], 1);
    assert_eq!(counts["stale"], 1);
    assert_eq!(counts["failed"], 1);
    let table = report.table().render();
    assert!(table.contains("6/6 ok"), "{table}");
    assert!(table.contains("5/6 ok"), "{table}");
    assert!(table.contains("STALE,FAILED"), "{table}");
    assert!(table.contains("2.000"), "{table}");
    let text = report.findings_text();
    assert!(
            text.ends_with("verify: 3 kernel(s), 1 ok, 2 failed (1 failed, 1 slower, 1 stale) (max slowdown 1.25x relative to cuBLAS; target sm_90; NVRTC 13.0 (/x/libnvrtc.so.13); cuBLAS 13.0.2 (/x/libcublas.so.13))\n"),
            "{text}"
        );
    assert!(
        text.contains("#2 gemm gemm_tile2d BM=64: 2.00x slower"),
        "{text}"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["rows"][1]["verdict"]["findings"][0]["kind"], "slower");
    assert_eq!(
        json["rows"][0]["measured"]["problem"]["Ok"]["kernel_ms"],
        1.0
    );
    assert_eq!(json["target"], "sm_90");
}
