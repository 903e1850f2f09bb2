//! Recording the shapes a product calls, so that `autotune --suite FILE` tunes exactly those.
//!
//! Opt-in, in either of two ways:
//!
//! - the environment: run the product with `AUTOTUNE_RECORD=DIR` ([`RECORD_ENV`]); the runtime
//!   reads it once, when [`crate::Tuned`] is constructed ([`Recorder::from_env`]);
//! - the builder `Tuned::record_to(DIR)`, for a product that chooses the directory itself
//!   ([`Recorder::new`]).
//!
//! Each (op, shape) the product calls is added once, in the order of first call, to
//! `DIR/gemm.toml` or `DIR/gemv.toml`, a suite ([`crate::suite::Suite`]) to tune on the
//! product's GPU with `autotune --suite DIR/gemm.toml`. The runtime records on its slow path (a
//! shape's first call); a shape this recorder already recorded costs no file I/O. Recording never
//! fails a product's call: the runtime logs a [`RecordError`] once and goes on.
//!
//! Processes may record into one directory at once: each update reads, extends and rewrites the
//! file under its [`WriteLock`], atomically, so no shape is lost and no file is torn. Shapes
//! already in the file are kept in their order; comments other than the header are not. A file
//! that is not a suite of its op is never overwritten: recording into it is an error.
//!
//! ```toml
//! # Recorded by autotune (AUTOTUNE_RECORD): gemm shapes a product called, in order of first call.
//! # Tune them: autotune --suite DIR/gemm.toml
//! op = "gemm"
//! shapes = [
//!     "2048x2048x2048",
//!     "777x1333x555",
//! ]
//! ```

use crate::fileio::{FileError, WriteLock};
use crate::problem::{Op, Shape, ShapeError};
use crate::suite::{Suite, SuiteError};
use std::collections::HashSet;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The environment variable that turns recording on: the directory to record into. Unset or
/// empty: no recording.
pub const RECORD_ENV: &str = "AUTOTUNE_RECORD";

/// What to do about a file that cannot be recorded into.
const ADVICE: &str = "move the file away or point AUTOTUNE_RECORD at another directory";

/// Why a shape could not be recorded. Every message names the file (or the shape) and the cause.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The suite file could not be locked, read or written (it is left as it was). The
    /// lock fails when the directory is not writable.
    #[error("cannot record shapes in {}: {source}", path.display())]
    File {
        /// The suite file.
        path: PathBuf,
        /// Why: [`FileError::Lock`], or [`FileError::Io`] with what was being done.
        source: FileError,
    },
    /// The file exists but is not a valid suite; it is left untouched.
    #[error("cannot record shapes in {}: {source}; {ADVICE}", path.display())]
    Invalid {
        /// The suite file.
        path: PathBuf,
        /// Why it is not a valid suite.
        source: SuiteError,
    },
    /// The file is a suite of another op; it is left untouched.
    #[error("cannot record {expected} in {}: it is a {found} suite; {ADVICE}", path.display())]
    WrongOp {
        /// The suite file.
        path: PathBuf,
        /// The op the file is for.
        expected: Op,
        /// The op it holds.
        found: Op,
    },
    /// The shape is not valid for the op (nothing was written).
    #[error("cannot record a {op} shape: {source}")]
    Shape {
        /// The op.
        op: Op,
        /// Why.
        source: ShapeError,
    },
}

/// Records the (op, shape) pairs a product calls into suite files of one directory. `Send` and
/// `Sync`: one recorder serves every thread of a runtime.
#[derive(Debug)]
pub struct Recorder {
    /// The directory of the suite files.
    dir: PathBuf,
    /// What this recorder has recorded (or found already recorded), so repeats do no I/O.
    seen: Mutex<HashSet<(Op, Shape)>>,
}

impl Recorder {
    /// A recorder into `dir` (created on the first record if missing).
    pub fn new(dir: impl Into<PathBuf>) -> Recorder {
        Recorder {
            dir: dir.into(),
            seen: Mutex::new(HashSet::new()),
        }
    }

    /// A recorder into the directory named by [`RECORD_ENV`]; `None` when it is unset or empty.
    pub fn from_env() -> Option<Recorder> {
        Self::from_env_value(std::env::var_os(RECORD_ENV).as_deref())
    }

    /// What [`Recorder::from_env`] makes of the variable's value `value` (`None`: unset):
    /// `None` when unset or empty, else a recorder into that directory.
    pub fn from_env_value(value: Option<&OsStr>) -> Option<Recorder> {
        value.filter(|v| !v.is_empty()).map(Recorder::new)
    }

    /// The directory of the suite files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The suite file of `op`: `DIR/gemm.toml` or `DIR/gemv.toml`.
    pub fn path(&self, op: Op) -> PathBuf {
        self.dir.join(format!("{}.toml", op.name()))
    }

    /// Adds `shape` to the suite file of `op` ([`Recorder::path`]), after the shapes already
    /// there. `Ok(true)` when the shape was new in the file, `Ok(false)` when it was already
    /// there (or already recorded by this recorder: then no file is touched). On error the
    /// file is left as it was, and a later call tries again.
    pub fn record(&self, op: Op, shape: Shape) -> Result<bool, RecordError> {
        if self.seen().contains(&(op, shape)) {
            return Ok(false);
        }
        Shape::new(op, shape.m, shape.n, shape.k)
            .map_err(|source| RecordError::Shape { op, source })?;
        let added = add_to_suite(&self.path(op), op, shape)?;
        self.seen().insert((op, shape));
        Ok(added)
    }

    /// The set of recorded shapes; a panic elsewhere while it was held leaves it usable.
    fn seen(&self) -> MutexGuard<'_, HashSet<(Op, Shape)>> {
        self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Read-modify-write of the suite file at `path` under its lock: appends `shape` unless present.
fn add_to_suite(path: &Path, op: Op, shape: Shape) -> Result<bool, RecordError> {
    let file = || path.to_path_buf();
    let fail = |source| RecordError::File {
        path: file(),
        source,
    };
    let lock = WriteLock::acquire(path).map_err(fail)?;
    let loaded = match Suite::load(path) {
        Ok(suite) if suite.op == op => Ok(suite.shapes),
        Ok(suite) => Err(RecordError::WrongOp {
            path: file(),
            expected: op,
            found: suite.op,
        }),
        Err(SuiteError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            Ok(Vec::new())
        }
        Err(SuiteError::Io { source, .. }) => Err(fail(FileError::Io {
            path: file(),
            action: "read",
            source,
        })),
        Err(source) => Err(RecordError::Invalid {
            path: file(),
            source,
        }),
    };
    let mut shapes = loaded?;
    if shapes.contains(&shape) {
        return Ok(false);
    }
    shapes.push(shape);
    let text = render(path, op, &shapes);
    lock.write_atomic(|f| f.write_all(text.as_bytes()))
        .map_err(fail)?;
    Ok(true)
}

/// The text of a recorded suite: the header, `op` and one shape per line.
fn render(path: &Path, op: Op, shapes: &[Shape]) -> String {
    // A control character (a newline) in the path would end the comment line.
    let shown = path.display().to_string().replace(char::is_control, "?");
    let mut text = format!(
        "# Recorded by autotune ({RECORD_ENV}): {op} shapes a product called, \
         in order of first call.\n\
         # Tune them: autotune --suite {shown}\n\
         op = \"{op}\"\nshapes = [\n"
    );
    for s in shapes {
        let _ = writeln!(text, "    \"{}\",", s.label(op));
    }
    text.push_str("]\n");
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fileio::listing;
    use std::fs;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A fresh directory under the system's temporary directory, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new() -> TempDir {
            static N: AtomicU64 = AtomicU64::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let dir =
                std::env::temp_dir().join(format!("autotune-record-{}-{n}", std::process::id()));
            let _ = fs::remove_dir_all(&dir); // left by a killed run of an earlier process
            fs::create_dir(&dir).unwrap();
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn gemm(m: u64, n: u64, k: u64) -> Shape {
        Shape::mnk(m, n, k)
    }

    fn gemv(m: u64, k: u64) -> Shape {
        Shape::mnk(m, 1, k)
    }

    #[test]
    fn records_in_call_order_as_a_loadable_suite() {
        let tmp = TempDir::new();
        // The directory is created on the first record.
        let rec = Recorder::new(tmp.0.join("rec"));
        let shapes = [gemm(777, 1333, 555), gemm(64, 64, 64), gemm(2048, 1, 3)];
        for s in shapes {
            assert!(rec.record(Op::Gemm, s).unwrap());
        }
        let path = rec.path(Op::Gemm);
        assert_eq!(path, tmp.0.join("rec/gemm.toml"));
        let suite = Suite::load(&path).unwrap();
        assert_eq!(suite.op, Op::Gemm);
        assert_eq!(suite.shapes, shapes);
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# Recorded by autotune"), "{text}");
        assert!(
            text.contains(&format!("autotune --suite {}", path.display())),
            "{text}"
        );
        assert!(text.contains("\n    \"777x1333x555\",\n"), "{text}");
        // No lock or temporary file is left behind.
        assert_eq!(listing(&tmp.0.join("rec")), ["gemm.toml"]);
    }

    #[test]
    fn a_shape_recorded_again_is_false_and_changes_nothing() {
        let tmp = TempDir::new();
        let rec = Recorder::new(&tmp.0);
        assert!(rec.record(Op::Gemm, gemm(8, 8, 8)).unwrap());
        let path = rec.path(Op::Gemm);
        let before = fs::read(&path).unwrap();
        // Another recorder (another process) finds it in the file.
        assert!(!Recorder::new(&tmp.0)
            .record(Op::Gemm, gemm(8, 8, 8))
            .unwrap());
        assert_eq!(fs::read(&path).unwrap(), before);
        // The same recorder does no file I/O at all: the file is not even recreated.
        fs::remove_file(&path).unwrap();
        assert!(!rec.record(Op::Gemm, gemm(8, 8, 8)).unwrap());
        assert!(!path.exists());
    }

    #[test]
    fn gemm_and_gemv_go_to_separate_files() {
        let tmp = TempDir::new();
        let rec = Recorder::new(&tmp.0);
        assert!(rec.record(Op::Gemv, gemv(4096, 4096)).unwrap());
        // The same dimensions as a gemm shape are a different record.
        assert!(rec.record(Op::Gemm, gemm(4096, 1, 4096)).unwrap());
        let v = Suite::load(&tmp.0.join("gemv.toml")).unwrap();
        assert_eq!((v.op, v.shapes), (Op::Gemv, vec![gemv(4096, 4096)]));
        let m = Suite::load(&tmp.0.join("gemm.toml")).unwrap();
        assert_eq!((m.op, m.shapes), (Op::Gemm, vec![gemm(4096, 1, 4096)]));
        assert!(fs::read_to_string(tmp.0.join("gemv.toml"))
            .unwrap()
            .contains("\"4096x4096\""));
    }

    #[test]
    fn an_existing_suite_keeps_its_shapes() {
        let tmp = TempDir::new();
        let path = tmp.0.join("gemv.toml");
        fs::write(&path, "op = \"sgemv\"\nshapes = [\"10x20\", \"7x1x9\"]\n").unwrap();
        let rec = Recorder::new(&tmp.0);
        assert!(!rec.record(Op::Gemv, gemv(7, 9)).unwrap());
        assert!(rec.record(Op::Gemv, gemv(3, 5)).unwrap());
        let suite = Suite::load(&path).unwrap();
        assert_eq!(suite.shapes, [gemv(10, 20), gemv(7, 9), gemv(3, 5)]);
    }

    #[test]
    fn an_invalid_existing_file_is_an_error_and_left_as_it_was() {
        let tmp = TempDir::new();
        let rec = Recorder::new(&tmp.0);
        let path = rec.path(Op::Gemm);
        let cases: [&[u8]; 4] = [
            b"my notes, not a suite\n",
            b"op = \"gemv\"\nshapes = [\"4x4\"]\n",
            b"op = \"gemm\"\nshapes = []\n",
            b"\xff\xfe not text",
        ];
        for bytes in cases {
            fs::write(&path, bytes).unwrap();
            let err = rec.record(Op::Gemm, gemm(2, 3, 4)).unwrap_err();
            assert!(
                matches!(
                    err,
                    RecordError::Invalid { .. } | RecordError::WrongOp { .. }
                ),
                "{err:?}"
            );
            let msg = err.to_string();
            assert!(msg.contains(&path.display().to_string()), "{msg}");
            assert!(msg.contains(RECORD_ENV), "{msg}");
            assert_eq!(fs::read(&path).unwrap(), bytes);
            assert_eq!(listing(&tmp.0), ["gemm.toml"]);
        }
        // Errors are not remembered: once the file is moved away, recording works.
        fs::remove_file(&path).unwrap();
        assert!(rec.record(Op::Gemm, gemm(2, 3, 4)).unwrap());
    }

    #[test]
    fn an_invalid_shape_is_refused_and_nothing_written() {
        let tmp = TempDir::new();
        let rec = Recorder::new(&tmp.0);
        let err = rec.record(Op::Gemv, gemm(4, 2, 4)).unwrap_err();
        assert!(
            matches!(err, RecordError::Shape { op: Op::Gemv, .. }),
            "{err:?}"
        );
        assert!(rec.record(Op::Gemm, gemm(0, 2, 4)).is_err());
        assert!(listing(&tmp.0).is_empty());
    }

    #[test]
    fn concurrent_recorders_keep_every_shape() {
        let tmp = TempDir::new();
        let shared = Recorder::new(&tmp.0);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (dir, shared) = (&tmp.0, &shared);
                s.spawn(move || {
                    // Separate recorders stand for separate processes; one is shared by threads.
                    let own = Recorder::new(dir);
                    for i in 1..=8u64 {
                        let rec = if i % 2 == 0 { shared } else { &own };
                        rec.record(Op::Gemm, gemm(t + 1, i, 16)).unwrap();
                        rec.record(Op::Gemm, gemm(100, 100, i)).unwrap();
                    }
                });
            }
        });
        let suite = Suite::load(&tmp.0.join("gemm.toml")).unwrap();
        assert_eq!(suite.shapes.len(), 4 * 8 + 8);
        for t in 0..4u64 {
            for i in 1..=8u64 {
                assert!(suite.shapes.contains(&gemm(t + 1, i, 16)));
                assert!(suite.shapes.contains(&gemm(100, 100, i)));
            }
        }
        assert_eq!(listing(&tmp.0), ["gemm.toml"]);
    }

    #[test]
    fn from_env_value_unset_or_empty_is_none() {
        assert!(Recorder::from_env_value(None).is_none());
        assert!(Recorder::from_env_value(Some(OsStr::new(""))).is_none());
        let rec = Recorder::from_env_value(Some(OsStr::new("/some/dir"))).unwrap();
        assert_eq!(rec.dir(), Path::new("/some/dir"));
        assert_eq!(rec.path(Op::Gemv), Path::new("/some/dir/gemv.toml"));
        fn send_sync<T: Send + Sync>() {}
        send_sync::<Recorder>();
    }
}
