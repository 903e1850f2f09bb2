//! Safe file replacement: atomic writes (temporary file, `fsync`, rename) and the advisory
//! write lock that serialises the writers of one file.
//!
//! [`write_atomic`] never leaves a torn file: a crash, `kill -9` or an error leaves the old
//! file as it was (or no file, if there was none). A write killed between creating its
//! temporary file and renaming it leaves that file behind (`.<name>.tmp.<pid>.<nanos>.<n>`,
//! hidden, next to the target); readers never look at it.
//!
//! [`WriteLock`] is an exclusive advisory lock ([`File::lock`]) of a sidecar file
//! `<name>.lock` next to the target (the target itself is replaced by rename, so it cannot
//! carry the lock). A read-modify-write holds it from before the read until after the write,
//! so concurrent updates by several processes (or threads) are applied one after the other and
//! none is lost. [`WriteLock::write_atomic`] also removes the temporary files that killed
//! writes left behind: every locked writer holds the lock while its temporary file exists, so
//! any such file found under the lock belongs to a dead write. The lock file is removed when
//! the holder is done; one left by a killed holder is simply reused.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Why a file could not be locked or written. Each variant names the path it was about.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The write lock could not be taken (usually: the directory is not writable).
    #[error("could not lock {} to write {}: {source}", lock.display(), path.display())]
    Lock {
        /// The file the lock protects.
        path: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A filesystem operation failed.
    #[error("could not {action} {}: {source}", path.display())]
    Io {
        /// The file or directory the operation was on.
        path: PathBuf,
        /// What was being done, e.g. `"write"`.
        action: &'static str,
        /// The underlying error.
        source: io::Error,
    },
    /// The path to write is a directory.
    #[error("{} is a directory, not a file", path.display())]
    IsDirectory {
        /// The path.
        path: PathBuf,
    },
    /// The path to write names no file (e.g. it is empty).
    #[error("{} does not name a file", path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
}

impl From<FileError> for io::Error {
    /// An [`io::Error`] of the underlying kind whose message is the whole [`FileError`] (with
    /// its path), for callers that report plain I/O errors.
    fn from(e: FileError) -> io::Error {
        let kind = match &e {
            FileError::Lock { source, .. } | FileError::Io { source, .. } => source.kind(),
            FileError::IsDirectory { .. } | FileError::NotAFile { .. } => {
                io::ErrorKind::InvalidInput
            }
        };
        io::Error::new(kind, e)
    }
}

/// How many times [`WriteLock::acquire`] retries when the lock file it locked was removed by
/// the previous holder; bounded so that a filesystem with unstable inode numbers cannot make it
/// spin forever.
const LOCK_ATTEMPTS: usize = 1000;

/// The exclusive advisory lock that serialises the writers of one file, on the sidecar file
/// `<name>.lock` next to it. Held while alive; dropping it removes the lock file (Unix) and
/// releases the lock. The OS releases it too when the process dies, even by `kill -9`.
///
/// The lock is advisory: it excludes only other holders of the same lock, not readers. Readers
/// need none, since [`write_atomic`] replaces the file in one rename.
#[derive(Debug)]
pub struct WriteLock {
    /// The open, locked lock file.
    file: File,
    /// Its path.
    lock_path: PathBuf,
    /// The file it protects, as given to [`WriteLock::acquire`].
    path: PathBuf,
}

impl WriteLock {
    /// Takes the write lock of the file at `path`, waiting while another holder has it.
    /// Creates the file's directory if needed. A symlink's target is locked, not the link.
    pub fn acquire(path: &Path) -> Result<WriteLock, FileError> {
        let target = Target::of(path)?;
        fs::create_dir_all(&target.dir).map_err(|source| FileError::Io {
            path: target.dir.clone(),
            action: "create the directory",
            source,
        })?;
        let lock_path = target
            .dir
            .join(format!("{}.lock", target.name.to_string_lossy()));
        let lock_err = |source: io::Error| FileError::Lock {
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
                    lock_path,
                    path: path.to_path_buf(),
                });
            }
        }
        Err(lock_err(io::Error::other(format!(
            "the lock file was replaced {LOCK_ATTEMPTS} times while waiting for it"
        ))))
    }

    /// The file this lock protects, as given to [`WriteLock::acquire`].
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The lock file.
    pub fn lock_path(&self) -> &Path {
        &self.lock_path
    }

    /// Replaces the locked file atomically ([`write_atomic`]), after removing the temporary
    /// files that killed writes of it left behind (any found now belong to a dead write, since
    /// every locked writer holds this lock while its temporary file exists).
    pub fn write_atomic(
        &self,
        write: impl FnOnce(&mut File) -> io::Result<()>,
    ) -> Result<(), FileError> {
        let target = Target::of(&self.path)?;
        let prefix = temp_prefix(&target.name);
        if let Ok(entries) = fs::read_dir(&target.dir) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
        write_atomic(&self.path, write)
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        // Removed while still locked, so no file is left next to the target; a waiter that
        // opened it before sees that the path no longer names its file and retries.
        #[cfg(unix)]
        let _ = fs::remove_file(&self.lock_path);
        let _ = self.file.unlock();
    }
}

/// Checks, without writing anything, that [`WriteLock::acquire`] (and so a locked write) will
/// work for `path`: takes and releases its lock. A directory that does not exist yet is not
/// checked (acquiring the lock creates it). Fails when `path` is a directory or names no file.
pub fn check_writable(path: &Path) -> Result<(), FileError> {
    if !Target::of(path)?.dir.exists() {
        return Ok(());
    }
    WriteLock::acquire(path).map(drop)
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

/// The file a write to a path replaces.
struct Target {
    /// The file itself (a symlink's target rather than the link).
    file: PathBuf,
    /// Its directory.
    dir: PathBuf,
    /// Its file name.
    name: OsString,
}

impl Target {
    /// Resolves `path`; fails when it is a directory or names no file.
    fn of(path: &Path) -> Result<Target, FileError> {
        let file = match fs::symlink_metadata(path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
            }
            _ => path.to_path_buf(),
        };
        if file.is_dir() {
            return Err(FileError::IsDirectory {
                path: path.to_path_buf(),
            });
        }
        let Some(name) = file.file_name().map(OsStr::to_os_string) else {
            return Err(FileError::NotAFile {
                path: path.to_path_buf(),
            });
        };
        let dir = match file.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        Ok(Target { file, dir, name })
    }
}

/// The name prefix of the temporary files a write of the file `name` creates.
fn temp_prefix(name: &OsStr) -> String {
    format!(".{}.tmp.", name.to_string_lossy())
}

/// Removes the temporary file when dropped, unless disarmed after the rename.
struct TempFile(Option<PathBuf>);

impl TempFile {
    /// Keeps the file: it has been renamed into place.
    fn disarm(&mut self) {
        self.0 = None;
    }
}

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
/// flushed to disk and renamed over `path`; then the directory is flushed (best effort).
/// Creates the parent directory if needed, writes through a symlink to its target, and keeps
/// the old file's permissions (best effort). On failure `path` is untouched and the temporary
/// file removed.
///
/// Takes no lock: concurrent writers of one file each leave a whole file, the last rename
/// winning. For a read-modify-write, hold a [`WriteLock`] and use [`WriteLock::write_atomic`].
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), FileError> {
    let io_err = |path: &Path, action: &'static str| {
        let path = path.to_path_buf();
        move |source: io::Error| FileError::Io {
            path,
            action,
            source,
        }
    };
    let Target {
        file: target,
        dir,
        name,
    } = Target::of(path)?;
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
        let _ = fs::set_permissions(&tmp_path, meta.permissions());
    }
    fs::rename(&tmp_path, &target).map_err(io_err(&target, "replace"))?;
    guard.disarm();
    #[cfg(unix)]
    {
        // Make the rename itself durable (best effort).
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Names of the files in `dir`, sorted: what a write left behind, for this module's tests and
/// the database's.
#[cfg(test)]
pub(crate) fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn failed_write_leaves_old_file_and_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        write_atomic(&path, |f| f.write_all(b"old")).unwrap();
        let err = write_atomic(&path, |f| {
            f.write_all(b"half of the n")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(
            matches!(
                err,
                FileError::Io {
                    action: "write",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("disk full"), "{err}");
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert_eq!(listing(dir.path()), ["f.txt"]);
    }

    #[test]
    fn creates_the_directory_and_writes_through_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/f.txt");
        write_atomic(&path, |f| f.write_all(b"1")).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"1");
        #[cfg(unix)]
        {
            let link = dir.path().join("link.txt");
            std::os::unix::fs::symlink(&path, &link).unwrap();
            write_atomic(&link, |f| f.write_all(b"2")).unwrap();
            assert!(fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink());
            assert_eq!(fs::read(&path).unwrap(), b"2");
        }
    }

    #[test]
    fn directories_and_empty_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let err = write_atomic(dir.path(), |_| Ok(())).unwrap_err();
        assert!(matches!(err, FileError::IsDirectory { .. }), "{err:?}");
        assert!(matches!(
            WriteLock::acquire(dir.path()),
            Err(FileError::IsDirectory { .. })
        ));
        assert!(matches!(
            check_writable(dir.path()),
            Err(FileError::IsDirectory { .. })
        ));
        let err = write_atomic(Path::new(""), |_| Ok(())).unwrap_err();
        assert!(matches!(err, FileError::NotAFile { .. }), "{err:?}");
        let io: io::Error = err.into();
        assert_eq!(io.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn locked_writes_remove_stale_temp_files_and_the_lock_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        let stale = dir.path().join(".f.txt.tmp.999999.1.0");
        fs::write(&stale, "torn").unwrap();
        // Another file's temporary file is not this lock's to remove.
        let other = dir.path().join(".g.txt.tmp.999999.1.0");
        fs::write(&other, "").unwrap();
        // An unlocked write leaves them (they may belong to a live write).
        write_atomic(&path, |f| f.write_all(b"a")).unwrap();
        assert_eq!(
            listing(dir.path()),
            [".f.txt.tmp.999999.1.0", ".g.txt.tmp.999999.1.0", "f.txt"]
        );
        let lock = WriteLock::acquire(&path).unwrap();
        assert_eq!(lock.path(), path);
        assert_eq!(lock.lock_path(), dir.path().join("f.txt.lock"));
        assert!(lock.lock_path().exists());
        lock.write_atomic(|f| f.write_all(b"b")).unwrap();
        drop(lock);
        assert_eq!(listing(dir.path()), [".g.txt.tmp.999999.1.0", "f.txt"]);
        assert_eq!(fs::read(&path).unwrap(), b"b");
    }

    #[test]
    fn check_writable_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        check_writable(&dir.path().join("f.txt")).unwrap();
        check_writable(&dir.path().join("new/sub/f.txt")).unwrap();
        assert!(listing(dir.path()).is_empty());
    }

    /// Threads of one process exclude each other too: each acquisition opens the lock file
    /// anew, and `flock`-style locks belong to the open file.
    #[test]
    fn threads_holding_the_lock_lose_no_update() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("n.txt");
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..25 {
                        let lock = WriteLock::acquire(&path).unwrap();
                        let n: u32 =
                            fs::read_to_string(&path).map_or(0, |t| t.trim().parse().unwrap());
                        lock.write_atomic(|f| write!(f, "{}", n + 1)).unwrap();
                    }
                });
            }
        });
        assert_eq!(fs::read_to_string(&path).unwrap(), "100");
        assert_eq!(listing(dir.path()), ["n.txt"]);
    }

    #[cfg(unix)]
    #[test]
    fn unwritable_directory_is_a_lock_error_naming_the_lock_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("ro");
        fs::create_dir(&sub).unwrap();
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o555)).unwrap();
        let probe = sub.join("probe");
        let enforced = File::create(&probe).is_err();
        let _ = fs::remove_file(&probe);
        let result = WriteLock::acquire(&sub.join("f.txt"));
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o755)).unwrap();
        if enforced {
            let err = result.unwrap_err();
            assert!(matches!(err, FileError::Lock { .. }), "{err:?}");
            assert!(err.to_string().contains("f.txt.lock"), "{err}");
        } else {
            eprintln!("directory permissions not enforced (running as root?)");
        }
    }
}
