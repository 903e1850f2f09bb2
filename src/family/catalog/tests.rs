//! Unit tests of the catalog: loading, includes, checksums and identities.

use super::*;
use crate::family::space::Limits;
use crate::problem::Shape;

#[test]
fn builtin_catalog_loads_and_instantiates() {
    let cat = Catalog::builtin().unwrap();
    assert!(
        cat.for_op(Op::Gemm).count() >= 2,
        "two gemm families expected"
    );
    let limits = Limits::for_arch(90).unwrap();
    // A square shape, and shapes with few rows or few columns, a short K and few rows of
    // the layer call X W^T: the GEMV-shaped and short-K families offer configs only there.
    let mut shapes: Vec<Shape> = [(64, 64, 64), (8, 64, 64), (64, 8, 64), (64, 64, 4)]
        .map(|(m, n, k)| Shape::mnk(m, n, k))
        .to_vec();
    shapes.push(Shape::parse(Op::Gemm, "8x64x64:nt").unwrap());
    for fam in cat.families() {
        let pruned = shapes
            .iter()
            .map(|&s| fam.space.prune(s, &limits).unwrap())
            .find(|p| !p.valid.is_empty());
        let Some(pruned) = pruned else {
            panic!("{} has no valid config on {shapes:?}", fam.name());
        };
        let src = fam.instantiate(&pruned.valid[0]);
        assert!(src
            .code
            .contains(&format!("#define KERNEL_NAME {}", src.kernel_name)));
        for (k, v) in &pruned.valid[0].params {
            assert!(src.code.contains(&format!("#define {k} {v}\n")));
        }
        assert!(
            src.code.contains("KERNEL_NAME("),
            "template must declare KERNEL_NAME"
        );
        assert!(
            !src.code.contains("#include \""),
            "{}: includes are inlined",
            fam.name()
        );
        assert_eq!(fam.checksum.len(), 64);
    }
}

#[test]
fn deterministic_only_drops_the_atomic_families_and_refuses_naming_one() {
    let cat = Catalog::builtin().unwrap();
    // Atomic accumulation (zero_output) is non-deterministic by default; the rest are
    // deterministic, the workspace split-K family by its own say.
    assert_eq!(cat.deterministic("gemm_warptile_splitk"), Some(false));
    assert_eq!(cat.deterministic("gemv_split_k"), Some(false));
    assert_eq!(cat.deterministic("gemm_warptile_splitk_det"), Some(true));
    assert_eq!(cat.deterministic("gemm_warptile"), Some(true));
    assert_eq!(cat.deterministic("nope"), None);
    let all = cat.families().len();
    let det = cat.clone().deterministic_only(&[]).unwrap();
    assert!(det.families().iter().all(|f| f.space.deterministic));
    assert_eq!(det.families().len(), all - 2);
    assert!(det.get("gemm_warptile_splitk").is_err());
    assert!(det.get("gemm_warptile_splitk_det").is_ok());
    // Naming a deterministic (or unknown: left to the planner) family is fine.
    assert!(cat
        .clone()
        .deterministic_only(&["gemm_warptile_splitk_det".into(), "nope".into()])
        .is_ok());
    let err = cat
        .deterministic_only(&["gemm_tiled".into(), "gemm_warptile_splitk".into()])
        .unwrap_err();
    assert!(
        matches!(&err, CatalogError::NotDeterministic { family, .. } if family == "gemm_warptile_splitk"),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("'gemm_warptile_splitk'") && msg.contains("gemm_warptile_splitk_det"),
        "{msg}"
    );
}

#[test]
fn kernel_names_are_unique_within_a_space() {
    let cat = Catalog::builtin().unwrap();
    for fam in cat.families() {
        let mut names: Vec<String> = fam
            .space
            .enumerate()
            .iter()
            .map(|c| fam.kernel_name(c))
            .collect();
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n);
    }
}

const TOY_SPACE: &str = r#"
name = "toy"
op = "gemv"
template = "toy.cu"
[params]
B = [32]
[launch]
grid = ["M", "1", "1"]
block = ["B", "1", "1"]
"#;

fn toy(template: &str, headers: &[(&str, &str)]) -> Result<Family, CatalogError> {
    let space = Space::from_toml_str(TOY_SPACE, "toy.toml").unwrap();
    let headers = headers
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    Family::new(space, template.to_string(), &headers, "hdrs/")
}

/// The checksum formula before includes existed: template, NUL, space.
fn plain_checksum(template: &str, space: &str) -> String {
    let mut h = Sha256::new();
    h.update(template.as_bytes());
    h.update([0u8]);
    h.update(space.as_bytes());
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn includes_are_inlined_between_line_markers() {
    let f = toy(
        "// toy\n#include \"a.cuh\"  // why\nint k;\n",
        &[("a.cuh", "int a;\nint b;\n"), ("unused.cuh", "int u;\n")],
    )
    .unwrap();
    assert_eq!(
        f.inlined,
        "// toy\n#line 1 \"include/a.cuh\"\nint a;\nint b;\n#line 3 \"toy.cu\"\nint k;\n"
    );
    assert_eq!(f.includes, ["a.cuh"]);
    let code = f.instantiate(&f.space.enumerate()[0]).code;
    assert!(
        code.contains(&format!("#line 1 \"toy.cu\"\n{}", f.inlined)),
        "{code}"
    );
    assert!(!code.contains("#include"), "{code}");
    // A header without a final newline still ends its line before the marker; a template
    // ending in an include gets the marker too.
    let f = toy("#include \"a.cuh\"", &[("a.cuh", "int a;")]).unwrap();
    assert_eq!(
        f.inlined,
        "#line 1 \"include/a.cuh\"\nint a;\n#line 2 \"toy.cu\"\n"
    );
    // Angle-bracket includes are NVRTC's.
    let f = toy("#include <cuda_fp16.h>\n", &[]).unwrap();
    assert_eq!(f.inlined, f.template);
    assert!(f.includes.is_empty());
}

#[test]
fn nested_includes_are_inlined_once() {
    let f = toy(
        "#include \"outer.cuh\"\n  #  include \"inner.cuh\"\nint k;\n",
        &[
            ("outer.cuh", "// outer\n#include \"inner.cuh\"\nint o;\n"),
            ("inner.cuh", "int i;\n#include \"outer.cuh\"\n"),
        ],
    )
    .unwrap();
    let want = [
        "#line 1 \"include/outer.cuh\"",
        "// outer",
        "#line 1 \"include/inner.cuh\"",
        "int i;",
        // The cycle back to outer.cuh is cut by the once rule.
        "// outer.cuh: inlined above",
        "#line 3 \"include/outer.cuh\"",
        "int o;",
        "#line 2 \"toy.cu\"",
        "// inner.cuh: inlined above",
        "int k;",
    ];
    assert_eq!(f.inlined.lines().collect::<Vec<_>>(), want);
    assert!(!f.inlined.contains("#include"));
    assert_eq!(f.includes, ["outer.cuh", "inner.cuh"]);
}

#[test]
fn a_missing_include_names_the_family_and_the_header() {
    let err = toy(
        "int k;\n#include \"a.cuh\"\n",
        &[("a.cuh", "\n\n#include \"gone.cuh\"\n")],
    )
    .unwrap_err();
    match &err {
        CatalogError::MissingInclude {
            family,
            include,
            file,
            line,
            dir,
        } => {
            assert_eq!(
                (family.as_str(), include.as_str(), file.as_str(), *line),
                ("toy", "gone.cuh", "include/a.cuh", 3)
            );
            assert_eq!(dir, "hdrs/");
        }
        other => panic!("{other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("'toy'") && msg.contains("\"gone.cuh\"") && msg.contains("hdrs/"),
        "{msg}"
    );
}

#[test]
fn checksum_covers_includes_and_is_unchanged_without_them() {
    let t = "#include \"a.cuh\"\nint k;\n";
    let one = toy(t, &[("a.cuh", "int a;\n")]).unwrap();
    let two = toy(t, &[("a.cuh", "int a2;\n")]).unwrap();
    assert_ne!(
        one.content_checksum, two.content_checksum,
        "an include's text is covered"
    );
    // Without a fingerprint the identity is the content checksum.
    assert_eq!(one.checksum, one.content_checksum);
    assert_eq!(
        one.content_checksum,
        toy(t, &[("a.cuh", "int a;\n"), ("b.cuh", "x")])
            .unwrap()
            .content_checksum,
        "headers the template does not include are not"
    );

    // Without includes: the formula from before includes existed, whatever the headers,
    // and byte for byte the same instantiated source.
    let plain = "int k;\n";
    let f = toy(plain, &[("a.cuh", "int a;\n")]).unwrap();
    assert_eq!(f.content_checksum, plain_checksum(plain, TOY_SPACE));
    assert!(f
        .instantiate(&f.space.enumerate()[0])
        .code
        .ends_with("#line 1\nint k;\n"));
    let cat = Catalog::builtin().unwrap();
    for fam in cat.families().iter().filter(|f| f.includes.is_empty()) {
        assert_eq!(
            fam.content_checksum,
            plain_checksum(&fam.template, &fam.space.source),
            "{}",
            fam.name()
        );
    }
    // The simplest tile templates share no header. The others are composed from shared
    // headers; their identity is their fingerprint's checksum, not their text's, so their
    // entries keep (family::fingerprint).
    for name in ["gemm_tiled", "gemm_tile2d"] {
        assert!(cat.get(name).unwrap().includes.is_empty(), "{name}");
    }
    for name in ["gemm_warptile", "gemm_warptile_splitk", "gemm_general"] {
        let f = cat.get(name).unwrap();
        assert!(!f.includes.is_empty(), "{name}");
        assert_eq!(
            Some(&f.checksum),
            f.fingerprint.as_ref().map(|fp| &fp.checksum),
            "{name}"
        );
    }
    assert!(cat.for_op(Op::Gemv).all(|f| !f.includes.is_empty()));
}

#[test]
fn from_dir_matches_builtin_and_reports_missing_template() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let disk = Catalog::from_dir(root).unwrap();
    let builtin = Catalog::builtin().unwrap();
    let sums = |c: &Catalog| {
        c.families()
            .iter()
            .map(|f| f.checksum.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(sums(&disk), sums(&builtin));

    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("configs/spaces")).unwrap();
    std::fs::create_dir_all(tmp.path().join("templates")).unwrap();
    let space = std::fs::read_to_string(root.join("configs/spaces/gemm_tiled.toml")).unwrap();
    std::fs::write(tmp.path().join("configs/spaces/gemm_tiled.toml"), space).unwrap();
    let err = Catalog::from_dir(tmp.path()).unwrap_err();
    assert!(matches!(err, CatalogError::MissingTemplate { .. }), "{err}");

    // Without templates/include/, a template without includes loads, one with includes
    // names the header and where it was looked for.
    for name in ["gemm_tiled", "gemv_warp_row"] {
        let space =
            std::fs::read_to_string(root.join(format!("configs/spaces/{name}.toml"))).unwrap();
        std::fs::write(
            tmp.path().join(format!("configs/spaces/{name}.toml")),
            space,
        )
        .unwrap();
        std::fs::copy(
            root.join(format!("templates/{name}.cu")),
            tmp.path().join(format!("templates/{name}.cu")),
        )
        .unwrap();
    }
    let err = Catalog::from_dir(tmp.path()).unwrap_err();
    assert!(
        matches!(&err, CatalogError::MissingInclude { family, include, .. }
            if family == "gemv_warp_row" && include == "gemv_common.cuh"),
        "{err}"
    );
    assert!(err.to_string().contains("templates/include"), "{err}");
    std::fs::remove_file(tmp.path().join("configs/spaces/gemv_warp_row.toml")).unwrap();
    let cat = Catalog::from_dir(tmp.path()).unwrap();
    assert_eq!(
        cat.get("gemm_tiled").unwrap().checksum,
        builtin.get("gemm_tiled").unwrap().checksum
    );
}

/// A family read from a directory is the built-in one, identity included, when its texts are
/// the built-in ones; edited, it is identified by its text alone.
#[test]
fn a_directory_family_takes_the_builtin_identity_only_when_identical() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let builtin = Catalog::builtin().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(tmp.path().join("configs/spaces")).unwrap();
    std::fs::create_dir_all(tmp.path().join("templates")).unwrap();
    let space = std::fs::read_to_string(root.join("configs/spaces/gemm_tiled.toml")).unwrap();
    std::fs::write(tmp.path().join("configs/spaces/gemm_tiled.toml"), &space).unwrap();
    let template = std::fs::read_to_string(root.join("templates/gemm_tiled.cu")).unwrap();
    let write = |text: &str| std::fs::write(tmp.path().join("templates/gemm_tiled.cu"), text);
    write(&template).unwrap();
    let b = builtin.get("gemm_tiled").unwrap();
    let same = Catalog::from_dir(tmp.path()).unwrap();
    let f = same.get("gemm_tiled").unwrap();
    // The built-in identity is its fingerprint's, not its text's hash.
    assert_ne!(b.checksum, b.content_checksum);
    assert_eq!((&f.checksum, &f.fingerprint), (&b.checksum, &b.fingerprint));
    assert_eq!(
        same.freshness("gemm_tiled", &b.checksum),
        Freshness::Current
    );
    // Edited (even a comment): its own text's checksum, so entries of the built-in family are
    // stale for it.
    write(&format!("// mine\n{template}")).unwrap();
    let edited = Catalog::from_dir(tmp.path()).unwrap();
    let f = edited.get("gemm_tiled").unwrap();
    assert_eq!(f.checksum, f.content_checksum);
    assert!(f.fingerprint.is_none());
    assert_eq!(
        edited.freshness("gemm_tiled", &b.checksum),
        Freshness::Stale
    );
}
