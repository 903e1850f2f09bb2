//! Everything that touches CUDA (through cudarc): opening a device ([`device`]), NVRTC and the
//! compile caches ([`nvrtc`]; libnvrtc itself is loaded by [`nvrtc_lib`], not cudarc), loading, validating and timing a kernel ([`mod@bench`]), and running
//! untrusted kernels in a worker process ([`isolate`]).

pub mod bench;
pub mod device;
pub mod isolate;
pub mod nvrtc;
pub mod nvrtc_lib;
