//! A work queue shared by several devices: each device (a *lane*) takes the next unit of work
//! when it is free, so a fast device does more and nobody waits on a slow one's tail. Pure:
//! devices are closures, so the scheduling, the failure rules and the busy-time accounting are
//! tested with simulated devices, without a GPU.
//!
//! - **Groups.** Every lane and every unit belongs to a group (the GPU model: results of two
//!   models are different database keys). A lane takes only units of its own group.
//! - **Order.** Units are handed out in the order given (callers put the largest first, so the
//!   tail is short); a unit put back after a failure goes to the front.
//! - **Failures** ([`Fault`]): a lost device takes no more units and the unit it held goes back
//!   to the queue for another lane of its group, once (a unit that has now lost two devices is
//!   given up: it is likely the unit's fault); a failed unit is recorded and its lane goes on;
//!   a stop (an interrupt, an unwritable database) ends the handing out for every lane.
//! - **Accounting**: per lane, the units it finished and its busy time (inside units) against
//!   the run's wall time ([`Usage`]).
//!
//! [`split`] decides how many parts each unit of work (a shape) is cut into for a group of
//! identical devices, and [`Part`] names one part of a shape's candidates; [`merge_parts`]
//! joins the parts' reports into the one report a single device would have made.

use crate::plan::outcome::TuneReport;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Why a lane could not finish a unit, and what the queue does about it.
#[derive(Debug)]
pub enum Fault<E> {
    /// The device is broken (it failed outside a candidate): it takes no more units, and the
    /// unit it held is put back for another lane of its group, once.
    DeviceLost(E),
    /// The unit cannot be done (e.g. every config pruned): recorded, and the lane goes on.
    UnitFailed(E),
    /// Nothing more is handed out to any lane (an interrupt, an unwritable database). The unit
    /// counts as finished by the lane (it recorded what it could).
    Stop(E),
}

/// A lane: one device as the queue sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lane {
    /// How it is named in reports, e.g. `device 1 (NVIDIA H100 80GB HBM3)`.
    pub name: String,
    /// Its group (the GPU model): it takes only units of this group.
    pub group: String,
}

/// A unit of work for one lane of `group`.
#[derive(Debug, Clone)]
pub struct Unit<T> {
    /// The group whose lanes may take it.
    pub group: String,
    /// Its estimated cost (any unit, the same for all units of a run): only the ETA uses it.
    pub cost: f64,
    /// The work.
    pub work: T,
}

/// Where the queue stands for a group, as a lane takes a unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Standing {
    /// Units of the group finished (by any lane).
    pub done: usize,
    /// Units of the group in all.
    pub total: usize,
    /// Time left for the group at the pace so far (by cost), once a unit has finished.
    pub eta: Option<Duration>,
}

/// What the queue tells as it goes. Called from the lanes' threads.
pub trait Watch<T>: Sync {
    /// Lane `lane` took unit `index`.
    fn took(&self, _lane: usize, _index: usize, _unit: &T, _standing: Standing) {}
    /// Lane `lane` finished unit `index` in `seconds` (whether it succeeded or failed).
    fn finished(&self, _lane: usize, _index: usize, _seconds: f64) {}
    /// Lane `lane` was lost while running unit `index`; `requeued`: another lane will run it.
    fn lost(&self, _lane: usize, _index: Option<usize>, _requeued: bool) {}
}

/// A [`Watch`] that says nothing.
pub struct Quiet;
impl<T> Watch<T> for Quiet {}

/// One lane's part in a run, as its thread ends.
struct LaneReport<E> {
    lane: Lane,
    units: usize,
    busy: Duration,
    setup: Duration,
    /// Why it stopped early: it could not be opened or was lost mid-run.
    lost: Option<E>,
}

/// What a run of the queue produced.
#[derive(Debug)]
pub struct Outcome<R, E> {
    /// Per unit (in the order given), its result, if a lane finished it.
    pub results: Vec<Option<R>>,
    /// Units that failed on their own account ([`Fault::UnitFailed`]), by index.
    pub failed: Vec<(usize, E)>,
    /// Units given up after losing two devices, or left when no lane of their group remained.
    pub unfinished: Vec<usize>,
    /// Lanes that stopped early (could not be opened, or lost mid-run), by index, and why.
    pub lost: Vec<(usize, E)>,
    /// The stop that ended the run early, if one did.
    pub stopped: Option<E>,
    /// Per lane (in the order given) its busy time, and the run's wall time.
    pub usage: Usage,
}

/// A unit's attempts so far (a lost device counts one).
struct Slot {
    attempts: u8,
}

struct State {
    /// Per group: unit indices waiting.
    waiting: Vec<VecDeque<usize>>,
    /// Per group: units being run.
    running: Vec<usize>,
    /// Per group: lanes still alive.
    alive: Vec<usize>,
    /// Per group: units done, their cost, all units and their cost.
    done: Vec<(usize, f64, usize, f64)>,
    stopped: bool,
    unfinished: Vec<usize>,
}

/// Runs `units` on `lanes`: each lane's thread calls `open` (with the lane's index) to get its
/// worker, then takes the next unit of its group whenever it is free, until none is left,
/// its device is lost, `stop` says so or a [`Fault::Stop`] comes. `open`'s error counts as a
/// lost device with no unit in hand.
pub fn run<T, R, E, W>(
    lanes: &[Lane],
    units: Vec<Unit<T>>,
    open: &(dyn Fn(usize) -> Result<W, E> + Sync),
    stop: &(dyn Fn() -> bool + Sync),
    watch: &dyn Watch<T>,
) -> Outcome<R, E>
where
    T: Sync,
    R: Send,
    E: Send,
    W: FnMut(usize, &T) -> Result<R, Fault<E>>,
{
    let start = Instant::now();
    let mut groups: Vec<&str> = Vec::new();
    for l in lanes {
        if !groups.contains(&l.group.as_str()) {
            groups.push(&l.group);
        }
    }
    let group_of = |g: &str| groups.iter().position(|x| *x == g);
    let mut state = State {
        waiting: vec![VecDeque::new(); groups.len()],
        running: vec![0; groups.len()],
        alive: groups
            .iter()
            .map(|g| lanes.iter().filter(|l| l.group == *g).count())
            .collect(),
        done: vec![(0, 0.0, 0, 0.0); groups.len()],
        stopped: false,
        unfinished: Vec::new(),
    };
    let mut slots = Vec::with_capacity(units.len());
    for (i, u) in units.iter().enumerate() {
        match group_of(&u.group) {
            Some(g) => {
                state.waiting[g].push_back(i);
                state.done[g].2 += 1;
                state.done[g].3 += u.cost.max(0.0);
                slots.push(Slot { attempts: 0 });
            }
            None => {
                state.unfinished.push(i);
                slots.push(Slot { attempts: 0 });
            }
        }
    }
    let shared = Shared {
        state: Mutex::new(state),
        wake: Condvar::new(),
        slots: Mutex::new(slots),
        results: Mutex::new((0..units.len()).map(|_| None).collect()),
        failed: Mutex::new(Vec::new()),
        stopped: Mutex::new(None),
    };
    let reports: Vec<LaneReport<E>> = std::thread::scope(|scope| {
        let handles: Vec<_> = lanes
            .iter()
            .enumerate()
            .map(|(li, lane)| {
                let g = group_of(&lane.group).unwrap_or(0);
                let (shared, units) = (&shared, &units);
                scope.spawn(move || lane_loop(li, lane, g, units, shared, open, stop, watch, start))
            })
            .collect();
        handles
            .into_iter()
            .zip(lanes)
            .enumerate()
            .map(|(li, (h, lane))| {
                h.join().unwrap_or_else(|_| {
                    // A panicking worker is a lost lane; its unit was put back by the guard.
                    let _ = li;
                    LaneReport {
                        lane: lane.clone(),
                        units: 0,
                        busy: Duration::ZERO,
                        setup: Duration::ZERO,
                        lost: None,
                    }
                })
            })
            .collect()
    });
    let Shared {
        state,
        results,
        failed,
        stopped,
        ..
    } = shared;
    let state = state.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut unfinished = state.unfinished;
    for q in state.waiting {
        unfinished.extend(q);
    }
    unfinished.sort_unstable();
    let mut failed = failed.into_inner().unwrap_or_else(|p| p.into_inner());
    failed.sort_by_key(|(i, _)| *i);
    let mut usage = Usage {
        busy: Vec::new(),
        wall: start.elapsed(),
    };
    let mut lost = Vec::new();
    for (li, r) in reports.into_iter().enumerate() {
        usage.busy.push(Busy {
            lane: r.lane,
            units: r.units,
            busy: r.busy,
            setup: r.setup,
            lost: r.lost.is_some(),
        });
        lost.extend(r.lost.map(|e| (li, e)));
    }
    Outcome {
        results: results.into_inner().unwrap_or_else(|p| p.into_inner()),
        failed,
        unfinished,
        lost,
        stopped: stopped.into_inner().unwrap_or_else(|p| p.into_inner()),
        usage,
    }
}

struct Shared<R, E> {
    state: Mutex<State>,
    wake: Condvar,
    slots: Mutex<Vec<Slot>>,
    results: Mutex<Vec<Option<R>>>,
    failed: Mutex<Vec<(usize, E)>>,
    stopped: Mutex<Option<E>>,
}

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    // A poisoned lock only means a worker panicked; the data is still consistent (every update
    // is a single push or assignment).
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<R, E> Shared<R, E> {
    /// The next unit for a lane of group `g`: waits while units of the group are running (one
    /// may come back), `None` when none is left or the run stopped.
    fn take(&self, g: usize, stop: &dyn Fn() -> bool) -> Option<usize> {
        let mut st = lock(&self.state);
        loop {
            if st.stopped || stop() {
                st.stopped = true;
                self.wake.notify_all();
                return None;
            }
            if let Some(i) = st.waiting[g].pop_front() {
                st.running[g] += 1;
                return Some(i);
            }
            if st.running[g] == 0 {
                return None;
            }
            // Wake now and then to see an outside stop.
            st = match self.wake.wait_timeout(st, Duration::from_millis(200)) {
                Ok((s, _)) => s,
                Err(p) => p.into_inner().0,
            };
        }
    }

    fn finish(&self, g: usize, cost: f64) {
        let mut st = lock(&self.state);
        st.running[g] = st.running[g].saturating_sub(1);
        st.done[g].0 += 1;
        st.done[g].1 += cost;
        self.wake.notify_all();
    }

    /// Unit `i` of group `g` comes back from a lost lane: to the front of the queue, unless
    /// it has already lost a device, or no lane of the group is left to take it.
    fn put_back(&self, g: usize, i: usize) -> bool {
        let again = {
            let mut slots = lock(&self.slots);
            slots[i].attempts += 1;
            slots[i].attempts < 2
        };
        let mut st = lock(&self.state);
        st.running[g] = st.running[g].saturating_sub(1);
        st.alive[g] = st.alive[g].saturating_sub(1);
        let requeued = again && st.alive[g] > 0;
        if requeued {
            st.waiting[g].push_front(i);
        } else {
            st.unfinished.push(i);
        }
        self.leave_if_orphaned(&mut st, g);
        self.wake.notify_all();
        requeued
    }

    /// A lane of group `g` is gone with no unit in hand.
    fn lane_gone(&self, g: usize) {
        let mut st = lock(&self.state);
        st.alive[g] = st.alive[g].saturating_sub(1);
        self.leave_if_orphaned(&mut st, g);
        self.wake.notify_all();
    }

    fn leave_if_orphaned(&self, st: &mut State, g: usize) {
        if st.alive[g] == 0 {
            let left: Vec<usize> = st.waiting[g].drain(..).collect();
            st.unfinished.extend(left);
        }
    }

    fn standing(&self, g: usize, elapsed: Duration) -> Standing {
        let st = lock(&self.state);
        let (done, done_cost, total, total_cost) = st.done[g];
        let eta = (done > 0 && done_cost > 0.0).then(|| {
            let left = (total_cost - done_cost).max(0.0) / done_cost;
            Duration::from_secs_f64(elapsed.as_secs_f64() * left)
        });
        Standing { done, total, eta }
    }
}

#[allow(clippy::too_many_arguments)]
fn lane_loop<T, R, E, W>(
    li: usize,
    lane: &Lane,
    g: usize,
    units: &[Unit<T>],
    shared: &Shared<R, E>,
    open: &(dyn Fn(usize) -> Result<W, E> + Sync),
    stop: &(dyn Fn() -> bool + Sync),
    watch: &dyn Watch<T>,
    start: Instant,
) -> LaneReport<E>
where
    W: FnMut(usize, &T) -> Result<R, Fault<E>>,
{
    let mut report = LaneReport {
        lane: lane.clone(),
        units: 0,
        busy: Duration::ZERO,
        setup: Duration::ZERO,
        lost: None,
    };
    let t_open = Instant::now();
    let mut worker = match open(li) {
        Ok(w) => w,
        Err(e) => {
            report.setup = t_open.elapsed();
            report.lost = Some(e);
            shared.lane_gone(g);
            watch.lost(li, None, false);
            return report;
        }
    };
    report.setup = t_open.elapsed();
    while let Some(i) = shared.take(g, stop) {
        let unit = &units[i];
        let standing = shared.standing(g, start.elapsed());
        watch.took(li, i, &unit.work, standing);
        let t = Instant::now();
        // A panicking worker must not strand its unit: the guard puts it back.
        let mut guard = PutBack {
            shared,
            g,
            i,
            armed: true,
        };
        let r = worker(i, &unit.work);
        let spent = t.elapsed();
        report.busy += spent;
        match r {
            Ok(r) => {
                guard.armed = false;
                lock(&shared.results)[i] = Some(r);
                report.units += 1;
                shared.finish(g, unit.cost.max(0.0));
                watch.finished(li, i, spent.as_secs_f64());
            }
            Err(Fault::UnitFailed(e)) => {
                guard.armed = false;
                lock(&shared.failed).push((i, e));
                report.units += 1;
                shared.finish(g, unit.cost.max(0.0));
                watch.finished(li, i, spent.as_secs_f64());
            }
            Err(Fault::Stop(e)) => {
                guard.armed = false;
                report.units += 1;
                lock(&shared.stopped).get_or_insert(e);
                lock(&shared.state).stopped = true;
                shared.finish(g, unit.cost.max(0.0));
                watch.finished(li, i, spent.as_secs_f64());
            }
            Err(Fault::DeviceLost(e)) => {
                guard.armed = false;
                report.lost = Some(e);
                let requeued = shared.put_back(g, i);
                watch.lost(li, Some(i), requeued);
                return report;
            }
        }
        drop(guard);
    }
    report
}

/// Puts a unit back when its worker panics (the lane is then lost).
struct PutBack<'a, R, E> {
    shared: &'a Shared<R, E>,
    g: usize,
    i: usize,
    armed: bool,
}

impl<R, E> Drop for PutBack<'_, R, E> {
    fn drop(&mut self) {
        if self.armed {
            self.shared.put_back(self.g, self.i);
        }
    }
}

/// A lane's busy time: what a run returns to show.
#[derive(Debug, Clone, PartialEq)]
pub struct Busy {
    /// The lane.
    pub lane: Lane,
    /// Units it finished.
    pub units: usize,
    /// Time inside units.
    pub busy: Duration,
    /// Time opening the device.
    pub setup: Duration,
    /// Whether it was lost (or could not be opened).
    pub lost: bool,
}

/// How busy the devices of a run were: per device its busy time, against the run's wall time
/// (summed over the phases of a run that has several, e.g. a coverage's pool and grid).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    /// Per device.
    pub busy: Vec<Busy>,
    /// Wall time.
    pub wall: Duration,
}

impl Usage {
    /// Adds a later phase on the same devices (lanes matched by name).
    pub fn add(&mut self, later: Usage) {
        for b in later.busy {
            match self.busy.iter_mut().find(|x| x.lane == b.lane) {
                Some(x) => {
                    x.units += b.units;
                    x.busy += b.busy;
                    x.setup += b.setup;
                    x.lost |= b.lost;
                }
                None => self.busy.push(b),
            }
        }
        self.wall += later.wall;
    }

    /// One line per device: `device 0 (NVIDIA H100): 8 unit(s), busy 30.2 s of 31.0 s wall
    /// (97%), setup 0.4 s`.
    pub fn table(&self) -> String {
        let wall_s = self.wall.as_secs_f64();
        let mut out = String::new();
        for l in &self.busy {
            let busy = l.busy.as_secs_f64();
            out.push_str(&format!(
                "{}: {} unit(s), busy {busy:.1} s of {wall_s:.1} s wall ({:.0}%), setup {:.1} s{}\n",
                l.lane.name,
                l.units,
                100.0 * busy / wall_s.max(1e-9),
                l.setup.as_secs_f64(),
                if l.lost { ", lost" } else { "" }
            ));
        }
        out
    }
}

/// One part of a shape's candidates: those whose index in the plan is `index` modulo `count`
/// (every family is spread over the parts, so parts are of similar size and cost).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Part {
    /// This part, `0..count`.
    pub index: usize,
    /// How many parts the candidates are cut into.
    pub count: usize,
}

impl Part {
    /// The whole list.
    pub const WHOLE: Part = Part { index: 0, count: 1 };

    /// Whether candidate `i` of the plan is in this part.
    pub fn holds(&self, i: usize) -> bool {
        self.count <= 1 || i % self.count == self.index
    }

    /// This part's share of a budget of `n` evaluations (the shares of all parts add up to
    /// `n`; each is at least 1 when `n` is).
    pub fn share(&self, n: usize) -> usize {
        let c = self.count.max(1);
        let s = n / c + usize::from(self.index < n % c);
        if n > 0 {
            s.max(1)
        } else {
            0
        }
    }
}

impl std::fmt::Display for Part {
    /// `part 1 of 2` (counting from 1).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "part {} of {}", self.index + 1, self.count)
    }
}

/// How many parts each of the shapes costing `costs` is cut into for `lanes` identical
/// devices: none is cut while handing out whole shapes, largest first, ends within
/// `tolerance` (e.g. 0.1) of the perfect split of the work; otherwise the shape of the largest
/// piece is cut in one more part (at most `lanes`), each piece also costing `overhead` (the
/// set-up a part repeats), until it does or nothing helps. Deterministic.
pub fn split(costs: &[f64], lanes: usize, tolerance: f64, overhead: f64) -> Vec<usize> {
    let mut parts = vec![1usize; costs.len()];
    if lanes <= 1 || costs.is_empty() {
        return parts;
    }
    let total: f64 = costs.iter().map(|c| c.max(0.0)).sum();
    let ideal = total / lanes as f64;
    loop {
        let span = makespan(costs, &parts, lanes, overhead);
        if span <= ideal * (1.0 + tolerance) + overhead {
            return parts;
        }
        // The shape whose pieces are largest, if it can still be cut.
        let Some(s) = (0..costs.len())
            .filter(|&s| parts[s] < lanes)
            .max_by(|&a, &b| {
                (costs[a] / parts[a] as f64)
                    .total_cmp(&(costs[b] / parts[b] as f64))
                    .then(b.cmp(&a))
            })
        else {
            return parts;
        };
        parts[s] += 1;
        if makespan(costs, &parts, lanes, overhead) >= span {
            parts[s] -= 1;
            return parts;
        }
    }
}

/// The end of handing out the pieces, largest first, each to the lane free first.
fn makespan(costs: &[f64], parts: &[usize], lanes: usize, overhead: f64) -> f64 {
    let mut pieces: Vec<f64> = costs
        .iter()
        .zip(parts)
        .flat_map(|(&c, &k)| std::iter::repeat_n(c.max(0.0) / k as f64 + overhead, k))
        .collect();
    pieces.sort_by(|a, b| b.total_cmp(a));
    let mut load = vec![0.0f64; lanes];
    for p in pieces {
        if let Some(l) = load.iter_mut().min_by(|a, b| a.total_cmp(b)) {
            *l += p;
        }
    }
    load.into_iter().fold(0.0, f64::max)
}

/// The report one device would have made of a shape, from the reports of its parts (all of
/// one GPU model): every candidate's result, and the baseline of the part whose best candidate
/// is the fastest (its time and cuBLAS's were measured in the same process, on the same
/// device). Returns it and the index of that part (whose device is the winner's), or `None`
/// for no parts. Counts add up; wall time is the longest part's; `partial` if any part is.
pub fn merge_parts(mut parts: Vec<TuneReport>) -> Option<(TuneReport, usize)> {
    let best_of = |r: &TuneReport| {
        r.results
            .iter()
            .filter_map(|c| c.median_ms())
            .fold(f64::INFINITY, f64::min)
    };
    let winner = (0..parts.len()).min_by(|&a, &b| {
        best_of(&parts[a])
            .total_cmp(&best_of(&parts[b]))
            .then(a.cmp(&b))
    })?;
    let mut merged = parts[winner].clone();
    merged.results.clear();
    merged.compile_s = 0.0;
    merged.bench_s = 0.0;
    merged.wall_s = 0.0;
    merged.resumed = 0;
    merged.worker_restarts = 0;
    merged.compiled_now = 0;
    merged.partial = false;
    // The families' valid counts are the whole space's in every part's report.
    for p in parts.iter_mut() {
        merged.results.append(&mut p.results);
        merged.compile_s += p.compile_s;
        merged.bench_s += p.bench_s;
        merged.wall_s = merged.wall_s.max(p.wall_s);
        merged.resumed += p.resumed;
        merged.worker_restarts += p.worker_restarts;
        merged.compiled_now += p.compiled_now;
        merged.partial |= p.partial;
    }
    Some((merged, winner))
}

#[cfg(test)]
mod tests;
