//! Saving a coverage run to the database: every [`CHECKPOINT_EVERY`] while it measures, so a
//! run cut short (a time limit, a lost machine) keeps what it measured and [`super::extend`]
//! measures the rest, and once at its end ([`save`]).

use super::CoverProgress;
use crate::db::{Coverage, Database, DbError, GpuRecord};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How often a coverage run saves the points measured so far.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(20);

/// A coverage run's progress: passes its news on to `note`, and saves its record with the
/// GPU's to the database at most every [`CHECKPOINT_EVERY`] (never when `db` is `None`).
pub struct Checkpoints<'a> {
    db: Option<&'a Path>,
    gpu: &'a GpuRecord,
    every: Duration,
    last: Mutex<Instant>,
    note: &'a (dyn Fn(&str) + Sync),
}

impl<'a> Checkpoints<'a> {
    /// Checkpoints to `db` (`None`: the run is not saved) of the records of `gpu`, the first
    /// [`CHECKPOINT_EVERY`] after now; every line of news goes to `note`.
    pub fn new(
        db: Option<&'a Path>,
        gpu: &'a GpuRecord,
        note: &'a (dyn Fn(&str) + Sync),
    ) -> Checkpoints<'a> {
        Checkpoints::every(db, gpu, CHECKPOINT_EVERY, note)
    }

    /// [`Checkpoints::new`] saving at most every `every` (tests save at once with zero).
    pub fn every(
        db: Option<&'a Path>,
        gpu: &'a GpuRecord,
        every: Duration,
        note: &'a (dyn Fn(&str) + Sync),
    ) -> Checkpoints<'a> {
        Checkpoints {
            db,
            gpu,
            every,
            last: Mutex::new(Instant::now()),
            note,
        }
    }
}

impl CoverProgress for Checkpoints<'_> {
    fn note(&self, line: &str) {
        (self.note)(line)
    }

    fn checkpoint(&self, partial: &Coverage) {
        let Some(db) = self.db else {
            return;
        };
        // A poisoned lock only means another thread panicked mid-checkpoint: the time is
        // still good.
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if last.elapsed() < self.every {
            return;
        }
        *last = Instant::now();
        match store(db, self.gpu.clone(), partial.clone()) {
            Ok(_) => (self.note)(&format!(
                "cover: {} points saved to {} (a run cut short goes on with --extend)",
                partial.points.len(),
                db.display()
            )),
            // The run goes on; the final save reports the error if it persists.
            Err(e) => (self.note)(&format!(
                "cover: could not save the points so far: {}",
                chain(&e)
            )),
        }
    }
}

/// `e` and its causes on one line, `outer: inner`, each cause once.
fn chain(e: &dyn std::error::Error) -> String {
    let mut line = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = s.source();
    }
    line
}

/// The GPU's record and its coverage upserted into the database file `db`, under its lock.
fn store(db: &Path, gpu: GpuRecord, cov: Coverage) -> Result<Database, DbError> {
    Database::update_file(db, |d| {
        d.upsert_gpu(gpu);
        d.upsert_coverage(cov);
        Ok(())
    })
}

/// The database `db` with the GPU's record and its new coverage (replacing the GPU's of the
/// op and form): written to the file when `write`, else only in memory.
pub fn save(db: &Path, write: bool, gpu: GpuRecord, cov: Coverage) -> Result<Database, DbError> {
    if write {
        return store(db, gpu, cov);
    }
    let mut d = Database::load(db)?;
    d.upsert_gpu(gpu);
    d.upsert_coverage(cov);
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A coverage record and its GPU's from the shipped database.
    fn shipped() -> (GpuRecord, Coverage) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("results/tuning.toml");
        let db = Database::load_existing(&path).unwrap();
        let cov = db.coverage[0].clone();
        (db.gpu(&cov.gpu).unwrap().clone(), cov)
    }

    #[test]
    fn checkpoints_save_when_due_and_never_without_a_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        let (gpu, cov) = shipped();
        let lines = Mutex::new(Vec::new());
        let note = |l: &str| lines.lock().unwrap().push(l.to_string());
        // Not due yet: nothing written.
        Checkpoints::new(Some(&path), &gpu, &note).checkpoint(&cov);
        assert!(!path.exists());
        // No database: nothing written, however due.
        Checkpoints::every(None, &gpu, Duration::ZERO, &note).checkpoint(&cov);
        assert!(!path.exists() && lines.lock().unwrap().is_empty());
        // Due: the coverage and the GPU's record are saved, and said so.
        let due = Checkpoints::every(Some(&path), &gpu, Duration::ZERO, &note);
        due.note("news");
        due.checkpoint(&cov);
        let saved = Database::load(&path).unwrap();
        assert_eq!(saved.coverage(&cov.gpu, cov.op, &cov.form), Some(&cov));
        assert!(saved.gpu(&cov.gpu).is_some());
        let lines = lines.lock().unwrap();
        assert_eq!(lines[0], "news");
        assert!(lines[1].starts_with(&format!("cover: {} points saved to ", cov.points.len())));
    }

    #[test]
    fn save_writes_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        let (gpu, cov) = shipped();
        let db = save(&path, false, gpu.clone(), cov.clone()).unwrap();
        assert!(db.coverage(&cov.gpu, cov.op, &cov.form).is_some() && !path.exists());
        save(&path, true, gpu, cov.clone()).unwrap();
        let back = Database::load(&path).unwrap();
        assert_eq!(back.coverage(&cov.gpu, cov.op, &cov.form), Some(&cov));
    }
}
