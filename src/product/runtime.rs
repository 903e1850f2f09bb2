//! What a product calls: database lookup with fallback, compile on first use (memory, then disk
//! cache, then NVRTC), and launch on the product's own device buffers.
//!
//! A kernel whose family declares a workspace ([`Launch::workspace_bytes`]) gets it from the
//! runtime: one buffer per stream the product launches on (calls on one stream run in order,
//! so they can share it; calls on two streams may overlap, so they never do), allocated on
//! that stream, grown as needed and kept for the runtime's life (it holds the stream too). A
//! workspace zeroed `once` is zeroed when allocated and whenever another kernel or shape used
//! it last, on the stream, before the launch.
//!
//! ```no_run
//! use autotune::product::runtime::Tuned;
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let ctx = Tuned::context(0)?; // an error, not a panic, without a driver or GPU
//! let tuned = Tuned::from_toml_str(&ctx, include_str!("../../results/tuning.toml"))?;
//! let stream = ctx.default_stream();
//! let (m, n, k) = (512, 512, 512);
//! let a = stream.alloc_zeros::<f32>(m * k)?;
//! let b = stream.alloc_zeros::<f32>(k * n)?;
//! let mut c = stream.alloc_zeros::<f32>(m * n)?;
//! tuned.gemm(&stream, m, n, k, &a, &b, &mut c)?;
//! let shape = autotune::Shape::mnk(512, 512, 512);
//! println!("{}", tuned.explain(autotune::Op::Gemm, shape).describe(autotune::Op::Gemm, shape));
//! # Ok(()) }
//! ```

use crate::cuda::cublas_lib::Blas;
use crate::cuda::device;
use crate::cuda::nvrtc::{self, DiskCache};
use crate::cuda::{baseline, launch};
use crate::db::Database;
use crate::family::catalog::{Catalog, Kernel};
use crate::family::math::MathPolicy;
use crate::family::space::{Launch, WorkspaceZero};
use crate::gpu::{Arch, DeviceInfo};
use crate::problem::{Call, Form, Op, Shape};
use crate::product::desc::{GemmDesc, GemvDesc};
use crate::product::lookup::{self, Choice, LookupOptions, Rule};
use crate::product::online::{self, OnlineTuning};
use crate::product::record::Recorder;
use crate::product::select::Selector;
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

mod error;
pub mod raw;
pub use error::RuntimeError;

/// Counters of the module cache, for logs and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Kernels compiled with NVRTC.
    pub compiled: usize,
    /// Kernels loaded from the disk cache.
    pub disk_hits: usize,
    /// Shapes resolved (lookup + module) so far.
    pub shapes: usize,
}

#[derive(Clone)]
enum Ready {
    /// A tuned kernel.
    Kernel {
        func: CudaFunction,
        launch: Launch,
        kernel: String,
    },
    /// cuBLAS: the vendor guard's choice.
    Cublas,
}

/// The workspace of one stream.
struct Workspace {
    /// The buffer, allocated on the stream.
    buf: CudaSlice<u8>,
    /// The kernel and shape that used it last: a workspace zeroed `once` is clean only for
    /// them.
    last: Option<(String, Shape)>,
}

/// A tuning database bound to a CUDA context: the product's entry point.
///
/// ```no_run
/// use autotune::Tuned;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // The database shipped with the product, built into it.
/// const DB: &str = include_str!("../../results/tuning.toml");
/// let ctx = Tuned::context(0)?; // an error, not a panic, without a driver or GPU
/// let stream = ctx.default_stream();
/// let tuned = Tuned::from_toml_str(&ctx, DB)?;
/// let (m, n, k) = (512, 1024, 256);
/// let a = stream.memcpy_stod(&vec![1.0f32; m * k])?;
/// let b = stream.memcpy_stod(&vec![1.0f32; k * n])?;
/// let mut c = stream.alloc_zeros::<f32>(m * n)?;
/// // C = A B, row-major, with the kernel the database chooses (cuBLAS where it is faster).
/// tuned.gemm(&stream, m, n, k, &a, &b, &mut c)?;
/// // What ran, and why (the rule, the config, the guard's evidence).
/// let shape = autotune::Shape::mnk(512, 1024, 256);
/// println!("{}", tuned.explain(autotune::Op::Gemm, shape).describe(autotune::Op::Gemm, shape));
/// # Ok(())
/// # }
/// ```
pub struct Tuned {
    db: RwLock<Database>,
    catalog: Catalog,
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
    disk: Option<DiskCache>,
    nvrtc: Mutex<Option<String>>,
    modules: Mutex<HashMap<String, CudaFunction>>,
    ready: RwLock<HashMap<(Op, Shape), Ready>>,
    /// Workspaces by stream (its `CUstream` handle as an integer).
    workspaces: Mutex<HashMap<usize, Workspace>>,
    compiled: AtomicUsize,
    disk_hits: AtomicUsize,
    quiet: bool,
    options: LookupOptions,
    selectors: Mutex<Selectors>,
    blas: Mutex<Option<Blas>>,
    recorder: Option<Recorder>,
    record_failed: std::sync::atomic::AtomicBool,
    online: Option<OnlineTuning>,
    online_failed: std::sync::atomic::AtomicBool,
}

/// Coverage predictors by op and form (`None`: no usable grid of that form), built on first use.
type Selectors = HashMap<(Op, Form), Option<Arc<Selector>>>;

impl Tuned {
    /// A CUDA context on GPU `ordinal`, for [`Tuned::new`] and the product's own buffers: an
    /// error value, never a panic, when the NVIDIA driver (libcuda) is missing or there is no
    /// such GPU, so that a product can fall back or report it.
    pub fn context(ordinal: usize) -> Result<Arc<CudaContext>, RuntimeError> {
        Ok(device::Device::open(ordinal)?.ctx)
    }

    /// Loads the database at `path` for the device of `ctx`.
    pub fn from_path(ctx: &Arc<CudaContext>, path: &Path) -> Result<Tuned, RuntimeError> {
        Self::new(ctx, Database::load(path)?)
    }

    /// Parses a database embedded in the product (e.g. `include_str!`).
    pub fn from_toml_str(ctx: &Arc<CudaContext>, text: &str) -> Result<Tuned, RuntimeError> {
        Self::new(
            ctx,
            Database::from_toml_str(text, "embedded tuning database")?,
        )
    }

    /// Binds `db` to the device of `ctx`, with the user's disk cache
    /// ([`DiskCache::user_default`]).
    pub fn new(ctx: &Arc<CudaContext>, db: Database) -> Result<Tuned, RuntimeError> {
        Ok(Tuned {
            db: RwLock::new(db),
            catalog: Catalog::builtin()?,
            ctx: ctx.clone(),
            info: device::query(ctx)?,
            disk: DiskCache::user_default(),
            nvrtc: Mutex::new(None),
            modules: Mutex::new(HashMap::new()),
            ready: RwLock::new(HashMap::new()),
            workspaces: Mutex::new(HashMap::new()),
            compiled: AtomicUsize::new(0),
            disk_hits: AtomicUsize::new(0),
            quiet: false,
            options: LookupOptions::default(),
            selectors: Mutex::new(HashMap::new()),
            blas: Mutex::new(None),
            recorder: Recorder::from_env(),
            record_failed: std::sync::atomic::AtomicBool::new(false),
            online: None,
            online_failed: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Tunes a shape the database has no entry for on its first call ([`OnlineTuning`]): the
    /// best predicted configs are validated and timed on scratch buffers within the budget,
    /// the fastest is launched from then on and written to `online.db` (under its lock,
    /// atomically), whose entries for this GPU are read now, so the next process starts tuned.
    /// A tuning that fails is logged once and the call goes on with the lookup's choice.
    pub fn online_tuning(mut self, online: OnlineTuning) -> Result<Tuned, RuntimeError> {
        let kept = Database::load(&online.db)?;
        {
            let db = self.db.get_mut().unwrap_or_else(|p| p.into_inner());
            for e in kept.entries.into_iter().filter(|e| e.gpu == self.info.name) {
                db.upsert(e);
            }
        }
        self.online = Some(online);
        Ok(self)
    }

    /// Turns the vendor guard on or off (on by default): with it, a problem is computed by
    /// cuBLAS unless evidence of this GPU on that problem says our kernel is faster
    /// ([`Choice::beats_cublas`]); off, the lookup's config always runs.
    pub fn vendor_guard(mut self, on: bool) -> Tuned {
        self.options.vendor_guard = on;
        self
    }

    /// Which lookup rules apply ([`LookupOptions`]; all by default).
    pub fn lookup_options(mut self, options: LookupOptions) -> Tuned {
        self.options = options;
        self
    }

    /// Which maths the runtime may launch ([`MathPolicy`]; any by default): a product that
    /// needs FMA-exact results passes [`MathPolicy::Simt`] and never gets a tensor-core
    /// (`tf32x3`) kernel, whatever the database holds: each problem gets a simt kernel, or
    /// cuBLAS SGEMM where the vendor guard finds no evidence for one. Online tuning tries
    /// kernels of the allowed maths only.
    pub fn math(mut self, policy: MathPolicy) -> Tuned {
        self.options.math = policy;
        self
    }

    /// Records every shape this runtime is called with as a suite file in `dir`
    /// (`dir/gemm.toml`, `dir/gemv.toml`) that `autotune --suite` tunes. The environment
    /// variable `AUTOTUNE_RECORD=dir` does the same without a code change. A recording that
    /// fails is logged once and never fails a call.
    pub fn record_to(mut self, dir: impl Into<std::path::PathBuf>) -> Tuned {
        self.recorder = Some(Recorder::new(dir));
        self
    }

    /// Uses `cache` for compiled kernels (`None`: compile on every start).
    pub fn with_disk_cache(mut self, cache: Option<DiskCache>) -> Tuned {
        self.disk = cache;
        self
    }

    /// Don't log fallbacks to stderr.
    pub fn quiet(mut self) -> Tuned {
        self.quiet = true;
        self
    }

    /// The device this runtime launches on.
    pub fn device(&self) -> &DeviceInfo {
        &self.info
    }

    /// The config the runtime launches for `op` on `shape`, and which rule chose it.
    pub fn explain(&self, op: Op, shape: Shape) -> Choice {
        self.explain_with(op, shape, self.options)
    }

    /// What the lookup chooses for `op` on `shape` with other rules (e.g.
    /// [`LookupOptions::nearest_only`], the rules before coverage), for comparisons.
    pub fn explain_with(&self, op: Op, shape: Shape, options: LookupOptions) -> Choice {
        let arch = self.info.arch.to_string();
        let selector = self.selector(op, &shape.form);
        let db = self.db.read().unwrap_or_else(|p| p.into_inner());
        lookup::lookup_with(
            &db,
            &self.catalog,
            &self.info.name,
            Some(&arch),
            op,
            shape,
            options,
            selector.as_deref(),
        )
    }

    /// The configs of this GPU's coverage portfolio for `op` (its plain-form grid) that this
    /// build can launch.
    pub fn portfolio(&self, op: Op) -> Vec<crate::family::space::Config> {
        self.portfolio_for(op, &Form::PLAIN)
    }

    /// The configs of this GPU's coverage portfolio for `op` that can run problems of `form`:
    /// the grid the lookup predicts the form from ([`lookup::selector_for`]).
    pub fn portfolio_for(&self, op: Op, form: &Form) -> Vec<crate::family::space::Config> {
        self.selector(op, form).map_or_else(Vec::new, |s| {
            (0..s.len())
                .filter(|&i| s.is_usable_for(i, form))
                .filter_map(|i| s.config(i).cloned())
                .collect()
        })
    }

    /// This GPU's coverage predictor for `op` on problems of `form`, built once per op and
    /// form.
    fn selector(&self, op: Op, form: &Form) -> Option<Arc<Selector>> {
        let mut map = self.selectors.lock().unwrap_or_else(|p| p.into_inner());
        map.entry((op, *form))
            .or_insert_with(|| {
                let db = self.db.read().unwrap_or_else(|p| p.into_inner());
                lookup::selector_for(&db, &self.catalog, &self.info.name, op, form).map(Arc::new)
            })
            .clone()
    }

    /// Module cache counters.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            compiled: self.compiled.load(Ordering::Relaxed),
            disk_hits: self.disk_hits.load(Ordering::Relaxed),
            shapes: self.ready.read().map(|r| r.len()).unwrap_or(0),
        }
    }

    /// `c = a b` (row-major; a `m x k`, b `k x n`, c `m x n`) with the tuned kernel for the shape.
    #[allow(clippy::too_many_arguments)]
    pub fn gemm(
        &self,
        stream: &Arc<CudaStream>,
        m: usize,
        n: usize,
        k: usize,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
    ) -> Result<(), RuntimeError> {
        let shape = Shape::new(Op::Gemm, m as u64, n as u64, k as u64)?;
        self.check(
            Op::Gemm,
            shape,
            &[
                ("a", a.len(), m * k),
                ("b", b.len(), k * n),
                ("c", c.len(), m * n),
            ],
        )?;
        self.run(
            stream,
            Op::Gemm,
            shape,
            &shape.tuning_call(Op::Gemm),
            a,
            b,
            c,
        )
    }

    /// The full GEMM interface, as `cublasSgemmStridedBatched` (row-major convention, see
    /// [`GemmDesc`]): `C = alpha op(A) op(B) + beta C` for each product of the batch, with the
    /// tuned kernel for the problem (layout, padding, beta and batch are part of the lookup's
    /// key). The descriptor is checked against the buffers' lengths first: a descriptor that
    /// would reach past a buffer is an error and nothing is launched.
    pub fn gemm_ex(
        &self,
        stream: &Arc<CudaStream>,
        desc: &GemmDesc,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
    ) -> Result<(), RuntimeError> {
        let (shape, call) = desc.problem([a.len(), b.len(), c.len()])?;
        self.run(stream, Op::Gemm, shape, &call, a, b, c)
    }

    /// The full GEMV interface, as `cublasSgemvStridedBatched` with unit increments (see
    /// [`GemvDesc`]): `y = alpha op(A) x + beta y` for each product of the batch. Checked
    /// against the buffers' lengths first, like [`Tuned::gemm_ex`].
    pub fn gemv_ex(
        &self,
        stream: &Arc<CudaStream>,
        desc: &GemvDesc,
        a: &CudaSlice<f32>,
        x: &CudaSlice<f32>,
        y: &mut CudaSlice<f32>,
    ) -> Result<(), RuntimeError> {
        let (shape, call) = desc.problem([a.len(), x.len(), y.len()])?;
        self.run(stream, Op::Gemv, shape, &call, a, x, y)
    }

    /// `y = a x` (a row-major `m x k`) with the tuned kernel for the shape.
    pub fn gemv(
        &self,
        stream: &Arc<CudaStream>,
        m: usize,
        k: usize,
        a: &CudaSlice<f32>,
        x: &CudaSlice<f32>,
        y: &mut CudaSlice<f32>,
    ) -> Result<(), RuntimeError> {
        let shape = Shape::new(Op::Gemv, m as u64, 1, k as u64)?;
        self.check(
            Op::Gemv,
            shape,
            &[("a", a.len(), m * k), ("x", x.len(), k), ("y", y.len(), m)],
        )?;
        self.run(
            stream,
            Op::Gemv,
            shape,
            &shape.tuning_call(Op::Gemv),
            a,
            x,
            y,
        )
    }

    fn check(
        &self,
        op: Op,
        shape: Shape,
        bufs: &[(&'static str, usize, usize)],
    ) -> Result<(), RuntimeError> {
        for &(buffer, got, need) in bufs {
            if got < need {
                return Err(RuntimeError::BufferLength {
                    op,
                    shape: shape.label(op),
                    buffer,
                    got,
                    need,
                });
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        stream: &Arc<CudaStream>,
        op: Op,
        shape: Shape,
        call: &Call,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        out: &mut CudaSlice<f32>,
    ) -> Result<(), RuntimeError> {
        let go = |r: &Ready, out: &mut CudaSlice<f32>| match r {
            Ready::Kernel {
                func,
                launch,
                kernel,
            } => {
                let fail = |reason: String| RuntimeError::Launch {
                    op,
                    shape: shape.label(op),
                    kernel: kernel.clone(),
                    reason,
                };
                let Some(bytes) = launch.workspace_bytes else {
                    return launch::launch(
                        stream,
                        func,
                        *launch,
                        op,
                        shape,
                        call,
                        a,
                        b,
                        &mut out.as_view_mut(),
                        None,
                    )
                    .map_err(fail);
                };
                // The lock is held while the launch is enqueued, so the buffer is neither
                // replaced nor re-zeroed by another thread in between.
                let mut map = self.workspaces.lock().unwrap_or_else(|p| p.into_inner());
                let ws = workspace(
                    &mut map,
                    stream,
                    bytes,
                    launch.workspace_zero,
                    kernel,
                    shape,
                )
                .map_err(fail)?;
                launch::launch(
                    stream,
                    func,
                    *launch,
                    op,
                    shape,
                    call,
                    a,
                    b,
                    &mut out.as_view_mut(),
                    Some(&mut ws.as_view_mut()),
                )
                .map_err(fail)
            }
            Ready::Cublas => self.cublas(stream, op, shape, call, a, b, out),
        };
        // Hot path: one read lock and a hash lookup per call once the shape is resolved; the
        // launch happens under the read guard, so nothing is cloned.
        if let Ok(map) = self.ready.read() {
            if let Some(r) = map.get(&(op, shape)) {
                return go(r, out);
            }
        }
        let r = self.resolve(stream, op, shape)?;
        go(&r, out)
    }

    /// The vendor guard's call: cuBLAS on the product's stream, with one handle kept per
    /// runtime.
    #[allow(clippy::too_many_arguments)]
    fn cublas(
        &self,
        stream: &Arc<CudaStream>,
        op: Op,
        shape: Shape,
        call: &Call,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        out: &mut CudaSlice<f32>,
    ) -> Result<(), RuntimeError> {
        let fail = |reason: String| RuntimeError::Launch {
            op,
            shape: shape.label(op),
            kernel: "cuBLAS".into(),
            reason,
        };
        let mut guard = self.blas_handle(stream).map_err(fail)?;
        let Some(blas) = guard.as_mut() else {
            return Err(fail("no cuBLAS handle".into()));
        };
        // The handle lives as long as the runtime; setting the stream (of the same context)
        // only redirects where cuBLAS enqueues.
        blas.set_stream(stream.clone())
            .map_err(|e| fail(e.to_string()))?;
        baseline::cublas_call(blas, op, shape, call, a, b, &mut out.as_view_mut()).map_err(fail)
    }

    /// The runtime's cuBLAS handle, created on first use.
    fn blas_handle(
        &self,
        stream: &Arc<CudaStream>,
    ) -> Result<std::sync::MutexGuard<'_, Option<Blas>>, String> {
        let mut guard = self.blas.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            *guard = Some(baseline::fp32_blas(stream).map_err(|e| e.to_string())?);
        }
        Ok(guard)
    }

    /// Lookup, launch geometry, module: once per (op, shape).
    fn resolve(
        &self,
        stream: &Arc<CudaStream>,
        op: Op,
        shape: Shape,
    ) -> Result<Ready, RuntimeError> {
        if let Some(r) = &self.recorder {
            if let Err(e) = r.record(op, shape) {
                if !self.quiet && !self.record_failed.swap(true, Ordering::Relaxed) {
                    eprintln!("autotune: not recording the shapes called: {e}");
                }
            }
        }
        let mut choice = self.explain(op, shape);
        if choice.rule != Rule::Exact
            && self.online.is_some()
            && self.tune_online(stream, op, shape)
        {
            choice = self.explain(op, shape);
        }
        if (choice.rule != Rule::Exact || choice.vendor) && !self.quiet {
            eprintln!("autotune: {}", choice.describe(op, shape));
        }
        if choice.vendor {
            // Without cuBLAS the lookup's config still computes every problem correctly.
            match self.blas_handle(stream) {
                Ok(_) => {
                    if let Ok(mut r) = self.ready.write() {
                        r.insert((op, shape), Ready::Cublas);
                    }
                    return Ok(Ready::Cublas);
                }
                Err(e) if !self.quiet => eprintln!(
                    "autotune: {op} {}: cuBLAS could not be loaded ({e}), so the vendor guard cannot call it; launching {} {} instead (install cuBLAS or set AUTOTUNE_CUBLAS)",
                    shape.label(op),
                    choice.family,
                    crate::family::space::params_label(&choice.params)
                ),
                Err(_) => {}
            }
        }
        let config_err = |reason: String| RuntimeError::Config {
            op,
            shape: shape.label(op),
            family: choice.family.clone(),
            params: format!("{:?}", choice.params),
            reason,
        };
        let family = self
            .catalog
            .get(&choice.family)
            .map_err(|e| config_err(e.to_string()))?;
        let config = choice.config();
        let Kernel { source, launch } = family
            .kernel(&config, shape, &self.info.limits)
            .map_err(|e| config_err(e.to_string()))?;
        let func = self.function(&source, op, shape, launch)?;
        let ready = Ready::Kernel {
            func,
            launch,
            kernel: source.kernel_name.clone(),
        };
        if let Ok(mut r) = self.ready.write() {
            r.insert((op, shape), ready.clone());
        }
        Ok(ready)
    }

    /// Online tuning of one shape ([`OnlineTuning`]); whether an entry was kept.
    fn tune_online(&self, stream: &Arc<CudaStream>, op: Op, shape: Shape) -> bool {
        let Some(online) = &self.online else {
            return false;
        };
        let start = std::time::Instant::now();
        let candidates = self.online_candidates(op, shape, online.candidates);
        let dev = device::Device {
            ctx: self.ctx.clone(),
            stream: stream.clone(),
            info: self.info.clone(),
        };
        let result = nvrtc::nvrtc_version()
            .map_err(|e| e.to_string())
            .and_then(|v| {
                online::tune_shape(
                    &dev,
                    &self.catalog,
                    self.info.record(&v),
                    &candidates,
                    op,
                    shape,
                    online,
                    &|source| self.compiled(source),
                )
                .map_err(|e| e.to_string())
            });
        let entry = result.and_then(|report| {
            let mut e = report
                .to_entry(&crate::plan::outcome::utc_now_rfc3339())
                .ok_or_else(|| "no candidate ran".to_string())?;
            e.produced_by = Some(crate::db::Producer {
                host: crate::provenance::this_host(),
                device: self.info.ordinal as u32,
                pci_bus_id: self.info.pci_bus_id.clone(),
                uuid: self.info.uuid.clone(),
                shard: None,
            });
            let rec = report.gpu.clone();
            Database::update_file(&online.db, |db| {
                db.upsert_gpu(rec);
                db.upsert(e.clone());
                Ok(())
            })
            .map_err(|err| err.to_string())?;
            Ok((e, report.results.len()))
        });
        match entry {
            Ok((e, tried)) => {
                if !self.quiet {
                    eprintln!(
                        "autotune: tuned {op} {} online in {:.0} ms ({tried} candidates): {} {}, {:.3}x cuBLAS; kept in {}",
                        shape.label(op),
                        start.elapsed().as_secs_f64() * 1e3,
                        e.family,
                        crate::family::space::params_label(&e.params),
                        e.vs_cublas,
                        online.db.display()
                    );
                }
                let mut db = self.db.write().unwrap_or_else(|p| p.into_inner());
                db.upsert(e);
                true
            }
            Err(why) => {
                if !self.quiet && !self.online_failed.swap(true, Ordering::Relaxed) {
                    eprintln!(
                        "autotune: online tuning of {op} {} failed ({why}); using the lookup's choice",
                        shape.label(op)
                    );
                }
                false
            }
        }
    }

    /// What online tuning tries: half from the coverage's ranking (measured configs, the
    /// best predicted first), half from the whole spaces as the performance model orders
    /// them for this shape (each family's leader first), so the online search can find a
    /// config the portfolio lacks; without coverage, the configs of this GPU's entries
    /// nearest the shape, the lookup's choice first when they lack it.
    fn online_candidates(
        &self,
        op: Op,
        shape: Shape,
        n: usize,
    ) -> Vec<crate::family::space::Config> {
        let n = n.max(1);
        let mut out: Vec<crate::family::space::Config> = Vec::new();
        // A form without a coverage grid of its own is ranked by the performance model among
        // the configs its families offer.
        let selector = self.selector(op, &shape.form);
        if selector.is_none() && !shape.form.is_plain() {
            out = self.model_ranked(op, shape);
        } else if let Some(r) = selector.and_then(|s| {
            let ranking = s.rank_admitting(shape, &|c| self.admits(c))?;
            Some(
                ranking
                    .configs
                    .iter()
                    .filter_map(|p| s.config(p.index).cloned())
                    .take(n.div_ceil(2))
                    .collect::<Vec<_>>(),
            )
        }) {
            out = r;
            for c in self.model_ranked(op, shape) {
                if out.len() >= n {
                    break;
                }
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        out.retain(|c| self.admits(c));
        if out.is_empty() {
            let db = self.db.read().unwrap_or_else(|p| p.into_inner());
            let mut near: Vec<_> = db
                .entries
                .iter()
                .filter(|e| e.gpu == self.info.name && e.op == op)
                .filter(|e| {
                    shape.form.is_plain()
                        || self
                            .catalog
                            .get(&e.family)
                            .is_ok_and(|f| f.space.interface.computes(&shape.form))
                })
                .map(|e| (lookup::distance(e.shape(), shape), e))
                .collect();
            near.sort_by(|a, b| a.0.total_cmp(&b.0));
            for (_, e) in near {
                let c = crate::family::space::Config {
                    family: e.family.clone(),
                    params: e.params.clone(),
                };
                if !out.contains(&c) {
                    out.push(c);
                }
            }
            let choice = self.explain(op, shape).config();
            if !out.contains(&choice) {
                out.insert(0, choice);
            }
        }
        // Never a kernel of a math the product refuses (the lookup's choice is one it allows).
        out.retain(|c| self.admits(c));
        out.truncate(n.max(1));
        out
    }

    /// Whether the product's math policy ([`Tuned::math`]) allows `config`'s family.
    fn admits(&self, config: &crate::family::space::Config) -> bool {
        let math = self.catalog.math(&config.family).unwrap_or_default();
        self.options.math.admits(math)
    }

    /// Every config of `op`'s families valid on `shape`, in the performance model's order
    /// for this GPU, each family's best first (empty when no family has one).
    fn model_ranked(&self, op: Op, shape: Shape) -> Vec<crate::family::space::Config> {
        use crate::search::{family_leaders_first, model_order};
        let limits = &self.info.limits;
        let Ok((_, planned)) = crate::plan::plan(&self.catalog, op, shape, limits, &[]) else {
            return Vec::new();
        };
        let machine = crate::plan::model::Machine::for_device(&self.info);
        let space = crate::plan::model::candidates(
            &self.catalog,
            planned.iter().map(|p| (&p.config, &p.launch)),
            op,
            shape,
            limits,
            &machine,
        );
        family_leaders_first(&space, model_order(&space))
            .into_iter()
            .map(|i| planned[i].config.clone())
            .collect()
    }

    /// The cubin of `source`: disk cache, then NVRTC (storing it).
    fn compiled(
        &self,
        source: &crate::family::catalog::Source,
    ) -> Result<nvrtc::Compiled, nvrtc::CompileError> {
        let nvrtc = {
            let mut v = self.nvrtc.lock().unwrap_or_else(|p| p.into_inner());
            if v.is_none() {
                *v = Some(nvrtc::nvrtc_version()?);
            }
            v.clone().unwrap_or_default()
        };
        let arch: Arch = self.info.arch;
        if let Some(c) = self.disk.as_ref().and_then(|d| d.get(&nvrtc, arch, source)) {
            self.disk_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(c);
        }
        let c = nvrtc::compile(source, arch)?;
        self.compiled.fetch_add(1, Ordering::Relaxed);
        if let Some(d) = &self.disk {
            // A cache that cannot be written only costs a compile next time.
            let _ = d.put(&nvrtc, &c, source);
        }
        Ok(c)
    }

    /// The loaded function for `source`: memory, then disk, then NVRTC.
    fn function(
        &self,
        source: &crate::family::catalog::Source,
        op: Op,
        shape: Shape,
        launch: Launch,
    ) -> Result<CudaFunction, RuntimeError> {
        // One lock for the whole load: two threads never compile the same kernel twice.
        let mut modules = self.modules.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = modules.get(&source.kernel_name) {
            return Ok(f.clone());
        }
        let compiled = self.compiled(source)?;
        let func = launch::load_function(
            &self.ctx,
            &compiled.cubin,
            &source.kernel_name,
            launch.dynamic_shared_bytes,
        )
        .map_err(|reason| RuntimeError::Launch {
            op,
            shape: shape.label(op),
            kernel: source.kernel_name.clone(),
            reason,
        })?;
        modules.insert(source.kernel_name.clone(), func.clone());
        Ok(func)
    }
}

/// The workspace of `stream` in `map`, at least `bytes` long (allocated on the stream, or
/// grown: the old buffer is freed in stream order, after the launches that used it) and, for a
/// workspace zeroed `once`, zeroed on the stream unless `kernel` on `shape` used it last.
fn workspace<'m>(
    map: &'m mut HashMap<usize, Workspace>,
    stream: &Arc<CudaStream>,
    bytes: u64,
    zero: WorkspaceZero,
    kernel: &str,
    shape: Shape,
) -> Result<&'m mut CudaSlice<u8>, String> {
    let bytes = usize::try_from(bytes)
        .map_err(|_| format!("a workspace of {bytes} bytes does not fit this host"))?
        .max(16);
    let key = stream.cu_stream() as usize;
    if map.get(&key).is_none_or(|w| w.buf.len() < bytes) {
        // Dropping the old buffer frees it on its stream, after the work queued there.
        map.remove(&key);
        // SAFETY: a workspace zeroed `once` is zeroed below before any launch reads it
        // (`last` is None); the others are zeroed by the launch, or written by the kernel
        // before it reads them.
        let buf = unsafe { stream.alloc::<u8>(bytes) }
            .map_err(|e| format!("allocating a workspace of {bytes} bytes: {e:?}"))?;
        map.insert(key, Workspace { buf, last: None });
    }
    let ws = map
        .get_mut(&key)
        .ok_or_else(|| "the workspace vanished".to_string())?;
    let user = (kernel.to_string(), shape);
    if zero == WorkspaceZero::Once && ws.last.as_ref() != Some(&user) {
        stream
            .memset_zeros(&mut ws.buf.slice_mut(..bytes))
            .map_err(|e| format!("zeroing the workspace: {e:?}"))?;
    }
    ws.last = Some(user);
    Ok(&mut ws.buf)
}
