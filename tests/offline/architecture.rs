//! The module map's rules, checked on the sources: pure modules (no GPU, no CUDA) import
//! nothing that touches cudarc, and only the CUDA layer and the runtime name cudarc at all.

use crate::common::root;
use std::collections::{BTreeMap, BTreeSet};
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
    "src/plan",
    "src/suite.rs",
    "src/tuning/journal.rs",
    "src/tuning/replay.rs",
    "src/tuning/shard.rs",
    "src/tuning/queue.rs",
    "src/tuning/queue",
    "src/tuning/recheck.rs",
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
const CUDARC_USERS: &[&str] = &["src/cuda", "src/product/runtime.rs", "src/product/runtime"];

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

/// The module a `crate::` path names, as the source file that defines it: the longest prefix
/// of `path` (segments after `crate`) that is a file under src/ (`a/b.rs` or `a/b/mod.rs`).
fn module_file(src: &Path, path: &[&str]) -> Option<PathBuf> {
    (1..=path.len()).rev().find_map(|n| {
        let rel: PathBuf = path[..n].iter().collect();
        let file = src.join(&rel).with_extension("rs");
        let dir = src.join(&rel).join("mod.rs");
        [file, dir].into_iter().find(|f| f.is_file())
    })
}

/// Every path a `use` tree names, braces expanded: `a::{b, c::{d, e}}` gives `a::b`, `a::c::d`
/// and `a::c::e` (`self` names the prefix itself).
fn expand_use(tree: &str) -> Vec<String> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        let t = tree.split(" as ").next().unwrap_or(tree).trim();
        return vec![t.trim_end_matches("::self").to_string()];
    };
    let prefix = tree[..open].trim_end_matches("::");
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut parts, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(expand_use)
        .map(|p| match p.as_str() {
            "self" => prefix.to_string(),
            _ => format!("{prefix}::{p}"),
        })
        .collect()
}

/// The files each library source imports (`crate::` and `super::` paths in `use` items and in
/// code), test code left out. An import of the `mod.rs` of a folder the file is in is not
/// counted: a folder's face re-exports its children, which may use the names it hands on.
fn imports() -> BTreeMap<PathBuf, BTreeSet<PathBuf>> {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut graph = BTreeMap::new();
    for f in files {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == "tests.rs" || name.ends_with("_tests.rs") || name == "main.rs" {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap_or_default();
        // Test modules come last in a file.
        let code: String = text
            .split("#[cfg(test)]\nmod ")
            .next()
            .unwrap_or("")
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        // The module path of this file, for `super::`.
        let rel = f.strip_prefix(&src).unwrap_or(&f).with_extension("");
        let mut here: Vec<String> = rel
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        if here.last().is_some_and(|l| l == "mod" || l == "lib") {
            here.pop();
        }
        let mut paths: Vec<String> = Vec::new();
        let mut lines = code.lines();
        while let Some(line) = lines.next() {
            let t = line.trim_start();
            let t = t
                .strip_prefix("pub(crate) ")
                .or(t.strip_prefix("pub "))
                .unwrap_or(t);
            let Some(first) = t.strip_prefix("use ") else {
                continue;
            };
            let mut tree = first.to_string();
            while !tree.contains(';') {
                let Some(more) = lines.next() else { break };
                tree.push_str(more);
            }
            paths.extend(expand_use(tree.split(';').next().unwrap_or("")));
        }
        for (i, _) in code
            .match_indices("crate::")
            .chain(code.match_indices("super::"))
        {
            if i > 0
                && code[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':')
            {
                continue;
            }
            let end = code[i..]
                .find(|c: char| !ident(c))
                .map_or(code.len(), |e| i + e);
            paths.push(code[i..end].to_string());
        }
        let mut to = BTreeSet::new();
        for p in paths {
            let segs: Vec<&str> = p.split("::").filter(|s| !s.is_empty()).collect();
            let abs: Vec<&str> = match segs.first() {
                Some(&"crate") => segs[1..].to_vec(),
                Some(&"super") => {
                    let ups = segs.iter().take_while(|s| **s == "super").count();
                    let keep = here.len().saturating_sub(ups);
                    here[..keep]
                        .iter()
                        .map(String::as_str)
                        .chain(segs[ups..].iter().copied())
                        .collect()
                }
                _ => continue,
            };
            if let Some(target) = module_file(&src, &abs) {
                let face_of_mine = target.file_name().is_some_and(|n| n == "mod.rs")
                    && target.parent().is_some_and(|d| f.starts_with(d));
                if target != f && !face_of_mine {
                    to.insert(target);
                }
            }
        }
        graph.insert(f, to);
    }
    graph
}

/// The files that import each other in a loop (strongly connected components of two or more
/// files), each with the imports that tie it.
fn import_loops(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<String>> {
    let reach = |from: &PathBuf| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(n) = todo.pop() {
            for m in graph.get(&n).into_iter().flatten() {
                if seen.insert(m.clone()) {
                    todo.push(m.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&PathBuf, BTreeSet<PathBuf>> =
        graph.keys().map(|f| (f, reach(f))).collect();
    let mut done = BTreeSet::new();
    let mut loops = Vec::new();
    for (f, r) in &reaches {
        if done.contains(*f) || !r.contains(*f) {
            continue;
        }
        let members: BTreeSet<&PathBuf> = reaches
            .iter()
            .filter(|(g, gr)| r.contains(**g) && gr.contains(*f))
            .map(|(g, _)| *g)
            .collect();
        let short = |p: &PathBuf| p.strip_prefix(root()).unwrap_or(p).display().to_string();
        let mut ties = Vec::new();
        for m in &members {
            done.insert((*m).clone());
            for t in &graph[*m] {
                if members.contains(t) {
                    ties.push(format!("{} -> {}", short(m), short(t)));
                }
            }
        }
        loops.push(ties);
    }
    loops
}

#[test]
fn no_source_files_import_each_other_in_a_loop() {
    let graph = imports();
    // The check sees imports: these are known edges of the tree.
    let edge = |a: &str, b: &str| graph[&root().join(a)].contains(&root().join(b));
    assert!(edge("src/cuda/bench.rs", "src/cuda/baseline.rs"));
    assert!(edge("src/product/runtime.rs", "src/plan/mod.rs"));
    assert!(edge("src/cuda/cublas_lib.rs", "src/cuda/error.rs"));
    let loops = import_loops(&graph);
    assert!(
        loops.is_empty(),
        "source files that import each other in a loop (move what both need into a module \
         below them, or turn the lower one's dependency around):\n{}",
        loops
            .iter()
            .map(|l| l.join("\n  "))
            .collect::<Vec<_>>()
            .join("\n\n")
    );
    // A planted loop is found.
    let mut planted = graph.clone();
    let (a, b) = (
        root().join("src/cuda/baseline.rs"),
        root().join("src/cuda/bench.rs"),
    );
    planted.get_mut(&a).map(|s| s.insert(b.clone()));
    let found = import_loops(&planted);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains(&"src/cuda/baseline.rs -> src/cuda/bench.rs".to_string()));
}
