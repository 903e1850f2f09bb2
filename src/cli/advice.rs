//! What to do about an error. The library's errors say what went wrong, with the file, value
//! or limit, and name no flag: a product that links the library has no flags. The advice that
//! names this command line's flags and commands lives here; `main` prints it under the
//! `Error: ...` line as `hint: ...`. Database errors are the exception: their advice depends
//! on how the command names its files (`--db`, or `merge`'s positional inputs and `--output`),
//! so [`advise`] appends it to the error line at the command that knows.

use autotune::cuda::bench::RunError;
use autotune::cuda::device::DeviceError;
use autotune::db::DbError;
use autotune::report::gpus::CompareError;
use autotune::suite::SuiteError;
use autotune::tuning::cover::loo::LooError;
use autotune::tuning::cross::CrossError;
use autotune::tuning::journal::JournalError;
use autotune::tuning::replay::SimulateError;
use autotune::tuning::session::SessionError;
use autotune::tuning::shard::ShardError;
use autotune::tuning::tune::TuneError;
use autotune::tuning::verify::VerifyError;
use std::error::Error as StdError;
use std::fmt;

/// The context of a device error in `best` and `export`, which open the device only to read
/// the GPU's name.
#[derive(Debug)]
pub(super) struct NoGpuGiven;

impl fmt::Display for NoGpuGiven {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("no --gpu given, so the GPU's name is read from the device")
    }
}

/// The errors of several devices of one tuning run (`--devices`), each on its own line.
#[derive(Debug)]
pub(super) struct DevicesFailed(pub(super) Vec<anyhow::Error>);

impl fmt::Display for DevicesFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} devices failed:", self.0.len())?;
        for e in &self.0 {
            write!(f, "\n  {e:#}")?;
        }
        Ok(())
    }
}

impl StdError for DevicesFailed {}

/// What to do about `e`: the advice of the outermost error of its chain that has some.
pub(crate) fn advice(e: &anyhow::Error) -> Option<String> {
    if e.downcast_ref::<NoGpuGiven>().is_some() {
        return Some(
            "to look up without a GPU, pass --gpu with the GPU's name as the database records it"
                .into(),
        );
    }
    if let Some(DevicesFailed(errors)) = e.downcast_ref::<DevicesFailed>() {
        let mut hints: Vec<String> = Vec::new();
        for h in errors.iter().filter_map(advice) {
            if !hints.contains(&h) {
                hints.push(h);
            }
        }
        return (!hints.is_empty()).then(|| hints.join("; "));
    }
    e.chain().find_map(hint)
}

/// The advice for one error of a chain, by its type.
fn hint(e: &(dyn StdError + 'static)) -> Option<String> {
    if let Some(e) = e.downcast_ref::<SuiteError>() {
        suite(e)
    } else if let Some(e) = e.downcast_ref::<ShardError>() {
        Some(shard(e))
    } else if let Some(e) = e.downcast_ref::<TuneError>() {
        tune(e)
    } else if let Some(e) = e.downcast_ref::<SessionError>() {
        session(e)
    } else if let Some(e) = e.downcast_ref::<JournalError>() {
        journal(e)
    } else if let Some(e) = e.downcast_ref::<RunError>() {
        run(e)
    } else if let Some(e) = e.downcast_ref::<DeviceError>() {
        device(e)
    } else if let Some(e) = e.downcast_ref::<CrossError>() {
        cross(e)
    } else if let Some(LooError::NoCoverage { op, .. }) = e.downcast_ref::<LooError>() {
        Some(format!(
            "run `autotune cover --op {op}` (with --layout, --beta, --alpha, --padded, --batch for another form) on that GPU"
        ))
    } else if let Some(e) = e.downcast_ref::<CompareError>() {
        compare(e)
    } else if let Some(e) = e.downcast_ref::<SimulateError>() {
        simulate(e)
    } else if let Some(e) = e.downcast_ref::<VerifyError>() {
        match e {
            VerifyError::Run { source, .. } => run(source),
            VerifyError::PtxTooNew { .. } => {
                Some("pass --ptx-arch compute_75 (the oldest NVRTC 13 compiles for)".into())
            }
            VerifyError::Compile(_) | VerifyError::NoEntries { .. } | VerifyError::Space { .. } => {
                None
            }
        }
    } else {
        None
    }
}

fn suite(e: &SuiteError) -> Option<String> {
    match e {
        SuiteError::Io { .. } => {
            Some("check the path, e.g. --suite configs/suites/gemm.toml".into())
        }
        SuiteError::IsDirectory { .. } => {
            Some("pass --suite with a suite file such as configs/suites/gemm.toml".into())
        }
        _ => None,
    }
}

fn shard(e: &ShardError) -> String {
    match e {
        ShardError::Syntax { .. } => {
            "give --shard INDEX/COUNT, e.g. --shard 0/4 for the first of 4 shards".into()
        }
        ShardError::Slurm { .. } => "pass --shard i/N explicitly".into(),
    }
}

fn session(e: &SessionError) -> Option<String> {
    match e {
        SessionError::Device(e) => device(e),
        SessionError::Run(e) => run(e),
        SessionError::Tune(e) => tune(e),
        SessionError::Interrupted { .. } => {
            Some("run the same command with --resume to finish it".into())
        }
        _ => None,
    }
}

fn tune(e: &TuneError) -> Option<String> {
    match e {
        TuneError::Run(e) => run(e),
        TuneError::Journal(e) => journal(e),
        _ => None,
    }
}

fn journal(e: &JournalError) -> Option<String> {
    match e {
        JournalError::Mismatch { what, theirs, .. } => Some(match *what {
            "seed" => format!("resume with --seed {theirs}, or run without --resume to start afresh"),
            "timing settings" => "resume with the timing settings of that run (--quick or not), or run without --resume to start afresh".into(),
            _ => "run without --resume to start afresh".into(),
        }),
        _ => None,
    }
}

fn run(e: &RunError) -> Option<String> {
    match e {
        RunError::Device(e) => device(e),
        RunError::TooLarge { .. } => Some("use a smaller shape or another --device".into()),
        RunError::ContextLost { .. } => Some(
            "report the config; a tuning run without --in-process runs each candidate in a worker process, which records such a kernel as failed and goes on".into(),
        ),
        _ => None,
    }
}

fn device(e: &DeviceError) -> Option<String> {
    match e {
        DeviceError::NoDriver => {
            Some("to compile without a GPU, use --dry-run --arch sm_XY".into())
        }
        DeviceError::NoDevice { count, .. } if *count <= 0 => {
            Some("check nvidia-smi, or use --dry-run --arch sm_XY to compile without a GPU".into())
        }
        DeviceError::NoDevice { count, .. } => {
            Some(format!("pick one with --device (0 to {})", count - 1))
        }
        DeviceError::Driver { .. } => None,
    }
}

fn cross(e: &CrossError) -> Option<String> {
    match e {
        CrossError::Run(e) => run(e),
        CrossError::Io { .. } => {
            Some("check the path, or pass --portability with another file".into())
        }
        CrossError::Invalid { .. } => {
            Some("fix or move it, or pass --portability with another file".into())
        }
        _ => None,
    }
}

fn compare(e: &CompareError) -> Option<String> {
    match e {
        CompareError::Empty { db } => Some(format!(
            "tune first (e.g. `autotune --suite configs/suites/gemm.toml --db {db}`) or pass --db with another file"
        )),
        CompareError::NoEntries { op, db, .. } => Some(format!(
            "tune them first (autotune --suite configs/suites/{op}.toml --db {db}) or pick other --gpus"
        )),
        _ => None,
    }
}

fn simulate(e: &SimulateError) -> Option<String> {
    match e {
        SimulateError::Journal(e) => journal(e),
        SimulateError::Empty { .. } => Some(
            "replay the journal of a run that finished (autotune --shape ... --journal-dir DIR without --budget)".into(),
        ),
        _ => None,
    }
}

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
            let advice = db_advice(&error, arg);
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
fn db_advice(e: &DbError, arg: DbArg) -> String {
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

    fn advice_of(e: impl StdError + Send + Sync + 'static) -> String {
        advice(&anyhow::Error::new(e)).expect("advice")
    }

    #[test]
    fn device_advice_depends_on_the_count() {
        let none = advice_of(DeviceError::NoDevice {
            ordinal: 0,
            count: 0,
        });
        assert!(
            none.contains("nvidia-smi") && none.contains("--dry-run --arch"),
            "{none}"
        );
        let two = advice_of(DeviceError::NoDevice {
            ordinal: 5,
            count: 2,
        });
        assert_eq!(two, "pick one with --device (0 to 1)");
        assert!(advice_of(DeviceError::NoDriver).contains("--dry-run --arch sm_XY"));
    }

    #[test]
    fn wrapped_errors_get_the_advice_of_what_they_wrap() {
        let lost = || RunError::ContextLost {
            kernel: "k".into(),
            reason: "illegal address".into(),
        };
        assert!(advice_of(TuneError::Run(lost())).contains("--in-process"));
        assert!(advice_of(CrossError::Run(lost())).contains("--in-process"));
        let big = RunError::TooLarge {
            shape: "65536x65536x65536".into(),
            need_mib: 100,
            ordinal: 0,
            free_mib: 10,
        };
        assert!(advice_of(TuneError::Run(big)).contains("--device"));
        let e = anyhow::Error::new(TuneError::Journal(JournalError::Mismatch {
            path: PathBuf::from("j.jsonl"),
            what: "seed",
            theirs: "7".into(),
            ours: "8".into(),
        }))
        .context("tuning gemm 64x64x64");
        assert_eq!(
            advice(&e).unwrap(),
            "resume with --seed 7, or run without --resume to start afresh"
        );
        let e = anyhow::Error::new(DeviceError::NoDriver).context(NoGpuGiven);
        assert!(advice(&e).unwrap().contains("--gpu"));
    }

    #[test]
    fn several_devices_share_one_hint_line() {
        let e = anyhow::Error::new(DevicesFailed(vec![
            anyhow::Error::new(DeviceError::NoDevice {
                ordinal: 3,
                count: 2,
            }),
            anyhow::Error::new(DeviceError::NoDevice {
                ordinal: 4,
                count: 2,
            }),
            anyhow::anyhow!("no advice here"),
        ]));
        assert_eq!(advice(&e).unwrap(), "pick one with --device (0 to 1)");
        assert!(e
            .to_string()
            .starts_with("3 devices failed:\n  no CUDA device 3"));
    }

    #[test]
    fn database_errors_get_their_advice_inline_not_as_a_hint() {
        let e = DbError::NotFound {
            path: PathBuf::from("typo.toml"),
        };
        // The library says what is wrong and names no flag ...
        assert!(!e.to_string().contains("--db"), "{e}");
        // ... `advise` adds the command's own words to the error line, and no hint repeats it.
        let advised = advise(anyhow::Error::new(e), DbArg::Db);
        assert!(advised.to_string().contains("pass --db"), "{advised}");
        assert_eq!(advice(&advised), None);
    }

    #[test]
    fn errors_without_advice_get_none() {
        assert_eq!(advice(&anyhow::anyhow!("plain")), None);
        let e = CompareError::UnknownGpu {
            query: "a100".into(),
            db: "db.toml".into(),
            known: "'NVIDIA H200'".into(),
        };
        assert_eq!(advice(&anyhow::Error::new(e)), None);
    }
}

#[cfg(test)]
mod db_tests {
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
                "database r/t.toml has no top-level `schema_version`, so it does not look like a tuning database written by autotune. If it is one, add `schema_version = 6` as its first line; otherwise pass --db to use another file",
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
