//! The module map's rules, checked on the sources: pure modules (no GPU, no CUDA) import
//! nothing that touches cudarc, and only the CUDA layer and the runtime name cudarc at all.

use crate::common::root;
use std::path::{Path, PathBuf};

/// Modules that must build and run with no GPU and no CUDA.
const PURE: &[&str] = &[
    "src/problem.rs",
    "src/gpu.rs",
    "src/family",
    "src/measure",
    "src/search",
    "src/db",
    "src/fileio.rs",
    "src/provenance.rs",
    "src/report",
    "src/tuning/model.rs",
    "src/tuning/journal.rs",
    "src/tuning/replay.rs",
    "src/tuning/suite.rs",
    "src/tuning/shard.rs",
    "src/tuning/recheck.rs",
    "src/tuning/outcome.rs",
    "src/tuning/plan.rs",
    "src/tuning/verdict.rs",
    "src/tuning/sweep.rs",
    "src/product/lookup.rs",
    "src/product/select.rs",
];

/// What a pure module may not name: the CUDA layer, cudarc, and the modules that run kernels.
const IMPURE: &[&str] = &[
    "crate::cuda",
    "cudarc",
    "crate::product::runtime",
    "crate::tuning::tune",
    "crate::tuning::evaluator",
    "crate::tuning::cross",
];

/// The only places that may name cudarc.
const CUDARC_USERS: &[&str] = &["src/cuda", "src/product/runtime.rs"];

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            rust_files(&p, out);
        }
    } else if path.extension().is_some_and(|x| x == "rs") {
        out.push(path.to_path_buf());
    }
}

/// Lines of code, comments left out (doc comments may mention any module).
fn code_lines(path: &Path) -> Vec<(usize, String)> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect()
}

#[test]
fn pure_modules_import_nothing_that_needs_a_gpu() {
    let mut files = Vec::new();
    for p in PURE {
        rust_files(&root().join(p), &mut files);
    }
    assert!(
        files.len() > 20,
        "the pure module list matches too few files: {files:?}"
    );
    let mut bad = Vec::new();
    for f in &files {
        for (n, line) in code_lines(f) {
            for word in IMPURE {
                if line.contains(word) {
                    bad.push(format!("{}:{n}: {}", f.display(), line.trim()));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "pure modules naming GPU code:\n{}",
        bad.join("\n")
    );
}

#[test]
fn only_the_cuda_layer_and_the_runtime_name_cudarc() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let allowed: Vec<PathBuf> = CUDARC_USERS.iter().map(|p| root().join(p)).collect();
    let mut bad = Vec::new();
    for f in &files {
        if allowed.iter().any(|a| f.starts_with(a)) {
            continue;
        }
        for (n, line) in code_lines(f) {
            if line.contains("cudarc") {
                bad.push(format!("{}:{n}: {}", f.display(), line.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "cudarc named outside src/cuda and the runtime:\n{}",
        bad.join("\n")
    );
}

#[test]
fn no_source_file_is_over_900_lines() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).ok()?.lines().count();
            (n > 900).then(|| format!("{}: {n} lines", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these files:\n{}", long.join("\n"));
}

/// docs/architecture.md lists the pure modules between two markers: exactly [`PURE`], so the
/// page a newcomer reads and the rule this file checks are one list.
#[test]
fn the_architecture_page_lists_the_pure_modules_this_test_checks() {
    let page = root().join("docs/architecture.md");
    let text = std::fs::read_to_string(&page)
        .unwrap_or_else(|e| panic!("reading {}: {e}", page.display()));
    let listed: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("pure modules: begin"))
        .skip(1)
        .take_while(|l| !l.contains("pure modules: end"))
        .filter_map(|l| l.trim().strip_prefix("- `")?.strip_suffix('`'))
        .collect();
    let mut want: Vec<&str> = PURE.to_vec();
    let mut got = listed.clone();
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(
        got, want,
        "docs/architecture.md's list of pure modules differs from PURE in tests/offline/architecture.rs"
    );
}
