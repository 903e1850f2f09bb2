//! Offline replay of recorded run journals, to compare search strategies with no GPU (as
//! Kernel Tuner replays its cache files).
//!
//! A journal of an exhaustive run records every candidate's median time (or failure). The
//! replay hands those records to a strategy as its space; evaluating index `i` returns the
//! recorded result. For each strategy and seed it counts the evaluations until the best time
//! so far is within `within_pct` percent of the journal's optimum, and reports the median and
//! 90th percentile over the seeds, also as a share of the space.
//!
//! The model-guided strategy needs each candidate's launch geometry: it is rebuilt from the
//! built-in catalog ([`Catalog::builtin`], [`crate::plan::plan`]) for the journal's shape and the
//! limits of its GPU's arch (the journal header's `arch`, else the GPU name in
//! [`crate::gpu::KNOWN_GPUS`], else `--arch`), matched by family and parameters; records without a
//! match get no estimate (they come last in the model's order).

use crate::family::catalog::Catalog;
use crate::family::space::{params_label, Limits};
use crate::gpu::Arch;
use crate::plan;
use crate::plan::model::{self, Machine};
use crate::problem::{Op, Shape};
use crate::report::{Align, Row, Table};
use crate::search::{self, Candidate, SearchError};
use crate::tuning::journal::{JournalError, Recorded};
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The strategies `all` replays.
pub const REPLAYED: [&str; 5] = [
    "exhaustive",
    "random",
    "annealing",
    "genetic",
    "model-guided",
];

/// Why a replay could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SimulateError {
    /// A journal could not be read.
    #[error(transparent)]
    Journal(#[from] JournalError),
    /// A strategy name is unknown.
    #[error(transparent)]
    Strategy(#[from] SearchError),
    /// The journal holds no candidate at all.
    #[error("run journal {}: it records no candidate", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// Every candidate of the journal failed.
    #[error("run journal {}: none of its {candidates} candidates was measured, so there is no optimum to approach; replay a journal with at least one measured candidate", path.display())]
    NoOptimum {
        /// The file.
        path: PathBuf,
        /// How many it records.
        candidates: usize,
    },
    /// A setting is out of range.
    #[error("{0}")]
    Setting(String),
}

/// What to replay and how.
#[derive(Debug, Clone)]
pub struct SimulateOptions {
    /// Strategy names ([`search::STRATEGIES`]).
    pub strategies: Vec<String>,
    /// Seeds per strategy (0, 1, ... `seeds - 1`).
    pub seeds: u64,
    /// "Found" means within this many percent of the optimum.
    pub within_pct: f64,
    /// The GPU arch for the model, overriding the journal's.
    pub arch: Option<Arch>,
    /// The GPU's SM count for the model, overriding the journal's.
    pub sms: Option<u32>,
}

impl Default for SimulateOptions {
    fn default() -> Self {
        SimulateOptions {
            strategies: REPLAYED.iter().map(|s| s.to_string()).collect(),
            seeds: 20,
            within_pct: 3.0,
            arch: None,
            sms: None,
        }
    }
}

/// One journal, ready to replay.
#[derive(Debug, Clone)]
pub struct Replay {
    /// What tables call it (the file name).
    pub label: String,
    /// The GPU it was recorded on.
    pub gpu: String,
    /// The op.
    pub op: Op,
    /// The shape.
    pub shape: Shape,
    /// The candidates (one per family and parameters, in journal order).
    pub space: Vec<Candidate>,
    /// Their recorded median times (`None`: failed).
    pub times: Vec<Option<f64>>,
    /// The fastest recorded time.
    pub optimum_ms: f64,
    /// How many candidates have a model estimate.
    pub estimated: usize,
    /// Whether the recorded run reached its end without being cut short (a replay of a
    /// partial run measures against a partial optimum).
    pub complete: bool,
    /// Why there are no estimates, when there are none.
    pub model_note: Option<String>,
    /// Whether the model had no arch for the GPU (none given, none in the journal, and the GPU
    /// name is not a known one), so it estimated nothing.
    pub arch_unknown: bool,
}

impl Replay {
    /// Prepares `recorded` (called `label`) for replay, estimating each candidate with the
    /// model where the built-in `catalog` has its config.
    pub fn new(
        label: &str,
        path: &Path,
        recorded: &Recorded,
        catalog: &Catalog,
        arch: Option<Arch>,
        sms: Option<u32>,
    ) -> Result<Replay, SimulateError> {
        let h = &recorded.header;
        let mut space: Vec<Candidate> = Vec::new();
        let mut times = Vec::new();
        let mut index: HashMap<(String, String), usize> = HashMap::new();
        for c in &recorded.candidates {
            let key = (c.family.clone(), params_label(&c.params));
            if index.contains_key(&key) {
                continue;
            }
            index.insert(key, space.len());
            space.push(Candidate::new(c.family.clone(), c.params.clone()));
            times.push(
                c.outcome
                    .as_ref()
                    .ok()
                    .map(|m| m.stats.median_ms)
                    .filter(|t| t.is_finite()),
            );
        }
        if space.is_empty() {
            return Err(SimulateError::Empty {
                path: path.to_path_buf(),
            });
        }
        let Some(optimum_ms) = times.iter().flatten().copied().reduce(f64::min) else {
            return Err(SimulateError::NoOptimum {
                path: path.to_path_buf(),
                candidates: space.len(),
            });
        };
        let sm = arch
            .map(|a| a.number() as i64)
            .or_else(|| {
                h.arch
                    .as_deref()
                    .and_then(|a| a.parse::<Arch>().ok())
                    .map(|a| a.number() as i64)
            })
            .or_else(|| crate::gpu::known_gpu(&h.gpu).map(|g| g.sm));
        let mut estimated = 0;
        let model_note = match (
            sm.and_then(Limits::for_arch),
            sm.and_then(|sm| Machine::for_gpu(&h.gpu, Some(sm), sms.or(h.sms))),
        ) {
            (Some(limits), Some(machine)) => {
                match plan::plan(catalog, h.op, h.shape, &limits, &[]) {
                    Ok((_, planned)) => {
                        let matched: Vec<_> = planned
                            .iter()
                            .filter_map(|p| {
                                index
                                    .get(&(p.config.family.clone(), p.config.params_label()))
                                    .map(|&i| (i, p))
                            })
                            .collect();
                        let cands = model::candidates(
                            catalog,
                            matched.iter().map(|(_, p)| (&p.config, &p.launch)),
                            h.op,
                            h.shape,
                            &limits,
                            &machine,
                        );
                        for ((i, _), c) in matched.iter().zip(cands) {
                            space[*i].estimate_ms = c.estimate_ms;
                            estimated += 1;
                        }
                        (estimated == 0).then(|| {
                            "no recorded config is in the built-in catalog's space".to_string()
                        })
                    }
                    Err(e) => Some(format!("the built-in catalog has no plan: {e}")),
                }
            }
            _ => Some(match sm {
                None => format!("the arch of '{}' is unknown", h.gpu),
                Some(sm) => format!("sm_{sm} of '{}' is not in this build's limit table", h.gpu),
            }),
        };
        let arch_unknown = sm.is_none();
        Ok(Replay {
            label: label.to_string(),
            gpu: h.gpu.clone(),
            op: h.op,
            shape: h.shape,
            space,
            times,
            optimum_ms,
            estimated,
            complete: recorded.ended == Some(false),
            model_note,
            arch_unknown,
        })
    }

    /// The evaluations `strategy` needs until its best time is within `within_pct` percent of
    /// the optimum (the whole space if it never gets there).
    pub fn evaluations(&self, strategy: &mut dyn search::Strategy, within_pct: f64) -> usize {
        let goal = self.optimum_ms * (1.0 + within_pct / 100.0);
        let best = Cell::new(f64::INFINITY);
        let stop = || best.get() <= goal;
        let searched = search::run::<std::convert::Infallible>(
            strategy,
            &self.space,
            None,
            Vec::new(),
            &stop,
            |i| {
                let t = self.times[i];
                if let Some(t) = t {
                    best.set(best.get().min(t));
                }
                Ok(t)
            },
        );
        match searched {
            Ok(s) if best.get() <= goal => s.history.len(),
            _ => self.space.len(),
        }
    }
}

/// One strategy on one journal, over every seed.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The strategy.
    pub strategy: String,
    /// Index into [`Simulation::replays`].
    pub replay: usize,
    /// Evaluations needed, per seed.
    pub evaluations: Vec<usize>,
    /// Their median.
    pub median: f64,
    /// Their 90th percentile (nearest rank).
    pub p90: usize,
    /// The median as a percentage of the space.
    pub median_pct: f64,
    /// The 90th percentile as a percentage of the space.
    pub p90_pct: f64,
}

/// Every strategy on every journal.
#[derive(Debug, Clone)]
pub struct Simulation {
    /// The journals.
    pub replays: Vec<Replay>,
    /// Per journal, per strategy.
    pub outcomes: Vec<Outcome>,
    /// The threshold used, percent.
    pub within_pct: f64,
    /// Seeds per strategy.
    pub seeds: u64,
}

/// Median of `v` (sorted or not; the mean of the middle two for an even count).
fn median(v: &[usize]) -> f64 {
    let mut s = v.to_vec();
    s.sort_unstable();
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2] as f64,
        n => (s[n / 2 - 1] + s[n / 2]) as f64 / 2.0,
    }
}

/// The nearest-rank `q` quantile of `v`.
fn quantile(v: &[usize], q: f64) -> usize {
    let mut s = v.to_vec();
    s.sort_unstable();
    if s.is_empty() {
        return 0;
    }
    let rank = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len());
    s[rank - 1]
}

/// Replays the journals at `paths` under every strategy of `opts`.
pub fn simulate(paths: &[PathBuf], opts: &SimulateOptions) -> Result<Simulation, SimulateError> {
    let catalog = Catalog::builtin().map_err(|e| {
        SimulateError::Setting(format!("the built-in kernel families do not load: {e}"))
    })?;
    let mut replays = Vec::new();
    for path in paths {
        let recorded = Recorded::load(path)?;
        let label = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into(),
        );
        replays.push(Replay::new(
            &label, path, &recorded, &catalog, opts.arch, opts.sms,
        )?);
    }
    replay_all(replays, opts)
}

/// Replays prepared journals under every strategy of `opts`.
pub fn replay_all(
    replays: Vec<Replay>,
    opts: &SimulateOptions,
) -> Result<Simulation, SimulateError> {
    if opts.seeds == 0 {
        return Err(SimulateError::Setting(
            "the number of seeds must be at least 1".to_string(),
        ));
    }
    if !(opts.within_pct.is_finite() && opts.within_pct >= 0.0) {
        return Err(SimulateError::Setting(format!(
            "within_pct {} must be a percentage of at least 0 (e.g. 3)",
            opts.within_pct
        )));
    }
    if opts.strategies.is_empty() {
        return Err(SimulateError::Setting(format!(
            "no strategy to replay: name some of {}",
            search::STRATEGIES.join(", ")
        )));
    }
    for s in &opts.strategies {
        search::by_name(s, 0)?;
    }
    let mut outcomes = Vec::new();
    for (r, replay) in replays.iter().enumerate() {
        for name in &opts.strategies {
            let mut evaluations = Vec::new();
            let mut strategy_name = name.clone();
            for seed in 0..opts.seeds {
                let mut s = search::by_name(name, seed)?;
                evaluations.push(replay.evaluations(s.as_mut(), opts.within_pct));
                strategy_name = s.name().to_string();
            }
            let n = replay.space.len() as f64;
            let med = median(&evaluations);
            let p90 = quantile(&evaluations, 0.9);
            outcomes.push(Outcome {
                strategy: strategy_name,
                replay: r,
                median: med,
                p90,
                median_pct: 100.0 * med / n,
                p90_pct: 100.0 * p90 as f64 / n,
                evaluations,
            });
        }
    }
    Ok(Simulation {
        replays,
        outcomes,
        within_pct: opts.within_pct,
        seeds: opts.seeds,
    })
}

/// A row of [`Simulation`]'s table of outcomes: one journal and strategy.
struct OutcomeRow {
    /// The journal's label.
    journal: String,
    /// The op and shape.
    problem: String,
    /// Candidates in the space.
    space: usize,
    /// Candidates that failed in the recorded run.
    failed: usize,
    strategy: String,
    /// Evaluations until the target, median and 90th percentile over the seeds.
    median: f64,
    p90: usize,
    /// The same, in % of the space.
    median_pct: f64,
    p90_pct: f64,
}

impl Row for OutcomeRow {
    fn header() -> Vec<(&'static str, Align)> {
        vec![
            ("journal", Align::Left),
            ("problem", Align::Left),
            ("space", Align::Right),
            ("failed", Align::Right),
            ("strategy", Align::Left),
            ("median", Align::Right),
            ("p90", Align::Right),
            ("median %", Align::Right),
            ("p90 %", Align::Right),
        ]
    }

    fn cells(&self) -> Vec<String> {
        vec![
            self.journal.clone(),
            self.problem.clone(),
            self.space.to_string(),
            self.failed.to_string(),
            self.strategy.clone(),
            format!("{}", self.median),
            self.p90.to_string(),
            format!("{:.1}", self.median_pct),
            format!("{:.1}", self.p90_pct),
        ]
    }
}

impl Row for StrategySummary {
    fn header() -> Vec<(&'static str, Align)> {
        vec![
            ("strategy", Align::Left),
            ("worst median %", Align::Right),
            ("mean median %", Align::Right),
            ("worst p90 %", Align::Right),
        ]
    }

    fn cells(&self) -> Vec<String> {
        vec![
            self.strategy.clone(),
            format!("{:.1}", self.worst_median_pct),
            format!("{:.1}", self.mean_median_pct),
            format!("{:.1}", self.worst_p90_pct),
        ]
    }
}

/// A strategy's results over all journals.
#[derive(Debug, Clone, PartialEq)]
pub struct StrategySummary {
    /// The strategy.
    pub strategy: String,
    /// The largest per-journal median, percent of the space.
    pub worst_median_pct: f64,
    /// The mean of the per-journal medians, percent of the space.
    pub mean_median_pct: f64,
    /// The largest per-journal 90th percentile, percent of the space.
    pub worst_p90_pct: f64,
}

impl Simulation {
    /// Per strategy, in the order replayed: its worst and mean median share of the space.
    pub fn summary(&self) -> Vec<StrategySummary> {
        let mut names: Vec<&str> = Vec::new();
        for o in &self.outcomes {
            if !names.contains(&o.strategy.as_str()) {
                names.push(&o.strategy);
            }
        }
        names
            .into_iter()
            .map(|name| {
                let of: Vec<&Outcome> = self
                    .outcomes
                    .iter()
                    .filter(|o| o.strategy == name)
                    .collect();
                let fold_max = |f: fn(&Outcome) -> f64| of.iter().map(|o| f(o)).fold(0.0, f64::max);
                StrategySummary {
                    strategy: name.to_string(),
                    worst_median_pct: fold_max(|o| o.median_pct),
                    worst_p90_pct: fold_max(|o| o.p90_pct),
                    mean_median_pct: of.iter().map(|o| o.median_pct).sum::<f64>()
                        / of.len().max(1) as f64,
                }
            })
            .collect()
    }

    /// The strategy with the smallest worst-case median share of the space.
    pub fn best(&self) -> Option<StrategySummary> {
        self.summary()
            .into_iter()
            .min_by(|a, b| a.worst_median_pct.total_cmp(&b.worst_median_pct))
    }

    /// One row per journal and strategy.
    fn outcome_table(&self) -> Table {
        let rows: Vec<OutcomeRow> = self
            .outcomes
            .iter()
            .map(|o| {
                let r = &self.replays[o.replay];
                OutcomeRow {
                    journal: r.label.clone(),
                    problem: format!("{} {}", r.op, r.shape.label(r.op)),
                    space: r.space.len(),
                    failed: r.times.iter().filter(|t| t.is_none()).count(),
                    strategy: o.strategy.clone(),
                    median: o.median,
                    p90: o.p90,
                    median_pct: o.median_pct,
                    p90_pct: o.p90_pct,
                }
            })
            .collect();
        Table::from_rows(&rows)
    }

    /// One row per strategy ([`Simulation::summary`]).
    fn summary_table(&self) -> Table {
        Table::from_rows(&self.summary())
    }

    fn intro(&self) -> String {
        format!(
            "Evaluations until the best so far is within {}% of the journal's optimum, over {} seed(s) per strategy (median and 90th percentile; % of the space).",
            self.within_pct, self.seeds
        )
    }

    fn notes(&self) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.replays {
            if !r.complete {
                out.push(format!(
                    "{}: the recorded run did not finish; its optimum is the best of what it measured",
                    r.label
                ));
            }
            match &r.model_note {
                Some(n) => out.push(format!("{}: no model estimates ({n})", r.label)),
                None if r.estimated < r.space.len() => out.push(format!(
                    "{}: {} of {} candidates have a model estimate (the rest are not in the built-in spaces)",
                    r.label,
                    r.estimated,
                    r.space.len()
                )),
                None => {}
            }
        }
        if let Some(b) = self.best() {
            out.push(format!(
                "best: {} (median at most {:.1}% of the space in every journal)",
                b.strategy, b.worst_median_pct
            ));
        }
        out
    }

    /// The intro, both tables drawn by `draw`, then the notes.
    fn report(&self, draw: fn(&Table) -> String) -> String {
        let mut s = format!("{}\n\n", self.intro());
        s.push_str(&draw(&self.outcome_table()));
        s.push('\n');
        s.push_str(&draw(&self.summary_table()));
        for n in self.notes() {
            let _ = writeln!(s, "\n{n}");
        }
        s
    }

    /// Plain-text tables for a terminal.
    pub fn table(&self) -> String {
        self.report(Table::render)
    }

    /// Markdown tables, for results/.
    pub fn markdown(&self) -> String {
        self.report(Table::markdown)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::outcome::{Failure, Measured, Stage};
    use crate::measure::timing::{Stats, TimingSettings};
    use crate::tuning::journal::{CandidateRecord, Header, Record, Writer, JOURNAL_VERSION};

    fn header(op: Op, shape: Shape) -> Header {
        Header {
            journal: JOURNAL_VERSION,
            gpu: "NVIDIA H100 80GB HBM3".into(),
            op,
            shape,
            seed: 1,
            timing: TimingSettings::quick(),
            tool_version: "test".into(),
            arch: None,
            sms: None,
        }
    }

    fn record(family: &str, params: &[(&str, i64)], ms: Option<f64>) -> Record {
        Record::Candidate(CandidateRecord {
            family: family.into(),
            kernel: format!("{family}_{params:?}"),
            params: params.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            checksum: "x".into(),
            outcome: match ms {
                Some(ms) => Ok(Measured {
                    stats: Stats::from_samples(&[ms, ms, ms]).unwrap(),
                    max_rel_error: 1e-7,
                    mean_rel_error: None,
                    registers: 40,
                    local_bytes: 0,
                }),
                None => Err(Failure {
                    stage: Stage::Validate,
                    reason: "wrong".into(),
                }),
            },
        })
    }

    /// Writes a journal of `records` for a 256^3 gemm and returns its path.
    fn write(dir: &Path, name: &str, op: Op, shape: Shape, records: &[Record]) -> PathBuf {
        let path = dir.join(name);
        let mut w = Writer::create(&path, &header(op, shape)).unwrap();
        for r in records {
            w.record(r).unwrap();
        }
        w.record(&Record::End { partial: false }).unwrap();
        path
    }

    const SHAPE: Shape = Shape::mnk(256, 256, 256);

    /// Ten candidates of a family the catalog does not know: X = 7 is the optimum (1.0 ms),
    /// X = 3 is within 3% (1.02 ms), X = 5 failed, the rest take 2 ms.
    fn toy(dir: &Path) -> PathBuf {
        let records: Vec<Record> = (0..10)
            .map(|x| {
                let ms = match x {
                    7 => Some(1.0),
                    3 => Some(1.02),
                    5 => None,
                    _ => Some(2.0),
                };
                record("toy", &[("X", x)], ms)
            })
            .collect();
        write(dir, "toy.jsonl", Op::Gemm, SHAPE, &records)
    }

    #[test]
    fn replay_of_a_synthetic_journal_gives_the_expected_counts() {
        let dir = tempfile::tempdir().unwrap();
        let path = toy(dir.path());
        let opts = SimulateOptions {
            seeds: 7,
            ..SimulateOptions::default()
        };
        let sim = simulate(std::slice::from_ref(&path), &opts).unwrap();
        let r = &sim.replays[0];
        assert_eq!((r.space.len(), r.optimum_ms, r.estimated), (10, 1.0, 0));
        assert!(r.complete);
        assert!(r.model_note.as_deref().unwrap().contains("built-in"));
        assert_eq!(sim.outcomes.len(), REPLAYED.len());
        let of = |name: &str| sim.outcomes.iter().find(|o| o.strategy == name).unwrap();
        // Exhaustive reaches X = 3 (within 3%) at its 4th evaluation, for every seed.
        let ex = of("exhaustive");
        assert_eq!(ex.evaluations, vec![4; 7]);
        assert_eq!((ex.median, ex.p90, ex.median_pct), (4.0, 4, 40.0));
        // Without estimates every candidate ties, so model-guided spreads them (farthest
        // first: X = 0, 9, 4, 2, 6), puts a neighbour of the first best in between (X = 1),
        // and reaches X = 3 at its 7th evaluation.
        assert_eq!(of("model-guided").evaluations, vec![7; 7]);
        for o in &sim.outcomes {
            assert_eq!(o.evaluations.len(), 7);
            assert!(
                o.evaluations.iter().all(|&e| (1..=10).contains(&e)),
                "{o:?}"
            );
        }
        // Random: two targets among 10, without replacement.
        let random = of("random");
        assert!(random.median <= 6.0, "{random:?}");

        // Exactly the optimum: exhaustive needs 8.
        let exact = SimulateOptions {
            strategies: vec!["exhaustive".into()],
            seeds: 1,
            within_pct: 0.0,
            ..SimulateOptions::default()
        };
        let sim0 = simulate(std::slice::from_ref(&path), &exact).unwrap();
        assert_eq!(sim0.outcomes[0].evaluations, vec![8]);
        // Within 100%, everything but the failure qualifies: one evaluation, two when the
        // failed candidate came first (a failure is an evaluation too).
        let loose = SimulateOptions {
            within_pct: 100.0,
            ..SimulateOptions::default()
        };
        let sim1 = simulate(&[path], &loose).unwrap();
        assert_eq!(sim1.outcomes[0].evaluations, vec![1; 20]);
        for o in &sim1.outcomes {
            let twos = o.evaluations.iter().filter(|&&e| e == 2).count();
            assert!(o.evaluations.iter().all(|&e| e <= 2) && twos <= 8, "{o:?}");
        }

        let table = sim.table();
        assert!(
            table.contains("toy.jsonl") && table.contains("gemm 256x256x256"),
            "{table}"
        );
        assert!(table.contains("best: "), "{table}");
        let md = sim.markdown();
        assert!(
            md.contains("| journal | problem |") && md.contains("| exhaustive |"),
            "{md}"
        );
        assert!(md.contains("---:"), "{md}");
    }

    #[test]
    fn the_model_guided_replay_rebuilds_launches_from_the_catalog() {
        let dir = tempfile::tempdir().unwrap();
        let shape = Shape::mnk(1024, 1024, 1024);
        let write_with = |name: &str, best: i64| {
            let records: Vec<Record> = [8, 16, 32]
                .iter()
                .map(|&t| {
                    let ms = if t == best { 1.0 } else { 5.0 };
                    record("gemm_tiled", &[("TILE_SIZE", t)], Some(ms))
                })
                .chain([record("gemm_unknown", &[("X", 1)], Some(9.0))])
                .collect();
            write(dir.path(), name, Op::Gemm, shape, &records)
        };
        let probe = write_with("probe.jsonl", 8);
        let opts = SimulateOptions {
            strategies: vec!["model-guided".into(), "exhaustive".into()],
            seeds: 3,
            ..SimulateOptions::default()
        };
        let sim = simulate(&[probe], &opts).unwrap();
        let r = &sim.replays[0];
        assert_eq!(r.estimated, 3, "{r:?}");
        assert!(r.space[3].estimate_ms.is_none());
        // The model's favourite of the three tiles.
        let fav = (0..3)
            .min_by(|&a, &b| {
                r.space[a]
                    .estimate_ms
                    .unwrap()
                    .total_cmp(&r.space[b].estimate_ms.unwrap())
            })
            .unwrap();
        let tile = r.space[fav].params["TILE_SIZE"];
        // Make the model's favourite the real optimum: model-guided needs one evaluation,
        // exhaustive needs its position.
        let path = write_with("fav.jsonl", tile);
        let sim = simulate(&[path], &opts).unwrap();
        assert_eq!(sim.outcomes[0].strategy, "model-guided");
        assert_eq!(sim.outcomes[0].evaluations, vec![1, 1, 1]);
        assert_eq!(sim.outcomes[1].median, (fav + 1) as f64);
        assert_eq!(sim.best().unwrap().strategy, "model-guided");
    }

    #[test]
    fn bad_journals_and_settings_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let empty = write(dir.path(), "empty.jsonl", Op::Gemm, SHAPE, &[]);
        let e = simulate(&[empty], &SimulateOptions::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("empty.jsonl") && e.contains("records no candidate"),
            "{e}"
        );
        let failed = write(
            dir.path(),
            "failed.jsonl",
            Op::Gemm,
            SHAPE,
            &[record("toy", &[("X", 1)], None)],
        );
        let e = simulate(&[failed], &SimulateOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("none of its 1 candidates was measured"), "{e}");
        let missing = dir.path().join("missing.jsonl");
        assert!(matches!(
            simulate(&[missing], &SimulateOptions::default()),
            Err(SimulateError::Journal(_))
        ));
        let path = toy(dir.path());
        let bad = SimulateOptions {
            strategies: vec!["hillclimb".into()],
            ..SimulateOptions::default()
        };
        let e = simulate(std::slice::from_ref(&path), &bad)
            .unwrap_err()
            .to_string();
        assert!(e.contains("hillclimb") && e.contains("annealing"), "{e}");
        let zero = SimulateOptions {
            seeds: 0,
            ..SimulateOptions::default()
        };
        assert!(simulate(std::slice::from_ref(&path), &zero).is_err());
        let nan = SimulateOptions {
            within_pct: f64::NAN,
            ..SimulateOptions::default()
        };
        assert!(simulate(&[path], &nan).is_err());
    }

    #[test]
    fn median_and_nearest_rank_quantile() {
        assert_eq!(median(&[5, 1, 3]), 3.0);
        assert_eq!(median(&[4, 1, 3, 2]), 2.5);
        assert_eq!(quantile(&[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 0.9), 9);
        assert_eq!(quantile(&[7], 0.9), 7);
    }
}
