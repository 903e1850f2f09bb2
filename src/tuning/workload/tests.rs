//! Unit tests of [`super`] (`workload.rs`).

use super::*;

const NONE: &dyn Fn(&Shape) -> bool = &|_| false;

/// Independent primality check.
fn prime(n: u64) -> bool {
    n >= 2 && (2..n).all(|d| !n.is_multiple_of(d))
}

/// Whether `s` lies within the bounds of `kind` for `op` (and the op's cap).
    #[rustfmt::skip]
    fn within(op: Op, kind: Kind, s: &Shape) -> bool {
        let r = |v: u64, lo: u64, hi: u64| (lo..=hi).contains(&v);
        let p = |v: u64, hi: u64| r(v, 17, hi) && prime(v) && !v.is_multiple_of(2);
        let (m, n, k) = (s.m, s.n, s.k);
        match (op, kind) {
            (Op::Gemm, _) if m * n * k > GEMM_MAX_MACS => false,
            (Op::Gemv, _) if n != 1 || m * k > GEMV_MAX_ELEMS => false,
            (Op::Gemm, Kind::General) => r(m, 16, 8192) && r(n, 16, 8192) && r(k, 16, 8192),
            (Op::Gemm, Kind::TinyMn) => r(k, 64, 8192)
                && (r(m, 1, 16) && r(n, 64, 8192) || r(n, 1, 16) && r(m, 64, 8192)),
            (Op::Gemm, Kind::TinyK) => r(k, 1, 16) && r(m, 64, 8192) && r(n, 64, 8192),
            (Op::Gemm, Kind::HugeK) => r(k, 4096, 65536) && r(m, 16, 1024) && r(n, 16, 1024),
            (Op::Gemm, Kind::OddPrime) => p(m, 8209) && p(n, 8209) && p(k, 8209),
            (Op::Gemv, Kind::General) => r(m, 16, 65536) && r(k, 16, 65536),
            (Op::Gemv, Kind::TinyMn) => r(m, 1, 16) && r(k, 256, 65536),
            (Op::Gemv, Kind::TinyK) => r(k, 1, 16) && r(m, 256, 65536),
            (Op::Gemv, Kind::OddPrime) => p(m, 65537) && p(k, 65537),
            _ => false,
        }
    }

/// The draws of seed 2026 as they were before forms were drawn: the first shapes of the
/// committed `results/untuned/evaluate-{gemm,gemv}-2026-*.json` (computed with the code of
/// then, before `Forms` existed).
#[test]
fn plain_forms_reproduce_the_draws_of_before() {
    let labels = |op, forms| -> Vec<String> {
        let problems = random_problems_in(op, forms, 12, 2026, NONE).unwrap();
        let label = |p: &Problem| format!("{} {}", p.kind, p.shape.label(op));
        problems.iter().map(label).collect()
    };
    #[rustfmt::skip]
        let gemm = [
            "odd/prime 313x1049x191", "huge K 328x842x38118", "general 67x129x4441",
            "general 92x885x43", "general 111x772x612", "tiny K 1512x1791x2",
            "tiny M/N 6x7067x5101", "huge K 125x109x12651", "tiny M/N 2627x1x888",
            "odd/prime 2857x239x367", "general 163x89x1606", "odd/prime 991x6421x251",
        ];
    #[rustfmt::skip]
        let gemv = [
            "odd/prime 839x4211", "general 11579x6732", "odd/prime 13049x271",
            "general 260x28973", "general 165x3372", "general 107x213", "tiny K 6528x6",
            "tiny K 11529x2", "general 635x3622", "odd/prime 29269x8501", "tiny M/N 4x2442",
            "tiny M/N 7x513",
        ];
    assert_eq!(labels(Op::Gemm, Forms::Plain), gemm);
    assert_eq!(labels(Op::Gemv, Forms::Plain), gemv);
    for op in Op::ALL {
        let plain = random_problems_in(op, Forms::Plain, 300, 9, NONE).unwrap();
        assert_eq!(plain, random_problems(op, 300, 9, NONE).unwrap());
        assert!(plain.iter().all(|p| p.shape.form.is_plain()));
        assert_eq!(mix_in(op, Forms::Plain), mix(op));
    }
    // All forms draw other problems from the same seed.
    assert_ne!(labels(Op::Gemm, Forms::All), gemm);
}

/// Every drawn problem is valid, parses back from its label and keeps the caps over its
/// whole batch.
fn check_valid(op: Op, problems: &[Problem]) {
    for p in problems {
        let s = &p.shape;
        let label = s.label(op);
        assert_eq!(Shape::parse(op, &label).as_ref(), Ok(s), "{label}");
        assert!(s.check(op, &label).is_ok(), "{label}");
        let b = s.form.batch;
        assert!((1..=512).contains(&b), "{label}");
        let lens = s.lens(op);
        match op {
            Op::Gemm => {
                assert!(s.m * s.n * s.k * b <= GEMM_MAX_MACS, "{label}");
                assert!(lens.iter().all(|&l| l <= GEMM_MAX_OPERAND_ELEMS), "{label}");
            }
            Op::Gemv => {
                assert!(s.n == 1 && s.m * s.k * b <= GEMV_MAX_ELEMS, "{label}");
                assert!(lens[0] <= GEMV_MAX_ELEMS, "{label}");
            }
        }
    }
}

#[test]
fn all_forms_draw_layer_calls_every_layout_and_valid_shapes() {
    for op in Op::ALL {
        let problems = random_problems_in(op, Forms::All, 3000, 17, NONE).unwrap();
        check_valid(op, &problems);
        let distinct: HashSet<_> = problems.iter().map(|p| p.shape).collect();
        assert_eq!(distinct.len(), problems.len());
        // Same seed, same problems; a longer draw extends a shorter one; another seed
        // draws others.
        let again = random_problems_in(op, Forms::All, 3000, 17, NONE).unwrap();
        assert_eq!(problems, again);
        let short = random_problems_in(op, Forms::All, 40, 17, NONE).unwrap();
        assert_eq!(problems[..40], short[..]);
        assert_ne!(
            problems,
            random_problems_in(op, Forms::All, 3000, 18, NONE).unwrap()
        );
        assert_eq!(
            mix_in(op, Forms::All).iter().map(|(_, p)| p).sum::<u32>(),
            100
        );
        // Each layout, tag and kind near its share.
        let share =
            |f: &dyn Fn(&Problem) -> bool| problems.iter().filter(|p| f(p)).count() as f64 / 30.0;
        let near = |what: &str, got: f64, want: f64| {
            assert!(
                (got - want).abs() < 3.0,
                "{op} {what}: {got}% (want {want}%)"
            );
        };
        for (kind, percent) in mix_in(op, Forms::All) {
            near(kind.name(), share(&|p| p.kind == kind), f64::from(percent));
        }
        let layouts: Vec<(Layout, f64)> = match op {
            Op::Gemm => vec![
                (Layout::Nn, 20.0),
                (Layout::Nt, 40.0),
                (Layout::Tn, 20.0),
                (Layout::Tt, 20.0),
            ],
            Op::Gemv => vec![(Layout::Nn, 50.0), (Layout::Tn, 50.0)],
        };
        for (layout, want) in layouts {
            near(
                layout.name(op),
                share(&|p| p.shape.form.layout == layout),
                want,
            );
        }
        let batchable = if op == Op::Gemm { 0.6 } else { 1.0 };
        near("beta", share(&|p| p.shape.form.beta), 20.0);
        near("pad", share(&|p| p.shape.form.padded), 15.0);
        near("alpha", share(&|p| p.shape.form.scaled), 15.0);
        near(
            "batch",
            share(&|p| p.shape.form.batch > 1),
            15.0 * batchable,
        );
        // Batches reach both ends of their range.
        let batches: HashSet<u64> = problems.iter().map(|p| p.shape.form.batch).collect();
        assert!(
            batches.contains(&2) && batches.iter().any(|&b| b >= 256),
            "{op}"
        );
        // Kinds other than the layer calls keep their bounds.
        for p in problems.iter().filter(|p| p.kind != Kind::Layer) {
            assert!(within(op, p.kind, &p.shape.dims()), "{op} {p:?}");
        }
    }
}

#[test]
fn gemm_layer_calls_are_nt_and_at_least_a_third_of_every_prefix() {
    let problems = random_problems_in(Op::Gemm, Forms::All, 2000, 23, NONE).unwrap();
    let mut nt = 0;
    for (i, p) in problems.iter().enumerate() {
        let s = &p.shape;
        let layer = p.kind == Kind::Layer;
        // The layer calls, and only they, are NT.
        assert_eq!(layer, s.form.layout == Layout::Nt, "{p:?}");
        nt += usize::from(layer);
        assert!(3 * nt > i, "only {nt} NT in the first {}", i + 1);
        if layer {
            let r = |v: u64, lo: u64, hi: u64| (lo..=hi).contains(&v);
            assert!(
                r(s.m, 1, 4096) && r(s.n, 512, 16384) && r(s.k, 512, 16384),
                "{p:?}"
            );
            assert_eq!(s.form.batch, 1, "{p:?}");
        }
    }
    let layers: Vec<&Shape> = problems
        .iter()
        .filter(|p| p.kind == Kind::Layer)
        .map(|p| &p.shape)
        .collect();
    assert_eq!(layers.len(), 800);
    // Decoding sizes weigh more than a log-uniform draw's third: about half.
    let small = layers.iter().filter(|s| s.m <= 16).count();
    assert!((340..480).contains(&small), "{small} of 800 with M <= 16");
    // Model widths occur, and the projections run both ways.
    let widths = |s: &&&Shape| MODEL_WIDTHS.iter().any(|w| (s.n, s.k) == (w.2, w.1));
    assert!(layers.iter().filter(widths).count() > 40);
    assert!(layers.iter().any(|s| (s.n, s.k) == (4096, 11008)));
    assert!(layers.iter().any(|s| s.m > 1024));
}

#[test]
fn all_forms_honour_exclusion_and_fail_with_a_reason() {
    for op in Op::ALL {
        let first = random_problems_in(op, Forms::All, 100, 2, NONE).unwrap();
        let tuned: HashSet<Shape> = first.iter().map(|p| p.shape).collect();
        let exclude = |s: &Shape| tuned.contains(s) || s.form.beta;
        let other = random_problems_in(op, Forms::All, 300, 2, &exclude).unwrap();
        assert!(other.iter().all(|p| !exclude(&p.shape)));
        let e = random_problems_in(op, Forms::All, 2, 1, &|_| true).unwrap_err();
        assert!(e.to_string().contains("0 of 2 distinct"), "{e}");
    }
}

#[test]
fn forms_parse_and_name_themselves() {
    for f in Forms::ALL {
        assert_eq!(f.name().parse::<Forms>(), Ok(f));
    }
    assert_eq!(" PLAIN ".parse::<Forms>(), Ok(Forms::Plain));
    assert_eq!(Forms::default(), Forms::All);
    let e = "bogus".parse::<Forms>().unwrap_err();
    assert!(e.contains("unknown forms 'bogus'") && e.contains("all") && e.contains("plain"));
    let shapes = ["8x8x8", "8x8x8:nt:beta", "8x8x8:tt:b4:alpha:pad"]
        .map(|t| Shape::parse(Op::Gemm, t).unwrap());
    let counts = form_counts(Op::Gemm, &shapes);
    assert_eq!(
        counts,
        "nn 1, nt 1, tt 1; beta 1, pad 1, alpha 1, batched 1; plain 1"
    );
}

/// The shares a 60-problem draw of seed 3031 gives (printed with `--nocapture`).
#[test]
fn a_60_problem_draw_of_seed_3031() {
    for op in Op::ALL {
        let problems = random_problems_in(op, Forms::All, 60, 3031, NONE).unwrap();
        check_valid(op, &problems);
        let mut kinds: Vec<(Kind, usize)> = Vec::new();
        for p in &problems {
            match kinds.iter_mut().find(|(k, _)| *k == p.kind) {
                Some((_, n)) => *n += 1,
                None => kinds.push((p.kind, 1)),
            }
        }
        kinds.sort();
        let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let forms = form_counts(op, problems.iter().map(|p| &p.shape));
        println!("{op} seed 3031, 60 problems: {forms}; {}", kinds.join(", "));
        if op == Op::Gemm {
            assert!(forms.contains("nt 24"), "{forms}");
        }
    }
}

/// configs/suites/gemm-layers.toml: transformer layer calls, mostly NT, many decoding.
#[test]
fn the_layer_call_suite_loads_with_its_proportions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (op, problems) = from_suite(&root.join("configs/suites/gemm-layers.toml")).unwrap();
    assert_eq!(op, Op::Gemm);
    assert!((40..=48).contains(&problems.len()), "{}", problems.len());
    let shapes: Vec<&Shape> = problems.iter().map(|p| &p.shape).collect();
    let nt: Vec<&&Shape> = shapes
        .iter()
        .filter(|s| s.form.layout == Layout::Nt)
        .collect();
    assert!(nt.len() >= 24, "{} NT", nt.len());
    assert!(nt.iter().filter(|s| s.m <= 16).count() >= 12);
    let nn = |s: &&&Shape| s.form.is_plain();
    assert_eq!(shapes.iter().filter(nn).count() + nt.len(), shapes.len());
    for s in &shapes {
        assert!(s.m * s.n * s.k <= GEMM_MAX_MACS, "{}", s.label(op));
        assert!(
            [1, 2, 4, 8, 16, 64, 256, 1024, 4096].contains(&s.m),
            "{s:?}"
        );
        // N x K is a projection of a model in the table: QKV, output, MLP up or down.
        let projection = MODEL_WIDTHS.iter().any(|&(_, d, mlp, qkv)| {
            [(qkv, d), (d, d), (mlp, d), (d, mlp), (1024, d)].contains(&(s.n, s.k))
        });
        assert!(projection, "{}", s.label(op));
    }
}

#[test]
fn same_seed_same_problems_and_longer_draws_extend_shorter_ones() {
    for op in Op::ALL {
        let a = random_problems(op, 200, 7, NONE).unwrap();
        assert_eq!(a, random_problems(op, 200, 7, NONE).unwrap());
        assert_eq!(a[..50], random_problems(op, 50, 7, NONE).unwrap()[..]);
        assert_ne!(a, random_problems(op, 200, 8, NONE).unwrap());
        assert!(random_problems(op, 0, 7, NONE).unwrap().is_empty());
    }
}

#[test]
fn first_draws_and_kind_names_are_pinned() {
    // Catches any change to the generator or the mixture, and platform differences
    // (checked against the same draws computed with ln/exp in Python).
    let labels = |op| -> Vec<String> {
        let problems = random_problems(op, 3, 1, NONE).unwrap();
        let label = |p: &Problem| format!("{} {}", p.kind, p.shape.label(op));
        problems.iter().map(label).collect()
    };
    let gemm = [
        "tiny K 2386x7117x3",
        "tiny M/N 810x11x256",
        "huge K 86x198x14460",
    ];
    assert_eq!(labels(Op::Gemm), gemm);
    let gemv = ["tiny M/N 8x55802", "general 644x9119", "odd/prime 1277x181"];
    assert_eq!(labels(Op::Gemv), gemv);
    let names = "general, tiny M/N, tiny K, huge K, odd/prime, layer, listed";
    assert_eq!(Kind::ALL.map(Kind::name).join(", "), names);
    assert_eq!(Kind::TinyMn.to_string(), "tiny M/N");
}

#[test]
fn kinds_keep_their_bounds_the_caps_and_their_shares() {
    for op in Op::ALL {
        assert_eq!(mix(op).iter().map(|(_, p)| p).sum::<u32>(), 100);
        let problems = random_problems(op, 5000, 11, NONE).unwrap();
        for Problem { shape: s, kind } in &problems {
            // Also checks that every odd/prime size is an odd prime.
            assert!(within(op, *kind, s), "{op} {kind} {s:?}");
            assert!(Shape::new(op, s.m, s.n, s.k).is_ok());
        }
        let of_kind = |kind| problems.iter().filter(move |p| p.kind == kind);
        for (kind, percent) in mix(op) {
            let share = of_kind(kind).count() as f64 / 50.0;
            assert!((share - f64::from(percent)).abs() < 3.0, "{kind}: {share}");
        }
        // Log-uniform: about half of general's M below the geometric middle of its range
        // (16..8192 -> 362; 16..65536 -> 1024), a little more as the cap trims the top.
        let mid = if op == Op::Gemm { 362 } else { 1024 };
        let general = of_kind(Kind::General).count() as f64;
        let low = of_kind(Kind::General).filter(|p| p.shape.m < mid).count() as f64;
        assert!((0.45..0.62).contains(&(low / general)), "{low}/{general}");
    }
    // Both tiny-M and tiny-N gemm shapes occur.
    let problems = random_problems(Op::Gemm, 1000, 5, NONE).unwrap();
    let tiny: Vec<_> = problems.iter().filter(|p| p.kind == Kind::TinyMn).collect();
    let tiny_m = tiny.iter().filter(|p| p.shape.m <= 16).count();
    assert!(tiny_m > 40 && tiny.len() - tiny_m > 40, "{tiny_m}");
}

#[test]
fn no_duplicates_and_exclusion_is_honoured() {
    for op in Op::ALL {
        let problems = random_problems(op, 3000, 2, NONE).unwrap();
        let distinct: HashSet<_> = problems.iter().map(|p| p.shape).collect();
        assert_eq!(distinct.len(), problems.len());
        // Exclude the first 100 shapes of that draw and every shape with an even M.
        let tuned: HashSet<Shape> = problems[..100].iter().map(|p| p.shape).collect();
        let exclude = |s: &Shape| tuned.contains(s) || s.m.is_multiple_of(2);
        let other = random_problems(op, 500, 2, &exclude).unwrap();
        assert_eq!(other.len(), 500);
        assert!(other.iter().all(|p| !exclude(&p.shape)));
    }
    // Excluding everything fails with a reason instead of looping forever.
    let e = random_problems(Op::Gemv, 3, 1, &|_| true).unwrap_err();
    let WorkloadError::Exhausted { op, wanted, drawn } = e.clone();
    assert_eq!((op, wanted, drawn), (Op::Gemv, 3, 0));
    assert!(e.to_string().contains("0 of 3 distinct gemv"), "{e}");
}

#[test]
fn prime_and_log_uniform_helpers_are_exact() {
    let primes = [0, 1, 2, 17, 18, 8192, 65536].map(next_prime);
    assert_eq!(primes, [2, 2, 2, 17, 19, 8209, 65537]);
    // log_uniform reaches both ends and stays inside.
    let mut rng = Rng::new(4);
    let draws: Vec<u64> = (0..4000).map(|_| log_uniform(&mut rng, 1, 16)).collect();
    assert!(draws.iter().all(|v| (1..=16).contains(v)));
    assert!(draws.contains(&1) && draws.contains(&16));
}

#[test]
fn suite_files_become_listed_problems() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.toml");
    let text = "op = \"gemv\"\nshapes = [\"4x8\", \"16x1x2\", \"4x8\"]";
    std::fs::write(&path, text).unwrap();
    let (op, problems) = from_suite(&path).unwrap();
    assert_eq!(op, Op::Gemv);
    let want = [Shape::mnk(4, 1, 8), Shape::mnk(16, 1, 2)];
    assert_eq!(problems.iter().map(|p| p.shape).collect::<Vec<_>>(), want);
    assert!(problems.iter().all(|p| p.kind == Kind::Listed));
    let missing = from_suite(&dir.path().join("missing.toml"));
    assert!(matches!(missing, Err(SuiteError::Io { .. })));
}

#[test]
fn summary_of_a_known_list_and_refusals() {
    let s = Summary::of(&[4.0, 0.5, 2.0, 1.0]).unwrap();
    assert_eq!(s.count, 4);
    assert!((s.geomean - 2f64.sqrt()).abs() < 1e-12, "{}", s.geomean);
    // Ranks ceil(0.4) = 1, ceil(2) = 2, ceil(3.6) = 4.
    let stats = (s.min, s.p10, s.median, s.p90, s.max);
    assert_eq!(stats, (0.5, 0.5, 1.0, 4.0, 4.0));
    assert_eq!(s.share_at_least_one, 0.75);
    let one = Summary::of(&[3.0]).unwrap();
    let stats = (one.min, one.p10, one.median, one.p90, one.max);
    assert_eq!(stats, (3.0, 3.0, 3.0, 3.0, 3.0));
    assert!((one.geomean - 3.0).abs() < 1e-15);
    assert_eq!(Summary::of(&[]), None);
    for bad in [f64::NAN, 0.0, -1.0, f64::INFINITY] {
        assert_eq!(Summary::of(&[1.0, bad, 2.0]), None, "{bad}");
    }
}

#[test]
fn summary_percentiles_are_nearest_rank() {
    let values = |n: u32| (1..=n).rev().map(f64::from).collect::<Vec<_>>();
    let ranks = |n| Summary::of(&values(n)).map(|s| (s.p10, s.median, s.p90));
    assert_eq!(ranks(10), Some((1.0, 5.0, 9.0)));
    assert_eq!(ranks(20), Some((2.0, 10.0, 18.0)));
    // 0.1 * 30 is 3.0000000000000004 in floating point: the rank must still be 3.
    assert_eq!(ranks(30), Some((3.0, 15.0, 27.0)));
    assert_eq!(ranks(11), Some((2.0, 6.0, 10.0)));
    let share = Summary::of(&[0.5, 1.0, 0.9, 2.0, 0.1]).map(|s| s.share_at_least_one);
    assert_eq!(share, Some(0.4));
}
