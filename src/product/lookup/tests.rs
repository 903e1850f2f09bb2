//! Unit tests of the lookup rules, the vendor guard and the forms.

use super::*;
use crate::db::{fixtures, GpuRecord};
use crate::family::catalog::Catalog;
use crate::family::space::Limits;

/// A GPU record of `arch` named `name` (the other facts an H100's).
pub(crate) fn gpu(name: &str, arch: &str) -> GpuRecord {
    GpuRecord {
        arch: arch.into(),
        ..fixtures::gpu(name)
    }
}

/// A current `gemm_tile2d` entry with `BM = bm`, measured at 1 ms, `vs` x cuBLAS.
pub(crate) fn entry(gpu: &str, op: Op, shape: &str, bm: i64, vs: f64) -> Entry {
    Entry {
        kernel: format!("k{bm}"),
        params: [("BM".to_string(), bm)].into_iter().collect(),
        cublas_median_ms: vs,
        vs_cublas: vs,
        checksum: cat().get("gemm_tile2d").unwrap().checksum.clone(),
        ..fixtures::entry(gpu, op, shape, 1.0)
    }
}

fn db() -> Database {
    let mut db = Database::new();
    db.upsert_gpu(gpu("H100", "sm_90"));
    db.upsert_gpu(gpu("H200", "sm_90"));
    db.upsert_gpu(gpu("4060", "sm_89"));
    db.upsert(entry("H100", Op::Gemm, "1024x1024x1024", 64, 0.9));
    db.upsert(entry("H100", Op::Gemm, "4096x4096x4096", 128, 0.9));
    db.upsert(entry("H200", Op::Gemm, "2048x2048x2048", 256, 0.9));
    db.upsert(entry("4060", Op::Gemm, "3000x3000x3000", 32, 0.9));
    db
}

fn cat() -> Catalog {
    Catalog::builtin().unwrap()
}

/// The lookup against the built-in catalog.
fn pick(db: &Database, gpu: &str, arch: Option<&str>, op: Op, shape: Shape) -> Choice {
    lookup(db, &cat(), gpu, arch, op, shape)
}

fn shape(s: &str) -> Shape {
    Shape::parse(Op::Gemm, s).unwrap()
}

#[test]
fn exact_match_wins() {
    let c = pick(
        &db(),
        "H100",
        Some("sm_90"),
        Op::Gemm,
        shape("4096x4096x4096"),
    );
    assert_eq!(c.rule, Rule::Exact);
    assert_eq!(c.params["BM"], 128);
    assert_eq!(c.distance, 0.0);
}

#[test]
fn the_vendor_guard_calls_cublas_where_the_exact_entry_lost_to_it() {
    let mut db = db();
    db.upsert(entry("H100", Op::Gemm, "512x512x512", 64, 1.2));
    let guarded = |db: &Database, s: &str, opts: LookupOptions| {
        lookup_with(
            db,
            &cat(),
            "H100",
            Some("sm_90"),
            Op::Gemm,
            shape(s),
            opts,
            None,
        )
    };
    // The fixture's entries ran at 0.9x cuBLAS: the guard calls cuBLAS there...
    let lost = guarded(&db, "4096x4096x4096", LookupOptions::default());
    assert!(lost.vendor && lost.rule == Rule::Exact, "{lost:?}");
    assert!(lost
        .describe(Op::Gemm, shape("4096x4096x4096"))
        .contains("cuBLAS (vendor guard: measured 0.900x"));
    // ...not where the entry beat cuBLAS, and never when turned off.
    assert!(!guarded(&db, "512x512x512", LookupOptions::default()).vendor);
    let off = LookupOptions {
        vendor_guard: false,
        ..LookupOptions::default()
    };
    assert!(!guarded(&db, "4096x4096x4096", off).vendor);
    // Nearest-shape choices carry no evidence about cuBLAS here: cuBLAS.
    let near = guarded(&db, "1500x1500x1500", LookupOptions::default());
    assert!(near.rule == Rule::Nearest && near.vendor, "{near:?}");
    assert!(near
        .describe(Op::Gemm, shape("1500x1500x1500"))
        .contains("cuBLAS (vendor guard: nothing measured on this GPU"));
    assert!(!guarded(&db, "4096x4096x4096", LookupOptions::nearest_only()).vendor);
}

/// An entry of `op` on `shape` (any form) with the op's default config for that form, current
/// for the built-in catalog, measured at `vs` x cuBLAS.
fn entry_of_form(gpu: &str, op: Op, s: &str, vs: f64) -> Entry {
    let (family, params) = default_config_for(op, shape_of(op, s));
    Entry {
        checksum: cat().get(&family).unwrap().checksum.clone(),
        family,
        params,
        ..entry(gpu, op, s, 0, vs)
    }
}

fn shape_of(op: Op, s: &str) -> Shape {
    Shape::parse(op, s).unwrap()
}

#[test]
fn every_rule_on_every_form_sends_a_problem_without_winning_evidence_to_cublas() {
    let forms: &[(Op, &[&str])] = &[
        (
            Op::Gemm,
            &[
                "",
                ":nt",
                ":tn",
                ":tt",
                ":beta",
                ":alpha",
                ":pad",
                ":b8",
                ":nt:b4:beta:pad",
            ],
        ),
        (Op::Gemv, &["", ":t", ":beta", ":pad", ":b4", ":t:b3:beta"]),
    ];
    let guard = LookupOptions::default();
    let off = LookupOptions {
        vendor_guard: false,
        ..guard
    };
    for &(op, tags) in forms {
        let (here, near, far) = match op {
            Op::Gemm => ("768x1024x512", "1536x2048x1024", "96x96x96"),
            Op::Gemv => ("3000x2000", "6000x4000", "50x50"),
        };
        for tag in tags {
            let (here, near) = (format!("{here}{tag}"), format!("{near}{tag}"));
            let problem = shape_of(op, &here);
            let look = |db: &Database, opts: LookupOptions| {
                lookup_with(db, &cat(), "H100", Some("sm_90"), op, problem, opts, None)
            };
            let mut db = Database::new();
            db.upsert_gpu(gpu("H100", "sm_90"));
            db.upsert_gpu(gpu("H200", "sm_90"));
            // Default: nothing tuned anywhere.
            let c = look(&db, guard);
            assert!(c.rule == Rule::Default && c.vendor, "{here}: {c:?}");
            assert!(!look(&db, off).vendor, "{here}");
            // Same arch: another GPU's entry for this very problem, 3x faster than cuBLAS
            // there, says nothing about this GPU.
            db.upsert(entry_of_form("H200", op, &here, 3.0));
            let c = look(&db, guard);
            assert!(c.rule == Rule::SameArch && c.vendor, "{here}: {c:?}");
            assert!(!look(&db, off).vendor, "{here}");
            // Nearest: an entry of this GPU and form at twice the size, 2x cuBLAS there, and
            // a far one of another size.
            db.upsert(entry_of_form("H100", op, &near, 2.0));
            db.upsert(entry_of_form("H100", op, &format!("{far}{tag}"), 2.0));
            let c = look(&db, guard);
            assert!(c.rule == Rule::Nearest && c.vendor, "{here}: {c:?}");
            assert!(!c.beats_cublas());
            assert!(!look(&db, off).vendor, "{here}");
            // Exact: measured slower than cuBLAS (or not a number) goes to cuBLAS; measured at
            // least as fast launches.
            for (vs, vendor) in [(0.99, true), (f64::NAN, true), (1.0, false), (1.3, false)] {
                db.upsert(entry_of_form("H100", op, &here, vs));
                let c = look(&db, guard);
                assert_eq!((c.rule, c.vendor), (Rule::Exact, vendor), "{here} at {vs}x");
                assert!(!look(&db, off).vendor, "{here}");
            }
        }
    }
}

#[test]
fn a_prediction_launches_only_when_its_least_favourable_neighbour_beats_cublas() {
    let predicted = |doubt: f64| Choice {
        rule: Rule::Predicted,
        family: "gemm_tile2d".into(),
        params: BTreeMap::new(),
        entry: None,
        distance: 0.5,
        skipped: Vec::new(),
        prediction: Some(Prediction {
            ms: 0.5,
            cublas_ms: 1.0,
            doubt,
            margin: crate::product::select::GUARD_MARGIN,
            evidence: 0.5,
            spread: 0.1,
            index: 0,
            ranked: 1,
        }),
        vendor: false,
        math: Default::default(),
    };
    let margin = crate::product::select::GUARD_MARGIN;
    assert!(predicted(margin).beats_cublas());
    assert!(predicted(0.5).beats_cublas());
    for doubt in [margin + 1e-9, 1.0, 1.5, f64::NAN] {
        assert!(!predicted(doubt).beats_cublas(), "doubt {doubt}");
    }
    // A prediction without its numbers is no evidence.
    let bare = Choice {
        prediction: None,
        ..predicted(0.5)
    };
    assert!(!bare.beats_cublas());
    // A prediction from a grid of another form is no evidence on this one, however fast.
    let other = Choice {
        rule: Rule::OtherForm,
        ..predicted(0.1)
    };
    assert!(!other.beats_cublas());
}

#[test]
fn other_forms_are_served_by_full_interface_families_only() {
    let mut db = db();
    // Without a full-interface entry: the plain entries are passed over, the default is
    // gemm_general's (which the catalog has, with a valid launch).
    let tn = shape("1024x1024x1024:tn");
    let c = pick(&db, "H100", Some("sm_90"), Op::Gemm, tn);
    assert_eq!((c.rule, c.family.as_str()), (Rule::Default, "gemm_general"));
    let fam = cat().get(&c.family).unwrap().clone();
    let limits = crate::family::space::Limits::for_arch(90).unwrap();
    assert!(fam.kernel(&c.config(), tn, &limits).is_ok());
    // alpha != 1 alone needs the full interface too.
    let c = pick(
        &db,
        "H100",
        Some("sm_90"),
        Op::Gemm,
        shape("1024x1024x1024:alpha"),
    );
    assert_eq!(c.family, "gemm_general");
    // A gemm_general entry of another layout and size is the nearest for any form; the
    // plain shape keeps its exact plain entry.
    let mut e = entry("H100", Op::Gemm, "2048x2048x2048:nt:beta", 128, 1.1);
    e.family = "gemm_general".into();
    e.checksum = fam.checksum.clone();
    e.params = default_config_for(Op::Gemm, tn).1;
    e.params.insert("STAGES".into(), 4);
    db.upsert(e);
    let c = pick(&db, "H100", Some("sm_90"), Op::Gemm, tn);
    assert_eq!((c.rule, c.params["STAGES"]), (Rule::Nearest, 4));
    assert!(c.distance > FORM_PENALTY, "{c:?}");
    let c = pick(
        &db,
        "H100",
        Some("sm_90"),
        Op::Gemm,
        shape("1024x1024x1024"),
    );
    assert_eq!((c.rule, c.params["BM"]), (Rule::Exact, 64));
    // Exact is per form: the same dimensions with beta are not the plain entry's.
    let c = pick(
        &db,
        "H100",
        Some("sm_90"),
        Op::Gemm,
        shape("2048x2048x2048:nt:beta"),
    );
    assert_eq!(c.rule, Rule::Exact);
    let c = pick(
        &db,
        "H100",
        Some("sm_90"),
        Op::Gemm,
        shape("2048x2048x2048:nt"),
    );
    assert_eq!(c.rule, Rule::Nearest);
    // The batch counts like a dimension: 64 products of 2048^3 are far from one.
    assert!(
        distance(shape("2048x2048x2048:nt:b64"), shape("2048x2048x2048:nt"))
            > distance(shape("2048x2048x2048:nt:b2"), shape("2048x2048x2048:nt"))
    );
}

#[test]
fn gemv_forms_default_to_gemv_general() {
    let db = db();
    for s in ["4096x4096:t", "4096x4096:beta"] {
        gemv_default_is_valid(&db, s);
    }
}

#[test]
fn an_entry_of_another_form_serves_only_with_a_config_its_space_offers_there() {
    let mut db = db();
    let fam = cat().get("gemv_general").unwrap().clone();
    let limits = crate::family::space::Limits::for_arch(90).unwrap();
    let n = Shape::parse(Op::Gemv, "4096x4096:beta").unwrap();
    // A config of the y = A x path: TPR = 64 is not offered for y = A^T x.
    let config = fam
        .space
        .prune(n, &limits)
        .unwrap()
        .valid
        .into_iter()
        .find(|c| c.params["TPR"] == 64)
        .unwrap();
    let mut e = entry("H100", Op::Gemv, "4096x4096:beta", 1, 1.1);
    e.family = "gemv_general".into();
    e.params = config.params.clone();
    e.checksum = fam.checksum.clone();
    db.upsert(e);
    let t = Shape::parse(Op::Gemv, "4096x4096:t").unwrap();
    let c = pick(&db, "H100", Some("sm_90"), Op::Gemv, t);
    assert_eq!(c.rule, Rule::Default, "{c:?}");
    // The same form elsewhere takes it.
    let c = pick(
        &db,
        "H100",
        Some("sm_90"),
        Op::Gemv,
        Shape::parse(Op::Gemv, "4000x4000:beta").unwrap(),
    );
    assert_eq!((c.rule, c.params["TPR"]), (Rule::Nearest, 64));
}

fn gemv_default_is_valid(db: &Database, s: &str) {
    let s = Shape::parse(Op::Gemv, s).unwrap();
    let c = pick(db, "H100", Some("sm_90"), Op::Gemv, s);
    assert_eq!((c.rule, c.family.as_str()), (Rule::Default, "gemv_general"));
    let fam = cat().get(&c.family).unwrap().clone();
    let limits = crate::family::space::Limits::for_arch(90).unwrap();
    assert!(fam.kernel(&c.config(), s, &limits).is_ok());
    let pruned = fam.space.prune(s, &limits).unwrap();
    assert!(
        pruned.valid.contains(&c.config()),
        "the default is in the space"
    );
}

#[test]
fn nearest_shape_on_the_same_gpu_in_log_space() {
    // 1500^3 is nearer 1024^3 than 4096^3 in log space.
    let c = pick(
        &db(),
        "H100",
        Some("sm_90"),
        Op::Gemm,
        shape("1500x1500x1500"),
    );
    assert_eq!((c.rule, c.params["BM"]), (Rule::Nearest, 64));
    let c = pick(
        &db(),
        "H100",
        Some("sm_90"),
        Op::Gemm,
        shape("3000x3000x3000"),
    );
    assert_eq!((c.rule, c.params["BM"]), (Rule::Nearest, 128));
    assert!(c.distance > 0.0);
    // The H200 entry at 2048^3 is exact-nearer, but it belongs to another GPU.
    let c = pick(
        &db(),
        "H100",
        Some("sm_90"),
        Op::Gemm,
        shape("2048x2048x2048"),
    );
    assert_eq!(c.rule, Rule::Nearest);
    assert_ne!(c.entry.unwrap().gpu, "H200");
}

#[test]
fn another_gpu_of_the_same_arch_then_default() {
    let c = pick(
        &db(),
        "GH200",
        Some("sm_90"),
        Op::Gemm,
        shape("2000x2000x2000"),
    );
    assert_eq!(c.rule, Rule::SameArch);
    assert_eq!(c.entry.as_ref().unwrap().gpu, "H200");
    // The 4060 is sm_89: never used for an sm_90 GPU.
    let c = pick(
        &db(),
        "GH200",
        Some("sm_90"),
        Op::Gemm,
        shape("3000x3000x3000"),
    );
    assert_ne!(c.entry.unwrap().gpu, "4060");
    // Unknown arch, or no entry of the op: the default.
    let c = pick(&db(), "GH200", None, Op::Gemm, shape("2000x2000x2000"));
    assert_eq!(c.rule, Rule::Default);
    let v = Shape::parse(Op::Gemv, "4096x4096").unwrap();
    let c = pick(&db(), "H100", Some("sm_90"), Op::Gemv, v);
    assert_eq!(
        (c.rule, c.family.as_str()),
        (Rule::Default, "gemv_warp_row")
    );
    assert!(c.describe(Op::Gemv, v).contains("built-in default"));
}

#[test]
fn defaults_are_valid_configs_of_their_families() {
    let cat = Catalog::builtin().unwrap();
    let limits = Limits::for_arch(61).unwrap();
    for op in Op::ALL {
        let (family, params) = default_config(op);
        let fam = cat.get(&family).unwrap();
        let config = crate::family::space::Config { family, params };
        assert!(
            fam.space.enumerate().contains(&config),
            "{op} default not in its space"
        );
        // Shape-dependent constraints only prune for tuning speed (every template is
        // correct for every shape), so check the device limits on a large shape.
        let n = if op == Op::Gemm { 4096 } else { 1 };
        let s = Shape::mnk(4096, n, 4096);
        assert_eq!(fam.space.reject_reason(&config, s, &limits).unwrap(), None);
    }
}

#[test]
fn distance_is_symmetric_log_space() {
    let (a, b, c) = (
        shape("1024x1024x1024"),
        shape("2048x2048x2048"),
        shape("4096x4096x4096"),
    );
    assert!((distance(a, b) - distance(b, c)).abs() < 1e-12);
    assert_eq!(distance(a, b), distance(b, a));
    assert_eq!(distance(a, a), 0.0);
}

#[test]
fn stale_entries_are_passed_over_and_reported() {
    let mut db = db();
    let mut stale = entry("H100", Op::Gemm, "4096x4096x4096", 256, 2.0);
    stale.checksum = "0".repeat(64);
    db.upsert(stale);
    let c = pick(
        &db,
        "H100",
        Some("sm_90"),
        Op::Gemm,
        shape("4096x4096x4096"),
    );
    // The exact entry is stale: the nearest current one of this GPU serves instead.
    assert_eq!(c.rule, Rule::Nearest);
    assert_eq!(c.params["BM"], 64);
    assert_eq!(c.skipped.len(), 1, "{:?}", c.skipped);
    assert_eq!(c.skipped[0].rule, Rule::Exact);
    assert_eq!(c.skipped[0].freshness, Freshness::Stale);
    assert!(c
        .describe(Op::Gemm, shape("4096x4096x4096"))
        .contains("passed over the exact entry"));
}

#[test]
fn entries_of_unknown_families_are_never_chosen() {
    let mut db = Database::new();
    db.upsert_gpu(gpu("H100", "sm_90"));
    let mut e = entry("H100", Op::Gemm, "1024x1024x1024", 64, 2.0);
    e.family = "gemm_from_the_future".into();
    db.upsert(e);
    let c = pick(
        &db,
        "H100",
        Some("sm_90"),
        Op::Gemm,
        shape("1024x1024x1024"),
    );
    assert_eq!(c.rule, Rule::Default);
    assert_eq!(c.skipped.len(), 1);
    assert_eq!(c.skipped[0].freshness, Freshness::UnknownFamily);
}

/// `best` and `export` resolve a GPU as every command does, and answer for an unseen GPU only
/// when its arch is given.
#[test]
fn lookups_resolve_gpu_names_by_the_one_rule() {
    let mut db = Database::new();
    db.upsert_gpu(gpu("NVIDIA H100 80GB HBM3", "sm_90"));
    db.upsert_gpu(gpu("NVIDIA H200", "sm_90"));
    let sm = |s: &str| s.parse::<Arch>().unwrap();
    let named = |q, arch| lookup_gpu(&db, "db.toml", Asked::Named(q), arch);
    let h200 = named("h200", None).unwrap();
    assert_eq!(
        (h200.name.as_str(), h200.arch.as_deref()),
        ("NVIDIA H200", Some("sm_90"))
    );
    assert_eq!(h200.unseen, None);
    // The arch given wins over the record's.
    assert_eq!(
        named("H200", Some(sm("sm_89"))).unwrap().arch.as_deref(),
        Some("sm_89")
    );
    // Ambiguous or unknown: the resolver's error, unless the arch is given.
    assert!(matches!(
        named("h", None),
        Err(CompareError::AmbiguousGpu { .. })
    ));
    assert!(matches!(
        named("Mystery", None),
        Err(CompareError::UnknownGpu { .. })
    ));
    let unseen = named("Mystery", Some(sm("sm_90"))).unwrap();
    assert_eq!(unseen.name, "Mystery");
    assert_eq!(unseen.arch.as_deref(), Some("sm_90"));
    let warning = unseen.unseen.unwrap();
    assert!(
        warning.contains("no GPU named 'Mystery'") && warning.contains("'NVIDIA H200'"),
        "{warning}"
    );
    // The GPU at hand: its own name, exactly; the database's arch for it, else the device's.
    let device = |name: &str| Asked::Device {
        name: name.into(),
        arch: sm("sm_89"),
    };
    let known = lookup_gpu(&db, "db.toml", device("NVIDIA H200"), None).unwrap();
    assert_eq!(known.arch.as_deref(), Some("sm_90"));
    let new = lookup_gpu(&db, "db.toml", device("h200"), None).unwrap();
    assert_eq!(
        (new.name.as_str(), new.arch.as_deref()),
        ("h200", Some("sm_89"))
    );
}
