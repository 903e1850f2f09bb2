//! `autotune._native`: the runtime ([`autotune::Tuned`]) on the raw device pointers and
//! streams that the Python package (`autotune/__init__.py`) reads from CUDA arrays
//! (`__cuda_array_interface__`, DLPack, PyTorch tensors).
//!
//! What a call checks, in order, before anything runs:
//!
//! 1. the descriptor against the extents the Python side measured ([`GemmDesc::problem`],
//!    [`GemvDesc::problem`]): dimensions, leading dimensions, batch strides, overlapping
//!    outputs. Pure: no device is touched, and [`check_gemm`] / [`check_gemv`] run it alone;
//! 2. each pointer not marked trusted, against the driver's record of its allocation (one
//!    `cuPointerGetAttributes` per operand): device memory, on this runtime's GPU, with the
//!    operand's whole extent inside the allocation. Every operand read through
//!    `__cuda_array_interface__` or DLPack (CuPy, JAX, Numba, a fake) is checked so;
//! 3. then the runtime resolves the problem (lookup, compile on first use) and launches on the
//!    caller's stream.
//!
//! Trusted operands: `gemm` and `gemv` take `trusted=` (keyword only, a mask, bit `i` for
//! operand `i` in the runtime's order: A, B or x, the output; 0 unless named), and skip step 2
//! for the operands it marks. The Python side sets a bit only in its PyTorch reader, for a
//! CUDA float32 tensor of exactly `torch.Tensor` or `torch.nn.Parameter` (a subclass may
//! override `data_ptr()`) whose GPU it has checked is this runtime's: the tensor's storage is
//! device memory of that GPU and PyTorch bounds every view it makes by it, which is what its
//! own kernels rely on (`torch.mm` on the same tensor reads the same memory unchecked; a
//! tensor wrapping another library's memory is trusted as far as PyTorch trusts that
//! library's description). A call on three tensors so makes no driver call before
//! [`Tuned::gemm_raw`].
//!
//! Argument errors are `ValueError`; failures of CUDA, the driver, NVRTC or a launch are
//! `autotune.Error` (a `RuntimeError`). A panic below (cudarc panics when a CUDA library cannot
//! be loaded) is caught and raised as `autotune.Error`, never as a `PanicException`.

use autotune::db::Database;
use autotune::problem::Layout;
use autotune::product::desc::{DescError, GemmDesc, GemvDesc};
use autotune::product::online::OnlineTuning;
use autotune::product::runtime::RuntimeError;
use autotune::{MathPolicy, Op, Shape, Tuned};
use cudarc::driver::{sys, CudaContext};
use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock, RwLock};
use torch::{TorchApi, TorchHits};

mod torch;

create_exception!(
    autotune,
    Error,
    PyRuntimeError,
    "A failure of CUDA, the driver, NVRTC or a launch (no GPU or driver included). Wrong \
     arguments raise ValueError or TypeError instead, before anything is launched."
);

/// The database this repository ships (`results/tuning.toml`), built in.
const SHIPPED_DB: &str = include_str!("../../results/tuning.toml");

/// A GEMM descriptor as the Python side passes it, one tuple: `(trans_a, trans_b, m, n, k,
/// (lda, ldb, ldc), alpha, beta, batch, (stride_a, stride_b, stride_c))`, the fields of
/// [`GemmDesc`] in its order, the layout as its two transposes.
#[derive(FromPyObject, Clone, Copy)]
struct GemmArgs(
    bool,
    bool,
    usize,
    usize,
    usize,
    (usize, usize, usize),
    f32,
    f32,
    usize,
    (usize, usize, usize),
);

impl GemmArgs {
    fn desc(&self) -> GemmDesc {
        let GemmArgs(ta, tb, m, n, k, (lda, ldb, ldc), alpha, beta, batch, (sa, sb, sc)) = *self;
        GemmDesc {
            layout: Layout::from_trans(ta, tb),
            m,
            n,
            k,
            lda,
            ldb,
            ldc,
            alpha,
            beta,
            batch,
            stride_a: sa,
            stride_b: sb,
            stride_c: sc,
        }
    }
}

/// A GEMV descriptor as the Python side passes it, one tuple: `(trans, m, k, lda, alpha, beta,
/// batch, stride_a, stride_x, stride_y)`, the fields of [`GemvDesc`] in its order.
#[derive(FromPyObject, Clone, Copy)]
struct GemvArgs(
    bool,
    usize,
    usize,
    usize,
    f32,
    f32,
    usize,
    usize,
    usize,
    usize,
);

impl GemvArgs {
    fn desc(&self) -> GemvDesc {
        let GemvArgs(trans, m, k, lda, alpha, beta, batch, sa, sx, sy) = *self;
        GemvDesc {
            trans,
            m,
            k,
            lda,
            alpha,
            beta,
            batch,
            stride_a: sa,
            stride_x: sx,
            stride_y: sy,
        }
    }
}

fn desc_error(e: DescError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

/// A runtime error as a Python exception: what the arguments got wrong is a `ValueError`, the
/// rest `autotune.Error`.
fn runtime_error(e: RuntimeError) -> PyErr {
    match e {
        RuntimeError::Desc(_) | RuntimeError::Shape(_) | RuntimeError::BufferLength { .. } => {
            PyValueError::new_err(e.to_string())
        }
        RuntimeError::Device(d) => Error::new_err(format!(
            "{d}; autotune runs on an NVIDIA GPU with its driver: check `nvidia-smi`, or catch \
             autotune.Error and call torch.mm / cuBLAS instead"
        )),
        e => Error::new_err(e.to_string()),
    }
}

/// Runs `f`, turning a panic below into `autotune.Error`.
fn guarded<T>(what: &str, f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let msg = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("unknown panic");
        let hint = if msg.contains("Unable to dynamically load") {
            ": a CUDA library is missing; install the NVIDIA driver, NVRTC and cuBLAS of CUDA \
             12 or 13 (e.g. pip install nvidia-cuda-nvrtc nvidia-cublas) or set AUTOTUNE_NVRTC \
             / AUTOTUNE_CUBLAS to their lib directories"
        } else {
            ""
        };
        Err(Error::new_err(format!(
            "{what}: internal failure: {msg}{hint}"
        )))
    })
}

/// The `trusted` mask that vouches for all three operands (bit 0: the runtime's A, bit 1: B
/// or x, bit 2: the output); any other bit is refused.
const TRUSTED_ALL: u8 = 0b111;

/// One operand as the caller passed it: its name in messages, its first element's address, how
/// many `f32` elements from there the call may touch, and whether the caller vouches for it
/// (then the driver is not asked about it).
struct Operand {
    name: &'static str,
    ptr: u64,
    len: usize,
    trusted: bool,
}

/// The three operands of a call, named for messages: `(address, elements)` each, operand `i`
/// trusted where bit `i` of `trusted` is set. ValueError for bits past [`TRUSTED_ALL`].
fn operands(
    names: [&'static str; 3],
    bufs: [(u64, usize); 3],
    trusted: u8,
) -> PyResult<[Operand; 3]> {
    if trusted & !TRUSTED_ALL != 0 {
        return Err(PyValueError::new_err(format!(
            "trusted = {trusted:#b}: a mask of the three operands (bits 0 to 2)"
        )));
    }
    Ok(std::array::from_fn(|i| Operand {
        name: names[i],
        ptr: bufs[i].0,
        len: bufs[i].1,
        trusted: trusted & (1 << i) != 0,
    }))
}

/// Checks with the driver that `op` lies in device memory of GPU `ordinal`, whole.
fn check_pointer(ordinal: usize, op: &Operand) -> PyResult<()> {
    use sys::CUpointer_attribute as A;
    let mut device: i32 = -1;
    let mut start: sys::CUdeviceptr = 0;
    let mut size: usize = 0;
    let mut attrs = [
        A::CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        A::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
        A::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    ];
    let mut data: [*mut c_void; 3] = [
        (&mut device as *mut i32).cast(),
        (&mut start as *mut sys::CUdeviceptr).cast(),
        (&mut size as *mut usize).cast(),
    ];
    // SAFETY: three attributes, each with a pointer to a value of its documented type (int,
    // CUdeviceptr, size_t); the driver writes defaults for a pointer it does not know.
    let r =
        unsafe { sys::cuPointerGetAttributes(3, attrs.as_mut_ptr(), data.as_mut_ptr(), op.ptr) };
    if r != sys::CUresult::CUDA_SUCCESS {
        return Err(Error::new_err(format!(
            "{}: the driver cannot describe pointer {:#x}: {r:?}",
            op.name, op.ptr
        )));
    }
    if size == 0 {
        return Err(PyValueError::new_err(format!(
            "{}: {:#x} is not CUDA device memory the driver knows (a host pointer, or a fake \
             __cuda_array_interface__?): pass an array allocated on the GPU",
            op.name, op.ptr
        )));
    }
    if usize::try_from(device).ok() != Some(ordinal) {
        return Err(PyValueError::new_err(format!(
            "{} is on GPU {device}, this autotune.Tuned on GPU {ordinal}: use \
             autotune.Tuned(device={device}) for it, or move the array",
            op.name
        )));
    }
    let bytes = (op.len as u64).saturating_mul(4);
    let end = op.ptr.saturating_add(bytes);
    let alloc_end = start.saturating_add(size as u64);
    if op.ptr < start || end > alloc_end {
        return Err(PyValueError::new_err(format!(
            "{}: its shape and strides reach [{:#x}, {end:#x}), past its allocation [{start:#x}, \
             {alloc_end:#x}): the array's __cuda_array_interface__ or DLPack description is wrong",
            op.name, op.ptr
        )));
    }
    Ok(())
}

/// The runtime bound to one GPU: `autotune.Tuned` holds one.
#[pyclass(frozen, module = "autotune._native")]
pub(crate) struct Runtime {
    tuned: Tuned,
    ctx: Arc<CudaContext>,
    ordinal: usize,
    /// The plans of the Python side's plan cache ([`Runtime::plan_gemm`]): a call made from
    /// one ([`Runtime::launch_plan`]) passes its index and the operands' addresses, not the
    /// descriptor, which was checked against the extents once.
    plans: RwLock<Vec<Plan>>,
    /// What [`Runtime::torch_call`] reads PyTorch tensors with ([`Runtime::use_torch`]).
    torch: OnceLock<TorchApi>,
    /// The keys [`Runtime::torch_call`] learned from the Python side's plan cache.
    hits: RwLock<TorchHits>,
}

/// A checked call of [`Runtime::plans`]: the descriptor and the operands' extents (elements).
#[derive(Clone, Copy)]
pub(crate) enum Plan {
    Gemm(GemmDesc, [usize; 3]),
    Gemv(GemvDesc, [usize; 3]),
}

impl Plan {
    /// A GEMM's plan, once its descriptor is checked against the extents `lens`.
    fn gemm(desc: GemmArgs, lens: [usize; 3]) -> PyResult<Plan> {
        let desc = desc.desc();
        desc.problem(lens).map_err(desc_error)?;
        Ok(Plan::Gemm(desc, lens))
    }

    /// A GEMV's plan, once its descriptor is checked against the extents `lens`.
    fn gemv(desc: GemvArgs, lens: [usize; 3]) -> PyResult<Plan> {
        let desc = desc.desc();
        desc.problem(lens).map_err(desc_error)?;
        Ok(Plan::Gemv(desc, lens))
    }

    /// The op's name and its operands' names in messages, and their extents.
    fn operands(&self) -> (&'static str, [&'static str; 3], [usize; 3]) {
        match *self {
            Plan::Gemm(_, lens) => ("gemm", ["a", "b", "out"], lens),
            Plan::Gemv(_, lens) => ("gemv", ["a", "x", "out"], lens),
        }
    }
}

/// Plans one runtime keeps before [`Runtime::plan_gemm`] refuses more (the Python side keeps
/// 512 and clears both at once).
const PLANS_MAX: usize = 4096;

impl Runtime {
    /// With the GIL released: checks with the driver each operand not marked trusted, then
    /// runs `f` (the runtime's raw call on them, [`Tuned::gemm_raw`] or [`Tuned::gemv_raw`]).
    ///
    /// The GIL stays released for the whole call, short as a warm call is (releasing and
    /// taking it back costs about 0.04 us while no other Python thread runs): a first call
    /// compiles (NVRTC) or tunes (`online=`), a launch waits while the stream's queue is full,
    /// and PyTorch's own ops release it too.
    ///
    /// The context is made current here only for the pointer checks: cudarc's bind is one
    /// `cuCtxGetCurrent` (`cuCtxSetCurrent` only when another context is current), and the
    /// runtime's launches (cudarc's `launch`, the cuBLAS path's `bind`) bind it themselves, as
    /// the C ABI's calls of `gemm_raw` rely on; so a call of three trusted operands skips it.
    fn launch(
        &self,
        py: Python<'_>,
        what: &str,
        ops: [Operand; 3],
        f: impl FnOnce() -> Result<(), RuntimeError> + Send,
    ) -> PyResult<()> {
        py.detach(|| {
            guarded(what, || {
                if ops.iter().any(|op| !op.trusted) {
                    self.ctx.bind_to_thread().map_err(|e| {
                        Error::new_err(format!("{what}: binding the context: {e:?}"))
                    })?;
                    for op in ops.iter().filter(|op| !op.trusted) {
                        check_pointer(self.ordinal, op)?;
                    }
                }
                f().map_err(runtime_error)
            })
        })
    }
}

// SAFETY (each `gemm_raw` / `gemv_raw` below): `launch` has just checked that each pointer
// not marked trusted is device memory of this GPU holding the operand's whole extent, which
// the descriptor was checked against (`problem`), so it holds `desc.lens()` floats; a trusted
// pointer is a PyTorch CUDA tensor's `data_ptr()` on this GPU (the Python side checked its
// device) whose storage holds its extent, as PyTorch guarantees for the views it makes and
// its own kernels rely on (the module's note); the Python caller keeps the arrays alive for
// the call and their owners order later work on the stream; the stream is the caller's (0, 2,
// or a stream of this GPU's primary context, the one `ctx` retains and PyTorch, CuPy and JAX
// use), the runtime being built on `Tuned::raw_context`.

#[pymethods]
impl Runtime {
    /// Opens GPU `device` and binds the database (`db`: a path; `None`: the shipped one).
    #[new]
    #[pyo3(signature = (db=None, device=0, vendor_guard=true, simt_only=false, record_to=None, online=None, quiet=false))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        db: Option<PathBuf>,
        device: usize,
        vendor_guard: bool,
        simt_only: bool,
        record_to: Option<PathBuf>,
        online: Option<PathBuf>,
        quiet: bool,
    ) -> PyResult<Runtime> {
        py.detach(|| {
            guarded("autotune.Tuned", || {
                // The database first: a wrong file is the caller's argument, whatever the GPU.
                let database = match &db {
                    Some(path) => Database::load(path),
                    None => Database::from_toml_str(SHIPPED_DB, "the shipped tuning database"),
                }
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
                // Event tracking off: every buffer is borrowed from its owner for one call and
                // ordered by streams, as PyTorch and CuPy order theirs.
                let ctx = Tuned::raw_context(device).map_err(runtime_error)?;
                let mut tuned = Tuned::new(&ctx, database)
                    .map_err(runtime_error)?
                    .vendor_guard(vendor_guard);
                if simt_only {
                    tuned = tuned.math(MathPolicy::Simt);
                }
                if let Some(dir) = record_to {
                    tuned = tuned.record_to(dir);
                }
                if let Some(path) = online {
                    tuned = tuned
                        .online_tuning(OnlineTuning::new(path))
                        .map_err(runtime_error)?;
                }
                if quiet {
                    tuned = tuned.quiet();
                }
                Ok(Runtime {
                    tuned,
                    ctx,
                    ordinal: device,
                    plans: RwLock::new(Vec::new()),
                    torch: OnceLock::new(),
                    hits: RwLock::new(TorchHits::default()),
                })
            })
        })
    }

    /// The GPU's name, as the database keys it.
    #[getter]
    fn device_name(&self) -> String {
        self.tuned.device().name.clone()
    }

    /// The GPU's CUDA ordinal.
    #[getter]
    fn device(&self) -> usize {
        self.ordinal
    }

    /// The GPU's compute capability, e.g. `sm_90`.
    #[getter]
    fn arch(&self) -> String {
        self.tuned.device().arch.to_string()
    }

    /// `C = alpha op(A) op(B) + beta C` ([`GemmArgs`], row-major as `GemmDesc`) on `stream`,
    /// with A, B and C at `a`, `b`, `c` holding `a_len`, `b_len`, `c_len` floats.
    ///
    /// `trusted` (keyword only; 0, none, unless named): bit 0 vouches for A, bit 1 for B, bit
    /// 2 for C, whose pointers the driver is then not asked about (the module's note says
    /// when the Python side sets a bit: for a PyTorch tensor alone).
    #[pyo3(signature = (desc, a, a_len, b, b_len, c, c_len, stream, *, trusted=0))]
    #[allow(clippy::too_many_arguments)]
    fn gemm(
        &self,
        py: Python<'_>,
        desc: GemmArgs,
        a: u64,
        a_len: usize,
        b: u64,
        b_len: usize,
        c: u64,
        c_len: usize,
        stream: usize,
        trusted: u8,
    ) -> PyResult<()> {
        let plan = Plan::gemm(desc, [a_len, b_len, c_len])?;
        self.run_plan(py, plan, [a, b, c], stream, trusted)
    }

    /// `y = alpha op(A) x + beta y` ([`GemvArgs`], as `GemvDesc`) on `stream`; `trusted` as
    /// [`Runtime::gemm`]'s (bit 1: x, bit 2: y).
    #[pyo3(signature = (desc, a, a_len, x, x_len, y, y_len, stream, *, trusted=0))]
    #[allow(clippy::too_many_arguments)]
    fn gemv(
        &self,
        py: Python<'_>,
        desc: GemvArgs,
        a: u64,
        a_len: usize,
        x: u64,
        x_len: usize,
        y: u64,
        y_len: usize,
        stream: usize,
        trusted: u8,
    ) -> PyResult<()> {
        let plan = Plan::gemv(desc, [a_len, x_len, y_len])?;
        self.run_plan(py, plan, [a, x, y], stream, trusted)
    }

    /// Checks a GEMM ([`GemmArgs`]) against the operands' extents, as [`Runtime::gemm`] does
    /// before each call, and keeps it: returns the plan's index for [`Runtime::launch_plan`].
    fn plan_gemm(
        &self,
        desc: GemmArgs,
        a_len: usize,
        b_len: usize,
        c_len: usize,
    ) -> PyResult<usize> {
        self.keep(Plan::gemm(desc, [a_len, b_len, c_len])?)
    }

    /// [`Runtime::plan_gemm`] for a GEMV ([`GemvArgs`]; extents of A, x and y).
    fn plan_gemv(
        &self,
        desc: GemvArgs,
        a_len: usize,
        x_len: usize,
        y_len: usize,
    ) -> PyResult<usize> {
        self.keep(Plan::gemv(desc, [a_len, x_len, y_len])?)
    }

    /// Forgets every plan: the indices handed out before name none.
    fn clear_plans(&self) {
        if let Ok(mut plans) = self.plans.write() {
            plans.clear();
        }
        if let Ok(mut hits) = self.hits.write() {
            hits.clear();
        }
    }

    /// The call of plan `plan` ([`Runtime::plan_gemm`], [`Runtime::plan_gemv`]) on the
    /// operands at `a`, `b` (x) and `c` (y), whose extents are the plan's, on `stream`;
    /// `trusted` as [`Runtime::gemm`]'s. Positional only, the cheapest call there is: the
    /// Python side's plan cache makes it for a call it has planned before, after checking what
    /// could differ since (devices, streams, alignment, overlap).
    #[allow(clippy::too_many_arguments)]
    fn launch_plan(
        &self,
        py: Python<'_>,
        plan: usize,
        a: u64,
        b: u64,
        c: u64,
        stream: usize,
        trusted: u8,
    ) -> PyResult<()> {
        self.run_plan(py, self.plan(plan)?, [a, b, c], stream, trusted)
    }

    /// Hands over what [`Runtime::torch_call`] needs (the first hand-over stays): PyTorch's
    /// `float32` and `strided`, the exact tensor types trusted, the current-stream function,
    /// the Python side's plan cache (a dict it only ever clears, never replaces), and whether
    /// the process sees one GPU, this runtime's (`torch.cuda.device_count() == 1`, device 0:
    /// no tensor's GPU is asked).
    fn use_torch(
        &self,
        float32: Py<PyAny>,
        strided: Py<PyAny>,
        types: Vec<Py<PyAny>>,
        raw_stream: Py<PyAny>,
        plans: Py<PyDict>,
        one_gpu: bool,
    ) {
        let _ = self.torch.set(TorchApi {
            float32,
            strided,
            types,
            raw_stream,
            plans,
            one_gpu,
        });
    }

    /// The Python side's cached call on PyTorch tensors (`Tuned._cached`'s first branch, here
    /// to spare the interpreter): `op` (`"gemm"`, `"gemv"`: `b` is x) with `out` given, on the
    /// current stream. Launches and returns true only where the Python side would launch from
    /// its cache: `a`, `b` and `out` of exactly a trusted tensor type, CUDA float32 and
    /// strided, the flags `bool` and the scalars `float` (no -0.0), a plan under the same key
    /// (op, flags, scalars, each tensor's type, shape and strides), every tensor on this GPU,
    /// each address a 16-byte multiple, `out` clear of the inputs. Anything else, an error
    /// reading a tensor included, returns false, and the Python side decides afresh; an error
    /// of the launch itself is raised. The key is looked up in a map learned from the Python
    /// side's cache (src/torch.rs: no Python key is built on a call it has seen).
    #[allow(clippy::too_many_arguments)]
    fn torch_call(
        &self,
        py: Python<'_>,
        op: &Bound<'_, PyAny>,
        ta: &Bound<'_, PyAny>,
        tb: &Bound<'_, PyAny>,
        alpha: &Bound<'_, PyAny>,
        beta: &Bound<'_, PyAny>,
        a: &Bound<'_, PyAny>,
        b: &Bound<'_, PyAny>,
        out: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let Some(api) = self.torch.get() else {
            return Ok(false);
        };
        let Ok(Some((plan, [p0, p1, pc], trusted))) =
            self.torch_hit(py, api, [op, ta, tb, alpha, beta], [a, b, out])
        else {
            return Ok(false);
        };
        let stream = match api.raw_stream.bind(py).call1((self.ordinal,)) {
            Ok(s) => match s.extract::<usize>() {
                Ok(s) => s,
                Err(_) => return Ok(false),
            },
            Err(_) => return Ok(false),
        };
        self.run_plan(py, plan, [p0, p1, pc], stream, trusted)
            .map(|()| true)
    }

    /// Host microseconds per call of `calls` back-to-back calls of plan `plan` straight from
    /// Rust ([`Tuned::gemm_raw`] / [`Tuned::gemv_raw`], what a Rust product calls), on
    /// `stream`, then waits for the device: the per-call baseline the Python call is compared
    /// with in the same process (python/tests/overhead_bench.py), where the machine's state is
    /// the same for both. The operands must be device memory of this GPU holding the plan's
    /// extents, as for [`Runtime::launch_plan`] with every bit of `trusted` set.
    #[allow(clippy::too_many_arguments)]
    fn _time_rust_calls(
        &self,
        py: Python<'_>,
        plan: usize,
        a: u64,
        b: u64,
        c: u64,
        stream: usize,
        calls: usize,
    ) -> PyResult<f64> {
        let found = self.plan(plan)?;
        let (_, names, [la, lb, lc]) = found.operands();
        let ops = operands(names, [(a, la), (b, lb), (c, lc)], 0)?;
        py.detach(|| {
            guarded("timing", || {
                // The driver vouches for the operands once, with the plan's extents.
                self.ctx
                    .bind_to_thread()
                    .map_err(|e| Error::new_err(format!("binding the context: {e:?}")))?;
                for op in &ops {
                    check_pointer(self.ordinal, op)?;
                }
                let start = std::time::Instant::now();
                for _ in 0..calls {
                    // SAFETY: each pointer was just checked to be device memory of this GPU
                    // holding the plan's extent, which the plan's descriptor was checked
                    // against; the caller keeps them alive until this returns, which waits
                    // for the device.
                    unsafe { self.call_raw(found, stream, [a, b, c]) }.map_err(runtime_error)?;
                }
                let us = start.elapsed().as_secs_f64() * 1e6 / calls.max(1) as f64;
                self.tuned.synchronize().map_err(runtime_error)?;
                Ok(us)
            })
        })
    }

    /// [`Runtime::launch_plan`] holding the GIL through the launch (for the per-call
    /// benchmark: what releasing it costs a call).
    #[allow(clippy::too_many_arguments)]
    fn _launch_plan_holding_gil(
        &self,
        plan: usize,
        a: u64,
        b: u64,
        c: u64,
        stream: usize,
        trusted: u8,
    ) -> PyResult<()> {
        let found @ Plan::Gemm(..) = self.plan(plan)? else {
            return Err(PyValueError::new_err(format!("no GEMM plan {plan}")));
        };
        if trusted != TRUSTED_ALL {
            return Err(PyValueError::new_err("only for trusted operands"));
        }
        // SAFETY: as launch_plan's, every operand trusted.
        guarded("gemm", || unsafe {
            self.call_raw(found, stream, [a, b, c])
                .map_err(runtime_error)
        })
    }

    /// What the runtime would run for this GEMM and why (the rule, the config, the guard).
    fn explain_gemm(&self, desc: GemmArgs) -> PyResult<String> {
        let desc = desc.desc();
        let (shape, _) = desc.problem(desc.lens()).map_err(desc_error)?;
        self.describe(Op::Gemm, shape)
    }

    /// What the runtime would run for this GEMV and why.
    fn explain_gemv(&self, desc: GemvArgs) -> PyResult<String> {
        let desc = desc.desc();
        let (shape, _) = desc.problem(desc.lens()).map_err(desc_error)?;
        self.describe(Op::Gemv, shape)
    }
}

impl Runtime {
    /// Launches `plan`'s call (its descriptor checked against its extents) on the operands
    /// at `ptrs` (A, B or x, the output), on `stream`, `trusted` as [`Runtime::gemm`]'s.
    fn run_plan(
        &self,
        py: Python<'_>,
        plan: Plan,
        [a, b, c]: [u64; 3],
        stream: usize,
        trusted: u8,
    ) -> PyResult<()> {
        let (what, names, [la, lb, lc]) = plan.operands();
        let ops = operands(names, [(a, la), (b, lb), (c, lc)], trusted)?;
        // SAFETY: as the note above the `#[pymethods]` says; the plan's descriptor was checked
        // against these extents.
        self.launch(py, what, ops, || unsafe {
            self.call_raw(plan, stream, [a, b, c])
        })
    }

    /// [`Tuned::gemm_raw`] or [`Tuned::gemv_raw`], as `plan` says, on the operands at `a`, `b`
    /// (x) and `c` (y).
    ///
    /// # Safety
    ///
    /// As [`Tuned::gemm_raw`]'s, with the plan's extents.
    unsafe fn call_raw(
        &self,
        plan: Plan,
        stream: usize,
        [a, b, c]: [u64; 3],
    ) -> Result<(), RuntimeError> {
        // SAFETY: the caller's promises, passed on.
        unsafe {
            match plan {
                Plan::Gemm(desc, _) => self.tuned.gemm_raw(stream, &desc, a, b, c),
                Plan::Gemv(desc, _) => self.tuned.gemv_raw(stream, &desc, a, b, c),
            }
        }
    }

    /// Plan `index` of [`Runtime::plans`].
    fn plan(&self, index: usize) -> PyResult<Plan> {
        self.plans
            .read()
            .ok()
            .and_then(|plans| plans.get(index).copied())
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "no plan {index}: plans come from plan_gemm or plan_gemv and end with \
                     clear_plans"
                ))
            })
    }

    fn keep(&self, plan: Plan) -> PyResult<usize> {
        let mut plans = self
            .plans
            .write()
            .map_err(|_| Error::new_err("the plan list was poisoned by a panic"))?;
        if plans.len() >= PLANS_MAX {
            return Err(PyValueError::new_err(format!(
                "{PLANS_MAX} plans kept: clear_plans() first"
            )));
        }
        plans.push(plan);
        Ok(plans.len() - 1)
    }

    fn describe(&self, op: Op, shape: Shape) -> PyResult<String> {
        guarded("explain", || {
            Ok(self.tuned.explain(op, shape).describe(op, shape))
        })
    }
}

/// Checks a GEMM descriptor ([`GemmArgs`]) against the operands' extents (elements) without
/// touching any device; returns the problem's label (e.g. `64x48x32`, with its form's tags) or
/// raises `ValueError` saying what is wrong.
#[pyfunction]
fn check_gemm(desc: GemmArgs, a_len: usize, b_len: usize, c_len: usize) -> PyResult<String> {
    let (shape, _) = desc
        .desc()
        .problem([a_len, b_len, c_len])
        .map_err(desc_error)?;
    Ok(shape.label(Op::Gemm))
}

/// Checks a GEMV descriptor ([`GemvArgs`]) against the operands' extents without touching any
/// device, like [`check_gemm`].
#[pyfunction]
fn check_gemv(desc: GemvArgs, a_len: usize, x_len: usize, y_len: usize) -> PyResult<String> {
    let (shape, _) = desc
        .desc()
        .problem([a_len, x_len, y_len])
        .map_err(desc_error)?;
    Ok(shape.label(Op::Gemv))
}

/// How many CUDA GPUs the driver reports (0 without a driver).
#[pyfunction]
fn device_count() -> PyResult<usize> {
    guarded("device_count", || {
        Ok(autotune::cuda::device::device_count()
            .map(|n| n.max(0) as usize)
            .unwrap_or(0))
    })
}

/// The module `autotune._native`.
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add_class::<Runtime>()?;
    m.add_function(wrap_pyfunction!(check_gemm, m)?)?;
    m.add_function(wrap_pyfunction!(check_gemv, m)?)?;
    m.add_function(wrap_pyfunction!(device_count, m)?)?;
    m.add("SHIPPED_DB_BYTES", SHIPPED_DB.len())?;
    Ok(())
}
