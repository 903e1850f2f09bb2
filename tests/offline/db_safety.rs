//! The tuning database under concurrent writers and under `kill -9`, with real processes.
//!
//! The child processes are this test binary run again (`std::env::current_exe()`) with
//! `--exact db_safety::child_process` and [`ROLE`] set: [`child_process`] does nothing when run
//! as a test.
//! The concurrent merges run the built `autotune` binary. Needs no GPU.

use crate::common;
use autotune::db::{Database, Entry};
use autotune::problem::{Op, Shape};
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Selects what [`child_process`] does: `writer` or `rewriter`.
const ROLE: &str = "AUTOTUNE_DB_SAFETY_ROLE";
/// The database the child writes.
const DB: &str = "AUTOTUNE_DB_SAFETY_DB";
/// `writer`: the GPU name its entries are for.
const GPU: &str = "AUTOTUNE_DB_SAFETY_GPU";
/// `writer`: how many entries it adds.
const COUNT: &str = "AUTOTUNE_DB_SAFETY_COUNT";
/// `writer`: a file whose appearance starts the writers together.
const GO: &str = "AUTOTUNE_DB_SAFETY_GO";
/// What the `rewriter` prints after its first save (the harness's own output shares the line).
const READY: &str = "AUTOTUNE_DB_SAFETY_READY";

/// A database of `entries` gemm entries for `gpu`, shapes 1x64x64 to `entries`x64x64.
fn database(gpu: &str, entries: u64, median_ms: f64) -> Database {
    let mut db = Database::new();
    for m in 1..=entries {
        db.entries.push(Entry {
            median_ms,
            min_ms: median_ms,
            ..common::entry(gpu, Op::Gemm, &format!("{m}x64x64"))
        });
    }
    db
}

/// The two versions the `rewriter` alternates between: they differ in values and in length.
fn versions() -> (Database, Database) {
    (
        database("NVIDIA H100 80GB HBM3", 250, 0.25),
        database("NVIDIA H100 80GB HBM3", 280, 0.5),
    )
}

/// Not a test on its own: the body of the child processes the tests below start. Run by the
/// test harness (without [`ROLE`]) it returns at once.
#[test]
fn child_process() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let path = PathBuf::from(std::env::var(DB).expect("the parent sets the database path"));
    match role.as_str() {
        // Adds COUNT entries for GPU, one read-modify-write each.
        "writer" => {
            let gpu = std::env::var(GPU).expect("the parent sets the GPU");
            let count: u64 = std::env::var(COUNT)
                .expect("the parent sets the count")
                .parse()
                .expect("the count is a number");
            let go = PathBuf::from(std::env::var(GO).expect("the parent sets the start file"));
            let deadline = Instant::now() + Duration::from_secs(60);
            while !go.exists() {
                assert!(Instant::now() < deadline, "the start file never appeared");
                std::thread::sleep(Duration::from_millis(1));
            }
            for m in 1..=count {
                let entry = database(&gpu, m, 0.1).entries.pop().expect("one entry");
                Database::update_file(&path, |db| {
                    db.upsert(entry);
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("update {m} of {gpu} failed: {e}"));
            }
        }
        // Saves the two versions in turn until killed; prints READY after the first save.
        "rewriter" => {
            let (a, b) = versions();
            let mut first = true;
            loop {
                a.save(&path).expect("saving version A");
                if first {
                    println!("{READY}");
                    first = false;
                }
                b.save(&path).expect("saving version B");
            }
        }
        other => panic!("unknown child role {other:?}"),
    }
}

/// Starts this test binary as a child running [`child_process`] with `env`.
fn spawn_child(env: &[(&str, &str)], stdout: Stdio) -> Child {
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut cmd = Command::new(exe);
    cmd.args([
        "db_safety::child_process",
        "--exact",
        "--nocapture",
        "--test-threads=1",
    ])
    .stdout(stdout)
    .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("could not start the child process")
}

/// Names of the files in `dir`, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(dir)
        .expect("listing the directory")
        .map(|e| {
            e.expect("a directory entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// Several processes each add their own entries to one database, one `update_file` at a time,
/// all at once: every entry of every process is there at the end (with no lock, the
/// read-modify-writes interleave and entries get lost), the entry that was there before too,
/// and nothing but the database is left in its directory.
#[test]
fn concurrent_writers_lose_no_entry() {
    const WRITERS: usize = 3;
    const PER_WRITER: u64 = 20;
    let dir = tempfile::tempdir().unwrap();
    let db_dir = dir.path().join("results");
    let path = db_dir.join("tuning.toml");
    let go = dir.path().join("go");
    let before = database("Existing GPU", 1, 1.0);
    before.save(&path).unwrap();

    let gpus: Vec<String> = (0..WRITERS).map(|w| format!("Writer GPU {w}")).collect();
    let count = PER_WRITER.to_string();
    let children: Vec<Child> = gpus
        .iter()
        .map(|gpu| {
            spawn_child(
                &[
                    (ROLE, "writer"),
                    (DB, path.to_str().unwrap()),
                    (GPU, gpu),
                    (COUNT, &count),
                    (GO, go.to_str().unwrap()),
                ],
                Stdio::null(),
            )
        })
        .collect();
    fs::write(&go, "").unwrap();
    for (gpu, child) in gpus.iter().zip(children) {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "writer for {gpu} failed ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let db = Database::load(&path).unwrap();
    let mut missing = Vec::new();
    for gpu in &gpus {
        for m in 1..=PER_WRITER {
            let shape = Shape::new(Op::Gemm, m, 64, 64).unwrap();
            if db.get(gpu, Op::Gemm, shape).is_none() {
                missing.push(format!("{gpu} {m}x64x64"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} of {} entries were lost: {missing:?}",
        missing.len(),
        WRITERS as u64 * PER_WRITER
    );
    assert_eq!(db.entries.len(), WRITERS * PER_WRITER as usize + 1);
    assert_eq!(
        db.get(
            "Existing GPU",
            Op::Gemm,
            Shape::new(Op::Gemm, 1, 64, 64).unwrap()
        ),
        before.entries.first()
    );
    assert_eq!(
        listing(&db_dir),
        ["tuning.toml"],
        "files left next to the database"
    );
}

/// The temporary files of writes of `tuning.toml` in `dir`.
fn temp_files(dir: &Path) -> Vec<String> {
    listing(dir)
        .into_iter()
        .filter(|n| n.starts_with(".tuning.toml.tmp."))
        .collect()
}

/// A tiny xorshift generator: random kill times without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// A child saves two versions of a large database in turn; it is `kill -9`ed many times, at
/// random moments and (every other time) just after a temporary file appears, i.e. during a
/// write. After every kill the file is byte for byte one of the two versions, at most one
/// temporary file (that of the killed write) is left, and the lock file at most; the next save
/// removes both.
///
/// How stale temporary files are handled: a write killed after creating its temporary file
/// (`.tuning.toml.tmp.*`) leaves it; readers ignore it, and the next save or update of the
/// database removes it while holding the write lock.
#[test]
fn kill_9_never_leaves_a_torn_database() {
    const KILLS: usize = 20;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tuning.toml");
    let (a, b) = versions();
    let (text_a, text_b) = (a.to_toml_string().unwrap(), b.to_toml_string().unwrap());
    assert_ne!(text_a, text_b);

    // How long one save takes here; kills land anywhere in the next two saves.
    let scratch = tempfile::tempdir().unwrap();
    let started = Instant::now();
    a.save(&scratch.path().join("probe.toml")).unwrap();
    let save_us = (started.elapsed().as_micros() as u64).max(1000);
    b.save(&path).unwrap();

    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1;
    let mut rng = Rng(seed);
    let (mut mid_write, mut lock_left) = (0, 0);
    for round in 1..=KILLS {
        let mut child = spawn_child(
            &[(ROLE, "rewriter"), (DB, path.to_str().unwrap())],
            Stdio::piped(),
        );
        // Wait until it is rewriting (or has died, or hangs).
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let ready = out.lines().any(|l| l.is_ok_and(|l| l.contains(READY)));
            let _ = tx.send(ready);
        });
        let ready = rx.recv_timeout(Duration::from_secs(120)).unwrap_or(false);
        let pause = rng.below(2 * save_us);
        let aimed = round % 2 == 0;
        if ready && aimed {
            // Aim at the write itself: wait for a temporary file, then kill within 200 us.
            let until = Instant::now() + Duration::from_secs(5);
            while Instant::now() < until && temp_files(dir.path()).is_empty() {}
            std::thread::sleep(Duration::from_micros(pause % 200));
        } else if ready {
            std::thread::sleep(Duration::from_micros(pause));
        }
        child.kill().unwrap();
        let status = child.wait().unwrap();
        let ctx = format!("round {round}, aimed {aimed}, pause {pause} us, seed {seed}");
        if !ready {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            panic!("the rewriter did not finish its first save ({status}), {ctx}:\n{err}");
        }

        let bytes = fs::read(&path).unwrap();
        assert!(
            bytes == text_a.as_bytes() || bytes == text_b.as_bytes(),
            "torn database after a kill: {} bytes, versions have {} and {}; {ctx}",
            bytes.len(),
            text_a.len(),
            text_b.len()
        );
        let db = Database::load(&path).unwrap();
        assert!(db == a || db == b, "{ctx}");

        let names = listing(dir.path());
        let temps = temp_files(dir.path());
        let others: Vec<_> = names
            .iter()
            .filter(|n| {
                !n.starts_with(".tuning.toml.tmp.")
                    && n.as_str() != "tuning.toml"
                    && n.as_str() != "tuning.toml.lock"
            })
            .collect();
        assert!(
            temps.len() <= 1,
            "stale temporary files pile up: {names:?}; {ctx}"
        );
        assert!(others.is_empty(), "unexpected files: {names:?}; {ctx}");
        mid_write += temps.len();
        lock_left += usize::from(names.iter().any(|n| n == "tuning.toml.lock"));
    }
    eprintln!(
        "{KILLS} kills (seed {seed}, one save ~{save_us} us): {mid_write} left a temporary file, {lock_left} the lock file"
    );

    // The next save cleans up after the killed writes.
    a.save(&path).unwrap();
    assert_eq!(listing(dir.path()), ["tuning.toml"]);
    assert_eq!(fs::read_to_string(&path).unwrap(), text_a);
}

/// Starts `autotune merge OUT INPUT -o OUT`: a merge whose output is also one of its inputs.
fn spawn_merge_into(out: &Path, input: &Path) -> Child {
    Command::new(env!("CARGO_BIN_EXE_autotune"))
        .arg("merge")
        .arg(out)
        .arg(input)
        .arg("-o")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("could not start autotune merge")
}

/// Waits for every merge and checks that each succeeded.
fn wait_for_merges(children: Vec<Child>, ctx: &str) {
    for (i, child) in children.into_iter().enumerate() {
        let out = child
            .wait_with_output()
            .expect("waiting for autotune merge");
        assert!(
            out.status.success(),
            "merge {i} failed ({}), {ctx}:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The GPU names of the entries in the database at `path`, sorted.
fn entry_gpus(path: &Path) -> Vec<String> {
    let db = Database::load(path).expect("the merged database loads");
    let mut gpus: Vec<String> = db.entries.iter().map(|e| e.gpu.clone()).collect();
    gpus.sort();
    gpus
}

/// 32 databases with one entry each (a GPU of its own); 31 `autotune merge out.toml in_I.toml
/// -o out.toml` run at once, each naming the output as an input: every entry is in out.toml at
/// the end, and no lock or temporary file is left. Reading the inputs outside the output's write
/// lock, each merge wrote back the output as it was before the others' writes (a user saw 2 to
/// 4 of the 32 entries survive).
#[test]
fn concurrent_merges_into_one_of_their_inputs_keep_every_entry() {
    const MERGES: usize = 31;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.toml");
    database("Merge GPU 00", 1, 0.1).save(&out).unwrap();
    let inputs: Vec<PathBuf> = (1..=MERGES)
        .map(|i| {
            let path = dir.path().join(format!("in_{i:02}.toml"));
            database(&format!("Merge GPU {i:02}"), 1, 0.1)
                .save(&path)
                .unwrap();
            path
        })
        .collect();

    let children: Vec<Child> = inputs.iter().map(|p| spawn_merge_into(&out, p)).collect();
    wait_for_merges(children, &format!("{MERGES} merges at once"));

    let want: Vec<String> = (0..=MERGES).map(|i| format!("Merge GPU {i:02}")).collect();
    let got = entry_gpus(&out);
    let lost: Vec<&String> = want.iter().filter(|g| !got.contains(g)).collect();
    assert!(
        lost.is_empty(),
        "{} of {} entries were lost by {MERGES} concurrent merges: {lost:?}",
        lost.len(),
        want.len()
    );
    assert_eq!(got, want);
    let mut files = vec!["out.toml".to_string()];
    files.extend((1..=MERGES).map(|i| format!("in_{i:02}.toml")));
    files.sort();
    assert_eq!(listing(dir.path()), files, "files left next to the output");
}

/// Two merges into one of their inputs at once, ten times over: both inputs' entries and the
/// output's own are always there.
#[test]
fn two_concurrent_merges_into_one_of_their_inputs_keep_every_entry() {
    const ROUNDS: usize = 10;
    let mut lost_rounds = Vec::new();
    for round in 1..=ROUNDS {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.toml");
        let (a, b) = (dir.path().join("a.toml"), dir.path().join("b.toml"));
        database("GPU out", 1, 0.1).save(&out).unwrap();
        database("GPU a", 1, 0.1).save(&a).unwrap();
        database("GPU b", 1, 0.1).save(&b).unwrap();
        let children = vec![spawn_merge_into(&out, &a), spawn_merge_into(&out, &b)];
        wait_for_merges(children, &format!("round {round}"));
        let got = entry_gpus(&out);
        if got != ["GPU a", "GPU b", "GPU out"] {
            lost_rounds.push(format!("round {round}: {got:?}"));
        }
        assert_eq!(listing(dir.path()), ["a.toml", "b.toml", "out.toml"]);
    }
    assert!(
        lost_rounds.is_empty(),
        "{} of {ROUNDS} rounds of two concurrent merges lost an entry: {lost_rounds:?}",
        lost_rounds.len()
    );
}
