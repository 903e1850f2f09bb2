//! A tuning session on one device: the shapes of a list tuned one after another, each winner
//! saved to the database as soon as it is found (under the database's lock, so other devices
//! and processes can write too), with the GPU's copy bandwidth and the entry's provenance, and
//! the previous winner of the same shape re-checked against the new run.

use crate::cuda::bench::{self, RunError};
use crate::cuda::device::{Device, DeviceError};
use crate::cuda::nvrtc;
use crate::db::{Database, DbError, Entry, GpuRecord, Producer};
use crate::family::catalog::Catalog;
use crate::plan::outcome::{utc_now_rfc3339, TuneReport};
use crate::problem::{Op, Shape};
use crate::search::{self, SearchError};
use crate::tuning::journal;
use crate::tuning::recheck;
use crate::tuning::shard::{self, Shard};
use crate::tuning::tune::{self, Progress, TuneError, TuneOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
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
    /// A shape begins.
    Start {
        /// 0-based position in the list.
        index: usize,
        /// Length of the list.
        total: usize,
        /// The shape.
        shape: Shape,
        /// The device.
        device: &'a Device,
    },
    /// A shape was tuned.
    Tuned(&'a TuneReport),
    /// No candidate of the shape validated: nothing recorded.
    NothingValid {
        /// The shape.
        shape: Shape,
        /// Candidates tried.
        tried: usize,
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
}

/// Receives a session's progress bars and events. All methods may be called from many threads
/// (one session per device).
pub trait Observer: Progress {
    /// Something happened.
    fn event(&self, event: Event<'_>);
}

/// What a session produced.
#[derive(Debug, Default)]
pub struct SessionOutcome {
    /// The GPU, once a shape was tuned.
    pub gpu: Option<GpuRecord>,
    /// The winners, in the order tuned.
    pub winners: Vec<Entry>,
    /// Shapes where no candidate validated.
    pub lost: Vec<String>,
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

/// What a session over several devices produced.
#[derive(Debug, Default)]
pub struct DevicesOutcome {
    /// Each GPU's record and its winners, in the order of the shapes given (whichever device
    /// finished first).
    pub by_gpu: Vec<(GpuRecord, Vec<Entry>)>,
    /// Shapes where no candidate validated.
    pub lost: Vec<String>,
    /// Why a device stopped, one per device that did.
    pub errors: Vec<SessionError>,
}

/// Tunes `shapes` on `devices` at once: the shapes are spread over them, balanced by work
/// ([`shard::balance`]), one thread per device, every device sharing the compile caches; then
/// the winners are gathered per GPU. One device is [`tune_shapes`] on all of them.
pub fn tune_on_devices(
    devices: &[usize],
    shapes: &[Shape],
    catalog: &Catalog,
    cache: &nvrtc::Cache,
    opts: &SessionOptions,
    observer: &(dyn Observer + Sync),
) -> DevicesOutcome {
    let outcomes: Vec<Result<SessionOutcome, SessionError>> = match devices {
        [d] => vec![tune_shapes(*d, shapes, catalog, cache, opts, observer)],
        _ => {
            let parts = shard::balance(opts.op, shapes, devices.len());
            std::thread::scope(|scope| {
                let handles: Vec<_> = devices
                    .iter()
                    .zip(&parts)
                    .filter(|(_, part)| !part.is_empty())
                    .map(|(&d, part)| {
                        let h = scope
                            .spawn(move || tune_shapes(d, part, catalog, cache, opts, observer));
                        (d, h)
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|(d, h)| {
                        h.join()
                            .unwrap_or(Err(SessionError::Panicked { device: d }))
                    })
                    .collect()
            })
        }
    };
    let mut out = DevicesOutcome::default();
    for o in outcomes {
        match o {
            Ok(o) => {
                out.lost.extend(o.lost);
                if let Some(gpu) = o.gpu {
                    match out.by_gpu.iter_mut().find(|(g, _)| g.name == gpu.name) {
                        Some((_, w)) => w.extend(o.winners),
                        None => out.by_gpu.push((gpu, o.winners)),
                    }
                }
            }
            Err(e) => out.errors.push(e),
        }
    }
    for (_, winners) in &mut out.by_gpu {
        winners.sort_by_key(|e| shapes.iter().position(|s| *s == e.shape()));
    }
    out
}

/// Tunes `shapes` one after another on device `ordinal`, saving each winner as soon as it is
/// found.
pub fn tune_shapes(
    ordinal: usize,
    shapes: &[Shape],
    catalog: &Catalog,
    cache: &nvrtc::Cache,
    opts: &SessionOptions,
    observer: &dyn Observer,
) -> Result<SessionOutcome, SessionError> {
    let op = opts.op;
    let dev = Device::open(ordinal)?;
    let known = if opts.save {
        Database::load(&opts.db)?
            .gpu(&dev.info.name)
            .and_then(|g| g.copy_bandwidth_gbs)
    } else {
        None
    };
    let bandwidth = match known {
        Some(b) => b,
        None => {
            let gbs = bench::copy_bandwidth_gbs(&dev)?;
            observer.event(Event::Bandwidth { ordinal, gbs });
            gbs
        }
    };
    let stopped = || {
        opts.run
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::SeqCst))
    };
    let mut run = opts.run.clone();
    let mut out = SessionOutcome::default();
    for (index, &shape) in shapes.iter().enumerate() {
        observer.event(Event::Start {
            index,
            total: shapes.len(),
            shape,
            device: &dev,
        });
        run.journal = opts
            .journal_dir
            .as_ref()
            .map(|d| journal::path_for(d, &dev.info.name, op, shape));
        run.deadline = opts.time_limit.map(|t| Instant::now() + t);
        let mut strategy = search::by_name(&opts.strategy, opts.seed)?;
        let mut r = tune::tune(
            &dev,
            catalog,
            cache,
            op,
            shape,
            &run,
            strategy.as_mut(),
            observer,
        )?;
        r.gpu.copy_bandwidth_gbs = Some(bandwidth);
        observer.event(Event::Tuned(&r));
        let Some(mut entry) = r.to_entry(&utc_now_rfc3339()) else {
            observer.event(Event::NothingValid {
                shape,
                tried: r.results.len(),
            });
            out.lost.push(shape.label(op));
            continue;
        };
        entry.produced_by = Some(Producer {
            host: crate::provenance::this_host(),
            device: ordinal as u32,
            pci_bus_id: dev.info.pci_bus_id.clone(),
            uuid: dev.info.uuid.clone(),
            shard: opts.shard.map(|s| s.to_string()),
        });
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
            observer.event(Event::Saved {
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
            observer.event(Event::Recheck(recheck::log_line(&p, &r)));
        }
        out.gpu = Some(r.gpu.clone());
        out.winners.push(entry);
        if r.partial && !stopped() {
            observer.event(Event::TimeLimit {
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
        if stopped() {
            return Err(SessionError::InterruptedBetweenShapes);
        }
    }
    Ok(out)
}
