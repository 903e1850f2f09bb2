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
    /// The family revision the first of them records (`None` before schema version 5).
    pub revision: Option<u32>,
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
                "{} {} has checksum {}{} ({} entr{}: {}{})",
                if i == 0 { "" } else { ";" },
                u.source,
                u.checksum,
                u.revision
                    .map_or(String::new(), |r| format!(" (revision {r})")),
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
                    revision: e.revision,
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
mod tests;
