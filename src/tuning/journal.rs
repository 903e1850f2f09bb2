//! The run journal: every finished candidate of a tuning run, appended as one JSON line the
//! moment it completes, so an interrupted run (Ctrl-C, `kill -9`, a lost machine) resumes
//! without re-running what was done, and a recorded full-space run can be replayed offline.
//!
//! Layout: a [`Header`] line, then [`Record::Baseline`] and [`Record::Candidate`] lines in the
//! order they finished, and a [`Record::End`] line when the run completed. A last line cut
//! short by a crash is ignored when reading. Pure: no GPU.

use crate::measure::outcome::{Failure, Measured};
use crate::measure::timing::{Stats, TimingSettings};
use crate::problem::{Op, Shape};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// The journal layout version this build writes and reads.
pub const JOURNAL_VERSION: u32 = 1;

/// What a journal was recorded for: a resume must match it exactly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Layout version ([`JOURNAL_VERSION`]).
    pub journal: u32,
    /// The GPU name.
    pub gpu: String,
    /// The op.
    pub op: Op,
    /// The shape.
    pub shape: Shape,
    /// Seed of the inputs.
    pub seed: u64,
    /// How candidates were timed.
    pub timing: TimingSettings,
    /// The autotune version that started the run.
    pub tool_version: String,
    /// The GPU's arch (`sm_90`), so an offline replay ([`crate::tuning::replay`]) can rebuild the
    /// launch geometry; absent in journals of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// The GPU's SM count, for the same purpose; absent in journals of older versions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sms: Option<u32>,
}

/// One line after the header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Record {
    /// cuBLAS, timed the same way as the candidates.
    Baseline {
        /// Its time.
        stats: Stats,
        /// Its error against the reference.
        error: f64,
    },
    /// One candidate, measured or failed.
    Candidate(CandidateRecord),
    /// The run finished (not interrupted).
    End {
        /// Whether the search was cut short by a budget or an interrupt.
        partial: bool,
    },
}

/// One finished candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateRecord {
    /// The family.
    pub family: String,
    /// The kernel name.
    pub kernel: String,
    /// Its parameters.
    pub params: BTreeMap<String, i64>,
    /// The family's checksum ([`Family::checksum`](crate::family::catalog::Family::checksum):
    /// its revision's) when it ran: records of a changed family are not reused.
    pub checksum: String,
    /// Measured, or why not.
    pub outcome: Result<Measured, Failure>,
}

/// Why a journal could not be used.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    /// Reading or writing failed.
    #[error("run journal {}: {action} failed: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// The file is not a journal (or is from a newer autotune).
    #[error("run journal {}: line {line} is not a journal record ({message}); delete the file to start afresh", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// What was wrong.
        message: String,
    },
    /// Resuming from a journal of another run.
    #[error("run journal {} belongs to another run ({what} differs: journal has {theirs}, this run has {ours})", path.display())]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// The field that differs.
        what: &'static str,
        /// The journal's value.
        theirs: String,
        /// This run's value.
        ours: String,
    },
}

/// A journal read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The header.
    pub header: Header,
    /// The baseline, if it was measured.
    pub baseline: Option<(Stats, f64)>,
    /// Every finished candidate, in order.
    pub candidates: Vec<CandidateRecord>,
    /// `Some(partial)` when the run reached its end.
    pub ended: Option<bool>,
    /// Lines dropped because a crash cut them short (only ever the last one).
    pub torn_lines: usize,
}

impl Recorded {
    /// Reads a journal. A torn last line is counted, not an error; any other bad line is.
    pub fn load(path: &Path) -> Result<Recorded, JournalError> {
        let io_err = |action| {
            let path = path.to_path_buf();
            move |source| JournalError::Io {
                path,
                action,
                source,
            }
        };
        let file = File::open(path).map_err(io_err("opening"))?;
        let lines: Vec<String> = BufReader::new(file)
            .lines()
            .collect::<Result<_, _>>()
            .map_err(io_err("reading"))?;
        let corrupt = |line: usize, message: String| JournalError::Corrupt {
            path: path.to_path_buf(),
            line,
            message,
        };
        let first = lines
            .first()
            .ok_or_else(|| corrupt(1, "the file is empty".into()))?;
        let header: Header = serde_json::from_str(first).map_err(|e| corrupt(1, e.to_string()))?;
        if header.journal > JOURNAL_VERSION {
            return Err(corrupt(
                1,
                format!(
                    "layout version {} is newer than this autotune's {JOURNAL_VERSION}",
                    header.journal
                ),
            ));
        }
        let mut out = Recorded {
            header,
            baseline: None,
            candidates: Vec::new(),
            ended: None,
            torn_lines: 0,
        };
        let last = lines.len().saturating_sub(1);
        for (i, line) in lines.iter().enumerate().skip(1) {
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<Record>(line) {
                Ok(Record::Baseline { stats, error }) => out.baseline = Some((stats, error)),
                Ok(Record::Candidate(c)) => out.candidates.push(c),
                Ok(Record::End { partial }) => out.ended = Some(partial),
                // A crash mid-append leaves at most the last line incomplete.
                Err(_) if i == last => out.torn_lines += 1,
                Err(e) => return Err(corrupt(i + 1, e.to_string())),
            }
        }
        Ok(out)
    }

    /// Checks that this journal was recorded for the run described by `ours`.
    pub fn check_matches(&self, path: &Path, ours: &Header) -> Result<(), JournalError> {
        let h = &self.header;
        let mismatch = |what, theirs: String, ours: String| {
            Err(JournalError::Mismatch {
                path: path.to_path_buf(),
                what,
                theirs,
                ours,
            })
        };
        if h.gpu != ours.gpu {
            return mismatch("GPU", h.gpu.clone(), ours.gpu.clone());
        }
        if h.op != ours.op || h.shape != ours.shape {
            return mismatch(
                "problem",
                format!("{} {}", h.op, h.shape.label(h.op)),
                format!("{} {}", ours.op, ours.shape.label(ours.op)),
            );
        }
        if h.seed != ours.seed {
            return mismatch("seed", h.seed.to_string(), ours.seed.to_string());
        }
        if h.timing != ours.timing {
            return mismatch(
                "timing settings",
                format!("{:?}", h.timing),
                format!("{:?}", ours.timing),
            );
        }
        Ok(())
    }
}

/// An open journal being appended to. Each record is written with one `write` call and
/// flushed, so a crash loses at most the record being written.
#[derive(Debug)]
pub struct Writer {
    path: PathBuf,
    file: File,
}

impl Writer {
    /// Starts a new journal at `path` (creating its directory), replacing any old one.
    pub fn create(path: &Path, header: &Header) -> Result<Writer, JournalError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(|source| JournalError::Io {
                path: dir.to_path_buf(),
                action: "creating the journal directory",
                source,
            })?;
        }
        let file = File::create(path).map_err(|source| JournalError::Io {
            path: path.to_path_buf(),
            action: "creating",
            source,
        })?;
        let mut w = Writer {
            path: path.to_path_buf(),
            file,
        };
        w.write_json(header)?;
        Ok(w)
    }

    /// Opens an existing journal to append to it (after [`Recorded::load`]). A torn last line
    /// is cut off first so the next record starts on a line of its own.
    pub fn append(path: &Path) -> Result<Writer, JournalError> {
        let io_err = |action| {
            let path = path.to_path_buf();
            move |source| JournalError::Io {
                path,
                action,
                source,
            }
        };
        let text = fs::read(path).map_err(io_err("reading"))?;
        let keep = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let file = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(io_err("opening"))?;
        file.set_len(keep as u64).map_err(io_err("truncating"))?;
        let mut file = file;
        io::Seek::seek(&mut file, io::SeekFrom::End(0)).map_err(io_err("seeking"))?;
        Ok(Writer {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Appends one record.
    pub fn record(&mut self, r: &Record) -> Result<(), JournalError> {
        self.write_json(r)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_json<T: Serialize>(&mut self, value: &T) -> Result<(), JournalError> {
        let mut line = serde_json::to_string(value).map_err(|e| JournalError::Io {
            path: self.path.clone(),
            action: "encoding a record",
            source: io::Error::other(e),
        })?;
        line.push('\n');
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|source| JournalError::Io {
                path: self.path.clone(),
                action: "appending",
                source,
            })
    }
}

/// Where the journal of `gpu`, `op`, `shape` lives under `dir`: one file per run, named so a
/// directory listing reads well (`NVIDIA_H200-gemm-2048x2048x2048.jsonl`).
pub fn path_for(dir: &Path, gpu: &str, op: Op, shape: Shape) -> PathBuf {
    let slug: String = gpu
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    // Form tags are `:`-separated; a file name takes `_` (Windows refuses `:`).
    let label = shape.label(op).replace(':', "_");
    dir.join(format!("{slug}-{}-{label}.jsonl", op.name()))
}

/// Where a run's journals go: `explicit` when given, else `journal/` next to the database it
/// saves to (`db`); none when it saves nothing (`save` false) and no directory is given.
pub fn dir_for(explicit: Option<&Path>, db: &Path, save: bool) -> Option<PathBuf> {
    match (explicit, save) {
        (Some(d), _) => Some(d.to_path_buf()),
        (None, false) => None,
        (None, true) => Some(
            db.parent()
                .map_or_else(|| PathBuf::from("journal"), |p| p.join("journal")),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journals_go_next_to_the_database_unless_told_otherwise() {
        let db = Path::new("results/tuning.toml");
        assert_eq!(
            dir_for(None, db, true),
            Some(PathBuf::from("results/journal"))
        );
        assert_eq!(dir_for(None, db, false), None);
        let mine = Path::new("/tmp/j");
        assert_eq!(dir_for(Some(mine), db, false), Some(mine.to_path_buf()));
    }
    use crate::measure::outcome::Stage;

    fn header() -> Header {
        Header {
            journal: JOURNAL_VERSION,
            gpu: "Test GPU".into(),
            op: Op::Gemm,
            shape: Shape::mnk(64, 32, 16),
            seed: 7,
            timing: TimingSettings::quick(),
            tool_version: "0.1.0".into(),
            arch: Some("sm_90".into()),
            sms: Some(132),
        }
    }

    fn stats(ms: f64) -> Stats {
        Stats::from_samples(&[ms, ms, ms]).unwrap()
    }

    fn cand(i: i64, outcome: Result<Measured, Failure>) -> CandidateRecord {
        CandidateRecord {
            family: "fam".into(),
            kernel: format!("fam_X{i}"),
            params: BTreeMap::from([("X".to_string(), i)]),
            checksum: "abc".into(),
            outcome,
        }
    }

    fn measured(ms: f64) -> Result<Measured, Failure> {
        Ok(Measured {
            stats: stats(ms),
            max_rel_error: 1e-7,
            mean_rel_error: None,
            registers: 32,
            local_bytes: 0,
        })
    }

    #[test]
    fn round_trip_and_torn_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_for(dir.path(), "Test GPU", Op::Gemm, Shape::mnk(64, 32, 16));
        assert!(path.ends_with("Test_GPU-gemm-64x32x16.jsonl"));
        let mut w = Writer::create(&path, &header()).unwrap();
        w.record(&Record::Baseline {
            stats: stats(1.0),
            error: 0.0,
        })
        .unwrap();
        w.record(&Record::Candidate(cand(1, measured(2.0))))
            .unwrap();
        let fail = Failure {
            stage: Stage::Timeout,
            reason: "timed out".into(),
        };
        w.record(&Record::Candidate(cand(2, Err(fail.clone()))))
            .unwrap();
        drop(w);
        // A crash in the middle of the next append.
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(br#"{"kind":"candidate","fam"#).unwrap();
        drop(f);

        let r = Recorded::load(&path).unwrap();
        assert_eq!(r.header, header());
        assert_eq!(r.baseline.unwrap().0, stats(1.0));
        assert_eq!(r.candidates.len(), 2);
        assert_eq!(r.candidates[1].outcome, Err(fail));
        assert_eq!(r.torn_lines, 1);
        assert_eq!(r.ended, None);

        // Appending cuts the torn line off first.
        let mut w = Writer::append(&path).unwrap();
        w.record(&Record::Candidate(cand(3, measured(1.5))))
            .unwrap();
        w.record(&Record::End { partial: false }).unwrap();
        let r = Recorded::load(&path).unwrap();
        assert_eq!(r.torn_lines, 0);
        assert_eq!(r.candidates.len(), 3);
        assert_eq!(r.candidates[2].params["X"], 3);
        assert_eq!(r.ended, Some(false));
    }

    #[test]
    fn a_header_without_arch_and_sms_still_loads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.jsonl");
        let mut old = serde_json::to_value(header()).unwrap();
        let obj = old.as_object_mut().unwrap();
        obj.remove("arch");
        obj.remove("sms");
        fs::write(&path, format!("{old}\n")).unwrap();
        let r = Recorded::load(&path).unwrap();
        assert_eq!((r.header.arch, r.header.sms), (None, None));
        assert_eq!(r.header.gpu, "Test GPU");
    }

    #[test]
    fn a_bad_line_in_the_middle_is_an_error_with_its_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("j.jsonl");
        let mut w = Writer::create(&path, &header()).unwrap();
        w.record(&Record::End { partial: true }).unwrap();
        drop(w);
        let mut text = fs::read_to_string(&path).unwrap();
        text.insert_str(text.find('\n').unwrap() + 1, "garbage\n");
        fs::write(&path, text).unwrap();
        match Recorded::load(&path) {
            Err(JournalError::Corrupt { line, .. }) => assert_eq!(line, 2),
            other => panic!("{other:?}"),
        }
        fs::write(&path, "").unwrap();
        assert!(matches!(
            Recorded::load(&path),
            Err(JournalError::Corrupt { line: 1, .. })
        ));
    }

    #[test]
    fn resume_checks_the_run_matches() {
        let r = Recorded {
            header: header(),
            baseline: None,
            candidates: vec![],
            ended: None,
            torn_lines: 0,
        };
        let p = Path::new("j.jsonl");
        r.check_matches(p, &header()).unwrap();
        let mut other = header();
        other.seed = 8;
        let e = r.check_matches(p, &other).unwrap_err().to_string();
        // The data only: what to do about it is the caller's (the CLI's hint names --resume).
        assert!(
            e.contains("seed differs") && e.contains("journal has 7") && !e.contains("--"),
            "{e}"
        );
        let mut other = header();
        other.shape = Shape::mnk(64, 32, 17);
        assert!(r.check_matches(p, &other).is_err());
        let mut other = header();
        other.timing = TimingSettings::default();
        assert!(r.check_matches(p, &other).is_err());
    }
}
