//! The only place that opens a GPU: its name, arch, SM count, clocks, limits and peak figures.

use crate::family::space::Limits;
use crate::gpu::{uuid_string, Arch, DeviceInfo};
use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use std::sync::Arc;

/// Why a GPU could not be opened or queried.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// libcuda could not be loaded.
    #[error("the NVIDIA driver library (libcuda.so) was not found: install the NVIDIA driver")]
    NoDriver,
    /// The driver reports no GPU, or fewer than asked for.
    #[error("no CUDA device {ordinal}: the driver reports {count} device(s)")]
    NoDevice {
        /// The device asked for.
        ordinal: usize,
        /// How many exist (0: the driver sees no GPU at all).
        count: i32,
    },
    /// A driver call failed.
    #[error("CUDA driver error while {action}: {source}")]
    Driver {
        /// What was being done.
        action: &'static str,
        /// The driver's error.
        source: DriverError,
    },
}

/// Adds the action to a driver error.
pub(crate) trait DriverContext<T> {
    fn during(self, action: &'static str) -> Result<T, DeviceError>;
}

impl<T> DriverContext<T> for Result<T, DriverError> {
    fn during(self, action: &'static str) -> Result<T, DeviceError> {
        self.map_err(|source| DeviceError::Driver { action, source })
    }
}

/// An opened GPU: its context, a stream, and what it reported.
pub struct Device {
    /// The primary context.
    pub ctx: Arc<CudaContext>,
    /// The stream every tuner launch goes to.
    pub stream: Arc<CudaStream>,
    /// What the device reported.
    pub info: DeviceInfo,
}

/// Reads what the tuner needs to know of the device behind `ctx`.
pub fn query(ctx: &Arc<CudaContext>) -> Result<DeviceInfo, DeviceError> {
    let ordinal = ctx.ordinal();
    let attr = |a: Attr, what: &'static str| ctx.attribute(a).during(what);
    let (major, minor) = ctx
        .compute_capability()
        .during("reading the compute capability")?;
    let arch = Arch {
        major: major as u32,
        minor: minor as u32,
    };
    let limits = Limits {
        sm: arch.number() as i64,
        max_threads_per_block: attr(
            Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            "reading max threads per block",
        )? as i64,
        max_shared_per_block: attr(
            Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
            "reading shared memory per block",
        )? as i64,
        max_shared_per_block_optin: attr(
            Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            "reading opt-in shared memory per block",
        )? as i64,
        max_regs_per_block: attr(
            Attr::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
            "reading registers per block",
        )? as i64,
    };
    let mut driver = 0i32;
    // SAFETY: the driver library is loaded (checked in device_count) and `driver` is a
    // valid out-pointer.
    let rc = unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut driver) };
    let driver_version = if rc == cudarc::driver::sys::CUresult::CUDA_SUCCESS {
        format!("{}.{}", driver / 1000, (driver % 1000) / 10)
    } else {
        "unknown".into()
    };
    let mut bus = [0 as std::ffi::c_char; 32];
    // SAFETY: `bus` is a writable buffer of the length passed, and the driver writes a
    // NUL-terminated string of at most that many bytes into it.
    let rc = unsafe {
        cudarc::driver::sys::cuDeviceGetPCIBusId(
            bus.as_mut_ptr(),
            bus.len() as std::ffi::c_int,
            ctx.cu_device(),
        )
    };
    let pci_bus_id = (rc == cudarc::driver::sys::CUresult::CUDA_SUCCESS)
        .then(|| {
            // c_char is i8 or u8 depending on the target: take the bytes as they are.
            let bytes: Vec<u8> = bus
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .filter(|s| !s.is_empty());
    let uuid = ctx
        .uuid()
        .ok()
        .map(|u| uuid_string(&u.bytes.map(|c| c as u8)));
    Ok(DeviceInfo {
        ordinal,
        name: ctx.name().during("reading the device name")?,
        arch,
        sms: attr(
            Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            "reading the SM count",
        )? as u32,
        clock_mhz: (attr(Attr::CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "reading the clock")? / 1000) as u32,
        memory_bytes: ctx.total_mem().during("reading total memory")? as u64,
        l2_bytes: attr(
            Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
            "reading the L2 size",
        )? as u64,
        limits,
        driver_version,
        pci_bus_id,
        uuid,
    })
}

/// Number of CUDA devices, or an error when the driver is missing.
pub fn device_count() -> Result<i32, DeviceError> {
    // cudarc panics when it cannot load libcuda: ask first.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(DeviceError::NoDriver);
    }
    cudarc::driver::result::init().during("initialising the driver")?;
    CudaContext::device_count().during("counting devices")
}

impl Device {
    /// Opens GPU `ordinal`.
    pub fn open(ordinal: usize) -> Result<Device, DeviceError> {
        let count = device_count()?;
        if ordinal >= count.max(0) as usize {
            return Err(DeviceError::NoDevice { ordinal, count });
        }
        let ctx = CudaContext::new(ordinal).during("creating a context")?;
        let info = query(&ctx)?;
        let stream = ctx.default_stream();
        Ok(Device { ctx, stream, info })
    }

    /// Free device memory, bytes.
    pub fn free_memory(&self) -> Result<u64, DeviceError> {
        Ok(self.ctx.mem_get_info().during("reading free memory")?.0 as u64)
    }
}
