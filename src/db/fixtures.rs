//! Records and databases shared by the unit tests of the `db` modules.

use super::{Database, Entry, GpuRecord, Producer};
use crate::problem::{Op, Shape};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// A GPU record named `name` with an H100's facts.
pub(crate) fn gpu(name: &str) -> GpuRecord {
    GpuRecord {
        name: name.to_string(),
        arch: "sm_90".to_string(),
        sms: 132,
        clock_mhz: 1980,
        fp32_peak_gflops: 66_908.16,
        memory_mib: 81_559,
        driver_version: "13.0".to_string(),
        nvrtc_version: "13.0".to_string(),
        copy_bandwidth_gbs: None,
    }
}

/// An entry of `gemm_tile2d` (as the other database tests build one), at `median_ms` against
/// cuBLAS's 0.5 ms.
pub(crate) fn entry(gpu: &str, op: Op, shape: &str, median_ms: f64) -> Entry {
    let s = Shape::parse(op, shape).unwrap();
    let mut params = BTreeMap::new();
    params.insert("BM".to_string(), 128);
    params.insert("BN".to_string(), 64);
    params.insert("BK".to_string(), 8);
    Entry {
        gpu: gpu.to_string(),
        op,
        shape: s.label(op),
        m: s.m,
        n: s.n,
        k: s.k,
        form: s.form,
        family: "gemm_tile2d".to_string(),
        kernel: "gemm_tile2d_128_64_8".to_string(),
        params,
        median_ms,
        min_ms: median_ms * 0.98,
        spread_pct: 1.5,
        samples: 50,
        gflops: s.flops() / (median_ms * 1e6),
        gbs: s.min_bytes(op) / (median_ms * 1e6),
        cublas_median_ms: 0.5,
        vs_cublas: 0.5 / median_ms,
        pct_of_peak: 42.25,
        max_rel_error: 1.2e-6,
        mean_rel_error: None,
        cublas_max_rel_error: None,
        cublas_mean_rel_error: None,
        tolerance: 1e-4,
        tried: 120,
        failed: 3,
        seed: 12_345,
        date: "2026-04-20T12:00:00Z".to_string(),
        tool_version: "0.1.0".to_string(),
        checksum: "ab".repeat(32),
        revision: None,
        partial: None,
        produced_by: None,
        deterministic: None,
        math: Default::default(),
        also_measured: Vec::new(),
    }
}

pub(super) fn producer(host: &str, device: u32, shard: Option<&str>) -> Producer {
    Producer {
        host: host.to_string(),
        device,
        pci_bus_id: Some(format!("0000:{:02X}:00.0", 0x18 + device)),
        uuid: Some(format!("GPU-{device:08x}-0000-0000-0000-000000000000")),
        shard: shard.map(str::to_string),
    }
}

/// Every file in `dir` whose name contains `.tmp.`.
pub(super) fn temp_files(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp."))
        .collect()
}

pub(super) use crate::fileio::listing;

pub(super) fn sample_db() -> Database {
    let mut db = Database::new();
    let mut h100 = gpu("NVIDIA H100 80GB HBM3");
    h100.copy_bandwidth_gbs = Some(2890.5);
    db.upsert_gpu(h100);
    db.upsert_gpu(gpu("NVIDIA A100-SXM4-40GB"));
    db.upsert(entry(
        "NVIDIA H100 80GB HBM3",
        Op::Gemm,
        "2048x2048x2048",
        0.41,
    ));
    let mut e = entry("NVIDIA H100 80GB HBM3", Op::Gemv, "4096x4096", 0.031);
    e.partial = Some(true);
    e.seed = i64::MAX as u64;
    e.params.insert("odd key".to_string(), -1);
    db.upsert(e);
    db.upsert(entry(
        "NVIDIA A100-SXM4-40GB",
        Op::Gemm,
        "512x256x128",
        0.02,
    ));
    db
}

/// The parameters of a 128 x 128 x 32 `gemm_tf32x3_wgmma_pipe` kernel with chains of `chain`
/// K tiles (its space serves shapes nobody tuned with chains of one tile only).
pub(crate) fn pipe_params(chain: i64) -> BTreeMap<String, i64> {
    [
        ("BM", 128),
        ("BN", 128),
        ("BK", 32),
        ("WN", 128),
        ("RING", 0),
        ("GROUP_M", 1),
        ("PIPE", 1),
        ("CHAIN", chain),
        ("EARLY", 0),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .into()
}
