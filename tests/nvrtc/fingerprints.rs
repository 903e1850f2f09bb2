//! Fingerprints (docs/fingerprints.md): every built-in family's probes, compiled to PTX for
//! compute_90 with NVRTC 13 and compute_61 with NVRTC 12 (`autotune fingerprint`), must match
//! the committed `configs/fingerprints/<family>.toml` of the family's revision, so kernel code
//! cannot change without a revision bump.
//!
//! Each probe is compiled in a process of its own, several at a time; a probe whose PTX is
//! neither the committed one nor a recorded variant is compiled again, up to
//! [`fingerprint::CHECK_ATTEMPTS`] times in all, before the difference counts: NVRTC's PTX of
//! a large kernel varies from process to process with the address layout
//! ([`fingerprint::settle`]).
//!
//! With `AUTOTUNE_UPDATE_FINGERPRINTS=1` the test writes the files instead
//! ([`fingerprint::update`]): a new file for a family whose revision has none, new hashes at
//! the same revision when the compiler moved, and it deletes the files of families that no
//! longer exist, and adds newly seen variants to files it matched; every probe is compiled
//! [`fingerprint::UPDATE_ATTEMPTS`] times, its most frequent PTX recorded and the others as
//! variants. It still fails when a family's kernels changed without a bump.

use super::{both_nvrtcs, tail};
use autotune::family::fingerprint::{self, Fingerprint, Mismatch};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// One family of `autotune fingerprint`'s report.
#[derive(Clone, Deserialize)]
struct Fresh {
    family: String,
    revision: u32,
    content_checksum: String,
    fingerprint: Fingerprint,
    errors: Vec<String>,
}

/// `autotune fingerprint`'s report.
#[derive(Deserialize)]
struct Report {
    target: String,
    nvrtc: String,
    families: Vec<Fresh>,
}

/// The committed fingerprint files: family -> (path, parsed or the parse error).
fn committed(dir: &Path) -> BTreeMap<String, (PathBuf, Result<Fingerprint, String>)> {
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let path = e.path();
        let Some(stem) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".toml"))
        else {
            continue;
        };
        let parsed = std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| {
                Fingerprint::from_toml_str(&t, &path.display().to_string())
                    .map_err(|e| e.to_string())
            });
        out.insert(stem.to_string(), (path, parsed));
    }
    out
}

/// Runs `autotune fingerprint --arch target extra...` with the NVRTC in `lib_dir`, which must
/// be NVRTC `major` (unless `--list`), in attempt `round` (from 0) of the probes it compiles.
///
/// Each round's process gets an environment of another size (an unused variable, empty in
/// round 0): that moves its stack, and with it the odds of each PTX NVRTC makes of a large
/// kernel ([`fingerprint::settle`]), so the rounds see other address layouts than the
/// machine's environment alone would give.
fn fingerprint_run(
    target: &str,
    major: u32,
    lib_dir: &Path,
    extra: &[&str],
    round: usize,
) -> Result<Report, String> {
    let mut args = vec!["fingerprint", "--arch", target];
    args.extend_from_slice(extra);
    let pad = "x".repeat(round * 1237 % 4096);
    let lib = lib_dir.to_str().expect("a UTF-8 library directory");
    let env = [
        ("LD_LIBRARY_PATH", lib),
        ("AUTOTUNE_NVRTC", ""),
        ("AUTOTUNE_LAYOUT_PAD", pad.as_str()),
    ];
    let r = super::common::run_env(&args, &env);
    let what = format!(
        "autotune {} (LD_LIBRARY_PATH={})",
        args.join(" "),
        lib_dir.display()
    );
    if !r.success() {
        return Err(format!(
            "{what}: exit {:?}\nstderr:\n{}",
            r.code,
            tail(&r.stderr, 4000)
        ));
    }
    let report: Report =
        serde_json::from_str(&r.stdout).map_err(|e| format!("{what}: not its report ({e})"))?;
    if report.target != target {
        return Err(format!("{what}: report for {}", report.target));
    }
    if !extra.contains(&"--list") && !report.nvrtc.starts_with(&format!("{major}.")) {
        return Err(format!(
            "{what}: compiled with NVRTC {}, expected NVRTC {major}",
            report.nvrtc
        ));
    }
    Ok(report)
}

/// A target to compile for: `compute_XY`, the NVRTC major version and its lib directory.
type Target<'a> = (&'a str, u32, &'a Path);

/// One compilation: probe `probe` of `family` for `targets[target]`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Job {
    family: String,
    probe: usize,
    target: usize,
}

/// Runs every job in a process of its own, as many at a time as there are CPUs, as attempt
/// `round`; returns each job's family report (only its probe compiled), in the order of `jobs`.
fn run_jobs(targets: &[Target], jobs: &[Job], round: usize) -> Vec<Fresh> {
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Result<Fresh, String>)>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..workers.min(jobs.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(job) = jobs.get(i) else {
                    break;
                };
                let (target, major, dir) = targets[job.target];
                let probe = job.probe.to_string();
                let extra = ["--family", job.family.as_str(), "--probe", probe.as_str()];
                let r = fingerprint_run(target, major, dir, &extra, round).and_then(|report| {
                    report
                        .families
                        .into_iter()
                        .next()
                        .ok_or_else(|| format!("no family in the report of {job:?}"))
                });
                done.lock().expect("no worker panicked").push((i, r));
            });
        }
    });
    let mut done = done.into_inner().expect("no worker panicked");
    done.sort_by_key(|(i, _)| *i);
    done.into_iter()
        .map(|(_, r)| r.unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// Compiles `jobs` once each and adds the results as one more attempt of each family they
/// are of (`listed`: each family's probes, uncompiled).
fn attempt(
    targets: &[Target],
    jobs: &[Job],
    listed: &BTreeMap<String, Fresh>,
    attempts: &mut BTreeMap<String, Vec<Fresh>>,
) {
    let mut this: BTreeMap<String, Fresh> = BTreeMap::new();
    let round = jobs
        .iter()
        .filter_map(|j| attempts.get(&j.family))
        .map(Vec::len)
        .max()
        .unwrap_or(0);
    for (job, f) in jobs.iter().zip(run_jobs(targets, jobs, round)) {
        let Some(base) = listed.get(&job.family) else {
            continue;
        };
        let a = this
            .entry(job.family.clone())
            .or_insert_with(|| base.clone());
        a.fingerprint.absorb(&f.fingerprint);
        a.errors.extend(f.errors);
    }
    for (family, a) in this {
        attempts.entry(family).or_default().push(a);
    }
}

/// The jobs of `family`'s probes (listed in `f`) that `want` selects, for every target.
fn jobs_of(f: &Fresh, targets: &[Target], want: impl Fn(usize, &str) -> bool) -> Vec<Job> {
    let mut out = Vec::new();
    for probe in 0..f.fingerprint.probes.len() {
        for (target, (name, _, _)) in targets.iter().enumerate() {
            if want(probe, name) {
                out.push(Job {
                    family: f.family.clone(),
                    probe,
                    target,
                });
            }
        }
    }
    out
}

#[test]
#[ignore = "needs NVRTC: bash scripts/test.sh runs them"]
fn fingerprints_match_the_committed_ones() {
    let (dir13, dir12, _) = both_nvrtcs();
    let update = std::env::var("AUTOTUNE_UPDATE_FINGERPRINTS").is_ok_and(|v| v == "1");
    let targets: Vec<Target> = fingerprint::TARGETS
        .iter()
        .map(|&(t, major)| (t, major, if major == 13 { &*dir13 } else { &*dir12 }))
        .collect();
    let start = Instant::now();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join(fingerprint::DIR);
    let mut files = committed(&dir);
    let committed_of = |files: &BTreeMap<String, (PathBuf, Result<Fingerprint, String>)>,
                        name: &str| {
        files.get(name).and_then(|(_, r)| r.as_ref().ok()).cloned()
    };
    let (t, major, d) = targets[0];
    let listed: BTreeMap<String, Fresh> = fingerprint_run(t, major, d, &["--list"], 0)
        .unwrap_or_else(|e| panic!("{e}"))
        .families
        .into_iter()
        .map(|f| (f.family.clone(), f))
        .collect();
    let all: Vec<Job> = listed
        .values()
        .flat_map(|f| jobs_of(f, &targets, |_, _| true))
        .collect();
    let mut attempts: BTreeMap<String, Vec<Fresh>> = BTreeMap::new();
    attempt(&targets, &all, &listed, &mut attempts);
    let first_s = start.elapsed().as_secs_f64();
    let settled = |name: &str, runs: &[Fresh]| {
        let fps: Vec<Fingerprint> = runs.iter().map(|r| r.fingerprint.clone()).collect();
        let committed = committed_of(&files, name);
        let fresh = fingerprint::settle(committed.as_ref(), &fps)?;
        Some((committed, fresh))
    };
    // Again the probes whose PTX differs from the committed one; for an update, every probe,
    // until each was compiled UPDATE_ATTEMPTS times, so the file records the variants seen.
    let rounds = if update {
        fingerprint::UPDATE_ATTEMPTS
    } else {
        fingerprint::CHECK_ATTEMPTS
    };
    let mut again_total = 0;
    for _ in 1..rounds {
        let mut again = Vec::new();
        for (name, runs) in &attempts {
            let Some((committed, fresh)) = settled(name, runs) else {
                continue;
            };
            if runs.iter().any(|r| !r.errors.is_empty()) {
                continue;
            }
            if update {
                again.extend(jobs_of(&runs[0], &targets, |_, _| true));
                continue;
            }
            let revision = runs[0].revision;
            let found = fingerprint::check(name, revision, committed.as_ref(), &fresh);
            if found.is_empty() || !found.iter().all(|m| matches!(m, Mismatch::Changed { .. })) {
                continue;
            }
            let c = committed.filter(|c| c.revision == revision);
            let differs = |probe: usize, target: &str| {
                let now = fresh.probes.get(probe).and_then(|p| p.ptx.get(target));
                let was = c.as_ref().and_then(|c| c.probes.get(probe));
                !matches!((was, now), (Some(w), Some(n)) if w.accepts(target, n))
            };
            again.extend(jobs_of(&runs[0], &targets, differs));
        }
        if again.is_empty() {
            break;
        }
        again_total += again.len();
        attempt(&targets, &again, &listed, &mut attempts);
    }
    let mut problems: Vec<String> = Vec::new();
    let mut wrote: Vec<String> = Vec::new();
    let fresh: Vec<Fresh> = attempts
        .iter()
        .filter_map(|(name, runs)| {
            Some(Fresh {
                fingerprint: settled(name, runs)?.1,
                errors: runs.iter().flat_map(|a| a.errors.clone()).collect(),
                ..runs[0].clone()
            })
        })
        .collect();
    // A family with no probe to compile (its listing failed) is never attempted: report it.
    for (name, f) in &listed {
        if !attempts.contains_key(name) {
            problems.push(format!(
                "family '{name}': nothing to fingerprint:\n{}",
                f.errors.join("\n")
            ));
            files.remove(name);
        }
    }
    let mut probes = 0;
    for f in &fresh {
        let name = &f.family;
        probes += f.fingerprint.probes.len();
        let (path, parsed) = files
            .remove(name)
            .unwrap_or_else(|| (dir.join(format!("{name}.toml")), Err(String::new())));
        let committed = match parsed {
            Ok(c) => Some(c),
            Err(e) if e.is_empty() => None,
            // A file that does not parse is rewritten by an update, reported otherwise.
            Err(e) if !update => {
                problems.push(e);
                continue;
            }
            Err(_) => None,
        };
        if !f.errors.is_empty() {
            problems.push(format!(
                "family '{name}': probes did not compile or launch (a kernel or space change: if it is meant, bump `revision` in configs/spaces/{name}.toml and run `{}`):\n{}",
                fingerprint::UPDATE_COMMAND,
                tail(&f.errors.join("\n"), 3000)
            ));
            continue;
        }
        if !update {
            let found = fingerprint::check(name, f.revision, committed.as_ref(), &f.fingerprint);
            problems.extend(found.iter().map(Mismatch::to_string));
            continue;
        }
        match fingerprint::update(
            f.revision,
            &f.content_checksum,
            committed.as_ref(),
            &f.fingerprint,
        ) {
            Ok(None) => {}
            Ok(Some(fp)) => {
                std::fs::create_dir_all(&dir).expect("creating configs/fingerprints");
                std::fs::write(&path, fp.to_toml_string())
                    .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
                wrote.push(format!("{} (revision {})", path.display(), fp.revision));
            }
            Err(m) => problems.push(m.to_string()),
        }
    }
    // Files of families no space defines.
    for (family, (path, _)) in files {
        if update {
            std::fs::remove_file(&path)
                .unwrap_or_else(|e| panic!("removing {}: {e}", path.display()));
            wrote.push(format!("{} (deleted)", path.display()));
        } else {
            problems.push(Mismatch::Orphan { family }.to_string());
        }
    }
    println!(
        "fingerprints: {} families, {probes} probes, each compiled for {} in its own process in {first_s:.1} s; {again_total} compiled again; {:.1} s in all",
        fresh.len(),
        fingerprint::TARGETS
            .map(|(t, major)| format!("{t} (NVRTC {major})"))
            .join(" and "),
        start.elapsed().as_secs_f64()
    );
    for w in &wrote {
        println!("wrote {w}: commit it");
    }
    assert!(
        problems.is_empty(),
        "{} fingerprint problem(s):\n\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}
