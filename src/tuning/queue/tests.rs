use super::*;
use crate::measure::outcome::{Failure, Measured, Stage};
use crate::measure::timing::Stats;
use crate::plan::outcome::CandidateResult;
use crate::problem::{Op, Shape};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::sleep;

fn lanes(groups: &[&str]) -> Vec<Lane> {
    groups
        .iter()
        .enumerate()
        .map(|(i, g)| Lane {
            name: format!("device {i}"),
            group: g.to_string(),
        })
        .collect()
}

fn units(n: usize, group: &str) -> Vec<Unit<usize>> {
    (0..n)
        .map(|i| Unit {
            group: group.to_string(),
            cost: 1.0,
            work: i,
        })
        .collect()
}

/// Per unit, how many times a worker started it.
fn counters(n: usize) -> Vec<AtomicUsize> {
    (0..n).map(|_| AtomicUsize::new(0)).collect()
}

type Worker<'a> = Box<dyn FnMut(usize, &usize) -> Result<usize, Fault<String>> + 'a>;

/// `n` units of group `a` on lanes of `groups`, never stopped from outside.
fn go<'a>(
    groups: &[&str],
    n: usize,
    open: &(dyn Fn(usize) -> Result<Worker<'a>, String> + Sync),
) -> Outcome<usize, String> {
    run(&lanes(groups), units(n, "a"), open, &|| false, &Quiet)
}

#[test]
fn each_unit_is_handed_out_once_and_fast_devices_do_more() {
    let n = 60;
    let runs = counters(n);
    // Three devices: 1, 3 and 9 ms a unit.
    let pace = [1u64, 3, 9];
    let open = |lane: usize| -> Result<Worker<'_>, String> {
        let runs = &runs;
        Ok(Box::new(move |_, &u| {
            runs[u].fetch_add(1, Ordering::SeqCst);
            sleep(Duration::from_millis(pace[lane]));
            Ok(lane)
        }))
    };
    let out = go(&["a", "a", "a"], n, &open);
    assert!(runs.iter().all(|c| c.load(Ordering::SeqCst) == 1));
    assert!(out.results.iter().all(Option::is_some));
    assert!(out.unfinished.is_empty() && out.failed.is_empty() && out.stopped.is_none());
    let by_lane: Vec<usize> = (0..3)
        .map(|l| out.results.iter().filter(|r| **r == Some(l)).count())
        .collect();
    assert_eq!(by_lane.iter().sum::<usize>(), n);
    assert_eq!(
        by_lane,
        out.usage.busy.iter().map(|l| l.units).collect::<Vec<_>>()
    );
    assert!(
        by_lane[0] > by_lane[1] && by_lane[1] > by_lane[2],
        "{by_lane:?}"
    );
}

#[test]
fn a_lost_device_leaves_its_units_to_the_others() {
    let n = 30;
    let runs = counters(n);
    let open = |lane: usize| -> Result<Worker<'_>, String> {
        let runs = &runs;
        let mut taken = 0;
        Ok(Box::new(move |_, &u| {
            runs[u].fetch_add(1, Ordering::SeqCst);
            sleep(Duration::from_millis(2));
            taken += 1;
            if lane == 1 && taken == 3 {
                return Err(Fault::DeviceLost(format!(
                    "device 1 fell off the bus at {u}"
                )));
            }
            Ok(lane)
        }))
    };
    let out = go(&["a", "a", "a"], n, &open);
    // Every unit has a result, none from the lost device's third unit onwards.
    assert!(out.results.iter().all(Option::is_some), "{:?}", out.results);
    assert!(out.unfinished.is_empty());
    assert_eq!(out.usage.busy[1].units, 2);
    assert!(out.usage.busy[1].lost);
    assert_eq!(out.lost.len(), 1);
    assert!(out.lost[0].0 == 1 && out.lost[0].1.contains("fell off"));
    // The unit in flight ran twice (there and elsewhere); every other once.
    let twice: Vec<usize> = (0..n)
        .filter(|&u| runs[u].load(Ordering::SeqCst) == 2)
        .collect();
    assert_eq!(twice.len(), 1);
    assert!(out.results[twice[0]].is_some_and(|l| l != 1));
    assert_eq!(
        (0..n)
            .filter(|&u| runs[u].load(Ordering::SeqCst) == 1)
            .count(),
        n - 1
    );
}

#[test]
fn a_unit_that_loses_two_devices_is_given_up() {
    let n = 12;
    let open = |lane: usize| -> Result<Worker<'_>, String> {
        Ok(Box::new(move |_, &u| {
            sleep(Duration::from_millis(1));
            if u == 0 {
                return Err(Fault::DeviceLost(format!("unit 0 broke device {lane}")));
            }
            Ok(lane)
        }))
    };
    let out = go(&["a", "a", "a"], n, &open);
    assert_eq!(out.unfinished, vec![0]);
    assert_eq!(out.lost.len(), 2);
    assert_eq!(out.usage.busy.iter().filter(|l| l.lost).count(), 2);
    assert!(out.results[1..].iter().all(Option::is_some));
}

#[test]
fn failed_units_are_recorded_and_the_device_goes_on() {
    let open = |lane: usize| -> Result<Worker<'_>, String> {
        Ok(Box::new(move |_, &u| {
            if u % 4 == 0 {
                Err(Fault::UnitFailed(format!("unit {u}: every config pruned")))
            } else {
                Ok(lane)
            }
        }))
    };
    let out = go(&["a", "a"], 10, &open);
    assert_eq!(
        out.failed.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        vec![0, 4, 8]
    );
    assert!(out.lost.is_empty());
    assert_eq!(out.results.iter().filter(|r| r.is_some()).count(), 7);
    assert_eq!(out.usage.busy.iter().map(|l| l.units).sum::<usize>(), 10);
}

#[test]
fn a_stop_ends_the_handing_out() {
    let runs = counters(20);
    let open = |lane: usize| -> Result<Worker<'_>, String> {
        let runs = &runs;
        Ok(Box::new(move |_, &u| {
            runs[u].fetch_add(1, Ordering::SeqCst);
            sleep(Duration::from_millis(2));
            if u == 3 {
                return Err(Fault::Stop("interrupted".to_string()));
            }
            Ok(lane)
        }))
    };
    let out = go(&["a", "a"], 20, &open);
    assert_eq!(out.stopped.as_deref(), Some("interrupted"));
    let ran: usize = runs.iter().map(|c| c.load(Ordering::SeqCst)).sum();
    // Unit 3 and at most the one the other lane was running.
    assert!(ran <= 5, "{ran} units ran");
    assert_eq!(out.unfinished.len(), 20 - ran);
    // An outside stop (Ctrl-C) before anything: nothing runs.
    let out: Outcome<usize, String> = run(&lanes(&["a"]), units(5, "a"), &open, &|| true, &Quiet);
    assert_eq!(out.unfinished.len(), 5);
}

#[test]
fn lanes_take_only_their_groups_units() {
    let open = |lane: usize| -> Result<Worker<'_>, String> { Ok(Box::new(move |_, _| Ok(lane))) };
    let mut all = units(6, "h100");
    all.extend(units(4, "a100"));
    all.extend(units(2, "t4"));
    let out = run(
        &lanes(&["h100", "a100", "h100"]),
        all,
        &open,
        &|| false,
        &Quiet,
    );
    for (i, r) in out.results.iter().enumerate() {
        match i {
            0..=5 => assert!(matches!(r, Some(0 | 2)), "{i}: {r:?}"),
            6..=9 => assert_eq!(*r, Some(1)),
            _ => assert!(r.is_none()),
        }
    }
    // No lane of the T4's group: its units are left.
    assert_eq!(out.unfinished, vec![10, 11]);
}

#[test]
fn a_device_that_cannot_be_opened_leaves_everything_to_the_others() {
    let open = |lane: usize| -> Result<Worker<'_>, String> {
        if lane == 0 {
            return Err("device 0: CUDA_ERROR_NO_DEVICE".to_string());
        }
        Ok(Box::new(move |_, _| Ok(lane)))
    };
    let out = go(&["a", "a"], 8, &open);
    assert!(out.results.iter().all(|r| *r == Some(1)));
    assert!(out.usage.busy[0].lost && out.usage.busy[0].units == 0);
    assert!(out.lost[0].1.contains("NO_DEVICE"));
}

#[test]
fn busy_time_is_the_time_inside_units() {
    // Lane 0 works 20 units of 5 ms; lane 1 only gets units once lane 0 has taken its share:
    // both are busy nearly the whole run, and never more than it.
    let open = |_: usize| -> Result<Worker<'_>, String> {
        Ok(Box::new(|_, &u| {
            sleep(Duration::from_millis(5));
            Ok(u)
        }))
    };
    let out = go(&["a", "a"], 20, &open);
    let wall = out.usage.wall;
    for l in &out.usage.busy {
        let want = Duration::from_millis(5) * l.units as u32;
        assert!(l.busy >= want, "{l:?}");
        assert!(l.busy <= wall, "{l:?} wall {wall:?}");
    }
    let table = out.usage.table();
    assert_eq!(table.lines().count(), 2, "{table}");
    for (line, l) in table.lines().zip(&out.usage.busy) {
        let pct = 100.0 * l.busy.as_secs_f64() / wall.as_secs_f64();
        assert!(line.starts_with(&format!("{}: {} unit(s), busy ", l.lane.name, l.units)));
        assert!(line.contains(&format!("wall ({pct:.0}%)")), "{line}");
    }
    // An idle lane: one slow unit, the rest to the other lane.
    let open = |lane: usize| -> Result<Worker<'_>, String> {
        Ok(Box::new(move |_, &u| {
            sleep(Duration::from_millis(if u == 0 { 60 } else { 2 }));
            Ok(lane)
        }))
    };
    let mut us = units(5, "a");
    us[0].cost = 30.0;
    let out = run(&lanes(&["a", "a"]), us, &open, &|| false, &Quiet);
    let (slow, fast) = if out.results[0] == Some(0) {
        (&out.usage.busy[0], &out.usage.busy[1])
    } else {
        (&out.usage.busy[1], &out.usage.busy[0])
    };
    assert_eq!(slow.units, 1);
    assert_eq!(fast.units, 4);
    assert!(fast.busy < slow.busy / 2, "{fast:?} {slow:?}");
}

#[test]
fn the_watch_sees_each_unit_taken_and_finished() {
    struct Count(AtomicUsize, AtomicUsize, Mutex<Vec<Standing>>);
    impl Watch<usize> for Count {
        fn took(&self, _: usize, _: usize, _: &usize, s: Standing) {
            self.0.fetch_add(1, Ordering::SeqCst);
            lock(&self.2).push(s);
        }
        fn finished(&self, _: usize, _: usize, _: f64) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }
    let w = Count(AtomicUsize::new(0), AtomicUsize::new(0), Mutex::new(vec![]));
    let open = |lane: usize| -> Result<Worker<'_>, String> {
        Ok(Box::new(move |_, _| {
            sleep(Duration::from_millis(1));
            Ok(lane)
        }))
    };
    let _ = run(&lanes(&["a"]), units(7, "a"), &open, &|| false, &w);
    assert_eq!(w.0.load(Ordering::SeqCst), 7);
    assert_eq!(w.1.load(Ordering::SeqCst), 7);
    let seen = lock(&w.2).clone();
    assert_eq!(seen[0].done, 0);
    assert!(seen[0].eta.is_none());
    assert_eq!(seen[6].done, 6);
    assert_eq!(seen[6].total, 7);
    assert!(seen[6].eta.is_some());
}

#[test]
fn whole_shapes_when_they_balance_parts_when_they_do_not() {
    // Eight equal shapes on two devices: four each, nothing cut.
    assert_eq!(split(&[1.0; 8], 2, 0.1, 0.05), vec![1; 8]);
    assert_eq!(split(&[1.0; 24], 4, 0.1, 0.05), vec![1; 24]);
    // One shape on two devices: cut in two; on four, in four.
    assert_eq!(split(&[10.0], 2, 0.1, 0.05), vec![2]);
    assert_eq!(split(&[10.0], 4, 0.1, 0.05), vec![4]);
    // Three equal shapes on two: one is cut, so both devices end together.
    let p = split(&[1.0; 3], 2, 0.1, 0.05);
    assert_eq!(p.iter().filter(|&&k| k == 2).count(), 1, "{p:?}");
    // The big shape of the issue (8192^3 beside seven small ones) is cut.
    let p = split(
        &[1100.0, 137.0, 69.0, 69.0, 60.0, 52.0, 51.0, 50.0],
        2,
        0.1,
        5.0,
    );
    assert_eq!(p[0], 2, "{p:?}");
    // One device: nothing to cut.
    assert_eq!(split(&[5.0, 1.0], 1, 0.1, 0.0), vec![1, 1]);
    // Never more parts than devices.
    assert!(split(&[100.0, 1.0], 3, 0.0, 0.0).iter().all(|&k| k <= 3));
}

#[test]
fn parts_cover_the_candidates_once_and_share_a_budget() {
    for count in 1..=5 {
        for n in [0usize, 1, 7, 100] {
            for i in 0..n {
                let holders = (0..count)
                    .filter(|&index| Part { index, count }.holds(i))
                    .count();
                assert_eq!(holders, 1);
            }
            let shares: usize = (0..count).map(|index| Part { index, count }.share(n)).sum();
            if n >= count {
                assert_eq!(shares, n, "{n} over {count}");
            }
        }
    }
    assert_eq!(Part { index: 0, count: 2 }.to_string(), "part 1 of 2");
    assert!(Part::WHOLE.holds(41));
}

fn measured(ms: f64) -> Result<Measured, Failure> {
    Ok(Measured {
        stats: Stats::from_samples(&[ms, ms, ms]).unwrap(),
        max_rel_error: 1e-6,
        mean_rel_error: None,
        registers: 64,
        local_bytes: 0,
    })
}

fn report(times: &[(usize, Option<f64>)], cublas_ms: f64) -> TuneReport {
    let results = times
        .iter()
        .map(|&(i, t)| CandidateResult {
            family: "gemm_tile2d".to_string(),
            kernel: format!("k{i}"),
            params: BTreeMap::from([("BM".to_string(), i as i64)]),
            outcome: match t {
                Some(ms) => measured(ms),
                None => Err(Failure {
                    stage: Stage::Validate,
                    reason: "wrong".into(),
                }),
            },
        })
        .collect();
    TuneReport {
        op: Op::Gemm,
        shape: Shape::mnk(4096, 4096, 4096),
        gpu: crate::db::fixtures::gpu("NVIDIA H100 80GB HBM3"),
        families: Vec::new(),
        strategy: "exhaustive".to_string(),
        baseline: Stats::from_samples(&[cublas_ms]).unwrap(),
        baseline_error: 1e-6,
        baseline_mean_error: None,
        results,
        seed: 1,
        tolerance: 1e-4,
        compile_s: 1.0,
        bench_s: 2.0,
        wall_s: 3.0,
        checksums: BTreeMap::new(),
        revisions: BTreeMap::new(),
        deterministic: BTreeMap::new(),
        maths: BTreeMap::new(),
        partial: false,
        resumed: 0,
        worker_restarts: 0,
        journal: None,
        compiled_now: 4,
    }
}

#[test]
fn parts_merge_into_the_winner_one_device_picks() {
    // Candidate i's time on one device; 5 and 11 fail.
    let time = |i: usize| -> Option<f64> {
        (i != 5 && i != 11).then(|| 1.0 + ((i * 7919) % 23) as f64 / 10.0)
    };
    let n = 24;
    let whole = report(&(0..n).map(|i| (i, time(i))).collect::<Vec<_>>(), 1.5);
    let one = whole.to_entry("now").unwrap();
    for count in 2..=4 {
        let parts: Vec<TuneReport> = (0..count)
            .map(|index| {
                let p = Part { index, count };
                let mine: Vec<_> = (0..n)
                    .filter(|&i| p.holds(i))
                    .map(|i| (i, time(i)))
                    .collect();
                report(&mine, 1.5 + index as f64 * 0.01)
            })
            .collect();
        let (merged, winner) = merge_parts(parts).unwrap();
        let e = merged.to_entry("now").unwrap();
        assert_eq!(
            (e.kernel.as_str(), e.median_ms),
            (one.kernel.as_str(), one.median_ms)
        );
        assert!(Part {
            index: winner,
            count
        }
        .holds(one.kernel.trim_start_matches('k').parse().unwrap()));
        // The winner's own cuBLAS time is its baseline.
        assert_eq!(e.cublas_median_ms, 1.5 + winner as f64 * 0.01);
        assert_eq!((e.tried, e.failed), (one.tried, one.failed));
        assert_eq!(merged.compiled_now, 4 * count);
        assert_eq!(merged.wall_s, 3.0);
    }
    assert!(merge_parts(Vec::new()).is_none());
}

#[test]
fn usage_adds_up_phases_per_device() {
    let lane = |i: usize| Lane {
        name: format!("device {i}"),
        group: "a".into(),
    };
    let busy = |i: usize, units: usize, ms: u64| Busy {
        lane: lane(i),
        units,
        busy: Duration::from_millis(ms),
        setup: Duration::ZERO,
        lost: false,
    };
    let mut u = Usage {
        busy: vec![busy(0, 2, 100), busy(1, 1, 50)],
        wall: Duration::from_millis(120),
    };
    u.add(Usage {
        busy: vec![busy(1, 3, 200), busy(0, 1, 10)],
        wall: Duration::from_millis(210),
    });
    assert_eq!(u.busy[0].units, 3);
    assert_eq!(u.busy[0].busy, Duration::from_millis(110));
    assert_eq!(u.busy[1].units, 4);
    assert_eq!(u.busy[1].busy, Duration::from_millis(250));
    assert_eq!(u.wall, Duration::from_millis(330));
    assert!(u
        .table()
        .contains("device 1: 4 unit(s), busy 0.2 s of 0.3 s wall (76%)"));
}
