//! Why a bench, a cuBLAS call or a measurement run as a whole cannot go on (as opposed to one
//! candidate failing). Its own module so that the bench, the cuBLAS loader and the baseline
//! calls share it without importing each other.

use crate::cuda::device::DeviceError;

/// Why the bench as a whole cannot go on (as opposed to one candidate failing).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The GPU could not be used.
    #[error(transparent)]
    Device(#[from] DeviceError),
    /// libcublas could not be loaded.
    #[error("the cuBLAS library (libcublas.so) was not found: it is the baseline every result is compared with; install the CUDA toolkit's cuBLAS (or `pip install nvidia-cublas`, or `nvidia-cublas-cu12` for cuBLAS 12, which a GPU before sm_75 needs) and put its lib directory on LD_LIBRARY_PATH, or set AUTOTUNE_CUBLAS to the library file")]
    NoCublas,
    /// The library `AUTOTUNE_CUBLAS` names could not be loaded (no other is tried).
    #[error("AUTOTUNE_CUBLAS={value} names a cuBLAS that failed to load: {tried}; set AUTOTUNE_CUBLAS to a cuBLAS 12 or 13 library file (e.g. /usr/local/cuda-12/lib64/libcublas.so.12, or the lib directory of `pip install nvidia-cublas-cu12`) or the directory holding it, or unset it to load the libcublas found on LD_LIBRARY_PATH")]
    CublasChoice {
        /// The variable's value.
        value: String,
        /// What was tried and why it failed.
        tried: String,
    },
    /// The library loaded as cuBLAS lacks a function every use needs.
    #[error("{library} is not a usable cuBLAS: {reason}; use cuBLAS from CUDA 12 or 13 (set AUTOTUNE_CUBLAS to its library file, or put its lib directory on LD_LIBRARY_PATH)")]
    CublasUnusable {
        /// The library that was loaded.
        library: String,
        /// What is missing.
        reason: String,
    },
    /// The loaded cuBLAS lacks a function one call needs.
    #[error("{library} has no {symbol}: use a cuBLAS from CUDA 11.6 or later (set AUTOTUNE_CUBLAS to its library file)")]
    CublasLacks {
        /// The library that was loaded.
        library: String,
        /// The missing function.
        symbol: &'static str,
    },
    /// A cuBLAS call failed.
    #[error("cuBLAS {what} failed: {message}")]
    Cublas {
        /// The call.
        what: &'static str,
        /// Its status.
        message: String,
    },
    /// The problem does not fit the device's memory.
    #[error("shape {shape} needs {need_mib} MiB of device memory (inputs, output, reference and L2 flush buffer) but device {ordinal} has {free_mib} MiB free")]
    TooLarge {
        /// The shape's label.
        shape: String,
        /// What it needs.
        need_mib: u64,
        /// What is free.
        free_mib: u64,
        /// The device.
        ordinal: usize,
    },
    /// cuBLAS itself disagreed with the reference: the reference or the buffers are wrong.
    #[error("cuBLAS's result failed validation ({0}): the reference is not trustworthy, so no result would be")]
    BaselineInvalid(String),
    /// Events gave no usable time (a driver problem; try again).
    #[error("measurement failed: {0}")]
    Measurement(String),
    /// A worker process could not be started or set up (see [`crate::cuda::isolate`]).
    #[error("the benchmark worker failed: {0}")]
    Worker(String),
    /// A kernel broke the CUDA context (e.g. an illegal address): nothing more can run in
    /// this process.
    #[error(
        "kernel {kernel} broke the CUDA context ({reason}); results so far are lost for this run"
    )]
    ContextLost {
        /// The kernel.
        kernel: String,
        /// The driver's error.
        reason: String,
    },
}
