//! Isolated execution. Candidates are loaded, validated and timed in a worker process (the
//! `autotune` binary's hidden `__worker` subcommand, or any executable that calls [`serve`]),
//! fed JSON lines over a pipe; the parent compiles and decides. A kernel that faults (the
//! CUDA context is lost for good), hangs past its time limit, or crashes the process kills
//! only the worker: the parent records the failure for that config, starts a new worker and
//! goes on.

use crate::cuda::bench::{Bench, RunError};
use crate::cuda::device::Device;
use crate::cuda::nvrtc::Compiled;
use crate::family::space::Launch;
use crate::measure::outcome::{Failure, Measured, Stage};
use crate::measure::timing::{Stats, TimingSettings};
use crate::measure::verify::ErrorStats;
use crate::problem::{Op, Shape};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The hidden subcommand that makes the `autotune` binary a worker.
pub const WORKER_ARG: &str = "__worker";

/// How long a new worker may take to open the device and build the problem (inputs, reference).
const INIT_LIMIT: Duration = Duration::from_secs(600);
/// How long the cuBLAS baseline may take.
const BASELINE_LIMIT: Duration = Duration::from_secs(120);
/// Lines of a dead worker's stderr kept for the failure reason.
const STDERR_LINES: usize = 6;

/// A message from the parent.
#[derive(Debug, Serialize, Deserialize)]
enum Request {
    /// Open device `device` and build the problem; answered by `Ready`.
    Init {
        device: usize,
        op: Op,
        shape: Shape,
        seed: u64,
        timing: TimingSettings,
    },
    /// Validate and time cuBLAS.
    Baseline,
    /// Load, validate and time one kernel.
    Eval {
        kernel: String,
        /// The cubin, hex-encoded.
        cubin: String,
        launch: Launch,
        best_ms: Option<f64>,
    },
    /// Load and validate one kernel, without timing it.
    Check {
        kernel: String,
        /// The cubin, hex-encoded.
        cubin: String,
        launch: Launch,
    },
}

/// A message from the worker.
#[derive(Debug, Serialize, Deserialize)]
enum Reply {
    Ready,
    Baseline {
        stats: Stats,
        error: ErrorStats,
    },
    /// Largest relative error of a checked kernel, or why it failed.
    Checked(Result<f64, Failure>),
    Outcome(Result<Measured, Failure>),
    /// The worker cannot go on (the context is lost, the device would not open); it exits.
    Fatal(String),
}

/// Runs a worker on `input`/`output` until the input ends, and returns the process exit code.
/// After a fatal error it answers `Reply::Fatal` and returns at once: the CUDA context may be
/// unusable, so the caller should exit without running destructors (`std::process::exit`).
pub fn serve(input: impl BufRead, mut output: impl Write) -> i32 {
    let mut send = |r: &Reply| -> bool {
        serde_json::to_string(r)
            .map(|line| {
                writeln!(output, "{line}")
                    .and_then(|()| output.flush())
                    .is_ok()
            })
            .unwrap_or(false)
    };
    let mut lines = input.lines();
    let Some(Ok(first)) = lines.next() else {
        return 0;
    };
    let (device, op, shape, seed, timing) = match serde_json::from_str(&first) {
        Ok(Request::Init {
            device,
            op,
            shape,
            seed,
            timing,
        }) => (device, op, shape, seed, timing),
        other => {
            send(&Reply::Fatal(format!(
                "protocol: expected Init, got {other:?}"
            )));
            return 2;
        }
    };
    let dev = match Device::open(device) {
        Ok(d) => d,
        Err(e) => {
            send(&Reply::Fatal(e.to_string()));
            return 2;
        }
    };
    let mut bench = match Bench::new(&dev, op, shape, seed, timing) {
        Ok(b) => b,
        Err(e) => {
            send(&Reply::Fatal(e.to_string()));
            return 2;
        }
    };
    if !send(&Reply::Ready) {
        return 2;
    }
    for line in lines {
        let Ok(line) = line else { return 2 };
        let reply = match serde_json::from_str(&line) {
            Ok(Request::Baseline) => match bench.baseline() {
                Ok((stats, error)) => Reply::Baseline { stats, error },
                Err(e) => Reply::Fatal(e.to_string()),
            },
            Ok(Request::Eval {
                kernel,
                cubin,
                launch,
                best_ms,
            }) => match hex_decode(&cubin) {
                None => Reply::Fatal("protocol: the cubin is not valid hex".into()),
                Some(cubin) => match bench.load_cubin(&kernel, &cubin, launch) {
                    Err(f) => Reply::Outcome(Err(f)),
                    Ok(loaded) => match bench.evaluate(&loaded, best_ms) {
                        Ok(outcome) => Reply::Outcome(outcome),
                        Err(e) => Reply::Fatal(e.to_string()),
                    },
                },
            },
            Ok(Request::Check {
                kernel,
                cubin,
                launch,
            }) => match hex_decode(&cubin) {
                None => Reply::Fatal("protocol: the cubin is not valid hex".into()),
                Some(cubin) => match bench.load_cubin(&kernel, &cubin, launch) {
                    Err(f) => Reply::Checked(Err(f)),
                    Ok(loaded) => match bench.check(&loaded) {
                        Ok(outcome) => Reply::Checked(outcome),
                        Err(e) => Reply::Fatal(e.to_string()),
                    },
                },
            },
            other => Reply::Fatal(format!("protocol: unexpected {other:?}")),
        };
        let fatal = matches!(reply, Reply::Fatal(_));
        if !send(&reply) || fatal {
            return 3;
        }
    }
    0
}

/// How the parent runs candidates in workers.
#[derive(Debug, Clone)]
pub struct WorkerSettings {
    /// The executable, started as `exe __worker` (the `autotune` binary).
    pub exe: PathBuf,
    /// The per-candidate time limit never goes below this.
    pub floor: Duration,
    /// The per-candidate limit allows each launch this many times cuBLAS's median.
    pub factor: f64,
}

impl WorkerSettings {
    /// Workers running `exe`, with a limit of `max(50x cuBLAS per launch, 1 s)` per candidate.
    pub fn new(exe: PathBuf) -> WorkerSettings {
        WorkerSettings {
            exe,
            floor: Duration::from_secs(1),
            factor: 50.0,
        }
    }
}

/// One live worker process.
struct WorkerProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    replies: Receiver<Option<String>>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

/// How a request to a worker went wrong.
enum Lost {
    /// No reply in time.
    Timeout(Duration),
    /// The worker exited or closed its output.
    Died(String),
    /// The worker said it cannot go on.
    Fatal(String),
}

impl WorkerProcess {
    fn spawn(exe: &PathBuf) -> Result<WorkerProcess, RunError> {
        let mut child = Command::new(exe)
            .arg(WORKER_ARG)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                RunError::Worker(format!(
                    "could not start {} {WORKER_ARG}: {e}",
                    exe.display()
                ))
            })?;
        let missing = || RunError::Worker("the worker's pipes were not created".into());
        let stdin = child.stdin.take().ok_or_else(missing)?;
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let stderr = child.stderr.take().ok_or_else(missing)?;
        let (tx, replies) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(Some(line)).is_err() {
                    return;
                }
            }
            let _ = tx.send(None);
        });
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let keep = Arc::clone(&tail);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Ok(mut t) = keep.lock() {
                    if t.len() == STDERR_LINES {
                        t.pop_front();
                    }
                    t.push_back(line);
                }
            }
        });
        Ok(WorkerProcess {
            child,
            stdin: Some(stdin),
            replies,
            stderr: tail,
        })
    }

    fn request(&mut self, req: &Request, limit: Duration) -> Result<Reply, Lost> {
        let line = serde_json::to_string(req).map_err(|e| Lost::Died(e.to_string()))?;
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(Lost::Died("the worker's input is closed".into()));
        };
        if writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .is_err()
        {
            return Err(Lost::Died(self.death()));
        }
        match self.replies.recv_timeout(limit) {
            Ok(Some(line)) => match serde_json::from_str(&line) {
                Ok(Reply::Fatal(reason)) => Err(Lost::Fatal(reason)),
                Ok(r) => Ok(r),
                Err(e) => Err(Lost::Died(format!("garbled reply ({e}): {line}"))),
            },
            Ok(None) | Err(RecvTimeoutError::Disconnected) => Err(Lost::Died(self.death())),
            Err(RecvTimeoutError::Timeout) => Err(Lost::Timeout(limit)),
        }
    }

    /// Waits briefly for the exit status and describes how the worker died.
    fn death(&mut self) -> String {
        let deadline = Instant::now() + Duration::from_secs(5);
        let status = loop {
            match self.child.try_wait() {
                Ok(Some(s)) => break s.to_string(),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => break "no exit status".to_string(),
            }
        };
        // Give the stderr reader a moment to collect the last lines.
        std::thread::sleep(Duration::from_millis(50));
        let tail = self
            .stderr
            .lock()
            .map(|t| t.iter().cloned().collect::<Vec<_>>().join(" | "))
            .unwrap_or_default();
        if tail.is_empty() {
            format!("the worker process died ({status})")
        } else {
            format!("the worker process died ({status}): {tail}")
        }
    }

    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        // Closing stdin ends the worker's loop; one that does not exit in time is killed.
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A problem benchmarked in worker processes, restarted after every fatal candidate.
pub struct Isolated {
    settings: WorkerSettings,
    device: usize,
    op: Op,
    shape: Shape,
    seed: u64,
    timing: TimingSettings,
    proc: Option<WorkerProcess>,
    baseline_ms: Option<f64>,
    restarts: u32,
}

impl Isolated {
    /// A bench for `op` on `shape` on device `device`, run by workers; the first worker starts
    /// at the first request.
    pub fn new(
        settings: WorkerSettings,
        device: usize,
        op: Op,
        shape: Shape,
        seed: u64,
        timing: TimingSettings,
    ) -> Isolated {
        Isolated {
            settings,
            device,
            op,
            shape,
            seed,
            timing,
            proc: None,
            baseline_ms: None,
            restarts: 0,
        }
    }

    /// How many times a worker was replaced after a fatal candidate.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// The time limit of one candidate: its launches (validation, warm-up, estimate, samples)
    /// at `factor` times cuBLAS each, and at least `floor`.
    pub fn candidate_limit(&self) -> Duration {
        let launches = 2.0 + f64::from(self.timing.warmup) + f64::from(self.timing.max_samples);
        let per = self.baseline_ms.unwrap_or(0.0) * self.settings.factor * launches / 1000.0;
        self.settings.floor + Duration::from_secs_f64(per.clamp(0.0, 3600.0))
    }

    fn worker(&mut self) -> Result<&mut WorkerProcess, RunError> {
        if self.proc.is_none() {
            let mut p = WorkerProcess::spawn(&self.settings.exe)?;
            let init = Request::Init {
                device: self.device,
                op: self.op,
                shape: self.shape,
                seed: self.seed,
                timing: self.timing,
            };
            match p.request(&init, INIT_LIMIT) {
                Ok(Reply::Ready) => {}
                Ok(other) => {
                    return Err(RunError::Worker(format!(
                        "protocol: expected Ready, got {other:?}"
                    )))
                }
                Err(Lost::Fatal(reason)) | Err(Lost::Died(reason)) => {
                    return Err(RunError::Worker(reason))
                }
                Err(Lost::Timeout(d)) => {
                    p.kill();
                    return Err(RunError::Worker(format!(
                        "the worker did not set up the problem within {} s",
                        d.as_secs()
                    )));
                }
            }
            self.proc = Some(p);
        }
        self.proc
            .as_mut()
            .ok_or_else(|| RunError::Worker("no worker".into()))
    }

    /// Validates and times cuBLAS in a worker. Any failure stops the run: every result is
    /// compared with it.
    pub fn baseline(&mut self) -> Result<(Stats, ErrorStats), RunError> {
        let reply = self.worker()?.request(&Request::Baseline, BASELINE_LIMIT);
        match reply {
            Ok(Reply::Baseline { stats, error }) => {
                self.baseline_ms = Some(stats.median_ms);
                Ok((stats, error))
            }
            Ok(other) => Err(RunError::Worker(format!(
                "protocol: expected Baseline, got {other:?}"
            ))),
            Err(Lost::Fatal(r)) | Err(Lost::Died(r)) => {
                self.proc = None;
                Err(RunError::Worker(format!("the cuBLAS baseline failed: {r}")))
            }
            Err(Lost::Timeout(d)) => {
                if let Some(p) = self.proc.take() {
                    p.kill();
                }
                Err(RunError::Worker(format!(
                    "the cuBLAS baseline took more than {} s",
                    d.as_secs()
                )))
            }
        }
    }

    /// Loads, validates and times one candidate in the worker. A candidate that kills the
    /// worker (fault, hang, crash) is a [`Failure`]; only a worker that cannot be started or
    /// set up again is an error.
    pub fn evaluate(
        &mut self,
        compiled: &Compiled,
        launch: Launch,
        best_ms: Option<f64>,
    ) -> Result<Result<Measured, Failure>, RunError> {
        let req = Request::Eval {
            kernel: compiled.kernel_name.clone(),
            cubin: hex_encode(&compiled.cubin),
            launch,
            best_ms,
        };
        self.candidate(&req, self.candidate_limit(), |reply| match reply {
            Reply::Outcome(o) => Ok(o),
            other => Err(other),
        })
    }

    /// Loads and validates one kernel in the worker, without timing it: its largest relative
    /// error, or why it failed (a fault, hang or crash included).
    pub fn check(
        &mut self,
        compiled: &Compiled,
        launch: Launch,
    ) -> Result<Result<f64, Failure>, RunError> {
        let req = Request::Check {
            kernel: compiled.kernel_name.clone(),
            cubin: hex_encode(&compiled.cubin),
            launch,
        };
        // One launch and a comparison: the timing budget of a candidate, at least 10 s.
        let limit = self.candidate_limit().max(Duration::from_secs(10));
        self.candidate(&req, limit, |reply| match reply {
            Reply::Checked(o) => Ok(o),
            other => Err(other),
        })
    }

    /// Sends one candidate's request; a reply `expected` does not take, or a worker lost on
    /// the way, is that candidate's failure, and the worker is replaced.
    fn candidate<T>(
        &mut self,
        req: &Request,
        limit: Duration,
        expected: impl FnOnce(Reply) -> Result<Result<T, Failure>, Reply>,
    ) -> Result<Result<T, Failure>, RunError> {
        let reply = self.worker()?.request(req, limit);
        let failure = match reply.map(expected) {
            Ok(Ok(outcome)) => return Ok(outcome),
            Ok(Err(other)) => Failure {
                stage: Stage::Crash,
                reason: format!("protocol: unexpected reply {other:?}"),
            },
            Err(Lost::Fatal(reason)) => Failure {
                stage: Stage::Crash,
                reason,
            },
            Err(Lost::Died(reason)) => Failure {
                stage: Stage::Crash,
                reason,
            },
            Err(Lost::Timeout(d)) => Failure {
                stage: Stage::Timeout,
                reason: format!(
                    "ran past its time limit of {:.1} s (max({}x cuBLAS per launch, {} s)); the worker was killed",
                    d.as_secs_f64(),
                    self.settings.factor,
                    self.settings.floor.as_secs_f64()
                ),
            },
        };
        if let Some(p) = self.proc.take() {
            p.kill();
        }
        self.restarts += 1;
        Ok(Err(failure))
    }
}

fn hex_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(DIGITS[usize::from(b >> 4)] as char);
        s.push(DIGITS[usize::from(b & 15)] as char);
    }
    s
}

fn hex_decode(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    s.as_bytes()
        .chunks(2)
        .map(|p| Some(digit(p[0])? << 4 | digit(p[1])?))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip() {
        let bytes: Vec<u8> = (0..=255).collect();
        assert_eq!(hex_decode(&hex_encode(&bytes)).unwrap(), bytes);
        assert_eq!(hex_decode("abc"), None);
        assert_eq!(hex_decode("zz"), None);
    }

    #[test]
    fn serve_rejects_a_stream_that_does_not_start_with_init() {
        let mut out = Vec::new();
        let code = serve(&b"\"Baseline\"\n"[..], &mut out);
        assert_eq!(code, 2);
        let reply: Reply = serde_json::from_slice(&out).unwrap();
        assert!(matches!(reply, Reply::Fatal(m) if m.contains("expected Init")));
        // An empty input is a clean exit.
        assert_eq!(serve(&b""[..], &mut Vec::new()), 0);
    }

    #[test]
    fn limit_grows_with_the_baseline_and_has_a_floor() {
        let mut iso = Isolated::new(
            WorkerSettings::new("autotune".into()),
            0,
            Op::Gemm,
            Shape::mnk(8, 8, 8),
            1,
            TimingSettings::default(),
        );
        assert_eq!(iso.candidate_limit(), Duration::from_secs(1));
        iso.baseline_ms = Some(10.0);
        // 55 launches at 50 x 10 ms = 27.5 s, plus the floor.
        let l = iso.candidate_limit().as_secs_f64();
        assert!((l - 28.5).abs() < 1e-9, "{l}");
    }

    #[test]
    fn a_worker_that_cannot_start_is_an_error_not_a_failure() {
        let mut iso = Isolated::new(
            WorkerSettings::new("/nonexistent/autotune".into()),
            0,
            Op::Gemm,
            Shape::mnk(8, 8, 8),
            1,
            TimingSettings::quick(),
        );
        let e = iso.baseline().unwrap_err().to_string();
        assert!(e.contains("could not start"), "{e}");
    }
}
