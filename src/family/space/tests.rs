//! Unit tests of the space parser, pruning and launch geometry.

use super::*;

const SPACE: &str = r#"
name = "toy"
op = "gemm"
template = "toy.cu"
constraints = ["THREADS >= 32", "BM % TM == 0"]

[params]
BM = [32, 64, 128]
TM = [1, 2, 3, 4]

[derived]
THREADS = "ROWS * 16"
ROWS = "BM / TM"

[launch]
grid = ["ceil_div(N, 16)", "ceil_div(M, BM)", "1"]
block = ["THREADS", "1", "1"]
shared_bytes = "4 * BM * 16"
"#;

fn limits() -> Limits {
    Limits::for_arch(90).unwrap()
}

#[test]
fn enumerates_prunes_and_launches() {
    let s = Space::from_toml_str(SPACE, "toy.toml").unwrap();
    assert_eq!(s.cardinality(), 12);
    let shape = Shape::mnk(100, 33, 7);
    let p = s.prune(shape, &limits()).unwrap();
    assert_eq!(p.total, 12);
    // TM=3 divides none of 32/64/128; BM=128,TM=1 gives 2048 threads (> 1024).
    let names: Vec<String> = p.valid.iter().map(|c| c.params_label()).collect();
    assert_eq!(
        names,
        vec![
            "BM=32 TM=1",
            "BM=32 TM=2",
            "BM=32 TM=4",
            "BM=64 TM=1",
            "BM=64 TM=2",
            "BM=64 TM=4",
            "BM=128 TM=2",
            "BM=128 TM=4"
        ]
    );
    assert_eq!(p.rejected_by.get("BM % TM == 0"), Some(&3));
    assert_eq!(
        p.rejected_by.get("threads per block > device limit"),
        Some(&1)
    );
    assert_eq!(p.rejected_by.get("THREADS >= 32"), None);
    let c = &p.valid[4];
    let l = s.launch(c, shape, &limits()).unwrap();
    assert_eq!(l.grid, (3, 2, 1));
    assert_eq!(l.block, (512, 1, 1));
}

#[test]
fn rejects_bad_files() {
    let typo = SPACE.replace("BM % TM == 0", "BM % TMM == 0");
    let e = Space::from_toml_str(&typo, "t").unwrap_err().to_string();
    assert!(e.contains("TMM"), "{e}");
    let cycle = SPACE.replace("ROWS = \"BM / TM\"", "ROWS = \"THREADS / 16\"");
    assert!(Space::from_toml_str(&cycle, "t")
        .unwrap_err()
        .to_string()
        .contains("cycle"));
    let empty = SPACE.replace("TM = [1, 2, 3, 4]", "TM = []");
    assert!(Space::from_toml_str(&empty, "t").is_err());
    let grid2 = SPACE.replace(", \"1\"]\nblock", "]\nblock");
    assert!(Space::from_toml_str(&grid2, "t")
        .unwrap_err()
        .to_string()
        .contains("3 expressions"));
    let unknown = SPACE.replace("[launch]", "[launch]\nfoo = 1");
    assert!(matches!(
        Space::from_toml_str(&unknown, "t"),
        Err(SpaceError::Toml { .. })
    ));
}

#[test]
fn revision_defaults_to_1_and_starts_there() {
    assert_eq!(Space::from_toml_str(SPACE, "t").unwrap().revision, 1);
    let with = |r: &str| {
        SPACE.replace(
            "template = \"toy.cu\"",
            &format!("template = \"toy.cu\"\nrevision = {r}"),
        )
    };
    assert_eq!(Space::from_toml_str(&with("3"), "t").unwrap().revision, 3);
    let e = Space::from_toml_str(&with("0"), "t")
        .unwrap_err()
        .to_string();
    assert!(e.contains("'toy'") && e.contains("revision = 1"), "{e}");
    for bad in ["-1", "\"2\"", "1.5"] {
        let e = Space::from_toml_str(&with(bad), "t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("t.toml") && e.contains("revision"), "{bad}: {e}");
    }
}

#[test]
fn the_model_section_is_optional_and_checked() {
    let s = Space::from_toml_str(SPACE, "toy.toml").unwrap();
    let shape = Shape::mnk(64, 64, 8);
    let c = s.prune(shape, &limits()).unwrap().valid[0].clone();
    let h = s.model_hints(&c, shape, &limits()).unwrap();
    assert_eq!(h.static_shared_bytes, 4 * 32 * 16);
    assert_eq!(
        (
            h.registers,
            h.global_bytes,
            h.bytes_in_flight,
            h.fma_efficiency_pct
        ),
        (None, None, None, None)
    );

    let with = format!(
        "{SPACE}\n[model]\nregisters = \"32 + BM / TM\"\nglobal_bytes = \"4 * (M * K + K * N + M * N)\"\nbytes_in_flight = \"16 / (BM - BM)\"\nfma_efficiency_pct = \"90\"\n"
    );
    let s = Space::from_toml_str(&with, "toy.toml").unwrap();
    let h = s.model_hints(&c, shape, &limits()).unwrap();
    assert_eq!(h.registers, Some(32 + 32));
    assert_eq!(h.global_bytes, Some(4 * (64 * 8 + 8 * 64 + 64 * 64)));
    // Division by zero: left out, not an error.
    assert_eq!(h.bytes_in_flight, None);
    assert_eq!(h.fma_efficiency_pct, Some(90));

    let typo = with.replace("32 + BM / TM", "32 + BM / TMM");
    let e = Space::from_toml_str(&typo, "t").unwrap_err().to_string();
    assert!(e.contains("TMM"), "{e}");
    let unknown = format!("{SPACE}\n[model]\nregs = \"32\"\n");
    assert!(matches!(
        Space::from_toml_str(&unknown, "t"),
        Err(SpaceError::Toml { .. })
    ));
}

#[test]
fn limits_of_known_archs() {
    assert_eq!(
        Limits::for_arch(61).unwrap().max_shared_per_block_optin,
        48 * 1024
    );
    assert_eq!(
        Limits::for_arch(90).unwrap().max_shared_per_block_optin,
        227 * 1024
    );
    assert!(Limits::for_arch(42).is_none());
}

#[test]
fn workspace_bytes_are_evaluated_per_shape_and_checked() {
    let plain = Space::from_toml_str(SPACE, "toy.toml").unwrap();
    let shape = Shape::mnk(100, 33, 7);
    let c = plain.prune(shape, &limits()).unwrap().valid[0].clone();
    let l = plain.launch(&c, shape, &limits()).unwrap();
    assert_eq!((l.workspace_bytes, l.zero_output), (None, false));
    // Without atomics a family is deterministic unless it says otherwise.
    assert!(plain.deterministic);

    let with = SPACE.replace(
        "[launch]",
        "[launch]\nworkspace_bytes = \"4 * ceil_div(M, BM) * (BM * N + 1)\"",
    );
    let s = Space::from_toml_str(&with, "toy.toml").unwrap();
    let l = s.launch(&c, shape, &limits()).unwrap();
    // BM = 32: 4 row tiles of 32 x 33 floats and a counter each.
    assert_eq!(l.workspace_bytes, Some(4 * 4 * (32 * 33 + 1)));
    assert_eq!(l.workspace_zero, WorkspaceZero::Once, "the default");
    let every = with.replace("[launch]", "[launch]\nworkspace_zero = \"every_launch\"");
    let l = Space::from_toml_str(&every, "t")
        .unwrap()
        .launch(&c, shape, &limits())
        .unwrap();
    assert_eq!(l.workspace_zero, WorkspaceZero::EveryLaunch);
    assert_eq!(WorkspaceZero::EveryLaunch.name(), "every_launch");

    // Errors name the family and the field.
    let typo = SPACE.replace("[launch]", "[launch]\nworkspace_bytes = \"4 * SPLITK\"");
    let e = Space::from_toml_str(&typo, "t").unwrap_err().to_string();
    assert!(e.contains("'toy'") && e.contains("SPLITK"), "{e}");
    let bad = SPACE.replace("[launch]", "[launch]\nworkspace_bytes = \"4 *\"");
    let e = Space::from_toml_str(&bad, "t").unwrap_err();
    assert!(
        matches!(&e, SpaceError::Expr { family, place, .. } if family == "toy" && place == "launch.workspace_bytes"),
        "{e}"
    );
    let orphan = SPACE.replace("[launch]", "[launch]\nworkspace_zero = \"once\"");
    let e = Space::from_toml_str(&orphan, "t").unwrap_err().to_string();
    assert!(e.contains("'toy'") && e.contains("workspace_bytes"), "{e}");
    let unknown = SPACE.replace("[launch]", "[launch]\nworkspace_zero = \"sometimes\"");
    assert!(matches!(
        Space::from_toml_str(&unknown, "t"),
        Err(SpaceError::Toml { .. })
    ));

    // A negative size or an overflow on a huge shape makes the config invalid there, with a
    // reason, not the space.
    let negative = SPACE.replace("[launch]", "[launch]\nworkspace_bytes = \"0 - M\"");
    let s = Space::from_toml_str(&negative, "t").unwrap();
    let why = s.reject_reason(&c, shape, &limits()).unwrap().unwrap();
    assert!(why.contains("workspace_bytes = -100"), "{why}");
    let s = Space::from_toml_str(&with, "t").unwrap();
    let huge = Shape::mnk(1 << 40, 1 << 40, 1);
    let why = s.reject_reason(&c, huge, &limits()).unwrap().unwrap();
    assert!(why.contains("workspace_bytes"), "{why}");
}

#[test]
fn deterministic_defaults_from_atomics_and_cannot_contradict_them() {
    let atomic = SPACE.replace("[launch]", "[launch]\nzero_output = true");
    assert!(!Space::from_toml_str(&atomic, "t").unwrap().deterministic);
    let said = format!("deterministic = false\n{SPACE}");
    assert!(!Space::from_toml_str(&said, "t").unwrap().deterministic);
    let said = format!("deterministic = true\n{SPACE}");
    assert!(Space::from_toml_str(&said, "t").unwrap().deterministic);
    let contradiction = format!("deterministic = true\n{atomic}");
    let e = Space::from_toml_str(&contradiction, "t")
        .unwrap_err()
        .to_string();
    assert!(e.contains("'toy'") && e.contains("zero_output"), "{e}");
}

#[test]
fn the_deterministic_split_k_space_sizes_its_workspace_as_the_template_lays_it_out() {
    let cat = crate::family::catalog::Catalog::builtin().unwrap();
    let fam = cat.get("gemm_warptile_splitk_det").unwrap();
    assert!(fam.space.deterministic);
    let shape = Shape::mnk(257, 130, 16384);
    let pruned = fam.space.prune(shape, &limits()).unwrap();
    assert!(!pruned.valid.is_empty());
    for c in &pruned.valid {
        let l = fam.space.launch(c, shape, &limits()).unwrap();
        let p = |k: &str| c.params[k] as u64;
        let tiles = 257u64.div_ceil(p("BM")) * 130u64.div_ceil(p("BN"));
        // Partials [SPLIT_K][tiles][BM * BN] floats (none without a split), then a u32
        // counter per tile.
        let splits = if p("SPLIT_K") > 1 { p("SPLIT_K") } else { 0 };
        assert_eq!(
            l.workspace_bytes,
            Some(4 * splits * tiles * p("BM") * p("BN") + 4 * tiles),
            "{}",
            c.params_label()
        );
        assert_eq!(l.workspace_zero, WorkspaceZero::Once);
        assert!(!l.zero_output);
        assert_eq!(u64::from(l.grid.2), p("SPLIT_K"));
    }
}

/// The stream-K space's grid and workspace against a port of its template's partition
/// (templates/gemm_warptile_streamk.cu): stream-K blocks first, then one block per
/// data-parallel tile; every (tile, BK iteration) covered exactly once, each block with at most
/// two partial tiles (its two workspace slots), at most two contributors per tile when the
/// stream-K tiles are at least the blocks, and the workspace holding the slots and counters.
#[test]
fn the_stream_k_space_launches_and_sizes_its_workspace_as_the_template_partitions() {
    let cat = crate::family::catalog::Catalog::builtin().unwrap();
    let fam = cat.get("gemm_warptile_streamk").unwrap();
    assert!(fam.space.deterministic);
    let mut checked = 0;
    for (m, n, k) in [
        (1664, 1536, 4096),
        (1792, 1792, 1025),
        (3000, 3000, 3000),
        (16, 2048, 2048),
        (64, 64, 64),
    ] {
        let shape = Shape::mnk(m, n, k);
        // Every config of the space, whatever the shape constraints say: the template must be
        // right on every shape.
        for c in fam.space.enumerate() {
            let Ok(l) = fam.space.launch(&c, shape, &limits()) else {
                continue;
            };
            let p = |k: &str| c.params[k] as u64;
            let (bm, bn, skb) = (p("BM"), p("BN"), p("SK_BLOCKS"));
            let tiles = m.div_ceil(bm) * n.div_ceil(bn);
            let iters = k.div_ceil(p("BK"));
            let dp = (tiles / skb).saturating_sub(1) * skb;
            let sk_tiles = tiles - dp;
            let work = sk_tiles * iters;
            let g = skb.min(work);
            assert_eq!(u64::from(l.grid.0), g + dp, "{}", c.params_label());
            assert_eq!((l.grid.1, l.grid.2), (1, 1));
            assert_eq!(l.workspace_bytes, Some(4 * (2 * g * bm * bn + sk_tiles)));
            assert_eq!(l.workspace_zero, WorkspaceZero::Once);
            assert!(!l.zero_output);
            // Block b of the stream-K blocks: iterations [b*W/g, (b+1)*W/g) of the tile-major
            // (tile, iteration) space; then whole tiles.
            let mut ranges: Vec<(u64, u64)> =
                (0..g).map(|b| (b * work / g, (b + 1) * work / g)).collect();
            ranges.extend((0..dp).map(|d| ((sk_tiles + d) * iters, (sk_tiles + d + 1) * iters)));
            let mut contributors = vec![0u64; tiles as usize];
            let mut end = 0;
            for &(x0, x1) in &ranges {
                assert_eq!(x0, end, "ranges leave a gap or overlap");
                assert!(x1 > x0, "a block without work");
                end = x1;
                let (t0, t1) = (x0 / iters, (x1 - 1) / iters);
                let partial = (t0..=t1)
                    .filter(|&t| x0 > t * iters || x1 < (t + 1) * iters)
                    .count();
                assert!(partial <= 2);
                for t in t0..=t1 {
                    contributors[t as usize] += 1;
                }
            }
            assert_eq!(end, tiles * iters);
            let most = contributors.iter().copied().max().unwrap();
            if sk_tiles >= g {
                assert!(most <= 2, "{}", c.params_label());
            }
            assert!(most <= iters.div_ceil(work / g) + 1);
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked}");
}

#[test]
fn plain_families_refuse_other_forms_and_full_ones_read_the_form() {
    let plain = Space::from_toml_str(SPACE, "toy.toml").unwrap();
    assert_eq!(plain.interface, Interface::Plain);
    let tn = Shape::parse(Op::Gemm, "64x64x64:tn").unwrap();
    let p = plain.prune(tn, &limits()).unwrap();
    assert!(p.valid.is_empty());
    assert_eq!(p.rejected_by.get(PLAIN_ONLY), Some(&p.total));
    // The form's names are unknown to a plain space ...
    let reads_batch = SPACE.replace(
        r#""1"]
block"#,
        r#""BATCH"]
block"#,
    );
    assert!(Space::from_toml_str(&reads_batch, "t").is_err());
    // ... and known to a full one, with the problem's values.
    let full = reads_batch.replace(
        "template = \"toy.cu\"",
        "template = \"toy.cu\"\ninterface = \"full\"",
    );
    let full = Space::from_toml_str(&full, "t").unwrap();
    assert_eq!(full.interface, Interface::Full);
    let s = Shape::parse(Op::Gemm, "64x64x64:tt:b7:beta").unwrap();
    let config = &full.prune(s, &limits()).unwrap().valid[0];
    let env = full.env(config, s, &limits()).unwrap();
    assert_eq!(
        (env["BATCH"], env["TRANS_A"], env["TRANS_B"], env["BETA"]),
        (7, 1, 1, 1)
    );
    let launch = full.launch(config, s, &limits()).unwrap();
    assert_eq!(launch.grid.2, 7);
    assert_eq!(launch.interface, Interface::Full);
}

#[test]
fn math_defaults_to_simt_and_names_the_accepted_values() {
    assert_eq!(Space::from_toml_str(SPACE, "t").unwrap().math, Math::Simt);
    let with = |m: &str| {
        SPACE.replace(
            "template = \"toy.cu\"",
            &format!("template = \"toy.cu\"\nmath = {m}"),
        )
    };
    let s = Space::from_toml_str(&with("\"tf32x3\""), "t").unwrap();
    assert_eq!(s.math, Math::Tf32x3);
    assert_eq!(
        Space::from_toml_str(&with("\"simt\""), "t").unwrap().math,
        Math::Simt
    );
    let e = Space::from_toml_str(&with("\"tf32\""), "t.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("t.toml") && e.contains("simt") && e.contains("tf32x3"),
        "{e}"
    );
}

#[test]
fn untuned_constraints_keep_configs_from_shapes_nobody_tuned_only() {
    let text = SPACE.replace(
        "[params]",
        "untuned_constraints = [\"TM >= 2\", \"BM / TM < 64\"]\n\n[params]",
    );
    let s = Space::from_toml_str(&text, "toy.toml").unwrap();
    let shape = Shape::mnk(100, 33, 7);
    let valid = s.prune(shape, &limits()).unwrap().valid;
    // Pruning is unchanged: every config stays valid for tuning.
    assert_eq!(valid.len(), 8);
    let label = |c: &Config| c.params_label();
    let serving: Vec<String> = valid
        .iter()
        .filter(|c| s.serves_untuned(c, shape, &limits()))
        .map(label)
        .collect();
    assert_eq!(
        serving,
        [
            "BM=32 TM=2",
            "BM=32 TM=4",
            "BM=64 TM=2",
            "BM=64 TM=4",
            "BM=128 TM=4"
        ]
    );
    let why = |c: &Config| s.untuned_reject_reason(c, shape, &limits()).unwrap();
    assert_eq!(
        why(&valid[0]).as_deref(),
        Some("untuned constraint 'TM >= 2'")
    );
    assert_eq!(
        why(&valid[6]).as_deref(),
        Some("untuned constraint 'BM / TM < 64'")
    );
    // A space without the key serves every valid config untuned.
    let plain = Space::from_toml_str(SPACE, "toy.toml").unwrap();
    assert!(valid
        .iter()
        .all(|c| plain.serves_untuned(c, shape, &limits())));
    // Names are checked at load, as in every expression.
    let bad = SPACE.replace("[params]", "untuned_constraints = [\"TX > 1\"]\n\n[params]");
    let err = Space::from_toml_str(&bad, "toy.toml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("TX"), "{err}");
}
