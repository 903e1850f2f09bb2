//! Everything that touches CUDA (through cudarc): opening a device ([`device`]), NVRTC and the
//! compile caches ([`nvrtc`]; libnvrtc itself is loaded by [`nvrtc_lib`], not cudarc), loading and
//! launching a kernel ([`mod@launch`], shared by the bench and the runtime), validating and
//! timing it ([`mod@bench`]), cuBLAS (loaded by [`cublas_lib`], not
//! cudarc), and running untrusted kernels in a worker process ([`isolate`]). Which libnvrtc and
//! libcublas are loaded (`AUTOTUNE_NVRTC`, `AUTOTUNE_CUBLAS`) follows one set of rules
//! (`dylib`).

pub mod baseline;
pub mod bench;
pub mod cublas_lib;
pub mod device;
mod dylib;
pub mod error;
pub mod isolate;
pub mod launch;
pub mod nvrtc;
pub mod nvrtc_lib;
