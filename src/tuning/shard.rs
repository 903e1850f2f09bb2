//! Splitting a suite's shapes between shards (Slurm job-array tasks, separate machines; the GPUs
//! of one machine share a work queue instead, [`crate::tuning::queue`]). Pure: every shard computes the same assignment from the
//! same suite, so shards need no coordination, and each shape lands in exactly one shard.

use crate::problem::{Op, Shape};
use std::path::{Path, PathBuf};

/// Why a shard could not be chosen.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShardError {
    /// The text is not `i/N` with `0 <= i < N`.
    #[error("shard '{text}' is not INDEX/COUNT with 0 <= INDEX < COUNT (e.g. 0/4): {reason}")]
    Syntax {
        /// What was given.
        text: String,
        /// What is wrong.
        reason: String,
    },
    /// Slurm's variables are inconsistent.
    #[error(
        "SLURM_ARRAY_TASK_ID={id} / SLURM_ARRAY_TASK_COUNT={count} do not name a shard: {reason}"
    )]
    Slurm {
        /// The task id.
        id: String,
        /// The task count.
        count: String,
        /// What is wrong.
        reason: String,
    },
}

/// One shard of `count`: `index` in `0..count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard.
    pub index: usize,
    /// How many there are.
    pub count: usize,
}

impl Shard {
    /// Parses `i/N`.
    pub fn parse(text: &str) -> Result<Shard, ShardError> {
        let err = |reason: &str| ShardError::Syntax {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| err("no '/' between index and count"))?;
        let index: usize = i
            .trim()
            .parse()
            .map_err(|_| err("the index is not a number"))?;
        let count: usize = n
            .trim()
            .parse()
            .map_err(|_| err("the count is not a number"))?;
        if count == 0 {
            return Err(err("the count must be at least 1"));
        }
        if index >= count {
            return Err(err(
                "the index must be below the count (shards count from 0)",
            ));
        }
        Ok(Shard { index, count })
    }

    /// The shard of a Slurm job-array task, from `SLURM_ARRAY_TASK_ID`, `SLURM_ARRAY_TASK_COUNT`
    /// and `SLURM_ARRAY_TASK_MIN` (ids need not start at 0: `--array=1-8` works); `None`
    /// outside a job array. `get` reads a variable (the environment, or a map in tests).
    pub fn from_slurm(get: impl Fn(&str) -> Option<String>) -> Result<Option<Shard>, ShardError> {
        let (Some(id), Some(count)) = (get("SLURM_ARRAY_TASK_ID"), get("SLURM_ARRAY_TASK_COUNT"))
        else {
            return Ok(None);
        };
        let min = get("SLURM_ARRAY_TASK_MIN").unwrap_or_else(|| "0".into());
        let err = |reason: &str| ShardError::Slurm {
            id: id.clone(),
            count: count.clone(),
            reason: reason.to_string(),
        };
        let n: usize = count
            .trim()
            .parse()
            .map_err(|_| err("the count is not a number"))?;
        let i: usize = id
            .trim()
            .parse()
            .map_err(|_| err("the id is not a number"))?;
        let lo: usize = min
            .trim()
            .parse()
            .map_err(|_| err("SLURM_ARRAY_TASK_MIN is not a number"))?;
        let index = i
            .checked_sub(lo)
            .ok_or_else(|| err("the id is below SLURM_ARRAY_TASK_MIN"))?;
        if n == 0 || index >= n {
            return Err(err(
                "the id is outside the array (arrays with a step, e.g. 0-15:2, are not supported)",
            ));
        }
        Ok(Some(Shard { index, count: n }))
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// A rough cost of tuning a shape, for balancing: the problem's work (FLOPs for GEMM, bytes
/// for GEMV) plus a fixed part for compiling and setting up, which dominates small shapes.
pub fn cost(op: Op, shape: Shape) -> f64 {
    let work = match op {
        Op::Gemm => shape.flops() / 1e9,
        Op::Gemv => shape.min_bytes(op) / 1e8,
    };
    work + 50.0
}

/// Splits `shapes` into `parts` groups of similar total cost (largest first, each to the
/// least loaded group; ties by group number), keeping each group in suite order. Every shape
/// is in exactly one group; the result depends only on the inputs.
pub fn balance(op: Op, shapes: &[Shape], parts: usize) -> Vec<Vec<Shape>> {
    let parts = parts.max(1);
    let mut order: Vec<usize> = (0..shapes.len()).collect();
    order.sort_by(|&a, &b| {
        cost(op, shapes[b])
            .total_cmp(&cost(op, shapes[a]))
            .then(a.cmp(&b))
    });
    let mut load = vec![0.0f64; parts];
    let mut owner = vec![0usize; shapes.len()];
    for i in order {
        let g = (0..parts)
            .min_by(|&x, &y| load[x].total_cmp(&load[y]).then(x.cmp(&y)))
            .unwrap_or(0);
        load[g] += cost(op, shapes[i]);
        owner[i] = g;
    }
    (0..parts)
        .map(|g| {
            shapes
                .iter()
                .zip(&owner)
                .filter(|(_, &o)| o == g)
                .map(|(s, _)| *s)
                .collect()
        })
        .collect()
}

/// The shapes of `shard`.
pub fn select(op: Op, shapes: &[Shape], shard: Shard) -> Vec<Shape> {
    balance(op, shapes, shard.count)
        .into_iter()
        .nth(shard.index)
        .unwrap_or_default()
}

/// The database `shard` of a suite writes: `tuning.toml` -> `tuning.shard-2-of-8.toml` (each
/// shard writes its own, joined afterwards with `autotune merge`).
pub fn db_path(db: &Path, shard: Shard) -> PathBuf {
    let stem = db
        .file_stem()
        .map_or_else(|| "tuning".into(), |s| s.to_string_lossy().into_owned());
    let ext = db
        .extension()
        .map_or_else(|| "toml".into(), |s| s.to_string_lossy().into_owned());
    db.with_file_name(format!(
        "{stem}.shard-{}-of-{}.{ext}",
        shard.index, shard.count
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn a_shard_writes_its_own_database_beside_the_given_one() {
        let sh = Shard { index: 2, count: 8 };
        assert_eq!(
            db_path(Path::new("results/tuning.toml"), sh),
            Path::new("results/tuning.shard-2-of-8.toml")
        );
        assert_eq!(
            db_path(Path::new("db"), sh),
            Path::new("db.shard-2-of-8.toml")
        );
    }

    fn s(m: u64, n: u64, k: u64) -> Shape {
        Shape::mnk(m, n, k)
    }

    #[test]
    fn parses_shards() {
        assert_eq!(Shard::parse("0/4").unwrap(), Shard { index: 0, count: 4 });
        assert_eq!(Shard::parse(" 3 / 4 ").unwrap().to_string(), "3/4");
        for bad in ["4/4", "1/0", "x/2", "1", "-1/2", "1/2/3"] {
            let e = Shard::parse(bad).unwrap_err().to_string();
            // The data only: the CLI's hint names --shard.
            assert!(
                e.contains(&format!("'{bad}'")) && !e.contains("--"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn reads_slurm_array_variables() {
        let env = |pairs: &[(&str, &str)]| {
            let m: HashMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            move |k: &str| m.get(k).cloned()
        };
        assert_eq!(Shard::from_slurm(env(&[])).unwrap(), None);
        assert_eq!(
            Shard::from_slurm(env(&[
                ("SLURM_ARRAY_TASK_ID", "2"),
                ("SLURM_ARRAY_TASK_COUNT", "4")
            ]))
            .unwrap(),
            Some(Shard { index: 2, count: 4 })
        );
        // --array=1-4: ids 1..4 are shards 0..3.
        assert_eq!(
            Shard::from_slurm(env(&[
                ("SLURM_ARRAY_TASK_ID", "4"),
                ("SLURM_ARRAY_TASK_COUNT", "4"),
                ("SLURM_ARRAY_TASK_MIN", "1")
            ]))
            .unwrap(),
            Some(Shard { index: 3, count: 4 })
        );
        let e = Shard::from_slurm(env(&[
            ("SLURM_ARRAY_TASK_ID", "9"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ]))
        .unwrap_err();
        let e = e.to_string();
        assert!(
            e.contains("SLURM_ARRAY_TASK_ID=9")
                && e.contains("outside the array")
                && !e.contains("--"),
            "{e}"
        );
    }

    #[test]
    fn every_shape_lands_in_exactly_one_shard() {
        let shapes: Vec<Shape> = (1..=13)
            .map(|i| s(128 * i, 64 * (14 - i), 32 * (i % 5 + 1)))
            .collect();
        for count in 1..=16 {
            let mut seen: Vec<Shape> = Vec::new();
            for index in 0..count {
                let part = select(Op::Gemm, &shapes, Shard { index, count });
                // Suite order is kept within a shard.
                let pos: Vec<usize> = part
                    .iter()
                    .map(|x| shapes.iter().position(|y| y == x).unwrap())
                    .collect();
                assert!(pos.windows(2).all(|w| w[0] < w[1]));
                seen.extend(part);
            }
            seen.sort();
            let mut all = shapes.clone();
            all.sort();
            assert_eq!(seen, all, "{count} shards");
        }
    }

    #[test]
    fn balance_spreads_the_big_shapes() {
        let shapes = [
            s(8192, 8192, 8192),
            s(4096, 4096, 4096),
            s(4096, 4096, 4096),
            s(64, 64, 64),
            s(128, 128, 128),
        ];
        let parts = balance(Op::Gemm, &shapes, 2);
        assert_eq!(parts[0], vec![s(8192, 8192, 8192)]);
        assert_eq!(parts[1].len(), 4);
        // Deterministic.
        assert_eq!(parts, balance(Op::Gemm, &shapes, 2));
    }
}
