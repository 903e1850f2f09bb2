//! Why a database could not be read or written ([`DbError`]), and where in its text.

use super::schema::SCHEMA_VERSION;
use super::MergeError;
use crate::fileio::FileError;
use std::io;
use std::path::{Path, PathBuf};

/// Why the database could not be read or written. Every message names the file and says what
/// went wrong; which command-line option picks another file is the caller's to add.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The file is not valid TOML, or a value has the wrong type.
    #[error("database {} is not a valid tuning database ({}): {message}. The file was left untouched", path.display(), location(*line, *column))]
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
    #[error("database {} is not UTF-8 text (first bad byte at line {line}, column {column}): a tuning database is a UTF-8 TOML file. The file was left untouched", path.display())]
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
    #[error("database {} is not a valid tuning database: {message}. The file was left untouched", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the record.
        message: String,
    },
    /// The file was written by a newer autotune with a layout this build cannot read.
    #[error("database {} was written by a newer autotune (schema {found}, this build reads up to {supported}): upgrade autotune", path.display())]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// The `schema_version` in the file.
        found: i64,
        /// The newest version this build reads ([`SCHEMA_VERSION`]).
        supported: u32,
    },
    /// The file has no top-level `schema_version`.
    #[error("database {} has no top-level `schema_version`, so it does not look like a tuning database written by autotune. If it is one, add `schema_version = {SCHEMA_VERSION}` as its first line", path.display())]
    MissingSchema {
        /// The file.
        path: PathBuf,
    },
    /// The database path is a directory.
    #[error("database path {} is a directory, not a file", path.display())]
    IsDirectory {
        /// The path.
        path: PathBuf,
    },
    /// A command that only reads the database was given a path where no file exists.
    #[error("database {} does not exist", path.display())]
    NotFound {
        /// The path.
        path: PathBuf,
    },
    /// The write lock could not be taken (usually: the directory is not writable).
    #[error("could not lock {} to update the database {}: {source}. autotune creates this file next to the database while it writes, so that concurrent runs keep each other's entries: make the directory writable", lock.display(), path.display())]
    Lock {
        /// The database.
        path: PathBuf,
        /// The lock file.
        lock: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A filesystem operation failed.
    #[error("could not {action} {}: {source}. Check the path and its permissions", path.display())]
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
    /// The databases to merge into a file disagree ([`Database::merge_into_file`]); nothing
    /// was written.
    ///
    /// [`Database::merge_into_file`]: super::Database::merge_into_file
    #[error(transparent)]
    Merge(#[from] MergeError),
}

impl From<FileError> for DbError {
    /// The lock and write failures of [`crate::fileio`], as the database reports them.
    fn from(e: FileError) -> DbError {
        match e {
            FileError::Lock { path, lock, source } => DbError::Lock { path, lock, source },
            FileError::Io {
                path,
                action,
                source,
            } => DbError::Io {
                path,
                action,
                source,
            },
            FileError::IsDirectory { path } => DbError::IsDirectory { path },
            FileError::NotAFile { path } => DbError::Io {
                path,
                action: "save the database to",
                source: io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "the path does not name a file",
                ),
            },
        }
    }
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
pub(super) fn parse_error(path: &Path, text: &str, err: &toml::de::Error) -> DbError {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("abc", 0), (1, 1));
        assert_eq!(line_column("a\nbc", 3), (2, 2));
        assert_eq!(line_column("é\néx", 5), (2, 2));
        assert_eq!(line_column("ab", 99), (1, 3));
    }

    #[test]
    fn messages_name_the_file_and_no_command_line_option() {
        let path = PathBuf::from("results/tuning.toml");
        let errors = [
            DbError::Parse {
                path: path.clone(),
                line: 3,
                column: 7,
                message: "expected a string".into(),
            },
            DbError::NotUtf8 {
                path: path.clone(),
                line: 1,
                column: 2,
            },
            DbError::Invalid {
                path: path.clone(),
                message: "bad".into(),
            },
            DbError::NewerSchema {
                path: path.clone(),
                found: 9,
                supported: SCHEMA_VERSION,
            },
            DbError::MissingSchema { path: path.clone() },
            DbError::IsDirectory { path: path.clone() },
            DbError::NotFound { path: path.clone() },
            DbError::Lock {
                path: path.clone(),
                lock: path.with_extension("toml.lock"),
                source: io::Error::from(io::ErrorKind::PermissionDenied),
            },
            FileError::NotAFile { path: path.clone() }.into(),
        ];
        for e in &errors {
            let msg = e.to_string();
            assert!(msg.contains("results/tuning.toml"), "{msg}");
            assert!(
                !msg.contains("--"),
                "a library error names an option: {msg}"
            );
        }
        let e: DbError = FileError::IsDirectory { path: path.clone() }.into();
        assert!(matches!(e, DbError::IsDirectory { .. }));
    }
}
