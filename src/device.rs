//! The only place that opens a GPU: its name, arch, SM count, clocks, limits and peak figures.

use crate::compile::Arch;
use crate::db::GpuRecord;
use crate::space::Limits;
use cudarc::driver::sys::CUdevice_attribute as Attr;
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use std::sync::Arc;

/// Why a GPU could not be opened or queried.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// libcuda could not be loaded.
    #[error("the NVIDIA driver library (libcuda.so) was not found: install the NVIDIA driver, or use --dry-run --arch sm_XY to compile without a GPU")]
    NoDriver,
    /// The driver reports no GPU, or fewer than asked for.
    #[error("no CUDA device {ordinal}: the driver reports {count} device(s){hint}")]
    NoDevice {
        /// The device asked for.
        ordinal: usize,
        /// How many exist.
        count: i32,
        /// What to do.
        hint: &'static str,
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

/// What the tuner knows of a GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceInfo {
    /// The CUDA ordinal.
    pub ordinal: usize,
    /// Marketing name, e.g. `NVIDIA H100 80GB HBM3`.
    pub name: String,
    /// Compute capability.
    pub arch: Arch,
    /// Streaming multiprocessors.
    pub sms: u32,
    /// Maximum (boost) SM clock, MHz.
    pub clock_mhz: u32,
    /// Device memory, bytes.
    pub memory_bytes: u64,
    /// L2 cache, bytes.
    pub l2_bytes: u64,
    /// Launch and resource limits.
    pub limits: Limits,
    /// Driver's CUDA version, e.g. `13.0`.
    pub driver_version: String,
    /// PCI bus id, `domain:bus:device.function` (e.g. `0000:3B:00.0`), as `nvidia-smi` shows
    /// it; `None` if the driver would not say.
    pub pci_bus_id: Option<String>,
    /// The GPU's UUID as `nvidia-smi -L` writes it (`GPU-xxxxxxxx-xxxx-...`); `None` if the
    /// driver would not say.
    pub uuid: Option<String>,
}

/// A CUDA UUID (16 bytes) as `nvidia-smi -L` writes it: `GPU-` then the bytes in hex, in order,
/// grouped 4-2-2-2-6.
pub fn uuid_string(bytes: &[u8; 16]) -> String {
    let mut out = String::from("GPU-");
    for (i, b) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// FP32 lanes per SM for a compute capability (the FMA units that set the FP32 peak).
pub fn fp32_lanes_per_sm(arch: Arch) -> u32 {
    match (arch.major, arch.minor) {
        (6, 0) => 64,
        (6, _) => 128,
        (7, _) => 64,
        (8, 0) => 64,
        (8, _) => 128,
        _ => 128,
    }
}

impl DeviceInfo {
    /// FP32 peak in GFLOP/s: SMs x FP32 lanes x 2 (FMA) x boost clock.
    pub fn fp32_peak_gflops(&self) -> f64 {
        self.sms as f64 * fp32_lanes_per_sm(self.arch) as f64 * 2.0 * self.clock_mhz as f64 / 1e3
    }

    /// The database's record of this GPU.
    pub fn record(&self, nvrtc_version: &str) -> GpuRecord {
        GpuRecord {
            name: self.name.clone(),
            arch: self.arch.to_string(),
            sms: self.sms,
            clock_mhz: self.clock_mhz,
            fp32_peak_gflops: self.fp32_peak_gflops(),
            memory_mib: self.memory_bytes / (1 << 20),
            driver_version: self.driver_version.clone(),
            nvrtc_version: nvrtc_version.to_string(),
            copy_bandwidth_gbs: None,
        }
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
            return Err(DeviceError::NoDevice {
                ordinal,
                count,
                hint: if count == 0 {
                    ": check nvidia-smi, or use --dry-run --arch sm_XY to compile without a GPU"
                } else {
                    ": pick one with --device"
                },
            });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_follows_lanes_and_clock() {
        let info = DeviceInfo {
            ordinal: 0,
            name: "x".into(),
            arch: Arch { major: 9, minor: 0 },
            sms: 132,
            clock_mhz: 1980,
            memory_bytes: 0,
            l2_bytes: 0,
            limits: Limits::for_arch(90).unwrap(),
            driver_version: "13.0".into(),
            pci_bus_id: None,
            uuid: None,
        };
        // 132 x 128 x 2 x 1.98 GHz = 66.9 TFLOP/s, as in ANCHORS.md.
        assert!((info.fp32_peak_gflops() - 66908.16).abs() < 1e-6);
        assert_eq!(fp32_lanes_per_sm(Arch { major: 6, minor: 1 }), 128);
        assert_eq!(fp32_lanes_per_sm(Arch { major: 8, minor: 0 }), 64);
    }

    #[test]
    fn uuid_is_written_as_nvidia_smi_does() {
        let bytes: [u8; 16] = [
            0x5e, 0x1d, 0xa3, 0x07, 0x9b, 0x2c, 0x4f, 0x10, 0x80, 0x01, 0xab, 0xcd, 0xef, 0x01,
            0x23, 0x45,
        ];
        assert_eq!(
            uuid_string(&bytes),
            "GPU-5e1da307-9b2c-4f10-8001-abcdef012345"
        );
    }
}
