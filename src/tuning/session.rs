//! Tuning sessions: the shapes of a list tuned on one or several devices, each winner saved
//! to the database as soon as it is found (under the database's lock, so other devices and
//! processes can write too), with the GPU's copy bandwidth and the entry's provenance, and the
//! previous winner of the same shape re-checked against the new run.
//!
//! Several devices share one work queue ([`crate::tuning::queue`]): each takes the next shape
//! of its GPU model when it is free. Each GPU model tunes every shape under its own key; the
//! devices of one model share its shapes, and where whole shapes would leave a long tail (one
//! huge shape, or fewer shapes than devices) a shape's candidates are cut into parts run on
//! several of them, whose results merge into one winner ([`queue::merge_parts`]). A part's
//! `--budget` and `--time` are its share of the shape's, so a shape costs the same device
//! time however it is cut. The compile cache is shared: each kernel is compiled once per arch.

use crate::cuda::bench::{self, RunError};
use crate::cuda::device::{Device, DeviceError};
use crate::cuda::nvrtc;
use crate::db::{Database, DbError, Entry, GpuRecord, Producer};
use crate::family::catalog::Catalog;
use crate::plan::outcome::{utc_now_rfc3339, TuneReport};
use crate::problem::{Op, Shape};
use crate::search::{self, SearchError};
use crate::tuning::journal;
use crate::tuning::queue::{self, Fault, Lane, Part, Standing, Unit, Usage, Watch};
use crate::tuning::recheck;
use crate::tuning::shard::{self, Shard};
use crate::tuning::tune::{self, Phase, Progress, TuneError, TuneOptions};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a session does beyond one run's [`TuneOptions`].
#[derive(Clone)]
pub struct SessionOptions {
    /// The op of every shape.
    pub op: Op,
    /// Options of each run; `journal` and `deadline` are set per shape.
    pub run: TuneOptions,
    /// The search strategy's name ([`search::by_name`]), made afresh for each shape.
    pub strategy: String,
    /// Seed of the strategy.
    pub seed: u64,
    /// Wall-clock limit per shape.
    pub time_limit: Option<Duration>,
    /// Where each shape's journal goes; `None` keeps none.
    pub journal_dir: Option<PathBuf>,
    /// The database: winners are saved to it, and the previous winner of a shape read from it.
    pub db: PathBuf,
    /// Save the winners (otherwise the database is only read).
    pub save: bool,
    /// The shard of a suite this session tunes, recorded in each entry's `produced_by`.
    pub shard: Option<Shard>,
}

/// What happened, for the caller to show.
pub enum Event<'a> {
    /// The device's copy bandwidth was measured (it was not in the database yet).
    Bandwidth {
        /// The device.
        ordinal: usize,
        /// GB/s.
        gbs: f64,
    },
    /// A device takes a shape (or a part of one).
    Start {
        /// Units of this GPU model finished so far (by any device).
        done: usize,
        /// Units of this GPU model in all.
        total: usize,
        /// Time left for this GPU model's units at the pace so far.
        eta: Option<Duration>,
        /// The shape.
        shape: Shape,
        /// The part of its candidates ([`Part::WHOLE`] for all).
        part: Part,
        /// The device's ordinal.
        device: usize,
        /// The GPU model.
        gpu: &'a str,
    },
    /// A part of a shape was tuned; the shape's report comes when its last part has.
    PartDone {
        /// The shape.
        shape: Shape,
        /// The part.
        part: Part,
        /// The device that ran it.
        device: usize,
        /// Candidates evaluated.
        tried: usize,
        /// The best time of the part, ms.
        best_ms: Option<f64>,
    },
    /// A shape was tuned (its parts merged, when it was cut).
    Tuned(&'a TuneReport),
    /// No candidate of the shape validated: nothing recorded.
    NothingValid {
        /// The shape.
        shape: Shape,
        /// Candidates tried.
        tried: usize,
        /// The time limit ran out before the first candidate finished (none failed).
        out_of_time: bool,
    },
    /// The winner was saved.
    Saved {
        /// The database.
        path: &'a Path,
        /// The shape.
        shape: Shape,
    },
    /// The previous winner of the shape, re-checked against this run.
    Recheck(String),
    /// The per-shape time limit stopped a shape; the session goes on with the next one.
    TimeLimit {
        /// The shape.
        shape: Shape,
        /// Candidates evaluated.
        tried: usize,
        /// The strategy.
        strategy: &'a str,
    },
    /// Some parts of a shape were never run (their devices were lost, or the run stopped):
    /// the best of the others was recorded, marked partial.
    Incomplete {
        /// The shape.
        shape: Shape,
        /// Parts that ran.
        ran: usize,
        /// Parts in all.
        parts: usize,
    },
    /// A device failed mid-run and takes no more work.
    Lost {
        /// The device's ordinal.
        device: usize,
        /// Another device runs the unit it held.
        requeued: bool,
    },
}

/// Progress of one device's current run, as [`Progress`] reports it.
#[derive(Debug, Clone, Copy)]
pub enum Update<'a> {
    /// A phase begins with this many steps.
    Start(Phase, u64),
    /// A step finished; the message says which.
    Step(Phase, &'a str),
    /// The phase ended.
    Finish(Phase),
}

/// Receives a session's progress bars and events. All methods may be called from many threads
/// (one per device).
pub trait Observer: Progress {
    /// Something happened.
    fn event(&self, event: Event<'_>);

    /// Progress of the run on device `device`; by default the device is not told apart.
    fn on_device(&self, _device: usize, update: Update<'_>) {
        match update {
            Update::Start(p, n) => self.start(p, n),
            Update::Step(p, m) => self.step(p, m),
            Update::Finish(p) => self.finish(p),
        }
    }
}

/// The progress of one device's runs, handed to [`Observer::on_device`].
struct OnDevice<'a> {
    device: usize,
    observer: &'a (dyn Observer + Sync),
}

impl Progress for OnDevice<'_> {
    fn start(&self, phase: Phase, total: u64) {
        self.observer
            .on_device(self.device, Update::Start(phase, total))
    }
    fn step(&self, phase: Phase, message: &str) {
        self.observer
            .on_device(self.device, Update::Step(phase, message))
    }
    fn finish(&self, phase: Phase) {
        self.observer.on_device(self.device, Update::Finish(phase))
    }
}

/// Why a session stopped.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The device could not be opened.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// The database could not be read or written.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The GPU failed outside a candidate (bandwidth, cuBLAS).
    #[error(transparent)]
    Run(#[from] RunError),
    /// A run could not be made.
    #[error(transparent)]
    Tune(#[from] TuneError),
    /// The strategy is unknown.
    #[error(transparent)]
    Search(#[from] SearchError),
    /// Interrupted during a shape: its best so far was recorded, marked partial.
    #[error("interrupted: the best so far for {op} {shape} was recorded, marked partial{}", journal.as_ref().map_or(String::new(), |j| format!(" (journal {})", j.display())))]
    Interrupted {
        /// The op.
        op: Op,
        /// The shape label.
        shape: String,
        /// Its journal, which a resumed run continues from.
        journal: Option<PathBuf>,
    },
    /// Interrupted between two shapes.
    #[error("interrupted between shapes: the shapes tuned so far were recorded")]
    InterruptedBetweenShapes,
    /// The thread tuning on a device panicked.
    #[error("the thread tuning on device {device} panicked")]
    Panicked {
        /// The device ordinal.
        device: usize,
    },
}

/// What a session produced.
#[derive(Debug, Default)]
pub struct DevicesOutcome {
    /// Each GPU's record and its winners, in the order of the shapes given (whichever device
    /// finished first).
    pub by_gpu: Vec<(GpuRecord, Vec<Entry>)>,
    /// Shapes where no candidate validated.
    pub lost: Vec<String>,
    /// Shapes whose time limit ran out before their first candidate finished (a longer `--time`
    /// tunes them).
    pub out_of_time: Vec<String>,
    /// Shapes (with their GPU model) left untuned because no device could take them (every
    /// device of the model was lost, or the run stopped).
    pub untuned: Vec<String>,
    /// Why a device stopped or a shape failed, one per device or shape.
    pub errors: Vec<SessionError>,
    /// Per device, its busy time, against the session's wall time.
    pub usage: Usage,
    /// Kernels NVRTC compiled during the session (the rest came from the compile caches).
    pub compiled_now: usize,
}

/// A unit of a session: one shape, or one part of its candidates.
struct Work {
    shape: Shape,
    part: Part,
}

/// The parts of a cut shape finished so far, with the device of each.
type Parts = Vec<(TuneReport, Producer)>;

/// What the devices share while a session runs.
struct Session<'a> {
    catalog: &'a Catalog,
    cache: &'a nvrtc::Cache,
    opts: &'a SessionOptions,
    observer: &'a (dyn Observer + Sync),
    shapes: &'a [Shape],
    /// Per (GPU model, shape index): the parts finished so far.
    parts: Mutex<HashMap<(String, usize), Parts>>,
    winners: Mutex<Vec<(GpuRecord, Entry)>>,
    lost: Mutex<Vec<String>>,
    out_of_time: Mutex<Vec<String>>,
    compiled_now: AtomicUsize,
}

/// Tunes `shapes` on `devices` through one work queue: every GPU model among the devices
/// tunes every shape, its devices taking the next shape (or part of one) when free, all of
/// them sharing the compile caches; each winner is saved as soon as its shape is done. One
/// device is the same with one lane.
pub fn tune_on_devices(
    devices: &[usize],
    shapes: &[Shape],
    catalog: &Catalog,
    cache: &nvrtc::Cache,
    opts: &SessionOptions,
    observer: &(dyn Observer + Sync),
) -> DevicesOutcome {
    let start = Instant::now();
    let mut out = DevicesOutcome::default();
    let (lanes, ordinals) = lanes_of(devices, &mut out.errors);
    let units = plan_units(opts.op, shapes, opts.time_limit.is_some(), &lanes);
    let session = Session {
        catalog,
        cache,
        opts,
        observer,
        shapes,
        parts: Mutex::new(HashMap::new()),
        winners: Mutex::new(Vec::new()),
        lost: Mutex::new(Vec::new()),
        out_of_time: Mutex::new(Vec::new()),
        compiled_now: AtomicUsize::new(0),
    };
    let watch = Watcher {
        lanes: &lanes,
        ordinals: &ordinals,
        observer,
    };
    let stopped = || stop_requested(opts);
    let open = |lane: usize| session.open(ordinals[lane]);
    let ran = queue::run(&lanes, units_of(&units), &open, &stopped, &watch);
    // Shapes cut in parts of which some never ran: the best of the others, marked partial.
    let leftover: Vec<((String, usize), Parts)> = lock(&session.parts).drain().collect();
    for ((_, s), parts) in leftover {
        let count = units
            .iter()
            .find(|u| u.work.shape == shapes[s])
            .map_or(1, |u| u.work.part.count);
        if parts.len() == count {
            continue;
        }
        observer.event(Event::Incomplete {
            shape: shapes[s],
            ran: parts.len(),
            parts: count,
        });
        if let Err(e) = session.finish_parts(parts, true) {
            out.errors.push(fault_error(e));
        }
    }
    out.errors.extend(ran.lost.into_iter().map(|(_, e)| e));
    out.usage = ran.usage;
    out.errors.extend(ran.failed.into_iter().map(|(_, e)| e));
    out.errors.extend(ran.stopped);
    let mut untuned: Vec<String> = ran
        .unfinished
        .iter()
        .map(|&i| {
            let u = &units[i];
            format!("{} on {}", u.work.shape.label(opts.op), u.group)
        })
        .collect();
    untuned.dedup();
    out.untuned = untuned;
    out.lost = std::mem::take(&mut *lock(&session.lost));
    out.out_of_time = std::mem::take(&mut *lock(&session.out_of_time));
    for (gpu, entry) in std::mem::take(&mut *lock(&session.winners)) {
        match out.by_gpu.iter_mut().find(|(g, _)| g.name == gpu.name) {
            Some((_, w)) => {
                // A shape re-saved (parts merged again after an interrupt) keeps its latest.
                w.retain(|e| e.shape != entry.shape);
                w.push(entry);
            }
            None => out.by_gpu.push((gpu, vec![entry])),
        }
    }
    for (_, winners) in &mut out.by_gpu {
        winners.sort_by_key(|e| shapes.iter().position(|s| s.label(opts.op) == e.shape));
    }
    out.compiled_now = session.compiled_now.load(Ordering::Relaxed);
    // The wall time includes opening the devices and the last saves.
    out.usage.wall = start.elapsed();
    out
}

/// The queue's lanes: one per device that can be opened, grouped by GPU model (the others'
/// errors go to `errors`), and each lane's ordinal.
fn lanes_of(devices: &[usize], errors: &mut Vec<SessionError>) -> (Vec<Lane>, Vec<usize>) {
    let names: Vec<Result<String, SessionError>> = std::thread::scope(|scope| {
        let hs: Vec<_> = devices
            .iter()
            .map(|&d| scope.spawn(move || Device::open(d).map(|dev| dev.info.name.clone())))
            .collect();
        hs.into_iter()
            .zip(devices)
            .map(|(h, &d)| match h.join() {
                Ok(r) => r.map_err(SessionError::from),
                Err(_) => Err(SessionError::Panicked { device: d }),
            })
            .collect()
    });
    let mut lanes = Vec::new();
    let mut ordinals = Vec::new();
    for (&d, name) in devices.iter().zip(names) {
        match name {
            Ok(name) => {
                lanes.push(Lane {
                    name: format!("device {d} ({name})"),
                    group: name,
                });
                ordinals.push(d);
            }
            Err(e) => errors.push(e),
        }
    }
    (lanes, ordinals)
}

/// The units of a session: per GPU model, every shape, cut in parts where whole shapes would
/// leave a long tail ([`queue::split`]), the costliest first. With a time limit every shape
/// costs the same (most run to it); otherwise [`shard::cost`] estimates.
fn plan_units(op: Op, shapes: &[Shape], timed: bool, lanes: &[Lane]) -> Vec<Unit<Work>> {
    let costs: Vec<f64> = shapes
        .iter()
        .map(|&s| if timed { 1.0 } else { shard::cost(op, s) })
        .collect();
    let mean = costs.iter().sum::<f64>() / costs.len().max(1) as f64;
    let mut groups: Vec<&str> = Vec::new();
    for l in lanes {
        if !groups.contains(&l.group.as_str()) {
            groups.push(&l.group);
        }
    }
    let mut units = Vec::new();
    for g in groups {
        let n = lanes.iter().filter(|l| l.group == g).count();
        // A part repeats the set-up (cuBLAS baseline, evaluator): a twentieth of a shape.
        let parts = queue::split(&costs, n, 0.1, 0.05 * mean);
        let mut mine: Vec<Unit<Work>> = Vec::new();
        for (s, (&shape, &count)) in shapes.iter().zip(&parts).enumerate() {
            for index in 0..count {
                mine.push(Unit {
                    group: g.to_string(),
                    cost: costs[s] / count as f64,
                    work: Work {
                        shape,
                        part: Part { index, count },
                    },
                });
            }
        }
        // The costliest first (stable: suite order among equals), so the tail is short.
        mine.sort_by(|a, b| b.cost.total_cmp(&a.cost));
        units.extend(mine);
    }
    units
}

/// The units as the queue takes them (it owns its list; the session keeps the plan).
fn units_of(units: &[Unit<Work>]) -> Vec<Unit<Work>> {
    units
        .iter()
        .map(|u| Unit {
            group: u.group.clone(),
            cost: u.cost,
            work: Work {
                shape: u.work.shape,
                part: u.work.part,
            },
        })
        .collect()
}

fn stop_requested(opts: &SessionOptions) -> bool {
    opts.run
        .stop
        .as_ref()
        .is_some_and(|s| s.load(Ordering::SeqCst))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // Every update is one push, insert or removal: a panicking holder leaves it consistent.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// What the queue does about a session's error: a broken device is lost, a problem of the
/// shape fails the shape, an interrupt or a broken database stops everything.
fn fault(e: SessionError) -> Fault<SessionError> {
    let too_large = |r: &RunError| matches!(r, RunError::TooLarge { .. });
    match &e {
        SessionError::Db(_)
        | SessionError::Interrupted { .. }
        | SessionError::InterruptedBetweenShapes => Fault::Stop(e),
        SessionError::Run(r) | SessionError::Tune(TuneError::Run(r)) if too_large(r) => {
            Fault::UnitFailed(e)
        }
        SessionError::Device(_)
        | SessionError::Run(_)
        | SessionError::Panicked { .. }
        | SessionError::Tune(TuneError::Run(_) | TuneError::Compile(_)) => Fault::DeviceLost(e),
        SessionError::Tune(_) | SessionError::Search(_) => Fault::UnitFailed(e),
    }
}

fn fault_error(f: Fault<SessionError>) -> SessionError {
    match f {
        Fault::DeviceLost(e) | Fault::UnitFailed(e) | Fault::Stop(e) => e,
    }
}

impl Session<'_> {
    /// Opens device `ordinal` for the queue, measuring its copy bandwidth unless the database
    /// has it, and returns its worker.
    fn open(
        &self,
        ordinal: usize,
    ) -> Result<impl FnMut(usize, &Work) -> Result<(), Fault<SessionError>> + '_, SessionError>
    {
        let dev = Device::open(ordinal)?;
        let known = if self.opts.save {
            Database::load(&self.opts.db)?
                .gpu(&dev.info.name)
                .and_then(|g| g.copy_bandwidth_gbs)
        } else {
            None
        };
        let bandwidth = match known {
            Some(b) => b,
            None => {
                let gbs = bench::copy_bandwidth_gbs(&dev)?;
                self.observer.event(Event::Bandwidth { ordinal, gbs });
                gbs
            }
        };
        Ok(move |_: usize, w: &Work| self.run_unit(&dev, bandwidth, w).map_err(fault))
    }

    /// Tunes one unit on `dev`; a whole shape is saved at once, a part when its shape's last
    /// part is done.
    fn run_unit(&self, dev: &Device, bandwidth: f64, w: &Work) -> Result<(), SessionError> {
        let (opts, op, shape, part) = (self.opts, self.opts.op, w.shape, w.part);
        let mut run = opts.run.clone();
        run.part = part;
        run.budget = opts.run.budget.map(|b| part.share(b));
        run.journal = opts.journal_dir.as_ref().map(|d| {
            let p = journal::path_for(d, &dev.info.name, op, shape);
            if part.count > 1 {
                p.with_extension(format!("part-{}-of-{}.jsonl", part.index, part.count))
            } else {
                p
            }
        });
        run.deadline = opts
            .time_limit
            .map(|t| Instant::now() + t / part.count.max(1) as u32);
        let mut strategy = search::by_name(&opts.strategy, opts.seed)?;
        let progress = OnDevice {
            device: dev.info.ordinal,
            observer: self.observer,
        };
        let mut r = tune::tune(
            dev,
            self.catalog,
            self.cache,
            op,
            shape,
            &run,
            strategy.as_mut(),
            &progress,
        )?;
        r.gpu.copy_bandwidth_gbs = Some(bandwidth);
        self.compiled_now
            .fetch_add(r.compiled_now, Ordering::Relaxed);
        let producer = Producer {
            host: crate::provenance::this_host(),
            device: dev.info.ordinal as u32,
            pci_bus_id: dev.info.pci_bus_id.clone(),
            uuid: dev.info.uuid.clone(),
            shard: opts.shard.map(|s| s.to_string()),
        };
        if part.count <= 1 {
            return self.finish(r, producer, false);
        }
        self.observer.event(Event::PartDone {
            shape,
            part,
            device: dev.info.ordinal,
            tried: r.results.len(),
            best_ms: r
                .results
                .iter()
                .filter_map(|c| c.median_ms())
                .min_by(f64::total_cmp),
        });
        let index = self
            .shapes
            .iter()
            .position(|s| *s == shape)
            .unwrap_or_default();
        let key = (dev.info.name.clone(), index);
        let interrupted = r.partial && stop_requested(opts);
        let ready = {
            let mut parts = lock(&self.parts);
            let mine = parts.entry(key.clone()).or_default();
            mine.push((r, producer));
            if mine.len() == part.count {
                parts.remove(&key)
            } else if interrupted {
                // The other parts may never run: record the best so far now.
                Some(mine.clone())
            } else {
                None
            }
        };
        match ready {
            Some(parts) => self.finish_parts(parts, false).map_err(fault_error),
            None => Ok(()),
        }
    }

    /// Merges a shape's parts and finishes it (`incomplete`: some parts never ran).
    fn finish_parts(&self, parts: Parts, incomplete: bool) -> Result<(), Fault<SessionError>> {
        let (reports, producers): (Vec<TuneReport>, Vec<Producer>) = parts.into_iter().unzip();
        let Some((mut merged, winner)) = queue::merge_parts(reports) else {
            return Ok(());
        };
        merged.partial |= incomplete;
        let producer = producers.into_iter().nth(winner);
        match producer {
            Some(p) => self.finish(merged, p, incomplete).map_err(fault),
            None => Ok(()),
        }
    }

    /// Records a shape's report: its winner saved (with the device that measured it), the
    /// previous winner re-checked, the time limit or an interrupt said.
    fn finish(
        &self,
        r: TuneReport,
        producer: Producer,
        incomplete: bool,
    ) -> Result<(), SessionError> {
        let (opts, op, shape) = (self.opts, self.opts.op, r.shape);
        self.observer.event(Event::Tuned(&r));
        let Some(mut entry) = r.to_entry(&utc_now_rfc3339()) else {
            let out_of_time = r.partial && r.results.is_empty();
            self.observer.event(Event::NothingValid {
                shape,
                tried: r.results.len(),
                out_of_time,
            });
            let which = if out_of_time {
                &self.out_of_time
            } else {
                &self.lost
            };
            lock(which).push(format!("{} on {}", shape.label(op), r.gpu.name));
            return Ok(());
        };
        entry.produced_by = Some(producer);
        // The previous winner (for the re-check) is read as the save finds the database, under
        // its lock: one load, not two.
        let previous = if opts.save {
            let (g, e) = (r.gpu.clone(), entry.clone());
            let mut before = None;
            Database::update_file(&opts.db, |db| {
                before = db.get(&g.name, op, shape).cloned();
                db.upsert_gpu(g);
                db.upsert(e);
                Ok(())
            })?;
            self.observer.event(Event::Saved {
                path: &opts.db,
                shape,
            });
            before
        } else {
            Database::load(&opts.db)
                .ok()
                .and_then(|db| db.get(&r.gpu.name, op, shape).cloned())
        };
        if let Some(p) = previous {
            self.observer
                .event(Event::Recheck(recheck::log_line(&p, &r)));
        }
        lock(&self.winners).push((r.gpu.clone(), entry));
        let stopped = stop_requested(opts);
        if incomplete {
            return Ok(());
        }
        if r.partial && !stopped {
            self.observer.event(Event::TimeLimit {
                shape,
                tried: r.results.len(),
                strategy: &r.strategy,
            });
        } else if r.partial {
            return Err(SessionError::Interrupted {
                op,
                shape: shape.label(op),
                journal: r.journal.clone(),
            });
        }
        if stopped {
            return Err(SessionError::InterruptedBetweenShapes);
        }
        Ok(())
    }
}

/// Tells the observer which device took what, and which was lost.
struct Watcher<'a> {
    lanes: &'a [Lane],
    ordinals: &'a [usize],
    observer: &'a (dyn Observer + Sync),
}

impl Watch<Work> for Watcher<'_> {
    fn took(&self, lane: usize, _: usize, w: &Work, s: Standing) {
        self.observer.event(Event::Start {
            done: s.done,
            total: s.total,
            eta: s.eta,
            shape: w.shape,
            part: w.part,
            device: self.ordinals[lane],
            gpu: &self.lanes[lane].group,
        });
    }
    fn lost(&self, lane: usize, _: Option<usize>, requeued: bool) {
        self.observer.event(Event::Lost {
            device: self.ordinals[lane],
            requeued,
        });
    }
}
