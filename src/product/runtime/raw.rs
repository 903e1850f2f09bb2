//! The runtime on raw device pointers and a stream the caller owns, as a C or Python product
//! holds them (`cudaMalloc`'s pointers, a `cudaStream_t`): what the C ABI (`capi/`) calls.
//!
//! The pointers are wrapped for the length of one call and handed back untouched; nothing is
//! freed. Lengths come from the descriptor ([`GemmDesc::lens`], [`GemvDesc::lens`]), so the
//! call reads and writes exactly what the descriptor says, as cuBLAS does: the caller promises
//! that much memory is there.

use super::{RuntimeError, Tuned};
use crate::cuda::device::{self, DeviceError};
use crate::problem::{Call, Op, Shape};
use crate::product::desc::{GemmDesc, GemvDesc};
use cudarc::driver::{CudaContext, CudaSlice};
use std::mem::ManuallyDrop;
use std::sync::Arc;

/// A device address as the CUDA driver and runtime APIs hand it out (`CUdeviceptr`, or a
/// `float*` from `cudaMalloc` cast to an integer).
pub type DevicePtr = u64;

/// A stream of the CUDA driver or runtime API (`CUstream`, `cudaStream_t`) as an address; 0 is
/// the legacy default stream, 2 the per-thread default stream (`cudaStreamPerThread`).
pub type RawStream = usize;

/// A borrowed device buffer: handed back to its owner (never freed) when dropped, on every
/// path out of a call, a panic's included.
struct Borrowed(ManuallyDrop<CudaSlice<f32>>);

impl Drop for Borrowed {
    fn drop(&mut self) {
        // SAFETY: the slice is taken once, here, and never used again.
        let slice = unsafe { ManuallyDrop::take(&mut self.0) };
        // Gives the pointer back without freeing it.
        let _ = slice.leak();
    }
}

impl Tuned {
    /// The primary context of GPU `ordinal` (the one the CUDA runtime API uses, so that
    /// `cudaMalloc`'s pointers are valid in it), for a runtime driven by
    /// [`Tuned::gemm_raw`] and [`Tuned::gemv_raw`]: cudarc's event tracking is off in it, as
    /// the caller orders its work on its streams itself (as with cuBLAS), and wrapping a
    /// pointer then costs no event. An error, not a panic, without a driver or GPU.
    pub fn raw_context(ordinal: usize) -> Result<Arc<CudaContext>, RuntimeError> {
        let ctx = device::Device::open(ordinal)?.ctx;
        // SAFETY: this context object is new and used only by the runtime built on it, which
        // enqueues each call's work on the one stream the caller names; the workspaces it
        // allocates per stream are used and freed on that stream only.
        unsafe { ctx.disable_event_tracking() };
        Ok(ctx)
    }

    /// Waits until every call enqueued on this runtime's device is done (as `cublasDestroy`
    /// does before it releases its resources).
    pub fn synchronize(&self) -> Result<(), RuntimeError> {
        self.ctx.synchronize().map_err(|source| {
            RuntimeError::Device(DeviceError::Driver {
                action: "synchronizing the device",
                source,
            })
        })
    }

    /// [`Tuned::gemm_ex`] on raw device pointers and a raw stream: `desc` is checked first
    /// (nothing is launched for a descriptor that is refused), then A, B and C are read and
    /// written exactly as far as [`GemmDesc::lens`] says. On a runtime built on
    /// [`Tuned::raw_context`] this costs no more than [`Tuned::gemm_ex`]; on a context with
    /// cudarc's event tracking on (as [`Tuned::context`] gives), each call also creates and
    /// destroys two events per buffer.
    ///
    /// # Safety
    ///
    /// `a`, `b` and `c` must be device addresses in this runtime's context holding at least
    /// `desc.lens()` floats each (C writable), valid until the work enqueued on `stream` is
    /// done; `stream` must be 0, 2 or a live stream of this context, and stay alive while
    /// this runtime lives (its workspace for the stream is freed on it).
    pub unsafe fn gemm_raw(
        &self,
        stream: RawStream,
        desc: &GemmDesc,
        a: DevicePtr,
        b: DevicePtr,
        c: DevicePtr,
    ) -> Result<(), RuntimeError> {
        let problem = desc.problem(desc.lens())?;
        // SAFETY: the caller's promises, passed on.
        unsafe { self.run_raw(stream, Op::Gemm, problem, desc.lens(), [a, b, c]) }
    }

    /// [`Tuned::gemv_ex`] on raw device pointers and a raw stream, as [`Tuned::gemm_raw`].
    ///
    /// # Safety
    ///
    /// As [`Tuned::gemm_raw`], with A, x and y holding at least `desc.lens()` floats each.
    pub unsafe fn gemv_raw(
        &self,
        stream: RawStream,
        desc: &GemvDesc,
        a: DevicePtr,
        x: DevicePtr,
        y: DevicePtr,
    ) -> Result<(), RuntimeError> {
        let problem = desc.problem(desc.lens())?;
        // SAFETY: the caller's promises, passed on.
        unsafe { self.run_raw(stream, Op::Gemv, problem, desc.lens(), [a, x, y]) }
    }

    /// Runs a checked problem on the buffers at `ptrs` (two inputs, then the output) of
    /// `lens` floats, borrowed for the call, on the caller's stream.
    ///
    /// # Safety
    /// As [`Tuned::gemm_raw`].
    unsafe fn run_raw(
        &self,
        stream: RawStream,
        op: Op,
        (shape, call): (Shape, Call),
        lens: [usize; 3],
        ptrs: [DevicePtr; 3],
    ) -> Result<(), RuntimeError> {
        // SAFETY: the caller promises a stream of this context; it is never destroyed here.
        let stream = unsafe {
            self.ctx
                .wrap_borrowed_stream(stream as cudarc::driver::sys::CUstream)
        };
        // SAFETY: the caller promises `lens[i]` floats at `ptrs[i]` in the stream's context;
        // `Borrowed` hands each back instead of freeing it.
        let [a, b, mut out] = std::array::from_fn(|i| {
            Borrowed(ManuallyDrop::new(unsafe {
                stream.upgrade_device_ptr::<f32>(ptrs[i], lens[i])
            }))
        });
        self.run(&stream, op, shape, &call, &a.0, &b.0, &mut out.0)
    }
}
