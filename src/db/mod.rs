//! The tuning database: the best kernel configuration found per GPU x op x shape, with the
//! evidence behind it, stored as a human-readable TOML file.
//!
//! Layout of the file:
//!
//! ```toml
//! schema_version = 6
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
//! [`Database::update_file`] and [`Database::merge_into_file`] are the read-modify-write helpers:
//! re-tuning one shape never drops another entry, and merging into a file that is also an input
//! keeps what others wrote meanwhile. Writers serialise on an exclusive advisory lock
//! ([`WriteLock`]) of a sidecar file `<name>.lock` next to the database (the database itself is
//! replaced by rename, so it cannot carry the lock), held from before the read until after the
//! write: two processes updating the same database at the same moment both keep their entries.
//! The lock file is removed when the writer is done; one left by a killed writer is simply
//! reused. Readers take no lock: they see the old or the new file, never a mix.
//!
//! A write killed between creating its temporary file and renaming it leaves that file behind
//! (`.<name>.tmp.<pid>.<nanos>.<n>`, hidden, next to the database). Readers never look at it,
//! and the next save or update of the same database removes it while holding the lock.
//!
//! The module is split by concern: the record types (`schema.rs`), the canonical TOML reader
//! and writer (`codec.rs`), merging (`merge.rs`) and errors (`error.rs`); atomic writes and the
//! lock live in [`crate::fileio`], the host name in [`crate::provenance`].

mod codec;
mod error;
mod merge;
mod schema;

#[cfg(test)]
pub(crate) mod fixtures;

pub(crate) use error::line_column;
pub use error::DbError;
pub use merge::{
    ChecksumConflict, ChecksumUse, MergeConflict, MergeError, MergeOptions, MergeReport,
};
pub use schema::params_label;
pub use schema::{
    Coverage, CoverageConfig, CoveragePoint, Entry, GpuRecord, Measurement, Producer,
    SCHEMA_VERSION,
};

use crate::fileio::{self, WriteLock};
use crate::problem::{Form, Op, Shape};
use std::fs;
use std::io::{self, Write as _};
use std::path::Path;

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
    /// Portfolio timings over a grid of shapes, at most one per `(gpu, op)`: what the runtime
    /// predicts untuned shapes from.
    pub coverage: Vec<Coverage>,
}

impl Default for Database {
    fn default() -> Self {
        Database::new()
    }
}

impl Database {
    /// An empty database at [`SCHEMA_VERSION`].
    pub fn new() -> Database {
        Database {
            schema_version: SCHEMA_VERSION,
            gpus: Vec::new(),
            entries: Vec::new(),
            coverage: Vec::new(),
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
        Ok(fileio::check_writable(path)?)
    }

    /// Writes the database to `path` atomically: the text goes to a temporary file in the same
    /// directory, which is flushed to disk and renamed over `path`; then the directory is
    /// flushed (best effort). Creates the parent directory if needed. On any failure the old
    /// file is left as it was and the temporary file is removed.
    ///
    /// Holds the write lock while writing (waiting for another writer to finish), and removes
    /// temporary files that killed writes left behind. To change a database that others may be
    /// writing too, use [`Database::update_file`] (or, to merge into it,
    /// [`Database::merge_into_file`]), which also holds the lock while reading.
    pub fn save(&self, path: &Path) -> Result<(), DbError> {
        let text = self.to_toml_string()?;
        let lock = WriteLock::acquire(path)?;
        Ok(lock.write_atomic(|file| file.write_all(text.as_bytes()))?)
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
            .find(|e| e.key_ref() == (gpu, op, shape.m, shape.n, shape.k, shape.form))
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
        db.write_locked(&lock)?;
        Ok(db)
    }

    /// Sorts GPUs by name, entries by `(gpu, op, m, n, k)` and coverage by `(gpu, op, form)`
    /// (the plain form first), the order files are written in.
    pub fn sort(&mut self) {
        self.gpus.sort_by(|a, b| a.name.cmp(&b.name));
        self.entries.sort_by(|a, b| a.key_ref().cmp(&b.key_ref()));
        self.coverage.sort_by(|a, b| a.key_ref().cmp(&b.key_ref()));
    }

    /// The coverage record of `gpu` and `op` measured on exactly `form` (batch included), if
    /// any: the record `cover` replaces or extends.
    pub fn coverage(&self, gpu: &str, op: Op, form: &Form) -> Option<&Coverage> {
        self.coverage
            .iter()
            .find(|c| c.gpu == gpu && c.op == op && c.form == *form)
    }

    /// Every coverage record of `gpu` and `op`, in the order a problem of `form` is predicted
    /// from them: the records that serve the form ([`Coverage::serves`]) first, its own form
    /// before the others; then the records of other forms, fewest differences first
    /// ([`Form::differences`]), whose predictions carry no evidence about cuBLAS on the form.
    pub fn coverages_for(&self, gpu: &str, op: Op, form: &Form) -> Vec<&Coverage> {
        let mut found: Vec<&Coverage> = self
            .coverage
            .iter()
            .filter(|c| c.gpu == gpu && c.op == op)
            .collect();
        // A batched record's serving reads its points' counts: once per record.
        found.sort_by_cached_key(|c| (!c.serves(form), c.form != *form, form.differences(&c.form)));
        found
    }

    /// Every coverage record described ([`Coverage::describe`]), comma-separated, or `none`:
    /// what an error about a missing record lists.
    pub fn coverage_list(&self) -> String {
        if self.coverage.is_empty() {
            return "none".to_string();
        }
        let have: Vec<String> = self.coverage.iter().map(|c| c.describe()).collect();
        have.join(", ")
    }

    /// The coverage record that predicts for `shape` on `gpu`: the one of the problem's form.
    pub fn coverage_for(&self, gpu: &str, op: Op, shape: Shape) -> Option<&Coverage> {
        self.coverage(gpu, op, &shape.form)
    }

    /// Whether `gpu` measured `op` on `shape`: it has an entry, or a coverage grid that serves
    /// the shape's form holds it (a batched grid's points take several counts). What "shapes
    /// nobody tuned" leaves out.
    pub fn measured(&self, gpu: &str, op: Op, shape: Shape) -> bool {
        self.get(gpu, op, shape).is_some()
            || self
                .coverage
                .iter()
                .filter(|c| c.gpu == gpu && c.op == op && c.serves(&shape.form))
                .any(|c| c.points.iter().any(|p| c.point_shape(p) == Some(shape)))
    }

    /// Adds `cov`, or replaces the coverage of the same GPU, op and form and returns the old
    /// one.
    pub fn upsert_coverage(&mut self, cov: Coverage) -> Option<Coverage> {
        if let Some(old) = self
            .coverage
            .iter_mut()
            .find(|c| c.key_ref() == cov.key_ref())
        {
            return Some(std::mem::replace(old, cov));
        }
        self.coverage.push(cov);
        self.sort();
        None
    }

    /// Replaces the file `lock` protects with this database, atomically, after removing the
    /// temporary files of killed writes ([`WriteLock::write_atomic`]). Nothing is written when
    /// the database cannot be turned into TOML.
    pub(super) fn write_locked(&self, lock: &WriteLock) -> Result<(), DbError> {
        let text = self.to_toml_string()?;
        Ok(lock.write_atomic(|file| file.write_all(text.as_bytes()))?)
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;
    use std::fs::File;

    #[test]
    fn round_trip_save_then_load_is_equal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("autotune.toml");
        let db = sample_db();
        db.save(&path).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("schema_version = 6\n"), "{text}");
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
    fn upsert_replaces_one_shape_and_keeps_the_others() {
        let mut db = sample_db();
        let before = db.entries.len();
        let other = db
            .get("NVIDIA A100-SXM4-40GB", Op::Gemm, Shape::mnk(512, 256, 128))
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
            .get("NVIDIA H100 80GB HBM3", Op::Gemv, Shape::mnk(4096, 1, 4096))
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
                    Shape::mnk(2048, 2048, 2048)
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
        let err: DbError = fileio::write_atomic(&path, |f| {
            f.write_all(b"schema_version = 1\n[[entry]]\ngpu = \"tor")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err()
        .into();
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
            assert!(!err.to_string().contains("--db"), "{err}");
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
        assert!(msg.contains("left untouched"), "{msg}");
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
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
        assert!(err.to_string().contains("is a directory"), "{err}");
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
        assert!(err.to_string().contains("does not exist"), "{err}");
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
    fn merging_an_old_and_a_new_database_keeps_each_entrys_deterministic_flag() {
        // An old (version 2) measurement, slower, and a new one, faster and deterministic.
        let mut old = Database::new();
        old.schema_version = 2;
        old.upsert(entry("G", Op::Gemm, "8x8x8", 0.9));
        old.upsert(entry("G", Op::Gemm, "16x16x16", 0.9));
        let mut new = Database::new();
        let mut e = entry("G", Op::Gemm, "8x8x8", 0.5);
        e.family = "gemm_warptile_splitk_det".into();
        e.deterministic = Some(true);
        new.upsert(e);
        let report = old
            .merge("old.toml", new, "new.toml", MergeOptions::default())
            .unwrap();
        assert_eq!(report.in_several, 1);
        let text = old.to_toml_string().unwrap();
        let back = Database::from_toml_str(&text, "merged.toml").unwrap();
        let by_k = |k: u64| back.entries.iter().find(|e| e.k == k).unwrap();
        assert_eq!(by_k(8).deterministic, Some(true));
        assert_eq!(by_k(8).family, "gemm_warptile_splitk_det");
        assert_eq!(by_k(16).deterministic, None);
    }
}
