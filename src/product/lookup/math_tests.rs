//! The math policy: a product that asks for simt kernels never gets a tensor-core (`tf32x3`)
//! entry or portfolio config, from any rule; it gets a simt kernel or cuBLAS.

use super::tests::{entry, gpu};
use super::*;
use crate::db::{Coverage, CoverageConfig, CoveragePoint};
use crate::family::space::Limits;

const GPU: &str = "H100";

fn cat() -> Catalog {
    Catalog::builtin().unwrap()
}

fn shape(s: &str) -> Shape {
    Shape::parse(Op::Gemm, s).unwrap()
}

/// The first valid config of the built-in tensor-core family on a large plain shape.
fn tf32x3_params() -> BTreeMap<String, i64> {
    let cat = cat();
    let f = cat.get("gemm_tf32x3").unwrap();
    assert_eq!(f.space.math, Math::Tf32x3);
    let limits = Limits::for_arch(90).unwrap();
    let pruned = f.space.prune(shape("4096x4096x4096"), &limits).unwrap();
    pruned.valid[0].params.clone()
}

/// A current entry of the tensor-core family, as a tuning run writes it (`math` recorded,
/// unless `recorded` is false: an entry written before schema version 6).
fn tf32x3_entry(s: &str, vs: f64, recorded: bool) -> Entry {
    Entry {
        family: "gemm_tf32x3".into(),
        params: tf32x3_params(),
        checksum: cat().get("gemm_tf32x3").unwrap().checksum.clone(),
        math: if recorded { Math::Tf32x3 } else { Math::Simt },
        ..entry(GPU, Op::Gemm, s, 0, vs)
    }
}

fn simt() -> LookupOptions {
    LookupOptions {
        math: MathPolicy::Simt,
        ..LookupOptions::default()
    }
}

fn choose(db: &Database, s: &str, opts: LookupOptions) -> Choice {
    let selector = selector_for(db, &cat(), GPU, Op::Gemm, &Form::PLAIN);
    lookup_with(
        db,
        &cat(),
        GPU,
        Some("sm_90"),
        Op::Gemm,
        shape(s),
        opts,
        selector.as_ref(),
    )
}

#[test]
fn a_simt_policy_passes_over_tensor_core_entries_to_a_simt_one_or_cublas() {
    for recorded in [true, false] {
        let mut db = Database::new();
        db.upsert_gpu(gpu(GPU, "sm_90"));
        db.upsert(tf32x3_entry("2048x2048x2048", 1.5, recorded));
        db.upsert(entry(GPU, Op::Gemm, "1024x1024x1024", 64, 1.2));
        // Any math: the exact tensor-core entry, which beat cuBLAS.
        let c = choose(&db, "2048x2048x2048", LookupOptions::default());
        assert_eq!((c.rule, c.family.as_str()), (Rule::Exact, "gemm_tf32x3"));
        assert!(!c.vendor, "{c:?}");
        // Simt only (even where the entry predates `math`: its family says): the nearest
        // simt entry, which says nothing of cuBLAS here, so the guard calls cuBLAS...
        let c = choose(&db, "2048x2048x2048", simt());
        assert_eq!((c.rule, c.family.as_str()), (Rule::Nearest, "gemm_tile2d"));
        assert!(c.vendor, "{c:?}");
        assert!(c
            .describe(Op::Gemm, shape("2048x2048x2048"))
            .contains("cuBLAS (vendor guard"));
        // ...and without the guard the simt config runs; the simt entry itself is exact.
        let off = LookupOptions {
            vendor_guard: false,
            ..simt()
        };
        assert_eq!(choose(&db, "2048x2048x2048", off).family, "gemm_tile2d");
        let c = choose(&db, "1024x1024x1024", simt());
        assert_eq!(
            (c.rule, c.family.as_str(), c.vendor),
            (Rule::Exact, "gemm_tile2d", false)
        );
        // With only tensor-core entries, the built-in default (a simt family).
        let mut only = Database::new();
        only.upsert_gpu(gpu(GPU, "sm_90"));
        only.upsert(tf32x3_entry("2048x2048x2048", 1.5, recorded));
        let c = choose(&only, "2048x2048x2048", off);
        assert_eq!(c.rule, Rule::Default);
        assert_eq!(cat().math(&c.family), Some(Math::Simt));
    }
}

#[test]
fn a_simt_policy_predicts_among_the_simt_configs_of_the_portfolio() {
    let (tile2d, tile2d_params) = default_config(Op::Gemm);
    let cfg = |family: &str, params: BTreeMap<String, i64>| CoverageConfig {
        checksum: cat().get(family).unwrap().checksum.clone(),
        family: family.into(),
        params,
    };
    // The tensor-core config at 0.4x cuBLAS's time everywhere, the simt one at 0.5x.
    let mut points = Vec::new();
    for m in [256u64, 1024, 4096] {
        for n in [256u64, 1024, 4096] {
            for k in [256u64, 1024, 4096] {
                let s = Shape::mnk(m, n, k);
                let cublas = s.flops() / 40e12 * 1e3 + 0.005;
                points.push(CoveragePoint {
                    shape: s.label(Op::Gemm),
                    cublas_ms: cublas,
                    ms: vec![0.4 * cublas, 0.5 * cublas],
                });
            }
        }
    }
    let mut db = Database::new();
    db.upsert_gpu(gpu(GPU, "sm_90"));
    db.upsert_coverage(Coverage {
        gpu: GPU.into(),
        op: Op::Gemm,
        form: Form::PLAIN,
        date: "2026-11-23T00:00:00Z".into(),
        tool_version: "0".into(),
        seed: 1,
        produced_by: None,
        configs: vec![
            cfg("gemm_tf32x3", tf32x3_params()),
            cfg(&tile2d, tile2d_params),
        ],
        points,
    });
    let c = choose(&db, "2000x2000x2000", LookupOptions::default());
    assert_eq!(
        (c.rule, c.family.as_str()),
        (Rule::Predicted, "gemm_tf32x3")
    );
    let c = choose(&db, "2000x2000x2000", simt());
    assert_eq!(
        (c.rule, c.family.as_str()),
        (Rule::Predicted, "gemm_tile2d")
    );
    let p = c.prediction.unwrap();
    // The guard reads the simt config's own evidence: about half cuBLAS's time.
    assert_eq!((p.index, p.ranked), (1, 1));
    assert!(!c.vendor && p.doubt < 0.6, "{c:?}");
}
