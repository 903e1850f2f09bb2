//! What the tuner knows of GPUs without opening one: compute capabilities ([`Arch`]), the one
//! per-architecture table ([`arch_facts`]: block limits, per-SM resources, FP32 lanes), GPUs
//! known by name ([`KNOWN_GPUS`]), and what an opened device reported ([`DeviceInfo`]). Pure
//! data: [`crate::cuda::device`] fills a [`DeviceInfo`] from the driver.

use crate::db::GpuRecord;
use std::fmt;
use std::str::FromStr;

/// Not an arch name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{0}' is not an arch: write sm_XY, e.g. sm_90 (H100/H200), sm_89 (RTX 4060), sm_61 (GTX 1080 Ti)")]
pub struct ArchError(pub String);

/// A compute capability, written `sm_XY`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl Arch {
    /// `major * 10 + minor`, e.g. 90.
    pub fn number(&self) -> u32 {
        self.major * 10 + self.minor
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.major, self.minor)
    }
}

impl FromStr for Arch {
    type Err = ArchError;
    fn from_str(s: &str) -> Result<Arch, ArchError> {
        let bad = || ArchError(s.to_string());
        let digits = s
            .trim()
            .strip_prefix("sm_")
            .or_else(|| s.trim().strip_prefix("compute_"))
            .unwrap_or(s.trim());
        // At most 4 digits (sm_9990): `number()` must not overflow on hostile input.
        if !(2..=4).contains(&digits.len()) || !digits.chars().all(|c| c.is_ascii_digit()) {
            return Err(bad());
        }
        let (maj, min) = digits.split_at(digits.len() - 1);
        Ok(Arch {
            major: maj.parse().map_err(|_| bad())?,
            minor: min.parse().map_err(|_| bad())?,
        })
    }
}

/// The documented figures of one compute capability (CUDA C++ Programming Guide, "Technical
/// Specifications per Compute Capability", and the Hopper/Blackwell tuning guides).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArchFacts {
    /// Compute capability, `major * 10 + minor`.
    pub sm: i64,
    /// Shared memory one block may use after opting in, KiB.
    pub max_shared_optin_kib: i64,
    /// Most resident threads per SM.
    pub max_threads_per_sm: u32,
    /// Most resident blocks per SM.
    pub max_blocks_per_sm: u32,
    /// Shared memory per SM, KiB.
    pub shared_per_sm_kib: u32,
    /// Shared memory the system reserves per block, bytes.
    pub reserved_shared_per_block: u32,
    /// FP32 lanes per SM (the FMA units that set the FP32 peak).
    pub fp32_lanes_per_sm: u32,
}

const fn facts(
    sm: i64,
    optin_kib: i64,
    (threads, blocks, smem_kib, reserved): (u32, u32, u32, u32),
    lanes: u32,
) -> ArchFacts {
    ArchFacts {
        sm,
        max_shared_optin_kib: optin_kib,
        max_threads_per_sm: threads,
        max_blocks_per_sm: blocks,
        shared_per_sm_kib: smem_kib,
        reserved_shared_per_block: reserved,
        fp32_lanes_per_sm: lanes,
    }
}

/// Every arch the tuner knows, oldest first: the one table that pruning ([`Limits::for_arch`]),
/// the performance model and the FP32 peak read.
pub const ARCHS: &[ArchFacts] = &[
    facts(50, 48, (2048, 32, 64, 0), 128),
    facts(52, 48, (2048, 32, 96, 0), 128),
    facts(53, 48, (2048, 32, 64, 0), 128),
    facts(60, 48, (2048, 32, 64, 0), 64),
    facts(61, 48, (2048, 32, 96, 0), 128),
    facts(62, 48, (2048, 32, 64, 0), 128),
    facts(70, 96, (2048, 32, 96, 0), 64),
    facts(72, 96, (2048, 32, 96, 0), 64),
    facts(75, 64, (1024, 16, 64, 0), 64),
    facts(80, 163, (2048, 32, 164, 1024), 64),
    facts(86, 99, (1536, 16, 100, 1024), 128),
    facts(87, 163, (1536, 16, 164, 1024), 128),
    facts(89, 99, (1536, 24, 100, 1024), 128),
    facts(90, 227, (2048, 32, 228, 1024), 128),
    facts(100, 227, (2048, 32, 228, 1024), 128),
    facts(103, 227, (2048, 32, 228, 1024), 128),
    facts(110, 227, (1536, 24, 228, 1024), 128),
    facts(120, 227, (1536, 32, 100, 1024), 128),
    facts(121, 227, (1536, 32, 100, 1024), 128),
];

/// The row of [`ARCHS`] for compute capability `sm` (e.g. 61, 89, 90); `None` for an arch the
/// table does not know.
pub fn arch_facts(sm: i64) -> Option<&'static ArchFacts> {
    ARCHS.iter().find(|f| f.sm == sm)
}

/// FP32 lanes per SM of `arch`; 128 (every arch since Ada) for one the table does not know.
pub fn fp32_lanes_per_sm(arch: Arch) -> u32 {
    arch_facts(i64::from(arch.number())).map_or(128, |f| f.fp32_lanes_per_sm)
}

/// Device limits that pruning and constraints can read. Built from a real device or, for a
/// dry run, from the arch's documented limits ([`Limits::for_arch`]). The family spaces read
/// them (`crate::family::space`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Compute capability as `major * 10 + minor` (90 for sm_90).
    pub sm: i64,
    /// Most threads one block may have.
    pub max_threads_per_block: i64,
    /// Static shared memory one block may declare (48 KiB on every arch so far).
    pub max_shared_per_block: i64,
    /// Shared memory one block may use after opting in (dynamic).
    pub max_shared_per_block_optin: i64,
    /// 32-bit registers available to one block.
    pub max_regs_per_block: i64,
}

impl Limits {
    /// The documented limits of compute capability `sm` (e.g. 61, 89, 90), for dry runs.
    /// Returns `None` for an arch this table does not know.
    pub fn for_arch(sm: i64) -> Option<Limits> {
        let optin_kib = arch_facts(sm)?.max_shared_optin_kib;
        Some(Limits {
            sm,
            max_threads_per_block: 1024,
            max_shared_per_block: 48 * 1024,
            max_shared_per_block_optin: optin_kib * 1024,
            max_regs_per_block: 65536,
        })
    }
}

/// A GPU the model knows by name: its arch, SM count, boost clock and memory bandwidth
/// (NVIDIA product datasheets and architecture whitepapers).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KnownGpu {
    /// A substring of the name the driver reports (matched case-insensitively; more
    /// specific entries come first).
    pub pattern: &'static str,
    /// Compute capability, `major * 10 + minor`.
    pub sm: i64,
    /// SMs.
    pub sms: u32,
    /// Boost clock, MHz.
    pub boost_mhz: u32,
    /// Device-memory bandwidth, GB/s.
    pub dram_gbs: f64,
}

/// GPUs known by name, most specific first.
pub const KNOWN_GPUS: &[KnownGpu] = &[
    KnownGpu {
        pattern: "H200",
        sm: 90,
        sms: 132,
        boost_mhz: 1980,
        dram_gbs: 4800.0,
    },
    KnownGpu {
        pattern: "H100 PCIe",
        sm: 90,
        sms: 114,
        boost_mhz: 1755,
        dram_gbs: 2000.0,
    },
    KnownGpu {
        pattern: "H100 NVL",
        sm: 90,
        sms: 132,
        boost_mhz: 1785,
        dram_gbs: 3900.0,
    },
    KnownGpu {
        pattern: "H100",
        sm: 90,
        sms: 132,
        boost_mhz: 1980,
        dram_gbs: 3350.0,
    },
    KnownGpu {
        pattern: "A100",
        sm: 80,
        sms: 108,
        boost_mhz: 1410,
        dram_gbs: 2039.0,
    },
    KnownGpu {
        pattern: "V100",
        sm: 70,
        sms: 80,
        boost_mhz: 1530,
        dram_gbs: 900.0,
    },
    KnownGpu {
        pattern: "L40S",
        sm: 89,
        sms: 142,
        boost_mhz: 2520,
        dram_gbs: 864.0,
    },
    KnownGpu {
        pattern: "RTX 4090",
        sm: 89,
        sms: 128,
        boost_mhz: 2520,
        dram_gbs: 1008.0,
    },
    KnownGpu {
        pattern: "RTX 4060 Ti",
        sm: 89,
        sms: 34,
        boost_mhz: 2535,
        dram_gbs: 288.0,
    },
    KnownGpu {
        pattern: "RTX 4060",
        sm: 89,
        sms: 24,
        boost_mhz: 2460,
        dram_gbs: 272.0,
    },
    KnownGpu {
        pattern: "RTX 3090",
        sm: 86,
        sms: 82,
        boost_mhz: 1695,
        dram_gbs: 936.0,
    },
    KnownGpu {
        pattern: "GTX 1080 Ti",
        sm: 61,
        sms: 28,
        boost_mhz: 1582,
        dram_gbs: 484.0,
    },
];

/// The entry of [`KNOWN_GPUS`] whose pattern the name contains.
pub fn known_gpu(name: &str) -> Option<&'static KnownGpu> {
    let name = name.to_ascii_lowercase();
    KNOWN_GPUS
        .iter()
        .find(|g| name.contains(&g.pattern.to_ascii_lowercase()))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique() {
        assert!(ARCHS.windows(2).all(|w| w[0].sm < w[1].sm));
    }

    #[test]
    fn fp32_lanes_match_the_programming_guide() {
        let lanes = |s: &str| fp32_lanes_per_sm(s.parse().expect("arch"));
        assert_eq!(lanes("sm_60"), 64);
        assert_eq!(lanes("sm_61"), 128);
        assert_eq!(lanes("sm_70"), 64);
        assert_eq!(lanes("sm_80"), 64);
        assert_eq!(lanes("sm_86"), 128);
        assert_eq!(lanes("sm_90"), 128);
        assert_eq!(lanes("sm_999"), 128);
    }

    #[test]
    fn every_known_gpu_has_a_known_arch() {
        for g in KNOWN_GPUS {
            assert!(arch_facts(g.sm).is_some(), "{} sm_{}", g.pattern, g.sm);
        }
    }

    #[test]
    fn arch_parses_and_rejects() {
        assert_eq!("sm_90".parse::<Arch>().map(|a| a.number()), Ok(90));
        assert_eq!("compute_61".parse::<Arch>().map(|a| a.number()), Ok(61));
        assert!("sm_x".parse::<Arch>().is_err());
        assert!("sm_123456".parse::<Arch>().is_err());
    }

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
