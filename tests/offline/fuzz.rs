//! No input panics: every parser that a user's text reaches (shapes, shards, space expressions
//! and files, suites, coverage grids, databases, journals, the portability file) gets seeded
//! random and mutated inputs, and must answer with a value or an error, never a panic. A
//! database that parses is also written back and looked up in (the coverage predictor runs on
//! whatever numbers it holds). Needs no GPU and no NVRTC. `AUTOTUNE_FUZZ_ROUNDS` scales the
//! number of inputs (default 1; the seed is fixed, so a failure repeats).

use autotune::db::Database;
use autotune::family::catalog::Catalog;
use autotune::family::expr::Expr;
use autotune::family::space::Space;
use autotune::problem::{Op, Shape};
use autotune::product::lookup;
use autotune::suite::Suite;
use autotune::tuning::cover::Grid;
use autotune::tuning::cross::Portability;
use autotune::tuning::journal::Recorded;
use autotune::tuning::shard::Shard;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// SplitMix64, as the search uses: reproducible on every platform.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Pieces that parsers trip on: numbers at and past every integer limit, floats TOML cannot
/// hold in our records, separators, quotes, brackets, and non-ASCII text.
const NASTY: &[&str] = &[
    "0",
    "-1",
    "1",
    "x",
    "X",
    "×",
    "é",
    " ",
    "\n",
    "\t",
    "\"",
    "'",
    "[",
    "]",
    "{",
    "}",
    "=",
    ",",
    ".",
    "e",
    "nan",
    "inf",
    "-inf",
    "1e309",
    "-0.0",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775808",
    "18446744073709551616",
    "99999999999999999999999",
    "0x10",
    "/",
    "%",
    "*",
    "(",
    ")",
    "<<",
    "==",
    "&&",
    "#",
    "[[entry]]",
    "[[coverage]]",
    "\u{feff}",
    "\0",
];

fn rounds() -> usize {
    std::env::var("AUTOTUNE_FUZZ_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// A random string of nasty pieces.
fn garbage(rng: &mut Rng) -> String {
    let n = rng.below(8);
    (0..n).map(|_| rng.pick(NASTY)).collect()
}

/// `text` with a few random edits: deletions, duplications, insertions of nasty pieces,
/// truncation. Works on chars, so the result stays UTF-8.
fn mutate(rng: &mut Rng, text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let len = chars.len();
        let at = rng.below(len + 1);
        match rng.below(5) {
            0 if len > 0 => {
                let end = (at + 1 + rng.below(16)).min(len);
                chars.drain(at.min(end)..end);
            }
            1 if len > 0 => {
                let end = (at + 1 + rng.below(64)).min(len);
                let piece: Vec<char> = chars[at.min(end)..end].to_vec();
                chars.splice(at..at, piece);
            }
            2 => chars.truncate(at),
            _ => {
                let piece: Vec<char> = rng.pick(NASTY).chars().collect();
                chars.splice(at..at, piece);
            }
        }
    }
    chars.into_iter().collect()
}

/// Runs `f` on `input`; a panic fails the test with the input that caused it.
fn no_panic(what: &str, input: &str, f: impl FnOnce()) {
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        panic!("{what} panicked on input {input:?}");
    }
}

fn read(path: &str) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn shapes_shards_and_expressions_never_panic() {
    let mut rng = Rng(0x5EED);
    let names = ["BM", "BN", "K", "M", "N", "x"];
    for _ in 0..4000 * rounds() {
        let s = garbage(&mut rng);
        no_panic("Shape::parse", &s, || {
            let _ = Shape::parse(Op::Gemm, &s);
            let _ = Shape::parse(Op::Gemv, &s);
        });
        no_panic("Shard::parse", &s, || {
            let _ = Shard::parse(&s);
        });
        let expr = format!(
            "{}{}{}",
            rng.pick(&names),
            garbage(&mut rng),
            rng.pick(&names)
        );
        no_panic("Expr", &expr, || {
            if let Ok(e) = Expr::parse(&expr) {
                let _ = e.names();
                for v in [0, 1, -1, i64::MAX, i64::MIN, 4096] {
                    let env = names.iter().map(|n| (n.to_string(), v)).collect();
                    let _ = e.eval(&env);
                }
            }
        });
    }
}

#[test]
fn space_suite_and_grid_files_never_panic() {
    let mut rng = Rng(7);
    let inputs = [
        read("configs/spaces/gemm_warptile.toml"),
        read("configs/spaces/gemv_split_k.toml"),
        read("configs/suites/gemm.toml"),
        read("configs/coverage/gemm.toml"),
        read("configs/coverage/gemv.toml"),
    ];
    for _ in 0..600 * rounds() {
        for text in &inputs {
            let t = mutate(&mut rng, text);
            no_panic("space, suite or grid", &t, || {
                if let Ok(space) = Space::from_toml_str(&t, "fuzz.toml") {
                    let _ = space.enumerate().len();
                }
                let _ = Suite::from_toml_str(&t, "fuzz.toml");
                if let Ok(g) = Grid::from_toml_str(&t, "fuzz.toml") {
                    let _ = (g.shapes().len(), g.pool().len());
                }
            });
        }
    }
}

#[test]
fn databases_never_panic_and_what_parses_saves_and_predicts() {
    let mut rng = Rng(11);
    let catalog = Catalog::builtin().unwrap();
    let small = read("tests/data/h200-db.toml");
    let shipped = read("results/tuning.toml");
    // The shipped file's coverage starts after its entries: mutate there too.
    let coverage_at = shipped.find("[[coverage]]").unwrap_or(0);
    let shapes = [
        Shape::mnk(777, 1333, 555),
        Shape::mnk(1, 1, 1),
        Shape::mnk(65536, 1, 65536),
    ];
    for round in 0..300 * rounds() {
        let t = if round % 4 == 0 {
            let (head, tail) = shipped.split_at(coverage_at);
            format!("{head}{}", mutate(&mut rng, tail))
        } else {
            mutate(&mut rng, &small)
        };
        no_panic("Database", &t, || {
            if let Ok(db) = Database::from_toml_str(&t, "fuzz.toml") {
                let _ = db.to_toml_string();
                for gpu in ["NVIDIA H100 80GB HBM3", "NVIDIA H200"] {
                    for s in shapes {
                        let op = if s.n == 1 { Op::Gemv } else { Op::Gemm };
                        let _ = lookup::lookup(&db, &catalog, gpu, Some("sm_90"), op, s);
                    }
                }
            }
        });
    }
}

#[test]
fn journal_and_portability_files_never_panic() {
    let mut rng = Rng(13);
    let dir = tempfile::tempdir().unwrap();
    let journal = read("tests/data/journals/NVIDIA_H100_80GB_HBM3-gemv-256x65536.jsonl");
    let portability = read("results/portability.json");
    for i in 0..150 * rounds() {
        let j = dir.path().join(format!("j{i}.jsonl"));
        let t = mutate(&mut rng, &journal);
        std::fs::write(&j, &t).unwrap();
        no_panic("journal", &t, || {
            let _ = Recorded::load(&j);
        });
        let p = dir.path().join(format!("p{i}.json"));
        let t = mutate(&mut rng, &portability);
        std::fs::write(&p, &t).unwrap();
        no_panic("portability file", &t, || {
            let _ = Portability::load(&p);
        });
    }
}
