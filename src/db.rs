//! The tuning database: the best kernel configuration found per GPU x op x shape, with the
//! evidence behind it, stored as a human-readable TOML file.
//!
//! Layout of the file:
//!
//! ```toml
//! schema_version = 1
//!
//! [[gpu]]
//! name = "NVIDIA H100 80GB HBM3"
//! arch = "sm_90"
//! # ...
//!
//! [[entry]]
//! gpu = "NVIDIA H100 80GB HBM3"
//! op = "gemm"
//! shape = "2048x2048x2048"
//! params = { BK = 8, BM = 128, BN = 128 }
//! # ...
//! ```
//!
//! GPUs are written sorted by name and entries sorted by `(gpu, op, m, n, k)`, one key per line
//! in a fixed order, so that the file diffs well under version control and writing the same
//! database twice gives byte-identical text. Saving is atomic (temporary file, `fsync`, rename):
//! a crash or an error never leaves a torn file, and a failed save leaves the old file as it was.
//!
//! [`Database::update_file`] is the read-modify-write helper: re-tuning one shape never drops
//! another entry. It does not lock the file, so two processes updating the same database at the
//! same moment may lose one of the two updates (the file itself always stays whole).

use crate::shape::{Op, Shape};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// The newest file layout this build reads, and the one it writes.
pub const SCHEMA_VERSION: u32 = 1;

/// The comment written at the top of every database file.
const HEADER: &str =
    "# autotune tuning database: the fastest kernel configuration per GPU x op x shape.\n\
# Written by autotune, one [[entry]] per result; comments are not kept when it rewrites the file.\n";

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
    /// Largest relative error against the reference result.
    pub max_rel_error: f64,
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
    /// Hex SHA-256 of the kernel template and search-space text.
    pub checksum: String,
    /// `Some(true)` when the search was cut short (time limit, interrupt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<bool>,
}

impl Entry {
    /// The problem shape, from `m`, `n`, `k`.
    pub fn shape(&self) -> Shape {
        Shape {
            m: self.m,
            n: self.n,
            k: self.k,
        }
    }

    /// The key identifying the entry in a database: `(gpu, op, m, n, k)`.
    pub fn key(&self) -> (String, Op, u64, u64, u64) {
        (self.gpu.clone(), self.op, self.m, self.n, self.k)
    }

    /// The key, borrowed, for sorting and lookups.
    fn key_ref(&self) -> (&str, Op, u64, u64, u64) {
        (self.gpu.as_str(), self.op, self.m, self.n, self.k)
    }

    /// How the entry is named in messages: `GPU op shape`.
    fn describe(&self) -> String {
        format!(
            "{} {} {}",
            self.gpu,
            self.op.name(),
            self.shape().label(self.op)
        )
    }
}

/// What [`Database::merge`] did with the other database's entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MergeReport {
    /// Entries whose key was not present before.
    pub added: usize,
    /// Entries that replaced a slower one with the same key.
    pub replaced: usize,
    /// Entries dropped because the existing one with the same key was at least as fast.
    pub kept: usize,
}

/// The whole database file.
#[derive(Debug, Clone, PartialEq)]
pub struct Database {
    /// The layout version the file was read with; files are always written at
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The GPUs results exist for, keyed by name.
    pub gpus: Vec<GpuRecord>,
    /// The best configuration per `(gpu, op, m, n, k)`.
    pub entries: Vec<Entry>,
}

impl Default for Database {
    fn default() -> Self {
        Database::new()
    }
}

/// Why the database could not be read or written. Every message names the file and says what
/// to do about it.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The file is not valid TOML, or a value has the wrong type.
    #[error("database {} is not a valid tuning database ({}): {message}. The file was left untouched; fix it or pass --db to use another file", path.display(), location(*line, *column))]
    Parse {
        /// The file.
        path: PathBuf,
        /// 1-based line of the problem (0 when unknown).
        line: usize,
        /// 1-based column, in characters (0 when unknown).
        column: usize,
        /// What the TOML parser said.
        message: String,
    },
    /// The file is not UTF-8 text.
    #[error("database {} is not UTF-8 text (first bad byte at line {line}, column {column}): a tuning database is a UTF-8 TOML file. The file was left untouched; fix it or pass --db to use another file", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// 1-based line of the first invalid byte.
        line: usize,
        /// 1-based column (in characters) of the first invalid byte.
        column: usize,
    },
    /// The file parses but its content is inconsistent (duplicate keys, a shape label that
    /// contradicts `m`/`n`/`k`, NaN values, ...).
    #[error("database {} is not a valid tuning database: {message}. The file was left untouched; fix it or pass --db to use another file", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the record.
        message: String,
    },
    /// The file was written by a newer autotune with a layout this build cannot read.
    #[error("database {} was written by a newer autotune (schema {found}, this build reads up to {supported}): upgrade autotune or use --db to pick another file", path.display())]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// The `schema_version` in the file.
        found: i64,
        /// The newest version this build reads ([`SCHEMA_VERSION`]).
        supported: u32,
    },
    /// The file has no top-level `schema_version`.
    #[error("database {} has no top-level `schema_version`, so it does not look like a tuning database written by autotune. If it is one, add `schema_version = {SCHEMA_VERSION}` as its first line; otherwise pass --db to use another file", path.display())]
    MissingSchema {
        /// The file.
        path: PathBuf,
    },
    /// The database path is a directory.
    #[error("database path {} is a directory, not a file: pass --db with a file path such as {}", path.display(), path.join("autotune.toml").display())]
    IsDirectory {
        /// The path.
        path: PathBuf,
    },
    /// A filesystem operation failed.
    #[error("could not {action} {}: {source}. Check the path and its permissions, or pass --db to use another file", path.display())]
    Io {
        /// The file or directory the operation was on.
        path: PathBuf,
        /// What was being done, e.g. `"read"`.
        action: &'static str,
        /// The underlying error.
        source: io::Error,
    },
    /// A value about to be saved is NaN or infinite; TOML readers would choke on it and it
    /// means the measurement is broken.
    #[error("refusing to save the database: `{field}` of {gpu} {shape} is NaN or infinite, which means the measurement that produced it is broken. Nothing was written; the file was left untouched")]
    NonFinite {
        /// The GPU of the record.
        gpu: String,
        /// The op and shape of the entry, or `(gpu record)`.
        shape: String,
        /// The offending field.
        field: String,
    },
    /// An unsigned value about to be saved does not fit TOML's signed 64-bit integers.
    #[error("refusing to save the database: `{field}` = {value} of {gpu} {shape} is larger than TOML integers allow (2^63 - 1). Nothing was written; the file was left untouched")]
    OutOfRange {
        /// The GPU of the record.
        gpu: String,
        /// The op and shape of the entry, or `(gpu record)`.
        shape: String,
        /// The offending field.
        field: &'static str,
        /// Its value.
        value: u64,
    },
    /// The database could not be turned into TOML (e.g. two entries with the same key).
    #[error("could not write the database as TOML: {0}. Nothing was written; the file was left untouched")]
    Serialize(String),
}

/// `line L, column C`, or `position unknown`.
fn location(line: usize, column: usize) -> String {
    if line == 0 {
        "position unknown".to_string()
    } else {
        format!("line {line}, column {column}")
    }
}

/// 1-based line and column (in characters) of byte offset `pos` in `text`.
fn line_column(text: &str, pos: usize) -> (usize, usize) {
    let mut pos = pos.min(text.len());
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    let before = &text[..pos];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Turns a TOML error into [`DbError::Parse`] with the position of the problem.
fn parse_error(path: &Path, text: &str, err: &toml::de::Error) -> DbError {
    let (line, column) = err
        .span()
        .map_or((0, 0), |span| line_column(text, span.start));
    let message = err
        .message()
        .trim()
        .trim_end_matches('.')
        .replace('\n', "; ");
    DbError::Parse {
        path: path.to_path_buf(),
        line,
        column,
        message,
    }
}

/// The file as it is deserialized (the top level rejects unknown keys, which catches typos
/// such as `[[entries]]`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRepr {
    schema_version: u32,
    #[serde(default)]
    gpu: Vec<GpuRecord>,
    #[serde(default)]
    entry: Vec<Entry>,
}

/// The order keys of a `[[gpu]]` table are written in; unknown keys follow, sorted.
const GPU_FIELDS: &[&str] = &[
    "name",
    "arch",
    "sms",
    "clock_mhz",
    "fp32_peak_gflops",
    "memory_mib",
    "driver_version",
    "nvrtc_version",
    "copy_bandwidth_gbs",
];

/// The order keys of an `[[entry]]` table are written in; unknown keys follow, sorted.
const ENTRY_FIELDS: &[&str] = &[
    "gpu",
    "op",
    "shape",
    "m",
    "n",
    "k",
    "family",
    "kernel",
    "params",
    "median_ms",
    "min_ms",
    "spread_pct",
    "samples",
    "gflops",
    "gbs",
    "cublas_median_ms",
    "vs_cublas",
    "pct_of_peak",
    "max_rel_error",
    "tolerance",
    "tried",
    "failed",
    "seed",
    "date",
    "tool_version",
    "checksum",
    "partial",
];

/// The first float in `table` (searched recursively) that is NaN or infinite, by key path;
/// top-level keys are searched in `order` first, so the first field as written is named.
fn non_finite_field(table: &toml::Table, order: &[&str]) -> Option<String> {
    fn walk(value: &toml::Value, path: &str) -> Option<String> {
        match value {
            toml::Value::Float(f) if !f.is_finite() => Some(path.to_string()),
            toml::Value::Table(t) => t.iter().find_map(|(k, v)| walk(v, &format!("{path}.{k}"))),
            toml::Value::Array(a) => a
                .iter()
                .enumerate()
                .find_map(|(i, v)| walk(v, &format!("{path}[{i}]"))),
            _ => None,
        }
    }
    order
        .iter()
        .filter_map(|k| table.get(*k).map(|v| (*k, v)))
        .chain(
            table
                .iter()
                .filter(|(k, _)| !order.contains(&k.as_str()))
                .map(|(k, v)| (k.as_str(), v)),
        )
        .find_map(|(k, v)| walk(v, k))
}

/// `rec` as a TOML table, refusing values TOML cannot hold.
fn gpu_table(rec: &GpuRecord) -> Result<toml::Table, DbError> {
    let what = "(gpu record)";
    if rec.memory_mib > i64::MAX as u64 {
        return Err(DbError::OutOfRange {
            gpu: rec.name.clone(),
            shape: what.to_string(),
            field: "memory_mib",
            value: rec.memory_mib,
        });
    }
    let table = toml::Table::try_from(rec)
        .map_err(|e| DbError::Serialize(format!("GPU record {}: {e}", rec.name)))?;
    if let Some(field) = non_finite_field(&table, GPU_FIELDS) {
        return Err(DbError::NonFinite {
            gpu: rec.name.clone(),
            shape: what.to_string(),
            field,
        });
    }
    Ok(table)
}

/// `entry` as a TOML table, refusing values TOML cannot hold.
fn entry_table(entry: &Entry) -> Result<toml::Table, DbError> {
    let shape = format!("{} {}", entry.op.name(), entry.shape().label(entry.op));
    for (field, value) in [
        ("m", entry.m),
        ("n", entry.n),
        ("k", entry.k),
        ("seed", entry.seed),
    ] {
        if value > i64::MAX as u64 {
            return Err(DbError::OutOfRange {
                gpu: entry.gpu.clone(),
                shape,
                field,
                value,
            });
        }
    }
    let table = toml::Table::try_from(entry)
        .map_err(|e| DbError::Serialize(format!("entry {}: {e}", entry.describe())))?;
    if let Some(field) = non_finite_field(&table, ENTRY_FIELDS) {
        return Err(DbError::NonFinite {
            gpu: entry.gpu.clone(),
            shape,
            field,
        });
    }
    Ok(table)
}

/// A key as TOML writes it: bare when it can be, quoted otherwise.
fn render_key(key: &str) -> Result<String, DbError> {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        Ok(key.to_string())
    } else {
        render_value(&toml::Value::String(key.to_string()))
    }
}

/// A value as TOML writes it on the right of `key = ` (tables become inline tables).
/// Top-level floats use Rust's shortest round-trip form with an exponent for very large or
/// small magnitudes (`1.2e-7`, not `0.00000012`), which is also valid TOML.
fn render_value(value: &toml::Value) -> Result<String, DbError> {
    if let toml::Value::Float(f) = value {
        if f.is_finite() {
            return Ok(format!("{f:?}"));
        }
    }
    let mut out = String::new();
    value
        .serialize(toml::ser::ValueSerializer::new(&mut out))
        .map_err(|e| DbError::Serialize(e.to_string()))?;
    Ok(out)
}

/// Appends `table`'s keys as `key = value` lines: those in `order` first, in that order, then
/// any others sorted by name.
fn render_table(out: &mut String, table: &toml::Table, order: &[&str]) -> Result<(), DbError> {
    let mut rest: Vec<&String> = table
        .keys()
        .filter(|k| !order.contains(&k.as_str()))
        .collect();
    rest.sort();
    let ordered = order.iter().copied().chain(rest.iter().map(|k| k.as_str()));
    for key in ordered {
        if let Some(value) = table.get(key) {
            let _ = writeln!(out, "{} = {}", render_key(key)?, render_value(value)?);
        }
    }
    Ok(())
}

impl Database {
    /// An empty database at [`SCHEMA_VERSION`].
    pub fn new() -> Database {
        Database {
            schema_version: SCHEMA_VERSION,
            gpus: Vec::new(),
            entries: Vec::new(),
        }
    }

    /// Reads the database at `path`. A missing file gives an empty database (the normal first
    /// run); a directory, an unreadable or non-UTF-8 file, malformed TOML, wrong types,
    /// inconsistent content or a newer schema give an error naming the file (and the line,
    /// for parse errors).
    pub fn load(path: &Path) -> Result<Database, DbError> {
        match fs::metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Database::new()),
            Err(e) => {
                return Err(DbError::Io {
                    path: path.to_path_buf(),
                    action: "read",
                    source: e,
                })
            }
            Ok(meta) if meta.is_dir() => {
                return Err(DbError::IsDirectory {
                    path: path.to_path_buf(),
                })
            }
            Ok(_) => {}
        }
        let bytes = fs::read(path).map_err(|e| DbError::Io {
            path: path.to_path_buf(),
            action: "read",
            source: e,
        })?;
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let valid = e.utf8_error().valid_up_to();
                let bytes = e.as_bytes();
                // Everything before `valid` is UTF-8, so this slice converts without loss.
                let before = String::from_utf8_lossy(&bytes[..valid]);
                let (line, column) = line_column(&before, before.len());
                return Err(DbError::NotUtf8 {
                    path: path.to_path_buf(),
                    line,
                    column,
                });
            }
        };
        Database::from_toml_str(&text, &path.display().to_string())
    }

    /// Parses database text; `origin` names it in error messages (usually the file path).
    ///
    /// `schema_version` is checked before anything else, so a file from a newer autotune is
    /// reported as such even when it has fields this build does not know.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Database, DbError> {
        let path = PathBuf::from(origin);
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let table: toml::Table = toml::from_str(text).map_err(|e| parse_error(&path, text, &e))?;
        match table.get("schema_version") {
            None => return Err(DbError::MissingSchema { path }),
            Some(toml::Value::Integer(v)) if *v > i64::from(SCHEMA_VERSION) => {
                return Err(DbError::NewerSchema {
                    path,
                    found: *v,
                    supported: SCHEMA_VERSION,
                })
            }
            Some(toml::Value::Integer(v)) if *v < 1 => {
                return Err(DbError::Invalid {
                    path,
                    message: format!(
                        "schema_version = {v} is not a valid version (this build reads 1 to {SCHEMA_VERSION})"
                    ),
                })
            }
            // Any other type is reported, with its line, by the typed parse below.
            _ => {}
        }
        let raw: FileRepr = toml::from_str(text).map_err(|e| parse_error(&path, text, &e))?;
        let mut db = Database {
            schema_version: raw.schema_version,
            gpus: raw.gpu,
            entries: raw.entry,
        };
        db.check_content()
            .map_err(|message| DbError::Invalid { path, message })?;
        db.sort();
        Ok(db)
    }

    /// Checks what TOML types cannot: unique keys, shapes that agree with their labels,
    /// finite numbers. Returns a message naming the offending record.
    fn check_content(&self) -> Result<(), String> {
        let mut names = BTreeMap::new();
        for (i, g) in self.gpus.iter().enumerate() {
            if let Some(first) = names.insert(g.name.as_str(), i) {
                return Err(format!(
                    "[[gpu]] tables {} and {} both have name = {:?}; keep one",
                    first + 1,
                    i + 1,
                    g.name
                ));
            }
            if let Some(field) = toml::Table::try_from(g)
                .ok()
                .and_then(|t| non_finite_field(&t, GPU_FIELDS))
            {
                return Err(format!(
                    "[[gpu]] table {} ({}) has a NaN or infinite `{field}`",
                    i + 1,
                    g.name
                ));
            }
        }
        let mut keys = BTreeMap::new();
        for (i, e) in self.entries.iter().enumerate() {
            let which = format!("[[entry]] table {} ({})", i + 1, e.describe());
            if let Some(first) = keys.insert(e.key_ref(), i) {
                return Err(format!(
                    "[[entry]] tables {} and {} are both for {}; keep one",
                    first + 1,
                    i + 1,
                    e.describe()
                ));
            }
            if e.m == 0 || e.n == 0 || e.k == 0 {
                return Err(format!("{which} has a zero dimension"));
            }
            if e.op == Op::Gemv && e.n != 1 {
                return Err(format!(
                    "{which} is a gemv entry with n = {}; gemv needs n = 1",
                    e.n
                ));
            }
            let label = e.shape().label(e.op);
            if Shape::parse(e.op, &e.shape).ok() != Some(e.shape()) {
                return Err(format!(
                    "{which} has shape = {:?} but m, n, k say {label:?}; make them agree",
                    e.shape
                ));
            }
            if let Some(field) = toml::Table::try_from(e)
                .ok()
                .and_then(|t| non_finite_field(&t, ENTRY_FIELDS))
            {
                return Err(format!("{which} has a NaN or infinite `{field}`"));
            }
        }
        Ok(())
    }

    /// Sorts GPUs by name and entries by `(gpu, op, m, n, k)`, the order files are written in.
    pub fn sort(&mut self) {
        self.gpus.sort_by(|a, b| a.name.cmp(&b.name));
        self.entries.sort_by(|a, b| a.key_ref().cmp(&b.key_ref()));
    }

    /// The database as TOML text: header comment, `schema_version`, `[[gpu]]` tables sorted by
    /// name, `[[entry]]` tables sorted by `(gpu, op, m, n, k)`, keys in a fixed order, `params`
    /// as an inline table. The same content always gives the same bytes.
    ///
    /// Fails on NaN or infinite numbers, on unsigned values above `2^63 - 1`, and on two GPUs
    /// or two entries with the same key.
    pub fn to_toml_string(&self) -> Result<String, DbError> {
        let mut gpus: Vec<&GpuRecord> = self.gpus.iter().collect();
        gpus.sort_by(|a, b| a.name.cmp(&b.name));
        if let Some(w) = gpus.windows(2).find(|w| w[0].name == w[1].name) {
            return Err(DbError::Serialize(format!(
                "two GPU records are named {:?}; keep one (Database::upsert_gpu replaces instead of adding)",
                w[0].name
            )));
        }
        let mut entries: Vec<&Entry> = self.entries.iter().collect();
        entries.sort_by(|a, b| a.key_ref().cmp(&b.key_ref()));
        if let Some(w) = entries
            .windows(2)
            .find(|w| w[0].key_ref() == w[1].key_ref())
        {
            return Err(DbError::Serialize(format!(
                "two entries are for {}; keep one (Database::upsert replaces instead of adding)",
                w[0].describe()
            )));
        }

        let mut out = String::from(HEADER);
        let _ = writeln!(out, "schema_version = {SCHEMA_VERSION}");
        for g in gpus {
            let table = gpu_table(g)?;
            out.push_str("\n[[gpu]]\n");
            render_table(&mut out, &table, GPU_FIELDS)?;
        }
        for e in entries {
            let table = entry_table(e)?;
            out.push_str("\n[[entry]]\n");
            render_table(&mut out, &table, ENTRY_FIELDS)?;
        }
        Ok(out)
    }

    /// Writes the database to `path` atomically: the text goes to a temporary file in the same
    /// directory, which is flushed to disk and renamed over `path`; then the directory is
    /// flushed (best effort). Creates the parent directory if needed. On any failure the old
    /// file is left as it was and the temporary file is removed.
    pub fn save(&self, path: &Path) -> Result<(), DbError> {
        let text = self.to_toml_string()?;
        write_atomic(path, |file| file.write_all(text.as_bytes()))
    }

    /// Adds `rec`, or replaces the GPU record with the same name. A measured
    /// `copy_bandwidth_gbs` of the old record is kept when `rec` has none.
    pub fn upsert_gpu(&mut self, mut rec: GpuRecord) {
        if let Some(old) = self.gpus.iter_mut().find(|g| g.name == rec.name) {
            if rec.copy_bandwidth_gbs.is_none() {
                rec.copy_bandwidth_gbs = old.copy_bandwidth_gbs;
            }
            *old = rec;
        } else {
            let at = self.gpus.partition_point(|g| g.name < rec.name);
            self.gpus.insert(at, rec);
        }
    }

    /// Adds `entry`, or replaces the entry with the same `(gpu, op, m, n, k)` and returns the
    /// old one. Every other entry stays.
    pub fn upsert(&mut self, entry: Entry) -> Option<Entry> {
        if let Some(old) = self
            .entries
            .iter_mut()
            .find(|e| e.key_ref() == entry.key_ref())
        {
            return Some(std::mem::replace(old, entry));
        }
        let at = self
            .entries
            .partition_point(|e| e.key_ref() < entry.key_ref());
        self.entries.insert(at, entry);
        None
    }

    /// Merges `other` into this database: its GPU records are upserted; of two entries with
    /// the same key the one with the smaller `median_ms` stays (ties keep the existing one).
    pub fn merge(&mut self, other: Database) -> MergeReport {
        for g in other.gpus {
            self.upsert_gpu(g);
        }
        let mut report = MergeReport::default();
        for e in other.entries {
            let existing = self.entries.iter().find(|x| x.key_ref() == e.key_ref());
            match existing {
                None => {
                    self.upsert(e);
                    report.added += 1;
                }
                Some(old) if e.median_ms < old.median_ms => {
                    self.upsert(e);
                    report.replaced += 1;
                }
                Some(_) => report.kept += 1,
            }
        }
        report
    }

    /// The entry for `gpu`, `op` and `shape`, if tuned.
    pub fn get(&self, gpu: &str, op: Op, shape: Shape) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.key_ref() == (gpu, op, shape.m, shape.n, shape.k))
    }

    /// The record of the GPU named `name`.
    pub fn gpu(&self, name: &str) -> Option<&GpuRecord> {
        self.gpus.iter().find(|g| g.name == name)
    }

    /// Read-modify-write: loads `path` (empty if missing), applies `f`, saves atomically and
    /// returns the new database. If `f` fails nothing is written.
    pub fn update_file(
        path: &Path,
        f: impl FnOnce(&mut Database) -> Result<(), DbError>,
    ) -> Result<Database, DbError> {
        let mut db = Database::load(path)?;
        f(&mut db)?;
        db.save(path)?;
        Ok(db)
    }
}

/// Removes the temporary file when dropped, unless disarmed after the rename.
struct TempFile(Option<PathBuf>);

impl Drop for TempFile {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = fs::remove_file(path);
        }
    }
}

/// Distinguishes temporary files made by one process within the same nanosecond.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes a file atomically: `write` fills a new temporary file next to `path`, which is
/// flushed and renamed over `path`. On failure `path` is untouched and the temporary removed.
fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut File) -> io::Result<()>,
) -> Result<(), DbError> {
    let io_err = |path: &Path, action: &'static str| {
        let path = path.to_path_buf();
        move |source: io::Error| DbError::Io {
            path,
            action,
            source,
        }
    };
    // Write through a symlink to its target rather than replacing the link.
    let target = match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    };
    let old_meta = match fs::metadata(&target) {
        Ok(meta) if meta.is_dir() => {
            return Err(DbError::IsDirectory {
                path: path.to_path_buf(),
            })
        }
        Ok(meta) => Some(meta),
        Err(_) => None,
    };
    let Some(name) = target.file_name() else {
        return Err(DbError::Io {
            path: path.to_path_buf(),
            action: "save the database to",
            source: io::Error::new(io::ErrorKind::InvalidInput, "the path does not name a file"),
        });
    };
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&dir).map_err(io_err(&dir, "create the directory"))?;

    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let tmp_path = dir.join(format!(
        ".{}.tmp.{}.{}.{}",
        name.to_string_lossy(),
        std::process::id(),
        nanos,
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp_path)
        .map_err(io_err(&dir, "create a temporary file in"))?;
    let mut guard = TempFile(Some(tmp_path.clone()));
    write(&mut file).map_err(io_err(&tmp_path, "write"))?;
    file.sync_all()
        .map_err(io_err(&tmp_path, "flush to disk"))?;
    drop(file);
    if let Some(meta) = old_meta {
        // Keep the old file's permissions (best effort).
        let _ = fs::set_permissions(&tmp_path, meta.permissions());
    }
    fs::rename(&tmp_path, &target).map_err(io_err(&target, "replace"))?;
    guard.0 = None;
    #[cfg(unix)]
    {
        // Make the rename itself durable (best effort).
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpu(name: &str) -> GpuRecord {
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

    fn entry(gpu: &str, op: Op, shape: &str, median_ms: f64) -> Entry {
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
            tolerance: 1e-4,
            tried: 120,
            failed: 3,
            seed: 12_345,
            date: "2026-04-20T12:00:00Z".to_string(),
            tool_version: "0.1.0".to_string(),
            checksum: "ab".repeat(32),
            partial: None,
        }
    }

    /// Every file in `dir` whose name contains `.tmp.`.
    fn temp_files(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp."))
            .collect()
    }

    fn sample_db() -> Database {
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

    #[test]
    fn round_trip_save_then_load_is_equal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("autotune.toml");
        let db = sample_db();
        db.save(&path).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert!(text.contains("schema_version = 1\n"), "{text}");
        assert!(text.contains("\n[[gpu]]\n"), "{text}");
        assert!(text.contains("\n[[entry]]\n"), "{text}");
        assert!(
            text.contains("params = { BK = 8, BM = 128, BN = 64 }"),
            "params should be an inline table:\n{text}"
        );
        assert!(!text.contains("[entry.params]"), "{text}");
        let loaded = Database::load(&path).unwrap();
        assert_eq!(loaded, db);
        assert_eq!(loaded.to_toml_string().unwrap(), text);
        assert!(temp_files(path.parent().unwrap()).is_empty());
    }

    #[test]
    fn extreme_floats_round_trip_exactly() {
        let mut db = sample_db();
        let values = [
            1.2e-7,
            1e-300,
            5e-324,
            1e300,
            f64::MAX,
            0.1 + 0.2,
            -0.0,
            1e16,
            3.0,
        ];
        for (i, v) in values.iter().enumerate() {
            let mut e = entry("G", Op::Gemm, &format!("{}x1x1", i + 1), 1.0);
            e.max_rel_error = *v;
            db.upsert(e);
        }
        let text = db.to_toml_string().unwrap();
        assert!(text.contains("max_rel_error = 1.2e-7\n"), "{text}");
        let loaded = Database::from_toml_str(&text, "mem").unwrap();
        for (i, v) in values.iter().enumerate() {
            let got = loaded
                .get(
                    "G",
                    Op::Gemm,
                    Shape {
                        m: i as u64 + 1,
                        n: 1,
                        k: 1,
                    },
                )
                .unwrap()
                .max_rel_error;
            assert_eq!(got.to_bits(), v.to_bits(), "{v:?} came back as {got:?}");
        }
    }

    #[test]
    fn text_order_is_stable_whatever_the_insertion_order() {
        let a = sample_db();
        let mut b = Database::new();
        for e in a.entries.iter().rev() {
            b.upsert(e.clone());
        }
        for g in a.gpus.iter().rev() {
            b.upsert_gpu(g.clone());
        }
        // Also a database whose vectors were filled directly, unsorted.
        let mut c = Database::new();
        c.entries = a.entries.iter().rev().cloned().collect();
        c.gpus = a.gpus.iter().rev().cloned().collect();
        let ta = a.to_toml_string().unwrap();
        assert_eq!(ta, b.to_toml_string().unwrap());
        assert_eq!(ta, c.to_toml_string().unwrap());
        // Sorted: gpus by name, entries by (gpu, op, m, n, k).
        let a100_gpu = ta.find("name = \"NVIDIA A100").unwrap();
        let h100_gpu = ta.find("name = \"NVIDIA H100").unwrap();
        assert!(a100_gpu < h100_gpu);
        let gemm = ta.find("shape = \"2048x2048x2048\"").unwrap();
        let gemv = ta.find("shape = \"4096x4096\"").unwrap();
        let a100 = ta.find("shape = \"512x256x128\"").unwrap();
        assert!(a100 < gemm && gemm < gemv, "{ta}");
        // Keys in declared order within a table.
        let median = ta.find("median_ms = ").unwrap();
        let checksum = ta.find("checksum = ").unwrap();
        assert!(median < checksum);
    }

    #[test]
    fn field_order_lists_cover_every_field() {
        let mut e = entry("G", Op::Gemm, "1x2x3", 1.0);
        e.partial = Some(false);
        let t = toml::Table::try_from(&e).unwrap();
        for k in t.keys() {
            assert!(ENTRY_FIELDS.contains(&k.as_str()), "ENTRY_FIELDS lacks {k}");
        }
        assert_eq!(t.len(), ENTRY_FIELDS.len());
        let mut g = gpu("G");
        g.copy_bandwidth_gbs = Some(1.0);
        let t = toml::Table::try_from(&g).unwrap();
        for k in t.keys() {
            assert!(GPU_FIELDS.contains(&k.as_str()), "GPU_FIELDS lacks {k}");
        }
        assert_eq!(t.len(), GPU_FIELDS.len());
    }

    #[test]
    fn upsert_replaces_one_shape_and_keeps_the_others() {
        let mut db = sample_db();
        let before = db.entries.len();
        let other = db
            .get(
                "NVIDIA A100-SXM4-40GB",
                Op::Gemm,
                Shape {
                    m: 512,
                    n: 256,
                    k: 128,
                },
            )
            .unwrap()
            .clone();
        let mut newer = entry("NVIDIA H100 80GB HBM3", Op::Gemm, "2048x2048x2048", 0.39);
        newer.kernel = "new_kernel".to_string();
        let old = db.upsert(newer).unwrap();
        assert_eq!(old.median_ms, 0.41);
        assert_eq!(db.entries.len(), before);
        let shape = Shape::parse(Op::Gemm, "2048x2048x2048").unwrap();
        let got = db.get("NVIDIA H100 80GB HBM3", Op::Gemm, shape).unwrap();
        assert_eq!(got.kernel, "new_kernel");
        assert_eq!(got.median_ms, 0.39);
        // Same shape on another GPU or op is a different key.
        assert!(db.get("NVIDIA A100-SXM4-40GB", Op::Gemm, shape).is_none());
        assert_eq!(
            db.get("NVIDIA A100-SXM4-40GB", Op::Gemm, other.shape()),
            Some(&other)
        );
        assert!(db
            .get(
                "NVIDIA H100 80GB HBM3",
                Op::Gemv,
                Shape {
                    m: 4096,
                    n: 1,
                    k: 4096
                }
            )
            .is_some());
        // A new key is added.
        assert!(db
            .upsert(entry("NVIDIA H100 80GB HBM3", Op::Gemm, "64x64x64", 0.01))
            .is_none());
        assert_eq!(db.entries.len(), before + 1);
    }

    #[test]
    fn update_file_retunes_one_shape_without_dropping_others() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        sample_db().save(&path).unwrap();
        let db = Database::update_file(&path, |db| {
            db.upsert(entry(
                "NVIDIA H100 80GB HBM3",
                Op::Gemm,
                "2048x2048x2048",
                0.3,
            ));
            Ok(())
        })
        .unwrap();
        let loaded = Database::load(&path).unwrap();
        assert_eq!(loaded, db);
        assert_eq!(loaded.entries.len(), 3);
        assert_eq!(
            loaded
                .get(
                    "NVIDIA H100 80GB HBM3",
                    Op::Gemm,
                    Shape {
                        m: 2048,
                        n: 2048,
                        k: 2048
                    }
                )
                .unwrap()
                .median_ms,
            0.3
        );
        // A failing update writes nothing.
        let text = fs::read_to_string(&path).unwrap();
        let err = Database::update_file(&path, |db| {
            db.entries.clear();
            Err(DbError::Serialize("stop".to_string()))
        });
        assert!(err.is_err());
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn upsert_gpu_replaces_and_keeps_measured_bandwidth() {
        let mut db = sample_db();
        let mut rec = gpu("NVIDIA H100 80GB HBM3");
        rec.driver_version = "13.1".to_string();
        db.upsert_gpu(rec);
        assert_eq!(db.gpus.len(), 2);
        let got = db.gpu("NVIDIA H100 80GB HBM3").unwrap();
        assert_eq!(got.driver_version, "13.1");
        assert_eq!(got.copy_bandwidth_gbs, Some(2890.5));
        let mut rec = gpu("NVIDIA H100 80GB HBM3");
        rec.copy_bandwidth_gbs = Some(3000.0);
        db.upsert_gpu(rec);
        assert_eq!(
            db.gpu("NVIDIA H100 80GB HBM3").unwrap().copy_bandwidth_gbs,
            Some(3000.0)
        );
        assert!(db.gpu("nope").is_none());
    }

    #[test]
    fn merge_keeps_the_faster_and_counts() {
        let mut db = sample_db();
        let mut other = Database::new();
        let mut l40 = gpu("NVIDIA L40S");
        l40.arch = "sm_89".to_string();
        other.upsert_gpu(l40);
        // Faster than 0.41: replaces.
        other.upsert(entry(
            "NVIDIA H100 80GB HBM3",
            Op::Gemm,
            "2048x2048x2048",
            0.40,
        ));
        // Slower than 0.031: kept.
        other.upsert(entry("NVIDIA H100 80GB HBM3", Op::Gemv, "4096x4096", 0.05));
        // Equal: kept.
        other.upsert(entry(
            "NVIDIA A100-SXM4-40GB",
            Op::Gemm,
            "512x256x128",
            0.02,
        ));
        // New.
        other.upsert(entry("NVIDIA L40S", Op::Gemm, "1024x1024x1024", 0.2));
        let report = db.merge(other);
        assert_eq!(
            report,
            MergeReport {
                added: 1,
                replaced: 1,
                kept: 2
            }
        );
        assert_eq!(db.entries.len(), 4);
        assert_eq!(db.gpus.len(), 3);
        assert_eq!(db.gpu("NVIDIA L40S").unwrap().arch, "sm_89");
        let h = "NVIDIA H100 80GB HBM3";
        assert_eq!(
            db.get(
                h,
                Op::Gemm,
                Shape {
                    m: 2048,
                    n: 2048,
                    k: 2048
                }
            )
            .unwrap()
            .median_ms,
            0.40
        );
        let gemv = db
            .get(
                h,
                Op::Gemv,
                Shape {
                    m: 4096,
                    n: 1,
                    k: 4096,
                },
            )
            .unwrap();
        assert_eq!(gemv.median_ms, 0.031);
        assert_eq!(gemv.partial, Some(true));
    }

    #[test]
    fn nan_is_rejected_and_the_file_is_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        let db = sample_db();
        db.save(&path).unwrap();
        let before = fs::read(&path).unwrap();

        let mut bad = db.clone();
        bad.upsert(entry(
            "NVIDIA H100 80GB HBM3",
            Op::Gemm,
            "2048x2048x2048",
            f64::NAN,
        ));
        let err = bad.save(&path).unwrap_err();
        match &err {
            DbError::NonFinite { field, shape, .. } => {
                assert_eq!(field, "median_ms");
                assert!(shape.contains("2048x2048x2048"), "{shape}");
            }
            other => panic!("expected NonFinite, got {other:?}"),
        }
        let mut bad = db.clone();
        bad.gpus[0].copy_bandwidth_gbs = Some(f64::INFINITY);
        assert!(matches!(
            bad.save(&path),
            Err(DbError::NonFinite { ref field, .. }) if field == "copy_bandwidth_gbs"
        ));
        let mut bad = db.clone();
        bad.entries[0].seed = u64::MAX;
        assert!(matches!(
            bad.save(&path),
            Err(DbError::OutOfRange { field: "seed", .. })
        ));
        let mut bad = db.clone();
        bad.entries.push(bad.entries[0].clone());
        assert!(matches!(bad.save(&path), Err(DbError::Serialize(_))));

        assert_eq!(fs::read(&path).unwrap(), before);
        assert!(temp_files(dir.path()).is_empty());
    }

    #[test]
    fn failed_write_leaves_old_file_and_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        sample_db().save(&path).unwrap();
        let before = fs::read(&path).unwrap();
        let err = write_atomic(&path, |f| {
            f.write_all(b"schema_version = 1\n[[entry]]\ngpu = \"tor")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(
            matches!(
                err,
                DbError::Io {
                    action: "write",
                    ..
                }
            ),
            "{err:?}"
        );
        assert!(err.to_string().contains("disk full"));
        assert_eq!(fs::read(&path).unwrap(), before);
        assert!(temp_files(dir.path()).is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn read_only_directory_keeps_old_content() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("ro");
        fs::create_dir(&sub).unwrap();
        let path = sub.join("db.toml");
        let db = sample_db();
        db.save(&path).unwrap();
        let before = fs::read(&path).unwrap();
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o555)).unwrap();
        // Root ignores directory permissions; only assert the failure where it can happen.
        let probe = sub.join("probe");
        let enforced = File::create(&probe).is_err();
        let _ = fs::remove_file(&probe);

        let mut changed = db.clone();
        changed.upsert(entry("NVIDIA H100 80GB HBM3", Op::Gemm, "8x8x8", 0.001));
        let result = changed.save(&path);
        fs::set_permissions(&sub, fs::Permissions::from_mode(0o755)).unwrap();
        if enforced {
            let err = result.unwrap_err();
            assert!(matches!(err, DbError::Io { .. }), "{err:?}");
            assert!(err.to_string().contains("--db"));
            assert_eq!(fs::read(&path).unwrap(), before);
        } else {
            eprintln!("directory permissions not enforced (running as root?): save succeeded");
            result.unwrap();
            assert_eq!(Database::load(&path).unwrap(), changed);
        }
        assert!(temp_files(&sub).is_empty());
    }

    #[test]
    fn corrupt_file_reports_line_and_is_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        let text = "schema_version = 1\n[[gpu]]\nname = \"broken\narch = \"sm_90\"\n";
        fs::write(&path, text).unwrap();
        let err = Database::load(&path).unwrap_err();
        match &err {
            DbError::Parse {
                path: p,
                line,
                column,
                message,
            } => {
                assert_eq!(p, &path);
                assert_eq!(*line, 3, "{err}");
                assert!(*column >= 1);
                assert!(!message.is_empty());
            }
            other => panic!("expected Parse, got {other:?}"),
        }
        let msg = err.to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("line 3"), "{msg}");
        assert!(msg.contains("--db"), "{msg}");
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn wrong_type_reports_its_line() {
        let mut text = sample_db().to_toml_string().unwrap();
        text = text.replacen("sms = 132", "sms = \"many\"", 1);
        let line = text
            .lines()
            .position(|l| l.starts_with("sms = \"many\""))
            .unwrap()
            + 1;
        let err = Database::from_toml_str(&text, "x.toml").unwrap_err();
        match err {
            DbError::Parse {
                line: l, column, ..
            } => {
                assert_eq!(l, line);
                assert_eq!(column, 7);
            }
            other => panic!("expected Parse, got {other:?}"),
        }
        // A typo in the top-level table names is caught too.
        let err = Database::from_toml_str("schema_version = 1\n\n[[entries]]\n", "x").unwrap_err();
        assert!(matches!(err, DbError::Parse { line: 3, .. }), "{err:?}");
    }

    #[test]
    fn newer_schema_is_reported_before_unknown_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        let text = "schema_version = 99\nfuture = { x = 1 }\n\n[[entry]]\nwhatever = true\n";
        fs::write(&path, text).unwrap();
        let err = Database::load(&path).unwrap_err();
        assert!(
            matches!(
                err,
                DbError::NewerSchema {
                    found: 99,
                    supported: 1,
                    ..
                }
            ),
            "{err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("newer autotune"), "{msg}");
        assert!(msg.contains("upgrade autotune"), "{msg}");
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn missing_or_invalid_schema_is_an_error() {
        let err = Database::from_toml_str("[[gpu]]\nname = \"x\"\n", "db.toml").unwrap_err();
        assert!(matches!(err, DbError::MissingSchema { .. }), "{err:?}");
        let err = Database::from_toml_str("", "db.toml").unwrap_err();
        assert!(matches!(err, DbError::MissingSchema { .. }), "{err:?}");
        let err = Database::from_toml_str("schema_version = 0\n", "db.toml").unwrap_err();
        assert!(matches!(err, DbError::Invalid { .. }), "{err:?}");
        let err = Database::from_toml_str("schema_version = \"1\"\n", "db.toml").unwrap_err();
        assert!(matches!(err, DbError::Parse { line: 1, .. }), "{err:?}");
        let db = Database::from_toml_str("schema_version = 1\n", "db.toml").unwrap();
        assert_eq!(db, Database::new());
    }

    #[test]
    fn inconsistent_content_is_rejected() {
        let good = sample_db().to_toml_string().unwrap();
        let bad = good.replacen("shape = \"4096x4096\"", "shape = \"4096x8192\"", 1);
        let err = Database::from_toml_str(&bad, "db.toml").unwrap_err();
        assert!(matches!(err, DbError::Invalid { .. }), "{err:?}");
        assert!(err.to_string().contains("4096x8192"));
        let dup = format!(
            "{good}\n[[entry]]\n{}",
            good.split("[[entry]]\n").nth(1).unwrap()
        );
        let err = Database::from_toml_str(&dup, "db.toml").unwrap_err();
        assert!(err.to_string().contains("keep one"), "{err}");
        let nan = good.replacen("median_ms = 0.41", "median_ms = nan", 1);
        assert_ne!(nan, good);
        let err = Database::from_toml_str(&nan, "db.toml").unwrap_err();
        assert!(err.to_string().contains("median_ms"), "{err}");
    }

    #[test]
    fn missing_file_is_an_empty_database() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::load(&dir.path().join("none.toml")).unwrap();
        assert_eq!(db, Database::new());
        assert_eq!(db.schema_version, SCHEMA_VERSION);
        assert!(db.entries.is_empty() && db.gpus.is_empty());
    }

    #[test]
    fn directory_path_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let err = Database::load(dir.path()).unwrap_err();
        assert!(matches!(err, DbError::IsDirectory { .. }), "{err:?}");
        let err = sample_db().save(dir.path()).unwrap_err();
        assert!(matches!(err, DbError::IsDirectory { .. }), "{err:?}");
        assert!(err.to_string().contains("--db"));
    }

    #[test]
    fn non_utf8_file_is_rejected_with_position() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("db.toml");
        fs::write(&path, b"schema_version = 1\n# caf\xe9\n").unwrap();
        let err = Database::load(&path).unwrap_err();
        assert!(
            matches!(
                err,
                DbError::NotUtf8 {
                    line: 2,
                    column: 6,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn line_column_counts_characters() {
        assert_eq!(line_column("abc", 0), (1, 1));
        assert_eq!(line_column("a\nbc", 3), (2, 2));
        assert_eq!(line_column("é\néx", 5), (2, 2));
        assert_eq!(line_column("ab", 99), (1, 3));
    }
}
