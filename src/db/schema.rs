//! What the database records: the GPUs ([`GpuRecord`]), the best configuration per GPU x op x
//! shape ([`Entry`]) and where each measurement came from ([`Producer`], [`Measurement`]).

use crate::family::math::Math;
use crate::problem::{Form, Op, Shape};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// `BM=64 BN=128 ...`: a config's parameters as tables, logs and headers show them.
pub fn params_label(params: &BTreeMap<String, i64>) -> String {
    params
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The newest file layout this build reads, and the one it writes. Version 2 added
/// `[[coverage]]` ([`Coverage`]), version 3 [`Entry::deterministic`], version 4 [`Entry::form`]
/// (layouts, padded leading dimensions, beta, batch), version 5 [`Entry::revision`], version 6
/// [`Entry::math`] and the error statistics beside cuBLAS's ([`Entry::mean_rel_error`],
/// [`Entry::cublas_max_rel_error`], [`Entry::cublas_mean_rel_error`]); older files (no
/// coverage, no `deterministic`, no `form`: every entry of the plain form; no `revision`; no
/// `math`: read as `simt`, see [`Entry::math_with`]; no mean or cuBLAS errors) still load.
pub const SCHEMA_VERSION: u32 = 6;

/// One GPU the database holds results for (key: `name`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuRecord {
    /// The device name the driver reports, e.g. `"NVIDIA H100 80GB HBM3"`; the key.
    pub name: String,
    /// The compute architecture, e.g. `"sm_90"`.
    pub arch: String,
    /// Number of streaming multiprocessors.
    pub sms: u32,
    /// Boost clock in MHz.
    pub clock_mhz: u32,
    /// Theoretical FP32 peak in GFLOP/s.
    pub fp32_peak_gflops: f64,
    /// Device memory in MiB.
    pub memory_mib: u64,
    /// CUDA driver version, e.g. `"13.0"`.
    pub driver_version: String,
    /// NVRTC version, e.g. `"13.0"`.
    pub nvrtc_version: String,
    /// Measured device-to-device copy bandwidth in GB/s, filled in once measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy_bandwidth_gbs: Option<f64>,
}

/// The best configuration found for one GPU x op x shape, with its evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The [`GpuRecord::name`] of the GPU this was measured on.
    pub gpu: String,
    /// The operation.
    pub op: Op,
    /// [`Shape::label`] of the shape, kept for humans reading the file (`m`, `n`, `k` rule).
    pub shape: String,
    /// Rows of A and C.
    pub m: u64,
    /// Columns of B and C (1 for GEMV).
    pub n: u64,
    /// The reduction length.
    pub k: u64,
    /// The problem's form beyond its dimensions (layouts, padded leading dimensions, beta,
    /// batch), part of the key; absent for the plain form (and from files before schema
    /// version 4, whose entries are all plain). Written as an inline table, e.g.
    /// `form = { layout = "tn", padded = false, beta = true, batch = 32 }`.
    #[serde(default, skip_serializing_if = "Form::is_plain")]
    pub form: Form,
    /// The kernel family, e.g. `"gemm_tile2d"`.
    pub family: String,
    /// The name of the instantiated kernel.
    pub kernel: String,
    /// The tuning parameters of the winning configuration (written as an inline table).
    pub params: BTreeMap<String, i64>,
    /// Median kernel time in milliseconds.
    pub median_ms: f64,
    /// Fastest kernel time in milliseconds.
    pub min_ms: f64,
    /// `(p90 - p10) / median * 100`.
    pub spread_pct: f64,
    /// Number of timed runs.
    pub samples: u32,
    /// Achieved GFLOP/s at the median time.
    pub gflops: f64,
    /// Effective bandwidth in GB/s: the fewest bytes the problem moves over the median time.
    pub gbs: f64,
    /// cuBLAS median time for the same problem, in milliseconds.
    pub cublas_median_ms: f64,
    /// `cublas_median_ms / median_ms` (above 1 means faster than cuBLAS).
    pub vs_cublas: f64,
    /// Achieved fraction of the GPU's FP32 peak, in percent.
    pub pct_of_peak: f64,
    /// Largest relative error against the reference result (each element's error over the
    /// magnitude bound of its dot product, as validation measures it:
    /// [`crate::measure::verify::compare_stats`]).
    pub max_rel_error: f64,
    /// Mean relative error over the output's elements, by the same measure. `None` for
    /// entries written before schema version 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_rel_error: Option<f64>,
    /// cuBLAS SGEMM's (or SGEMV's; plain FP32, no tensor-core math) largest relative error on
    /// the same validation inputs against the same float64 reference: what
    /// [`Entry::max_rel_error`] compares with. `None` for entries written before schema
    /// version 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cublas_max_rel_error: Option<f64>,
    /// cuBLAS's mean relative error on the same inputs. `None` for entries written before
    /// schema version 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cublas_mean_rel_error: Option<f64>,
    /// The tolerance the result was validated against.
    pub tolerance: f64,
    /// Number of configurations evaluated.
    pub tried: u32,
    /// Number of configurations that failed to compile, validate or launch.
    pub failed: u32,
    /// RNG seed of the validation inputs (at most `2^63 - 1`: TOML integers are signed).
    pub seed: u64,
    /// When the result was produced, RFC 3339 UTC.
    pub date: String,
    /// The autotune version that produced it.
    pub tool_version: String,
    /// The identity of the family version it was tuned with: its
    /// [`Family::checksum`](crate::family::catalog::Family::checksum), the checksum of the
    /// family's committed fingerprint for its revision (for a built-in family), which was the
    /// hex SHA-256 of the kernel template and search-space text when that revision was
    /// fingerprinted. The entry is current while it is the family's checksum.
    pub checksum: String,
    /// The family's `revision` it was tuned with, for humans (freshness compares `checksum`).
    /// `None` for entries written before schema version 5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u32>,
    /// Whether the kernel gives bit-identical outputs on every run (its family's
    /// `deterministic`; `false` for atomic split-K). `None` (unknown) for entries written
    /// before schema version 3: [`Entry::is_deterministic`] asks the family then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deterministic: Option<bool>,
    /// How the kernel computes the products: its family's `math` when tuned. Absent (read as
    /// `simt`) for simt entries and for entries written before schema version 6, whose math
    /// [`Entry::math_with`] takes from the family.
    #[serde(default, skip_serializing_if = "Math::is_simt")]
    pub math: Math,
    /// `Some(true)` when the search was cut short (time limit, interrupt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<bool>,
    /// Which machine, GPU and shard measured it. Provenance only: the key stays the GPU model
    /// name ([`Entry::gpu`]), so two GPUs of one model share results while two models never
    /// share a key. Absent from older files (which still load) and from entries not made by a
    /// tuning run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub produced_by: Option<Producer>,
    /// The other measurements of this GPU x op x shape that
    /// [`Database::merge`](super::Database::merge) met, fastest first, each with the database
    /// it came from: the entry itself is the fastest of all. Absent from files that were never
    /// merged (and from older files, which still load).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub also_measured: Vec<Measurement>,
}

impl Entry {
    /// The problem, from `m`, `n`, `k` and `form`.
    pub fn shape(&self) -> Shape {
        Shape::mnk(self.m, self.n, self.k).with_form(self.form)
    }

    /// Whether the entry's kernel is deterministic: as recorded, else (an entry written
    /// before schema version 3) what `family_says` of its family (e.g.
    /// `|f| catalog.deterministic(f)`); `None` when neither knows.
    pub fn is_deterministic(&self, family_says: impl FnOnce(&str) -> Option<bool>) -> Option<bool> {
        self.deterministic.or_else(|| family_says(&self.family))
    }

    /// The entry's math: what `family_says` of its family (e.g. `|f| catalog.math(f)`), which
    /// knows it for an entry written before schema version 6 too (recorded as `simt` by
    /// default), else as recorded.
    pub fn math_with(&self, family_says: impl FnOnce(&str) -> Option<Math>) -> Math {
        family_says(&self.family).unwrap_or(self.math)
    }

    /// The key identifying the entry in a database: `(gpu, op, m, n, k, form)`.
    pub fn key(&self) -> (String, Op, u64, u64, u64, Form) {
        (self.gpu.clone(), self.op, self.m, self.n, self.k, self.form)
    }

    /// The key, borrowed, for sorting and lookups.
    pub(super) fn key_ref(&self) -> (&str, Op, u64, u64, u64, Form) {
        (
            self.gpu.as_str(),
            self.op,
            self.m,
            self.n,
            self.k,
            self.form,
        )
    }

    /// How the entry is named in messages: `GPU op shape`.
    pub(super) fn describe(&self) -> String {
        format!(
            "{} {} {}",
            self.gpu,
            self.op.name(),
            self.shape().label(self.op)
        )
    }
}

/// Where an entry was measured: the host, the CUDA device on it and the shard of the suite, as
/// [`Entry::produced_by`] and [`Measurement::produced_by`] record it. Written as an inline
/// table, e.g. `produced_by = { device = 1, host = "node07", shard = "2/8", ... }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Producer {
    /// The host name of the machine that ran the tuning.
    pub host: String,
    /// The CUDA ordinal of the GPU on that host (`--device` / `--devices`).
    pub device: u32,
    /// The GPU's PCI bus id (`0000:3B:00.0`), when the driver reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pci_bus_id: Option<String>,
    /// The GPU's UUID (`GPU-xxxxxxxx-...`, as `nvidia-smi -L` shows it), when the driver
    /// reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// The shard of the suite, `INDEX/COUNT` (`--shard`, or a Slurm job-array task), when the
    /// run was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
}

impl fmt::Display for Producer {
    /// `node07 device 1`, then `, shard 2/8` for a shard.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} device {}", self.host, self.device)?;
        if let Some(shard) = &self.shard {
            write!(f, ", shard {shard}")?;
        }
        Ok(())
    }
}

/// One measured configuration of a GPU x op x shape, as [`Entry::also_measured`] keeps it and
/// as [`MergeConflict`](super::MergeConflict) reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// The database it came from, as named to the merge (usually the file path).
    pub source: String,
    /// Median kernel time in milliseconds.
    pub median_ms: f64,
    /// cuBLAS's median time in the same run, in milliseconds.
    pub cublas_median_ms: f64,
    /// The kernel family.
    pub family: String,
    /// The tuning parameters.
    pub params: BTreeMap<String, i64>,
    /// When it was measured, RFC 3339 UTC.
    pub date: String,
    /// Which host, GPU and shard measured it ([`Entry::produced_by`] of the entry it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub produced_by: Option<Producer>,
}

impl Measurement {
    /// The measurement an entry holds, attributed to `source`.
    pub fn of(entry: &Entry, source: &str) -> Measurement {
        Measurement {
            source: source.to_string(),
            median_ms: entry.median_ms,
            cublas_median_ms: entry.cublas_median_ms,
            family: entry.family.clone(),
            params: entry.params.clone(),
            date: entry.date.clone(),
            produced_by: entry.produced_by.clone(),
        }
    }

    /// Whether both are the same measurement (wherever each came from).
    pub(super) fn same(&self, other: &Measurement) -> bool {
        self.median_ms.to_bits() == other.median_ms.to_bits()
            && self.date == other.date
            && self.family == other.family
            && self.params == other.params
    }

    /// `SOURCE's family BM=.. BN=.. at 0.4100 ms`, then ` (node07 device 1, shard 2/8)` when
    /// its producer is known.
    pub(super) fn describe(&self) -> String {
        format!(
            "{}'s {} {} at {:.4} ms{}",
            self.source,
            self.family,
            params_label(&self.params),
            self.median_ms,
            self.produced_by
                .as_ref()
                .map_or(String::new(), |p| format!(" ({p})"))
        )
    }
}

/// What a coverage run measured for one GPU and op ([`Database::coverage`](super::Database)):
/// a portfolio of configs, each timed on every shape of a grid, beside cuBLAS. The runtime
/// predicts from it which config is fastest on a shape nobody tuned, and whether cuBLAS is
/// (see `product::select`). Written as
///
/// ```toml
/// [[coverage]]
/// gpu = "NVIDIA H100 80GB HBM3"
/// op = "gemm"
/// # date, tool_version, seed ...
/// configs = [
///     { family = "gemm_warptile", params = { BK = 16, BM = 128 }, checksum = "ab12..." },
/// ]
/// points = [
///     { shape = "64x4096x1024", cublas_ms = 0.0213, ms = [0.0198, 0.0] },
/// ]
/// ```
///
/// `ms[i]` is config `i`'s median time on the point's shape; 0 means it failed there (it did
/// not compile, launch or validate) and is never predicted for that region.
///
/// A record is measured on one [`Form`] (`form`, absent for the plain one: files written before
/// it existed hold plain grids only) and keyed by `(gpu, op, form)`: every point is a problem
/// of that form (the labels give the dimensions only), and it predicts for problems of exactly
/// that form, the batch count included ([`Coverage::serves`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    /// The [`GpuRecord::name`] of the GPU.
    pub gpu: String,
    /// The operation.
    pub op: Op,
    /// The form of every grid point (layouts, padding, beta, alpha, batch), part of the key;
    /// absent for the plain form. Written as an inline table, e.g. `form = { batch = 1, beta =
    /// false, layout = "nt", padded = false, scaled = false }` (read with any key left out).
    #[serde(default, skip_serializing_if = "Form::is_plain")]
    pub form: Form,
    /// When it was measured, RFC 3339 UTC.
    pub date: String,
    /// The autotune version that measured it.
    pub tool_version: String,
    /// RNG seed of the inputs.
    pub seed: u64,
    /// Which host and GPU measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub produced_by: Option<Producer>,
    /// The portfolio, in the order of every point's `ms`.
    pub configs: Vec<CoverageConfig>,
    /// The grid shapes and their times.
    pub points: Vec<CoveragePoint>,
}

/// One config of a coverage portfolio.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverageConfig {
    /// The kernel family.
    pub family: String,
    /// Its parameters.
    pub params: BTreeMap<String, i64>,
    /// The family's checksum when measured: a config whose family changed since is not
    /// predicted.
    pub checksum: String,
}

/// One grid shape of a coverage run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoveragePoint {
    /// [`Shape::label`] of the shape.
    pub shape: String,
    /// cuBLAS's median time, milliseconds.
    pub cublas_ms: f64,
    /// Each portfolio config's median time, milliseconds, in the order of
    /// [`Coverage::configs`]; 0 where the config failed.
    pub ms: Vec<f64>,
}

impl CoveragePoint {
    /// The dimensions, from the label (checked when the database is read), in the plain form
    /// but for a batch count of its own where the label has one (`64x64x64:b8`, a point of a
    /// grid measuring several): [`Coverage::point_shape`] gives the problem with the record's
    /// form.
    pub fn shape(&self, op: Op) -> Option<Shape> {
        Shape::parse(op, &self.shape).ok()
    }
}

impl Coverage {
    /// How the record is named in messages: `GPU op coverage`, then the form's tags for a
    /// form other than the plain one (`GPU gemm:nt coverage`).
    pub fn describe(&self) -> String {
        format!(
            "{} {}{} coverage",
            self.gpu,
            self.op.name(),
            self.form.tags(self.op)
        )
    }

    /// The key of the record in a database: `(gpu, op, form)`.
    pub fn key_ref(&self) -> (&str, Op, Form) {
        (self.gpu.as_str(), self.op, self.form)
    }

    /// Whether the grid is evidence of speed on problems of `form` ([`Form::served_by_counts`]
    /// with its points' batch counts: the same layout and beta, a batch count the points reach;
    /// alpha free; a packed grid serves padded rows). A grid measured on one layout says
    /// nothing about the speed of another: a plain problem is never guarded by an NT grid, nor
    /// the reverse.
    pub fn serves(&self, form: &Form) -> bool {
        form.served_by_counts(&self.form, self.batch_counts())
    }

    /// The smallest and largest batch count of its points (the record's own where it has no
    /// points; a record of one product per call has no other).
    pub fn batch_counts(&self) -> std::ops::RangeInclusive<u64> {
        if self.form.batch == 1 {
            return 1..=1;
        }
        let counts = self.points.iter().filter_map(|p| self.point_shape(p));
        let (lo, hi) = counts.fold((u64::MAX, 0), |(lo, hi), s| {
            (lo.min(s.form.batch), hi.max(s.form.batch))
        });
        if lo > hi {
            self.form.batch..=self.form.batch
        } else {
            lo..=hi
        }
    }

    /// The problem a point measured: its dimensions with the record's form, and the point's
    /// own batch count where its label gives one.
    pub fn point_shape(&self, p: &CoveragePoint) -> Option<Shape> {
        p.shape(self.op).map(|s| {
            let batch = if s.form.batch > 1 {
                s.form.batch
            } else {
                self.form.batch
            };
            s.with_form(Form { batch, ..self.form })
        })
    }

    /// Every point's problem ([`Coverage::point_shape`]), in the points' order.
    pub fn point_shapes(&self) -> Vec<Shape> {
        self.points
            .iter()
            .filter_map(|p| self.point_shape(p))
            .collect()
    }

    /// Checks what TOML types cannot: every point's shape parses, has one time per config,
    /// and its times are finite and not negative.
    pub(super) fn check(&self) -> Result<(), String> {
        let which = self.describe();
        if self.configs.is_empty() {
            return Err(format!("{which} has no configs"));
        }
        if self.op == Op::Gemv && self.form.layout.trans_b() {
            return Err(format!(
                "{which}: form layout \"{}\" is not a gemv layout (nn or tn)",
                self.form.layout.name(Op::Gemm)
            ));
        }
        if !(1..=crate::problem::MAX_BATCH).contains(&self.form.batch) {
            return Err(format!(
                "{which}: form batch = {} is not between 1 and {}",
                self.form.batch,
                crate::problem::MAX_BATCH
            ));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, p) in self.points.iter().enumerate() {
            let at = format!("{which}, point {} ({:?})", i + 1, p.shape);
            let shape = p
                .shape(self.op)
                .ok_or_else(|| format!("{at}: not a {} shape", self.op.name()))?;
            let own_batch = Form {
                batch: 1,
                ..shape.form
            };
            if !own_batch.is_plain() {
                return Err(format!(
                    "{at}: a point gives the dimensions only (and a batch count of its own); the record's `form` applies to every point"
                ));
            }
            if shape.form.batch > 1 && self.form.batch == 1 {
                return Err(format!(
                    "{at}: a batch count of its own in a record of one product per call; give the record a batched `form`"
                ));
            }
            let count = self.point_shape(p).map_or(1, |s| s.form.batch);
            if !seen.insert((shape.m, shape.n, shape.k, count)) {
                return Err(format!("{at}: the shape is listed twice; keep one"));
            }
            if p.ms.len() != self.configs.len() {
                return Err(format!(
                    "{at}: {} times for {} configs; give one per config (0 where it failed)",
                    p.ms.len(),
                    self.configs.len()
                ));
            }
            let bad = |v: f64| !v.is_finite() || v < 0.0;
            if bad(p.cublas_ms) || p.cublas_ms == 0.0 || p.ms.iter().any(|v| bad(*v)) {
                return Err(format!(
                    "{at}: times must be finite and positive (0 marks a failed config)"
                ));
            }
        }
        Ok(())
    }
}
