//! The tuning database: the best kernel configuration found per GPU x op x shape, with the
//! evidence behind it, stored as a human-readable TOML file.
//!
//! Layout of the file:
//!
//! ```toml
//! schema_version = 1
//!
//! [[gpu]]
//! name = "NVIDIA H100 80GB HBM3"
//! arch = "sm_90"
//! # ...
//!
//! [[entry]]
//! gpu = "NVIDIA H100 80GB HBM3"
//! op = "gemm"
//! shape = "2048x2048x2048"
//! params = { BK = 8, BM = 128, BN = 128 }
//! # ...
//! ```
//!
//! GPUs are written sorted by name and entries sorted by `(gpu, op, m, n, k)`, one key per line
//! in a fixed order, so that the file diffs well under version control and writing the same
//! database twice gives byte-identical text. Saving is atomic (temporary file, `fsync`, rename):
//! a crash, `kill -9` or an error never leaves a torn file, and a failed save leaves the old file
//! as it was.
//!
//! [`Database::update_file`] is the read-modify-write helper: re-tuning one shape never drops
//! another entry. Writers serialise on an exclusive advisory lock ([`File::lock`]) of a sidecar
//! file `<name>.lock` next to the database (the database itself is replaced by rename, so it
//! cannot carry the lock): two processes updating the same database at the same moment both
//! keep their entries. The lock file is removed when the writer is done; one left by a killed
//! writer is simply reused. Readers take no lock: they see the old or the new file, never a mix.
//!
//! A write killed between creating its temporary file and renaming it leaves that file behind
//! (`.<name>.tmp.<pid>.<nanos>.<n>`, hidden, next to the database). Readers never look at it,
//! and the next save or update of the same database removes it while holding the lock.

use crate::problem::{Op, Shape};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::{self, Write as _};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The newest file layout this build reads, and the one it writes.
pub const SCHEMA_VERSION: u32 = 1;

/// The comment written at the top of every database file.
const HEADER: &str =
    "# autotune tuning database: the fastest kernel configuration per GPU x op x shape.\n\
# Written by autotune, one [[entry]] per result; comments are not kept when it rewrites the file.\n";

/// One GPU the database holds results for (key: `name`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuRecord {
    /// The device name the driver reports, e.g. `"NVIDIA H100 80GB HBM3"`; the key.
    pub name: String,
    /// The compute architecture, e.g. `"sm_90"`.
    pub arch: String,
    /// Number of streaming multiprocessors.
    pub sms: u32,
    /// Boost clock in MHz.
    pub clock_mhz: u32,
    /// Theoretical FP32 peak in GFLOP/s.
    pub fp32_peak_gflops: f64,
    /// Device memory in MiB.
    pub memory_mib: u64,
    /// CUDA driver version, e.g. `"13.0"`.
    pub driver_version: String,
    /// NVRTC version, e.g. `"13.0"`.
    pub nvrtc_version: String,
    /// Measured device-to-device copy bandwidth in GB/s, filled in once measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_bandwidth_gbs: Option<f64>,
}

/// The best configuration found for one GPU x op x shape, with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The [`GpuRecord::name`] of the GPU this was measured on.
    pub gpu: String,
    /// The operation.
    pub op: Op,
    /// [`Shape::label`] of the shape, kept for humans reading the file (`m`, `n`, `k` rule).
    pub shape: String,
    /// Rows of A and C.
    pub m: u64,
    /// Columns of B and C (1 for GEMV).
    pub n: u64,
    /// The reduction length.
    pub k: u64,
    /// The kernel family, e.g. `"gemm_tile2d"`.
    pub family: String,
    /// The name of the instantiated kernel.
    pub kernel: String,
    /// The tuning parameters of the winning configuration (written as an inline table).
    pub params: BTreeMap<String, i64>,
    /// Median kernel time in milliseconds.
    pub median_ms: f64,
    /// Fastest kernel time in milliseconds.
    pub min_ms: f64,
    /// `(p90 - p10) / median * 100`.
    pub spread_pct: f64,
    /// Number of timed runs.
    pub samples: u32,
    /// Achieved GFLOP/s at the median time.
    pub gflops: f64,
    /// Effective bandwidth in GB/s: the fewest bytes the problem moves over the median time.
    pub gbs: f64,
    /// cuBLAS median time for the same problem, in milliseconds.
    pub cublas_median_ms: f64,
    /// `cublas_median_ms / median_ms` (above 1 means faster than cuBLAS).
    pub vs_cublas: f64,
    /// Achieved fraction of the GPU's FP32 peak, in percent.
    pub pct_of_peak: f64,
    /// Largest relative error against the reference result.
    pub max_rel_error: f64,
    /// The tolerance the result was validated against.
    pub tolerance: f64,
    /// Number of configurations evaluated.
    pub tried: u32,
    /// Number of configurations that failed to compile, validate or launch.
    pub failed: u32,
    /// RNG seed of the validation inputs (at most `2^63 - 1`: TOML integers are signed).
    pub seed: u64,
    /// When the result was produced, RFC 3339 UTC.
    pub date: String,
    /// The autotune version that produced it.
    pub tool_version: String,
    /// Hex SHA-256 of the kernel template and search-space text.
    pub checksum: String,
    /// `Some(true)` when the search was cut short (time limit, interrupt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<bool>,
    /// Which machine, GPU and shard measured it. Provenance only: the key stays the GPU model
    /// name ([`Entry::gpu`]), so two GPUs of one model share results while two models never
    /// share a key. Absent from older files (which still load) and from entries not made by a
    /// tuning run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub produced_by: Option<Producer>,
    /// The other measurements of this GPU x op x shape that [`Database::merge`] met, fastest
    /// first, each with the database it came from: the entry itself is the fastest of all.
    /// Absent from files that were never merged (and from older files, which still load).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_measured: Vec<Measurement>,
}

impl Entry {
    /// The problem shape, from `m`, `n`, `k`.
    pub fn shape(&self) -> Shape {
        Shape {
            m: self.m,
            n: self.n,
            k: self.k,
        }
    }

    /// The key identifying the entry in a database: `(gpu, op, m, n, k)`.
    pub fn key(&self) -> (String, Op, u64, u64, u64) {
        (self.gpu.clone(), self.op, self.m, self.n, self.k)
    }

    /// The key, borrowed, for sorting and lookups.
    fn key_ref(&self) -> (&str, Op, u64, u64, u64) {
        (self.gpu.as_str(), self.op, self.m, self.n, self.k)
    }

    /// How the entry is named in messages: `GPU op shape`.
    fn describe(&self) -> String {
        format!(
            "{} {} {}",
            self.gpu,
            self.op.name(),
            self.shape().label(self.op)
        )
    }
}

/// Where an entry was measured: the host, the CUDA device on it and the shard of the suite, as
/// [`Entry::produced_by`] and [`Measurement::produced_by`] record it. Written as an inline
/// table, e.g. `produced_by = { device = 1, host = "node07", shard = "2/8", ... }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Producer {
    /// The host name of the machine that ran the tuning.
    pub host: String,
    /// The CUDA ordinal of the GPU on that host (`--device` / `--devices`).
    pub device: u32,
    /// The GPU's PCI bus id (`0000:3B:00.0`), when the driver reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    /// The GPU's UUID (`GPU-xxxxxxxx-...`, as `nvidia-smi -L` shows it), when the driver
    /// reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// The shard of the suite, `INDEX/COUNT` (`--shard`, or a Slurm job-array task), when the
    /// run was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
}

impl fmt::Display for Producer {
    /// `node07 device 1`, then `, shard 2/8` for a shard.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} device {}", self.host, self.device)?;
        if let Some(shard) = &self.shard {
            write!(f, ", shard {shard}")?;
        }
        Ok(())
    }
}

/// The name of this machine, for [`Producer::host`]: the kernel's host name
/// (`/proc/sys/kernel/hostname`), else `$HOSTNAME`, else `/etc/hostname`, else `"unknown"`.
pub fn this_host() -> String {
    let read = |p: &str| fs::read_to_string(p).ok();
    read("/proc/sys/kernel/hostname")
        .or_else(|| std::env::var("HOSTNAME").ok())
        .or_else(|| read("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

/// One measured configuration of a GPU x op x shape, as [`Entry::also_measured`] keeps it and
/// as [`MergeConflict`] reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The database it came from, as named to the merge (usually the file path).
    pub source: String,
    /// Median kernel time in milliseconds.
    pub median_ms: f64,
    /// cuBLAS's median time in the same run, in milliseconds.
    pub cublas_median_ms: f64,
    /// The kernel family.
    pub family: String,
    /// The tuning parameters.
    pub params: BTreeMap<String, i64>,
    /// When it was measured, RFC 3339 UTC.
    pub date: String,
    /// Which host, GPU and shard measured it ([`Entry::produced_by`] of the entry it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub produced_by: Option<Producer>,
}

impl Measurement {
    /// The measurement an entry holds, attributed to `source`.
    pub fn of(entry: &Entry, source: &str) -> Measurement {
        Measurement {
            source: source.to_string(),
            median_ms: entry.median_ms,
            cublas_median_ms: entry.cublas_median_ms,
            family: entry.family.clone(),
            params: entry.params.clone(),
            date: entry.date.clone(),
            produced_by: entry.produced_by.clone(),
        }
    }

    /// Whether both are the same measurement (wherever each came from).
    fn same(&self, other: &Measurement) -> bool {
        self.median_ms.to_bits() == other.median_ms.to_bits()
            && self.date == other.date
            && self.family == other.family
            && self.params == other.params
    }

    /// `SOURCE's family BM=.. BN=.. at 0.4100 ms`, then ` (node07 device 1, shard 2/8)` when
    /// its producer is known.
    fn describe(&self) -> String {
        format!(
            "{}'s {} {} at {:.4} ms{}",
            self.source,
            self.family,
            crate::family::space::params_label(&self.params),
            self.median_ms,
            self.produced_by
                .as_ref()
                .map_or(String::new(), |p| format!(" ({p})"))
        )
    }
}

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
    /// The slower (or equally fast) one, now in [`Entry::also_measured`].
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
    #[error("cannot merge: {} family{} tuned with different kernel versions: {}. Re-tune those entries with one autotune build, or pass --allow-mixed-checksums to merge anyway (each entry keeps its own checksum). Nothing was written", .conflicts.len(), if .conflicts.len() == 1 { " was" } else { "ies were" }, .conflicts.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(" | "))]
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
        if let Some((other, other_db)) = inputs
            .iter()
            .find(|(_, db)| db.schema_version != first_db.schema_version)
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

/// The key of an entry, owned.
type EntryKey = (String, Op, u64, u64, u64);

impl Database {
    /// Merges `other` (named `source` in messages and in [`Entry::also_measured`]) into this
    /// database (named `this`). GPU records of `other` are upserted. Of two entries with the
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
        let mixed = check_mergeable(&[(this, &*self), (source, &other)], opts)?;
        let mut report = MergeReport {
            mixed_checksums: mixed,
            ..MergeReport::default()
        };
        let mut origin = BTreeMap::new();
        self.absorb(other, source, this, &mut origin, &mut report);
        Ok(report)
    }

    /// Merges databases tuned on different machines, in order, into a new one: `inputs` are
    /// `(name, database)` pairs, the name (usually the file path) being used in messages and
    /// in [`Entry::also_measured`]. Everything that must agree is checked on all inputs
    /// before anything is merged. The result has [`SCHEMA_VERSION`].
    pub fn merge_all(
        inputs: Vec<(String, Database)>,
        opts: MergeOptions,
    ) -> Result<(Database, MergeReport), MergeError> {
        let refs: Vec<(&str, &Database)> = inputs.iter().map(|(n, d)| (n.as_str(), d)).collect();
        let mixed = check_mergeable(&refs, opts)?;
        let mut report = MergeReport {
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

/// The whole database file.
#[derive(Debug, Clone, PartialEq)]
pub struct Database {
    /// The layout version the file was read with; files are always written at
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The GPUs results exist for, keyed by name.
    pub gpus: Vec<GpuRecord>,
    /// The best configuration per `(gpu, op, m, n, k)`.
    pub entries: Vec<Entry>,
}

impl Default for Database {
    fn default() -> Self {
        Database::new()
    }
}

/// Why the database could not be read or written. Every message names the file and says what
/// to do about it.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The file is not valid TOML, or a value has the wrong type.
    #[error("database {} is not a valid tuning database ({}): {message}. The file was left untouched; fix it or pass --db to use another file", path.display(), location(*line, *column))]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line of the problem (0 when unknown).
        line: usize,
        /// 1-based column, in characters (0 when unknown).
        column: usize,
        /// What the TOML parser said.
        message: String,
    },
    /// The file is not UTF-8 text.
    #[error("database {} is not UTF-8 text (first bad byte at line {line}, column {column}): a tuning database is a UTF-8 TOML file. The file was left untouched; fix it or pass --db to use another file", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// 1-based line of the first invalid byte.
        line: usize,
        /// 1-based column (in characters) of the first invalid byte.
        column: usize,
    },
    /// The file parses but its content is inconsistent (duplicate keys, a shape label that
    /// contradicts `m`/`n`/`k`, NaN values, ...).
    #[error("database {} is not a valid tuning database: {message}. The file was left untouched; fix it or pass --db to use another file", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the record.
        message: String,
    },
    /// The file was written by a newer autotune with a layout this build cannot read.
    #[error("database {} was written by a newer autotune (schema {found}, this build reads up to {supported}): upgrade autotune or use --db to pick another file", path.display())]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// The `schema_version` in the file.
        found: i64,
        /// The newest version this build reads ([`SCHEMA_VERSION`]).
        supported: u32,
    },
    /// The file has no top-level `schema_version`.
    #[error("database {} has no top-level `schema_version`, so it does not look like a tuning database written by autotune. If it is one, add `schema_version = {SCHEMA_VERSION}` as its first line; otherwise pass --db to use another file", path.display())]
    MissingSchema {
        /// The file.
        path: PathBuf,
    },
    /// The database path is a directory.
    #[error("database path {} is a directory, not a file: pass --db with a file path such as {}", path.display(), path.join("autotune.toml").display())]
    IsDirectory {
        /// The path.
        path: PathBuf,
    },
    /// A command that only reads the database was given a path where no file exists.
    #[error("database {} does not exist: pass --db with an existing tuning database (e.g. results/tuning.toml), or tune a shape first to create it", path.display())]
    NotFound {
        /// The path.
        path: PathBuf,
    },
    /// The write lock could not be taken (usually: the directory is not writable).
    #[error("could not lock {} to update the database {}: {source}. autotune creates this file next to the database while it writes, so that concurrent runs keep each other's entries: make the directory writable, or pass --db to use another file", lock.display(), path.display())]
    Lock {
        /// The database.
        path: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A filesystem operation failed.
    #[error("could not {action} {}: {source}. Check the path and its permissions, or pass --db to use another file", path.display())]
    Io {
        /// The file or directory the operation was on.
        path: PathBuf,
        /// What was being done, e.g. `"read"`.
        action: &'static str,
        /// The underlying error.
        source: io::Error,
    },
    /// A value about to be saved is NaN or infinite; TOML readers would choke on it and it
    /// means the measurement is broken.
    #[error("refusing to save the database: `{field}` of {gpu} {shape} is NaN or infinite, which means the measurement that produced it is broken. Nothing was written; the file was left untouched")]
    NonFinite {
        /// The GPU of the record.
        gpu: String,
        /// The op and shape of the entry, or `(gpu record)`.
        shape: String,
        /// The offending field.
        field: String,
    },
    /// An unsigned value about to be saved does not fit TOML's signed 64-bit integers.
    #[error("refusing to save the database: `{field}` = {value} of {gpu} {shape} is larger than TOML integers allow (2^63 - 1). Nothing was written; the file was left untouched")]
    OutOfRange {
        /// The GPU of the record.
        gpu: String,
        /// The op and shape of the entry, or `(gpu record)`.
        shape: String,
        /// The offending field.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// The database could not be turned into TOML (e.g. two entries with the same key).
    #[error("could not write the database as TOML: {0}. Nothing was written; the file was left untouched")]
    Serialize(String),
}

/// `line L, column C`, or `position unknown`.
fn location(line: usize, column: usize) -> String {
    if line == 0 {
        "position unknown".to_string()
    } else {
        format!("line {line}, column {column}")
    }
}

/// 1-based line and column (in characters) of byte offset `pos` in `text`.
pub(crate) fn line_column(text: &str, pos: usize) -> (usize, usize) {
    let mut pos = pos.min(text.len());
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    let before = &text[..pos];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Turns a TOML error into [`DbError::Parse`] with the position of the problem.
fn parse_error(path: &Path, text: &str, err: &toml::de::Error) -> DbError {
    let (line, column) = err
        .span()
        .map_or((0, 0), |span| line_column(text, span.start));
    let message = err
        .message()
        .trim()
        .trim_end_matches('.')
        .replace('\n', "; ");
    DbError::Parse {
        path: path.to_path_buf(),
        line,
        column,
        message,
    }
}

/// The file as it is deserialized (the top level rejects unknown keys, which catches typos
/// such as `[[entries]]`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRepr {
    schema_version: u32,
    #[serde(default)]
    gpu: Vec<GpuRecord>,
    #[serde(default)]
    entry: Vec<Entry>,
}

/// The order keys of a `[[gpu]]` table are written in; unknown keys follow, sorted.
const GPU_FIELDS: &[&str] = &[
    "name",
    "arch",
    "sms",
    "clock_mhz",
    "fp32_peak_gflops",
    "memory_mib",
    "driver_version",
    "nvrtc_version",
    "copy_bandwidth_gbs",
];

/// The order keys of an `[[entry]]` table are written in; unknown keys follow, sorted.
const ENTRY_FIELDS: &[&str] = &[
    "gpu",
    "op",
    "shape",
    "m",
    "n",
    "k",
    "family",
    "kernel",
    "params",
    "median_ms",
    "min_ms",
    "spread_pct",
    "samples",
    "gflops",
    "gbs",
    "cublas_median_ms",
    "vs_cublas",
    "pct_of_peak",
    "max_rel_error",
    "tolerance",
    "tried",
    "failed",
    "seed",
    "date",
    "tool_version",
    "checksum",
    "partial",
    "produced_by",
    "also_measured",
];

/// The first float in `table` (searched recursively) that is NaN or infinite, by key path;
/// top-level keys are searched in `order` first, so the first field as written is named.
fn non_finite_field(table: &toml::Table, order: &[&str]) -> Option<String> {
    fn walk(value: &toml::Value, path: &str) -> Option<String> {
        match value {
            toml::Value::Float(f) if !f.is_finite() => Some(path.to_string()),
            toml::Value::Table(t) => t.iter().find_map(|(k, v)| walk(v, &format!("{path}.{k}"))),
            toml::Value::Array(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, v)| walk(v, &format!("{path}[{i}]"))),
            _ => None,
        }
    }
    order
        .iter()
        .filter_map(|k| table.get(*k).map(|v| (*k, v)))
        .chain(
            table
                .iter()
                .filter(|(k, _)| !order.contains(&k.as_str()))
                .map(|(k, v)| (k.as_str(), v)),
        )
        .find_map(|(k, v)| walk(v, k))
}

/// `rec` as a TOML table, refusing values TOML cannot hold.
fn gpu_table(rec: &GpuRecord) -> Result<toml::Table, DbError> {
    let what = "(gpu record)";
    if rec.memory_mib > i64::MAX as u64 {
        return Err(DbError::OutOfRange {
            gpu: rec.name.clone(),
            shape: what.to_string(),
            field: "memory_mib",
            value: rec.memory_mib,
        });
    }
    let table = toml::Table::try_from(rec)
        .map_err(|e| DbError::Serialize(format!("GPU record {}: {e}", rec.name)))?;
    if let Some(field) = non_finite_field(&table, GPU_FIELDS) {
        return Err(DbError::NonFinite {
            gpu: rec.name.clone(),
            shape: what.to_string(),
            field,
        });
    }
    Ok(table)
}

/// `entry` as a TOML table, refusing values TOML cannot hold.
fn entry_table(entry: &Entry) -> Result<toml::Table, DbError> {
    let shape = format!("{} {}", entry.op.name(), entry.shape().label(entry.op));
    for (field, value) in [
        ("m", entry.m),
        ("n", entry.n),
        ("k", entry.k),
        ("seed", entry.seed),
    ] {
        if value > i64::MAX as u64 {
            return Err(DbError::OutOfRange {
                gpu: entry.gpu.clone(),
                shape,
                field,
                value,
            });
        }
    }
    let table = toml::Table::try_from(entry)
        .map_err(|e| DbError::Serialize(format!("entry {}: {e}", entry.describe())))?;
    if let Some(field) = non_finite_field(&table, ENTRY_FIELDS) {
        return Err(DbError::NonFinite {
            gpu: entry.gpu.clone(),
            shape,
            field,
        });
    }
    Ok(table)
}

/// A key as TOML writes it: bare when it can be, quoted otherwise.
fn render_key(key: &str) -> Result<String, DbError> {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        Ok(key.to_string())
    } else {
        render_value(&toml::Value::String(key.to_string()))
    }
}

/// A value as TOML writes it on the right of `key = ` (tables become inline tables).
/// Top-level floats use Rust's shortest round-trip form with an exponent for very large or
/// small magnitudes (`1.2e-7`, not `0.00000012`), which is also valid TOML.
fn render_value(value: &toml::Value) -> Result<String, DbError> {
    if let toml::Value::Float(f) = value {
        if f.is_finite() {
            return Ok(format!("{f:?}"));
        }
    }
    let mut out = String::new();
    value
        .serialize(toml::ser::ValueSerializer::new(&mut out))
        .map_err(|e| DbError::Serialize(e.to_string()))?;
    Ok(out)
}

/// Appends `table`'s keys as `key = value` lines: those in `order` first, in that order, then
/// any others sorted by name.
fn render_table(out: &mut String, table: &toml::Table, order: &[&str]) -> Result<(), DbError> {
    let mut rest: Vec<&String> = table
        .keys()
        .filter(|k| !order.contains(&k.as_str()))
        .collect();
    rest.sort();
    let ordered = order.iter().copied().chain(rest.iter().map(|k| k.as_str()));
    for key in ordered {
        if let Some(value) = table.get(key) {
            let _ = writeln!(out, "{} = {}", render_key(key)?, render_value(value)?);
        }
    }
    Ok(())
}

impl Database {
    /// An empty database at [`SCHEMA_VERSION`].
    pub fn new() -> Database {
        Database {
            schema_version: SCHEMA_VERSION,
            gpus: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// Reads the database at `path`. A missing file gives an empty database (the normal first
    /// run); a directory, an unreadable or non-UTF-8 file, malformed TOML, wrong types,
    /// inconsistent content or a newer schema give an error naming the file (and the line,
    /// for parse errors).
    pub fn load(path: &Path) -> Result<Database, DbError> {
        match fs::metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Database::new()),
            Err(e) => {
                return Err(DbError::Io {
                    path: path.to_path_buf(),
                    action: "read",
                    source: e,
                })
            }
            Ok(meta) if meta.is_dir() => {
                return Err(DbError::IsDirectory {
                    path: path.to_path_buf(),
                })
            }
            Ok(_) => {}
        }
        let bytes = fs::read(path).map_err(|e| DbError::Io {
            path: path.to_path_buf(),
            action: "read",
            source: e,
        })?;
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let valid = e.utf8_error().valid_up_to();
                let bytes = e.as_bytes();
                // Everything before `valid` is UTF-8, so this slice converts without loss.
                let before = String::from_utf8_lossy(&bytes[..valid]);
                let (line, column) = line_column(&before, before.len());
                return Err(DbError::NotUtf8 {
                    path: path.to_path_buf(),
                    line,
                    column,
                });
            }
        };
        Database::from_toml_str(&text, &path.display().to_string())
    }

    /// Like [`Database::load`], but a missing file is an error ([`DbError::NotFound`]) rather
    /// than an empty database: for commands that only read a database, where a mistyped path
    /// must not silently look like "nothing tuned".
    pub fn load_existing(path: &Path) -> Result<Database, DbError> {
        match fs::metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Err(DbError::NotFound {
                path: path.to_path_buf(),
            }),
            _ => Database::load(path),
        }
    }

    /// Checks, without writing the database, that [`Database::save`] and
    /// [`Database::update_file`] will be able to write it: takes and releases the write lock,
    /// which needs what a save needs (creating files in the database's directory). Call it
    /// before long work whose result is to be saved. A directory that does not exist yet is not
    /// checked (saving creates it).
    pub fn check_writable(path: &Path) -> Result<(), DbError> {
        let (_, dir, _) = write_target(path)?;
        if !dir.exists() {
            return Ok(());
        }
        WriteLock::acquire(path).map(drop)
    }

    /// Parses database text; `origin` names it in error messages (usually the file path).
    ///
    /// `schema_version` is checked before anything else, so a file from a newer autotune is
    /// reported as such even when it has fields this build does not know.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Database, DbError> {
        let path = PathBuf::from(origin);
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let table: toml::Table = toml::from_str(text).map_err(|e| parse_error(&path, text, &e))?;
        match table.get("schema_version") {
            None => return Err(DbError::MissingSchema { path }),
            Some(toml::Value::Integer(v)) if *v > i64::from(SCHEMA_VERSION) => {
                return Err(DbError::NewerSchema {
                    path,
                    found: *v,
                    supported: SCHEMA_VERSION,
                })
            }
            Some(toml::Value::Integer(v)) if *v < 1 => {
                return Err(DbError::Invalid {
                    path,
                    message: format!(
                        "schema_version = {v} is not a valid version (this build reads 1 to {SCHEMA_VERSION})"
                    ),
                })
            }
            // Any other type is reported, with its line, by the typed parse below.
            _ => {}
        }
        let raw: FileRepr = toml::from_str(text).map_err(|e| parse_error(&path, text, &e))?;
        let mut db = Database {
            schema_version: raw.schema_version,
            gpus: raw.gpu,
            entries: raw.entry,
        };
        db.check_content()
            .map_err(|message| DbError::Invalid { path, message })?;
        db.sort();
        Ok(db)
    }

    /// Checks what TOML types cannot: unique keys, shapes that agree with their labels,
    /// finite numbers. Returns a message naming the offending record.
    fn check_content(&self) -> Result<(), String> {
        let mut names = BTreeMap::new();
        for (i, g) in self.gpus.iter().enumerate() {
            if let Some(first) = names.insert(g.name.as_str(), i) {
                return Err(format!(
                    "[[gpu]] tables {} and {} both have name = {:?}; keep one",
                    first + 1,
                    i + 1,
                    g.name
                ));
            }
            if let Some(field) = toml::Table::try_from(g)
                .ok()
                .and_then(|t| non_finite_field(&t, GPU_FIELDS))
            {
                return Err(format!(
                    "[[gpu]] table {} ({}) has a NaN or infinite `{field}`",
                    i + 1,
                    g.name
                ));
            }
        }
        let mut keys = BTreeMap::new();
        for (i, e) in self.entries.iter().enumerate() {
            let which = format!("[[entry]] table {} ({})", i + 1, e.describe());
            if let Some(first) = keys.insert(e.key_ref(), i) {
                return Err(format!(
                    "[[entry]] tables {} and {} are both for {}; keep one",
                    first + 1,
                    i + 1,
                    e.describe()
                ));
            }
            if e.m == 0 || e.n == 0 || e.k == 0 {
                return Err(format!("{which} has a zero dimension"));
            }
            if e.op == Op::Gemv && e.n != 1 {
                return Err(format!(
                    "{which} is a gemv entry with n = {}; gemv needs n = 1",
                    e.n
                ));
            }
            if let Err(err) = Shape::new(e.op, e.m, e.n, e.k) {
                return Err(format!("{which} has an unusable shape: {err}"));
            }
            let label = e.shape().label(e.op);
            if Shape::parse(e.op, &e.shape).ok() != Some(e.shape()) {
                return Err(format!(
                    "{which} has shape = {:?} but m, n, k say {label:?}; make them agree",
                    e.shape
                ));
            }
            if let Some(field) = toml::Table::try_from(e)
                .ok()
                .and_then(|t| non_finite_field(&t, ENTRY_FIELDS))
            {
                return Err(format!("{which} has a NaN or infinite `{field}`"));
            }
        }
        Ok(())
    }

    /// Sorts GPUs by name and entries by `(gpu, op, m, n, k)`, the order files are written in.
    pub fn sort(&mut self) {
        self.gpus.sort_by(|a, b| a.name.cmp(&b.name));
        self.entries.sort_by(|a, b| a.key_ref().cmp(&b.key_ref()));
    }

    /// The database as TOML text: header comment, `schema_version`, `[[gpu]]` tables sorted by
    /// name, `[[entry]]` tables sorted by `(gpu, op, m, n, k)`, keys in a fixed order, `params`
    /// as an inline table. The same content always gives the same bytes.
    ///
    /// Fails on NaN or infinite numbers, on unsigned values above `2^63 - 1`, and on two GPUs
    /// or two entries with the same key.
    pub fn to_toml_string(&self) -> Result<String, DbError> {
        let mut gpus: Vec<&GpuRecord> = self.gpus.iter().collect();
        gpus.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(w) = gpus.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(DbError::Serialize(format!(
                "two GPU records are named {:?}; keep one (Database::upsert_gpu replaces instead of adding)",
                w[0].name
            )));
        }
        let mut entries: Vec<&Entry> = self.entries.iter().collect();
        entries.sort_by(|a, b| a.key_ref().cmp(&b.key_ref()));
        if let Some(w) = entries
            .windows(2)
            .find(|w| w[0].key_ref() == w[1].key_ref())
        {
            return Err(DbError::Serialize(format!(
                "two entries are for {}; keep one (Database::upsert replaces instead of adding)",
                w[0].describe()
            )));
        }

        let mut out = String::from(HEADER);
        let _ = writeln!(out, "schema_version = {SCHEMA_VERSION}");
        for g in gpus {
            let table = gpu_table(g)?;
            out.push_str("\n[[gpu]]\n");
            render_table(&mut out, &table, GPU_FIELDS)?;
        }
        for e in entries {
            let table = entry_table(e)?;
            out.push_str("\n[[entry]]\n");
            render_table(&mut out, &table, ENTRY_FIELDS)?;
        }
        Ok(out)
    }

    /// Writes the database to `path` atomically: the text goes to a temporary file in the same
    /// directory, which is flushed to disk and renamed over `path`; then the directory is
    /// flushed (best effort). Creates the parent directory if needed. On any failure the old
    /// file is left as it was and the temporary file is removed.
    ///
    /// Holds the write lock while writing (waiting for another writer to finish), and removes
    /// temporary files that killed writes left behind. To change a database that others may be
    /// writing too, use [`Database::update_file`], which also holds the lock while reading.
    pub fn save(&self, path: &Path) -> Result<(), DbError> {
        let text = self.to_toml_string()?;
        let lock = WriteLock::acquire(path)?;
        write_locked(path, &text, &lock)
    }

    /// Adds `rec`, or replaces the GPU record with the same name. A measured
    /// `copy_bandwidth_gbs` of the old record is kept when `rec` has none.
    pub fn upsert_gpu(&mut self, mut rec: GpuRecord) {
        if let Some(old) = self.gpus.iter_mut().find(|g| g.name == rec.name) {
            if rec.copy_bandwidth_gbs.is_none() {
                rec.copy_bandwidth_gbs = old.copy_bandwidth_gbs;
            }
            *old = rec;
        } else {
            let at = self.gpus.partition_point(|g| g.name < rec.name);
            self.gpus.insert(at, rec);
        }
    }

    /// Adds `entry`, or replaces the entry with the same `(gpu, op, m, n, k)` and returns the
    /// old one. Every other entry stays.
    pub fn upsert(&mut self, entry: Entry) -> Option<Entry> {
        if let Some(old) = self
            .entries
            .iter_mut()
            .find(|e| e.key_ref() == entry.key_ref())
        {
            return Some(std::mem::replace(old, entry));
        }
        let at = self
            .entries
            .partition_point(|e| e.key_ref() < entry.key_ref());
        self.entries.insert(at, entry);
        None
    }

    /// The entry for `gpu`, `op` and `shape`, if tuned.
    pub fn get(&self, gpu: &str, op: Op, shape: Shape) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.key_ref() == (gpu, op, shape.m, shape.n, shape.k))
    }

    /// The record of the GPU named `name`.
    pub fn gpu(&self, name: &str) -> Option<&GpuRecord> {
        self.gpus.iter().find(|g| g.name == name)
    }

    /// Read-modify-write: loads `path` (empty if missing), applies `f`, saves atomically and
    /// returns the new database. If `f` fails nothing is written.
    ///
    /// The write lock is held from before the read until after the write, so concurrent
    /// updates of one database by several processes (or threads) are applied one after the
    /// other and none is lost. `f` runs with the lock held: keep it short, and do not save the
    /// same database from it (that save would wait for this lock forever).
    pub fn update_file(
        path: &Path,
        f: impl FnOnce(&mut Database) -> Result<(), DbError>,
    ) -> Result<Database, DbError> {
        let lock = WriteLock::acquire(path)?;
        let mut db = Database::load(path)?;
        f(&mut db)?;
        let text = db.to_toml_string()?;
        write_locked(path, &text, &lock)?;
        Ok(db)
    }
}

/// How many times [`WriteLock::acquire`] retries when the lock file it locked was removed by
/// the previous holder; bounded so that a filesystem with unstable inode numbers cannot make it
/// spin forever.
const LOCK_ATTEMPTS: usize = 1000;

/// The exclusive advisory lock that serialises the writers of one database file, on the
/// sidecar file `<name>.lock` next to it. Held while alive; dropping it removes the lock file
/// (Unix) and releases the lock. The OS releases it too when the process dies, even by
/// `kill -9`.
struct WriteLock {
    /// The open, locked lock file.
    file: File,
    /// Its path.
    path: PathBuf,
}

impl WriteLock {
    /// Takes the write lock of the database at `path`, waiting while another writer holds it.
    /// Creates the database's directory if needed.
    fn acquire(path: &Path) -> Result<WriteLock, DbError> {
        let (_, dir, name) = write_target(path)?;
        fs::create_dir_all(&dir).map_err(|source| DbError::Io {
            path: dir.clone(),
            action: "create the directory",
            source,
        })?;
        let lock_path = dir.join(format!("{}.lock", name.to_string_lossy()));
        let lock_err = |source: io::Error| DbError::Lock {
            path: path.to_path_buf(),
            lock: lock_path.clone(),
            source,
        };
        for _ in 0..LOCK_ATTEMPTS {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&lock_path)
                .map_err(lock_err)?;
            file.lock().map_err(lock_err)?;
            // The previous holder removes the file before releasing it: if it did while this
            // process waited, the lock just taken is on a file no other writer will open, so
            // open the path again.
            if still_names(&lock_path, &file) {
                return Ok(WriteLock {
                    file,
                    path: lock_path,
                });
            }
        }
        Err(lock_err(io::Error::other(format!(
            "the lock file was replaced {LOCK_ATTEMPTS} times while waiting for it"
        ))))
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        // Removed while still locked, so no file is left next to the database; a waiter that
        // opened it before sees that the path no longer names its file and retries.
        #[cfg(unix)]
        let _ = fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

/// Whether `path` still names the open `file` (Unix: same device and inode).
#[cfg(unix)]
fn still_names(path: &Path, file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (fs::metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Elsewhere the lock file is never removed, so it always names the open file.
#[cfg(not(unix))]
fn still_names(_path: &Path, _file: &File) -> bool {
    true
}

/// The file a write to `path` replaces (a symlink's target rather than the link), its
/// directory and its file name. Fails when `path` is a directory or names no file.
fn write_target(path: &Path) -> Result<(PathBuf, PathBuf, std::ffi::OsString), DbError> {
    let target = match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    };
    if target.is_dir() {
        return Err(DbError::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    let Some(name) = target.file_name().map(|n| n.to_os_string()) else {
        return Err(DbError::Io {
            path: path.to_path_buf(),
            action: "save the database to",
            source: io::Error::new(io::ErrorKind::InvalidInput, "the path does not name a file"),
        });
    };
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((target, dir, name))
}

/// The name prefix of the temporary files a write of the file `name` creates.
fn temp_prefix(name: &std::ffi::OsStr) -> String {
    format!(".{}.tmp.", name.to_string_lossy())
}

/// Writes `text` to `path` atomically, with the write lock held (`_lock` is the proof), after
/// removing the temporary files that killed writes left behind: every writer holds the lock
/// while its temporary file exists, so any such file found now belongs to a dead write.
fn write_locked(path: &Path, text: &str, _lock: &WriteLock) -> Result<(), DbError> {
    let (_, dir, name) = write_target(path)?;
    let prefix = temp_prefix(&name);
    if let Ok(entries) = fs::read_dir(&dir) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    write_atomic(path, |file| file.write_all(text.as_bytes()))
}

/// Removes the temporary file when dropped, unless disarmed after the rename.
struct TempFile(Option<PathBuf>);

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = fs::remove_file(path);
        }
    }
}

/// Distinguishes temporary files made by one process within the same nanosecond.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes a file atomically: `write` fills a new temporary file next to `path`, which is
/// flushed and renamed over `path`. On failure `path` is untouched and the temporary removed.
fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), DbError> {
    let io_err = |path: &Path, action: &'static str| {
        let path = path.to_path_buf();
        move |source: io::Error| DbError::Io {
            path,
            action,
            source,
        }
    };
    // Write through a symlink to its target rather than replacing the link.
    let (target, dir, name) = write_target(path)?;
    let old_meta = fs::metadata(&target).ok();
    fs::create_dir_all(&dir).map_err(io_err(&dir, "create the directory"))?;

    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let tmp_path = dir.join(format!(
        "{}{}.{}.{}",
        temp_prefix(&name),
        std::process::id(),
        nanos,
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp_path)
        .map_err(io_err(&dir, "create a temporary file in"))?;
    let mut guard = TempFile(Some(tmp_path.clone()));
    write(&mut file).map_err(io_err(&tmp_path, "write"))?;
    file.sync_all()
        .map_err(io_err(&tmp_path, "flush to disk"))?;
    drop(file);
    if let Some(meta) = old_meta {
        // Keep the old file's permissions (best effort).
        let _ = fs::set_permissions(&tmp_path, meta.permissions());
    }
    fs::rename(&tmp_path, &target).map_err(io_err(&target, "replace"))?;
    guard.0 = None;
    #[cfg(unix)]
    {
        // Make the rename itself durable (best effort).
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(name: &str) -> GpuRecord {
        GpuRecord {
            name: name.to_string(),
            arch: "sm_90".to_string(),
            sms: 132,
            clock_mhz: 1980,
            fp32_peak_gflops: 66_908.16,
            memory_mib: 81_559,
            driver_version: "13.0".to_string(),
            nvrtc_version: "13.0".to_string(),
            copy_bandwidth_gbs: None,
        }
    }

    fn entry(gpu: &str, op: Op, shape: &str, median_ms: f64) -> Entry {
        let s = Shape::parse(op, shape).unwrap();
        let mut params = BTreeMap::new();
        params.insert("BM".to_string(), 128);
        params.insert("BN".to_string(), 64);
        params.insert("BK".to_string(), 8);
        Entry {
            gpu: gpu.to_string(),
            op,
            shape: s.label(op),
            m: s.m,
            n: s.n,
            k: s.k,
            family: "gemm_tile2d".to_string(),
            kernel: "gemm_tile2d_128_64_8".to_string(),
            params,
            median_ms,
            min_ms: median_ms * 0.98,
            spread_pct: 1.5,
            samples: 50,
            gflops: s.flops() / (median_ms * 1e6),
            gbs: s.min_bytes(op) / (median_ms * 1e6),
            cublas_median_ms: 0.5,
            vs_cublas: 0.5 / median_ms,
            pct_of_peak: 42.25,
            max_rel_error: 1.2e-6,
            tolerance: 1e-4,
            tried: 120,
            failed: 3,
            seed: 12_345,
            date: "2026-04-20T12:00:00Z".to_string(),
            tool_version: "0.1.0".to_string(),
            checksum: "ab".repeat(32),
            partial: None,
            produced_by: None,
            also_measured: Vec::new(),
        }
    }

    fn producer(host: &str, device: u32, shard: Option<&str>) -> Producer {
        Producer {
            host: host.to_string(),
            device,
            pci_bus_id: Some(format!("0000:{:02X}:00.0", 0x18 + device)),
            uuid: Some(format!("GPU-{device:08x}-0000-0000-0000-000000000000")),
            shard: shard.map(str::to_string),
        }
    }

    /// Every file in `dir` whose name contains `.tmp.`.
    fn temp_files(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp."))
            .collect()
    }

    fn sample_db() -> Database {
        let mut db = Database::new();
        let mut h100 = gpu("NVIDIA H100 80GB HBM3");
        h100.copy_bandwidth_gbs = Some(2890.5);
        db.upsert_gpu(h100);
        db.upsert_gpu(gpu("NVIDIA A100-SXM4-40GB"));
        db.upsert(entry(
            "NVIDIA H100 80GB HBM3",
            Op::Gemm,
            "2048x2048x2048",
            0.41,
        ));
        let mut e = entry("NVIDIA H100 80GB HBM3", Op::Gemv, "4096x4096", 0.031);
        e.partial = Some(true);
        e.seed = i64::MAX as u64;
        e.params.insert("odd key".to_string(), -1);
        db.upsert(e);
        db.upsert(entry(
            "NVIDIA A100-SXM4-40GB",
            Op::Gemm,
            "512x256x128",
            0.02,
        ));
        db
    }

    #[test]
    fn round_trip_save_then_load_is_equal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("autotune.toml");
        let db = sample_db();
        db.save(&path).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("schema_version = 1\n"), "{text}");
        assert!(text.contains("\n[[gpu]]\n"), "{text}");
        assert!(text.contains("\n[[entry]]\n"), "{text}");
        assert!(
            text.contains("params = { BK = 8, BM = 128, BN = 64 }"),
            "params should be an inline table:\n{text}"
        );
        assert!(!text.contains("[entry.params]"), "{text}");
        let loaded = Database::load(&path).unwrap();
        assert_eq!(loaded, db);
        assert_eq!(loaded.to_toml_string().unwrap(), text);
        assert!(temp_files(path.parent().unwrap()).is_empty());
    }

    #[test]
    fn extreme_floats_round_trip_exactly() {
        let mut db = sample_db();
        let values = [
            1.2e-7,
            1e-300,
            5e-324,
            1e300,
            f64::MAX,
            0.1 + 0.2,
            -0.0,
            1e16,
            3.0,
        ];
        for (i, v) in values.iter().enumerate() {
            let mut e = entry("G", Op::Gemm, &format!("{}x1x1", i + 1), 1.0);
            e.max_rel_error = *v;
            db.upsert(e);
        }
        let text = db.to_toml_string().unwrap();
        assert!(text.contains("max_rel_error = 1.2e-7\n"), "{text}");
        let loaded = Database::from_toml_str(&text, "mem").unwrap();
        for (i, v) in values.iter().enumerate() {
            let got = loaded
                .get(
                    "G",
                    Op::Gemm,
                    Shape {
                        m: i as u64 + 1,
                        n: 1,
                        k: 1,
                    },
                )
                .unwrap()
                .max_rel_error;
            assert_eq!(got.to_bits(), v.to_bits(), "{v:?} came back as {got:?}");
        }
    }

    #[test]
    fn text_order_is_stable_whatever_the_insertion_order() {
        let a = sample_db();
        let mut b = Database::new();
        for e in a.entries.iter().rev() {
            b.upsert(e.clone());
        }
        for g in a.gpus.iter().rev() {
            b.upsert_gpu(g.clone());
        }
        // Also a database whose vectors were filled directly, unsorted.
        let mut c = Database::new();
        c.entries = a.entries.iter().rev().cloned().collect();
        c.gpus = a.gpus.iter().rev().cloned().collect();
        let ta = a.to_toml_string().unwrap();
        assert_eq!(ta, b.to_toml_string().unwrap());
        assert_eq!(ta, c.to_toml_string().unwrap());
        // Sorted: gpus by name, entries by (gpu, op, m, n, k).
        let a100_gpu = ta.find("name = \"NVIDIA A100").unwrap();
        let h100_gpu = ta.find("name = \"NVIDIA H100").unwrap();
        assert!(a100_gpu < h100_gpu);
        let gemm = ta.find("shape = \"2048x2048x2048\"").unwrap();
        let gemv = ta.find("shape = \"4096x4096\"").unwrap();
        let a100 = ta.find("shape = \"512x256x128\"").unwrap();
        assert!(a100 < gemm && gemm < gemv, "{ta}");
        // Keys in declared order within a table.
        let median = ta.find("median_ms = ").unwrap();
        let checksum = ta.find("checksum = ").unwrap();
        assert!(median < checksum);
    }

    #[test]
    fn field_order_lists_cover_every_field() {
        let mut e = entry("G", Op::Gemm, "1x2x3", 1.0);
        e.partial = Some(false);
        e.produced_by = Some(producer("h", 0, Some("0/1")));
        e.also_measured = vec![Measurement::of(&e, "other.toml")];
        let t = toml::Table::try_from(&e).unwrap();
        for k in t.keys() {
            assert!(ENTRY_FIELDS.contains(&k.as_str()), "ENTRY_FIELDS lacks {k}");
        }
        assert_eq!(t.len(), ENTRY_FIELDS.len());
        let mut g = gpu("G");
        g.copy_bandwidth_gbs = Some(1.0);
        let t = toml::Table::try_from(&g).unwrap();
        for k in t.keys() {
            assert!(GPU_FIELDS.contains(&k.as_str()), "GPU_FIELDS lacks {k}");
        }
        assert_eq!(t.len(), GPU_FIELDS.len());
    }

    #[test]
    fn upsert_replaces_one_shape_and_keeps_the_others() {
        let mut db = sample_db();
        let before = db.entries.len();
        let other = db
            .get(
                "NVIDIA A100-SXM4-40GB",
                Op::Gemm,
                Shape {
                    m: 512,
                    n: 256,
                    k: 128,
                },
            )
            .unwrap()
            .clone();
        let mut newer = entry("NVIDIA H100 80GB HBM3", Op::Gemm, "2048x2048x2048", 0.39);
        newer.kernel = "new_kernel".to_string();
        let old = db.upsert(newer).unwrap();
        assert_eq!(old.median_ms, 0.41);
        assert_eq!(db.entries.len(), before);
        let shape = Shape::parse(Op::Gemm, "2048x2048x2048").unwrap();
        let got = db.get("NVIDIA H100 80GB HBM3", Op::Gemm, shape).unwrap();
        assert_eq!(got.kernel, "new_kernel");
        assert_eq!(got.median_ms, 0.39);
        // Same shape on another GPU or op is a different key.
        assert!(db.get("NVIDIA A100-SXM4-40GB", Op::Gemm, shape).is_none());
        assert_eq!(
            db.get("NVIDIA A100-SXM4-40GB", Op::Gemm, other.shape()),
            Some(&other)
        );
        assert!(db
            .get(
                "NVIDIA H100 80GB HBM3",
                Op::Gemv,
                Shape {
                    m: 4096,
                    n: 1,
                    k: 4096
                }
            )
            .is_some());
        // A new key is added.
        assert!(db
            .upsert(entry("NVIDIA H100 80GB HBM3", Op::Gemm, "64x64x64", 0.01))
            .is_none());
        assert_eq!(db.entries.len(), before + 1);
    }

    #[test]
    fn update_file_retunes_one_shape_without_dropping_others() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        sample_db().save(&path).unwrap();
        let db = Database::update_file(&path, |db| {
            db.upsert(entry(
                "NVIDIA H100 80GB HBM3",
                Op::Gemm,
                "2048x2048x2048",
                0.3,
            ));
            Ok(())
        })
        .unwrap();
        let loaded = Database::load(&path).unwrap();
        assert_eq!(loaded, db);
        assert_eq!(loaded.entries.len(), 3);
        assert_eq!(
            loaded
                .get(
                    "NVIDIA H100 80GB HBM3",
                    Op::Gemm,
                    Shape {
                        m: 2048,
                        n: 2048,
                        k: 2048
                    }
                )
                .unwrap()
                .median_ms,
            0.3
        );
        // A failing update writes nothing.
        let text = fs::read_to_string(&path).unwrap();
        let err = Database::update_file(&path, |db| {
            db.entries.clear();
            Err(DbError::Serialize("stop".to_string()))
        });
        assert!(err.is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn upsert_gpu_replaces_and_keeps_measured_bandwidth() {
        let mut db = sample_db();
        let mut rec = gpu("NVIDIA H100 80GB HBM3");
        rec.driver_version = "13.1".to_string();
        db.upsert_gpu(rec);
        assert_eq!(db.gpus.len(), 2);
        let got = db.gpu("NVIDIA H100 80GB HBM3").unwrap();
        assert_eq!(got.driver_version, "13.1");
        assert_eq!(got.copy_bandwidth_gbs, Some(2890.5));
        let mut rec = gpu("NVIDIA H100 80GB HBM3");
        rec.copy_bandwidth_gbs = Some(3000.0);
        db.upsert_gpu(rec);
        assert_eq!(
            db.gpu("NVIDIA H100 80GB HBM3").unwrap().copy_bandwidth_gbs,
            Some(3000.0)
        );
        assert!(db.gpu("nope").is_none());
    }

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
    fn old_files_without_also_measured_still_load() {
        let text = sample_db().to_toml_string().unwrap();
        assert!(!text.contains("also_measured"), "{text}");
        let db = Database::from_toml_str(&text, "old.toml").unwrap();
        assert!(db.entries.iter().all(|e| e.also_measured.is_empty()));
    }

    #[test]
    fn producer_round_trips_and_old_entries_without_it_still_load() {
        // An entry as files written before `produced_by` existed have it.
        let old = r#"schema_version = 1

[[entry]]
gpu = "G"
op = "gemm"
shape = "8x8x8"
m = 8
n = 8
k = 8
family = "f"
kernel = "k"
params = { BM = 8 }
median_ms = 0.5
min_ms = 0.5
spread_pct = 1.0
samples = 10
gflops = 1.0
gbs = 1.0
cublas_median_ms = 0.5
vs_cublas = 1.0
pct_of_peak = 1.0
max_rel_error = 0.0
tolerance = 0.0001
tried = 1
failed = 0
seed = 1
date = "2026-01-01T00:00:00Z"
tool_version = "0.1.0"
checksum = "ab"
also_measured = [{ source = "a.toml", median_ms = 0.6, cublas_median_ms = 0.5, family = "f", params = { BM = 16 }, date = "2026-01-01T00:00:00Z" }]
"#;
        let db = Database::from_toml_str(old, "old.toml").unwrap();
        assert_eq!(db.entries[0].produced_by, None);
        assert_eq!(db.entries[0].also_measured[0].produced_by, None);
        // Nothing is written for an entry without a producer.
        assert!(!db.to_toml_string().unwrap().contains("produced_by"));

        let mut db = sample_db();
        db.entries[0].produced_by = Some(producer("node07", 1, Some("2/8")));
        db.entries[1].produced_by = Some(Producer {
            pci_bus_id: None,
            uuid: None,
            ..producer("node01", 0, None)
        });
        let text = db.to_toml_string().unwrap();
        assert!(
            text.contains("produced_by = { device = 1, host = \"node07\", pci_bus_id = \"0000:19:00.0\", shard = \"2/8\", uuid = \"GPU-00000001-0000-0000-0000-000000000000\" }\n"),
            "{text}"
        );
        assert!(
            text.contains("produced_by = { device = 0, host = \"node01\" }\n"),
            "{text}"
        );
        assert_eq!(Database::from_toml_str(&text, "new.toml").unwrap(), db);
        assert_eq!(
            producer("node07", 1, Some("2/8")).to_string(),
            "node07 device 1, shard 2/8"
        );
        assert_eq!(producer("n", 0, None).to_string(), "n device 0");
        assert!(!this_host().is_empty());
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
            "--allow-mixed-checksums",
            "NVIDIA L40S gemm 64x64x64",
        ] {
            assert!(msg.contains(needle), "{needle:?} missing from: {msg}");
        }
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

        let mut old = sample_db();
        old.schema_version = 2;
        let err = Database::merge_all(
            vec![("new.toml".into(), sample_db()), ("old.toml".into(), old)],
            MergeOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(
            err,
            MergeError::SchemaMismatch {
                first_version: 1,
                other_version: 2,
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
    fn nan_is_rejected_and_the_file_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        let db = sample_db();
        db.save(&path).unwrap();
        let before = fs::read(&path).unwrap();

        let mut bad = db.clone();
        bad.upsert(entry(
            "NVIDIA H100 80GB HBM3",
            Op::Gemm,
            "2048x2048x2048",
            f64::NAN,
        ));
        let err = bad.save(&path).unwrap_err();
        match &err {
            DbError::NonFinite { field, shape, .. } => {
                assert_eq!(field, "median_ms");
                assert!(shape.contains("2048x2048x2048"), "{shape}");
            }
            other => panic!("expected NonFinite, got {other:?}"),
        }
        let mut bad = db.clone();
        bad.gpus[0].copy_bandwidth_gbs = Some(f64::INFINITY);
        assert!(matches!(
            bad.save(&path),
            Err(DbError::NonFinite { ref field, .. }) if field == "copy_bandwidth_gbs"
        ));
        let mut bad = db.clone();
        bad.entries[0].seed = u64::MAX;
        assert!(matches!(
            bad.save(&path),
            Err(DbError::OutOfRange { field: "seed", .. })
        ));
        let mut bad = db.clone();
        bad.entries.push(bad.entries[0].clone());
        assert!(matches!(bad.save(&path), Err(DbError::Serialize(_))));

        assert_eq!(fs::read(&path).unwrap(), before);
        assert!(temp_files(dir.path()).is_empty());
    }

    #[test]
    fn failed_write_leaves_old_file_and_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        sample_db().save(&path).unwrap();
        let before = fs::read(&path).unwrap();
        let err = write_atomic(&path, |f| {
            f.write_all(b"schema_version = 1\n[[entry]]\ngpu = \"tor")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(
            matches!(
                err,
                DbError::Io {
                    action: "write",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("disk full"));
        assert_eq!(fs::read(&path).unwrap(), before);
        assert!(temp_files(dir.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn read_only_directory_keeps_old_content() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("ro");
        fs::create_dir(&sub).unwrap();
        let path = sub.join("db.toml");
        let db = sample_db();
        db.save(&path).unwrap();
        let before = fs::read(&path).unwrap();
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o555)).unwrap();
        // Root ignores directory permissions; only assert the failure where it can happen.
        let probe = sub.join("probe");
        let enforced = File::create(&probe).is_err();
        let _ = fs::remove_file(&probe);

        let mut changed = db.clone();
        changed.upsert(entry("NVIDIA H100 80GB HBM3", Op::Gemm, "8x8x8", 0.001));
        let result = changed.save(&path);
        let writable = Database::check_writable(&path);
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o755)).unwrap();
        if enforced {
            // The write lock is the first file a save creates next to the database.
            let err = result.unwrap_err();
            assert!(matches!(err, DbError::Lock { .. }), "{err:?}");
            assert!(err.to_string().contains("db.toml.lock"), "{err}");
            assert!(err.to_string().contains("--db"));
            assert!(
                matches!(writable, Err(DbError::Lock { .. })),
                "{writable:?}"
            );
            assert_eq!(fs::read(&path).unwrap(), before);
        } else {
            eprintln!("directory permissions not enforced (running as root?): save succeeded");
            result.unwrap();
            writable.unwrap();
            assert_eq!(Database::load(&path).unwrap(), changed);
        }
        assert!(temp_files(&sub).is_empty());
    }

    #[test]
    fn corrupt_file_reports_line_and_is_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        let text = "schema_version = 1\n[[gpu]]\nname = \"broken\narch = \"sm_90\"\n";
        fs::write(&path, text).unwrap();
        let err = Database::load(&path).unwrap_err();
        match &err {
            DbError::Parse {
                path: p,
                line,
                column,
                message,
            } => {
                assert_eq!(p, &path);
                assert_eq!(*line, 3, "{err}");
                assert!(*column >= 1);
                assert!(!message.is_empty());
            }
            other => panic!("expected Parse, got {other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("line 3"), "{msg}");
        assert!(msg.contains("--db"), "{msg}");
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn wrong_type_reports_its_line() {
        let mut text = sample_db().to_toml_string().unwrap();
        text = text.replacen("sms = 132", "sms = \"many\"", 1);
        let line = text
            .lines()
            .position(|l| l.starts_with("sms = \"many\""))
            .unwrap()
            + 1;
        let err = Database::from_toml_str(&text, "x.toml").unwrap_err();
        match err {
            DbError::Parse {
                line: l, column, ..
            } => {
                assert_eq!(l, line);
                assert_eq!(column, 7);
            }
            other => panic!("expected Parse, got {other:?}"),
        }
        // A typo in the top-level table names is caught too.
        let err = Database::from_toml_str("schema_version = 1\n\n[[entries]]\n", "x").unwrap_err();
        assert!(matches!(err, DbError::Parse { line: 3, .. }), "{err:?}");
    }

    #[test]
    fn newer_schema_is_reported_before_unknown_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        let text = "schema_version = 99\nfuture = { x = 1 }\n\n[[entry]]\nwhatever = true\n";
        fs::write(&path, text).unwrap();
        let err = Database::load(&path).unwrap_err();
        assert!(
            matches!(
                err,
                DbError::NewerSchema {
                    found: 99,
                    supported: 1,
                    ..
                }
            ),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("newer autotune"), "{msg}");
        assert!(msg.contains("upgrade autotune"), "{msg}");
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn missing_or_invalid_schema_is_an_error() {
        let err = Database::from_toml_str("[[gpu]]\nname = \"x\"\n", "db.toml").unwrap_err();
        assert!(matches!(err, DbError::MissingSchema { .. }), "{err:?}");
        let err = Database::from_toml_str("", "db.toml").unwrap_err();
        assert!(matches!(err, DbError::MissingSchema { .. }), "{err:?}");
        let err = Database::from_toml_str("schema_version = 0\n", "db.toml").unwrap_err();
        assert!(matches!(err, DbError::Invalid { .. }), "{err:?}");
        let err = Database::from_toml_str("schema_version = \"1\"\n", "db.toml").unwrap_err();
        assert!(matches!(err, DbError::Parse { line: 1, .. }), "{err:?}");
        let db = Database::from_toml_str("schema_version = 1\n", "db.toml").unwrap();
        assert_eq!(db, Database::new());
    }

    #[test]
    fn inconsistent_content_is_rejected() {
        let good = sample_db().to_toml_string().unwrap();
        let bad = good.replacen("shape = \"4096x4096\"", "shape = \"4096x8192\"", 1);
        let err = Database::from_toml_str(&bad, "db.toml").unwrap_err();
        assert!(matches!(err, DbError::Invalid { .. }), "{err:?}");
        assert!(err.to_string().contains("4096x8192"));
        let dup = format!(
            "{good}\n[[entry]]\n{}",
            good.split("[[entry]]\n").nth(1).unwrap()
        );
        let err = Database::from_toml_str(&dup, "db.toml").unwrap_err();
        assert!(err.to_string().contains("keep one"), "{err}");
        let nan = good.replacen("median_ms = 0.41", "median_ms = nan", 1);
        assert_ne!(nan, good);
        let err = Database::from_toml_str(&nan, "db.toml").unwrap_err();
        assert!(err.to_string().contains("median_ms"), "{err}");
    }

    #[test]
    fn missing_file_is_an_empty_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::load(&dir.path().join("none.toml")).unwrap();
        assert_eq!(db, Database::new());
        assert_eq!(db.schema_version, SCHEMA_VERSION);
        assert!(db.entries.is_empty() && db.gpus.is_empty());
    }

    #[test]
    fn directory_path_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let err = Database::load(dir.path()).unwrap_err();
        assert!(matches!(err, DbError::IsDirectory { .. }), "{err:?}");
        let err = sample_db().save(dir.path()).unwrap_err();
        assert!(matches!(err, DbError::IsDirectory { .. }), "{err:?}");
        assert!(err.to_string().contains("--db"));
    }

    #[test]
    fn non_utf8_file_is_rejected_with_position() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        fs::write(&path, b"schema_version = 1\n# caf\xe9\n").unwrap();
        let err = Database::load(&path).unwrap_err();
        assert!(
            matches!(
                err,
                DbError::NotUtf8 {
                    line: 2,
                    column: 6,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    /// Names of the files in `dir`, sorted.
    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn saves_remove_stale_temp_files_and_leave_no_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        // What a write killed before its rename leaves behind.
        let stale = dir.path().join(".db.toml.tmp.999999.1.0");
        fs::write(&stale, "schema_version = 1\n[[entry]]\ngpu = \"tor").unwrap();
        // Another database's temporary file in the same directory is not ours to remove.
        let other = dir.path().join(".other.toml.tmp.999999.1.0");
        fs::write(&other, "").unwrap();
        sample_db().save(&path).unwrap();
        assert_eq!(
            listing(dir.path()),
            [".other.toml.tmp.999999.1.0", "db.toml"]
        );
        fs::write(&stale, "").unwrap();
        Database::update_file(&path, |_| Ok(())).unwrap();
        assert_eq!(
            listing(dir.path()),
            [".other.toml.tmp.999999.1.0", "db.toml"]
        );
        let mut expected = sample_db();
        expected.sort();
        assert_eq!(Database::load(&path).unwrap(), expected);
    }

    /// Threads of one process exclude each other too: each `update_file` opens the lock file
    /// anew, and `flock`-style locks belong to the open file.
    #[test]
    fn threads_updating_one_file_lose_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        std::thread::scope(|s| {
            for t in 0..4 {
                let path = &path;
                s.spawn(move || {
                    for m in 1..=10 {
                        Database::update_file(path, |db| {
                            let gpu = format!("GPU {t}");
                            db.upsert(entry(&gpu, Op::Gemm, &format!("{m}x8x8"), 0.1));
                            Ok(())
                        })
                        .unwrap();
                    }
                });
            }
        });
        assert_eq!(Database::load(&path).unwrap().entries.len(), 40);
        assert_eq!(listing(dir.path()), ["db.toml"]);
    }

    #[test]
    fn check_writable_writes_nothing_and_load_existing_needs_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        let err = Database::load_existing(&path).unwrap_err();
        assert!(matches!(err, DbError::NotFound { .. }), "{err:?}");
        assert!(err.to_string().contains("--db"), "{err}");
        Database::check_writable(&path).unwrap();
        Database::check_writable(&dir.path().join("new/sub/db.toml")).unwrap();
        assert!(
            listing(dir.path()).is_empty(),
            "check_writable left files behind"
        );
        assert!(matches!(
            Database::check_writable(dir.path()),
            Err(DbError::IsDirectory { .. })
        ));
        sample_db().save(&path).unwrap();
        assert_eq!(
            Database::load_existing(&path).unwrap(),
            Database::load(&path).unwrap()
        );
    }

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("abc", 0), (1, 1));
        assert_eq!(line_column("a\nbc", 3), (2, 2));
        assert_eq!(line_column("é\néx", 5), (2, 2));
        assert_eq!(line_column("ab", 99), (1, 3));
    }
}
