//! Loads, validates and times candidates on a GPU, and times cuBLAS the same way in the same
//! process as the baseline.
//!
//! A [`Bench`] owns one problem: random inputs (seeded), the output buffer, the float64
//! reference and an L2-flush buffer. Every timed sample is: flush L2, record a start event,
//! (zero the output or the workspace if the family needs it every launch,) launch, record an
//! end event. All samples are queued before one synchronisation, so host launch overhead never
//! shows in the numbers.
//!
//! A family with a workspace ([`Launch::workspace_bytes`]) gets one buffer, grown as needed
//! and shared by the candidates one after the other. Validation zeroes it first (a workspace
//! zeroed `once` is not zeroed again while timing: the kernel promises to leave it zeroed), and
//! launches such a kernel twice on it, checking both outputs, so a kernel that breaks that
//! promise fails instead of being timed on a dirty workspace.

pub use crate::cuda::baseline::{
    cublas_call, fp32_blas, general_gemm, general_gemv, row_major_gemm, row_major_gemv,
};
use crate::cuda::baseline::{gpu_dgemm_reference, gpu_general_reference};
use crate::cuda::cublas_lib::{self, Blas};
use crate::cuda::device::{Device, DriverContext};
pub use crate::cuda::error::RunError;
use crate::cuda::launch::{launch, load_function};
use crate::cuda::nvrtc::Compiled;
use crate::family::space::{Launch, WorkspaceZero};
use crate::measure::outcome::{Failure, Measured, Stage};
use crate::measure::timing::{Stats, TimingSettings};
use crate::measure::verify::{self, ErrorStats};
use crate::problem::{Call, Op, Shape};
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaFunction, CudaSlice, DevicePtrMut};
use std::time::{Duration, Instant};

/// Largest `M*N*K` whose GEMM reference is computed on the CPU; larger ones use cuBLAS DGEMM.
const CPU_REFERENCE_MAX_MACS: u64 = 1 << 27;

/// Floats of guard region before and after the output buffer (64 KiB each): a kernel that
/// writes out of bounds changes them and fails validation instead of silently corrupting
/// memory another buffer owns.
const GUARD: usize = 16 * 1024;

/// The guard regions' bit pattern: the padding's ([`verify::CANARY`]).
const CANARY: u32 = verify::CANARY;

/// A kernel loaded into the context, ready to launch.
pub struct Loaded {
    func: CudaFunction,
    launch: Launch,
    name: String,
    registers: i32,
    local_bytes: i32,
}

impl Loaded {
    /// The kernel name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The same loaded kernel with another launch (another shape): a module is loaded once
    /// and runs on many problems, as in a product.
    pub fn with_launch(&self, launch: Launch) -> Loaded {
        Loaded {
            func: self.func.clone(),
            launch,
            name: self.name.clone(),
            registers: self.registers,
            local_bytes: self.local_bytes,
        }
    }
}

enum Work<'k> {
    Cublas,
    Kernel(&'k Loaded),
}

/// One problem on one GPU: inputs, output, reference, baseline.
pub struct Bench<'d> {
    dev: &'d Device,
    op: Op,
    shape: Shape,
    a: CudaSlice<f32>,
    b: CudaSlice<f32>,
    /// The output with [`GUARD`] canary floats on each side; kernels see the middle.
    out: CudaSlice<f32>,
    flush: Option<CudaSlice<u8>>,
    /// The workspace of the kernels that take one, grown to the largest asked for.
    workspace: Option<CudaSlice<u8>>,
    reference: Vec<f64>,
    bound: Vec<f64>,
    /// The full interface's arguments of this problem ([`Shape::tuning_call`]).
    call: Call,
    /// For a problem of another form than the plain one: the output as it is before each
    /// validation (C's old values where beta reads them, NaN where it does not, canaries in
    /// the padding between rows). Empty for the plain form (the output is NaN-poisoned).
    before: Vec<f32>,
    blas: Blas,
    events: Vec<(CudaEvent, CudaEvent)>,
    settings: TimingSettings,
    seed: u64,
    tolerance: f64,
    /// When the last timed sample was taken: after [`IDLE`] the clocks may have dropped.
    last_timed: Option<Instant>,
}

/// How long the GPU may sit idle (a compile, a validation on the host) before its clocks are
/// assumed down: an idle Hopper GPU lowers its SM clock (345 MHz idle against 1980 MHz under
/// load, read on an H200 here), and kernels of a few microseconds timed right after a compile
/// were seen up to 4.5x slow, normal when timed again (a 5 us gemv at 22.8 us, 0.300x cuBLAS
/// then 1.138x; a 9 us one at 0.618x then 0.943x).
const IDLE: Duration = Duration::from_millis(20);
/// How long a warm-up burst keeps the GPU busy before timing after [`IDLE`].
const RAMP: Duration = Duration::from_millis(3);

impl<'d> Bench<'d> {
    /// Bytes of device memory a bench for `op` on `shape` needs on `dev`.
    pub fn memory_needed(dev: &Device, op: Op, shape: Shape) -> u64 {
        let buffers = shape.buffer_bytes(op);
        let flush = 2 * dev.info.l2_bytes;
        let gpu_ref = if op == Op::Gemm && gpu_reference(shape) {
            2 * buffers
        } else {
            0
        };
        buffers + flush + gpu_ref + (64 << 20)
    }

    /// Fails with [`RunError::TooLarge`] when a bench for `op` on `shape` cannot fit in the
    /// device's free memory.
    pub fn check_fits(dev: &Device, op: Op, shape: Shape) -> Result<(), RunError> {
        let need = Self::memory_needed(dev, op, shape);
        let free = dev.free_memory()?;
        if need > free {
            return Err(RunError::TooLarge {
                shape: shape.label(op),
                need_mib: need >> 20,
                free_mib: free >> 20,
                ordinal: dev.info.ordinal,
            });
        }
        Ok(())
    }

    /// Allocates and fills the problem, computes the reference. `seed` picks the inputs.
    pub fn new(
        dev: &'d Device,
        op: Op,
        shape: Shape,
        seed: u64,
        settings: TimingSettings,
    ) -> Result<Bench<'d>, RunError> {
        Self::check_fits(dev, op, shape)?;
        // Before allocating anything: no cuBLAS, no baseline (AUTOTUNE_CUBLAS chooses it).
        cublas_lib::get()?;
        let (m, n, k) = (shape.m as usize, shape.n as usize, shape.k as usize);
        let call = shape.tuning_call(op);
        let plain = shape.form.is_plain();
        // Fits: check_fits saw the buffers in device memory.
        let [a_len, b_len, c_len] = shape.lens(op).map(|l| l as usize);
        let a_host = verify::random_values(a_len, seed, 0);
        let b_host = verify::random_values(b_len, seed, 1);
        let before = if plain {
            Vec::new()
        } else {
            verify::output_before(op, shape, &call, seed, c_len)
        };
        let s = &dev.stream;
        let a = s.clone_htod(&a_host).during("uploading A")?;
        let b = s.clone_htod(&b_host).during("uploading B")?;
        let mut canaries = vec![f32::from_bits(CANARY); c_len + 2 * GUARD];
        canaries[GUARD..GUARD + c_len].fill(0.0);
        let out = s.clone_htod(&canaries).during("allocating the output")?;
        let flush = if settings.flush_l2 && dev.info.l2_bytes > 0 {
            Some(
                s.alloc_zeros::<u8>(2 * dev.info.l2_bytes as usize)
                    .during("allocating the L2 flush buffer")?,
            )
        } else {
            None
        };
        let blas = fp32_blas(s)?;
        let (reference, bound) = match op {
            _ if !(plain || op == Op::Gemm && gpu_reference(shape)) => {
                verify::general_reference(op, shape, &call, &a_host, &b_host, &before)
            }
            _ if !plain => {
                gpu_general_reference(dev, &blas, shape, &call, &a_host, &b_host, &before)?
            }
            Op::Gemv => verify::gemv_reference(m, k, &a_host, &b_host),
            Op::Gemm if shape.m * shape.n * shape.k <= CPU_REFERENCE_MAX_MACS => {
                verify::gemm_reference(m, n, k, &a_host, &b_host)
            }
            Op::Gemm => gpu_dgemm_reference(dev, &blas, shape, &a_host, &b_host)?,
        };
        let mut events = Vec::new();
        for _ in 0..settings.max_samples.max(settings.min_samples).max(1) {
            let ev = || {
                dev.ctx
                    .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
                    .during("creating events")
            };
            events.push((ev()?, ev()?));
        }
        Ok(Bench {
            dev,
            op,
            shape,
            a,
            b,
            out,
            flush,
            workspace: None,
            reference,
            bound,
            call,
            before,
            blas,
            events,
            settings,
            seed,
            tolerance: verify::tolerance(shape.k),
            last_timed: None,
        })
    }

    /// The seed of the inputs.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The tolerance validation applies.
    pub fn tolerance(&self) -> f64 {
        self.tolerance
    }

    /// Loads a compiled kernel and prepares its launch.
    pub fn load(&self, compiled: &Compiled, launch: Launch) -> Result<Loaded, Failure> {
        self.load_cubin(&compiled.kernel_name, &compiled.cubin, launch)
    }

    /// Loads kernel `name` from `cubin` and prepares its launch.
    pub fn load_cubin(&self, name: &str, cubin: &[u8], launch: Launch) -> Result<Loaded, Failure> {
        let fail = |reason: String| Failure {
            stage: Stage::Load,
            reason,
        };
        let func =
            load_function(&self.dev.ctx, cubin, name, launch.dynamic_shared_bytes).map_err(fail)?;
        Ok(Loaded {
            registers: func.num_regs().unwrap_or(-1),
            local_bytes: func.local_size_bytes().unwrap_or(-1),
            name: name.to_string(),
            func,
            launch,
        })
    }

    fn flush_l2(&mut self) -> Result<(), RunError> {
        if let Some(f) = self.flush.as_mut() {
            self.dev.stream.memset_zeros(f).during("flushing L2")?;
        }
        Ok(())
    }

    /// Makes the workspace at least `bytes` long and, unless the kernel never needs it
    /// initialised, zeroes it (untimed: before validation).
    fn prepare_workspace(&mut self, launch: &Launch) -> Result<(), String> {
        let Some(bytes) = launch.workspace_bytes else {
            return Ok(());
        };
        let bytes = usize::try_from(bytes)
            .map_err(|_| format!("a workspace of {bytes} bytes does not fit this host"))?
            .max(16);
        let s = &self.dev.stream;
        if self.workspace.as_ref().is_none_or(|w| w.len() < bytes) {
            // Free the old one first: the two need not fit together.
            self.workspace = None;
            // SAFETY: the buffer is zeroed below, or is written by the kernel before it is read
            // (`workspace_zero = "never"`).
            let w = unsafe { s.alloc::<u8>(bytes) }
                .map_err(|e| format!("allocating a workspace of {bytes} bytes: {e:?}"))?;
            self.workspace = Some(w);
        }
        if launch.workspace_zero != WorkspaceZero::Never {
            if let Some(w) = self.workspace.as_mut() {
                s.memset_zeros(w)
                    .map_err(|e| format!("zeroing the workspace: {e:?}"))?;
            }
        }
        Ok(())
    }

    fn enqueue(&mut self, work: &Work) -> Result<(), String> {
        let len = self.out.len() - 2 * GUARD;
        let mut out = self.out.slice_mut(GUARD..GUARD + len);
        match work {
            // SAFETY (both calls): a, b and out were allocated for this shape.
            Work::Cublas => cublas_call(
                &self.blas, self.op, self.shape, &self.call, &self.a, &self.b, &mut out,
            ),
            Work::Kernel(kern) => {
                let mut ws = self.workspace.as_mut().map(|w| w.as_view_mut());
                launch(
                    &self.dev.stream,
                    &kern.func,
                    kern.launch,
                    self.op,
                    self.shape,
                    &self.call,
                    &self.a,
                    &self.b,
                    &mut out,
                    ws.as_mut(),
                )
            }
        }
    }

    /// After a failure: is the context still usable?
    fn check_context(&self, kernel: &str) -> Result<(), RunError> {
        self.dev
            .stream
            .synchronize()
            .map_err(|e| RunError::ContextLost {
                kernel: kernel.to_string(),
                reason: format!("{e:?}"),
            })
    }

    /// Validates `work`: once, or for a kernel whose workspace is zeroed only once, twice in
    /// a row on the same workspace (both outputs must pass); the larger errors.
    fn validate(&mut self, work: &Work) -> Result<Result<ErrorStats, Failure>, RunError> {
        let mut rounds = 1;
        if let Work::Kernel(k) = work {
            if let Err(reason) = self.prepare_workspace(&k.launch) {
                return Ok(Err(Failure {
                    stage: Stage::Launch,
                    reason,
                }));
            }
            if k.launch.workspace_bytes.is_some() && k.launch.workspace_zero == WorkspaceZero::Once
            {
                rounds = 2;
            }
        }
        let mut worst = ErrorStats::default();
        for round in 0..rounds {
            match self.validate_once(work)? {
                Ok(e) => worst = worst.worst(e),
                Err(mut f) if round > 0 => {
                    f.reason = format!(
                        "second launch on the same workspace (the first passed): {}; the kernel must leave its workspace zeroed (workspace_zero = \"once\")",
                        f.reason
                    );
                    return Ok(Err(f));
                }
                Err(f) => return Ok(Err(f)),
            }
        }
        Ok(Ok(worst))
    }

    fn validate_once(&mut self, work: &Work) -> Result<Result<ErrorStats, Failure>, RunError> {
        let name = match work {
            Work::Cublas => "cuBLAS".to_string(),
            Work::Kernel(k) => k.name.clone(),
        };
        // Poison with NaN (all bits set) so unwritten elements fail; a problem of another
        // form starts from its `before` image instead (C's old values, canaries in padding).
        if !self.before.is_empty() {
            let mut out = self.out.slice_mut(GUARD..GUARD + self.before.len());
            self.dev
                .stream
                .memcpy_htod(&self.before, &mut out)
                .during("writing the output's old values")?;
        } else {
            let s = &self.dev.stream;
            let len = self.out.len() - 2 * GUARD;
            let mut out = self.out.slice_mut(GUARD..GUARD + len);
            let bytes = len * 4;
            let (ptr, _sync) = out.device_ptr_mut(s);
            // SAFETY: ptr is a live allocation of `bytes` bytes on this stream.
            unsafe { cudarc::driver::result::memset_d8_async(ptr, 0xFF, bytes, s.cu_stream()) }
                .during("poisoning the output")?;
        }
        if let Err(reason) = self.enqueue(work) {
            self.check_context(&name)?;
            return Ok(Err(Failure {
                stage: Stage::Launch,
                reason,
            }));
        }
        if let Err(e) = self.dev.stream.synchronize() {
            return Err(RunError::ContextLost {
                kernel: name,
                reason: format!("{e:?}"),
            });
        }
        let full = self
            .dev
            .stream
            .clone_dtoh(&self.out)
            .during("downloading the output")?;
        let (before, rest) = full.split_at(GUARD);
        let (out, after) = rest.split_at(rest.len() - GUARD);
        if let Some(f) = guard_violation(before, after) {
            // Put the canaries back for the next candidate.
            let mut fresh = full.clone();
            fresh[..GUARD].fill(f32::from_bits(CANARY));
            let tail = fresh.len() - GUARD;
            fresh[tail..].fill(f32::from_bits(CANARY));
            self.dev
                .stream
                .memcpy_htod(&fresh, &mut self.out)
                .during("restoring the output guards")?;
            return Ok(Err(f));
        }
        let cols = if self.op == Op::Gemm {
            self.shape.n as usize
        } else {
            1
        };
        let logical;
        let out = if self.before.is_empty() {
            out
        } else {
            let (values, padding_kept) =
                verify::logical_output(self.op, self.shape, &self.call, out, &self.before);
            if !padding_kept {
                return Ok(Err(Failure {
                    stage: Stage::Validate,
                    reason:
                        "wrote into the padding between the output's rows (past ldc's row length)"
                            .into(),
                }));
            }
            logical = values;
            &logical[..]
        };
        Ok(
            verify::compare_stats(out, &self.reference, &self.bound, cols, self.tolerance).map_err(
                |m| Failure {
                    stage: Stage::Validate,
                    reason: m.to_string(),
                },
            ),
        )
    }

    fn time(
        &mut self,
        work: &Work,
        best_ms: Option<f64>,
    ) -> Result<Result<Stats, Failure>, RunError> {
        let name = match work {
            Work::Cublas => "cuBLAS".to_string(),
            Work::Kernel(k) => k.name.clone(),
        };
        let fail = |reason: String| Failure {
            stage: Stage::Time,
            reason,
        };
        if self.last_timed.is_none_or(|t| t.elapsed() > IDLE) {
            if let Err(r) = self.ramp_clocks(work) {
                self.check_context(&name)?;
                return Ok(Err(fail(r)));
            }
        }
        // Once a candidate has run, clocks are up and the stream is busy: the next candidates
        // need one untimed launch (module load, first-touch), not the full warm-up.
        let warmup = if best_ms.is_some() {
            self.settings.warmup.min(1)
        } else {
            self.settings.warmup
        };
        for _ in 0..warmup {
            self.flush_l2()?;
            if let Err(r) = self.enqueue(work) {
                self.check_context(&name)?;
                return Ok(Err(fail(r)));
            }
        }
        // One timed run estimates how many samples fit the budget.
        self.flush_l2()?;
        let est = self.sample_batch(work, 1, &name)?;
        let est = match est {
            Ok(v) => v[0],
            Err(f) => return Ok(Err(f)),
        };
        let n = self.settings.samples_for_candidate(est, best_ms) as usize;
        let samples = self.sample_batch(work, n, &name)?;
        self.last_timed = Some(Instant::now());
        Ok(samples
            .and_then(|v| Stats::from_samples(&v).ok_or_else(|| fail("no valid samples".into()))))
    }

    /// Keeps the GPU busy for [`RAMP`] (L2 flushes, or `work` where nothing is flushed) so
    /// that its clocks are up when sampling starts. An error is the launch's.
    fn ramp_clocks(&mut self, work: &Work) -> Result<(), String> {
        let start = Instant::now();
        while start.elapsed() < RAMP {
            for _ in 0..8 {
                if self.flush.is_some() {
                    self.flush_l2().map_err(|e| e.to_string())?;
                } else {
                    self.enqueue(work)?;
                }
            }
            self.dev
                .stream
                .synchronize()
                .map_err(|e| format!("warming the clocks up: {e:?}"))?;
        }
        Ok(())
    }

    fn sample_batch(
        &mut self,
        work: &Work,
        n: usize,
        name: &str,
    ) -> Result<Result<Vec<f64>, Failure>, RunError> {
        let n = n.min(self.events.len());
        for i in 0..n {
            self.flush_l2()?;
            self.events[i]
                .0
                .record(&self.dev.stream)
                .during("recording an event")?;
            if let Err(reason) = self.enqueue(work) {
                self.check_context(name)?;
                return Ok(Err(Failure {
                    stage: Stage::Time,
                    reason,
                }));
            }
            self.events[i]
                .1
                .record(&self.dev.stream)
                .during("recording an event")?;
        }
        self.check_context(name)?;
        let mut v = Vec::with_capacity(n);
        for (s, e) in &self.events[..n] {
            v.push(s.elapsed_ms(e).during("reading event times")? as f64);
        }
        Ok(Ok(v))
    }

    /// Validates and times cuBLAS: the baseline, with its errors on the same inputs against
    /// the same reference as every candidate's. A baseline that fails validation means the
    /// reference is wrong, which stops the run.
    pub fn baseline(&mut self) -> Result<(Stats, ErrorStats), RunError> {
        let err = match self.validate(&Work::Cublas)? {
            Ok(e) => e,
            Err(f) => {
                return Err(match f.stage {
                    Stage::Validate => RunError::BaselineInvalid(f.reason),
                    _ => RunError::Cublas {
                        what: "baseline",
                        message: f.reason,
                    },
                })
            }
        };
        match self.time(&Work::Cublas, None)? {
            Ok(stats) => Ok((stats, err)),
            Err(f) => Err(RunError::Cublas {
                what: "timing",
                message: f.reason,
            }),
        }
    }

    /// Validates a loaded kernel without timing it; returns its largest relative error.
    pub fn check(&mut self, kernel: &Loaded) -> Result<Result<f64, Failure>, RunError> {
        Ok(self.validate(&Work::Kernel(kernel))?.map(|e| e.max))
    }

    /// Validates, then times, a loaded kernel. A wrong result is never timed. `best_ms` is the
    /// best median so far: a candidate far slower gets only a few samples.
    pub fn evaluate(
        &mut self,
        kernel: &Loaded,
        best_ms: Option<f64>,
    ) -> Result<Result<Measured, Failure>, RunError> {
        let work = Work::Kernel(kernel);
        let err = match self.validate(&work)? {
            Ok(e) => e,
            Err(f) => return Ok(Err(f)),
        };
        Ok(self.time(&work, best_ms)?.map(|stats| Measured {
            stats,
            max_rel_error: err.max,
            mean_rel_error: Some(err.mean),
            registers: kernel.registers,
            local_bytes: kernel.local_bytes,
        }))
    }
}

/// Whether the float64 reference of a gemm problem is computed on the GPU (too many
/// multiply-adds for the CPU).
fn gpu_reference(shape: Shape) -> bool {
    shape
        .m
        .saturating_mul(shape.n)
        .saturating_mul(shape.k)
        .saturating_mul(shape.form.batch)
        > CPU_REFERENCE_MAX_MACS
}

/// Where a kernel wrote outside its output: the first changed canary before or after it.
fn guard_violation(before: &[f32], after: &[f32]) -> Option<Failure> {
    let changed = |v: &[f32]| v.iter().position(|x| x.to_bits() != CANARY);
    let (side, at) = if let Some(i) = changed(before) {
        ("before", before.len() - i)
    } else {
        ("after", changed(after)? + 1)
    };
    Some(Failure {
        stage: Stage::Validate,
        reason: format!(
            "wrote out of bounds: the guard region {side} the output was overwritten ({at} float(s) {side} it)"
        ),
    })
}

/// Measures device-to-device copy bandwidth in GB/s (bytes read plus bytes written), the
/// practical ceiling of a memory-bound kernel: median of 10 copies of up to 1 GiB.
pub fn copy_bandwidth_gbs(dev: &Device) -> Result<f64, RunError> {
    let free = dev.free_memory()? as usize;
    let bytes = ((1usize << 30).min(free / 4)) & !0xFFFF;
    let s = &dev.stream;
    let src = s
        .alloc_zeros::<u8>(bytes)
        .during("allocating the copy source")?;
    let mut dst = s
        .alloc_zeros::<u8>(bytes)
        .during("allocating the copy target")?;
    let ev = || {
        dev.ctx
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .during("creating events")
    };
    for _ in 0..2 {
        s.memcpy_dtod(&src, &mut dst).during("copying")?;
    }
    let mut samples = Vec::new();
    for _ in 0..10 {
        let (a, b) = (ev()?, ev()?);
        a.record(s).during("recording an event")?;
        s.memcpy_dtod(&src, &mut dst).during("copying")?;
        b.record(s).during("recording an event")?;
        b.synchronize().during("waiting for the copy")?;
        samples.push(a.elapsed_ms(&b).during("reading event times")? as f64);
    }
    let stats = Stats::from_samples(&samples).ok_or_else(|| {
        RunError::Measurement("the copy-bandwidth events gave no valid time".into())
    })?;
    Ok(2.0 * bytes as f64 / (stats.median_ms * 1e-3) / 1e9)
}
