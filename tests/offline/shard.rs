//! Sharding a suite without a GPU: every shape lands in exactly one shard, from `--shard` or
//! from Slurm's job-array variables, bad shard specs are refused, and merging the shards'
//! databases gives exactly the union of their entries, each with the producer that made it.

use crate::common;
use autotune::db::{Database, Entry, MergeOptions, Producer};
use autotune::problem::{Op, Shape};
use autotune::suite::Suite;
use autotune::tuning::shard::{self, Shard};
use std::collections::BTreeSet;

/// The shapes the CLI says shard `spec` tunes (it prints them before it looks for a GPU).
fn shard_shapes(suite: &str, spec: Option<&str>, env: &[(&str, &str)]) -> Vec<String> {
    let mut args = vec!["--suite", suite, "--no-save"];
    if let Some(s) = spec {
        args.extend(["--shard", s]);
    }
    let text = common::run_env(&args, env).stderr;
    if text.contains("nothing to tune in this shard") {
        return vec![];
    }
    let line = text
        .lines()
        .find(|l| l.starts_with("shard "))
        .unwrap_or_else(|| panic!("no shard line in: {text}"));
    line.rsplit(": ")
        .next()
        .unwrap()
        .split(", ")
        .map(str::to_string)
        .collect()
}

fn suite_shapes(path: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let v: toml::Value = toml::from_str(&text).unwrap();
    v["shapes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn shards_cover_every_shape_exactly_once() {
    for suite in ["configs/suites/gemm.toml", "configs/suites/gemv.toml"] {
        let all = suite_shapes(suite);
        for count in 1..=8 {
            let mut seen = Vec::new();
            for index in 0..count {
                seen.extend(shard_shapes(suite, Some(&format!("{index}/{count}")), &[]));
            }
            let unique: BTreeSet<_> = seen.iter().cloned().collect();
            assert_eq!(seen.len(), unique.len(), "{suite} {count}: a shape twice");
            assert_eq!(unique, all, "{suite} {count}: shapes lost or invented");
        }
    }
}

#[test]
fn slurm_array_variables_pick_the_shard() {
    let suite = "configs/suites/gemm.toml";
    let from_flag = shard_shapes(suite, Some("2/3"), &[]);
    // --array=1-3: task id 3 is the third shard.
    let from_slurm = shard_shapes(
        suite,
        None,
        &[
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_COUNT", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
        ],
    );
    assert_eq!(from_flag, from_slurm);
    assert!(!from_flag.is_empty());
}

#[test]
fn bad_shard_specs_are_refused_clearly() {
    for bad in ["3/3", "a/b", "1", "0/0"] {
        common::fails_with(
            &["--suite", "configs/suites/gemm.toml", "--shard", bad],
            &["--shard 0/4"],
        );
    }
}

const GPU: &str = "NVIDIA H100 80GB HBM3";

/// The entry a shard's run would write for `shape`, produced by `shard` on `host`.
fn entry(op: Op, shape: Shape, host: &str, sh: Shard) -> Entry {
    let ms = shape.flops() / 5e13 * 1e3 + 0.01;
    Entry {
        params: [("BM".to_string(), 64 * (1 + sh.index as i64))].into(),
        median_ms: ms,
        min_ms: ms,
        gflops: shape.flops() / (ms * 1e6),
        gbs: shape.min_bytes(op) / (ms * 1e6),
        cublas_median_ms: ms,
        vs_cublas: 1.0,
        produced_by: Some(Producer {
            host: host.to_string(),
            device: 0,
            pci_bus_id: Some("0000:18:00.0".to_string()),
            uuid: None,
            shard: Some(sh.to_string()),
        }),
        ..common::entry(GPU, op, &shape.label(op))
    }
}

#[test]
fn merging_shard_databases_gives_exactly_their_union() {
    for suite in ["configs/suites/gemm.toml", "configs/suites/gemv.toml"] {
        let suite = Suite::load(std::path::Path::new(suite)).unwrap();
        for count in 1..=8 {
            // What each task of an N-task job array writes: its shapes, one node each.
            let shards: Vec<(String, Database)> = (0..count)
                .map(|index| {
                    let sh = Shard { index, count };
                    let mut db = Database::new();
                    db.upsert_gpu(common::gpu_record(GPU));
                    for shape in shard::select(suite.op, &suite.shapes, sh) {
                        db.upsert(entry(suite.op, shape, &format!("node{index:02}"), sh));
                    }
                    (format!("tuning.shard-{index}-of-{count}.toml"), db)
                })
                .collect();
            let mut union: Vec<Entry> = shards
                .iter()
                .flat_map(|(_, db)| db.entries.iter().cloned())
                .collect();
            union.sort_by_key(|e| e.key());
            let (merged, report) =
                Database::merge_all(shards.clone(), MergeOptions::default()).unwrap();
            assert_eq!(merged.entries, union, "{count} shards");
            assert_eq!(merged.entries.len(), suite.shapes.len());
            assert_eq!(report.added, suite.shapes.len());
            assert!(report.conflicts.is_empty() && report.gpu_notes.is_empty());
            assert_eq!(merged.gpus, shards[0].1.gpus);
            // Each entry names the shard whose shapes it belongs to, and survives a save.
            for e in &merged.entries {
                let by = e.produced_by.as_ref().unwrap();
                let sh = Shard::parse(by.shard.as_deref().unwrap()).unwrap();
                assert_eq!(sh.count, count);
                assert_eq!(by.host, format!("node{:02}", sh.index));
                assert!(shard::select(suite.op, &suite.shapes, sh).contains(&e.shape()));
            }
            let text = merged.to_toml_string().unwrap();
            assert_eq!(Database::from_toml_str(&text, "merged").unwrap(), merged);
        }
    }
}
