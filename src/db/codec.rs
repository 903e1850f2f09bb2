//! The canonical TOML form of a database: reading it ([`Database::from_toml_str`], checked for
//! what TOML types cannot express) and writing it ([`Database::to_toml_string`]: fixed key
//! order, sorted records, shortest round-trip floats), so that the same content always gives
//! the same bytes.

use super::error::parse_error;
use super::{Coverage, Database, DbError, Entry, GpuRecord, SCHEMA_VERSION};
use crate::problem::{Op, Shape};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// The comment written at the top of every database file.
const HEADER: &str =
    "# autotune tuning database: the fastest kernel configuration per GPU x op x shape.\n\
# Written by autotune, one [[entry]] per result; comments are not kept when it rewrites the file.\n";

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
    #[serde(default)]
    coverage: Vec<Coverage>,
}

/// The order keys of a `[[gpu]]` table are written in; unknown keys follow, sorted.
pub(super) const GPU_FIELDS: &[&str] = &[
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
pub(super) const ENTRY_FIELDS: &[&str] = &[
    "gpu",
    "op",
    "shape",
    "m",
    "n",
    "k",
    "form",
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
    "mean_rel_error",
    "cublas_max_rel_error",
    "cublas_mean_rel_error",
    "tolerance",
    "tried",
    "failed",
    "seed",
    "date",
    "tool_version",
    "checksum",
    "revision",
    "deterministic",
    "math",
    "partial",
    "produced_by",
    "also_measured",
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

/// The order keys of a `[[coverage]]` table are written in (before its two arrays).
const COVERAGE_FIELDS: &[&str] = &[
    "gpu",
    "op",
    "form",
    "date",
    "tool_version",
    "seed",
    "produced_by",
];

/// Appends a `[[coverage]]` table: its keys, then `configs` and `points` as arrays of inline
/// tables, one element per line, so that a diff shows which grid point changed.
fn render_coverage(out: &mut String, c: &Coverage) -> Result<(), DbError> {
    let which = c.describe();
    c.check()
        .map_err(|m| DbError::Serialize(format!("{which}: {m}")))?;
    if c.seed > i64::MAX as u64 {
        return Err(DbError::Serialize(format!(
            "{which}: seed {} is above 2^63 - 1",
            c.seed
        )));
    }
    let mut head =
        toml::Table::try_from(c).map_err(|e| DbError::Serialize(format!("{which}: {e}")))?;
    head.remove("configs");
    head.remove("points");
    out.push_str("\n[[coverage]]\n");
    render_table(out, &head, COVERAGE_FIELDS)?;
    out.push_str("configs = [\n");
    for cfg in &c.configs {
        let mut params = String::new();
        for (i, (k, v)) in cfg.params.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(params, "{sep}{} = {v}", render_key(k)?);
        }
        let _ = writeln!(
            out,
            "    {{ family = {}, params = {{ {params} }}, checksum = {} }},",
            render_value(&toml::Value::String(cfg.family.clone()))?,
            render_value(&toml::Value::String(cfg.checksum.clone()))?
        );
    }
    out.push_str("]\npoints = [\n");
    for p in &c.points {
        let ms: Vec<String> = p.ms.iter().map(|v| format!("{v:?}")).collect();
        let _ = writeln!(
            out,
            "    {{ shape = {}, cublas_ms = {:?}, ms = [{}] }},",
            render_value(&toml::Value::String(p.shape.clone()))?,
            p.cublas_ms,
            ms.join(", ")
        );
    }
    out.push_str("]\n");
    Ok(())
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
            coverage: raw.coverage,
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
            if let Err(err) = Shape::new(e.op, e.m, e.n, e.k) {
                return Err(format!("{which} has an unusable shape: {err}"));
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
        let mut covered = BTreeMap::new();
        for (i, c) in self.coverage.iter().enumerate() {
            if let Some(first) = covered.insert(c.key_ref(), i) {
                return Err(format!(
                    "[[coverage]] tables {} and {} are both for {}; keep one",
                    first + 1,
                    i + 1,
                    c.describe()
                ));
            }
            c.check()
                .map_err(|m| format!("[[coverage]] table {}: {m}", i + 1))?;
        }
        Ok(())
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
        let mut coverage: Vec<&Coverage> = self.coverage.iter().collect();
        coverage.sort_by(|a, b| a.key_ref().cmp(&b.key_ref()));
        for c in coverage {
            render_coverage(&mut out, c)?;
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
