//! What the user can do about a database error, on this command line: the library's
//! [`DbError`] says what went wrong; the option that picks another file is the CLI's to name.

use autotune::db::DbError;

/// How the command at hand names its database files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DbArg {
    /// `--db PATH` (tuning, `best`, `export`, `summary`, `compare`, `report`, `cross`).
    Db,
    /// `merge`: the inputs are positional, the output is `--output`.
    Merge,
}

/// A database error followed by the advice for this command line.
#[derive(Debug, thiserror::Error)]
#[error("{error}{advice}")]
struct Advised {
    /// The library's error.
    #[source]
    error: DbError,
    /// What to do, starting with its own punctuation.
    advice: String,
}

/// `e` with the advice for a [`DbError`] appended, when `e` is one; any other error is
/// returned as it is.
pub(super) fn advise(e: anyhow::Error, arg: DbArg) -> anyhow::Error {
    match e.downcast::<DbError>() {
        Ok(error) => {
            let advice = advice(&error, arg);
            if advice.is_empty() {
                error.into()
            } else {
                Advised { error, advice }.into()
            }
        }
        Err(e) => e,
    }
}

/// The text appended to `e`'s message (empty when there is nothing to add).
fn advice(e: &DbError, arg: DbArg) -> String {
    let other = match arg {
        DbArg::Db => "pass --db to use another file",
        DbArg::Merge => "name another file",
    };
    match (e, arg) {
        (DbError::Parse { .. } | DbError::NotUtf8 { .. } | DbError::Invalid { .. }, _) => {
            format!("; fix it or {other}")
        }
        (DbError::NewerSchema { .. }, DbArg::Db) => " or use --db to pick another file".into(),
        (DbError::NewerSchema { .. }, DbArg::Merge) => " or name another file".into(),
        (DbError::MissingSchema { .. }, _) => format!("; otherwise {other}"),
        (DbError::IsDirectory { path }, _) => format!(
            ": {} with a file path such as {}",
            match arg {
                DbArg::Db => "pass --db",
                DbArg::Merge => "name the database",
            },
            path.join("autotune.toml").display()
        ),
        (DbError::NotFound { .. }, DbArg::Db) => ": pass --db with an existing tuning database (e.g. results/tuning.toml), or tune a shape first to create it".into(),
        (DbError::NotFound { .. }, DbArg::Merge) => {
            ": pass the path of a tuning database (e.g. results/tuning.toml)".into()
        }
        (DbError::Lock { .. }, DbArg::Db) => format!(", or {other}"),
        (DbError::Lock { .. }, DbArg::Merge) => ", or pass --output with another file".into(),
        (DbError::Io { .. }, _) => format!(", or {other}"),
        (
            DbError::NonFinite { .. }
            | DbError::OutOfRange { .. }
            | DbError::Serialize(_)
            | DbError::Merge(_),
            _,
        ) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// The messages the command line printed before the advice moved out of the library.
    #[test]
    fn advice_for_db_restores_the_former_messages() {
        let path = PathBuf::from("r/t.toml");
        let cases = [
            (
                DbError::Parse {
                    path: path.clone(),
                    line: 2,
                    column: 3,
                    message: "oops".into(),
                },
                "database r/t.toml is not a valid tuning database (line 2, column 3): oops. The file was left untouched; fix it or pass --db to use another file",
            ),
            (
                DbError::NewerSchema {
                    path: path.clone(),
                    found: 7,
                    supported: 1,
                },
                "database r/t.toml was written by a newer autotune (schema 7, this build reads up to 1): upgrade autotune or use --db to pick another file",
            ),
            (
                DbError::MissingSchema { path: path.clone() },
                "database r/t.toml has no top-level `schema_version`, so it does not look like a tuning database written by autotune. If it is one, add `schema_version = 1` as its first line; otherwise pass --db to use another file",
            ),
            (
                DbError::IsDirectory { path: path.clone() },
                "database path r/t.toml is a directory, not a file: pass --db with a file path such as r/t.toml/autotune.toml",
            ),
            (
                DbError::NotFound { path: path.clone() },
                "database r/t.toml does not exist: pass --db with an existing tuning database (e.g. results/tuning.toml), or tune a shape first to create it",
            ),
            (
                DbError::Lock {
                    path: path.clone(),
                    lock: PathBuf::from("r/t.toml.lock"),
                    source: std::io::Error::other("denied"),
                },
                "could not lock r/t.toml.lock to update the database r/t.toml: denied. autotune creates this file next to the database while it writes, so that concurrent runs keep each other's entries: make the directory writable, or pass --db to use another file",
            ),
            (
                DbError::Io {
                    path: path.clone(),
                    action: "read",
                    source: std::io::Error::other("denied"),
                },
                "could not read r/t.toml: denied. Check the path and its permissions, or pass --db to use another file",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(advise(e.into(), DbArg::Db).to_string(), want);
        }
    }

    #[test]
    fn merge_advice_names_no_db_option_and_other_errors_pass_through() {
        let e = advise(
            DbError::NotFound {
                path: PathBuf::from("x.toml"),
            }
            .into(),
            DbArg::Merge,
        );
        assert_eq!(
            e.to_string(),
            "database x.toml does not exist: pass the path of a tuning database (e.g. results/tuning.toml)"
        );
        // The library error stays reachable for callers that match on it.
        assert!(e.chain().any(|c| c.downcast_ref::<DbError>().is_some()));
        let other = advise(anyhow::anyhow!("plain"), DbArg::Db);
        assert_eq!(other.to_string(), "plain");
        let serialize = advise(DbError::Serialize("dup".into()).into(), DbArg::Db);
        assert!(serialize.downcast_ref::<DbError>().is_some());
    }
}
