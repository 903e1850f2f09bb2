//! Joining databases tuned on different machines: [`Database::merge`],
//! [`Database::merge_all`] and the locked read-merge-write of a file,
//! [`Database::merge_into_file`]. Of two measurements of one GPU x op x shape the faster
//! becomes the entry and the other is kept in its `also_measured`; inputs whose kernel
//! template checksums or schema versions differ are refused unless asked for.

use super::codec::GPU_FIELDS;
use super::{Database, DbError, Measurement, SCHEMA_VERSION};
use crate::fileio::WriteLock;
use crate::problem::{Form, Op};
use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::path::Path;

/// A GPU x op x shape measured differently in two merged databases.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeConflict {
    /// The GPU.
    pub gpu: String,
    /// The op.
    pub op: Op,
    /// The shape's label.
    pub shape: String,
    /// The faster measurement, now the entry.
    pub kept: Measurement,
    /// The slower (or equally fast) one, now in
    /// [`Entry::also_measured`](super::Entry::also_measured).
    pub dropped: Measurement,
    /// Whether the entry changed: the faster one came from the database merged in.
    pub replaced: bool,
}

impl fmt::Display for MergeConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slower = if self.kept.median_ms > 0.0 {
            (self.dropped.median_ms / self.kept.median_ms - 1.0) * 100.0
        } else {
            0.0
        };
        write!(
            f,
            "{} {} {}: {} {} {} ({slower:.1}% slower); both times recorded",
            self.gpu,
            self.op,
            self.shape,
            self.kept.describe(),
            if self.replaced {
                "replaces"
            } else {
                "stays over"
            },
            self.dropped.describe()
        )
    }
}

/// One template version of a family in one merged database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChecksumUse {
    /// The database (usually the file path).
    pub source: String,
    /// The checksum of the family's template and space that its entries record.
    pub checksum: String,
    /// The entries that record it, as `GPU op shape`.
    pub entries: Vec<String>,
}

/// A kernel family whose entries record different template checksums in different merged
/// databases: they were tuned with different versions of the kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChecksumConflict {
    /// The family.
    pub family: String,
    /// Every (database, checksum) pair seen, in input order.
    pub uses: Vec<ChecksumUse>,
}

impl fmt::Display for ChecksumConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "family {}:", self.family)?;
        for (i, u) in self.uses.iter().enumerate() {
            let shown: Vec<&str> = u.entries.iter().take(3).map(String::as_str).collect();
            let more = u.entries.len().saturating_sub(shown.len());
            write!(
                f,
                "{} {} has checksum {} ({} entr{}: {}{})",
                if i == 0 { "" } else { ";" },
                u.source,
                u.checksum,
                u.entries.len(),
                if u.entries.len() == 1 { "y" } else { "ies" },
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            )?;
        }
        Ok(())
    }
}

/// What [`Database::merge`] or [`Database::merge_all`] did.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MergeReport {
    /// Entries whose key was not present before.
    pub added: usize,
    /// Entries that replaced a slower one with the same key.
    pub replaced: usize,
    /// Entries not taken because the existing one with the same key was at least as fast.
    pub kept: usize,
    /// Entries present with the very same measurement on both sides (e.g. a file merged with a
    /// copy of itself): nothing to decide.
    pub identical: usize,
    /// Keys held by more than one of the merged databases (each counted once).
    pub in_several: usize,
    /// Every key measured differently on both sides, in merge order.
    pub conflicts: Vec<MergeConflict>,
    /// Families with different checksums that were merged anyway
    /// ([`MergeOptions::allow_mixed_checksums`]).
    pub mixed_checksums: Vec<ChecksumConflict>,
    /// GPU records that differed between the inputs, and which one was kept.
    pub gpu_notes: Vec<String>,
}

/// How [`Database::merge`] treats inputs that disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MergeOptions {
    /// Merge even when a family's entries record different template checksums in different
    /// inputs (each entry keeps its own checksum; the report lists the families).
    pub allow_mixed_checksums: bool,
}

/// Why databases could not be merged. Nothing is changed when merging fails.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MergeError {
    /// The inputs were read with different schema versions.
    #[error("cannot merge {first} (schema_version {first_version}) with {other} (schema_version {other_version}): databases of different layouts are not mixed. Load and save the older one with this autotune (it writes schema_version {SCHEMA_VERSION}), then merge again. Nothing was written")]
    SchemaMismatch {
        /// The first database.
        first: String,
        /// Its schema version.
        first_version: u32,
        /// The database that differs.
        other: String,
        /// Its schema version.
        other_version: u32,
    },
    /// A family's entries record different template checksums in different inputs.
    #[error("cannot merge: {} family{} tuned with different kernel versions: {}. Nothing was written", .conflicts.len(), if .conflicts.len() == 1 { " was" } else { "ies were" }, .conflicts.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" | "))]
    ChecksumMismatch {
        /// Every family that differs.
        conflicts: Vec<ChecksumConflict>,
    },
}

/// The families whose entries record more than one checksum across more than one input.
fn checksum_conflicts(inputs: &[(&str, &Database)]) -> Vec<ChecksumConflict> {
    let mut families: BTreeMap<&str, Vec<ChecksumUse>> = BTreeMap::new();
    for (source, db) in inputs {
        for e in &db.entries {
            let uses = families.entry(e.family.as_str()).or_default();
            match uses
                .iter_mut()
                .find(|u| u.source == *source && u.checksum == e.checksum)
            {
                Some(u) => u.entries.push(e.describe()),
                None => uses.push(ChecksumUse {
                    source: source.to_string(),
                    checksum: e.checksum.clone(),
                    entries: vec![e.describe()],
                }),
            }
        }
    }
    families
        .into_iter()
        .filter(|(_, uses)| {
            let first = &uses[0];
            uses.iter().any(|u| u.checksum != first.checksum)
                && uses.iter().any(|u| u.source != first.source)
        })
        .map(|(family, uses)| ChecksumConflict {
            family: family.to_string(),
            uses,
        })
        .collect()
}

/// Checks what must agree before databases are merged: schema versions, then checksums.
fn check_mergeable(
    inputs: &[(&str, &Database)],
    opts: MergeOptions,
) -> Result<Vec<ChecksumConflict>, MergeError> {
    if let Some((first, first_db)) = inputs.first() {
        // Every layout this build reads loads into the same records (a version 1 file is a
        // version 2 file without coverage), so only a layout it cannot read is refused.
        let layout = |v: u32| if v <= SCHEMA_VERSION { 0 } else { v };
        if let Some((other, other_db)) = inputs
            .iter()
            .find(|(_, db)| layout(db.schema_version) != layout(first_db.schema_version))
        {
            return Err(MergeError::SchemaMismatch {
                first: first.to_string(),
                first_version: first_db.schema_version,
                other: other.to_string(),
                other_version: other_db.schema_version,
            });
        }
    }
    let conflicts = checksum_conflicts(inputs);
    if !conflicts.is_empty() && !opts.allow_mixed_checksums {
        return Err(MergeError::ChecksumMismatch { conflicts });
    }
    Ok(conflicts)
}

/// How many keys more than one of `inputs` holds.
fn keys_in_several(inputs: &[(&str, &Database)]) -> usize {
    let mut holders: BTreeMap<(&str, Op, u64, u64, u64, Form), usize> = BTreeMap::new();
    for (_, db) in inputs {
        for e in &db.entries {
            *holders.entry(e.key_ref()).or_default() += 1;
        }
    }
    holders.values().filter(|n| **n > 1).count()
}

/// The key of an entry, owned.
type EntryKey = (String, Op, u64, u64, u64, Form);

impl Database {
    /// Merges `other` (named `source` in messages and in
    /// [`Entry::also_measured`](super::Entry::also_measured)) into this database (named
    /// `this`). GPU records of `other` are upserted. Of two entries with the
    /// same key the one with the smaller `median_ms` stays (ties keep the existing one) and
    /// the other is recorded in its `also_measured`, so both times survive.
    ///
    /// Fails, changing nothing, when the schema versions differ or a family's entries record
    /// different checksums on the two sides (unless `opts` allows it).
    pub fn merge(
        &mut self,
        this: &str,
        other: Database,
        source: &str,
        opts: MergeOptions,
    ) -> Result<MergeReport, MergeError> {
        let sides = [(this, &*self), (source, &other)];
        let mixed = check_mergeable(&sides, opts)?;
        let mut report = MergeReport {
            in_several: keys_in_several(&sides),
            mixed_checksums: mixed,
            ..MergeReport::default()
        };
        let mut origin = BTreeMap::new();
        self.absorb(other, source, this, &mut origin, &mut report);
        Ok(report)
    }

    /// Merges databases tuned on different machines, in order, into a new one: `inputs` are
    /// `(name, database)` pairs, the name (usually the file path) being used in messages and
    /// in [`Entry::also_measured`](super::Entry::also_measured). Everything that must agree is checked on all inputs
    /// before anything is merged. The result has [`SCHEMA_VERSION`].
    pub fn merge_all(
        inputs: Vec<(String, Database)>,
        opts: MergeOptions,
    ) -> Result<(Database, MergeReport), MergeError> {
        let refs: Vec<(&str, &Database)> = inputs.iter().map(|(n, d)| (n.as_str(), d)).collect();
        let mixed = check_mergeable(&refs, opts)?;
        let mut report = MergeReport {
            in_several: keys_in_several(&refs),
            mixed_checksums: mixed,
            ..MergeReport::default()
        };
        let mut db = Database::new();
        let mut origin = BTreeMap::new();
        for (name, other) in inputs {
            db.absorb(other, &name, &name, &mut origin, &mut report);
        }
        Ok((db, report))
    }

    /// Merges the database files `inputs`, in order ([`Database::merge_all`]), into the file
    /// `output`, which may be one of them, and returns what was written. Each input is named by
    /// its path as given, in messages and in `also_measured`, and must exist
    /// ([`DbError::NotFound`]). The old content of `output` is kept only when it is also an
    /// input.
    ///
    /// A locked read-merge-write: the write lock of `output` ([`WriteLock`]) is taken before any
    /// input is read and held until the merged database has replaced `output` atomically, so
    /// concurrent merges into one file that is also one of their inputs are applied one after
    /// the other and each keeps the entries of the others (as do [`Database::update_file`] and
    /// [`Database::save`] of that file). On any error, including inputs that disagree
    /// ([`DbError::Merge`]), nothing is written.
    pub fn merge_into_file<P: AsRef<Path>>(
        output: &Path,
        inputs: &[P],
        opts: MergeOptions,
    ) -> Result<(Database, MergeReport), DbError> {
        // A missing input is reported before the lock creates anything next to `output`.
        let missing = |p: &&Path| matches!(fs::metadata(p), Err(e) if e.kind() == std::io::ErrorKind::NotFound);
        if let Some(p) = inputs.iter().map(AsRef::as_ref).find(missing) {
            return Err(DbError::NotFound {
                path: p.to_path_buf(),
            });
        }
        let lock = WriteLock::acquire(output)?;
        let mut loaded = Vec::with_capacity(inputs.len());
        for p in inputs.iter().map(AsRef::as_ref) {
            loaded.push((p.display().to_string(), Database::load_existing(p)?));
        }
        let (db, report) = Database::merge_all(loaded, opts)?;
        db.write_locked(&lock)?;
        Ok((db, report))
    }

    /// Takes `other`'s GPU records and entries; `origin` says where each entry came from
    /// (`fallback` for entries that were here before).
    fn absorb(
        &mut self,
        other: Database,
        source: &str,
        fallback: &str,
        origin: &mut BTreeMap<EntryKey, String>,
        report: &mut MergeReport,
    ) {
        for g in other.gpus {
            if let Some(old) = self.gpu(&g.name) {
                let (a, b) = (toml::Table::try_from(old), toml::Table::try_from(&g));
                if let (Ok(a), Ok(b)) = (a, b) {
                    let differ: Vec<&str> = GPU_FIELDS
                        .iter()
                        .copied()
                        .filter(|k| b.contains_key(*k) && a.get(*k) != b.get(*k))
                        .collect();
                    if !differ.is_empty() {
                        report.gpu_notes.push(format!(
                            "GPU record {}: took {source}'s ({} differ{})",
                            g.name,
                            differ.join(", "),
                            if differ.len() == 1 { "s" } else { "" }
                        ));
                    }
                }
            }
            self.upsert_gpu(g);
        }
        for c in other.coverage {
            match self.coverage(&c.gpu, c.op, &c.form) {
                Some(old) if old == &c => {}
                // The newer measurement of a GPU's grid stays: coverage is not per shape, so
                // two runs are not mixed point by point.
                Some(old) if old.date > c.date => report.gpu_notes.push(format!(
                    "{}: kept the newer one ({}), not {source}'s ({})",
                    c.describe(),
                    old.date,
                    c.date
                )),
                Some(old) => {
                    report.gpu_notes.push(format!(
                        "{}: took {source}'s ({}), newer than {}",
                        c.describe(),
                        c.date,
                        old.date
                    ));
                    self.upsert_coverage(c);
                }
                None => {
                    self.upsert_coverage(c);
                }
            }
        }
        for mut e in other.entries {
            let key = e.key();
            let Some(i) = self.entries.iter().position(|x| x.key_ref() == e.key_ref()) else {
                origin.insert(key, source.to_string());
                self.upsert(e);
                report.added += 1;
                continue;
            };
            let old_source = origin
                .get(&key)
                .cloned()
                .unwrap_or_else(|| fallback.to_string());
            let old = &mut self.entries[i];
            let (old_m, new_m) = (
                Measurement::of(old, &old_source),
                Measurement::of(&e, source),
            );
            if old_m.same(&new_m) {
                let extra = std::mem::take(&mut e.also_measured);
                old.also_measured =
                    union_measurements(std::mem::take(&mut old.also_measured), extra, &old_m);
                report.identical += 1;
                continue;
            }
            let replaced = e.median_ms < old.median_ms;
            let (mut win, win_m, lose, lose_m) = if replaced {
                (e, new_m, old.clone(), old_m)
            } else {
                (old.clone(), old_m, e, new_m)
            };
            let mut also = std::mem::take(&mut win.also_measured);
            also.extend(lose.also_measured);
            also.push(lose_m.clone());
            win.also_measured = union_measurements(also, Vec::new(), &win_m);
            report.conflicts.push(MergeConflict {
                gpu: win.gpu.clone(),
                op: win.op,
                shape: win.shape().label(win.op),
                kept: win_m,
                dropped: lose_m,
                replaced,
            });
            if replaced {
                report.replaced += 1;
                origin.insert(key, source.to_string());
            } else {
                report.kept += 1;
            }
            *old = win;
        }
    }
}

/// `a` and `b` without duplicates and without `winner` itself, fastest first.
fn union_measurements(
    a: Vec<Measurement>,
    b: Vec<Measurement>,
    winner: &Measurement,
) -> Vec<Measurement> {
    let mut out: Vec<Measurement> = Vec::new();
    for m in a.into_iter().chain(b) {
        if !m.same(winner) && !out.iter().any(|x| x.same(&m)) {
            out.push(m);
        }
    }
    out.sort_by(|x, y| x.median_ms.total_cmp(&y.median_ms));
    out
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;
    use crate::problem::Shape;

    #[test]
    fn merge_keeps_the_faster_and_counts() {
        let mut db = sample_db();
        let mut other = Database::new();
        let mut l40 = gpu("NVIDIA L40S");
        l40.arch = "sm_89".to_string();
        other.upsert_gpu(l40);
        // Faster than 0.41: replaces.
        let mut faster = entry("NVIDIA H100 80GB HBM3", Op::Gemm, "2048x2048x2048", 0.40);
        faster.date = "2026-04-21T12:00:00Z".to_string();
        other.upsert(faster);
        // Slower than 0.031: kept.
        other.upsert(entry("NVIDIA H100 80GB HBM3", Op::Gemv, "4096x4096", 0.05));
        // Equal time, another run: kept, both recorded.
        let mut tie = entry("NVIDIA A100-SXM4-40GB", Op::Gemm, "512x256x128", 0.02);
        tie.date = "2026-04-22T12:00:00Z".to_string();
        other.upsert(tie);
        // New.
        other.upsert(entry("NVIDIA L40S", Op::Gemm, "1024x1024x1024", 0.2));
        let report = db
            .merge("a.toml", other, "b.toml", MergeOptions::default())
            .unwrap();
        assert_eq!(
            (report.added, report.replaced, report.kept, report.identical),
            (1, 1, 2, 0)
        );
        assert_eq!(report.conflicts.len(), 3);
        let c = report
            .conflicts
            .iter()
            .find(|c| c.shape == "2048x2048x2048")
            .unwrap();
        assert!(c.replaced);
        assert_eq!((c.kept.source.as_str(), c.kept.median_ms), ("b.toml", 0.40));
        assert_eq!(
            (c.dropped.source.as_str(), c.dropped.median_ms),
            ("a.toml", 0.41)
        );
        let line = c.to_string();
        assert_eq!(line, "NVIDIA H100 80GB HBM3 gemm 2048x2048x2048: b.toml's gemm_tile2d BK=8 BM=128 BN=64 at 0.4000 ms replaces a.toml's gemm_tile2d BK=8 BM=128 BN=64 at 0.4100 ms (2.5% slower); both times recorded");
        assert_eq!(report.conflicts.iter().filter(|c| c.replaced).count(), 1);
        assert_eq!(db.entries.len(), 4);
        assert_eq!(db.gpus.len(), 3);
        assert_eq!(db.gpu("NVIDIA L40S").unwrap().arch, "sm_89");
        let h = "NVIDIA H100 80GB HBM3";
        let gemm = db.get(h, Op::Gemm, Shape::new(Op::Gemm, 2048, 2048, 2048).unwrap());
        let gemm = gemm.unwrap();
        assert_eq!(gemm.median_ms, 0.40);
        assert_eq!(gemm.also_measured.len(), 1);
        assert_eq!(gemm.also_measured[0].median_ms, 0.41);
        assert_eq!(gemm.also_measured[0].source, "a.toml");
        let gemv = db
            .get(h, Op::Gemv, Shape::new(Op::Gemv, 4096, 1, 4096).unwrap())
            .unwrap();
        assert_eq!(gemv.median_ms, 0.031);
        assert_eq!(gemv.partial, Some(true));
        assert_eq!(gemv.also_measured[0].median_ms, 0.05);
        assert_eq!(gemv.also_measured[0].source, "b.toml");
        // Both times survive a save and a load, as a readable inline array.
        let text = db.to_toml_string().unwrap();
        assert!(text.contains("also_measured = [{ "), "{text}");
        assert!(text.contains("source = \"a.toml\""), "{text}");
        assert_eq!(Database::from_toml_str(&text, "m").unwrap(), db);
    }

    #[test]
    fn merging_a_copy_changes_nothing_and_is_idempotent() {
        let db = sample_db();
        let (once, r) = Database::merge_all(
            vec![("a".into(), db.clone()), ("a-copy".into(), db.clone())],
            MergeOptions::default(),
        )
        .unwrap();
        assert_eq!(r.identical, db.entries.len());
        assert!(r.conflicts.is_empty());
        assert_eq!(once, db);
        // A merged database merged again with one of its inputs gains nothing twice.
        let mut b = sample_db();
        b.entries[0].median_ms *= 0.5;
        b.entries[0].date = "2026-05-01T00:00:00Z".to_string();
        let (ab, _) = Database::merge_all(
            vec![("a".into(), db.clone()), ("b".into(), b.clone())],
            MergeOptions::default(),
        )
        .unwrap();
        let (again, r) = Database::merge_all(
            vec![("ab".into(), ab.clone()), ("a".into(), db)],
            MergeOptions::default(),
        )
        .unwrap();
        assert_eq!(again, ab);
        assert_eq!(r.kept, 1);
        assert_eq!(ab.entries[0].also_measured.len(), 1);
    }

    #[test]
    fn merging_two_gpu_models_keeps_both_entries() {
        // The same shape tuned on an H100 and an H200: two keys, nothing in also_measured.
        let shape = "2048x2048x2048";
        let mut a = Database::new();
        a.upsert_gpu(gpu("NVIDIA H100 80GB HBM3"));
        let mut e = entry("NVIDIA H100 80GB HBM3", Op::Gemm, shape, 0.41);
        e.produced_by = Some(producer("node01", 0, Some("0/2")));
        a.upsert(e);
        let mut b = Database::new();
        b.upsert_gpu(gpu("NVIDIA H200"));
        let mut e = entry("NVIDIA H200", Op::Gemm, shape, 0.40);
        e.produced_by = Some(producer("node02", 0, Some("1/2")));
        b.upsert(e);
        let (db, r) = Database::merge_all(
            vec![("a".into(), a.clone()), ("b".into(), b.clone())],
            MergeOptions::default(),
        )
        .unwrap();
        assert_eq!((r.added, r.replaced, r.kept), (2, 0, 0));
        assert!(r.conflicts.is_empty());
        assert_eq!(db.entries.len(), 2);
        assert_eq!(db.gpus.len(), 2);
        let s = Shape::parse(Op::Gemm, shape).unwrap();
        for (name, src) in [("NVIDIA H100 80GB HBM3", &a), ("NVIDIA H200", &b)] {
            let got = db.get(name, Op::Gemm, s).unwrap();
            assert_eq!(got, &src.entries[0]);
            assert!(got.also_measured.is_empty());
        }
    }

    #[test]
    fn same_model_from_two_devices_merges_under_one_key_with_producers() {
        let h = "NVIDIA H100 80GB HBM3";
        let shape = "2048x2048x2048";
        let mut a = Database::new();
        a.upsert_gpu(gpu(h));
        let mut slow = entry(h, Op::Gemm, shape, 0.41);
        slow.produced_by = Some(producer("node01", 0, Some("0/2")));
        a.upsert(slow);
        let mut b = Database::new();
        b.upsert_gpu(gpu(h));
        let mut fast = entry(h, Op::Gemm, shape, 0.39);
        fast.date = "2026-04-21T12:00:00Z".to_string();
        fast.produced_by = Some(producer("node02", 3, Some("1/2")));
        b.upsert(fast.clone());
        let (db, r) = Database::merge_all(
            vec![
                ("shard-0.toml".into(), a.clone()),
                ("shard-1.toml".into(), b.clone()),
            ],
            MergeOptions::default(),
        )
        .unwrap();
        assert_eq!((r.added, r.replaced, r.kept), (1, 1, 0));
        assert_eq!(db.entries.len(), 1);
        let got = &db.entries[0];
        assert_eq!(got.produced_by, fast.produced_by);
        assert_eq!(got.median_ms, 0.39);
        assert_eq!(got.also_measured.len(), 1);
        let m = &got.also_measured[0];
        assert_eq!((m.source.as_str(), m.median_ms), ("shard-0.toml", 0.41));
        assert_eq!(m.produced_by, a.entries[0].produced_by);
        let line = r.conflicts[0].to_string();
        assert!(
            line.contains("at 0.3900 ms (node02 device 3, shard 1/2) replaces")
                && line.contains("at 0.4100 ms (node01 device 0, shard 0/2)"),
            "{line}"
        );
        // Either merge order gives the same database, and it survives a save and a load.
        let (other, _) = Database::merge_all(
            vec![("shard-1.toml".into(), b), ("shard-0.toml".into(), a)],
            MergeOptions::default(),
        )
        .unwrap();
        assert_eq!(other, db);
        let text = db.to_toml_string().unwrap();
        assert_eq!(Database::from_toml_str(&text, "m").unwrap(), db);
    }

    #[test]
    fn merge_refuses_mixed_checksums_and_schemas_and_changes_nothing() {
        let mut a = sample_db();
        let before = a.clone();
        let mut b = Database::new();
        let mut e = entry("NVIDIA L40S", Op::Gemm, "64x64x64", 0.01);
        e.checksum = "cd".repeat(32);
        b.upsert(e);
        let err = a
            .merge("a.toml", b.clone(), "b.toml", MergeOptions::default())
            .unwrap_err();
        assert_eq!(a, before);
        let MergeError::ChecksumMismatch { conflicts } = &err else {
            panic!("expected ChecksumMismatch, got {err:?}");
        };
        assert_eq!(conflicts.len(), 1);
        assert_eq!(conflicts[0].family, "gemm_tile2d");
        let msg = err.to_string();
        for needle in [
            "a.toml",
            "b.toml",
            "gemm_tile2d",
            &"ab".repeat(32),
            &"cd".repeat(32),
            "NVIDIA L40S gemm 64x64x64",
        ] {
            assert!(msg.contains(needle), "{needle:?} missing from: {msg}");
        }
        assert!(!msg.contains("--"), "the library names no option: {msg}");
        // Allowed on request: merged, and the report says which families were mixed.
        let r = a
            .merge(
                "a.toml",
                b,
                "b.toml",
                MergeOptions {
                    allow_mixed_checksums: true,
                },
            )
            .unwrap();
        assert_eq!(r.added, 1);
        assert_eq!(r.mixed_checksums.len(), 1);
        // Mixed checksums inside one input alone are not the merge's doing.
        let mut c = Database::new();
        let mut e1 = entry("G", Op::Gemm, "8x8x8", 0.1);
        e1.checksum = "11".repeat(32);
        let mut e2 = entry("G", Op::Gemm, "16x16x16", 0.1);
        e2.checksum = "22".repeat(32);
        c.upsert(e1);
        c.upsert(e2);
        assert!(Database::merge_all(
            vec![("c".into(), c), ("empty".into(), Database::new())],
            MergeOptions::default()
        )
        .is_ok());

        // A version 1 file loads into the same records: it merges with a version 2 one.
        let mut v1 = sample_db();
        v1.schema_version = 1;
        assert!(Database::merge_all(
            vec![("new.toml".into(), sample_db()), ("v1.toml".into(), v1)],
            MergeOptions::default()
        )
        .is_ok());
        let mut old = sample_db();
        old.schema_version = SCHEMA_VERSION + 1;
        let err = Database::merge_all(
            vec![("new.toml".into(), sample_db()), ("old.toml".into(), old)],
            MergeOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(
            err,
            MergeError::SchemaMismatch {
                first_version: SCHEMA_VERSION,
                ..
            }
        ));
        let msg = err.to_string();
        assert!(
            msg.contains("new.toml") && msg.contains("old.toml"),
            "{msg}"
        );
    }

    #[test]
    fn merge_notes_differing_gpu_records() {
        let mut a = sample_db();
        let mut b = Database::new();
        let mut rec = gpu("NVIDIA H100 80GB HBM3");
        rec.driver_version = "13.1".to_string();
        b.upsert_gpu(rec);
        let r = a.merge("a", b, "b", MergeOptions::default()).unwrap();
        assert_eq!(r.gpu_notes.len(), 1, "{:?}", r.gpu_notes);
        assert!(
            r.gpu_notes[0].contains("driver_version"),
            "{:?}",
            r.gpu_notes
        );
        // The measured bandwidth of the old record stays when the new one has none.
        assert_eq!(
            a.gpu("NVIDIA H100 80GB HBM3").unwrap().copy_bandwidth_gbs,
            Some(2890.5)
        );
    }

    #[test]
    fn in_several_counts_keys_held_by_more_than_one_input() {
        let a = sample_db();
        let mut b = Database::new();
        b.upsert(entry(
            "NVIDIA H100 80GB HBM3",
            Op::Gemm,
            "2048x2048x2048",
            0.5,
        ));
        b.upsert(entry("G", Op::Gemm, "8x8x8", 0.5));
        let (db, r) = Database::merge_all(
            vec![
                ("a".into(), a.clone()),
                ("b".into(), b.clone()),
                ("a2".into(), a),
            ],
            MergeOptions::default(),
        )
        .unwrap();
        assert_eq!(db.entries.len(), 4);
        // The three keys of `a` (one of them in `b` too); `G` is in `b` only.
        assert_eq!(r.in_several, 3);
        let mut c = Database::new();
        assert_eq!(
            c.merge("c", b, "b", MergeOptions::default())
                .unwrap()
                .in_several,
            0
        );
    }

    #[test]
    fn coverage_merges_per_gpu_op_and_form_keeping_the_newer_run() {
        use crate::db::{Coverage, CoverageConfig, CoveragePoint};
        use crate::problem::Form;
        let cov = |gpu: &str, date: &str, ms: f64| Coverage {
            gpu: gpu.into(),
            op: Op::Gemm,
            form: crate::problem::Form::PLAIN,
            date: date.into(),
            tool_version: "0".into(),
            seed: 1,
            produced_by: None,
            configs: vec![CoverageConfig {
                family: "f".into(),
                params: Default::default(),
                checksum: "ab".repeat(32),
            }],
            points: vec![CoveragePoint {
                shape: "8x8x8".into(),
                cublas_ms: 1.0,
                ms: vec![ms],
            }],
        };
        let mut a = sample_db();
        a.upsert_coverage(cov("G1", "2026-11-02T00:00:00Z", 2.0));
        let mut b = sample_db();
        b.upsert_coverage(cov("G1", "2026-11-01T00:00:00Z", 3.0));
        b.upsert_coverage(cov("G2", "2026-11-01T00:00:00Z", 4.0));
        let (m, report) = Database::merge_all(
            vec![("a".into(), a.clone()), ("b".into(), b.clone())],
            MergeOptions::default(),
        )
        .unwrap();
        assert_eq!(m.coverage.len(), 2);
        assert_eq!(
            m.coverage("G1", Op::Gemm, &Form::PLAIN).unwrap().points[0].ms,
            vec![2.0]
        );
        assert_eq!(
            m.coverage("G2", Op::Gemm, &Form::PLAIN).unwrap().points[0].ms,
            vec![4.0]
        );
        assert!(
            report
                .gpu_notes
                .iter()
                .any(|n| n.contains("kept the newer one")),
            "{:?}",
            report.gpu_notes
        );
        // Whatever the order, the newer run stays.
        let (m, _) = Database::merge_all(
            vec![("b".into(), b), ("a".into(), a)],
            MergeOptions::default(),
        )
        .unwrap();
        assert_eq!(
            m.coverage("G1", Op::Gemm, &Form::PLAIN).unwrap().points[0].ms,
            vec![2.0]
        );
        // Records of different forms are kept apart: an older NT grid does not give way to a
        // newer plain one, nor replace it.
        let nt = Form {
            layout: crate::problem::Layout::Nt,
            ..Form::PLAIN
        };
        let mut c = sample_db();
        c.upsert_coverage(Coverage {
            form: nt,
            ..cov("G1", "2026-10-01T00:00:00Z", 5.0)
        });
        let (m, report) = Database::merge_all(
            vec![("m".into(), m), ("c".into(), c)],
            MergeOptions::default(),
        )
        .unwrap();
        assert_eq!(m.coverage.len(), 3);
        assert_eq!(
            m.coverage("G1", Op::Gemm, &Form::PLAIN).unwrap().points[0].ms,
            vec![2.0]
        );
        assert_eq!(
            m.coverage("G1", Op::Gemm, &nt).unwrap().points[0].ms,
            vec![5.0]
        );
        assert!(
            report.gpu_notes.iter().all(|n| !n.contains("gemm:nt")),
            "{:?}",
            report.gpu_notes
        );
    }

    #[test]
    fn merge_into_file_reads_the_output_when_it_is_an_input() {
        let dir = tempfile::tempdir().unwrap();
        let (out, other) = (dir.path().join("out.toml"), dir.path().join("b.toml"));
        sample_db().save(&out).unwrap();
        let mut b = Database::new();
        b.upsert(entry("G", Op::Gemm, "8x8x8", 0.1));
        b.save(&other).unwrap();
        let (db, r) =
            Database::merge_into_file(&out, &[&out, &other], MergeOptions::default()).unwrap();
        assert_eq!((r.added, r.in_several), (4, 0));
        assert_eq!(Database::load(&out).unwrap(), db);
        assert_eq!(db.entries.len(), 4);
        assert_eq!(listing(dir.path()), ["b.toml", "out.toml"]);
        // An output that is not an input is replaced, not merged.
        let fresh = dir.path().join("fresh.toml");
        sample_db().save(&fresh).unwrap();
        let (db, _) =
            Database::merge_into_file(&fresh, &[&other], MergeOptions::default()).unwrap();
        assert_eq!(db.entries.len(), 1);
        assert_eq!(Database::load(&fresh).unwrap(), db);
    }

    #[test]
    fn merge_into_file_writes_nothing_when_it_fails() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("sub/out.toml");
        let missing = dir.path().join("missing.toml");
        let err =
            Database::merge_into_file(&out, &[&missing], MergeOptions::default()).unwrap_err();
        assert!(
            matches!(err, DbError::NotFound { ref path } if *path == missing),
            "{err:?}"
        );
        // Not even the output's directory (the lock would have created it).
        assert_eq!(listing(dir.path()), Vec::<String>::new());

        let out = dir.path().join("out.toml");
        sample_db().save(&out).unwrap();
        let before = fs::read(&out).unwrap();
        let odd = dir.path().join("odd.toml");
        let mut e = entry("G", Op::Gemm, "8x8x8", 0.1);
        e.checksum = "cd".repeat(32);
        let mut b = Database::new();
        b.upsert(e);
        b.save(&odd).unwrap();
        let err =
            Database::merge_into_file(&out, &[&out, &odd], MergeOptions::default()).unwrap_err();
        assert!(
            matches!(err, DbError::Merge(MergeError::ChecksumMismatch { .. })),
            "{err:?}"
        );
        assert!(err.to_string().contains("Nothing was written"), "{err}");
        assert_eq!(fs::read(&out).unwrap(), before);
        assert_eq!(listing(dir.path()), ["odd.toml", "out.toml"]);
    }

    /// Threads merging into one file that each also name as an input keep every entry.
    #[test]
    fn concurrent_merge_into_file_loses_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.toml");
        Database::new().save(&out).unwrap();
        let inputs: Vec<_> = (0..8)
            .map(|i| {
                let path = dir.path().join(format!("in{i}.toml"));
                let mut db = Database::new();
                db.upsert(entry(&format!("GPU {i}"), Op::Gemm, "8x8x8", 0.1));
                db.save(&path).unwrap();
                path
            })
            .collect();
        std::thread::scope(|s| {
            for input in &inputs {
                let out = &out;
                s.spawn(move || {
                    Database::merge_into_file(out, &[out, input], MergeOptions::default()).unwrap();
                });
            }
        });
        assert_eq!(Database::load(&out).unwrap().entries.len(), inputs.len());
    }
}
