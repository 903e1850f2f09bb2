//! libautotune: the C ABI of the autotune runtime (`include/autotune.h`).
//!
//! cuBLAS-shaped calls in cuBLAS's column-major convention, so that a product swaps
//! `cublasSgemm` for `autotune_sgemm`: each call is mapped once onto the row-major runtime
//! ([`mapping`]), checked as cuBLAS checks it, and run by [`autotune_rt::Tuned`] on the caller's
//! device pointers and stream ([`autotune_rt::product::runtime::raw`]). Every entry point
//! returns a status ([`status::Status`]); none panics or aborts across the boundary (each runs
//! under `catch_unwind`), and a missing driver or GPU is `AUTOTUNE_STATUS_NO_DEVICE`.
//!
//! A handle is thread-safe as cuBLAS documents its own: calls from several threads on one
//! handle are safe; the stream set on it is shared by them, so threads that want streams of
//! their own use a handle each.

#![deny(unsafe_op_in_unsafe_fn)]
// The entry points take cuBLAS's arguments, as many as cuBLAS's calls take.
#![allow(clippy::too_many_arguments)]

pub mod mapping;
pub mod status;

use autotune_rt::db::Database;
use autotune_rt::problem::{Call, Op};
use autotune_rt::product::desc::DescError;
use autotune_rt::product::runtime::raw::{DevicePtr, RawStream};
use autotune_rt::Tuned;
use mapping::{ColGemm, ColGemv};
use status::{guard, Failure, Status};
use std::ffi::{c_char, c_int, c_longlong, c_void, CStr};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The tuning database this repository ships, built into the library: what a handle created
/// with a null database path loads.
const SHIPPED_DB: &str = include_str!("../../results/tuning.toml");

/// `autotune_handle_t` points at one: a runtime bound to a GPU, and the stream its calls go to.
pub struct Handle {
    tuned: Tuned,
    /// The `cudaStream_t` / `CUstream` calls are enqueued on (0: the legacy default stream).
    stream: AtomicUsize,
}

/// Handles are shared between threads, as cuBLAS's are.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<Handle>();
};

/// The handle behind `h`, or the status of a null one.
///
/// # Safety
/// `h` is null or a handle from `autotune_create` not yet destroyed.
unsafe fn handle<'a>(h: *const Handle) -> Result<&'a Handle, Failure> {
    // SAFETY: the caller promises a live handle or null.
    unsafe { h.as_ref() }.ok_or(Failure::NullHandle)
}

/// `*p`, or the failure that names the null pointer.
///
/// # Safety
/// `p` is null or points at a float.
unsafe fn scalar(p: *const f32, name: &'static str) -> Result<f32, Failure> {
    // SAFETY: the caller promises a valid pointer or null.
    unsafe { p.as_ref() }.copied().ok_or(Failure::Null(name))
}

/// The handle and the scalars of a call: what every call checks first.
///
/// # Safety
/// As [`handle`] and [`scalar`].
unsafe fn begin<'a>(
    h: *const Handle,
    alpha: *const f32,
    beta: *const f32,
) -> Result<(&'a Handle, f32, f32), Failure> {
    // SAFETY: the caller's promises, passed on.
    unsafe { Ok((handle(h)?, scalar(alpha, "alpha")?, scalar(beta, "beta")?)) }
}

/// The device address of `p`, refusing null.
fn device<T>(p: *const T, name: &'static str) -> Result<DevicePtr, Failure> {
    if p.is_null() {
        return Err(Failure::Null(name));
    }
    Ok(p as usize as DevicePtr)
}

/// Creates a handle on GPU `device` with the tuning database at `db_path` (NULL: the database
/// built into the library). See `autotune_create` in `include/autotune.h`.
///
/// # Safety
/// `handle` points at writable storage for a handle; `db_path` is null or a NUL-terminated
/// string.
#[no_mangle]
pub unsafe extern "C" fn autotune_create(
    handle: *mut *mut Handle,
    device: c_int,
    db_path: *const c_char,
) -> Status {
    guard(|| {
        if handle.is_null() {
            return Err(Failure::Null("handle"));
        }
        // SAFETY: checked non-null; the caller promises writable storage.
        unsafe { *handle = std::ptr::null_mut() };
        let db = if db_path.is_null() {
            Database::from_toml_str(SHIPPED_DB, "the tuning database built into libautotune")
                .map_err(|e| Failure::Runtime(e.into()))?
        } else {
            // SAFETY: the caller promises a NUL-terminated string.
            let path = unsafe { CStr::from_ptr(db_path) }
                .to_str()
                .map_err(|_| Failure::NotUtf8("db_path"))?;
            if !Path::new(path).exists() {
                return Err(Failure::NoDatabase(path.to_string()));
            }
            Database::load(Path::new(path)).map_err(|e| Failure::Runtime(e.into()))?
        };
        let ordinal = usize::try_from(device).map_err(|_| {
            Failure::Arg(mapping::ArgError::Negative {
                name: "device",
                value: device.into(),
            })
        })?;
        let ctx = Tuned::raw_context(ordinal)?;
        let tuned = Tuned::new(&ctx, db)?;
        let h = Box::new(Handle {
            tuned,
            stream: AtomicUsize::new(0),
        });
        // SAFETY: as above.
        unsafe { *handle = Box::into_raw(h) };
        Ok(())
    })
}

/// Waits for the handle's work on its device, then releases it. See `autotune_destroy`.
///
/// # Safety
/// `handle` is null or a live handle, used by no other thread during and after this call.
#[no_mangle]
pub unsafe extern "C" fn autotune_destroy(handle: *mut Handle) -> Status {
    guard(|| {
        if handle.is_null() {
            return Err(Failure::NullHandle);
        }
        // SAFETY: the caller hands the handle back; it is not used again.
        let h = unsafe { Box::from_raw(handle) };
        let synced = h.tuned.synchronize();
        drop(h);
        synced.map_err(Failure::from)
    })
}

/// Sets the stream the handle's calls are enqueued on (NULL: the legacy default stream).
///
/// # Safety
/// `handle` is null or live; `stream` is NULL, `cudaStreamPerThread` or a live stream of the
/// handle's device, alive while the handle is.
#[no_mangle]
pub unsafe extern "C" fn autotune_set_stream(handle: *mut Handle, stream: *mut c_void) -> Status {
    guard(|| {
        // SAFETY: the caller promises a live handle or null.
        let h = unsafe { self::handle(handle) }?;
        h.stream.store(stream as RawStream, Ordering::Relaxed);
        Ok(())
    })
}

/// The stream the handle's calls are enqueued on.
///
/// # Safety
/// `handle` is null or live; `stream` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn autotune_get_stream(
    handle: *mut Handle,
    stream: *mut *mut c_void,
) -> Status {
    guard(|| {
        // SAFETY: the caller promises a live handle or null.
        let h = unsafe { self::handle(handle) }?;
        // SAFETY: the caller promises writable storage or null.
        let out = unsafe { stream.as_mut() }.ok_or(Failure::Null("stream"))?;
        *out = h.stream.load(Ordering::Relaxed) as *mut c_void;
        Ok(())
    })
}

/// Runs one mapped GEMM: `None` had nothing to do.
///
/// # Safety
/// As `autotune_sgemm_strided_batched`.
unsafe fn sgemm(
    h: &Handle,
    call: ColGemm,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
) -> Result<(), Failure> {
    let Some(desc) = call.to_row_major()? else {
        return Ok(());
    };
    let (a, b, c) = (device(a, "A")?, device(b, "B")?, device(c, "C")?);
    let (ra, rb, rc) = mapping::swap(a, b, c);
    let stream = h.stream.load(Ordering::Relaxed);
    // SAFETY: the caller promises device buffers as large as cuBLAS would read and write,
    // which are the descriptor's lengths.
    unsafe { h.tuned.gemm_raw(stream, &desc, ra, rb, rc) }?;
    Ok(())
}

/// `C = alpha op(A) op(B) + beta C`, column-major, as `cublasSgemm`.
///
/// # Safety
/// `handle` is null or live; `alpha` and `beta` host pointers; A, B and C device pointers of
/// the sizes cuBLAS documents for these arguments.
#[no_mangle]
pub unsafe extern "C" fn autotune_sgemm(
    handle: *mut Handle,
    transa: c_int,
    transb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    b: *const f32,
    ldb: c_int,
    beta: *const f32,
    c: *mut f32,
    ldc: c_int,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, passed on.
        unsafe {
            let (h, alpha, beta) = begin(handle, alpha, beta)?;
            let call = ColGemm::single(transa, transb, m, n, k, alpha, lda, ldb, beta, ldc);
            sgemm(h, call, a, b, c)
        }
    })
}

/// `batchCount` products, as `cublasSgemmStridedBatched`.
///
/// # Safety
/// As [`autotune_sgemm`], each buffer holding every product's operand at its stride.
#[no_mangle]
pub unsafe extern "C" fn autotune_sgemm_strided_batched(
    handle: *mut Handle,
    transa: c_int,
    transb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    stride_a: c_longlong,
    b: *const f32,
    ldb: c_int,
    stride_b: c_longlong,
    beta: *const f32,
    c: *mut f32,
    ldc: c_int,
    stride_c: c_longlong,
    batch_count: c_int,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, passed on.
        unsafe {
            let (h, alpha, beta) = begin(handle, alpha, beta)?;
            let call = ColGemm {
                transa,
                transb,
                m,
                n,
                k,
                alpha,
                lda,
                stride_a,
                ldb,
                stride_b,
                beta,
                ldc,
                stride_c,
                batch: batch_count,
            };
            sgemm(h, call, a, b, c)
        }
    })
}

/// Runs one mapped GEMV.
///
/// # Safety
/// As `autotune_sgemv_strided_batched`.
unsafe fn sgemv(
    h: &Handle,
    call: ColGemv,
    a: *const f32,
    x: *const f32,
    y: *mut f32,
) -> Result<(), Failure> {
    let Some(desc) = call.to_row_major()? else {
        return Ok(());
    };
    let (a, x, y) = (device(a, "A")?, device(x, "x")?, device(y, "y")?);
    let stream = h.stream.load(Ordering::Relaxed);
    // SAFETY: as in `sgemm`.
    unsafe { h.tuned.gemv_raw(stream, &desc, a, x, y) }?;
    Ok(())
}

/// `y = alpha op(A) x + beta y`, column-major, as `cublasSgemv` (unit increments).
///
/// # Safety
/// As [`autotune_sgemm`].
#[no_mangle]
pub unsafe extern "C" fn autotune_sgemv(
    handle: *mut Handle,
    trans: c_int,
    m: c_int,
    n: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    x: *const f32,
    incx: c_int,
    beta: *const f32,
    y: *mut f32,
    incy: c_int,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, passed on.
        unsafe {
            let (h, alpha, beta) = begin(handle, alpha, beta)?;
            let call = ColGemv::single(trans, m, n, alpha, lda, incx, beta, incy);
            sgemv(h, call, a, x, y)
        }
    })
}

/// `batchCount` products, as `cublasSgemvStridedBatched`.
///
/// # Safety
/// As [`autotune_sgemm_strided_batched`].
#[no_mangle]
pub unsafe extern "C" fn autotune_sgemv_strided_batched(
    handle: *mut Handle,
    trans: c_int,
    m: c_int,
    n: c_int,
    alpha: *const f32,
    a: *const f32,
    lda: c_int,
    stride_a: c_longlong,
    x: *const f32,
    incx: c_int,
    stride_x: c_longlong,
    beta: *const f32,
    y: *mut f32,
    incy: c_int,
    stride_y: c_longlong,
    batch_count: c_int,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, passed on.
        unsafe {
            let (h, alpha, beta) = begin(handle, alpha, beta)?;
            let call = ColGemv {
                trans,
                m,
                n,
                alpha,
                lda,
                stride_a,
                incx,
                stride_x,
                beta,
                incy,
                stride_y,
                batch: batch_count,
            };
            sgemv(h, call, a, x, y)
        }
    })
}

/// Writes `text` into `buf` as `snprintf` does (at most `size - 1` bytes and a NUL) and its
/// full length, without the NUL, into `*length` (when not null).
///
/// # Safety
/// `buf` is null (then `size` is 0) or holds `size` bytes; `length` is null or writable.
unsafe fn write_text(
    text: &str,
    buf: *mut c_char,
    size: usize,
    length: *mut usize,
) -> Result<(), Failure> {
    if buf.is_null() && size > 0 {
        return Err(Failure::Null("buf"));
    }
    if size > 0 {
        let n = text.len().min(size - 1);
        // SAFETY: `buf` holds `size > n` bytes; the text is not inside it.
        unsafe {
            std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), buf, n);
            *buf.add(n) = 0;
        }
    }
    // SAFETY: the caller promises writable storage or null.
    if let Some(l) = unsafe { length.as_mut() } {
        *l = text.len();
    }
    Ok(())
}

/// The text of an explain call: the call as given, the row-major problem it maps to (`None`:
/// nothing to compute), and which kernel runs on it and why, into `buf` as `snprintf` writes.
///
/// # Safety
/// As [`write_text`].
unsafe fn explain(
    h: &Handle,
    op: Op,
    call: &str,
    problem: Option<Result<(autotune_rt::Shape, Call), DescError>>,
    out: (*mut c_char, usize, *mut usize),
) -> Result<(), Failure> {
    let text = match problem {
        None => format!("{call}: nothing to compute (m, n or batchCount is 0)"),
        Some(p) => {
            let (shape, _) = p.map_err(|e| Failure::Runtime(e.into()))?;
            format!(
                "{call}: row-major {op} {} on {}: {}",
                shape.label(op),
                h.tuned.device().name,
                h.tuned.explain(op, shape).describe(op, shape)
            )
        }
    };
    let (buf, size, length) = out;
    // SAFETY: the caller's promises, passed on.
    unsafe { write_text(&text, buf, size, length) }
}

/// What `autotune_sgemm_strided_batched` with these arguments would run and why (the rule,
/// the config, the vendor guard's evidence), as text into `buf` (as `snprintf`). The pointers
/// are not needed; `batch_count` 1 describes `autotune_sgemm`.
///
/// # Safety
/// `handle` is null or live; `buf` holds `size` bytes (or is null with `size` 0); `length`
/// is null or writable.
#[no_mangle]
pub unsafe extern "C" fn autotune_explain_sgemm(
    handle: *mut Handle,
    transa: c_int,
    transb: c_int,
    m: c_int,
    n: c_int,
    k: c_int,
    alpha: f32,
    lda: c_int,
    ldb: c_int,
    beta: f32,
    ldc: c_int,
    batch_count: c_int,
    buf: *mut c_char,
    size: usize,
    length: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, passed on.
        unsafe {
            let h = self::handle(handle)?;
            let mut call = ColGemm::single(transa, transb, m, n, k, alpha, lda, ldb, beta, ldc);
            call.batch = batch_count;
            let text = format!(
                "sgemm transa={transa} transb={transb} m={m} n={n} k={k} lda={lda} ldb={ldb} ldc={ldc} batch={batch_count}"
            );
            // Products one after the other: any strides serve the lookup's key.
            let problem = call
                .to_row_major()?
                .map(|d| d.batched(d.batch))
                .map(|d| d.problem(d.lens()));
            explain(h, Op::Gemm, &text, problem, (buf, size, length))
        }
    })
}

/// What `autotune_sgemv_strided_batched` with these arguments would run and why, as
/// [`autotune_explain_sgemm`].
///
/// # Safety
/// As [`autotune_explain_sgemm`].
#[no_mangle]
pub unsafe extern "C" fn autotune_explain_sgemv(
    handle: *mut Handle,
    trans: c_int,
    m: c_int,
    n: c_int,
    alpha: f32,
    lda: c_int,
    beta: f32,
    batch_count: c_int,
    buf: *mut c_char,
    size: usize,
    length: *mut usize,
) -> Status {
    guard(|| {
        // SAFETY: the caller's promises, passed on.
        unsafe {
            let h = self::handle(handle)?;
            let mut call = ColGemv::single(trans, m, n, alpha, lda, 1, beta, 1);
            call.batch = batch_count;
            let text = format!("sgemv trans={trans} m={m} n={n} lda={lda} batch={batch_count}");
            let problem = call
                .to_row_major()?
                .map(|d| d.batched(d.batch))
                .map(|d| d.problem(d.lens()));
            explain(h, Op::Gemv, &text, problem, (buf, size, length))
        }
    })
}

/// A static, NUL-terminated description of `status`: its name and what it means.
#[no_mangle]
pub extern "C" fn autotune_status_string(status: c_int) -> *const c_char {
    Status::ALL
        .into_iter()
        .find(|s| *s as c_int == status)
        .map_or(
            "AUTOTUNE_STATUS_UNKNOWN: not a status of libautotune\0",
            Status::text,
        )
        .as_ptr()
        .cast()
}

/// The message of this thread's last failed call (empty when none failed yet), valid until
/// this thread's next call into the library.
#[no_mangle]
pub extern "C" fn autotune_last_error() -> *const c_char {
    status::last_error()
}

#[cfg(test)]
mod tests;
