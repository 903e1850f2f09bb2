//! Sharding a suite without a GPU: every shape lands in exactly one shard, from `--shard` or
//! from Slurm's job-array variables, and bad shard specs are refused.

use assert_cmd::Command;
use std::collections::BTreeSet;

/// The shapes the CLI says shard `spec` tunes (it prints them before it looks for a GPU).
fn shard_shapes(suite: &str, spec: Option<&str>, env: &[(&str, &str)]) -> Vec<String> {
    let mut cmd = Command::cargo_bin("autotune").unwrap();
    cmd.args(["--suite", suite, "--no-save"]);
    if let Some(s) = spec {
        cmd.args(["--shard", s]);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
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
        for count in 1..=5 {
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
        let out = Command::cargo_bin("autotune")
            .unwrap()
            .args(["--suite", "configs/suites/gemm.toml", "--shard", bad])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("--shard 0/4") && !err.contains("panicked"),
            "{err}"
        );
    }
}
