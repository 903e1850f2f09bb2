//! Loading cuBLAS (libcublas) ourselves, so that the user can choose which one, and a handle
//! ([`Blas`]) for the calls this crate makes.
//!
//! cudarc's loader finds `libcublas.so.13` before `libcublas.so.12` whatever the order of
//! `LD_LIBRARY_PATH`, and cuBLAS 13 dropped the archs before sm_75 (a GTX 1080 Ti needs cuBLAS
//! 12). Here the library is [`ENV`] (`AUTOTUNE_CUBLAS`) when it is set: a library file, a
//! directory holding `libcublas.so*` (the highest-versioned `libcublas.so.N` there), or a bare
//! file name the dynamic loader looks up; when it is unset (or empty), the names cudarc tries,
//! in cudarc's order. A chosen library that cannot be loaded is an error, never a fallback to
//! another cuBLAS. These rules are the `dylib` module's, shared with NVRTC.
//!
//! The library is loaded once per process and never unloaded. [`Blas`] calls it with full
//! column-major cuBLAS parameters on cudarc buffers, checking each buffer's length against
//! them first, in plain host-pointer mode (`alpha` and `beta` are values).

use super::dylib::{self, symbol, OpenError};
use super::error::RunError;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};
use std::ffi::{c_int, c_void};
use std::sync::{Arc, OnceLock};

/// The environment variable that chooses the cuBLAS library: a file
/// (`/opt/cuda-12/lib64/libcublas.so.12`), a directory holding `libcublas.so*`, or a file name
/// for the dynamic loader to look up (`libcublas.so.12`).
pub const ENV: &str = "AUTOTUNE_CUBLAS";

/// `cublasHandle_t`: an opaque handle.
type Handle = *mut c_void;
/// `cublasStatus_t`, kept as its integer so that an unknown value is no undefined behaviour.
type Status = c_int;

// The C declarations of cublas_api.h, one a line (`cublasOperation_t` and the other enums as
// `int`; `long long int` strides).
#[rustfmt::skip]
mod ffi {
    use super::{Handle, Status};
    use std::ffi::{c_int, c_longlong, c_void};
    pub(super) type CreateFn = unsafe extern "C" fn(*mut Handle) -> Status;
    pub(super) type DestroyFn = unsafe extern "C" fn(Handle) -> Status;
    pub(super) type SetStreamFn = unsafe extern "C" fn(Handle, *mut c_void) -> Status;
    pub(super) type SetMathModeFn = unsafe extern "C" fn(Handle, c_int) -> Status;
    pub(super) type GetVersionFn = unsafe extern "C" fn(Handle, *mut c_int) -> Status;
    pub(super) type GetPropertyFn = unsafe extern "C" fn(c_int, *mut c_int) -> Status;
    pub(super) type GemmFn<T> = unsafe extern "C" fn(Handle, c_int, c_int, c_int, c_int, c_int, *const T, *const T, c_int, *const T, c_int, *const T, *mut T, c_int) -> Status;
    pub(super) type GemmStridedFn<T> = unsafe extern "C" fn(Handle, c_int, c_int, c_int, c_int, c_int, *const T, *const T, c_int, c_longlong, *const T, c_int, c_longlong, *const T, *mut T, c_int, c_longlong, c_int) -> Status;
    pub(super) type GemvFn = unsafe extern "C" fn(Handle, c_int, c_int, c_int, *const f32, *const f32, c_int, *const f32, c_int, *const f32, *mut f32, c_int) -> Status;
    pub(super) type GemvStridedFn = unsafe extern "C" fn(Handle, c_int, c_int, c_int, *const f32, *const f32, c_int, c_longlong, *const f32, c_int, c_longlong, *const f32, *mut f32, c_int, c_longlong, c_int) -> Status;
}
use ffi::*;

/// A loaded cuBLAS: the library (kept loaded for the process's life), what was opened, and the
/// functions this crate calls.
pub struct Cublas {
    library: String,
    create: CreateFn,
    destroy: DestroyFn,
    set_stream: SetStreamFn,
    set_math_mode: SetMathModeFn,
    get_version: GetVersionFn,
    get_property: GetPropertyFn,
    sgemm: GemmFn<f32>,
    dgemm: GemmFn<f64>,
    sgemv: GemvFn,
    sgemm_strided: GemmStridedFn<f32>,
    dgemm_strided: GemmStridedFn<f64>,
    /// Since CUDA 11.6: a cuBLAS without it still loads.
    sgemv_strided: Option<GemvStridedFn>,
    /// Holds the functions above valid: never dropped before them (it lives in a static).
    _lib: libloading::Library,
}

/// Why cuBLAS could not be loaded, kept to be handed out as a [`RunError`] on every call.
#[derive(Debug, Clone)]
enum LoadFailure {
    Missing,
    Choice { value: String, tried: String },
    Unusable { library: String, reason: String },
}

impl From<LoadFailure> for RunError {
    fn from(f: LoadFailure) -> RunError {
        match f {
            LoadFailure::Missing => RunError::NoCublas,
            LoadFailure::Choice { value, tried } => RunError::CublasChoice { value, tried },
            LoadFailure::Unusable { library, reason } => {
                RunError::CublasUnusable { library, reason }
            }
        }
    }
}

static CUBLAS: OnceLock<Result<Cublas, LoadFailure>> = OnceLock::new();

/// The process's cuBLAS, loaded on first use (see the module documentation for which one).
pub fn get() -> Result<&'static Cublas, RunError> {
    CUBLAS
        .get_or_init(|| load(std::env::var_os(ENV).as_deref()))
        .as_ref()
        .map_err(|f| f.clone().into())
}

/// The loaded cuBLAS's version and library, for messages: `13.0.2 (/path/libcublas.so.13)`.
pub fn describe() -> Result<String, RunError> {
    let c = get()?;
    Ok(format!("{} ({})", c.version()?, c.library()))
}

/// The cuBLAS that `value` (the value of [`ENV`]) chooses.
fn load(value: Option<&std::ffi::OsStr>) -> Result<Cublas, LoadFailure> {
    let opened = dylib::open("cublas", value, "cublasCreate_v2").map_err(|e| match e {
        OpenError::NotFound => LoadFailure::Missing,
        OpenError::Chosen { value, tried } => LoadFailure::Choice { value, tried },
    })?;
    Cublas::from_library(opened.lib, opened.name)
}

impl Cublas {
    fn from_library(lib: libloading::Library, library: String) -> Result<Cublas, LoadFailure> {
        let unusable = |reason| LoadFailure::Unusable {
            library: library.clone(),
            reason,
        };
        // SAFETY (each lookup): the types are the declarations of cublas_api.h in CUDA 12 and
        // 13 (as cudarc's bindings give them), with the status and the enums as `int`.
        unsafe {
            Ok(Cublas {
                create: symbol(&lib, "cublasCreate_v2").map_err(unusable)?,
                destroy: symbol(&lib, "cublasDestroy_v2").map_err(unusable)?,
                set_stream: symbol(&lib, "cublasSetStream_v2").map_err(unusable)?,
                set_math_mode: symbol(&lib, "cublasSetMathMode").map_err(unusable)?,
                get_version: symbol(&lib, "cublasGetVersion_v2").map_err(unusable)?,
                get_property: symbol(&lib, "cublasGetProperty").map_err(unusable)?,
                sgemm: symbol(&lib, "cublasSgemm_v2").map_err(unusable)?,
                dgemm: symbol(&lib, "cublasDgemm_v2").map_err(unusable)?,
                sgemv: symbol(&lib, "cublasSgemv_v2").map_err(unusable)?,
                sgemm_strided: symbol(&lib, "cublasSgemmStridedBatched").map_err(unusable)?,
                dgemm_strided: symbol(&lib, "cublasDgemmStridedBatched").map_err(unusable)?,
                sgemv_strided: symbol(&lib, "cublasSgemvStridedBatched").ok(),
                library,
                _lib: lib,
            })
        }
    }

    /// What was opened: the library's path, or the name the loader was given when the path
    /// cannot be found.
    pub fn library(&self) -> &str {
        &self.library
    }

    /// The version as `major.minor.patch` (`cublasGetProperty`: no handle, no GPU needed).
    pub fn version(&self) -> Result<String, RunError> {
        let mut parts = [0; 3];
        // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL.
        for (kind, part) in parts.iter_mut().enumerate() {
            // SAFETY: a valid property kind and out-pointer.
            let rc = unsafe { (self.get_property)(kind as c_int, part) };
            check("cublasGetProperty", rc)?;
        }
        Ok(format!("{}.{}.{}", parts[0], parts[1], parts[2]))
    }
}

/// cuBLAS's name of a status.
fn status_name(rc: Status) -> &'static str {
    match rc {
        0 => "CUBLAS_STATUS_SUCCESS",
        1 => "CUBLAS_STATUS_NOT_INITIALIZED",
        3 => "CUBLAS_STATUS_ALLOC_FAILED",
        7 => "CUBLAS_STATUS_INVALID_VALUE",
        8 => "CUBLAS_STATUS_ARCH_MISMATCH",
        11 => "CUBLAS_STATUS_MAPPING_ERROR",
        13 => "CUBLAS_STATUS_EXECUTION_FAILED",
        14 => "CUBLAS_STATUS_INTERNAL_ERROR",
        15 => "CUBLAS_STATUS_NOT_SUPPORTED",
        16 => "CUBLAS_STATUS_LICENSE_ERROR",
        _ => "an unknown status",
    }
}

/// `Ok` for `CUBLAS_STATUS_SUCCESS`, else the call and the status.
fn check(what: &'static str, rc: Status) -> Result<(), RunError> {
    if rc == 0 {
        return Ok(());
    }
    let mut message = format!("{} ({rc})", status_name(rc));
    if rc == 8 {
        message.push_str(": this cuBLAS does not support this GPU's arch (cuBLAS 13 dropped the archs before sm_75: set AUTOTUNE_CUBLAS to a cuBLAS 12 library)");
    }
    Err(RunError::Cublas { what, message })
}

/// `cublasOperation_t` for real matrices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transpose {
    /// `CUBLAS_OP_N`: the matrix as stored.
    N = 0,
    /// `CUBLAS_OP_T`: its transpose.
    T = 1,
}

/// `cublasMath_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MathMode {
    /// `CUBLAS_DEFAULT_MATH`: plain FP32 for SGEMM (TF32 tensor cores off).
    Default = 0,
    /// `CUBLAS_PEDANTIC_MATH`: the prescribed precision everywhere, and no reduced-precision
    /// reductions.
    Pedantic = 2,
}

/// Column-major `C (m x n) = alpha op(A) op(B) + beta C`, with `op(A)` `m x k`, `op(B)`
/// `k x n`, as `cublas<t>gemm` takes it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmParams<T> {
    /// `op(A)`.
    pub transa: Transpose,
    /// `op(B)`.
    pub transb: Transpose,
    /// Rows of `op(A)` and C.
    pub m: i32,
    /// Columns of `op(B)` and C.
    pub n: i32,
    /// Columns of `op(A)`, rows of `op(B)`.
    pub k: i32,
    /// Scales `op(A) op(B)`.
    pub alpha: T,
    /// Leading dimension of A as stored.
    pub lda: i32,
    /// Leading dimension of B as stored.
    pub ldb: i32,
    /// Scales C's old value (0: C is only written).
    pub beta: T,
    /// Leading dimension of C.
    pub ldc: i32,
}

/// Column-major `y = alpha op(A) x + beta y` with A `m x n` as stored, as `cublasSgemv` takes
/// it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemvParams {
    /// `op(A)`.
    pub trans: Transpose,
    /// Rows of A as stored.
    pub m: i32,
    /// Columns of A as stored.
    pub n: i32,
    /// Scales `op(A) x`.
    pub alpha: f32,
    /// Leading dimension of A.
    pub lda: i32,
    /// Stride of x's elements.
    pub incx: i32,
    /// Scales y's old value.
    pub beta: f32,
    /// Stride of y's elements.
    pub incy: i32,
}

/// A strided batch: `count` problems, the i-th one's matrices `i * stride` elements into each
/// buffer. For gemv, `b` is x and `c` is y.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    /// Elements between consecutive A.
    pub stride_a: i64,
    /// Elements between consecutive B (gemv: x).
    pub stride_b: i64,
    /// Elements between consecutive C (gemv: y).
    pub stride_c: i64,
    /// How many problems.
    pub count: i32,
}

impl Batch {
    /// One problem.
    const ONE: Batch = Batch {
        stride_a: 0,
        stride_b: 0,
        stride_c: 0,
        count: 1,
    };
}

/// Elements a column-major `rows x cols` matrix with leading dimension `ld` spans, or why the
/// dimensions are invalid.
fn matrix_span(what: &str, rows: i32, cols: i32, ld: i32) -> Result<u64, String> {
    if rows < 0 || cols < 0 {
        return Err(format!("{what} is {rows} x {cols}: negative dimensions"));
    }
    if ld < rows.max(1) {
        return Err(format!(
            "{what} has {rows} rows but a leading dimension of {ld}"
        ));
    }
    Ok(if rows == 0 || cols == 0 {
        0
    } else {
        (cols as u64 - 1) * ld as u64 + rows as u64
    })
}

/// Elements a vector of `len` elements `inc` apart spans.
fn vector_span(what: &str, len: i32, inc: i32) -> Result<u64, String> {
    if len < 0 || inc == 0 {
        return Err(format!("{what} has {len} elements with stride {inc}"));
    }
    Ok(if len == 0 {
        0
    } else {
        (len as u64 - 1) * inc.unsigned_abs() as u64 + 1
    })
}

/// Checks that a buffer of `len` elements holds `batch.count` operands of `span` elements,
/// `stride` apart.
fn check_len(what: &str, span: u64, stride: i64, count: i32, len: usize) -> Result<(), String> {
    if stride < 0 || count < 0 {
        return Err(format!("{what}: stride {stride}, count {count}"));
    }
    let need = match (span, count) {
        (0, _) | (_, 0) => 0,
        _ => (count as u64 - 1) * stride as u64 + span,
    };
    if (len as u64) < need {
        return Err(format!(
            "{what} holds {len} elements, the parameters need {need}"
        ));
    }
    Ok(())
}

/// Checks a (strided batched) gemm's parameters against its buffers' lengths `[a, b, c]`.
fn check_gemm<T>(p: &GemmParams<T>, batch: &Batch, lens: [usize; 3]) -> Result<(), String> {
    let stored = |t, rows, cols| {
        if t == Transpose::N {
            (rows, cols)
        } else {
            (cols, rows)
        }
    };
    let (ar, ac) = stored(p.transa, p.m, p.k);
    let (br, bc) = stored(p.transb, p.k, p.n);
    let a = matrix_span("A", ar, ac, p.lda)?;
    let b = matrix_span("B", br, bc, p.ldb)?;
    let c = matrix_span("C", p.m, p.n, p.ldc)?;
    check_len("A", a, batch.stride_a, batch.count, lens[0])?;
    check_len("B", b, batch.stride_b, batch.count, lens[1])?;
    check_len("C", c, batch.stride_c, batch.count, lens[2])
}

/// Checks a (strided batched) gemv's parameters against its buffers' lengths `[a, x, y]`.
fn check_gemv(p: &GemvParams, batch: &Batch, lens: [usize; 3]) -> Result<(), String> {
    let (xlen, ylen) = if p.trans == Transpose::N {
        (p.n, p.m)
    } else {
        (p.m, p.n)
    };
    let a = matrix_span("A", p.m, p.n, p.lda)?;
    let x = vector_span("x", xlen, p.incx)?;
    let y = vector_span("y", ylen, p.incy)?;
    check_len("A", a, batch.stride_a, batch.count, lens[0])?;
    check_len("x", x, batch.stride_b, batch.count, lens[1])?;
    check_len("y", y, batch.stride_c, batch.count, lens[2])
}

/// A cuBLAS handle bound to a cudarc stream (and so to its context), destroyed on drop.
pub struct Blas {
    cublas: &'static Cublas,
    handle: Handle,
    stream: Arc<CudaStream>,
}

// SAFETY: a cuBLAS handle may be used from any host thread (each call binds the handle's
// context first); `set_stream` takes `&mut self`.
unsafe impl Send for Blas {}
// SAFETY: as above; cuBLAS calls on one handle from several threads are thread-safe.
unsafe impl Sync for Blas {}

impl Blas {
    /// A handle of the process's cuBLAS ([`get`]) enqueuing on `stream`, in cuBLAS's default
    /// math mode.
    pub fn new(stream: Arc<CudaStream>) -> Result<Blas, RunError> {
        let cublas = get()?;
        bind(&stream)?;
        let mut handle: Handle = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the stream's context is current on this thread.
        check("cublasCreate_v2", unsafe { (cublas.create)(&mut handle) })?;
        // From here on, Drop destroys the handle.
        let blas = Blas {
            cublas,
            handle,
            stream,
        };
        blas.enqueue_on_stream()?;
        Ok(blas)
    }

    /// What the handle calls: the loaded library.
    pub fn cublas(&self) -> &'static Cublas {
        self.cublas
    }

    /// The stream the handle enqueues on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    fn enqueue_on_stream(&self) -> Result<(), RunError> {
        // SAFETY: a live handle; the stream belongs to the handle's context and lives as long
        // as the handle holds it.
        let rc = unsafe { (self.cublas.set_stream)(self.handle, self.stream.cu_stream().cast()) };
        check("cublasSetStream_v2", rc)
    }

    /// Enqueues on `stream` from now on: a stream of the same context as the handle's.
    pub fn set_stream(&mut self, stream: Arc<CudaStream>) -> Result<(), RunError> {
        if !Arc::ptr_eq(stream.context(), self.stream.context()) {
            return Err(RunError::Cublas {
                what: "cublasSetStream_v2",
                message: "the stream belongs to another CUDA context than the handle".into(),
            });
        }
        self.stream = stream;
        self.enqueue_on_stream()
    }

    /// Sets the math mode ([`MathMode::Default`]: plain FP32, no TF32).
    pub fn set_math_mode(&self, mode: MathMode) -> Result<(), RunError> {
        // SAFETY: a live handle and a valid `cublasMath_t`.
        let rc = unsafe { (self.cublas.set_math_mode)(self.handle, mode as c_int) };
        check("cublasSetMathMode", rc)
    }

    /// `cublasGetVersion_v2`: `major * 10000 + minor * 100 + patch` (130002 for 13.0.2).
    pub fn version(&self) -> Result<i32, RunError> {
        let mut v: c_int = 0;
        // SAFETY: a live handle and a valid out-pointer.
        check("cublasGetVersion_v2", unsafe {
            (self.cublas.get_version)(self.handle, &mut v)
        })?;
        Ok(v)
    }

    /// `cublasSgemm_v2` or `cublasDgemm_v2` (by `T`) on the handle's stream.
    pub fn gemm<T: Real>(
        &self,
        p: &GemmParams<T>,
        a: &impl DevicePtr<T>,
        b: &impl DevicePtr<T>,
        c: &mut impl DevicePtrMut<T>,
    ) -> Result<(), RunError> {
        let (what, f) = T::gemm(self.cublas);
        self.call_gemm(what, Strided::Plain(f), p, &Batch::ONE, (a, b, c))
    }

    /// `cublasSgemmStridedBatched` or `cublasDgemmStridedBatched` (by `T`) on the handle's
    /// stream.
    pub fn gemm_strided_batched<T: Real>(
        &self,
        p: &GemmParams<T>,
        batch: &Batch,
        a: &impl DevicePtr<T>,
        b: &impl DevicePtr<T>,
        c: &mut impl DevicePtrMut<T>,
    ) -> Result<(), RunError> {
        let (what, f) = T::gemm_strided(self.cublas);
        self.call_gemm(what, Strided::Batched(f), p, batch, (a, b, c))
    }

    /// `cublasSgemv_v2` on the handle's stream.
    pub fn sgemv(
        &self,
        p: &GemvParams,
        a: &impl DevicePtr<f32>,
        x: &impl DevicePtr<f32>,
        y: &mut impl DevicePtrMut<f32>,
    ) -> Result<(), RunError> {
        let f = Strided::Plain(self.cublas.sgemv);
        self.gemv("cublasSgemv_v2", f, p, &Batch::ONE, (a, x, y))
    }

    /// `cublasSgemvStridedBatched` on the handle's stream (`b` strides x, `c` y); an error
    /// naming it when the loaded cuBLAS (before CUDA 11.6) lacks it.
    pub fn sgemv_strided_batched(
        &self,
        p: &GemvParams,
        batch: &Batch,
        a: &impl DevicePtr<f32>,
        x: &impl DevicePtr<f32>,
        y: &mut impl DevicePtrMut<f32>,
    ) -> Result<(), RunError> {
        let what = "cublasSgemvStridedBatched";
        let f = self
            .cublas
            .sgemv_strided
            .ok_or_else(|| RunError::CublasLacks {
                library: self.cublas.library.clone(),
                symbol: what,
            })?;
        self.gemv(what, Strided::Batched(f), p, batch, (a, x, y))
    }

    /// Checks the arguments (`checked`), makes the stream's context current, and calls `f`
    /// with the buffers' device pointers; the guards that order the buffers' other uses around
    /// the call live until it returns.
    fn enqueue<T>(
        &self,
        what: &'static str,
        checked: Result<(), String>,
        (a, b, c): Buffers<'_, impl DevicePtr<T>, impl DevicePtr<T>, impl DevicePtrMut<T>>,
        f: impl FnOnce(*const T, *const T, *mut T) -> Status,
    ) -> Result<(), RunError> {
        checked.map_err(|m| bad_args(what, m))?;
        bind(&self.stream)?;
        let s = &self.stream;
        let (pa, _ga) = a.device_ptr(s);
        let (pb, _gb) = b.device_ptr(s);
        let (pc, _gc) = c.device_ptr_mut(s);
        check(what, f(pa as *const T, pb as *const T, pc as *mut T))
    }

    // One call a line, in the C argument order.
    #[rustfmt::skip]
    fn call_gemm<T>(
        &self,
        what: &'static str,
        f: Strided<GemmFn<T>, GemmStridedFn<T>>,
        p: &GemmParams<T>,
        batch: &Batch,
        (a, b, c): Buffers<'_, impl DevicePtr<T>, impl DevicePtr<T>, impl DevicePtrMut<T>>,
    ) -> Result<(), RunError> {
        let checked = check_gemm(p, batch, [a.len(), b.len(), c.len()]);
        let (h, ta, tb, bt) = (self.handle, p.transa as c_int, p.transb as c_int, batch);
        // SAFETY (both calls): a live handle on a stream of its context, current on this
        // thread; the buffers hold what the parameters address (checked); alpha and beta are
        // host values.
        self.enqueue(what, checked, (a, b, c), |pa, pb, pc| unsafe {
            match f {
                Strided::Plain(f) => f(h, ta, tb, p.m, p.n, p.k, &p.alpha, pa, p.lda, pb, p.ldb, &p.beta, pc, p.ldc),
                Strided::Batched(f) => f(h, ta, tb, p.m, p.n, p.k, &p.alpha, pa, p.lda, bt.stride_a, pb, p.ldb, bt.stride_b, &p.beta, pc, p.ldc, bt.stride_c, bt.count),
            }
        })
    }

    // One call a line, in the C argument order.
    #[rustfmt::skip]
    fn gemv(
        &self,
        what: &'static str,
        f: Strided<GemvFn, GemvStridedFn>,
        p: &GemvParams,
        batch: &Batch,
        (a, x, y): Buffers<'_, impl DevicePtr<f32>, impl DevicePtr<f32>, impl DevicePtrMut<f32>>,
    ) -> Result<(), RunError> {
        let checked = check_gemv(p, batch, [a.len(), x.len(), y.len()]);
        let (h, t, bt) = (self.handle, p.trans as c_int, batch);
        // SAFETY (both calls): as in `call_gemm`.
        self.enqueue(what, checked, (a, x, y), |pa, px, py| unsafe {
            match f {
                Strided::Plain(f) => f(h, t, p.m, p.n, &p.alpha, pa, p.lda, px, p.incx, &p.beta, py, p.incy),
                Strided::Batched(f) => f(h, t, p.m, p.n, &p.alpha, pa, p.lda, bt.stride_a, px, p.incx, bt.stride_b, &p.beta, py, p.incy, bt.stride_c, bt.count),
            }
        })
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        // Nothing to report to: a failure only leaks the handle.
        let _ = bind(&self.stream);
        // SAFETY: created by cublasCreate_v2 and destroyed only here.
        let _ = unsafe { (self.cublas.destroy)(self.handle) };
    }
}

/// The element types of the gemms: `f32` (`cublasS*`) and `f64` (`cublasD*`).
pub trait Real: sealed::Sealed + Copy {}
impl Real for f32 {}
impl Real for f64 {}

mod sealed {
    use super::{Cublas, GemmFn, GemmStridedFn};

    /// Which functions compute in `Self`.
    pub trait Sealed: Sized {
        fn gemm(c: &Cublas) -> (&'static str, GemmFn<Self>);
        fn gemm_strided(c: &Cublas) -> (&'static str, GemmStridedFn<Self>);
    }

    impl Sealed for f32 {
        fn gemm(c: &Cublas) -> (&'static str, GemmFn<f32>) {
            ("cublasSgemm_v2", c.sgemm)
        }
        fn gemm_strided(c: &Cublas) -> (&'static str, GemmStridedFn<f32>) {
            ("cublasSgemmStridedBatched", c.sgemm_strided)
        }
    }

    impl Sealed for f64 {
        fn gemm(c: &Cublas) -> (&'static str, GemmFn<f64>) {
            ("cublasDgemm_v2", c.dgemm)
        }
        fn gemm_strided(c: &Cublas) -> (&'static str, GemmStridedFn<f64>) {
            ("cublasDgemmStridedBatched", c.dgemm_strided)
        }
    }
}

/// A call's operands: A, B (gemv: x), and the output C (gemv: y).
type Buffers<'a, A, B, C> = (&'a A, &'a B, &'a mut C);

/// The plain call or its strided batched form.
#[derive(Clone, Copy)]
enum Strided<P, B> {
    Plain(P),
    Batched(B),
}

/// Makes the stream's context current on this thread, as cuBLAS calls need.
fn bind(stream: &CudaStream) -> Result<(), RunError> {
    stream
        .context()
        .bind_to_thread()
        .map_err(|e| RunError::Cublas {
            what: "binding the CUDA context",
            message: format!("{e:?}"),
        })
}

fn bad_args(what: &'static str, message: String) -> RunError {
    RunError::Cublas {
        what,
        message: format!("invalid arguments: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_failures_become_the_run_errors() {
        let dir = tempfile::tempdir().unwrap();
        for value in dylib::unloadable_values("cublas", dir.path()) {
            let e = RunError::from(load(Some(value.as_os_str())).err().unwrap());
            assert!(matches!(e, RunError::CublasChoice { .. }), "{e:?}");
            let e = e.to_string();
            assert!(
                e.starts_with(&format!("AUTOTUNE_CUBLAS={}", value.display())),
                "{e}"
            );
            assert!(e.contains("nvidia-cublas-cu12"), "{e}");
        }
        let e = RunError::from(LoadFailure::Missing).to_string();
        assert!(e.contains("AUTOTUNE_CUBLAS"), "{e}");
        // libc loads, but is no cuBLAS: the missing function is named.
        let e = RunError::from(load(Some(std::ffi::OsStr::new("libc.so.6"))).err().unwrap());
        let e = e.to_string();
        assert!(e.contains("cublasCreate_v2"), "{e}");
        assert!(e.contains("libc"), "{e}");
    }

    #[test]
    fn statuses_are_named() {
        assert!(check("x", 0).is_ok());
        let e = check("cublasSgemm_v2", 7).unwrap_err().to_string();
        assert!(
            e.contains("cublasSgemm_v2") && e.contains("CUBLAS_STATUS_INVALID_VALUE (7)"),
            "{e}"
        );
        let e = check("cublasCreate_v2", 8).unwrap_err().to_string();
        assert!(e.contains("AUTOTUNE_CUBLAS"), "{e}");
        assert!(check("x", 99).unwrap_err().to_string().contains("unknown"));
    }

    fn gemm(transa: Transpose, transb: Transpose, lda: i32, ldb: i32) -> GemmParams<f32> {
        GemmParams {
            transa,
            transb,
            m: 3,
            n: 5,
            k: 7,
            alpha: 1.0,
            lda,
            ldb,
            beta: 0.0,
            ldc: 3,
        }
    }

    #[test]
    fn gemm_lengths_follow_the_parameters() {
        use Transpose::{N, T};
        // A 3 x 7 (21), B 7 x 5 (35), C 3 x 5 (15).
        let p = gemm(N, N, 3, 7);
        assert!(check_gemm(&p, &Batch::ONE, [21, 35, 15]).is_ok());
        let e = check_gemm(&p, &Batch::ONE, [21, 34, 15]).unwrap_err();
        assert_eq!(e, "B holds 34 elements, the parameters need 35");
        // Transposed, A is stored 7 x 3 (lda >= 7), B 5 x 7 (ldb >= 5).
        assert!(check_gemm(&gemm(T, T, 7, 5), &Batch::ONE, [21, 35, 15]).is_ok());
        let e = check_gemm(&gemm(T, N, 3, 7), &Batch::ONE, [99, 99, 99]).unwrap_err();
        assert!(e.contains("leading dimension of 3"), "{e}");
        // A padded leading dimension: the last column need not be padded.
        assert!(check_gemm(&gemm(N, N, 4, 7), &Batch::ONE, [4 * 6 + 3, 35, 15]).is_ok());
        // Batches: (count - 1) strides plus one operand.
        let batch = Batch {
            stride_a: 21,
            stride_b: 0,
            stride_c: 16,
            count: 3,
        };
        assert!(check_gemm(&p, &batch, [63, 35, 47]).is_ok());
        assert!(check_gemm(&p, &batch, [63, 35, 46]).is_err());
        let empty = Batch { count: 0, ..batch };
        assert!(check_gemm(&p, &empty, [0, 0, 0]).is_ok());
        assert!(check_gemm(&p, &Batch { count: -1, ..batch }, [99; 3]).is_err());
    }

    #[test]
    fn gemv_lengths_follow_the_parameters() {
        let p = GemvParams {
            trans: Transpose::T,
            m: 7,
            n: 3,
            alpha: 1.0,
            lda: 7,
            incx: 1,
            beta: 0.0,
            incy: 2,
        };
        // op(A) = A^T is 3 x 7: x has 7 elements, y 3 (5 with stride 2).
        assert!(check_gemv(&p, &Batch::ONE, [21, 7, 5]).is_ok());
        assert!(check_gemv(&p, &Batch::ONE, [21, 6, 5]).is_err());
        assert!(check_gemv(&p, &Batch::ONE, [21, 7, 4]).is_err());
        let n = GemvParams {
            trans: Transpose::N,
            ..p
        };
        assert!(check_gemv(&n, &Batch::ONE, [21, 3, 13]).is_ok());
        assert!(check_gemv(&GemvParams { incx: 0, ..p }, &Batch::ONE, [99; 3]).is_err());
    }
}
